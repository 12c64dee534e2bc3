"""The ``gavel-tunedjobs`` policy (issue #29, policies/sia_gavel.py): Gavel as Sia's artifact
runs it — the max-sum-throughput LP, the oracle throughputs at the workload's fixed GPU count
and batch, the artifact's priorities and its one greedy pass over all (job, type) pairs, and
whole runs on ``sia-64`` with tiny profiles of our own (tests/test_sia_inputs.py)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ddlsched.api import simulate
from ddlsched.cli import main
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.protocols import JobConfig
from ddlsched.perf.typed_profiles import load_type_profiles
from ddlsched.policies.gavel import gavel_priority, take_in_order
from ddlsched.policies.gavel_lp import max_sum_throughput_perf
from ddlsched.policies.sia_gavel import NO_ROOM, GavelTunedJobs, oracle_throughput, run_order

sys.path.insert(0, str(Path(__file__).parent))
from test_sia_inputs import step_sync, write_sia_profiles  # noqa: E402

MODEL = ModelProfile("app", 0.0, 0.0, 0, 0.0, 0.0)


# ---------------------------------------------------------------------- the LP
def test_hand_solved_lp_two_jobs_two_types() -> None:
    """Types A (2 GPUs) and B (1 GPU). Job 0 needs 2 GPUs: 10 it/s on A, 0.1 on B (the
    artifact's value where it does not fit); job 1 needs 1: 6 it/s on A, 4 on B. Job 1 is the
    better user of A per GPU (6 > 10/2), yet the summed throughput is largest with job 0 on A
    and job 1 on B: with job 1's share s on A (the rest on B), job 0 gets at most 1 − s/2 of
    A, and the sum is at most 10(1 − s/2) + 0.1·s/2 + 6s + 4(1 − s) = 14 − 2.95s: s = 0,
    X = [[1, 0], [0, 1]], 14 it/s (every other vertex is worse, e.g. s = 1: 11.05)."""
    T = np.array([[10.0, NO_ROOM], [6.0, 4.0]])
    X = max_sum_throughput_perf(T, [2, 1], [2, 1])
    assert np.allclose(X, [[1.0, 0.0], [0.0, 1.0]], atol=1e-9)
    assert float((T * X).sum()) == pytest.approx(14.0)


def test_identical_jobs_share_the_optimum_equally() -> None:
    """Two identical jobs, one GPU: every split of it is optimal. HiGHS alone returns a vertex
    (one job gets all); ``symmetric`` gives each half, as ECOS's interior point does (the
    artifact's X for identical jobs are equal); a different job keeps its own row."""
    T = np.array([[2.0, 1.0], [2.0, 1.0], [1.0, 3.0]])
    X = max_sum_throughput_perf(T, [1, 1, 1], [1, 1])
    assert np.allclose(X, [[0.5, 0.0], [0.5, 0.0], [0.0, 1.0]], atol=1e-9)
    V = max_sum_throughput_perf(T, [1, 1, 1], [1, 1], symmetric=False)
    assert float((T * V).sum()) == pytest.approx(5.0)
    assert sorted(np.round(V[:2, 0], 9).tolist()) == [0.0, 1.0]


# ---------------------------------------------------------------------- oracle throughputs
@pytest.fixture
def apps(tmp_path):
    root = write_sia_profiles(tmp_path / "t", apps=("alpha",))
    return {
        t: load_type_profiles(root, t, ["alpha"], "sia-64")["alpha"]
        for t in ("aws", "dgx-ext", "rtx")
    }


def test_oracle_throughput_accumulates_above_the_largest_local_batch(apps) -> None:
    """2 GPUs of aws (4 per node: placement (2,)), batch 128: local 64 > 32, the largest
    local batch measured on (2,), so k = ⌈64/32⌉ − 1 = 1 accumulation step of 32 samples:
    T_iter = step + (step − sync)·1 at local batch 32; ÷ the slowdown (gavel.py:527-546)."""
    step, sync = step_sync(3.0, (2,), 32)
    want = 1.0 / (step + (step - sync)) / 1.2
    assert oracle_throughput(apps["aws"], 2, 128, 4, 24, 1.2) == pytest.approx(want, rel=1e-12)
    # within the limit no accumulation: batch 64 on 2 GPUs = 32 each
    assert oracle_throughput(apps["aws"], 2, 64, 4, 24) == pytest.approx(1.0 / step)
    # 6 GPUs of aws are packed as (4, 2); of rtx (8 per node) as (6,)
    s6, y6 = step_sync(3.0, (4, 2), 16)
    assert oracle_throughput(apps["aws"], 6, 96, 4, 24) == pytest.approx(1.0 / s6)
    r6, _ = step_sync(2.0, (6,), 16)
    assert oracle_throughput(apps["rtx"], 6, 96, 8, 24) == pytest.approx(1.0 / r6)


def test_oracle_throughput_one_gpu_and_the_no_room_rule(apps) -> None:
    """On one GPU the artifact always accumulates at least once (gavel.py:531-532): batch
    16 runs as 2 × 8. A job with more GPUs than the type's largest configuration gets 0.1
    (gavel.py:520-522), whatever its profile."""
    step, sync = step_sync(1.0, (1,), 8)
    want = 1.0 / (step + (step - sync))
    assert oracle_throughput(apps["dgx-ext"], 1, 16, 8, 16) == pytest.approx(want)
    assert oracle_throughput(apps["dgx-ext"], 17, 256, 8, 16) == NO_ROOM


# ---------------------------------------------------------------------- priorities and order
def test_priority_and_the_global_greedy_order_by_hand() -> None:
    """Types A (8 GPUs) and B (4 GPUs); jobs j0 (4 GPUs), j1 (4 GPUs), j2 (8 GPUs), all new:
    180 s on every type each, so each type's total is 540 and every fraction 1/3; priority =
    X ÷ (1/3) = 3X. X: j0 (0, 1), j1 (1, 0), j2 (0.5, 0.5) ⇒ priorities j0 (0, 3), j1 (3, 0),
    j2 (1.5, 1.5). The artifact sorts all pairs together by (priority, X) descending, equal
    keys type first then job: j1·A (3, X 1), j0·B (3, 1), j2·A (1.5), j2·B (1.5), then the
    zeros j0·A, j1·B. Greedy: j1 → A (4 left), j0 → B (0 left), j2 needs 8 on A: waits.
    Gavel's own per-type order (A's list, then B's) would instead put j0 on A next to j1."""
    X = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    P = np.array([[gavel_priority(x, 180.0, 540.0) for x in row] for row in X])
    assert P.tolist() == [[0.0, 3.0], [3.0, 0.0], [1.5, 1.5]]
    order = run_order(P, X)
    assert order == [(1, 0), (0, 1), (2, 0), (2, 1), (0, 0), (1, 1)]
    taken = take_in_order(order, (0, 1), [8, 4], {0: 4, 1: 4, 2: 8})
    assert taken == {0: [(1, 4)], 1: [(0, 4)]}
    per_type = [(i, k) for k in (0, 1) for i in np.argsort(-P[:, k], kind="stable")]
    assert take_in_order(per_type, (0, 1), [8, 4], {0: 4, 1: 4, 2: 8}) == {
        0: [(1, 4), (0, 4)],
        1: [],
    }
    assert gavel_priority(0.0, 180.0, 540.0) == 0.0
    assert gavel_priority(0.5, 180.0, 0.0) == 0.5e9  # no time on the type yet


# ---------------------------------------------------------------------- whole runs
def _workload(path: Path, rows: list[tuple[str, int, int, int]]) -> Path:
    path.write_text(
        "name,time,application,num_replicas,batch_size\n"
        + "".join(f"{a}-{i},{t},{a},{g},{b}\n" for i, (a, t, g, b) in enumerate(rows))
    )
    return path


def _run(tmp_path, root, wl, *extra: str, out: str = "o") -> Path:
    argv = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", "gavel-tunedjobs"]
    argv += ["--set", f"profiles={root}", "--set", "calibration=sia", *extra]
    assert main([*argv, "--quiet", "--out", str(tmp_path / out)]) == 0
    return tmp_path / out


def test_end_to_end_rounds_fixed_gpus_and_bookkeeping(tmp_path, capsys) -> None:
    """A small run (rounds semantics, 360 s rounds): it passes ``ddlsched check``; every job
    runs on exactly its workload GPU count of one GPU type, starting only at round
    boundaries; the recorded priorities are X ÷ (time on the type ÷ the type's total) with
    180 s per new job and 360 s per round run, as the artifact keeps them."""
    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "beta"), epoch_progress=3e4)
    jobs = [
        (("alpha", "beta")[i % 2], 100 * i, g, b)
        for i, (g, b) in enumerate([(2, 64), (4, 128), (8, 256), (12, 256), (16, 256), (6, 96)] * 2)
    ]
    wl = _workload(tmp_path / "w.csv", jobs)
    out = _run(tmp_path, root, wl, "--set", "semantics=rounds")
    assert main(["check", str(out)]) == 0
    assert "ok:" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gavel_rounds"] > 0 and summary["elastic"] is False
    cl = load_cluster("sia-64")
    with (out / "segments.csv").open(newline="") as f:
        segs = list(csv.DictReader(f))
    assert segs
    for s in segs:
        servers = [int(x.split(":")[0]) for x in s["placement"].split(";")]
        assert len(servers) == jobs[int(s["job_id"])][2]
        assert len({cl.servers[x].gpu_type for x in servers}) == 1
        assert float(s["start"]) % 360.0 == 0.0

    # the policy's books, through the API with a record
    specs = [
        JobSpec(i, float(t), g, 0, MODEL, application=a, batch_size=b, name=f"{a}-{i}")
        for i, (a, t, g, b) in enumerate(jobs)
    ]
    rec: list = []
    pol = GavelTunedJobs(record=rec)
    simulate(cl, specs, pol, settings={"profiles": str(root), "semantics": "rounds"})
    job_time: dict[int, list[float]] = {}
    total = [0.0, 0.0, 0.0]
    for r in rec:
        for jid in r.job_ids:
            if jid not in job_time:
                job_time[jid] = [180.0] * 3
                total = [t + 180.0 for t in total]
        for i, jid in enumerate(r.job_ids):
            for k in range(3):
                want = gavel_priority(float(r.allocation[i, k]), job_time[jid][k], total[k])
                assert r.priorities[i, k] == want
        # X is feasible: shares ≤ 1 per job, GPUs per type within the type's
        X = r.allocation
        assert (X.sum(axis=1) <= 1 + 1e-5).all()
        need = np.array([specs[j].num_gpus for j in r.job_ids], float)
        assert (need @ X <= np.array([24, 16, 24]) + 1e-3).all()
        for jid, (k, gpus) in r.assignment.items():
            assert len(gpus) == specs[jid].num_gpus
            job_time[jid][k] += 360.0
            total[k] += 360.0


def test_round_length_is_the_engines_step(tmp_path) -> None:
    """``gavel_round`` sets the rounds of ``semantics=rounds``: with 120 s every start is at
    a multiple of 120 s and some are not at multiples of 360 s."""
    root = write_sia_profiles(tmp_path / "t", apps=("alpha",), epoch_progress=2e4)
    wl = _workload(tmp_path / "w.csv", [("alpha", 50 * i, 4, 128) for i in range(12)])
    out = _run(tmp_path, root, wl, "--set", "semantics=rounds", "--set", "gavel_round=120")
    with (out / "segments.csv").open(newline="") as f:
        starts = [float(s["start"]) for s in csv.DictReader(f)]
    assert all(s % 120.0 == 0.0 for s in starts)
    assert any(s % 360.0 != 0.0 for s in starts)
    out = _run(tmp_path, root, wl, out="events")  # events semantics: rounds every 360 s
    assert json.loads((out / "summary.json").read_text())["gavel_rounds"] > 0


@pytest.mark.parametrize(
    ("extra", "rows", "field"),
    [
        (["--set", "semantics=rounds", "--set", "interval=120"], [("alpha", 0, 2, 64)], "interval"),
        (["--set", "sia_p=-1"], [("alpha", 0, 2, 64)], "sia_p"),
        ([], [("alpha", 0, 25, 256)], "workload"),
    ],
)
def test_input_errors_are_one_line(tmp_path, capsys, extra, rows, field) -> None:
    """``interval`` does not apply (the rounds are ``gavel_round``), nor Sia's settings; a job
    with more GPUs than any type has (24) can never run: one line each, exit status 2."""
    root = write_sia_profiles(tmp_path / "t", apps=("alpha",))
    wl = _workload(tmp_path / "w.csv", rows)
    argv = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", "gavel-tunedjobs"]
    argv += ["--set", f"profiles={root}", *extra, "--quiet", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0], err


def test_listed(capsys) -> None:
    assert main(["list"]) == 0
    assert "gavel-tunedjobs" in capsys.readouterr().out


class _Mover:
    """Starts job 0 on node 0's GPUs of ``sia-64`` (aws, 4 per node) at the first round,
    then moves it to node 1 at the second with ``config``."""

    name = "mover"

    def __init__(self, config: JobConfig | None, move: bool = True) -> None:
        self.config, self.move, self.calls = config, move, 0

    def attach(self, sim) -> None:
        pass

    def schedule(self, sim) -> None:
        pass

    def on_round(self, sim) -> None:
        self.calls += 1
        if self.calls == 1 and sim.queue:
            sim.start(sim.queue[0], [0, 1, 2, 3])
        elif self.calls == 2 and self.move and sim.running:
            job = next(iter(sim.running.values()))
            sim.preempt(job)
            sim.start(job, [4, 5, 6, 7], self.config)


def test_a_start_with_restart_delay_zero_costs_nothing(tmp_path) -> None:
    """``JobJobConfig(restart_delay=0)``: the move to other GPUs of the same shape (Sia's
    simulator's free re-allocation, cluster.py:184-215) costs no time; without it the move
    costs the restart delay (here 30 s); a negative one is refused."""
    from ddlsched.errors import ScheduleError

    root = write_sia_profiles(tmp_path / "t", apps=("alpha",), epoch_progress=2e4)
    spec = JobSpec(0, 0.0, 4, 0, MODEL, application="alpha", batch_size=128)
    cl = load_cluster("sia-64")
    sets = {"profiles": str(root), "semantics": "rounds", "rescale_delay": 30.0}

    def jct(policy) -> float:
        (job,) = simulate(cl, [spec], policy, settings=sets).jobs
        return job.jct

    still = jct(_Mover(None, move=False))
    assert jct(_Mover(JobConfig(restart_delay=0.0))) == pytest.approx(still)
    assert jct(_Mover(None)) == pytest.approx(still + 30.0)
    with pytest.raises((ScheduleError, RuntimeError), match="restart_delay"):
        jct(_Mover(JobConfig(restart_delay=-1.0)))
