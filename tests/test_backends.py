"""Backends (issue #12, docs/design.md "Backends"): a new backend is one class and one
``register_backend`` call, and ``build_simulator`` runs a policy on it; every built-in kind of
run belongs to exactly one backend, the one ``pick_backend`` chooses."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ddlsched.api import PolicyKindError, Settings, job_kind, run_scope, simulate
from ddlsched.backends import (
    Backend,
    all_backends,
    pick_backend,
    register_backend,
    unregister_backend,
)
from ddlsched.core.cluster import Cluster
from ddlsched.core.durationexec import DurationExecutor
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.simulator import Simulator
from ddlsched.policies.plugins import MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS, policy_entry
from ddlsched.settings_scope import (
    DURATION,
    ITERATION,
    JOB_LEVEL,
    PLANNER,
    PLANNER_WANG,
    PROFILE,
    RAR,
    USER_MODEL,
    RunScope,
)

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)
MODEL = ModelProfile("m", 0.1, 0.2, 1_000_000, 100.0, 1.0)


class MarkedBackend(Backend):
    """Jobs of the queue ``marked``: measured durations, run by ``DurationExecutor``."""

    name = "marked"
    job_kind = TRACE_JOBS
    scopes = (DURATION,)

    def __init__(self) -> None:
        self.built = 0

    def accepts(self, jobs: Sequence[JobSpec], entry, settings) -> bool:
        return bool(jobs) and all(j.queue == "marked" for j in jobs)

    def build(self, cluster, jobs, policy, settings, seed, progress, origin, builtin):
        self.built += 1
        return Simulator(
            cluster, jobs, policy, DurationExecutor(), seed=seed, max_jobs_per_gpu=1,
            progress=progress, policy_origin=origin, builtin_policy=builtin,
        )  # fmt: skip


@pytest.fixture
def marked():
    backend = register_backend(MarkedBackend())
    yield backend
    unregister_backend("marked")


def marked_jobs() -> list[JobSpec]:
    return [
        JobSpec(0, 0.0, 4, 0, TRACE, duration=100.0, queue="marked"),
        JobSpec(1, 0.0, 4, 0, TRACE, duration=50.0, queue="marked"),
    ]


def test_a_registered_backend_runs_a_policy(marked) -> None:
    jobs = marked_jobs()
    assert pick_backend(jobs, policy_entry("sjf"), Settings()) is marked
    res = simulate(Cluster.homogeneous(1, 4), jobs, "sjf")
    assert marked.built == 1
    # SJF on one 4-GPU server: the 50 s job first, then the 100 s job
    assert {j.job_id: j.finish for j in res.jobs} == {1: 50.0, 0: 150.0}


def test_a_registered_backend_runs_only_its_kinds_policies(marked) -> None:
    with pytest.raises(PolicyKindError, match=r"cannot run trace \(duration\) jobs"):
        simulate(Cluster.homogeneous(1, 4), marked_jobs(), "ada-srsf")
    assert marked.built == 0


def test_user_backends_come_first_and_leave_cleanly(marked) -> None:
    assert all_backends()[0] is marked
    unregister_backend("marked")
    assert pick_backend(marked_jobs(), None, Settings()).name == "duration"
    register_backend(marked)  # the fixture removes it again
    with pytest.raises(ValueError, match="already registered"):
        register_backend(MarkedBackend())


def _runs() -> list[tuple[list[JobSpec], str, Settings, str]]:
    """One run of every kind: jobs, policy, settings, the settings kind it must have."""
    model = [JobSpec(0, 0.0, 2, 10, MODEL)]
    profile = [JobSpec(0, 0.0, 1, 0, MODEL, application="toy", batch_size=32)]
    trace = [JobSpec(0, 0.0, 1, 0, TRACE, duration=10.0)]
    return [
        (model, "ada-srsf", Settings(), ITERATION),
        (model, "ada-srsf", Settings(granularity="job"), JOB_LEVEL),
        (model, "ada-srsf", Settings(model="rar"), RAR),
        (model, "sjf-bco", Settings(), PLANNER),
        (model, "sjf-bco", Settings(model="wang"), PLANNER_WANG),
        (profile, "sjf-ffs", Settings(), PROFILE),
        (trace, "fifo", Settings(), DURATION),
    ]


def test_every_kind_of_run_has_exactly_one_backend() -> None:
    kinds = [k for b in all_backends() for k in b.scopes]
    assert sorted(kinds) == sorted(
        (ITERATION, JOB_LEVEL, RAR, USER_MODEL, PLANNER, PLANNER_WANG, PROFILE, DURATION)
    )
    job_kinds = {b.job_kind for b in all_backends()}
    assert job_kinds == {MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS}
    for jobs, policy, settings, kind in _runs():
        backend = pick_backend(jobs, policy_entry(policy), settings)
        assert kind in backend.scopes
        assert [b for b in all_backends() if kind in b.scopes] == [backend]
        assert job_kind(jobs) == backend.job_kind
        scope = run_scope(jobs, policy, None, settings)
        assert isinstance(scope, RunScope) and scope.kind == kind
