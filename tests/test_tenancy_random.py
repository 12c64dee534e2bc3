"""Random Kueue set-ups (tests/test_tenancy_engine.py has the hand-built ones): clusters of
one type or two (gavel-V:0:K, flavors named after the types), one to three ClusterQueues in
a cohort or not, each offering one or both flavors, preemption within the queue and reclaims
in the cohort, borrowing and lending limits, two priorities, arrivals with up to 12
decimals. Every policy that runs with ``--queues`` on trace jobs must finish every job, and
``ddlsched check`` must pass on what it wrote. Seeds 32 and 36 found gavel-fifo keeping the
type of a job's earlier flavor (2026-12-07); a fuzz of 200 seeds × these policies was clean
after the fixes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ddlsched.api import simulate
from ddlsched.check import check_run
from ddlsched.core.cluster import Cluster
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec
from ddlsched.core.results import write_result
from ddlsched.policies.gavel import POLICIES as GAVEL_POLICIES
from ddlsched.tenancy import load_queues
from ddlsched.workloads.trace_formats import PLACEHOLDER_MODEL, placeholder_model

MODEL = placeholder_model(PLACEHOLDER_MODEL)
GPU = '"nvidia.com/gpu"'
POLICIES = ["fifo", "sjf", "tiresias", "sjf-ffs", "sjf-bsbf", *sorted(GAVEL_POLICIES)]


def scenario(rng: random.Random) -> tuple[Cluster, str, list[JobSpec]]:
    """A cluster, a queues manifest (TOML) and jobs, drawn from ``rng``."""
    if rng.random() < 0.5:
        v100, k80 = rng.choice([(4, 4), (4, 8), (8, 4)])
        cluster = load_cluster(f"gavel-{v100}:0:{k80}")
        flavors = ["V100", "k80"]
    else:
        cluster = Cluster.homogeneous(rng.choice([2, 3]), 4)
        flavors = ["default"]
    queues = rng.choice([1, 2, 3])
    text = "".join(f'[[resourceFlavor]]\nname = "{f}"\n' for f in flavors)
    text += '[[workloadPriorityClass]]\nname = "high"\nvalue = 100\n'
    cohort = rng.random() < 0.8
    for q in range(queues):
        offered = list(flavors)
        rng.shuffle(offered)
        offered = offered[: rng.choice([1, len(offered)])]
        rules = []
        if rng.random() < 0.6:
            within = rng.choice(["LowerPriority", "Never", "LowerOrNewerEqualPriority"])
            rules.append(f'withinClusterQueue = "{within}"')
        if cohort and rng.random() < 0.7:
            rules.append(f'reclaimWithinCohort = "{rng.choice(["Any", "LowerPriority", "Never"])}"')
        text += f'[[clusterQueue]]\nname = "q{q}"\n' + ('cohortName = "c"\n' if cohort else "")
        if rules:
            text += "preemption = { " + ", ".join(rules) + " }\n"
        text += f"[[clusterQueue.resourceGroups]]\ncoveredResources = [{GPU}]\nflavors = [\n"
        for n, f in enumerate(offered):
            quota = f"nominalQuota = {rng.choice([4, 6, 8] if n == 0 else [0, 1, 2, 3, 4, 6, 8])}"
            if cohort and rng.random() < 0.3:
                quota += f", borrowingLimit = {rng.choice([0, 2, 4])}"
            if cohort and rng.random() < 0.2:
                quota += f", lendingLimit = {rng.choice([0, 2])}"
            text += f'  {{ name = "{f}", resources = [{{ name = {GPU}, {quota} }}] }},\n'
        text += "]\n"
    jobs = [
        JobSpec(
            i,
            round(rng.uniform(0, 300), rng.choice([0, 3, 12])),
            rng.choice([1, 1, 2, 3, 4]),
            0,
            MODEL,
            duration=rng.uniform(10, 400),
            queue=f"q{rng.randrange(queues)}",
            priority=rng.choice(["", "", "high"]),
        )
        for i in range(rng.choice([10, 25, 40]))
    ]
    return cluster, text, jobs


@pytest.mark.parametrize("seed", [0, 7, 32, 36])
@pytest.mark.parametrize("policy", POLICIES)
def test_random_queues_every_job_finishes_and_checks(
    tmp_path: Path, policy: str, seed: int
) -> None:
    cluster, text, jobs = scenario(random.Random(seed))
    path = tmp_path / "queues.toml"
    path.write_text(text)
    res = simulate(cluster, jobs, policy, queues=load_queues(path), seed=seed)
    assert len(res.jobs) == len(jobs) and all(j.finish > j.start for j in res.jobs)
    write_result(res, tmp_path / "out")
    result = check_run(tmp_path / "out")
    assert result.ok, [v.message for v in result.violations]
