"""Gavel's round-based policies on trace jobs (#17, policies/gavel.py): hand-worked rounds, the
allocation reset rule, FIFO's v100 slip, every policy on a real Gavel trace sample (when the
data is here) accepted by ``ddlsched check``, and determinism."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ddlsched.api import simulate
from ddlsched.check import check_run
from ddlsched.cli import main
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError
from ddlsched.policies import gavel_lp
from ddlsched.policies.gavel import POLICIES
from ddlsched.workloads.traces import gavel_data_file

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)
_FOUND = gavel_data_file()  # where the CLI finds it too: $DDLSCHED_GAVEL_DATA or ../shared
GAVEL = _FOUND.parent if _FOUND is not None else Path("/nonexistent")


def job(i: int, v100: float, k80: float, arrival: float = 0.0, gpus: int = 1) -> JobSpec:
    """A trace job of ``v100`` seconds on V100s and ``k80`` on K80s (no P100 in these tests)."""
    return JobSpec(
        i,
        arrival,
        gpus,
        0,
        TRACE,
        duration=v100,
        type_durations=(("v100", v100), ("p100", v100), ("k80", k80)),
    )


def run(cluster: str, jobs: list[JobSpec], policy: str, seed: int = 0, **settings):
    return simulate(load_cluster(cluster), jobs, policy, seed=seed, settings=settings)


def by_id(res):
    return {j.job_id: j for j in res.jobs}


def types_of(res, cluster: str) -> dict[int, set[str]]:
    """Job → the GPU types its segments ran on (from the placement labels server:gpu)."""
    cl = load_cluster(cluster)
    out: dict[int, set[str]] = {}
    for s in res.segments:
        servers = {int(m) for m in re.findall(r"(\d+):\d+", s.placement)}
        out.setdefault(s.job_id, set()).update(cl.servers[v].gpu_type for v in servers)
    return out


# ---------------------------------------------------------------------- hand-worked
def test_max_min_perf_time_shares_one_v100_one_k80_by_hand() -> None:
    """A: 1000 s on a V100, 2000 s on a K80; B: 1000 s / 10000 s; both at t = 0.

    The LP (proportional normalisation, both rows tight) gives X = 0.5 everywhere. Round 1
    (t = 0): every priority is 0.5 / 0.5, ties in arrival order on the v100 list → A on the
    V100, B on the K80. Round 2 (t = 360): A's V100 fraction is 540/720 → priority 2/3, B's
    1/4 → 2: they swap; and so on. A: 0.36 + 0.18 + 0.36 = 0.9 of its work by t = 1080, the
    last 0.1 on the K80 takes 200 s → JCT 1280. B: 0.036 + 0.36 + 0.036 + 0.36 = 0.792 by
    t = 1440 (the round ends then: B ran it whole); A's completion triggers a new allocation
    (the last reset was at t = 0, which always allows one): B alone gets X = 1 on the V100,
    keeps it, 0.208 × 1000 s → JCT 1648.
    """
    T = np.array([[1 / 1000, 1 / 2000], [1 / 1000, 1 / 10000]])
    X = gavel_lp.max_min_fairness_perf(T, [1, 1], [1, 1])
    assert np.allclose(X, 0.5, atol=1e-9)
    res = run("gavel-1:0:1", [job(0, 1000, 2000), job(1, 1000, 10000)], "max-min-fairness-perf")
    jobs = by_id(res)
    assert jobs[0].jct == pytest.approx(1280.0, abs=1e-6)
    assert jobs[1].jct == pytest.approx(1648.0, abs=1e-6)
    # alternation: A on GPU 0 (V100) in rounds 1 and 3, on GPU 1 (K80) in rounds 2 and 4
    a = [(s.start, s.placement) for s in res.segments if s.job_id == 0]
    assert a == [(0.0, "0:0"), (360.0, "1:0"), (720.0, "0:0"), (1080.0, "1:0")]
    assert res.summary["gavel_allocations"] == 2


def test_agnostic_max_min_blind_to_speed_perf_puts_speedup_on_v100() -> None:
    """1 V100 + 2 K80, A gains 1.1× from a V100, B 10×. The perf LP gives A most of the V100
    to equalise normalised throughputs (A's only way up), yet B still gets V100 time; the
    agnostic policy only equalises time. Direction checked: under -perf the job that gains
    most from a V100 finishes sooner than under the agnostic policy, averaged over seeds
    (the agnostic one shuffles the type order every round)."""
    jobs = [job(0, 3600 * 1.0, 3600 * 1.1), job(1, 3600, 36000)]
    perf = by_id(run("gavel-1:0:2", jobs, "max-min-fairness-perf"))
    agn = [by_id(run("gavel-1:0:2", jobs, "max-min-fairness", seed=s)) for s in range(4)]
    assert perf[1].jct < np.mean([r[1].jct for r in agn])
    assert perf[1].jct + perf[0].jct < np.mean([r[1].jct + r[0].jct for r in agn])


def test_allocation_waits_for_the_reset_interval() -> None:
    """One V100. A (10000 s) at 0; B (100 s) at 100, seen at 360 where the allocation is
    recomputed (the last reset was at t = 0, which always allows one): X = 1/2 each, equal
    priorities, A first (arrival order) for 360–720, then B (its fraction is lower) from 720
    until it finishes at 820, which ends that round. C (100 s) arrived at 400, was seen at 720:
    only 360 s after the last reset (< 1920), so no new allocation, then or at 820: C has
    priority 0 and A runs in rounds from 820, 1180, …, 2260; the round end at 2620 is the
    first ≥ 360 + 1920, the allocation is recomputed and C starts. With
    ``gavel_reset_interval = 0`` the allocation is recomputed at 720 (B's deficit, 180 s owed,
    puts it first) and again at 820, where C starts."""
    jobs = [job(0, 10000, 30000), job(1, 100, 300, 100.0), job(2, 100, 300, 400.0)]
    slow = by_id(run("gavel-1:0:0", jobs, "max-min-fairness-perf"))
    assert [slow[i].start for i in range(3)] == [0.0, 720.0, 2620.0]
    fast = by_id(run("gavel-1:0:0", jobs, "max-min-fairness-perf", gavel_reset_interval=0.0))
    assert [fast[i].start for i in range(3)] == [0.0, 720.0, 820.0]


def test_job_finishing_mid_round_leaves_its_gpu_idle_until_the_round_ends() -> None:
    """Two V100s, three 1-GPU jobs at 0 of 100, 1000 and 1000 s (FIFO-perf: arrival order).
    Jobs 0 and 1 start at 0; job 0 finishes at 100 but job 2 starts only at the round end
    (t = 360), not at 100."""
    jobs = [job(0, 100, 300), job(1, 1000, 3000), job(2, 1000, 3000)]
    res = by_id(run("gavel-2:0:0", jobs, "gavel-fifo-perf"))
    assert res[0].finish == pytest.approx(100.0)
    assert res[2].start == pytest.approx(360.0)
    assert res[1].jct == pytest.approx(1000.0)  # kept its GPU: never preempted
    assert res[1].preemptions == 0


def test_round_ends_early_when_every_job_of_it_finished() -> None:
    """One V100: A (100 s) at 0, B at 50. A's round ends when A finishes (t = 100: the last
    micro-task), and B, which arrived meanwhile, starts right then (Gavel's loop jumps to the
    latest micro-task end)."""
    res = by_id(run("gavel-1:0:0", [job(0, 100, 300), job(1, 100, 300, 50.0)], "gavel-fifo-perf"))
    assert res[1].start == pytest.approx(100.0)
    assert res[1].finish == pytest.approx(200.0)


def test_fifo_perf_takes_the_fastest_type_with_room() -> None:
    """1 V100 + 1 K80: FIFO does not favour the job that gains most from the V100: the head
    of the queue takes the V100, the next one the K80; when the head finishes, the allocation
    is recomputed from scratch (FIFO 'perf' mode) and the other job moves to the V100."""
    res = run("gavel-1:0:1", [job(0, 1000, 1100), job(1, 1000, 10000)], "gavel-fifo-perf")
    segs = [s for s in res.segments if s.job_id == 1]
    assert types_of(res, "gavel-1:0:1")[0] == {"v100"}
    assert [(s.start, s.placement) for s in segs] == [(0.0, "1:0"), (1080.0, "0:0")]


def test_gavel_fifo_quirk_puts_the_head_on_v100_whatever_the_draw() -> None:
    """Gavel's FIFO draws a random type but uses the scan's last (alphabetically: v100): with
    ``gavel_fifo_quirk`` job 0 runs on the V100 for every seed; without it (the intent) the
    draw decides, and some seed puts it on the K80."""
    jobs = [job(0, 1000, 3000), job(1, 1000, 3000)]
    quirk = [
        types_of(
            run("gavel-1:0:1", jobs, "gavel-fifo", seed=s, gavel_fifo_quirk=True), "gavel-1:0:1"
        )
        for s in range(8)
    ]
    assert all(t[0] == {"v100"} for t in quirk)
    intent = [
        types_of(run("gavel-1:0:1", jobs, "gavel-fifo", seed=s), "gavel-1:0:1") for s in range(8)
    ]
    assert {"k80"} in [t[0] for t in intent]
    assert {"v100"} in [t[0] for t in intent]


def test_gavel_fifo_quirk_over_subscribes_the_v100() -> None:
    """Three 1-GPU jobs at 0 on 1 V100 + 2 K80 with the quirk: whenever the draw does not
    remove v100 from the list, job 1 is also given the (full) V100 and waits or time-shares
    it while a K80 is free; for some seed a K80 stays unused although a job waits."""
    jobs = [job(i, 1000, 3000) for i in range(3)]
    seen_idle_k80 = False
    for s in range(8):
        res = run("gavel-1:0:2", jobs, "gavel-fifo", seed=s, gavel_fifo_quirk=True)
        t = types_of(res, "gavel-1:0:2")
        if sum(1 for j in t.values() if j == {"v100"}) >= 2:
            seen_idle_k80 = True
    assert seen_idle_k80


def test_a_job_no_type_can_hold_is_an_error() -> None:
    with pytest.raises(InputError, match="fits on no GPU type"):
        run("gavel-1:0:1", [job(0, 100, 300, gpus=2)], "max-min-fairness-perf")


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_finishes_every_job_on_a_small_mix(policy: str) -> None:
    jobs = [
        job(0, 3000, 9000, 0.0, 2),
        job(1, 1200, 1500, 10.0),
        job(2, 800, 8000, 20.0),
        job(3, 5000, 6000, 400.0, 2),
        job(4, 300, 900, 3000.0),
    ]
    res = run("gavel-2:1:2", jobs, policy)
    assert len(res.jobs) == 5 and all(j.finish > j.start >= j.arrival for j in res.jobs)
    cl = load_cluster("gavel-2:1:2")
    for s in res.segments:  # never two GPU types in one job
        servers = {int(m) for m in re.findall(r"(\d+):\d+", s.placement)}
        assert len({cl.servers[v].gpu_type for v in servers}) == 1


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_an_arrival_with_more_decimals_than_the_clock(policy: str) -> None:
    """The engine's clock keeps 9 decimals; an arrival at 3.241805332137959 s is seen at
    3.241805332 s, a hair before it. Finish-time fairness took time since arrival < 0 as an
    error (ValueError, before 2026-12-07); every policy runs the job from then."""
    res = run("gavel-1:0:1", [job(0, 50, 150, 3.241805332137959)], policy)
    assert res.jobs[0].finish == pytest.approx(53.241805332, abs=1e-6)


# ---------------------------------------------------------------------- a real Gavel trace
def _trace() -> Path:
    traces = sorted((GAVEL / "msr-seed0").glob("*.trace")) if GAVEL.is_dir() else []
    if not traces or not (GAVEL / "simulation_throughputs.json").is_file():
        pytest.skip("no Gavel trace data (../shared/data/gavel)")
    return traces[0]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_on_a_gavel_trace_sample_passes_check(policy: str, tmp_path: Path) -> None:
    trace = _trace()
    out = tmp_path / "run"
    args = ["run", "--cluster", "gavel-2:2:2", "--workload", str(trace), "--max-gpus", "2"]
    args += ["--sample", "30", "--policy", policy, "--out", str(out)]
    assert main(args) == 0
    result = check_run(out)
    assert result.ok, [v.message for v in result.violations]


def test_same_seed_same_jobs_csv(tmp_path: Path) -> None:
    trace = _trace()
    outs = []
    for n in range(2):
        out = tmp_path / f"r{n}"
        args = ["run", "--cluster", "gavel-2:2:2", "--workload", str(trace), "--max-gpus", "2"]
        args += ["--sample", "30", "--policy", "gavel-fifo", "--seed", "3"]
        assert main([*args, "--out", str(out)]) == 0
        outs.append((out / "jobs.csv").read_bytes())
    assert outs[0] == outs[1]
