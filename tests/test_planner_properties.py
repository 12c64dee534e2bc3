"""Invariants of the offline planners and of their execution by the engine (hypothesis).

For each planner (sjf-bco, yu-ff, yu-ls, yu-rand) on random small clusters and job sets:

- the plan: one entry per job on exactly G_j distinct GPUs; no GPU holds two planned jobs at
  overlapping planned times; every GPU's accumulated planned time ≤ the chosen θ (constraint
  16); a bisected plan's makespan is below the horizon it was found with;
- the execution: every job runs as one gang segment on exactly its planned GPUs, no GPU runs two
  jobs at once, jobs start in plan order;
- bounds: no job runs faster than alone on one server; the summary's ``makespan_lower_bound``
  (total GPU-time at that speed ÷ GPUs, and the longest such job) is ≤ the planned and the
  executed makespan. It is a valid bound here because u = 1 (a planned duration is ρ̂ itself,
  not ρ̂/u) and every server's network link is no faster than the intra-server bus (b_e ≤ b_i,
  f(α, k) ≥ 1 and ξ2·servers ≥ ξ2), so no placement beats one server without contention;
- determinism: the same seed gives the same plan and the same results.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsched.api import Settings, build_simulator
from ddlsched.core.cluster import Cluster, Server
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.planning import Estimator

PLANNERS = ("sjf-bco", "yu-ff", "yu-ls", "yu-rand")
TOL = 1e-6

HYP = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def instances(draw):
    sizes = draw(st.lists(st.sampled_from([2, 4, 8]), min_size=2, max_size=4))
    network = draw(st.sampled_from([10.0, 25.0, 100.0]))  # never above the intra bus (100)
    cluster = Cluster(
        servers=tuple(
            Server(num_gpus=g, network_bandwidth_gbps=network, intra_bandwidth_gbps=100.0)
            for g in sizes
        )
    )
    total = sum(sizes)
    jobs = []
    for i in range(draw(st.integers(1, 6))):
        tau = draw(st.floats(0.01, 0.05))
        model = ModelProfile(
            f"m{i}",
            size_mb=draw(st.sampled_from([1.0, 3.0, 5.0, 50.0])),
            memory_mb=1000.0,
            batch_size=32,
            t_forward=tau / 3,
            t_backward=tau * 2 / 3,
        )
        g = draw(st.sampled_from([n for n in (1, 2, 3, 4, 8, 16) if n <= total]))
        jobs.append(JobSpec(i, 0.0, g, draw(st.integers(1000, 6000)), model))
    s = Settings(
        horizon=draw(st.sampled_from([300.0, 1200.0, 1e5])),
        time_slots=draw(st.booleans()),
        estimate=draw(st.sampled_from(["start", "isolated"])),
        lam=draw(st.sampled_from([1.0, 2.0])),
    )
    return cluster, jobs, s, draw(st.integers(0, 3))


def labels(cluster: Cluster, gpus) -> str:
    return cluster.placement_label(tuple(gpus))


def no_overlap(intervals: dict[object, list[tuple[float, float, int]]]) -> None:
    for key, ivs in intervals.items():
        ivs.sort()
        for (_, e0, j0), (s1, _, j1) in zip(ivs, ivs[1:], strict=False):
            assert e0 <= s1 + TOL, f"{key}: jobs {j0} and {j1} overlap"


def check(cluster: Cluster, jobs: list[JobSpec], s: Settings, seed: int, name: str):
    sim = build_simulator(cluster, jobs, name, seed=seed, settings=s)
    plan = sim.policy.plan
    res = sim.run()
    specs = {j.job_id: j for j in jobs}
    theta = plan.params["theta"]

    # ---- the plan
    assert sorted(e.job_id for e in plan.entries) == sorted(specs)
    planned_gpu: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    U = defaultdict(float)
    for e in plan.entries:
        assert len(e.gpus) == specs[e.job_id].num_gpus == len(set(e.gpus))
        assert all(0 <= g < cluster.num_gpus for g in e.gpus)
        assert 0.0 <= e.start < e.end
        for g in e.gpus:
            planned_gpu[g].append((e.start, e.end, e.job_id))
            U[g] += e.end - e.start
    no_overlap(planned_gpu)
    assert max(U.values()) <= theta + TOL  # constraint (16)
    starts = [e.start for e in plan.entries]
    assert starts == sorted(starts)  # entries are in planned start order
    if name == "yu-rand":
        assert theta == plan.params["horizon"]
    else:
        assert plan.makespan < plan.params["horizon"]
        assert 1.0 <= theta <= plan.params["horizon"]

    # ---- the execution
    recs = {r.job_id: r for r in res.jobs}
    assert set(recs) == set(specs)
    segs = defaultdict(list)
    for seg in res.segments:
        segs[seg.job_id].append(seg)
    used: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    est = Estimator(cluster, s.rar, "isolated")
    for e in plan.entries:
        r = recs[e.job_id]
        assert r.placement == labels(cluster, e.gpus)  # the planned GPUs
        assert len(segs[e.job_id]) == 1  # one gang segment, no preemption
        (seg,) = segs[e.job_id]
        assert (seg.start, seg.end, seg.placement) == (r.start, r.finish, r.placement)
        for lab in r.placement.split(";"):
            used[lab].append((r.start, r.finish, r.job_id))
        # never faster than alone on one server
        assert r.finish - r.start >= est.rho_lower(specs[e.job_id]) * (1 - 1e-9)
    no_overlap(used)
    executed = [recs[e.job_id].start for e in plan.entries]
    assert executed == sorted(executed)  # start order = plan order

    # ---- bounds and summary
    sm = res.summary
    assert sm["planned_makespan"] == pytest.approx(plan.makespan)
    assert sm["plan_theta"] == theta
    lb = sm["makespan_lower_bound"]
    assert lb <= plan.makespan * (1 + 1e-9)
    assert lb <= sm["makespan"] * (1 + 1e-9)
    if s.time_slots:
        assert all(r.finish == int(r.finish) for r in res.jobs)  # completions at slot ends
    return plan, res


@pytest.mark.parametrize("name", PLANNERS)
@HYP
@given(inst=instances())
def test_planner_invariants_and_determinism(name, inst):
    cluster, jobs, s, seed = inst
    if name != "sjf-bco":  # λ is SJF-BCO's own: elsewhere a non-default λ is an input error
        s = replace(s, lam=1.0)
    plan1, res1 = check(cluster, jobs, s, seed, name)
    sim = build_simulator(cluster, jobs, name, seed=seed, settings=s)
    assert sim.policy.plan == plan1
    res2 = sim.run()
    assert res2.jobs == res1.jobs
    assert res2.segments == res1.segments
    assert res2.summary == res1.summary
