"""Pollux (first version): elastic re-allocation on the built-in profiles."""

from __future__ import annotations

from ddlsched.api import build_simulator
from ddlsched.core.cluster_io import load_cluster
from ddlsched.workloads.presets import load_workload


def test_pollux_reallocates_and_finishes_every_job():
    jobs = load_workload("luo24-30", seed=4)
    sim = build_simulator(load_cluster("luo24"), jobs, "pollux", seed=4)
    res = sim.run()
    assert len(res.jobs) == 30 and all(j.finish > j.start >= j.arrival for j in res.jobs)
    sizes = {len(s.placement.split(";")) for s in res.segments}
    assert len(sizes) > 1  # it chose several allocation sizes
    assert len(res.segments) > len(res.jobs)  # and re-allocated some jobs (restarts)
    # first allocation of an unprofiled job: one replica (max_replicas = 2 × 0 profiled → 1)
    first = {}
    for s in res.segments:
        first.setdefault(s.job_id, s)
    assert all(len(s.placement.split(";")) == 1 for s in first.values())
    # never two jobs on a GPU
    for a in res.segments:
        for b in res.segments:
            if a is not b and a.start < b.end and b.start < a.end:
                assert not set(a.placement.split(";")) & set(b.placement.split(";"))
