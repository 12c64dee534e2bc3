"""The ``pollux-unaware`` policy (issue #29, policies/pollux_unaware.py): Pollux on a
heterogeneous cluster seen as one GPU type, Sia's baseline as the artifact's
``multi_simulator_unaware.py`` runs it — virtual nodes, one model per job across types, the
mixed-type fix — with tiny profiles of our own in the Sia format (tests/test_sia_inputs.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ddlsched.api import simulate
from ddlsched.cli import main
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.perf.profiles import BatchConfig
from ddlsched.perf.typed_profiles import load_type_profiles
from ddlsched.policies.pollux import Pollux
from ddlsched.policies.pollux_unaware import (
    PolluxUnaware,
    drop_minority_types,
    replica_cap,
    virtual_nodes,
)
from ddlsched.policies.sia import best_goodput

sys.path.insert(0, str(Path(__file__).parent))
from test_sia_inputs import TYPES, write_sia_profiles  # noqa: E402

MODEL = ModelProfile("app", 0.0, 0.0, 0, 0.0, 0.0)
#: sia-64's virtual nodes: 6 aws, then 2 × 2 dgx-ext, then 3 × 2 rtx
SIA64 = ("aws",) * 6 + ("dgx-ext",) * 4 + ("rtx",) * 6


def jobs(n: int, apps=("alpha", "beta")) -> list[JobSpec]:
    return [
        JobSpec(i, 40.0 * i, 1 + i % 3, 0, MODEL, application=apps[i % len(apps)], batch_size=64)
        for i in range(n)
    ]


def outcome(res) -> tuple:
    """Every job record and every segment (times and GPUs) of a run."""
    return res.jobs, res.segments


def segment_types(cl, res) -> list[set[str]]:
    """The GPU types of each segment's GPUs (labels ``server:local``)."""
    out = []
    for s in res.segments:
        servers = {int(x.split(":")[0]) for x in s.placement.split(";")}
        out.append({cl.servers[k].gpu_type for k in servers})
    return out


# ---------------------------------------------------------------------- the view
def test_eight_gpu_nodes_are_two_virtual_nodes() -> None:
    """cluster_unaware.py:41-51: sia-64 = 6 aws + 2 × 2 dgx-ext + 3 × 2 rtx = 16 virtual
    nodes of 4 GPUs; the first dgx-ext server's GPUs 24–27 and 28–31 are two of them."""
    cl = load_cluster("sia-64")
    v = virtual_nodes(cl)
    assert v.types == SIA64
    assert all(len(g) == 4 for g in v.gpus)
    assert v.servers == (0, 1, 2, 3, 4, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10)
    assert v.gpus[6] == (24, 25, 26, 27) and v.gpus[7] == (28, 29, 30, 31)
    assert sorted(g for gs in v.gpus for g in gs) == list(range(64))
    # max_num_replicas (multi_simulator_unaware.py:36-41): the fewest GPUs of a type
    assert replica_cap(cl) == 16
    assert replica_cap(load_cluster("sia-homo-64")) == 64
    assert replica_cap(load_cluster("sia-physical-44")) == 4  # one quad node


def test_a_server_size_the_smallest_does_not_divide_is_one_line_exit_2(tmp_path, capsys) -> None:
    f = tmp_path / "odd.toml"
    f.write_text(
        "[gpu_types.aws]\nspeed = 1.0\n[gpu_types.rtx]\nspeed = 1.0\n"
        '[[servers]]\nnum_gpus = 4\ngpu_type = "aws"\n'
        '[[servers]]\nnum_gpus = 6\ngpu_type = "rtx"\n'
    )
    root = write_sia_profiles(tmp_path / "t")
    wl = tmp_path / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\nalpha-0,0,alpha,1,32\n")
    rc = main(
        [
            "run",
            "--cluster",
            str(f),
            "--workload",
            str(wl),
            "--policy",
            "pollux-unaware",
            "--set",
            f"profiles={root}",
            "--quiet",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "server 1 has 6 GPUs, not a multiple of 4" in err[0]


# ---------------------------------------------------------------------- the mixed-type fix
@pytest.mark.parametrize(
    ("gpus", "kept"),
    [
        ({0: 3, 10: 4}, "rtx"),  # majority
        ({0: 4, 1: 1, 6: 4}, "aws"),  # 5 aws beat 4 dgx-ext
        ({0: 4, 6: 4}, "dgx-ext"),  # tie: dgx-ext > aws
        ({0: 2, 10: 2}, "rtx"),  # tie: rtx > aws
        ({6: 2, 12: 2}, "dgx-ext"),  # tie: dgx-ext > rtx
        ({0: 2, 6: 2, 10: 2}, "dgx-ext"),  # three-way: aws vs dgx-ext compared
    ],
)
def test_dropping_keeps_the_type_with_most_gpus(gpus, kept) -> None:
    row = np.zeros(16, dtype=np.int64)
    for v, c in gpus.items():
        row[v] = c
    out = drop_minority_types(row, SIA64)
    assert {SIA64[v] for v in np.flatnonzero(out)} == {kept}
    assert all(out[v] == row[v] for v in range(16) if SIA64[v] == kept)
    assert row.sum() == sum(gpus.values())  # the input is not changed


def test_dropping_compares_only_the_two_most_common_types() -> None:
    """``most_common`` lists equal counts in order of first appearance (the job's lowest
    virtual node first) and the artifact compares only the first two (cluster_unaware.py:
    475-481): rtx, aws, dgx-ext with 2 GPUs each keeps rtx although dgx-ext ranks first."""
    types = ("rtx", "aws", "dgx-ext")
    out = drop_minority_types(np.array([2, 2, 2]), types)
    assert out.tolist() == [2, 0, 0]
    one = np.array([0, 3, 0])
    assert drop_minority_types(one, types) is one  # one type: unchanged
    assert drop_minority_types(np.zeros(3, dtype=np.int64), types).sum() == 0


# ---------------------------------------------------------------------- the merged model
def test_one_model_across_types_first_observation_wins(tmp_path) -> None:
    """job.py:387-412 with ``h_unaware``: the job's one profile takes the first (step, sync)
    of a (nodes, replicas, micro-batch) key whatever type measured it; the model's speedups
    use the reference type's (aws) application."""
    root = write_sia_profiles(tmp_path / "t")
    apps = {
        t: load_type_profiles(root, t, ["alpha"], "sia-64")["alpha"]
        for t in ("aws", "dgx-ext", "rtx")
    }
    job = SimpleNamespace(job_id=0, spec=SimpleNamespace(application="alpha"))
    current = {"t": "rtx"}
    pol = PolluxUnaware()
    pol.model_type = "aws"
    pol.ex = SimpleNamespace(
        pace=lambda j: (apps[current["t"]], 1.0),
        application_on=lambda j, t: (apps[t], 1.0),
    )
    cfg = BatchConfig(local=16, accum=0, a=16, M=32)
    run = SimpleNamespace(job=job, cfg=cfg, placement=(2,), epoch=0)
    pol.observe(run)
    current["t"] = "dgx-ext"
    pol.observe(run)  # the same key on another type: ignored
    run.placement = (1, 1)
    pol.observe(run)  # a new key on dgx-ext: kept
    m = pol._models[0]
    assert m.app is apps["aws"]
    assert m.profile[(1, 2, 16)] == apps["rtx"].step_time((2,), 16)
    assert m.profile[(1, 2, 16)] != apps["dgx-ext"].step_time((2,), 16)
    assert m.profile[(2, 2, 16)] == apps["dgx-ext"].step_time((1, 1), 16)
    assert m.max_profiled_replicas == 2


def test_the_batch_a_job_runs_uses_its_real_types_range(tmp_path) -> None:
    """job.py:317-386 with ``h_unaware``: the merged model picks the batch a job runs among
    the *real* type's candidates (its max_bsz, its local range on the placement, its initial
    batch) — on rtx (local ≤ 16 here) not aws's range (≤ 32) that the speedups use."""
    root = write_sia_profiles(tmp_path / "t")
    apps = {
        t: load_type_profiles(root, t, ["alpha"], "sia-64")["alpha"]
        for t in ("aws", "dgx-ext", "rtx")
    }
    cl = load_cluster("sia-64")
    rtx = tuple(g for g in range(cl.num_gpus) if cl.gpu_type(g) == "rtx")[:2]
    job = SimpleNamespace(job_id=0, spec=SimpleNamespace(application="alpha"), gpus=rtx)
    pol = PolluxUnaware()
    pol.model_type, pol._cluster = "aws", cl
    pol.ex = SimpleNamespace(
        pace=lambda j: (apps["rtx"], 1.0), application_on=lambda j, t: (apps[t], 1.0)
    )
    run = SimpleNamespace(job=job, cfg=None, placement=(2,), epoch=1)
    rtx_app = apps["rtx"]
    # no model yet: max(init_bsz, min_local·R) of the real type
    assert pol.rebatch(run) == max(rtx_app.init_bsz, rtx_app.min_local * 2)
    for p, a in [((1,), 8), ((1,), 16), ((2,), 8), ((2,), 16), ((1, 1), 16), ((4,), 16)]:
        pol.observe(
            SimpleNamespace(job=job, cfg=BatchConfig(a, 0, a, a * sum(p)), placement=p, epoch=1)
        )
    m = pol._models[0]
    hi = rtx_app.max_local_at((2,))
    assert hi == 16 < apps["aws"].max_local
    _, expected = best_goodput(m.params, m.grad, 32, 1, 2, rtx_app.max_bsz, (rtx_app.min_local, hi))
    assert pol.rebatch(run) == expected == 32
    assert m.optimize(1, 2, 1)[0] != expected  # aws's range (the reference model's) differs


# ---------------------------------------------------------------------- runs
def test_on_one_gpu_type_it_is_pollux(tmp_path) -> None:
    """The issue's check: on a cluster of one GPU type of 4-GPU nodes (sia-homo-64) the
    virtual nodes are the servers, the model is Pollux's, nothing is dropped and the replica
    cap is the cluster's GPUs — the same schedule as ``pollux``, to the bit, once Sia's
    simulator's restart rule (free moves, the next test) is set aside."""
    root = write_sia_profiles(
        tmp_path / "t", apps=("alpha", "beta"), types={"aws": TYPES["aws"]}, epoch_progress=3e3
    )
    cl = load_cluster("sia-homo-64")
    specs = jobs(10)
    for sem in ("rounds", "events"):
        settings = {"profiles": str(root), "semantics": sem, "calibration": "sia"}
        a = simulate(cl, specs, Pollux(), settings=settings)
        pu = PolluxUnaware(free_moves_on=False)  # Sia's restart rule apart (test below)
        b = simulate(cl, specs, pu, settings=settings)
        assert outcome(a) == outcome(b)
        assert a.summary["avg_jct"] == b.summary["avg_jct"]
        assert pu.dropped_gpus == 0
        assert any(j.preemptions for j in b.jobs)  # the schedule is elastic, not trivial


def test_a_move_to_the_same_type_and_per_node_gpus_is_free() -> None:
    """cluster_unaware.py:182-209, job.py:524-552: a running job restarts only when its GPU
    type or its GPUs per real node change; another node of the same shape, or the other half
    of a DGX, is a move without a restart."""
    cl = load_cluster("sia-64")  # 6 aws × 4, 2 dgx-ext × 8, 3 rtx × 8
    by = {}
    for s_, srv in enumerate(cl.servers):
        by.setdefault(srv.gpu_type, []).append(list(cl.gpus_of_server(s_)))
    aws, dgx = by["aws"], by["dgx-ext"]
    pu = PolluxUnaware()
    sim = SimpleNamespace(cluster=cl)
    job = SimpleNamespace(job_id=0)
    assert pu._moves_free(sim, job, tuple(aws[0]), aws[1])  # (4,) → (4,) on another node
    assert pu._moves_free(sim, job, tuple(dgx[0][:4]), dgx[0][4:])  # the other DGX half
    assert not pu._moves_free(sim, job, tuple(aws[0]), dgx[0][:4])  # another type
    assert not pu._moves_free(sim, job, tuple(aws[0]), aws[1][:2] + aws[2][:2])  # (2, 2)
    assert pu.free_moves == 2
    assert not PolluxUnaware(free_moves_on=False)._moves_free(sim, job, tuple(aws[0]), aws[1])


class _Mover(PolluxUnaware):
    """Moves job 0, once it runs on one virtual node, to the next (empty) one of the same
    type: a move the artifact makes without a restart."""

    moved_at: float | None = None

    def repair(self, prob, alloc):
        out = super().repair(prob, alloc)
        if self.moved_at is None and 0 in prob.job_ids:
            i = prob.job_ids.index(0)
            cur = prob.current[i]
            (used,) = np.flatnonzero(out[i]) if np.count_nonzero(out[i]) == 1 else (None,)
            if used is not None and (out[i] == cur).all() and not out[:, used + 1].any():
                out[i, used + 1], out[i, used] = out[i, used], 0
                self.moved_at = prob.time
        return out


def test_free_moves_charge_no_new_restart(tmp_path) -> None:
    """The engine side of a free move: the job goes on at once on the other node (no new
    restart delay), so it finishes earlier than when the same move restarts it."""
    root = write_sia_profiles(
        tmp_path / "t", apps=("alpha",), types={"aws": TYPES["aws"]}, epoch_progress=3e3
    )
    cl = load_cluster("sia-homo-64")
    specs = jobs(1)
    settings = {"profiles": str(root), "semantics": "rounds", "calibration": "sia"}
    free, paid = _Mover(), _Mover(free_moves_on=False)
    a = simulate(cl, specs, free, settings=settings)
    b = simulate(cl, specs, paid, settings=settings)
    assert free.moved_at == paid.moved_at is not None
    assert free.free_moves == 1 and paid.free_moves == 0
    assert a.summary["pollux_unaware_free_moves"] == 1
    (ja,), (jb,) = a.jobs, b.jobs
    assert ja.finish < jb.finish  # the restart delay the move did not charge
    assert any(seg.start == free.moved_at for seg in a.segments)  # moved at that round


class _Suspender(PolluxUnaware):
    """Suspends job 0 for one round once it runs, then gives it its GPUs back; records the
    restarts counted for job 0 at every round."""

    step: int = 0

    def repair(self, prob, alloc):
        out = super().repair(prob, alloc)
        self.seen = [*getattr(self, "seen", []), self._restarts.get(0, 0)]
        if 0 in prob.job_ids:
            i = prob.job_ids.index(0)
            if self.step == 0 and prob.current[i].any():
                self.saved, self.step = prob.current[i].copy(), 1
                out[i] = 0  # suspended this round
            elif self.step == 1:
                out[i], self.step = self.saved, 2  # resumed where it ran
        return out


def test_a_restart_counts_at_the_resume_not_at_the_stop(tmp_path) -> None:
    """job.py:524-575: Sia's simulator counts a restart when a job starts again (a resume
    after a suspension too), ddlsched's Pollux when it is stopped: while suspended the job
    has one restart fewer, after the resume the same number."""
    root = write_sia_profiles(
        tmp_path / "t", apps=("alpha",), types={"aws": TYPES["aws"]}, epoch_progress=3e3
    )
    cl = load_cluster("sia-homo-64")
    settings = {"profiles": str(root), "semantics": "rounds", "calibration": "sia"}
    at_start, at_stop = _Suspender(), _Suspender()
    at_stop.restarts_at_start = False
    simulate(cl, jobs(1), at_start, settings=settings)
    simulate(cl, jobs(1), at_stop, settings=settings)
    assert at_start.step == at_stop.step == 2  # suspended, then resumed
    pairs = list(zip(at_start.seen, at_stop.seen, strict=False))
    k = next(i for i, (a, b) in enumerate(pairs) if a != b)
    assert pairs[k][1] == pairs[k][0] + 1  # the round it is suspended for: one fewer
    assert pairs[k + 1][0] == pairs[k + 1][1]  # resumed: counted by both
    assert all(a == b for a, b in pairs[k + 1 :])


def test_heterogeneous_run_keeps_each_job_on_one_type(tmp_path, capsys) -> None:
    """sia-64 with our profiles: every job runs each segment on GPUs of one type (the fix
    drops the rest), the run passes ``ddlsched check``, and its jobs differ from Pollux's
    on the real servers."""
    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "beta"), epoch_progress=3e3)
    cl = load_cluster("sia-64")
    specs = jobs(12)
    settings = {"profiles": str(root), "semantics": "rounds", "calibration": "sia"}
    pu = PolluxUnaware(record=[])
    res = simulate(cl, specs, pu, settings=settings)
    assert len(res.jobs) == 12 and all(np.isfinite(j.finish) for j in res.jobs)
    assert all(len(t) == 1 for t in segment_types(cl, res))
    assert all(p.num_nodes == 16 and p.gpus_per_node == 4 for p in pu.record)
    assert max(int(p.max_replicas.max()) for p in pu.record) <= 16
    other = simulate(cl, specs, Pollux(), settings=settings)
    assert outcome(other) != outcome(res)
    wl = tmp_path / "w.csv"
    wl.write_text(
        "name,time,application,num_replicas,batch_size\n"
        + "".join(f"{s.application}-{s.job_id},{s.arrival},{s.application},4,64\n" for s in specs)
    )
    out = tmp_path / "o"
    argv = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", "pollux-unaware"]
    argv += ["--set", f"profiles={root}", "--set", "semantics=rounds"]
    assert main([*argv, "--set", "calibration=sia", "--quiet", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["elastic"] is True and "pollux_unaware_dropped_gpu_rounds" in summary
    assert summary["avg_jct"] == pytest.approx(res.summary["avg_jct"])
    assert main(["check", str(out)]) == 0
    assert "ok:" in capsys.readouterr().out
