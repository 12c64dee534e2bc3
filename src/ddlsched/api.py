"""The library entry point: build a simulation from names and settings, run it."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from .backends import Backend, pick_backend
from .backends.profile import check_batches as _check_batches  # noqa: F401  (tests import it)
from .core.cluster import Cluster
from .core.job import JobSpec
from .core.protocols import SchedulingPolicy
from .core.results import SimResult
from .core.simulator import Simulator
from .core.timing import check_job_times, check_run_end
from .errors import InputError, suggest
from .perf.profiles import read_pair_interference  # noqa: F401  (kept: imported from here)
from .policies.base import Policy
from .policies.compose import with_placement
from .policies.plugins import (
    MODEL_JOBS,
    PROFILE_JOBS,
    TRACE_JOBS,
    Registered,
    all_policies,
    builtin_policies_for,
    policy_entry,
    resolve_user_policy,
)
from .settings import Settings
from .settings_scope import (
    DURATION,
    PLANNER,
    PROFILE,
    RunScope,
    check_scope,
    check_workload_scope,
)

if TYPE_CHECKING:  # pragma: no cover
    from .tenancy import QueuesConfig
    from .workloads.traces import TraceOptions


def build_simulator(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    policy: str | SchedulingPolicy = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
    backend: Backend | None = None,
    queues: QueuesConfig | str | None = None,
) -> Simulator:
    """Compose policy, executor and engine for one run (no I/O).

    ``policy``: a built-in name, a name given to ``register_policy``, ``MODULE:FACTORY`` /
    ``FILE.py:FACTORY``, or a policy object (``ddlsched.policy``). A setting with a
    non-default value that this run would ignore, or ``placement`` with a policy that places
    jobs itself, is an ``InputError`` (``settings_scope``). ``queues``: Kueue's quota layer
    admits jobs before the policy sees them (docs/tenancy.md "In the engine"); None: none."""
    settings = settings or Settings()
    custom, origin = resolve_user_policy(policy) or (None, None)
    if custom is not None and placement is not None:
        if not isinstance(custom, Policy):
            raise InputError("--placement applies only to composed policies", field="placement")
        custom = with_placement(custom, placement, settings.kappa)
    what = str(policy).lower() if custom is None else custom
    if placement is not None and custom is None:
        _check_placement_applies(jobs, what, placement)  # type: ignore[arg-type]
    if custom is not None and isinstance(policy, str):
        _check_user_kind(policy, job_kind(jobs) if backend is None else backend.job_kind, backend)
    if backend is None:  # ``backend``: given by a caller that knows (``ddlsched live``)
        backend = _backend_for(jobs, policy if custom is None else custom, settings)
    backend.check(jobs, settings)
    if custom is None:
        # model jobs name the policy as given in a PolicyKindError, the others lower-cased
        named = str(policy) if backend.job_kind == MODEL_JOBS else str(what)
        pol = backend.make_policy(_builtin(named, backend.job_kind, backend), settings, placement)
    else:
        pol = custom
    scope = _scope(backend, jobs, what, placement, settings)
    check_scope(settings, scope)
    sim = backend.build(cluster, jobs, pol, settings, seed, progress, origin, custom is None)
    sim.resolved = _resolved(policy, backend, scope, settings)
    if settings is not None and settings.sharing_anomaly and queues is None:
        raise InputError(
            "applies only to runs with --queues", source="--set", field="sharing_anomaly"
        )
    if queues is not None:
        from .core.admission import KueueAdmission

        sim.set_admission(KueueAdmission(load_run_queues(queues, cluster, jobs)))
    return sim


def load_run_queues(
    queues: QueuesConfig | str, cluster: Cluster, jobs: Sequence[JobSpec]
) -> QueuesConfig:
    """The queues of a run: ``queues`` itself, the file it names, or the preset
    ``proportional`` built from ``jobs`` (their ``queue`` labels: Philly's virtual clusters)
    and the cluster's GPU count."""
    if not isinstance(queues, str):
        return queues
    from .core.admission import GPU
    from .tenancy import load_queues
    from .tenancy.presets import QUEUE_PRESETS, proportional

    if queues in QUEUE_PRESETS:
        demand: dict[str, float] = {}
        for j in jobs:
            demand[j.queue] = demand.get(j.queue, 0.0) + j.num_gpus * (j.duration or 1.0)
        return proportional(demand, cluster.num_gpus, GPU)
    return load_queues(queues)


def _resolved(
    policy: object, backend: Backend, scope: RunScope, settings: Settings
) -> dict[str, object]:
    name = policy if isinstance(policy, str) else str(policy.name)  # type: ignore[attr-defined]
    return {"policy": name, **backend.resolved(scope, settings)}


def resolve_run(
    jobs: Sequence[JobSpec],
    policy: str | SchedulingPolicy,
    placement: str | None = None,
    settings: Settings | None = None,
) -> dict[str, object]:
    """What a run of ``policy`` on ``jobs`` is, as its backend resolves it (policy, backend,
    job kind, and e.g. the model ``model=auto`` chooses): config.json's ``resolved`` block and
    the first line ``ddlsched run`` prints. Cheap: no simulator is built."""
    settings = settings or Settings()
    custom, _ = resolve_user_policy(policy) or (None, None)
    what = policy.lower() if isinstance(policy, str) and custom is None else (custom or policy)
    backend = _backend_for(jobs, what, settings)
    return _resolved(policy, backend, _scope(backend, jobs, what, placement, settings), settings)


def _backend_for(jobs: Sequence[JobSpec], policy: object, settings: Settings) -> Backend:
    """The backend of a run of ``policy`` (a built-in name, or anything else) on ``jobs``."""
    entry = policy_entry(policy) if isinstance(policy, str) else None
    return pick_backend(jobs, entry if entry is not None and entry.builtin else None, settings)


def _scope(
    backend: Backend,
    jobs: Sequence[JobSpec],
    policy: str | object,
    placement: str | None,
    settings: Settings,
) -> RunScope:
    """``backend``'s run scope for ``policy`` (a built-in name or a policy object)."""
    name = policy.lower() if isinstance(policy, str) else None
    scope = backend.scope(jobs, name, policy, placement, settings)
    if scope.sections is not None:  # the backend said (e.g. a registered model's sections)
        return scope
    return replace(scope, sections=backend.sections.get(scope.kind))


def __getattr__(name: str) -> object:
    if name == "SHARING_POLICIES":  # built-in policies that put two jobs on one GPU
        entries = all_policies().values()
        return tuple(e.name for e in entries if e.builtin and e.shares_gpus)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def job_kind(jobs: Sequence[JobSpec]) -> str:
    """The kind of ``jobs``: trace jobs if any has a duration, application-profile jobs if
    any names an application, model jobs otherwise (the backend that takes them)."""
    return pick_backend(jobs, None, Settings()).job_kind


def _builtin(name: object, kind: str, backend: Backend | None = None) -> Registered:
    """The registry entry of the built-in policy ``name`` for jobs of ``kind``
    (``PolicyKindError`` if it is unknown or runs other kinds, listing the policies
    ``backend`` runs)."""
    entry = policy_entry(name) if isinstance(name, str) else None
    if entry is None or not entry.builtin or kind not in entry.kinds:
        raise PolicyKindError(str(name), kind, policies=_runnable(kind, backend))
    return entry


def _runnable(kind: str, backend: Backend | None) -> tuple[str, ...] | None:
    """The built-in policies for jobs of ``kind`` that ``backend`` runs (None: all of them)."""
    if backend is None:
        return None
    names = policies_for(kind)
    runs = tuple(n for n in names if backend.runs_policy(policy_entry(n)))  # type: ignore[arg-type]
    return None if len(runs) == len(names) else runs


def _check_user_kind(name: str, kind: str, backend: Backend | None = None) -> None:
    """A registered user policy declared for other job kinds is a ``PolicyKindError``."""
    entry = policy_entry(name)
    if entry is not None and not entry.builtin and kind not in entry.kinds:
        raise PolicyKindError(name, kind, policies=_runnable(kind, backend))


def run_scope(
    jobs: Sequence[JobSpec],
    policy: str | object,
    placement: str | None,
    settings: Settings,
) -> RunScope:
    """What run ``build_simulator`` composes for ``jobs`` under ``policy`` (a built-in name or
    a policy object): the job kind, policy and placement that decide where settings apply."""
    return _scope(_backend_for(jobs, policy, settings), jobs, policy, placement, settings)


def check_run_applies(
    jobs: Sequence[JobSpec],
    policy: str,
    placement: str | None,
    settings: Settings,
) -> None:
    """The checks ``build_simulator`` makes before composing, without composing (so a sweep
    can make them for every run before it runs any): a built-in policy runs these jobs, a
    ``placement`` applies, and every non-default setting has an effect."""
    custom, _ = resolve_user_policy(policy) or (None, None)
    if custom is None:
        name = policy.lower()
        _builtin(name, job_kind(jobs))
        if placement is not None:
            _check_placement_applies(jobs, name, placement)
    else:
        _check_user_kind(policy, job_kind(jobs))
    check_scope(
        settings, run_scope(jobs, custom if custom is not None else policy, placement, settings)
    )


def _check_placement_applies(jobs: Sequence[JobSpec], policy: str, placement: str) -> None:
    """``--placement`` replaces the placement of an online policy on model jobs; planners and
    the policies of application-profile and trace jobs place jobs themselves."""
    kind = {TRACE_JOBS: DURATION, PROFILE_JOBS: PROFILE, MODEL_JOBS: PLANNER}[job_kind(jobs)]
    entry = policy_entry(policy)
    if entry is None or not entry.builtin or not entry.places_jobs:
        return  # an online preset, or a name the builders reject on their own
    if job_kind(jobs) not in entry.kinds:
        return
    online = [
        e.name
        for e in all_policies().values()
        if e.builtin and MODEL_JOBS in e.kinds and not e.places_jobs
    ]
    raise InputError(
        f"applies only to online policies on model jobs ({', '.join(online)} or a composed "
        f"policy); this run: {kind}, policy {policy}, which places jobs itself",
        field="placement",
    )


def policies_for(kind: str) -> list[str]:
    """The built-in ``--policy`` names that run jobs of ``kind`` (the policy registry)."""
    return builtin_policies_for(kind)


class PolicyKindError(InputError):
    """A built-in policy that does not run this workload's kind of jobs, or an unknown name:
    says which kinds the policy runs on and which policies run the workload (``policies``:
    those the run's backend runs, e.g. live's; default: every built-in of ``kind``)."""

    def __init__(
        self,
        name: str,
        kind: str,
        workload: str | None = None,
        policies: Sequence[str] | None = None,
    ) -> None:
        self.name, self.kind, self.workload = name, kind, workload
        self.policies = tuple(policies) if policies is not None else None
        listed = ", ".join(self.policies if self.policies is not None else policies_for(kind))
        key = name.lower()
        entry = policy_entry(key)
        kinds = [k for k in (MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS) if entry and k in entry.kinds]
        which = f"workload {workload}" if workload else "this workload"
        if not kinds:
            known = {n for k in (MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS) for n in policies_for(k)}
            text = (
                f"unknown policy '{name}'{suggest(key, sorted(known))}; policies for the "
                f"{kind} of {which}: {listed}; see `ddlsched list`"
            )
        else:
            runs = " and ".join(k.replace(" jobs", "") for k in kinds) + " jobs"
            text = (
                f"policy '{name}' cannot run {kind}, which {which} has: it runs on {runs}; "
                f"policies for {kind}: {listed}"
            )
        super().__init__(text, field="policy")

    def __reduce__(self) -> tuple:
        return (PolicyKindError, (self.name, self.kind, self.workload, self.policies))

    def for_workload(self, workload: str) -> PolicyKindError:
        """The same error naming ``workload``."""
        return PolicyKindError(self.name, self.kind, workload, self.policies)


def simulate_named(
    cluster: str,
    workload: str,
    policy: str | SchedulingPolicy = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | Mapping[str, object] | None = None,
    progress: Callable[[int, int], None] | None = None,
    trace: TraceOptions | None = None,
    queues: QueuesConfig | str | None = None,
    **keywords: object,
) -> SimResult:
    """``simulate`` from a cluster preset/file and a workload preset/file, checking that every
    job can fit (the path of ``ddlsched run`` and of every experiment run). ``trace``: the
    workload file's format and filters (:class:`~ddlsched.workloads.traces.TraceOptions`, as
    for ``load_workload``); as separate keywords (``max_gpus=2``) still accepted, deprecated,
    for one release."""
    from .workloads.traces import options_or_keywords

    trace = options_or_keywords(trace, keywords, "simulate_named")
    if settings is not None and not isinstance(settings, Settings):
        settings = Settings.from_mapping(settings)
    cl, jobs = load_named(cluster, workload, seed=seed, settings=settings, trace=trace)
    with naming_workload(workload):
        return simulate(
            cl,
            jobs,
            policy,
            placement=placement,
            seed=seed,
            settings=settings,
            progress=progress,
            queues=queues,
        )


def load_named(
    cluster: str,
    workload: str,
    *,
    seed: int = 0,
    settings: Settings | None = None,
    trace: TraceOptions | None = None,
) -> tuple[Cluster, list[JobSpec]]:
    """The cluster and jobs of ``simulate_named``, checked: ``philly`` applies to the
    workload, every job fits the cluster and can be simulated."""
    from .core.cluster_io import load_cluster
    from .workloads.io import validate_fits
    from .workloads.presets import load_workload
    from .workloads.traces import check_simulable, options_for_cluster

    cl = load_cluster(cluster, seed)
    trace = options_for_cluster(trace, cl.name)
    philly = (settings.philly if settings else "") or None
    knobs = settings.generator_knobs() if settings else None
    jobs = load_workload(workload, seed, philly, trace, knobs=knobs)
    if settings is not None:
        check_workload_scope(settings, workload)
    validate_fits(jobs, cl, workload)
    check_simulable(jobs, workload)
    return cl, list(jobs)


@contextmanager
def naming_workload(workload: str) -> Iterator[None]:
    """Errors of a run on the named ``workload`` say which workload (a policy that does not
    run its jobs; a job's batch size)."""
    from .errors import JobFieldError

    try:
        yield
    except PolicyKindError as e:
        raise e.for_workload(workload) from None
    except JobFieldError as e:
        from .workloads.trace_generic import line_of_value

        line = line_of_value(workload, str(e.field), e.value)
        raise InputError(e.message, source=workload, line=line, field=e.field) from None
    except InputError as e:
        if e.field == "batch_size" and e.source is None:  # name the workload the job is in
            raise InputError(e.message, source=workload, field=e.field) from None
        raise


def simulate(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    policy: str | SchedulingPolicy = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | Mapping[str, object] | None = None,
    progress: Callable[[int, int], None] | None = None,
    queues: QueuesConfig | str | None = None,
) -> SimResult:
    """Run one simulation and return its records and summary (``queues``: see
    ``build_simulator``)."""
    from .workloads.presets import check_seed

    check_seed(seed)
    check_job_times(jobs)
    if isinstance(settings, Settings):
        settings.check("settings")  # a Settings made directly has not been checked yet
    elif settings is not None:
        settings = Settings.from_mapping(settings)
    sim = build_simulator(
        cluster,
        jobs,
        policy,
        placement=placement,
        seed=seed,
        settings=settings,
        progress=progress,
        queues=queues,
    )
    with warnings.catch_warnings(record=True) as caught:
        result = sim.run()
    check_run_end(result.jobs)  # before the run's warnings: an inf finish makes numpy warn
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if queues is not None and settings is not None and settings.sharing_anomaly:
        result = add_sharing_anomaly(
            result, cluster, jobs, policy, placement, seed, settings, queues
        )
    return result


def private_cluster(cluster: Cluster, gpus: int) -> Cluster:
    """A cluster of ``gpus`` GPUs shaped like ``cluster``: servers of its largest size (and
    GPU memory), the last one holding the rest."""
    from .core.cluster import Server

    big = max(cluster.servers, key=lambda s: (s.num_gpus, s.gpu_memory_mb))
    sizes = [big.num_gpus] * (gpus // big.num_gpus) + (
        [gpus % big.num_gpus] if gpus % big.num_gpus else []
    )
    servers = tuple(Server(num_gpus=n, gpu_memory_mb=big.gpu_memory_mb) for n in sizes)
    return Cluster(servers, name=f"private-{gpus}")


def add_sharing_anomaly(
    result: SimResult,
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    policy: str | SchedulingPolicy,
    placement: str | None,
    seed: int,
    settings: Settings,
    queues: QueuesConfig | str,
) -> SimResult:
    """HiveD's sharing-anomaly measure per ClusterQueue (docs/tenancy.md): its jobs run alone on
    a private cluster of its nominal GPUs (``private_cluster``), same policy, placement, seed and
    settings, no queues; ``private_avg_queueing`` is their average queueing there and
    ``sharing_anomaly`` the shared run's ``avg_queueing`` minus it (seconds; > 0: the tenant
    waits longer in the shared cluster than in its own, HiveD's anomaly). None where the
    private cluster cannot run the queue's jobs (a job larger than the nominal quota, or none)."""
    from .core.admission import cluster_queue_of

    if not isinstance(policy, str):
        raise InputError(
            "needs a named policy (it is run again per queue)",
            source="--set",
            field="sharing_anomaly",
        )
    config = load_run_queues(queues, cluster, jobs)
    private = replace(settings, sharing_anomaly=False)
    table = result.summary["queues"]
    per: dict[str, list[JobSpec]] = {q: [] for q in table}
    for j in jobs:
        per[cluster_queue_of(config, j.queue, j.job_id)].append(j)
    rows = []
    for row in result.queues:
        q = str(row[0])
        m = table[q]
        own, gpus = per[q], int(m["nominal_gpus"])
        value = delta = None
        if own and gpus > 0 and max(j.num_gpus for j in own) <= gpus:
            alone = simulate(
                private_cluster(cluster, gpus),
                own,
                policy,
                placement=placement,
                seed=seed,
                settings=private,
            )
            value = float(alone.summary["avg_queueing"])
            delta = float(m["avg_queueing"]) - value
        m["private_avg_queueing"], m["sharing_anomaly"] = value, delta
        rows.append((*row[:-2], "" if value is None else value, "" if delta is None else delta))
    return replace(result, queues=tuple(rows))
