"""The policy contract (core/protocols.py): optional features are declared protocols that the
engine tests with isinstance, not getattr probes; built-in policies declare what they use."""

from __future__ import annotations

import re
from pathlib import Path

import ddlsched.policy as api
from ddlsched.core.durationexec import DurationExecutor
from ddlsched.core.jobexec import JobExecutor, WangJobLevel
from ddlsched.core.protocols import (
    Elastic,
    GatesAllReduce,
    Periodic,
    RanksGpus,
    SchedulingPolicy,
    SharesGpus,
    SummaryExtras,
    Ticks,
)
from ddlsched.perf.contention import LinearContention
from ddlsched.policies.compose import compose
from ddlsched.policies.luo import Exclusive, Sharing
from ddlsched.policies.pollux import Pollux
from ddlsched.policies.tiresias import Tiresias

SRC = Path(__file__).resolve().parents[1] / "src" / "ddlsched"


def test_policy_module_reexports_the_capability_protocols() -> None:
    for name in ("SchedulingPolicy", "Periodic", "SummaryExtras", "GatesAllReduce"):
        assert name in api.__all__
    assert api.SharesGpus is SharesGpus and api.Elastic is Elastic and api.Periodic is Periodic


def test_builtin_policies_declare_their_capabilities() -> None:
    composed = compose("x", ordering="srsf", placement="lwf", gate="srsf1")
    pollux, sharing, tiresias = Pollux(), Sharing("sjf-bsbf", mode="bsbf"), Tiresias()
    for pol in (composed, pollux, sharing, tiresias, Exclusive("fifo")):
        assert isinstance(pol, SchedulingPolicy)
        assert isinstance(pol, Periodic)
    assert isinstance(composed, GatesAllReduce) and composed.gate is not None
    assert isinstance(pollux, Elastic) and pollux.elastic
    assert isinstance(sharing, SharesGpus) and sharing.jobs_per_gpu == 2
    assert not isinstance(composed, SharesGpus) and not isinstance(composed, Elastic)
    # only composed policies (model jobs, iteration level) have a gate: no `gate = None` copies
    for pol in (pollux, sharing, tiresias, Exclusive("fifo")):
        assert not isinstance(pol, GatesAllReduce)
    assert isinstance(pollux, SummaryExtras) or not hasattr(pollux, "summary_extras")


def test_executor_capabilities() -> None:
    assert isinstance(DurationExecutor(), RanksGpus)
    assert not isinstance(JobExecutor(WangJobLevel(LinearContention())), RanksGpus)
    assert not isinstance(DurationExecutor(), Ticks)


def test_engine_and_api_do_not_probe_policies_with_getattr() -> None:
    """The simulator and api read optional features only through the protocols."""
    probe = re.compile(r"getattr\((self\.)?(pol|policy|executor|self\.policy)\b")
    for path in (SRC / "core" / "simulator.py", SRC / "api.py"):
        text = path.read_text()
        assert not probe.findall(text), path
        assert "type: ignore[arg-type]" not in "".join(
            line for line in text.splitlines(keepends=True) if re.match(r"\s*pol,", line)
        )


# ---------------------------------------------------------------- what a policy sees and does
def _toy_app():
    from ddlsched.perf.profiles import Application

    placements = [((n,), float(b), 1.0, 0.0) for n in range(1, 5) for b in (1, 64)]
    rows = [(100.0, 1.0, 1.0), (200.0, 1.0, 1.0), (300.0, 1.0, 1.0)]
    return Application("toy", placements, [], {32: rows, 64: rows}, max_epochs=3)


def _toy_sim(policy, executor=None):

    from ddlsched.core.cluster import Cluster
    from ddlsched.core.job import JobSpec, ModelProfile
    from ddlsched.core.profileexec import ProfileExecutor
    from ddlsched.core.simulator import Simulator

    job = JobSpec(0, 0.0, 1, 0, ModelProfile("toy", 0, 0, 32, 0, 0), "toy", batch_size=32)
    ex = executor or ProfileExecutor({"toy": _toy_app()}, rescale_delay=0.0)
    return Simulator(Cluster.homogeneous(1, 1), [job], policy, ex), ex


class _StartWith:
    """Starts every job on GPU 0 with ``config``."""

    name, interval = "start-with", None

    def __init__(self, config=None) -> None:
        self.config = config

    def attach(self, sim) -> None:
        pass

    def schedule(self, sim) -> None:
        for job in list(sim.queue):
            sim.start(job, [0], self.config)


def test_start_with_a_job_config_sets_the_batch() -> None:
    from ddlsched.core.protocols import JobConfig

    plain, _ = _toy_sim(_StartWith())
    bigger, ex = _toy_sim(_StartWith(JobConfig(batch_size=64)))
    # batch 32: 1 s per iteration, 300 s; batch 64 accumulates two micro-steps at gain 4/3
    assert plain.run().jobs[0].finish == 300.0
    assert bigger.run().jobs[0].finish == 450.0
    assert ex.batch_override == {} and ex.micro_limit == {}  # used once, at the start


def test_a_policy_that_is_a_job_agent_is_registered_by_the_engine() -> None:
    from ddlsched.core.protocols import JobAgent

    class Agent(_StartWith):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[tuple[int, int]] = []

        def observe(self, run) -> None:
            self.seen.append((run.epoch, run.cfg.M))

        def rebatch(self, run) -> int | None:
            return 64 if run.epoch >= 1 else None

    pol = Agent()
    assert isinstance(pol, JobAgent) and not isinstance(_StartWith(), JobAgent)
    sim, ex = _toy_sim(pol)
    assert ex.agent is pol
    sim.run()
    assert pol.seen == [(0, 32), (1, 64), (2, 64)]


def test_estimates_are_asked_through_a_declared_interface() -> None:
    import pytest

    from ddlsched.core.protocols import JobConfig, JobTimes, ProfileEstimates
    from ddlsched.errors import ScheduleError

    sim, ex = _toy_sim(_StartWith())
    assert sim.estimates(ProfileEstimates) is ex and sim.estimates(JobTimes) is ex
    job = sim.jobs[0]
    assert sim.estimates(ProfileEstimates).remaining_consolidated(job) == ex.remaining_alone(job)
    model_sim, _ = _toy_sim(
        _StartWith(JobConfig(micro_limit=8)), JobExecutor(WangJobLevel(LinearContention()))
    )
    with pytest.raises(TypeError, match="offers no ProfileEstimates"):
        model_sim.estimates(ProfileEstimates)
    with pytest.raises(ScheduleError, match="take no configuration"):
        model_sim.run()


def test_policies_do_not_read_executor_state() -> None:
    """No policy or planner reaches the executor but through ``sim.estimates``: no
    ``sim.executor``, no executor dictionaries, no import of an executor module (gates are
    executor plug-ins: policies/gates.py names the iteration-level executor's types)."""
    bad = re.compile(
        r"sim\.executor|\.runs\[|micro_limit\[|batch_override\[|\.agent = |"
        r"core\.(profileexec|durationexec|jobexec|taskexec)\b|"
        r"from \.\.core import (profileexec|durationexec|jobexec|taskexec)"
    )
    for folder in ("policies", "planning"):
        for path in sorted((SRC / folder).glob("*.py")):
            if path.name == "gates.py":
                continue
            assert not bad.findall(path.read_text()), path


def test_pollux_takes_measured_step_times_and_refits() -> None:
    """Live mode's measured observation (``ObservesMeasured``): the goodput model's record
    of a configuration is replaced by the measurement and refit; in simulation the first
    observation of a configuration stays (``replace`` off)."""
    from ddlsched.core.protocols import ObservesMeasured
    from ddlsched.perf.builtin_apps import builtin_profiles
    from ddlsched.perf.goodput import JobGoodput
    from ddlsched.policies.pollux import Pollux

    assert isinstance(Pollux(), ObservesMeasured)
    m = JobGoodput(builtin_profiles()["cifar10"])
    m.observe(1, 1, 128, 0.06, 0.0)
    before = dict(m.profile)
    m.observe(1, 1, 128, 0.5, 0.0)  # seen before: kept (simulation)
    assert m.profile == before
    m.observe(1, 1, 128, 0.5, 0.0, replace=True)  # a measurement replaces it (live)
    assert m.profile[(1, 1, 128)] == (0.5, 0.0)
