"""Random Kueue set-ups (tests/test_tenancy_engine.py has the hand-built ones): clusters of
one type or two (gavel-V:0:K, flavors named after the types), one to three ClusterQueues in
a cohort or not, each offering one or both flavors, preemption within the queue and reclaims
in the cohort, borrowing and lending limits, two priorities, arrivals with up to 12
decimals. Every policy that runs with ``--queues`` on trace jobs must finish every job, and
``ddlsched check`` must pass on what it wrote (benchmarks/fuzz_runs.py draws more seeds). Seeds 32 and 36 found gavel-fifo keeping the
type of a job's earlier flavor (2026-12-07); a fuzz of 200 seeds × these policies was clean
after the fixes."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from ddlsched.api import simulate
from ddlsched.check import check_run
from ddlsched.core.results import write_result
from ddlsched.tenancy import load_queues

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fuzz_runs", ROOT / "benchmarks" / "fuzz_runs.py")
fuzz_runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_runs)  # the scenarios are benchmarks/fuzz_runs.py's ``queues``
POLICIES = fuzz_runs.TRACE_POLICIES
scenario = fuzz_runs.queues_scenario


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
