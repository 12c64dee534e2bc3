"""Pollux (first version): elastic re-allocation on the built-in profiles."""

from __future__ import annotations

import pytest

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


def _run_recorded(monkeypatch):
    """Pollux on the built-in 30-job workload, recording each round's problem and allocation."""
    from ddlsched.policies import pollux as pollux_mod
    from ddlsched.policies.pollux import Pollux

    chosen = []
    original = pollux_mod.search

    def recording_search(prob, **kw):
        alloc = original(prob, **kw)
        chosen.append(alloc)
        return alloc

    monkeypatch.setattr(pollux_mod, "search", recording_search)
    rounds = []
    jobs = load_workload("luo24-30", seed=4)
    sim = build_simulator(load_cluster("luo24"), jobs, Pollux(record=rounds), seed=4)
    res = sim.run()
    return rounds, chosen, res


def test_pollux_realises_each_chosen_per_node_allocation_exactly(monkeypatch):
    from ddlsched.policies.pollux_search import violations

    rounds, chosen, res = _run_recorded(monkeypatch)
    assert len(rounds) == len(chosen) > 10 and len(res.jobs) == 30
    for prob, alloc in zip(rounds, chosen, strict=True):
        assert violations(prob, alloc) == []
    # the next round sees, as each surviving job's current GPUs per node, what was chosen
    for (p0, a0), p1 in zip(zip(rounds, chosen, strict=True), rounds[1:], strict=False):
        row = {jid: a0[i] for i, jid in enumerate(p0.job_ids)}
        for i, jid in enumerate(p1.job_ids):
            if jid in row:
                assert (p1.current[i] == row[jid]).all(), (p1.time, jid)


def test_pollux_never_puts_two_multi_server_jobs_on_one_server():
    jobs = load_workload("luo24-30", seed=4)
    sim = build_simulator(load_cluster("luo24"), jobs, "pollux", seed=4)
    res = sim.run()
    spans = []
    for s in res.segments:
        servers = {g.split(":")[0] for g in s.placement.split(";")}
        if len(servers) > 1:
            spans.append((s.start, s.end, servers, s.job_id))
    for a in spans:
        for b in spans:
            if a[3] != b[3] and a[0] < b[1] and b[0] < a[1]:
                assert not a[2] & b[2], (a, b)


def test_ncf_quirk_is_an_option():
    """The artifact pins NCF to one replica at batch 32768; ``pollux_ncf_batch=0`` lifts it."""
    from ddlsched.api import Settings
    from ddlsched.errors import InputError

    jobs = [j for j in load_workload("luo24-30", seed=4)]
    ncf = [j for j in jobs if j.application == "ncf"]
    assert ncf, "the built-in workload has NCF jobs"

    def widest_ncf(settings):
        sim = build_simulator(load_cluster("luo24"), jobs, "pollux", seed=4, settings=settings)
        res = sim.run()
        ids = {j.job_id for j in ncf}
        return max(len(s.placement.split(";")) for s in res.segments if s.job_id in ids)

    assert widest_ncf(Settings()) == 1
    assert widest_ncf(Settings(pollux_ncf_batch=0)) > 1
    with pytest.raises(InputError, match="pollux_ncf_batch"):
        Settings.from_mapping({"pollux_ncf_batch": "-1"})


def test_pollux_runs_on_servers_of_different_sizes() -> None:
    # the search was given max GPUs per server for every node: an allocation for a 4-GPU
    # node put on the 3-GPU one failed ("node 2 lacks GPUs"); now each node's own size counts
    from ddlsched.api import simulate
    from ddlsched.core.cluster import Cluster, Server
    from ddlsched.workloads.luo24 import generate_pollux_workload

    jobs = [j for j in generate_pollux_workload(3, num_jobs=30) if j.num_gpus <= 12]
    cluster = Cluster((Server(4), Server(4), Server(3), Server(1)), name="uneven")
    res = simulate(cluster, jobs, "pollux")
    assert all(j.finish > j.start >= j.arrival for j in res.jobs)
    used = {p for s in res.segments for p in s.placement.split(";")}  # "server:gpu"
    assert {"2:2", "3:0"} <= used and not any(p.startswith("2:3") for p in used)
