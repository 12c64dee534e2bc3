"""Finish-time fairness, Jain's index and per-type utilisation (issue #17, core/fairness.py):
hand-worked cases, a brute-force property for the contention integral, ``fairness.csv`` and
``ddlsched check`` catching a changed value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.api import simulate
from ddlsched.check import check_run
from ddlsched.core.cluster import Cluster, Server
from ddlsched.core.fairness import contention, fairness
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.results import JobRecord, write_result

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def job(i: int, gpus: int, duration: float, arrival: float = 0.0, **kw) -> JobSpec:
    return JobSpec(i, arrival, gpus, 0, TRACE, duration=duration, **kw)


def rec(i: int, arrival: float, finish: float, gpus: int = 1) -> JobRecord:
    return JobRecord(i, arrival, arrival, finish, gpus, "0:0", 0)


def test_contention_by_hand() -> None:
    # A in [0, 100], B in [50, 150]: each is alone half its stay and with the other half
    assert list(contention([0, 50], [100, 150])) == [1.5, 1.5]
    # C arrives as A leaves: the instant does not count
    assert list(contention([0, 100], [100, 200])) == [1.0, 1.0]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 50)), min_size=1, max_size=12))
def test_contention_is_the_time_average_count(stays) -> None:
    arr = [float(a) for a, _ in stays]
    fin = [float(a + d) for a, d in stays]
    got = contention(arr, fin)
    for k in range(len(stays)):
        # brute force on a fine grid (integers: exact at the midpoints of unit steps)
        pts = [arr[k] + 0.5 + i for i in range(int(fin[k] - arr[k]))]
        want = sum(sum(a <= t < f for a, f in zip(arr, fin, strict=True)) for t in pts) / len(pts)
        assert got[k] == pytest.approx(want, rel=1e-12)
        assert 1.0 <= got[k] <= len(stays)


def test_a_job_alone_on_an_empty_cluster_has_rho_one() -> None:
    res = simulate(Cluster.homogeneous(1, 4), [job(0, 2, 100.0)], "fifo")
    (row,) = res.fairness
    assert row == (0, 100.0, 1.0, 100.0, 1.0)
    assert res.summary["avg_ftf_rho"] == res.summary["max_ftf_rho"] == 1.0
    assert res.summary["jain_index"] == 1.0


def test_two_gangs_on_the_whole_cluster_by_hand() -> None:
    # A and B each want all 4 GPUs for 100 s, both at 0: A runs 0–100, B 100–200.
    # A: N = 2 over its stay → fair JCT 100·max(1, 2·4/4) = 200, ρ = 100/200 = 0.5;
    # B: N = (2·100 + 1·100)/200 = 1.5 → fair 150, ρ = 200/150 = 4/3
    res = simulate(Cluster.homogeneous(1, 4), [job(0, 4, 100.0), job(1, 4, 100.0)], "fifo")
    a, b = res.fairness
    assert a == (0, 100.0, 2.0, 200.0, 0.5)
    assert b[:4] == (1, 100.0, 1.5, 150.0) and b[4] == pytest.approx(4 / 3)
    assert res.summary["max_ftf_rho"] == pytest.approx(4 / 3)
    # Jain's index of the shares 1/ρ = 2 and 0.75: (2.75)² / (2 · (4 + 0.5625))
    assert res.summary["jain_index"] == pytest.approx(2.75**2 / (2 * 4.5625))


def test_alone_time_shares_the_types_in_proportion() -> None:
    # 2 GPUs of A (job: 100 s) and 2 of B (300 s): an equal share of each type gives the rate
    # 0.5/100 + 0.5/300 → alone 150 s; FIFO runs it on A in 100 s → ρ = 2/3
    cl = Cluster(
        servers=(Server(num_gpus=2, gpu_type="A"), Server(num_gpus=2, gpu_type="B", speed=0.5))
    )
    res = simulate(cl, [job(0, 1, 100.0, type_durations=(("A", 100.0), ("B", 300.0)))], "fifo")
    (row,) = res.fairness
    assert row[1] == pytest.approx(150.0) and row[4] == pytest.approx(2 / 3)
    # per-type utilisation: A held 100 of 2 × 100 GPU-seconds, B none
    assert res.summary["gpu_held_A"] == 0.5 and res.summary["gpu_held_B"] == 0.0


def test_fairness_function_matches_its_definition() -> None:
    jobs = [rec(0, 0.0, 100.0, gpus=2), rec(1, 50.0, 150.0, gpus=2)]
    rows, keys = fairness(jobs, {0: 40.0, 1: 80.0}, num_gpus=2)
    # N = 1.5 each, g·N/G = 1.5 → fair = alone · 1.5
    assert [r[3] for r in rows] == [60.0, 120.0]
    assert [r[4] for r in rows] == pytest.approx([100 / 60, 100 / 120])
    assert keys["max_ftf_rho"] == pytest.approx(100 / 60)


def test_check_accepts_the_file_and_catches_a_changed_rho(tmp_path: Path) -> None:
    from ddlsched.cli import main

    out = tmp_path / "run"
    argv = ["run", "--cluster", "luo24", "--workload", "luo24-40", "--policy", "tiresias"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    assert (out / "fairness.csv").exists()
    assert check_run(out).ok, [v.message for v in check_run(out).violations]
    # change one ρ and re-digest so only the fairness rule can object
    rows = (out / "fairness.csv").read_text().splitlines()
    cells = rows[1].split(",")
    cells[-1] = repr(float(cells[-1]) * 2 + 1)
    rows[1] = ",".join(cells)
    (out / "fairness.csv").write_text("\n".join(rows) + "\n")
    import hashlib

    summary = json.loads((out / "summary.json").read_text())
    data = (out / "fairness.csv").read_bytes()
    summary["files"]["fairness.csv"] = hashlib.sha256(data).hexdigest()
    (out / "summary.json").write_text(json.dumps(summary))
    rules = {v.rule for v in check_run(out).violations}
    assert "fairness" in rules


@pytest.mark.parametrize(
    ("gpus", "granularity"), [(1, "iteration"), (8, "iteration"), (1, "job"), (8, "job")]
)
def test_a_model_job_alone_has_rho_one(gpus: int, granularity: str) -> None:
    # Wang's model: alone, an iteration is t_f + t_b (+ one uncontended all-reduce across
    # servers), so the JCT is exactly the alone time (on the 1 ns grid)
    spec = _wang_jobs()[0]
    spec = JobSpec(0, 0.0, gpus, 300, spec.model)
    res = simulate(
        Cluster.homogeneous(4, 4), [spec], "ada-srsf", settings={"granularity": granularity}
    )
    (row,) = res.fairness
    assert row[2] == 1.0 and row[4] == pytest.approx(1.0, abs=1e-9)
    cross = gpus > 4
    assert (row[1] > 300 * spec.model.t_compute) is cross


def test_yu_planner_runs_report_fairness() -> None:
    from ddlsched.workloads.presets import load_workload

    jobs = list(load_workload("yu22", 0))[:6]
    res = simulate(Cluster.homogeneous(4, 8), jobs, "sjf-bco")
    assert len(res.fairness) == 6 and res.summary["max_ftf_rho"] >= 1.0 - 1e-9


def test_a_rate_model_without_alone_times_gives_no_fairness(tmp_path: Path) -> None:
    from ddlsched.core.jobexec import JobExecutor
    from ddlsched.core.simulator import Simulator
    from ddlsched.policies.registry import make_policy

    class Plain:  # a user's rate model: iteration times only
        def iteration_time(self, job, ex) -> float:
            return job.spec.model.t_compute

    sim = Simulator(
        Cluster.homogeneous(2, 4), _wang_jobs()[:3], make_policy("ada-srsf"), JobExecutor(Plain())
    )
    res = sim.run()
    assert res.fairness == () and "avg_ftf_rho" not in res.summary
    write_result(res, tmp_path / "r")
    assert not (tmp_path / "r" / "fairness.csv").exists()


def _wang_jobs() -> list[JobSpec]:
    from ddlsched.workloads.presets import load_workload

    return list(load_workload("wang20", 0))[:4]


def test_jobs_that_need_no_time() -> None:
    """A job whose alone time is 0 has ρ = 1 if it also took no time (0/0: it finished as it
    would have alone) and ρ = ∞ if it waited; ∞ rows stay in fairness.csv but not in the
    summary (no NaN from Jain's index, nothing JSON cannot hold)."""
    rows, keys = fairness([rec(0, 0.0, 10.0), rec(1, 5.0, 5.0)], {0: 10.0, 1: 0.0}, 1)
    assert [r[4] for r in rows] == [1.0, 1.0]
    assert keys == {"avg_ftf_rho": 1.0, "max_ftf_rho": 1.0, "jain_index": 1.0}
    rows, keys = fairness([rec(0, 0.0, 10.0), rec(1, 5.0, 10.0)], {0: 10.0, 1: 0.0}, 1)
    assert rows[1][4] == float("inf")
    assert keys["max_ftf_rho"] == rows[0][4] and keys["jain_index"] == 1.0
    rows, keys = fairness([rec(1, 5.0, 10.0)], {1: 0.0}, 1)
    assert rows[0][4] == float("inf") and keys == {}


def test_zero_time_jobs_write_a_checkable_run(tmp_path: Path) -> None:
    free = ModelProfile("free", 0.0, 1000.0, 16, 0.0, 0.0)
    busy = ModelProfile("busy", 0.1, 1.0, 16, 0.1, 0.1)
    jobs = [JobSpec(0, 0.0, 2, 100, busy), JobSpec(1, 3.0, 2, 10, free)]
    res = simulate(Cluster.homogeneous(1, 2), jobs, "srsf1", settings={"granularity": "job"})
    assert res.fairness[1][1] == 0.0 and res.fairness[1][4] == 1.0  # alone 0, took 0
    write_result(res, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["jain_index"] == 1.0
    assert check_run(tmp_path / "out").ok
