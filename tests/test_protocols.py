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
