"""Kueue's quota layer inside the engine (docs/tenancy.md "In the engine"): hand-built
scenarios whose outcome is stated by hand, composition with the policies, and equality with
the run without queues when the quota never binds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec
from ddlsched.core.results import write_result
from ddlsched.errors import InputError
from ddlsched.tenancy import QueuesConfig, load_queues
from ddlsched.workloads.trace_formats import PLACEHOLDER_MODEL, placeholder_model

MODEL = placeholder_model(PLACEHOLDER_MODEL)

TWO_QUEUES = """
[[resourceFlavor]]
name = "default"

[[clusterQueue]]
name = "a"
cohortName = "lab"
preemption = {{ withinClusterQueue = "LowerPriority", reclaimWithinCohort = "Any" }}
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{{ name = "default", resources = [{{ name = "nvidia.com/gpu", nominalQuota = {a} }}] }}]

[[clusterQueue]]
name = "b"
cohortName = "lab"
preemption = {{ withinClusterQueue = "LowerPriority", reclaimWithinCohort = "Any" }}
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{{ name = "default", resources = [{{ name = "nvidia.com/gpu", nominalQuota = {b} }}] }}]

[[localQueue]]
name = "team-b"
clusterQueue = "b"

[[workloadPriorityClass]]
name = "high"
value = 100
"""


def queues(tmp_path: Path, a: int = 2, b: int = 2) -> QueuesConfig:
    path = tmp_path / "queues.toml"
    path.write_text(TWO_QUEUES.format(a=a, b=b))
    return load_queues(path)


def job(i: int, arrival: float, gpus: int, duration: float, queue: str, prio: str = "") -> JobSpec:
    return JobSpec(i, arrival, gpus, 0, MODEL, duration=duration, queue=queue, priority=prio)


CLUSTER = Cluster.homogeneous(1, 4)


def test_an_arrival_reclaims_the_quota_another_queue_borrowed(tmp_path: Path) -> None:
    # a's job borrows b's idle 2 GPUs at 0; b's job arrives at 10 within b's nominal quota:
    # Kueue evicts a's (InCohortReclamation), admits b's at once; a's waits until b's ends
    # (110) and runs its last 990 s
    jobs = [job(0, 0.0, 4, 1000.0, "a"), job(1, 10.0, 2, 100.0, "team-b")]
    res = simulate(CLUSTER, jobs, "fifo", queues=queues(tmp_path))
    a, b = res.jobs
    assert (b.start, b.finish, b.preemptions) == (10.0, 110.0, 0)
    assert (a.start, a.finish, a.preemptions) == (0.0, 1100.0, 1)
    assert [(s.start, s.end) for s in res.segments if s.job_id == 0] == [(0, 10), (110, 1100)]
    qa, qb = res.summary["queues"]["a"], res.summary["queues"]["b"]
    assert qa["preemptions"]["InCohortReclamation"] == 1 and qa["preemptions"]["policy"] == 0
    assert qb["preemptions"]["InCohortReclamation"] == 0
    # a held 4 GPUs for 10 + 990 s, 2 above its nominal quota
    assert qa["gpu_hours_used"] == pytest.approx(4 * 1000 / 3600)
    assert qa["gpu_hours_borrowed"] == pytest.approx(2 * 1000 / 3600)
    assert qb["gpu_hours_borrowed"] == 0.0
    assert qa["gpu_hours_nominal"] == pytest.approx(2 * 1100 / 3600)
    assert qb["avg_jct"] == 100.0 and qa["avg_admission_wait"] == 0.0
    assert [r[0] for r in res.queues] == ["a", "b"]


def test_priority_orders_admission_within_a_queue(tmp_path: Path) -> None:
    # b's jobs need all 4 GPUs (2 borrowed from a): Kueue preempts only within nominal quota
    # (or with borrowWithinCohort), so the high-priority job 2 waits, and is admitted before
    # job 1, which arrived earlier
    jobs = [
        job(0, 0.0, 4, 100.0, "b"),
        job(1, 1.0, 4, 100.0, "b"),
        job(2, 2.0, 4, 100.0, "b", "high"),
    ]
    res = simulate(CLUSTER, jobs, "fifo", queues=queues(tmp_path))
    assert [(j.start, j.preemptions) for j in res.jobs] == [(0, 0), (200, 0), (100, 0)]


def test_a_higher_priority_job_preempts_within_its_queue(tmp_path: Path) -> None:
    # within b's nominal 2 GPUs (a's 2 are busy): job 2 (priority 100) evicts job 1
    # (InClusterQueue, withinClusterQueue LowerPriority), which resumes when job 2 ends
    jobs = [
        job(0, 0.0, 2, 1000.0, "a"),
        job(1, 0.0, 2, 100.0, "b"),
        job(2, 10.0, 2, 50.0, "b", "high"),
    ]
    res = simulate(CLUSTER, jobs, "fifo", queues=queues(tmp_path))
    assert [(j.start, j.finish, j.preemptions) for j in res.jobs] == [
        (0, 1000, 0),
        (0, 150, 1),
        (10, 60, 0),
    ]
    assert res.summary["queues"]["b"]["preemptions"]["InClusterQueue"] == 1


def one_queue(tmp_path: Path, gpus: int) -> QueuesConfig:
    """One ClusterQueue ``a`` of ``gpus`` GPUs (jobs without a queue go to it)."""
    two = queues(tmp_path, a=gpus, b=0)
    return QueuesConfig(two.flavors, {"a": two.cluster_queues["a"]}, two.cohorts, {}, {})


JOBS = [job(i, 37.0 * i, 1 + i % 3, 200.0 + 13 * (i % 7), "") for i in range(40)]


def test_fifo_under_a_queue_holding_the_whole_cluster_is_fifo(tmp_path: Path) -> None:
    # Kueue admits in FIFO order (BestEffortFIFO skips what does not fit: fifo's backfill)
    # up to the 4 GPUs: the same jobs fifo would start, at the same times
    plain = simulate(CLUSTER, JOBS, "fifo")
    quota = simulate(CLUSTER, JOBS, "fifo", queues=one_queue(tmp_path, 4))
    assert quota.jobs == plain.jobs and quota.segments == plain.segments
    assert quota.summary["queues"]["a"]["gpu_hours_borrowed"] == 0.0


@pytest.mark.parametrize("policy", ["fifo", "sjf", "tiresias", "sjf-bsbf"])
def test_a_quota_that_never_binds_changes_nothing(tmp_path: Path, policy: str) -> None:
    # every job admitted at its arrival: the policy sees what it sees without queues
    plain = simulate(CLUSTER, JOBS, policy)
    quota = simulate(CLUSTER, JOBS, policy, queues=one_queue(tmp_path, 1000))
    assert quota.jobs == plain.jobs and quota.segments == plain.segments
    assert {k: v for k, v in quota.summary.items() if k != "queues"} == plain.summary


def test_sjf_orders_only_what_the_quota_admitted(tmp_path: Path) -> None:
    # a quota of the whole cluster admits in FIFO order: sjf chooses among admitted jobs
    # only, so it differs from sjf without queues on this loaded cluster
    plain = simulate(CLUSTER, JOBS, "sjf")
    quota = simulate(CLUSTER, JOBS, "sjf", queues=one_queue(tmp_path, 4))
    assert quota.jobs != plain.jobs
