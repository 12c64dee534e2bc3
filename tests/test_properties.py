"""Invariants of the engine on random small workloads (hypothesis).

For every preset (ada-srsf, srsf1, srsf2, srsf3) and placement (ff, ls, rand, lwf):
every job finishes; arrival <= start <= finish; no GPU's memory is ever over-committed; a job is
one gang segment on exactly its G distinct GPUs; same seed -> identical results; busy GPU time
<= GPUs x makespan (iteration level: busy time = exactly the compute work); and no job is faster
than it would be alone.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsched.api import Settings, build_simulator
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.perf.contention import MB

PRESETS = ["ada-srsf", "srsf1", "srsf2", "srsf3"]
PLACEMENTS = ["ff", "ls", "rand", "lwf"]
GPU_MEMORY = 16000.0
A, B_, ETA = 1e-3, 1e-9, 0.5e-9

HYP = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def scenarios(draw, zero_compute: bool = True):
    """Random cluster + jobs. ``zero_compute`` allows t_f = t_b = 0 (the workload readers reject
    it; the iteration-level engine handles it, the job-level one divides by t_iter)."""
    servers = draw(st.integers(1, 3))
    per_server = draw(st.integers(1, 4))
    total = servers * per_server
    n_jobs = draw(st.integers(1, 7))
    jobs = []
    for i in range(n_jobs):
        model = ModelProfile(
            f"m{i}",
            size_mb=draw(st.sampled_from([0.0, 5.0, 50.0, 200.0])),
            memory_mb=draw(st.sampled_from([1000.0, 5000.0, 9000.0, 16000.0])),
            batch_size=1,
            t_forward=draw(st.sampled_from([0.0, 0.01, 0.02, 0.05])),
            t_backward=draw(
                st.sampled_from([0.0, 0.01, 0.03, 0.1] if zero_compute else [0.01, 0.1])
            ),
        )
        jobs.append(
            JobSpec(
                job_id=i,
                arrival=draw(st.sampled_from([0.0, 0.0, 0.05, 0.1, 0.3, 1.0])),
                num_gpus=draw(st.integers(1, min(total, 4))),
                iterations=draw(st.integers(1, 6)),
                model=model,
            )
        )
    return {
        "cluster": Cluster.homogeneous(servers, per_server, gpu_memory_mb=GPU_MEMORY),
        "jobs": jobs,
        "policy": draw(st.sampled_from(PRESETS)),
        "placement": draw(st.sampled_from(PLACEMENTS)),
        "seed": draw(st.integers(0, 3)),
        "ipt": draw(st.sampled_from([1, 1, 2, 3])),
    }


def run(sc, granularity="iteration"):
    # iterations_per_task only exists at iteration level (elsewhere it is an input error)
    ipt = sc["ipt"] if granularity == "iteration" else 1
    s = Settings(granularity=granularity, iterations_per_task=ipt, a=A, b=B_, eta=ETA)
    sim = build_simulator(
        sc["cluster"],
        sc["jobs"],
        sc["policy"],
        placement=sc["placement"],
        seed=sc["seed"],
        settings=s,
    )
    return sim, sim.run()


def parse(cluster: Cluster, placement: str) -> list[int]:
    out = []
    for part in placement.split(";"):
        s, g = part.split(":")
        out.append(cluster.server_first_gpu[int(s)] + int(g))
    return out


def check_invariants(sc, sim, res) -> None:
    cluster, specs = sc["cluster"], {j.job_id: j for j in sc["jobs"]}
    eps = 1e-9
    # every job finishes, in causal order
    assert sorted(r.job_id for r in res.jobs) == sorted(specs)
    for r in res.jobs:
        spec = specs[r.job_id]
        assert r.arrival == spec.arrival
        assert r.arrival <= r.start <= r.finish
        assert r.gpus == spec.num_gpus
        assert r.preemptions == 0
    # one gang segment per job, on exactly G distinct GPUs, matching the job record
    by_job = defaultdict(list)
    for seg in res.segments:
        by_job[seg.job_id].append(seg)
    recs = {r.job_id: r for r in res.jobs}
    for jid, segs in by_job.items():
        assert len(segs) == 1
        (seg,) = segs
        gpus = parse(cluster, seg.placement)
        assert len(gpus) == specs[jid].num_gpus == len(set(gpus))
        assert seg.placement == recs[jid].placement
        assert seg.start == recs[jid].start and seg.end == recs[jid].finish
    assert set(by_job) == set(specs)
    # memory: at every segment start, the segments covering each GPU fit in its memory
    per_gpu = defaultdict(list)  # gpu -> [(start, end, memory)]
    for seg in res.segments:
        for g in parse(cluster, seg.placement):
            per_gpu[g].append((seg.start, seg.end, specs[seg.job_id].memory_mb))
    for g, ivs in per_gpu.items():
        for t, _, _ in ivs:
            used = sum(m for s, e, m in ivs if s <= t < e)
            assert used <= cluster.gpu_memory(g) + eps
    # no job beats running alone: per iteration at least t_f + t_b (+ a + b M across servers)
    for r in res.jobs:
        spec = specs[r.job_id]
        cross = len(cluster.servers_of(parse(cluster, r.placement))) > 1
        per_iter = spec.model.t_compute + (A + B_ * spec.model.size_mb * MB if cross else 0.0)
        assert r.finish - r.start >= spec.iterations * per_iter * (1 - 1e-9) - eps
    # busy GPU time fits in GPUs x makespan, and in the time the GPUs were held (the summary
    # no longer clamps: float rounding may pass 1 by an ulp)
    busy = sim.executor.busy_gpu_seconds()
    makespan = res.summary["makespan"]
    assert busy <= cluster.num_gpus * makespan * (1 + 1e-9) + eps
    assert 0.0 <= res.summary["gpu_util"] <= 1.0 + 1e-9
    assert res.summary["gpu_util"] <= res.summary["gpu_held"] + 1e-9 <= 1.0 + 2e-9


@HYP
@given(sc=scenarios())
def test_iteration_level_invariants(sc):
    sim, res = run(sc)
    check_invariants(sc, sim, res)
    # iteration level: busy time is exactly the compute work, however tasks were split
    work = sum(j.num_gpus * j.iterations * j.model.t_compute for j in sc["jobs"])
    assert sim.executor.busy_gpu_seconds() == pytest.approx(work, rel=1e-9, abs=1e-9)


@HYP
@given(sc=scenarios(zero_compute=False))
def test_job_level_invariants(sc):
    sim, res = run(sc, granularity="job")
    check_invariants(sc, sim, res)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(zero_compute=False), granularity=st.sampled_from(["iteration", "job"]))
def test_same_seed_same_result(sc, granularity):
    _, r1 = run(sc, granularity)
    _, r2 = run(sc, granularity)
    assert r1.jobs == r2.jobs
    assert r1.segments == r2.segments
    assert r1.summary == r2.summary


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios())
def test_single_server_jobs_ignore_the_gate(sc):
    # With only one server there is no network traffic: every preset gives the same schedule.
    cluster = Cluster.homogeneous(1, 4, gpu_memory_mb=GPU_MEMORY)
    jobs = [
        JobSpec(j.job_id, j.arrival, min(j.num_gpus, 4), j.iterations, j.model) for j in sc["jobs"]
    ]
    results = []
    for policy in PRESETS:
        sc2 = dict(sc, cluster=cluster, jobs=jobs, policy=policy)
        results.append(run(sc2)[1].jobs)
    assert all(r == results[0] for r in results)
