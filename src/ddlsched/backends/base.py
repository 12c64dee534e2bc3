"""What a backend is: the engine set-up for one kind of job (docs/design.md "Backends").

A backend declares which jobs it accepts, its job kind (the policy registry's ``MODEL_JOBS``,
``PROFILE_JOBS``, ``TRACE_JOBS``), the settings it reads (the ``RunScope`` kinds of
``settings_scope``) and builds the simulator: executor, engine options and its own checks.
``api.build_simulator`` picks the first registered backend that accepts the jobs
(``backends/registry.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..core.job import JobSpec
from ..core.protocols import SchedulingPolicy, SharesGpus
from ..errors import InputError
from ..settings_scope import RunScope

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings
    from ..core.cluster import Cluster
    from ..core.simulator import Simulator
    from ..policies.plugins import PolicyOrigin, Registered

Progress = Callable[[int, int], None] | None


class Backend:
    """One kind of job and the engine set-up that runs it; subclasses override what differs."""

    #: a short name (``ddlsched`` names its built-ins model-iteration, model-job-level,
    #: planned, profile, duration)
    name: str = ""
    #: the policy registry's job kind: the policies registered for it run here
    job_kind: str = ""
    #: this backend's run kinds (``settings_scope``, ``RunScope.kind``) → the settings sections
    #: (``ddlsched.settings.SECTIONS``) such a run reads; a setting of any other section given
    #: a non-default value is an error naming where it applies. A kind not listed reads every
    #: section (no check).
    sections: Mapping[str, tuple[str, ...]] = {}

    @property
    def scopes(self) -> tuple[str, ...]:
        """The run kinds of this backend (the keys of ``sections``)."""
        return tuple(self.sections)

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        """Whether this backend runs ``jobs`` (``entry``: the built-in policy's registry entry,
        None for any other policy; ``settings``: the run's settings)."""
        raise NotImplementedError

    def check(self, jobs: Sequence[JobSpec], settings: Settings) -> None:
        """Checks of the jobs and settings made before the policy is looked up."""

    def runs_policy(self, entry: Registered) -> bool:
        """Whether this backend runs the built-in policy ``entry`` (one of its job kind): the
        policies an unknown or wrong ``--policy`` error lists are those it runs."""
        return True

    def make_policy(
        self, entry: Registered, settings: Settings, placement: str | None
    ) -> SchedulingPolicy:
        """The built-in policy of ``entry`` for this backend's runs."""
        return entry.factory(settings, None)

    def scope(
        self,
        jobs: Sequence[JobSpec],
        policy: str | None,
        policy_object: object,
        placement: str | None,
        settings: Settings,
    ) -> RunScope:
        """The run as ``settings_scope`` sees it (``policy``: a built-in name or None;
        ``policy_object``: what was given, a name or a policy object)."""
        return RunScope(self.scopes[0], policy)

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        """What a run of this backend is, beyond the config: ``config.json``'s ``resolved``
        block and the first line ``ddlsched run`` prints (e.g. the model ``model=auto``
        chose). Subclasses add what they decide."""
        out: dict[str, object] = {"backend": self.name, "jobs": scope.kind}
        if scope.placement:
            out["placement"] = scope.placement
        return out

    def build(
        self,
        cluster: Cluster,
        jobs: Sequence[JobSpec],
        policy: SchedulingPolicy,
        settings: Settings,
        seed: int,
        progress: Progress,
        origin: PolicyOrigin | None,
        builtin: bool,
    ) -> Simulator:
        """The simulator of this run: executor and engine options (no I/O but profiles)."""
        raise NotImplementedError


def factory_error(e: KeyError) -> InputError:
    """A factory's ``KeyError`` (an unknown placement, ordering …) as the user's error."""
    return InputError(f"unknown {e.args[0]}; see `ddlsched list`")


def builtin_entry(policy: str | None) -> Registered | None:
    """The registry entry of ``policy`` when it names a built-in policy, else None (a user's
    plugin or a policy object): what a backend's ``scope`` decides by."""
    from ..policies.plugins import policy_entry

    entry = policy_entry(policy) if policy else None
    return entry if entry is not None and entry.builtin else None


def declared_degree(policy: object) -> int:
    """Jobs per GPU a policy declares (``SharesGpus``; 1 for the others)."""
    return policy.jobs_per_gpu if isinstance(policy, SharesGpus) else 1


def shares_gpus(policy: str | None, policy_object: object) -> bool:
    """Whether a run's policy shares GPUs: a built-in's registration, else its declared
    degree (``scope`` of the backends whose jobs may share)."""
    builtin = builtin_entry(policy)
    return builtin.shares_gpus if builtin else declared_degree(policy_object) > 1


def jobs_per_gpu(policy: SchedulingPolicy, settings: Settings) -> int:
    """The engine's ``max_jobs_per_gpu`` for a run of ``policy``: 1 unless it shares GPUs,
    then ``max_jobs_per_gpu`` if set, else its declared degree."""
    per_gpu = declared_degree(policy)
    return (settings.max_jobs_per_gpu or per_gpu) if per_gpu > 1 else 1
