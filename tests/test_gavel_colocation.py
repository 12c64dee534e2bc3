"""Co-location of trace jobs on shared GPUs (issue #17): Gavel's measured pairs slow each job of
a pair by ξ = its steps/s alone ÷ its steps/s next to the other (docs/models.md "Co-location on
shared GPUs"); jobs without pairs use the ``interference`` ratio. Hand-worked runs of sjf-ffs
and sjf-bsbf on one V100 (re-timing when a co-resident starts and leaves), pairs Gavel measured
as unable to share, runs without sharing as before, ``ddlsched check`` on a sharing run's
output, and properties on small random Gavel traces."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ddlsched.api import simulate, simulate_named
from ddlsched.check import check_run
from ddlsched.cli import main
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError
from ddlsched.workloads.trace_formats import gavel_pairs
from ddlsched.workloads.traces import TraceOptions, read_trace

THROUGHPUTS = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gavel"
).resolve() / "simulation_throughputs.json"
if not THROUGHPUTS.is_file():  # Gavel's data are not ours to ship: ../shared beside the clone
    pytest.skip(f"Gavel's throughputs not found ({THROUGHPUTS})", allow_module_level=True)
DATA = json.loads(THROUGHPUTS.read_text(encoding="utf-8"))
SHARING = ("sjf-ffs", "sjf-bsbf")

R50 = "ResNet-50 (batch size 16)"
R18 = "ResNet-18 (batch size 32)"


def key(job_type: str, gpus: int = 1) -> str:
    return f"('{job_type}', {gpus})"


def alone(job_type: str, gpu: str = "v100", gpus: int = 1) -> float:
    return DATA[gpu][key(job_type, gpus)]["null"]


def shared(job_type: str, other: str, gpu: str = "v100", gpus: int = 1) -> list[float]:
    """[job_type's steps/s, other's steps/s] while the two share ``gpus`` GPUs of ``gpu``."""
    return DATA[gpu][key(job_type, gpus)][key(other, gpus)]


def write_trace(tmp_path: Path, rows: list[tuple[str, int, int, float]], name="t.trace") -> Path:
    """A 10-column Gavel trace of (job type, total steps, GPUs, arrival) rows."""
    lines = [f"{t}\tcmd\twd\t-n\t0\t{s}\t{g}\t1\t-1\t{a:f}" for t, s, g, a in rows]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def run(cluster: str, trace: Path, policy: str, thr: Path = THROUGHPUTS, **settings):
    opts = TraceOptions(gavel_throughputs=str(thr))
    return simulate_named(cluster, str(trace), policy, trace=opts, settings=settings or None)


def jcts(res) -> dict[int, float]:
    return {j.job_id: j.jct for j in res.jobs}


def overlaps(res) -> list[tuple[int, int]]:
    """Pairs of jobs whose segments hold a common GPU at the same time."""
    segs = [(s.job_id, s.start, s.end, set(s.placement.split(";"))) for s in res.segments]
    out = []
    for i, (a, s0, e0, g0) in enumerate(segs):
        for b, s1, e1, g1 in segs[i + 1 :]:
            if a != b and g0 & g1 and max(s0, s1) < min(e0, e1):
                out.append((min(a, b), max(a, b)))
    return out


# ---------------------------------------------------------------------- the pairs table
def test_the_table_gives_alone_over_shared_and_inf_where_gavel_cannot_share() -> None:
    t = gavel_pairs(THROUGHPUTS)
    xi = t.slowdown((R50, 1), (R18, 1), "V100")  # type names compare case-insensitively
    assert xi == alone(R50) / shared(R50, R18)[0]
    assert t.slowdown((R18, 1), (R50, 1), "v100") == alone(R18) / shared(R18, R50)[0]
    assert t.slowdown((R50, 1), (R18, 1), "k80") == alone(R50, "k80") / shared(R50, R18, "k80")[0]
    a, b = zero_pair()
    assert t.slowdown((a, 1), (b, 1), "v100") == math.inf
    assert t.slowdown((R50, 1), (R18, 2), "v100") == math.inf  # pairs share one scale factor
    assert t.slowdown((R50, 16), (R18, 16), "v100") == math.inf  # not measured: no pair
    assert t.slowdown((R50, 1), (R18, 1), "a100") == math.inf  # a type the file lacks
    assert gavel_pairs(THROUGHPUTS) is t  # cached per file version


def zero_pair() -> tuple[str, str]:
    """Two 1-GPU job types that both run alone on a V100 but cannot share one (0.0, 0.0)."""
    for k, entry in DATA["v100"].items():
        if not k.endswith(", 1)") or not entry["null"] > 0:
            continue
        for other, pair in entry.items():
            if other != "null" and other != k and pair == [0.0, 0.0]:
                if DATA["v100"][other]["null"] > 0:
                    return k[2:-5], other[2:-5]
    raise AssertionError("the file has no infeasible 1-GPU pair")


# ---------------------------------------------------------------------- hand-worked
@pytest.mark.parametrize("policy", SHARING)
def test_two_jobs_share_one_v100_by_hand(tmp_path: Path, policy: str) -> None:
    """A = ResNet-50 (16), 1000 steps; B = ResNet-18 (32), 2000 steps; both at t = 0 on one V100.

    SJF starts B (shorter alone) on the idle GPU; A shares it (FFS: no free GPU; BSBF: Theorem 1
    says overlapping beats waiting). B runs at its shared steps/s and ends at
    t_B = 2000 / shared_B. A did shared_A · t_B steps by then and runs the rest alone:
    t_A = t_B + (1000 − shared_A · t_B) / alone_A.
    """
    trace = write_trace(tmp_path, [(R50, 1000, 1, 0.0), (R18, 2000, 1, 0.0)])
    res = run("gavel-1:0:0", trace, policy)
    sa, sb = shared(R50, R18)
    assert shared(R18, R50) == [sb, sa]
    t_b = 2000 / sb
    assert t_b < 1000 / sa  # B ends first
    t_a = t_b + (1000 - sa * t_b) / alone(R50)
    got = jcts(res)
    assert got[1] == pytest.approx(t_b, abs=1e-6)
    assert got[0] == pytest.approx(t_a, abs=1e-6)
    assert overlaps(res) == [(0, 1)]
    # the V100 counts once while both hold it: busy the whole makespan
    assert res.summary["gpu_util"] == pytest.approx(1.0, abs=1e-12)
    assert res.summary["max_jobs_per_gpu"] == 2
    # SJF's averages: sequential (B then A) is worse than overlapped here, as BSBF judged
    t_seq = 2000 / alone(R18)
    assert (t_a + t_b) / 2 < (t_seq + t_seq + 1000 / alone(R50)) / 2


def test_a_job_arriving_later_slows_the_runner_then_it_speeds_up_by_hand(tmp_path: Path) -> None:
    """A (ResNet-50, 3000 steps) runs alone from t = 0; B (ResNet-18, 1000 steps) arrives at
    t = 10 and shares the V100 (FFS). A's work is advanced at its alone pace to t = 10, then runs
    at its shared steps/s until B leaves at t_B = 10 + 1000 / shared_B, then alone again."""
    trace = write_trace(tmp_path, [(R50, 3000, 1, 0.0), (R18, 1000, 1, 10.0)])
    res = run("gavel-1:0:0", trace, "sjf-ffs")
    sa, sb = shared(R50, R18)
    end_b = 10 + 1000 / sb
    done_a = 10 * alone(R50) + (end_b - 10) * sa
    end_a = end_b + (3000 - done_a) / alone(R50)
    got = jcts(res)
    assert got[1] == pytest.approx(end_b - 10, abs=1e-6)
    assert got[0] == pytest.approx(end_a, abs=1e-6)
    a_segments = [s for s in res.segments if s.job_id == 0]
    assert len(a_segments) == 1  # re-timed in place, not preempted


def test_jobs_without_pairs_use_the_interference_ratio() -> None:
    """Generic trace jobs (no Gavel pairs): B (60 s) first, A (100 s) shares; ξ = 2 for both.
    B ends at 120; A did 60 s of work by then, 40 s alone → 160."""
    trace = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)
    jobs = [
        JobSpec(0, 0.0, 1, 0, trace, duration=100.0),
        JobSpec(1, 0.0, 1, 0, trace, duration=60.0),
    ]
    res = simulate(load_cluster("gavel-1:0:0"), jobs, "sjf-ffs", settings={"interference": 2.0})
    assert jcts(res) == {0: pytest.approx(160.0), 1: pytest.approx(120.0)}
    # the default ratio (1.5): B ends at 90, A did 60 s, 40 s alone → 130
    res = simulate(load_cluster("gavel-1:0:0"), jobs, "sjf-ffs")
    assert jcts(res) == {0: pytest.approx(130.0), 1: pytest.approx(90.0)}


# ---------------------------------------------------------------------- cannot share
@pytest.mark.parametrize("policy", SHARING)
def test_a_pair_gavel_cannot_co_locate_never_shares(tmp_path: Path, policy: str) -> None:
    a, b = zero_pair()
    trace = write_trace(tmp_path, [(a, 500, 1, 0.0), (b, 500, 1, 0.0), (a, 300, 1, 5.0)])
    res = run("gavel-1:0:0", trace, policy)
    assert all(j.finish is not None for j in res.jobs)
    pairs = overlaps(res)
    assert (0, 1) not in pairs and (1, 2) not in pairs
    # the two `a` jobs may share (Gavel measures a with itself) — the b job never shares
    if not pairs:
        assert jcts(res) == pytest.approx(jcts(run("gavel-1:0:0", trace, "sjf")))


def test_a_gavel_job_whose_pair_the_file_lacks_does_not_share(tmp_path: Path) -> None:
    data = {t: {"('X', 1)": {"null": 10.0}, "('Y', 1)": {"null": 5.0}} for t in ("v100",)}
    thr = tmp_path / "thr.json"
    thr.write_text(json.dumps(data))
    trace = write_trace(tmp_path, [("X", 1000, 1, 0.0), ("Y", 1000, 1, 0.0)])
    for policy in SHARING:
        res = run("gavel-1:0:0", trace, policy, thr=thr)
        assert overlaps(res) == []
        assert jcts(res) == {0: pytest.approx(100.0), 1: pytest.approx(300.0)}


def test_a_malformed_pair_is_a_one_line_error(tmp_path: Path) -> None:
    data = {"v100": {"('X', 1)": {"null": 10.0, "('X', 1)": [1.0]}}}
    thr = tmp_path / "thr.json"
    thr.write_text(json.dumps(data))
    trace = write_trace(tmp_path, [("X", 1000, 1, 0.0)])
    with pytest.raises(InputError) as info:
        read_trace(trace, throughputs=thr)
    assert info.value.field == "v100.('X', 1).('X', 1)"


# ---------------------------------------------------------------------- without sharing
def test_without_sharing_the_results_are_as_before(tmp_path: Path) -> None:
    """On enough GPUs nobody shares: sjf-ffs and sjf-bsbf give sjf's JCTs; sjf itself keeps
    one job per GPU."""
    rows = [(R50, 1000, 1, 0.0), (R18, 2000, 1, 3.0), (R50, 400, 2, 7.0), (R18, 900, 1, 9.0)]
    trace = write_trace(tmp_path, rows)
    base = run("gavel-6:0:0", trace, "sjf")
    assert base.summary["max_jobs_per_gpu"] == 1
    for policy in SHARING:
        res = run("gavel-6:0:0", trace, policy)
        assert overlaps(res) == []
        assert jcts(res) == jcts(base)
        assert res.summary["gpu_util"] == base.summary["gpu_util"]


def test_interference_applies_only_to_sharing_policies(tmp_path: Path) -> None:
    trace = write_trace(tmp_path, [(R50, 1000, 1, 0.0)])
    with pytest.raises(InputError) as info:
        run("gavel-1:0:0", trace, "sjf", interference=2.0)
    assert info.value.field == "interference"
    for key_, value in (("interference_file", "x.csv"), ("rescale_delay", 5.0)):
        with pytest.raises(InputError) as info:
            run("gavel-1:0:0", trace, "sjf-ffs", **{key_: value})
        assert info.value.field == key_
    res = run("gavel-1:0:0", trace, "sjf-ffs", interference=2.0, max_jobs_per_gpu=3)
    assert res.summary["max_jobs_per_gpu"] == 3


# ---------------------------------------------------------------------- ddlsched check
def test_check_accepts_a_sharing_runs_output(tmp_path: Path, capsys) -> None:
    rows = [(R50, 1500, 1, 0.0), (R18, 2000, 1, 0.0), (R18, 800, 1, 4.0), (R50, 600, 1, 20.0)]
    trace = write_trace(tmp_path, rows)
    out = tmp_path / "out"
    argv = ["run", "--cluster", "gavel-2:0:0", "--workload", str(trace), "--quiet"]
    argv += ["--gavel-throughputs", str(THROUGHPUTS), "--policy", "sjf-ffs", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    result = check_run(out)
    assert result.ok, result.format(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max_jobs_per_gpu"] == 2
    # a shared GPU counts once: busy = held, as without sharing (docs/models.md "Metrics")
    assert summary["gpu_util"] == pytest.approx(summary["gpu_held"], rel=1e-12)
    assert summary["gpu_util_jobs"] > summary["gpu_held"]  # some GPU was shared
    assert main(["check", str(out)]) == 0


# ---------------------------------------------------------------------- properties
ONE_GPU = sorted(k[2:-5] for k in DATA["v100"] if k.endswith(", 1)"))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("policy", SHARING)
def test_random_small_gavel_traces(tmp_path: Path, seed: int, policy: str) -> None:
    """Every job finishes and no JCT beats the job's time alone on its fastest GPU type."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 9))
    rows = [
        (
            ONE_GPU[int(rng.integers(len(ONE_GPU)))],
            int(rng.integers(100, 3000)),
            1 if rng.random() < 0.8 else 2,
            float(np.round(rng.uniform(0, 200), 3)),
        )
        for _ in range(n)
    ]
    trace = write_trace(tmp_path, rows)
    specs = {j.job_id: j for j in read_trace(trace, throughputs=THROUGHPUTS)}
    cluster = ("gavel-2:1:1", "gavel-2:0:0")[seed % 2]
    res = run(cluster, trace, policy)
    assert len(res.jobs) == n
    for j in res.jobs:
        assert j.finish is not None and math.isfinite(j.finish)
        fastest = min(d for _, d in specs[j.job_id].type_durations)
        assert j.jct >= fastest * (1 - 1e-9), (j.job_id, j.jct, fastest)
    assert res.summary["gpu_util"] <= 1.0 + 1e-12


def test_live_trace_jobs_refuse_a_sharing_policy() -> None:
    """Live jobs without an `app` are real processes, one per GPU: no co-location model."""
    from ddlsched.api import Settings
    from ddlsched.live.backend import LiveBackend
    from ddlsched.policies.plugins import policy_entry

    backend = LiveBackend(None)  # type: ignore[arg-type]
    for policy in SHARING:
        with pytest.raises(InputError, match="shares GPUs") as info:
            backend.make_policy(policy_entry(policy), Settings(), None)
        assert info.value.field == "policy"
    assert backend.make_policy(policy_entry("sjf"), Settings(), None).name == "sjf"


def test_a_plugin_policy_that_co_locates_a_pair_gavel_cannot_share_gets_an_error(
    tmp_path: Path,
) -> None:
    class Stack:
        name = "stack"
        jobs_per_gpu = 2

        def attach(self, sim) -> None:
            pass

        def schedule(self, sim) -> None:
            for job in list(sim.queue):
                sim.start(job, [0])

    a, b = zero_pair()
    trace = write_trace(tmp_path, [(a, 500, 1, 0.0), (b, 500, 1, 0.0)])
    with pytest.raises(InputError, match="unable to share"):
        run("gavel-1:0:0", trace, Stack())  # type: ignore[arg-type]
