"""Every ``--set KEY=VALUE`` setting, in typed sections (docs/design.md "Settings").

Each section is a frozen dataclass that declares its settings and their one default; ``Settings``
is all sections at once, so ``settings.kappa`` and the flat ``--set kappa=2`` keep working, and
``settings.section("wang")`` is the typed ``WangSettings`` of a run. Config and sweep files
accept the flat ``[settings]`` keys and the sectioned ``[settings.wang]`` tables alike. Which
sections a run reads is declared by its backend's run kinds (``settings_scope.SECTIONS_OF``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from .core.timing import MAX_PER_BYTE, MAX_TIME, MIN_DURATION
from .errors import InputError, suggest
from .parsing import (
    NumberError,
    check_float,
    check_int,
    describe,
    parse_float,
    parse_int,
    to_float,
    to_int,
)
from .perf.contention import LinearContention
from .perf.rar import DEGRADATIONS, RarModel
from .planning import PlannerParams


@dataclass(frozen=True)
class EngineSettings:
    """How the engine treats placements and restarts (online policies, sharing, traces)."""

    max_jobs_per_gpu: int = 0  # 0 = limited by memory only
    restart_delay: float = 0.0
    # seconds a preempted trace job keeps its GPUs after the stop request (checkpoint, exit)
    stop_delay: float = 0.0
    # > 0: decide as a live engine that looks at its trace jobs every so many seconds (a
    # job's end and a stop's completion are seen at the nearest poll; ``ddlsched replay``)
    poll_interval: float = 0.0
    # with --queues: also run each ClusterQueue's jobs alone on a private cluster of its nominal
    # GPUs (same policy and settings), for HiveD's sharing-anomaly measure (docs/tenancy.md)
    sharing_anomaly: bool = False


@dataclass(frozen=True)
class ModelSettings:
    """Which performance model runs model jobs: auto = the policy's paper (Wang's for online
    presets, Yu's RAR model for planners); rar = Yu Eq. 6–8 at job level for any policy."""

    model: str = "auto"


@dataclass(frozen=True)
class WangSettings:
    """Wang et al.'s contention model ``a + k·b·M + (k−1)·η·M`` and its granularity."""

    granularity: str = "iteration"  # iteration | job
    a: float = LinearContention.a
    b: float = LinearContention.b
    eta: float = LinearContention.eta
    # at iteration level: a w-worker job's all-reduce moves 2(w−1)/w·M bytes per uplink (Table
    # I's ring b for N = w over N = 2, the nodes a, b, η are measured on); false: M, Wang's own
    ring_bytes: bool = False


@dataclass(frozen=True)
class IterationSettings:
    """The iteration-level executor (Wang's task DAG)."""

    iterations_per_task: int = 1
    shortcuts: bool = True  # exact event-saving shortcuts of the iteration level (for checking)
    compiled: bool = True  # the compiled task loop (numba); false = the Python loop, same events


#: settings that config.json records only when changed, so that run ids stay those of runs
#: made before they existed: how a run is computed (same results either way), and knobs that
#: were added later with defaults that change nothing
RECORDED_IF_CHANGED = frozenset(
    {
        "sharing_anomaly",
        "compiled",
        "large_share",
        "gpu_weights",
        "duration_scale",
        "jobs_per_hour",
        "vc_queues",
        "gavel_round",
        "gavel_reset_interval",
        "gavel_fifo_quirk",
        "calibration",
        "sia_p",
        "sia_lambda_n",
        "sia_lambda_a",
        "gpu_type_aware",
        "stop_delay",
        "poll_interval",
        "ring_bytes",
        "pollux_search",
        "goodput_fit",
    }
)


@dataclass(frozen=True)
class PlacementSettings:
    """Parameters of placement rules (κ of LWF-κ; ``lwf-K`` names κ itself)."""

    kappa: int = 1


@dataclass(frozen=True)
class RarSettings:
    """Yu et al.'s RAR model (Eq. 6–8): planners, or ``model=rar``."""

    xi1: float = RarModel.xi1
    xi2: float = RarModel.xi2
    alpha: float = RarModel.alpha
    reduction_speed: float = RarModel.reduction_speed
    rar_f: str = "linear"  # f(α, k): linear | fair
    time_slots: bool = False  # Yu's ⌊1/τ⌋ iterations per 1 s slot instead of fluid progress


@dataclass(frozen=True)
class PlannerSettings:
    """Yu et al.'s offline planners (Alg. 1–3)."""

    horizon: float = PlannerParams.horizon  # T
    u: float = PlannerParams.u
    lam: float = PlannerParams.lam  # λ of LBSGF
    bco_kappa: int = PlannerParams.kappa  # 0: search κ = 1..max G; k: only κ = k
    estimate: str = PlannerParams.estimate  # start | isolated
    extend_horizon: bool = PlannerParams.extend_horizon  # no plan within T → retry 2T, 4T, …


@dataclass(frozen=True)
class ProfileSettings:
    """Application-profile jobs (Luo et al., the Pollux artifact)."""

    profiles: str = ""  # directory of application profiles (Pollux format, or Sia's per type)
    ground_truth: str = "measured"  # measured (interpolated step times) | fitted (Eq. 7)
    semantics: str = "events"  # events | rounds (the Pollux artifact's 60 s loop)
    rescale_delay: float = 30.0  # seconds without progress after every allocation
    # "sia": Sia's simulator's per-application rate slowdowns and restart delays
    # (perf/typed_profiles.py SIA_SLOWDOWNS, SIA_RESCALE_TIMES); "none": rescale_delay, no slowdown
    calibration: str = "none"
    # ξ: slowdown of both jobs while two share a GPU (Luo Eq. 5–6); trace jobs: pairs without
    # Gavel's measured co-location throughputs
    interference: float = 1.5
    interference_file: str = ""  # CSV app,other,xi: per-pair ξ (others use `interference`)


@dataclass(frozen=True)
class PolicySettings:
    """Parameters a built-in policy reads (its ``settings=`` in ``policies/builtin.py``)."""

    interval: float = 60.0  # seconds between scheduling rounds
    tiresias_thresholds: str = "16"  # GPU-hours between Tiresias queues, comma-separated
    backfill: bool = True  # fifo/sjf: a job that does not fit is skipped (false: it blocks)
    # fifo/sjf on declared GPU types: a job goes to the type where it runs fastest (false: the
    # policy's own placement, blind to types, as the papers' baselines)
    gpu_type_aware: bool = False
    pollux_ncf_batch: int = 32768  # Pollux artifact quirk: NCF on 1 replica at this batch; 0: off
    # pollux / pollux-unaware's allocation search: ddlsched's deterministic one, or the
    # artifacts' NSGA-II seeded by --seed (policies/pollux_nsga.py; needs pymoo)
    pollux_search: str = "ddlsched"
    # how pollux, pollux-unaware and sia fit a job's throughput model to what it ran
    # (perf/goodput.py): "exact" (ddlsched: the artifacts' loss minimised) or "artifact" (the
    # Sia artifact's one L-BFGS-B at tol 1e-5, which stops near its start; docs/sia.md)
    goodput_fit: str = "exact"
    # Gavel's round-based policies (policies/gavel.py): its time_per_iteration, its
    # minimum_time_between_allocation_resets, and its FIFO's every-job-on-v100 slip
    gavel_round: float = 360.0
    gavel_reset_interval: float = 1920.0
    gavel_fifo_quirk: bool = False
    # Sia's ILP (policies/sia.py; simulator_config.py:49-56): fairness power p < 0 or > 0,
    # λ_n (penalty per job without an allocation), λ_a (parsed, unused by the artifact)
    sia_p: float = -0.5
    sia_lambda_n: float = 1.1
    sia_lambda_a: float = 0.01


@dataclass(frozen=True)
class WorkloadSettings:
    """Inputs of workload generators."""

    philly: str = ""  # Philly trace the luo24 generators sample from (built-in stand-ins if "")
    # the luo24 generators' knobs (workloads/luo24.py; issue #16); defaults = the recipe's own
    large_share: float = -1.0  # share of jobs on > 4 GPUs, exact; -1 = what the recipe gives
    gpu_weights: str = ""  # "1:65,4:35,8:10": GPU count → weight; "" = the application's
    duration_scale: float = 1.0  # × each sampled job's GPU time before its application is chosen
    jobs_per_hour: float = 0.0  # arrival rate; 0 = the recipe's (jobs over its 8-hour window)
    # each job's queue = the virtual cluster of its sampled Philly row (needs `philly`; #28)
    vc_queues: bool = False


#: section name → its dataclass, in the order config.json lists them
SECTIONS: dict[str, type] = {
    "engine": EngineSettings,
    "model": ModelSettings,
    "wang": WangSettings,
    "iteration": IterationSettings,
    "placement": PlacementSettings,
    "rar": RarSettings,
    "planner": PlannerSettings,
    "profile": ProfileSettings,
    "policy": PolicySettings,
    "workload": WorkloadSettings,
}

#: setting → its section
SECTION_OF: dict[str, str] = {f.name: s for s, cls in SECTIONS.items() for f in fields(cls)}


def flatten(values: Mapping[str, object], source: str) -> dict[str, object]:
    """Flat ``key → value`` from flat keys, ``section.key`` keys and ``{section: {key: v}}``
    tables (any mix); a key under the wrong section is an error naming its section."""
    out: dict[str, object] = {}
    for key, raw in values.items():
        key = str(key)
        section, dot, name = key.partition(".")
        if dot:
            items: Mapping[str, object] = {name: raw}
        elif key in SECTIONS and isinstance(raw, Mapping):
            section, items = key, raw
        else:
            out[key] = raw
            continue
        if section not in SECTIONS:
            raise InputError(
                f"unknown settings section{suggest(section, SECTIONS)}; known: "
                f"{', '.join(SECTIONS)}",
                source=source,
                field=key,
            )
        for name, value in items.items():
            home = SECTION_OF.get(str(name))
            if home is not None and home != section:
                raise InputError(
                    f"{name} is in section [{home}], not [{section}]",
                    source=source,
                    field=f"{section}.{name}",
                )
            if home is None:
                known = [f.name for f in fields(SECTIONS[section])]
                raise InputError(
                    f"unknown setting of [{section}]{suggest(str(name), known)}; known: "
                    f"{', '.join(known)}",
                    source=source,
                    field=f"{section}.{name}",
                )
            out[str(name)] = value
    return out


@dataclass(frozen=True)
class Settings(
    WorkloadSettings,
    PolicySettings,
    ProfileSettings,
    PlannerSettings,
    RarSettings,
    PlacementSettings,
    IterationSettings,
    WangSettings,
    ModelSettings,
    EngineSettings,
):
    """Every setting of a run: all sections at once (flat attributes, one default each)."""

    def section(self, name: str) -> object:
        """The typed section ``name`` of these settings (``settings.section("wang")``)."""
        cls = SECTIONS[name]
        return cls(**{f.name: getattr(self, f.name) for f in fields(cls)})

    def sectioned(self) -> dict[str, dict[str, object]]:
        """``{section: {key: value}}`` of every section (config.json's ``settings``)."""
        return {
            name: {
                f.name: getattr(self, f.name)
                for f in fields(cls)
                if not (f.name in RECORDED_IF_CHANGED and getattr(self, f.name) == f.default)
            }
            for name, cls in SECTIONS.items()
        }

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], source: str = "--set") -> Settings:
        """Validate and convert user values (strings from the CLI are parsed)."""
        known = {f.name: f for f in fields(cls)}
        out: dict[str, object] = {}
        for key, raw in flatten(values, source).items():
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
        for name in (
            "a",
            "restart_delay",
            "stop_delay",
            "poll_interval",
            "rescale_delay",
            "interval",
            "horizon",
            "gavel_round",
            "gavel_reset_interval",
        ):
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
            "restart_delay",
            "stop_delay",
            "poll_interval",
            "max_jobs_per_gpu",
            "xi2",
            "pollux_ncf_batch",
            "gavel_reset_interval",
        ):
            if getattr(self, name) < 0:
                raise InputError("must be ≥ 0", source=source, field=name)
        if self.eta < 0 and not self.b + self.eta > 0:
            # η < 0 is a measured fact (docs/models.md, "η < 0"): k all-reduces on one link take
            # less than k times one; every per-byte cost k·b + (k−1)·η stays > 0 iff b + η > 0
            raise InputError(
                f"must be ≥ 0 or > −b = {-self.b:g} (a negative η keeps every k·b + (k−1)·η > 0)",
                source=source,
                field="eta",
            )
        for name in ("xi1", "reduction_speed", "u"):
            if not getattr(self, name) > 0:
                raise InputError("must be > 0", source=source, field=name)
        if not self.alpha > -1:
            # Yu's f = k + α(k−1) = k(1+α) − α stays ≥ 1 and grows with k iff α > −1; a fit to
            # a measured link may give α < 0 (shares better than k-fold; docs/models.md)
            raise InputError(
                "must be > −1 (f(α, k) = k + α(k−1) must grow with k)", source=source, field="alpha"
            )
        if self.bco_kappa < 0:
            raise InputError("must be ≥ 0 (0 searches every κ)", source=source, field="bco_kappa")
        if self.lam < 1:
            raise InputError("must be ≥ 1", source=source, field="lam")
        if self.horizon < 1:
            raise InputError("must be ≥ 1", source=source, field="horizon")
        for name in ("interval", "gavel_round"):
            if not getattr(self, name) >= MIN_DURATION:
                raise InputError(
                    "must be ≥ 1e-6 s (1 µs; the engine rounds times to 1 ns, docs/models.md)",
                    source=source,
                    field=name,
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
        if self.large_share != -1.0 and not 0.0 <= self.large_share <= 1.0:
            raise InputError(
                "must be a fraction in [0, 1] (or -1: the recipe's own)",
                source=source,
                field="large_share",
            )
        if self.duration_scale <= 0:
            raise InputError("must be > 0", source=source, field="duration_scale")
        if self.jobs_per_hour < 0:
            raise InputError("must be ≥ 0 (0: the recipe's)", source=source, field="jobs_per_hour")
        self.gpu_weights_map(source)
        if self.rescale_delay < 0:
            raise InputError("must be ≥ 0", source=source, field="rescale_delay")
        if self.sia_p == 0:
            raise InputError("must not be 0 (Sia's power mean)", source=source, field="sia_p")
        if self.sia_lambda_n < 0:
            raise InputError("must be ≥ 0", source=source, field="sia_lambda_n")
        from .core.ratemodels import model_names
        from .perf.goodput import FIT_METHODS

        for name, allowed in (
            ("model", tuple(model_names())),
            ("rar_f", tuple(DEGRADATIONS)),
            ("estimate", ("start", "isolated")),
            ("semantics", ("events", "rounds")),
            ("ground_truth", ("measured", "fitted")),
            ("calibration", ("none", "sia")),
            ("pollux_search", ("ddlsched", "nsga2")),
            ("goodput_fit", FIT_METHODS),
        ):
            if getattr(self, name) not in allowed:
                raise InputError(f"must be one of {', '.join(allowed)}", source=source, field=name)

    def gpu_weights_map(self, source: str = "--set") -> dict[int, float] | None:
        """``gpu_weights`` as {GPU count: weight}, None when empty; ``InputError`` if malformed."""
        if not self.gpu_weights:
            return None
        out: dict[int, float] = {}
        for part in self.gpu_weights.split(","):
            count, colon, weight = part.partition(":")
            try:
                g, w = parse_int(count.strip()), parse_float(weight.strip())
            except NumberError:
                g, w = 0, -1.0
            if not colon or g < 1 or w < 0 or g in out:
                raise InputError(
                    f"expected distinct GPU counts ≥ 1 with weights ≥ 0, e.g. 1:65,4:35; "
                    f"got {part.strip()!r}",
                    source=source,
                    field="gpu_weights",
                )
            out[g] = w
        return out

    def generator_knobs(self) -> dict[str, object]:
        """The luo24 generators' keywords for the knobs that are set (``luo24.py``)."""
        knobs: dict[str, object] = {}
        if self.large_share != -1.0:
            knobs["large_share"] = self.large_share
        weights = self.gpu_weights_map()
        if weights is not None:
            knobs["gpu_weights"] = weights
        if self.duration_scale != 1.0:
            knobs["duration_scale"] = self.duration_scale
        if self.jobs_per_hour:
            knobs["jobs_per_hour"] = self.jobs_per_hour
        if self.vc_queues:
            knobs["vc_queues"] = True
        return knobs

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
