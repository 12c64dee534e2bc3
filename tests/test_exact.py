"""The exact solver (planning/exact.py) and the yu22-optgap experiment.

CP-SAT is checked against brute-force enumeration on tiny instances, its plans for feasibility
and against the isolated estimate, the planners against its optimum, and one instance by hand.
"""

from __future__ import annotations

import dataclasses
import math
import sys

import numpy as np
import pytest

pytest.importorskip("ortools")

from ddlsched.core.cluster import Cluster, Server  # noqa: E402
from ddlsched.core.job import JobSpec, ModelProfile  # noqa: E402
from ddlsched.experiments.yu22_optgap import (  # noqa: E402
    METRICS,
    OPTGAP,
    optgap_table,
    small_instance,
)
from ddlsched.perf.rar import RarModel  # noqa: E402
from ddlsched.planning.exact import (  # noqa: E402
    brute_force_makespan,
    job_modes,
    solve_exact,
)
from ddlsched.planning.plan import Estimator  # noqa: E402
from ddlsched.planning.planners import PLANNER_NAMES, PlannerParams, make_planner  # noqa: E402
from ddlsched.workloads.generators import yu22  # noqa: E402

MODEL = RarModel()


def tiny_instance(i: int) -> tuple[Cluster, list[JobSpec]]:
    """2 servers × 2–4 GPUs, 2–4 yu22 jobs with sizes from {1, 2, 4} that fit the cluster."""
    rng = np.random.default_rng((99, i))
    caps = rng.choice([2, 3, 4], size=2)
    cluster = Cluster(tuple(Server(num_gpus=int(c)) for c in caps))
    n = int(rng.integers(2, 5))
    sizes = [g for g in (1, 2, 4) if g <= cluster.num_gpus]
    jobs = yu22(int(rng.integers(1000)), num_jobs=n)
    return cluster, [dataclasses.replace(j, num_gpus=int(rng.choice(sizes))) for j in jobs]


def check_plan(
    cluster: Cluster, jobs: list[JobSpec], plan, model: RarModel = MODEL, u: float = 1.0
) -> None:
    """Every job once with exactly G_j distinct GPUs, its isolated duration, no GPU shared."""
    est = Estimator(cluster, model, "isolated")
    by_id = {s.job_id: s for s in jobs}
    assert sorted(e.job_id for e in plan.entries) == sorted(by_id)
    busy: dict[int, list[tuple[float, float]]] = {}
    for e in plan.entries:
        spec = by_id[e.job_id]
        assert len(e.gpus) == len(set(e.gpus)) == spec.num_gpus
        assert e.start >= 0
        rho = est.rho(spec, np.asarray(e.gpus)) / u
        assert e.end - e.start == pytest.approx(rho, rel=1e-12)
        for g in e.gpus:
            busy.setdefault(g, []).append((e.start, e.end))
    for spans in busy.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start + 1e-9


def test_job_modes_enumerates_per_server_counts():
    cl = Cluster((Server(num_gpus=4), Server(num_gpus=2)))
    assert job_modes(cl, 4) == [(4, 0), (3, 1), (2, 2)]
    assert job_modes(cl, 6) == [(4, 2)]
    assert len(job_modes(Cluster((Server(4), Server(4))), 4)) == 5


@pytest.mark.parametrize("i", range(24))
def test_cpsat_matches_brute_force_and_plan_is_feasible(i):
    cluster, jobs = tiny_instance(i)
    res = solve_exact(cluster, jobs, MODEL, time_limit=10.0)
    bf = brute_force_makespan(cluster, jobs, MODEL, 1.0)
    band = len(jobs) * res.resolution
    assert res.optimal
    # lower_bound ≤ OPT ≤ plan makespan ≤ lower_bound + n·resolution
    assert res.lower_bound <= bf + 1e-9
    assert res.makespan >= bf - 1e-9
    assert res.makespan - res.lower_bound <= band + 1e-9
    assert res.plan.makespan == res.makespan
    check_plan(cluster, jobs, res.plan)


def test_planners_never_beat_the_optimum():
    for i in range(6):
        cluster, jobs = small_instance(i, max_jobs=6)
        res = solve_exact(cluster, jobs, MODEL, time_limit=10.0)
        assert res.optimal
        check_plan(cluster, jobs, res.plan)
        params = PlannerParams(estimate="isolated", horizon=20000.0)
        for name in PLANNER_NAMES:
            plan = make_planner(name, params).plan(cluster, jobs, MODEL, i)
            check_plan(cluster, jobs, plan)
            assert plan.makespan >= res.lower_bound - 1e-9, name


def _hand_job(job_id: int, gpus: int) -> JobSpec:
    # one iteration of 9 s compute and no gradient to exchange: with ξ2 = 1 s per server the
    # isolated duration on n servers is exactly n + 9 s
    return JobSpec(job_id, 0.0, gpus, 1, ModelProfile(f"h{job_id}", 0.0, 100.0, 1, 9.0, 0.0))


def test_hand_worked_instance():
    # Two servers × 2 GPUs, three jobs of 2 GPUs; each takes 10 s on one server and 11 s split
    # over both (one GPU on each). On a 2-GPU server a one-server job needs the whole server, so
    # nothing else runs there beside it; a split job needs one GPU of each server, so at most
    # two split jobs run at once. With a_s one-server jobs on server s and c split jobs
    # (a_0 + a_1 + c = 3), server s is busy at least 10·a_s + 11·⌈c/2⌉ s:
    #   c = 0: some server hosts two one-server jobs      → ≥ 20
    #   c = 1: a_0 + a_1 = 2, best a_0 = a_1 = 1          → ≥ 10 + 11 = 21
    #   c = 2: a_0 + a_1 = 1                              → ≥ 10 + 11 = 21
    #   c = 3: two split rounds                           → ≥ 22
    # and 20 is reached by two jobs in turn on server 0 and one on server 1: OPT = 20 s,
    # while the GPU-time bound (60 GPU·s ÷ 4 GPUs) is only 15 s.
    cluster = Cluster((Server(num_gpus=2), Server(num_gpus=2)))
    jobs = [_hand_job(j, 2) for j in range(3)]
    model = RarModel(xi2=1.0)
    assert Estimator(cluster, model, "isolated").rho_by_servers(jobs[0], 2) == pytest.approx(11.0)
    res = solve_exact(cluster, jobs, model)
    assert res.optimal
    assert res.lower_bound == pytest.approx(20.0)
    assert res.makespan == pytest.approx(20.0)
    assert brute_force_makespan(cluster, jobs, model, 1.0) == pytest.approx(20.0)
    assert all(len({g // 2 for g in e.gpus}) == 1 for e in res.plan.entries)  # none split
    # u scales every duration
    assert solve_exact(cluster, jobs, model, u=2.0).makespan == pytest.approx(10.0)


def test_exclusive_jobs_go_first_and_fit():
    # a 4-GPU job on 2 × 2 GPUs runs alone (split, 11 s); two 1-GPU jobs (10 s) run together
    cluster = Cluster((Server(num_gpus=2), Server(num_gpus=2)))
    jobs = [_hand_job(0, 1), _hand_job(1, 4), _hand_job(2, 1)]
    model = RarModel(xi2=1.0)
    res = solve_exact(cluster, jobs, model)
    assert res.optimal and res.makespan == pytest.approx(21.0)
    assert brute_force_makespan(cluster, jobs, model) == pytest.approx(21.0)
    check_plan(cluster, jobs, res.plan, model)


def test_solver_is_deterministic():
    cluster, jobs = small_instance(3, max_jobs=6)
    a = solve_exact(cluster, jobs, MODEL)
    b = solve_exact(cluster, jobs, MODEL)
    assert a.plan.entries == b.plan.entries and a.lower_bound == b.lower_bound


def test_rejects_what_it_cannot_solve():
    cluster = Cluster((Server(num_gpus=2),))
    with pytest.raises(ValueError, match="needs 4 GPUs"):
        solve_exact(cluster, [_hand_job(0, 4)], MODEL)
    with pytest.raises(ValueError, match="max_modes"):
        solve_exact(Cluster((Server(8), Server(8))), [_hand_job(0, 8)], MODEL, max_modes=3)
    with pytest.raises(ValueError, match="resolution"):
        solve_exact(cluster, [_hand_job(0, 1)], MODEL, resolution=100.0)
    assert solve_exact(cluster, [], MODEL).makespan == 0.0


def test_missing_ortools_names_the_extra(monkeypatch):
    for mod in ("ortools", "ortools.sat", "ortools.sat.python", "ortools.sat.python.cp_model"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ImportError, match=r"pip install ddlsched\[exact\]"):
        solve_exact(Cluster((Server(2),)), [_hand_job(0, 1)], MODEL)


def test_optgap_table_on_a_tiny_setting():
    table = optgap_table(OPTGAP, 1, workers=1, per_seed=3, max_jobs=5)
    cells = {(t["row"], t["metric"]) for t in table}
    for row in ("SJF-BCO", "FF", "LS"):
        assert {(row, "gap_small"), (row, "optimal_share")} <= cells
    for row in ("SJF-BCO", "FF", "LS", "RAND"):
        assert {(row, "ratio_lb_full"), (row, "planned_ratio_lb_full")} <= cells
    assert {("SJF-BCO", "theorem5_bound"), ("CP-SAT", "proven_share")} <= cells
    assert {t["metric"] for t in table} <= set(METRICS)
    for t in table:
        assert math.isfinite(t["ours_mean"]) and math.isfinite(t["ours_ci_high"])
        assert t["experiment"] == "yu22-optgap" and t["variant"] == "default"
    by = {(t["row"], t["metric"]): t for t in table}
    assert by[("CP-SAT", "proven_share")]["seeds"] == 3
    for row in ("SJF-BCO", "FF", "LS"):
        assert by[(row, "gap_small")]["ours_mean"] >= 0.0
    assert by[("SJF-BCO", "theorem5_bound")]["ours_mean"] >= 1.0
