"""The library entry point: build a simulation from names and settings, run it."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from .core.cluster import Cluster
from .core.job import JobSpec
from .core.jobexec import JobExecutor, WangJobLevel
from .core.results import SimResult
from .core.simulator import Simulator
from .core.taskexec import TaskExecutor
from .core.timing import MAX_PER_BYTE, MAX_TIME, MIN_DURATION, check_job_times, check_run_end
from .errors import InputError, suggest
from .parsing import NumberError, check_float, check_int, describe, parse_float, to_float, to_int
from .perf.builtin_apps import builtin_profiles
from .perf.contention import LinearContention
from .perf.profiles import read_pair_interference
from .perf.rar import DEGRADATIONS, RarModel, RarRate
from .planning import PLANNER_NAMES, PlannerParams, PlanningError, PlanPolicy, make_planner
from .policies.base import Policy
from .policies.compose import with_placement
from .policies.plugins import resolve_policy
from .policies.registry import make_policy

if TYPE_CHECKING:  # pragma: no cover
    from .policy import SchedulingPolicy


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
    ``FILE.py:FACTORY``, or a policy object (``ddlsched.policy``)."""
    settings = settings or Settings()
    custom = resolve_policy(policy)
    if custom is not None and placement is not None:
        if not isinstance(custom, Policy):
            raise InputError("--placement applies only to composed policies", field="placement")
        custom = with_placement(custom, placement, settings.kappa)
    what = str(policy).lower() if custom is None else custom
    if any(j.duration > 0 for j in jobs):
        return _build_duration(cluster, jobs, what, seed, settings, progress)
    if any(j.application for j in jobs):
        return _build_profiled(cluster, jobs, what, seed, settings, progress)
    if isinstance(what, str) and what in PLANNER_NAMES:
        return _build_planned(cluster, jobs, what, seed, settings, progress)
    try:
        pol = custom if custom is not None else make_policy(str(policy), placement, settings.kappa)
    except KeyError as e:
        raise InputError(f"unknown {e.args[0]}; see `ddlsched list`") from None
    if settings.model == "rar":
        executor: TaskExecutor | JobExecutor = JobExecutor(
            RarRate(settings.rar, settings.time_slots)
        )
    elif settings.granularity == "iteration":
        executor = TaskExecutor(
            settings.contention,
            getattr(pol, "gate", None),
            settings.iterations_per_task,
            settings.shortcuts,
        )
    else:
        executor = JobExecutor(WangJobLevel(settings.contention))
    return Simulator(
        cluster,
        jobs,
        pol,
        executor,
        seed=seed,
        max_jobs_per_gpu=settings.max_jobs_per_gpu or None,
        restart_delay=settings.restart_delay,
        progress=progress,
    )


def _build_planned(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    name: str,
    seed: int,
    settings: Settings,
    progress: Callable[[int, int], None] | None,
) -> Simulator:
    """An offline planner's plan executed at job level under Yu's RAR model (Eq. 6–8)."""
    if settings.model == "wang":
        raise InputError(
            "planners run under Yu's RAR model; use model=auto or model=rar",
            source="--set",
            field="model",
        )
    pol = PlanPolicy(make_planner(name, settings.planner), settings.rar)
    try:
        return Simulator(
            cluster,
            jobs,
            pol,  # type: ignore[arg-type]
            JobExecutor(RarRate(settings.rar, settings.time_slots)),
            seed=seed,
            max_jobs_per_gpu=1,
            progress=progress,
        )
    except PlanningError as e:
        raise InputError(str(e), source="--set", field="horizon") from None


def _build_profiled(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    name: str | SchedulingPolicy,
    seed: int,
    settings: Settings,
    progress: Callable[[int, int], None] | None,
) -> Simulator:
    """Application-profile jobs (Luo et al.): profile executor + a profile policy."""
    from .core.profileexec import ProfileExecutor
    from .perf.profiles import load_applications
    from .policies.luo import Sharing
    from .policies.pollux import Pollux

    makers = {
        **_job_level_policies(settings),
        "sjf-ffs": lambda: Sharing("sjf-ffs", mode="ffs"),
        "sjf-bsbf": lambda: Sharing("sjf-bsbf", mode="bsbf"),
        "pollux": lambda: Pollux(
            interval=settings.interval,
            restart_penalty=settings.rescale_delay,
            ncf_batch=settings.pollux_ncf_batch,
        ),
    }
    pol = _make(makers, name, "application-profile jobs")
    if settings.profiles:
        apps = load_applications(settings.profiles)
        where = settings.profiles
    else:
        apps = builtin_profiles()
        where = "the built-in profiles"
    if settings.ground_truth == "fitted":
        from .perf.fitting import fitted_applications

        apps = fitted_applications(apps)
    missing = sorted({j.application for j in jobs} - set(apps))
    if missing:
        raise InputError(
            f"no profile for application(s) {', '.join(missing)} in {where}; "
            f"profiles found: {', '.join(sorted(apps)) or 'none'}",
            source="--set",
            field="profiles",
        )
    if getattr(pol, "name", "") != "pollux":  # Pollux picks every batch itself
        _check_batches(jobs, apps, where)
    per_gpu = getattr(pol, "jobs_per_gpu", 1)  # sharing policies declare their degree
    return Simulator(
        cluster,
        jobs,
        pol,  # type: ignore[arg-type]
        ProfileExecutor(
            apps,
            semantics=settings.semantics,
            rescale_delay=settings.rescale_delay,
            interval=settings.interval,
            interference=settings.interference,
            pair_interference=read_pair_interference(settings.interference_file)
            if settings.interference_file
            else None,
        ),
        seed=seed,
        max_jobs_per_gpu=(settings.max_jobs_per_gpu or per_gpu) if per_gpu > 1 else 1,
        progress=progress,
        semantics=settings.semantics,
        round_interval=settings.interval,
    )


def _check_batches(jobs: Sequence[JobSpec], apps: Mapping[str, object], where: str) -> None:
    """Every job's requested batch must give a micro-batch inside its application's measured
    range: step times outside it are not in the profiles (a clear error, not a traceback)."""
    for j in jobs:
        app = apps[j.application]
        try:
            cfg = app.batch_config(j.num_gpus, j.batch_size)  # type: ignore[attr-defined]
        except ValueError as e:
            raise InputError(f"job {j.job_id}: {e}", field="batch_size") from None
        lo, hi = app.min_local, app.max_local  # type: ignore[attr-defined]
        if not lo <= cfg.a <= hi:
            raise InputError(
                f"job {j.job_id}{f' {j.name!r}' if j.name else ''} ({j.application}): batch "
                f"{j.batch_size} on {j.num_gpus} GPU(s) "
                f"gives a local batch of {cfg.a}, outside the range [{lo}, {hi}] measured in "
                f"{where}",
                field="batch_size",
            )


def _make(makers: Mapping[str, Callable[[], object]], name: object, kind: str) -> object:
    """The policy ``name`` names among ``makers`` (a policy object passes through)."""
    if not isinstance(name, str):
        return name
    if name not in makers:
        raise InputError(
            f"policy '{name}' cannot run {kind}; available: " + ", ".join(makers), field="policy"
        )
    return makers[name]()


def _job_level_policies(settings: Settings) -> dict[str, Callable[[], object]]:
    """Policies that run on application-profile and on duration (trace) jobs alike."""
    from .policies.luo import Exclusive
    from .policies.tiresias import Tiresias

    return {
        "tiresias": lambda: Tiresias(
            thresholds=tuple(h * 3600.0 for h in settings.tiresias_thresholds_hours),
            interval=settings.interval,
        ),
        "fifo": lambda: Exclusive("fifo", order="fifo", placement="least-busy"),
        "sjf": lambda: Exclusive("sjf", order="sjf"),
    }


def _build_duration(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    name: str | SchedulingPolicy,
    seed: int,
    settings: Settings,
    progress: Callable[[int, int], None] | None,
) -> Simulator:
    """Trace jobs with a measured duration (Philly …): duration executor + a job-level policy;
    exclusive GPUs, ``restart_delay`` after every preemption."""
    from .core.durationexec import DurationExecutor

    missing = [j.job_id for j in jobs if not j.duration > 0]
    if missing:
        raise InputError(
            f"a workload mixes trace jobs (with a duration) and jobs without one "
            f"(first: job {missing[0]}); give every job a duration or none",
            field="duration",
        )
    if settings.semantics != "events":
        raise InputError(
            "trace (duration) jobs run in events semantics only", source="--set", field="semantics"
        )
    pol = _make(_job_level_policies(settings), name, "trace (duration) jobs")
    return Simulator(
        cluster,
        jobs,
        pol,  # type: ignore[arg-type]
        DurationExecutor(),
        seed=seed,
        max_jobs_per_gpu=1,
        restart_delay=settings.restart_delay,
        progress=progress,
    )


def simulate_named(
    cluster: str,
    workload: str,
    policy: str | SchedulingPolicy = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | Mapping[str, object] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workload_format: str | None = None,
    trace_start: float | None = None,
    trace_end: float | None = None,
    max_gpus: int | None = None,
    sample: int | None = None,
    load_scale: float | None = None,
    gavel_throughputs: str | None = None,
    gavel_gpu: str = "v100",
) -> SimResult:
    """``simulate`` from a cluster preset/file and a workload preset/file, checking that every
    job can fit (the path of ``ddlsched run`` and of every experiment run). The workload
    options (format, filters, Gavel throughputs) are those of ``load_workload``."""
    from .core.cluster_io import load_cluster
    from .workloads.io import validate_fits
    from .workloads.presets import load_workload
    from .workloads.traces import check_simulable

    cl = load_cluster(cluster, seed)
    if settings is not None and not isinstance(settings, Settings):
        settings = Settings.from_mapping(settings)
    philly = (settings.philly if settings else "") or None
    jobs = load_workload(
        workload,
        seed=seed,
        philly=philly,
        workload_format=workload_format,
        trace_start=trace_start,
        trace_end=trace_end,
        max_gpus=max_gpus,
        sample=sample,
        load_scale=load_scale,
        gavel_throughputs=gavel_throughputs,
        gavel_gpu=gavel_gpu,
    )
    validate_fits(jobs, cl, workload)
    check_simulable(jobs, workload)
    return simulate(
        cl, jobs, policy, placement=placement, seed=seed, settings=settings, progress=progress
    )


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
