"""The library entry point: build a simulation from names and settings, run it."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from .backends import Backend, pick_backend
from .backends.profile import check_batches as _check_batches  # noqa: F401  (tests import it)
from .core.cluster import Cluster
from .core.job import JobSpec
from .core.protocols import SchedulingPolicy
from .core.results import SimResult
from .core.simulator import Simulator
from .core.timing import MAX_PER_BYTE, MAX_TIME, MIN_DURATION, check_job_times, check_run_end
from .errors import InputError, suggest
from .parsing import NumberError, check_float, check_int, describe, parse_float, to_float, to_int
from .perf.contention import LinearContention
from .perf.profiles import read_pair_interference  # noqa: F401  (kept: imported from here)
from .perf.rar import DEGRADATIONS, RarModel
from .planning import PlannerParams
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
from .settings_scope import (
    DURATION,
    PLANNER,
    PROFILE,
    RunScope,
    check_scope,
    check_workload_scope,
)

if TYPE_CHECKING:  # pragma: no cover
    from .workloads.traces import TraceOptions


@dataclass(frozen=True)
class Settings:
    """Every ``--set KEY=VALUE`` knob, with its default."""

    granularity: str = "iteration"  # iteration | job
    iterations_per_task: int = 1
    kappa: int = 1
    a: float = LinearContention.a
    b: float = LinearContention.b
    eta: float = LinearContention.eta
    max_jobs_per_gpu: int = 0  # 0 = limited by memory only
    restart_delay: float = 0.0
    shortcuts: bool = True  # exact event-saving shortcuts of the iteration level (for checking)
    # performance model: auto = the policy's paper (Wang's for online presets, Yu's RAR model
    # for planners); rar = Yu Eq. 6–8 at job granularity for any policy
    model: str = "auto"
    xi1: float = RarModel.xi1
    xi2: float = RarModel.xi2
    alpha: float = RarModel.alpha
    reduction_speed: float = RarModel.reduction_speed
    rar_f: str = "linear"  # f(α, k): linear | fair
    time_slots: bool = False  # Yu's ⌊1/τ⌋ iterations per 1 s slot instead of fluid progress
    # planners (Yu Alg. 1–3)
    horizon: float = PlannerParams.horizon  # T
    u: float = PlannerParams.u
    lam: float = PlannerParams.lam  # λ of LBSGF
    bco_kappa: int = PlannerParams.kappa  # 0: search κ = 1..max G; k: only κ = k
    estimate: str = PlannerParams.estimate  # start | isolated
    extend_horizon: bool = PlannerParams.extend_horizon  # no plan within T → retry 2T, 4T, …
    # application-profile workloads (Luo et al., the Pollux artifact)
    profiles: str = ""  # directory of application profiles (Pollux format)
    ground_truth: str = "measured"  # measured (interpolated step times) | fitted (Eq. 7)
    semantics: str = "events"  # events | rounds (the Pollux artifact's 60 s loop)
    interval: float = 60.0  # seconds between scheduling rounds
    rescale_delay: float = 30.0  # seconds without progress after every allocation
    interference: float = 1.5  # ξ: slowdown of both jobs while two share a GPU (Luo Eq. 5–6)
    interference_file: str = ""  # CSV app,other,xi: per-pair ξ (others use `interference`)
    tiresias_thresholds: str = "16"  # GPU-hours between Tiresias queues, comma-separated
    backfill: bool = True  # fifo/sjf: a job that does not fit is skipped (false: it blocks)
    pollux_ncf_batch: int = 32768  # Pollux artifact quirk: NCF on 1 replica at this batch; 0: off
    philly: str = ""  # Philly trace the luo24 generators sample from (built-in stand-ins if "")

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], source: str = "--set") -> Settings:
        """Validate and convert user values (strings from the CLI are parsed)."""
        known = {f.name: f for f in fields(cls)}
        out: dict[str, object] = {}
        for key, raw in values.items():
            if key not in known:
                raise InputError(
                    f"unknown setting{suggest(key, known)}; known: {', '.join(known)}",
                    source=source,
                    field=key,
                )
            default = known[key].default
            try:
                if isinstance(default, bool):
                    text = str(raw).lower()
                    if text not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                        raise NumberError(f"expected true or false, got {describe(raw)}")
                    val: object = text in ("1", "true", "yes", "on")
                elif isinstance(default, int):
                    val = to_int(raw, text=True)  # the one strict parser (ddlsched.parsing)
                elif isinstance(default, float):
                    val = to_float(raw, text=True)
                else:
                    val = str(raw)
            except NumberError as e:
                raise InputError(str(e), source=source, field=key) from None
            out[key] = val
        s = cls(**out)  # type: ignore[arg-type]
        s.check(source)
        return s

    def check(self, source: str = "--set") -> None:
        """Every value in its range; numbers finite first (a range test such as ``x < 0`` lets
        NaN through), times within the engine's range (``core/timing.py``)."""
        for f in fields(self):
            kind = type(f.default)
            try:
                if kind is float:
                    check_float(getattr(self, f.name))
                elif kind is int:
                    check_int(getattr(self, f.name))
            except NumberError as e:
                raise InputError(str(e), source=source, field=f.name) from None
        for name in ("b", "eta"):
            if getattr(self, name) > MAX_PER_BYTE:
                raise InputError(
                    "must be ≤ 1 s per byte (all-reduce times must stay finite)",
                    source=source,
                    field=name,
                )
        for name in ("a", "restart_delay", "rescale_delay", "interval", "horizon"):
            if getattr(self, name) > MAX_TIME:
                raise InputError(
                    "must be ≤ 1e9 s (the engine's time range, docs/models.md)",
                    source=source,
                    field=name,
                )
        if self.granularity not in ("iteration", "job"):
            raise InputError("must be 'iteration' or 'job'", source=source, field="granularity")
        for name in ("iterations_per_task", "kappa"):
            if getattr(self, name) < 1:
                raise InputError("must be ≥ 1", source=source, field=name)
        for name in (
            "a",
            "b",
            "eta",
            "restart_delay",
            "max_jobs_per_gpu",
            "xi2",
            "alpha",
            "pollux_ncf_batch",
        ):
            if getattr(self, name) < 0:
                raise InputError("must be ≥ 0", source=source, field=name)
        for name in ("xi1", "reduction_speed", "u"):
            if not getattr(self, name) > 0:
                raise InputError("must be > 0", source=source, field=name)
        if self.bco_kappa < 0:
            raise InputError("must be ≥ 0 (0 searches every κ)", source=source, field="bco_kappa")
        if self.lam < 1:
            raise InputError("must be ≥ 1", source=source, field="lam")
        if self.horizon < 1:
            raise InputError("must be ≥ 1", source=source, field="horizon")
        if not self.interval >= MIN_DURATION:
            raise InputError(
                "must be ≥ 1e-6 s (1 µs; the engine rounds times to 1 ns, docs/models.md)",
                source=source,
                field="interval",
            )
        try:
            hours = self.tiresias_thresholds_hours
        except NumberError:
            hours = ()
        if not hours or any(h <= 0 for h in hours) or list(hours) != sorted(hours):
            raise InputError(
                "expected increasing positive GPU-hours, e.g. 16 or 1,10",
                source=source,
                field="tiresias_thresholds",
            )
        if self.interference < 1:
            raise InputError("must be ≥ 1", source=source, field="interference")
        if self.rescale_delay < 0:
            raise InputError("must be ≥ 0", source=source, field="rescale_delay")
        for name, allowed in (
            ("model", ("auto", "wang", "rar")),
            ("rar_f", tuple(DEGRADATIONS)),
            ("estimate", ("start", "isolated")),
            ("semantics", ("events", "rounds")),
            ("ground_truth", ("measured", "fitted")),
        ):
            if getattr(self, name) not in allowed:
                raise InputError(f"must be one of {', '.join(allowed)}", source=source, field=name)

    @property
    def contention(self) -> LinearContention:
        return LinearContention(a=self.a, b=self.b, eta=self.eta)

    @property
    def tiresias_thresholds_hours(self) -> tuple[float, ...]:
        return tuple(parse_float(x) for x in self.tiresias_thresholds.split(","))

    @property
    def rar(self) -> RarModel:
        return RarModel(
            xi1=self.xi1,
            xi2=self.xi2,
            alpha=self.alpha,
            reduction_speed=self.reduction_speed,
            f=DEGRADATIONS[self.rar_f],
        )

    @property
    def planner(self) -> PlannerParams:
        return PlannerParams(
            horizon=self.horizon,
            u=self.u,
            lam=self.lam,
            kappa=self.bco_kappa,
            estimate=self.estimate,
            extend_horizon=self.extend_horizon,
        )


def build_simulator(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    policy: str | SchedulingPolicy = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Simulator:
    """Compose policy, executor and engine for one run (no I/O).

    ``policy``: a built-in name, a name given to ``register_policy``, ``MODULE:FACTORY`` /
    ``FILE.py:FACTORY``, or a policy object (``ddlsched.policy``). A setting with a
    non-default value that this run would ignore, or ``placement`` with a policy that places
    jobs itself, is an ``InputError`` (``settings_scope``)."""
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
        _check_user_kind(policy, job_kind(jobs))
    backend = _backend_for(jobs, policy if custom is None else custom, settings)
    backend.check(jobs, settings)
    if custom is None:
        # model jobs name the policy as given in a PolicyKindError, the others lower-cased
        named = str(policy) if backend.job_kind == MODEL_JOBS else str(what)
        pol = backend.make_policy(_builtin(named, backend.job_kind), settings, placement)
    else:
        pol = custom
    check_scope(settings, _scope(backend, jobs, what, placement, settings))
    return backend.build(cluster, jobs, pol, settings, seed, progress, origin, custom is None)


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
    return backend.scope(jobs, name, policy, placement, settings)


def __getattr__(name: str) -> object:
    if name == "SHARING_POLICIES":  # built-in policies that put two jobs on one GPU
        entries = all_policies().values()
        return tuple(e.name for e in entries if e.builtin and e.shares_gpus)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def job_kind(jobs: Sequence[JobSpec]) -> str:
    """The kind of ``jobs``: trace jobs if any has a duration, application-profile jobs if
    any names an application, model jobs otherwise (the backend that takes them)."""
    return pick_backend(jobs, None, Settings()).job_kind


def _builtin(name: object, kind: str) -> Registered:
    """The registry entry of the built-in policy ``name`` for jobs of ``kind``
    (``PolicyKindError`` if it is unknown or runs other kinds)."""
    entry = policy_entry(name) if isinstance(name, str) else None
    if entry is None or not entry.builtin or kind not in entry.kinds:
        raise PolicyKindError(str(name), kind)
    return entry


def _check_user_kind(name: str, kind: str) -> None:
    """A registered user policy declared for other job kinds is a ``PolicyKindError``."""
    entry = policy_entry(name)
    if entry is not None and not entry.builtin and kind not in entry.kinds:
        raise PolicyKindError(name, kind)


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
    says which kinds the policy runs on and which policies run the workload."""

    def __init__(self, name: str, kind: str, workload: str | None = None) -> None:
        self.name, self.kind, self.workload = name, kind, workload
        key = name.lower()
        entry = policy_entry(key)
        kinds = [k for k in (MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS) if entry and k in entry.kinds]
        which = f"workload {workload}" if workload else "this workload"
        if not kinds:
            known = {n for k in (MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS) for n in policies_for(k)}
            text = (
                f"unknown policy '{name}'{suggest(key, sorted(known))}; policies for the "
                f"{kind} of {which}: {', '.join(policies_for(kind))}; see `ddlsched list`"
            )
        else:
            runs = " and ".join(k.replace(" jobs", "") for k in kinds) + " jobs"
            text = (
                f"policy '{name}' cannot run {kind}, which {which} has: it runs on {runs}; "
                f"policies for {kind}: {', '.join(policies_for(kind))}"
            )
        super().__init__(text, field="policy")

    def __reduce__(self) -> tuple:
        return (PolicyKindError, (self.name, self.kind, self.workload))

    def for_workload(self, workload: str) -> PolicyKindError:
        """The same error naming ``workload``."""
        return PolicyKindError(self.name, self.kind, workload)


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
    **keywords: object,
) -> SimResult:
    """``simulate`` from a cluster preset/file and a workload preset/file, checking that every
    job can fit (the path of ``ddlsched run`` and of every experiment run). ``trace``: the
    workload file's format and filters (:class:`~ddlsched.workloads.traces.TraceOptions`, as
    for ``load_workload``); as separate keywords (``max_gpus=2``) still accepted, deprecated,
    for one release."""
    from .core.cluster_io import load_cluster
    from .workloads.io import validate_fits
    from .workloads.presets import load_workload
    from .workloads.traces import check_simulable, options_or_keywords

    trace = options_or_keywords(trace, keywords, "simulate_named")

    cl = load_cluster(cluster, seed)
    if settings is not None and not isinstance(settings, Settings):
        settings = Settings.from_mapping(settings)
    philly = (settings.philly if settings else "") or None
    jobs = load_workload(workload, seed, philly, trace)
    if settings is not None:
        check_workload_scope(settings, workload)
    validate_fits(jobs, cl, workload)
    check_simulable(jobs, workload)
    try:
        return simulate(
            cl, jobs, policy, placement=placement, seed=seed, settings=settings, progress=progress
        )
    except PolicyKindError as e:
        raise e.for_workload(workload) from None
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
) -> SimResult:
    """Run one simulation and return its records and summary."""
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
    )
    with warnings.catch_warnings(record=True) as caught:
        result = sim.run()
    check_run_end(result.jobs)  # before the run's warnings: an inf finish makes numpy warn
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return result
