"""Application-profile jobs (Luo et al., the Pollux artifact): ``ProfileExecutor`` + a profile
policy (fifo, sjf, tiresias, sjf-ffs, sjf-bsbf, pollux), in events or rounds semantics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.job import JobSpec
from ..core.protocols import Elastic, SchedulingPolicy
from ..errors import InputError, JobFieldError, quote
from ..policies.plugins import PROFILE_JOBS
from ..settings_scope import PROFILE, RunScope
from .base import Backend, Progress, jobs_per_gpu, shares_gpus

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings
    from ..core.cluster import Cluster
    from ..core.profileexec import ProfileExecutor
    from ..core.simulator import Simulator
    from ..policies.plugins import PolicyOrigin, Registered


class ProfileBackend(Backend):
    """Any job naming an application makes an application-profile run."""

    name = "profile"
    job_kind = PROFILE_JOBS
    sections = {PROFILE: ("engine", "profile", "policy", "workload")}

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return any(j.application for j in jobs)

    def scope(
        self,
        jobs: Sequence[JobSpec],
        policy: str | None,
        policy_object: object,
        placement: str | None,
        settings: Settings,
    ) -> RunScope:
        shares = shares_gpus(policy, policy_object)
        return RunScope(PROFILE, policy, shares_gpus=shares, rounds=settings.semantics == "rounds")

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        out = super().resolved(scope, settings)
        out["semantics"] = settings.semantics
        out["ground_truth"] = settings.ground_truth
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
        apps, type_apps, where = load_job_applications(cluster, jobs, settings)
        check_job_batches(jobs, apps, type_apps, where, policy, settings)
        return self.assemble(
            cluster, jobs, policy, settings, apps, type_apps, seed, progress, origin, builtin
        )

    def assemble(
        self,
        cluster: Cluster,
        jobs: Sequence[JobSpec],
        policy: SchedulingPolicy,
        settings: Settings,
        apps: dict,
        type_apps: dict[str, dict],
        seed: int,
        progress: Progress,
        origin: PolicyOrigin | None,
        builtin: bool,
    ) -> Simulator:
        """The engine with its executor over the loaded profiles ``apps`` / ``type_apps``."""
        from ..core.protocols import RoundLength
        from ..perf.profiles import read_pair_interference
        from ..perf.typed_profiles import calibration

        # the step of semantics=rounds: the policy's own round length where it has one
        step = policy.round_length if isinstance(policy, RoundLength) else settings.interval
        return self.simulator(
            cluster,
            jobs,
            policy,
            self.executor(
                apps,
                semantics=settings.semantics,
                rescale_delay=settings.rescale_delay,
                interval=step,
                interference=settings.interference,
                pair_interference=read_pair_interference(settings.interference_file)
                if settings.interference_file
                else None,
                type_applications=type_apps or None,
                **calibration(settings.calibration),  # type: ignore[arg-type]
            ),
            seed=seed,
            max_jobs_per_gpu=jobs_per_gpu(policy, settings),
            progress=progress,
            semantics=settings.semantics,
            round_interval=step,
            policy_origin=origin,
            builtin_policy=builtin,
        )

    def executor(self, apps: dict, **options: object) -> ProfileExecutor:
        """The executor of these runs (the live backend's runs real processes)."""
        from ..core.profileexec import ProfileExecutor

        return ProfileExecutor(apps, **options)  # type: ignore[arg-type]

    def simulator(self, *args: object, **options: object) -> Simulator:
        """The engine of these runs (the live backend's is on the wall clock)."""
        from ..core.simulator import Simulator

        return Simulator(*args, **options)  # type: ignore[arg-type]


def default_applications(settings: Settings) -> tuple[dict, str]:
    """The default profiles (``--set profiles=DIR``, else the built-in ones) and how errors
    name where they are."""
    from ..perf.builtin_apps import builtin_profiles
    from ..perf.typed_profiles import load_profiles

    if settings.profiles:
        return dict(load_profiles(settings.profiles)), settings.profiles
    return dict(builtin_profiles()), "the built-in profiles"


def load_job_applications(
    cluster: Cluster, jobs: Sequence[JobSpec], settings: Settings, apps: dict | None = None
) -> tuple[dict, dict[str, dict], str]:
    """(default profiles, per-type profiles, where) for ``jobs``: each job's application
    checked (``check_applications``), the per-type tables its applications need read
    (``type_applications``), an application with per-type tables only given the cluster's
    first type's as its default; fitted where ``ground_truth`` says so. ``apps``: the
    default profiles already read (``default_applications``)."""
    where = settings.profiles or "the built-in profiles"
    if apps is None:
        apps, where = default_applications(settings)
    else:
        apps = dict(apps)
    check_applications(jobs, apps, cluster, settings.profiles, where)
    type_apps = type_applications(cluster, jobs, apps, settings.profiles)
    for a in sorted({j.application for j in jobs} - set(apps)):
        # only per-type tables (Sia's layout): the cluster's first type's are the default
        apps[a] = next(type_apps[t][a] for t in cluster.gpu_types if t in type_apps)
    if settings.ground_truth == "fitted":
        from ..perf.fitting import fitted_applications

        apps = fitted_applications(apps)
        type_apps = {t: fitted_applications(a) for t, a in type_apps.items()}
    return apps, type_apps, where


def check_job_batches(
    jobs: Sequence[JobSpec],
    apps: Mapping[str, object],
    type_apps: Mapping[str, Mapping[str, object]],
    where: str,
    policy: object,
    settings: Settings,
) -> None:
    """Every job's batch runs on its profiles (``check_batches``, each GPU type's too) —
    unless the policy picks batches itself (Pollux, Sia), where NCF's fixed batch is checked."""
    if not (isinstance(policy, Elastic) and policy.elastic):  # Pollux, Sia pick batches
        check_batches(jobs, apps, where)
        for t, typed in type_apps.items():
            check_batches(jobs, typed, f"the profiles of GPU type {quote(t)}")
    elif settings.pollux_ncf_batch and any(j.application == "ncf" for j in jobs):
        problem = batch_problem(apps["ncf"], 1, settings.pollux_ncf_batch, where)
        if problem:
            raise InputError(
                f"NCF's fixed batch under pollux: {problem}",
                source="--set",
                field="pollux_ncf_batch",
            )


def check_applications(
    jobs: Sequence[JobSpec],
    apps: Mapping[str, object],
    cluster: Cluster,
    profiles: str,
    where: str,
) -> None:
    """Every job's application has a profile: a default one (``apps``) or, in a Sia-layout
    ``profiles`` directory on a cluster of declared GPU types, tables for the cluster's types.
    The first job without one is a ``JobFieldError`` (its caller names the workload's line)."""
    from ..perf.typed_profiles import check_runnable, profile_types

    layout = profile_types(profiles) if profiles else {}
    sia = any(layout.values())  # the Sia artifact's layout
    per_type = sia and bool(cluster.typed)
    for j in jobs:
        a = j.application
        if a in apps or (per_type and layout.get(a)):
            if sia:
                check_runnable(a, str(Path(profiles) / a))
            continue
        found = ", ".join(sorted({*apps, *layout})) or "none"
        if layout.get(a):
            message = (
                f"job {j.job_id}{f' {j.name!r}' if j.name else ''}: application {quote(a)} has "
                f"only per-GPU-type profiles in {where} (types {', '.join(layout[a])}): run it "
                "on a cluster that declares its GPU types (e.g. sia-64)"
            )
        else:
            message = (
                f"job {j.job_id}{f' {j.name!r}' if j.name else ''}: no profile for application "
                f"{quote(a)} in {where}; profiles found: {found}"
                + ("" if profiles else " (a directory of your own: --set profiles=DIR)")
            )
        raise JobFieldError(message, "application", a, j.job_id)


def type_applications(
    cluster: Cluster, jobs: Sequence[JobSpec], apps: Mapping[str, object], profiles: str = ""
) -> dict[str, dict]:
    """The measured profiles of each GPU type that has its own, read now: a cluster file's
    ``[gpu_types.T] profiles = "DIR"`` (``Cluster.type_profiles``) and, on a cluster of declared
    GPU types, every other type's ``placements-<T>.csv`` tables in a Sia-layout ``profiles``
    directory (``perf/typed_profiles``; a type without them is an error). One-line errors
    name the cluster file and the type's ``profiles`` field (or the application folder) when
    the tables are malformed or lack an application of ``jobs`` (or have fewer epochs than its
    default profile: the job's epochs and progress come from ``apps``)."""
    from ..perf.profiles import load_applications
    from ..perf.typed_profiles import is_typed_profiles, load_type_profiles

    out: dict[str, dict] = {}
    needed = sorted({j.application for j in jobs if j.application})
    for tp in cluster.type_profiles:
        where = f"profiles of GPU type {quote(tp.gpu_type)}"

        def error(message: str, tp=tp) -> InputError:
            return InputError(
                message,
                source=tp.source,
                line=tp.line,
                field=f"gpu_types.{tp.gpu_type}.profiles",
            )

        try:
            typed = load_applications(tp.directory)
        except InputError as e:
            raise error(f"{where}: {e}") from None
        missing = [a for a in needed if a not in typed]
        if missing:
            raise error(
                f"{where} ({quote(tp.directory)}): no profile for application(s) "
                f"{', '.join(missing)}; profiles found: {', '.join(sorted(typed)) or 'none'}"
            )
        for a in needed:
            if a not in apps:
                continue
            own, default = typed[a].epochs, apps[a].max_epochs  # type: ignore[attr-defined]
            if own < default:
                raise error(
                    f"{where}: application {a} has {own} epoch(s) of validation curves, "
                    f"fewer than the {default} its default profile runs"
                )
        out[tp.gpu_type] = typed
    if profiles and cluster.typed and is_typed_profiles(profiles):
        for t in cluster.gpu_types:
            if t not in out:  # a cluster file's own profiles for the type win
                out[t] = load_type_profiles(profiles, t, needed, cluster.name)
    return out


def batch_problem(app: object, replicas: int, batch: int, where: str) -> str | None:
    """Why ``batch`` on ``replicas`` GPUs cannot run ``app`` (None if it can): its micro-batch
    must lie inside the application's measured range (step times outside it are unknown)."""
    try:
        cfg = app.batch_config(replicas, batch)  # type: ignore[attr-defined]
    except ValueError as e:
        return str(e).removeprefix(f"{app.name}: ")  # type: ignore[attr-defined]
    lo, hi = app.min_local, app.max_local  # type: ignore[attr-defined]
    if not lo <= cfg.a <= hi:
        return (
            f"batch {batch} on {replicas} GPU(s) gives a local batch of {cfg.a}, outside the "
            f"range [{lo}, {hi}] measured in {where}"
        )
    return None


def check_batches(jobs: Sequence[JobSpec], apps: Mapping[str, object], where: str) -> None:
    """Every job's requested batch must give a micro-batch inside its application's measured
    range: step times outside it are not in the profiles (a clear error, not a traceback)."""
    for j in jobs:
        problem = batch_problem(apps[j.application], j.num_gpus, j.batch_size, where)
        if problem:
            raise InputError(
                f"job {j.job_id}{f' {j.name!r}' if j.name else ''} ({j.application}): {problem}",
                field="batch_size",
            )
