"""Job-level execution of application-profile jobs (Luo et al., the Pollux artifact).

A job of application A with R replicas and total batch B runs the fixed-batch configuration
``A.batch_config(R, B)`` and makes *progress* (initial-batch iterations weighted by statistical
efficiency) at g = gain / T_iter per second, where T_iter comes from the measured step times of
its placement; g changes at every epoch (gradient statistics are per epoch). The job completes
after ``A.max_epochs`` epochs. Every allocation, the first included, costs ``rescale_delay``
seconds without progress.

Two semantics (``--set semantics=``):

- ``events`` (default): continuous time; epoch crossings, completions, arrivals and policy calls
  happen at their exact instants, and a finished job frees its GPUs at once.
- ``rounds``: the Pollux artifact's loop (its simulator.py): every ``interval`` seconds all jobs
  advance one step under the placement they held at its start; within a step, each epoch crossing
  takes a whole number of seconds (Python ``round``, halves to even) and a completion is recorded
  at that sub-step second, but GPUs are freed and arrivals seen only at step boundaries. The
  engine's ``Simulator`` quantises arrivals and calls ``tick`` at every boundary.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import InputError, ScheduleError
from ..perf.profiles import (
    accumulated_config,
    compact_placement,
    node_runs,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..perf.profiles import Application, BatchConfig
    from .protocols import JobAgent, JobConfig
    from .simulator import Simulator
    from .state import JobState


def rate_at(app, placement, cfg, epoch: int, speed: float) -> float:
    """``app.rate`` on GPUs ``speed`` times as fast as the profiled ones (a GPU type's speed
    factor, issue #17): the compute of every micro-batch ÷ speed, the gradient sync as
    profiled — T_iter = sync + (step − sync)·(k + 1) / speed instead of step + (step − sync)·k
    — applied as a factor, so it holds for every application kind (profiles, fitted models,
    fixed iteration counts); ``app.rate`` itself at speed 1."""
    g = app.rate(placement, cfg, epoch)
    if speed == 1.0:
        return g
    step, sync = app.step_time(placement, cfg.a)
    t_iter = step + (step - sync) * cfg.accum
    return g * t_iter / (sync + (step - sync) * (cfg.accum + 1) / speed)


class FixedIterations:
    """An application whose job runs a fixed number of iterations at its batch instead of the
    application's epochs (Luo's physical workload: "training iterations from 100 to 5000"):
    one "epoch" of ``iterations`` progress at one iteration per T_iter, no statistical weighting.
    Everything else (batches, memory, step times) is the application's."""

    max_epochs = 1

    def __init__(self, app: Application, iterations: int) -> None:
        self._app = app
        self.iterations = float(iterations)

    def __getattr__(self, name: str):
        return getattr(self._app, name)

    def progress_at(self, epoch: int) -> float:
        return self.iterations if epoch >= 1 else 0.0

    def rate(self, placement, cfg, epoch: int) -> float:
        return 1.0 / self._app.iteration_time(placement, cfg)


class TypePart:
    """A GPU type's own profile in Sia's layout seen from a job whose GPUs span several types.
    Those tables measure placements within the one type, so the job's part on GPUs of the
    type, ``part`` (GPUs per node), runs at the type's measured pace on that part, whatever
    placement it is asked about; everything else is the profile's."""

    def __init__(self, app: Application, part: tuple[int, ...]) -> None:
        self._app = app
        self.part = part

    def __getattr__(self, name: str):
        return getattr(self._app, name)

    def step_time(self, placement, local_bsz: float) -> tuple[float, float]:
        return self._app.step_time(self.part, local_bsz)

    def iteration_time(self, placement, cfg: BatchConfig) -> float:
        return self._app.iteration_time(self.part, cfg)

    def rate(self, placement, cfg: BatchConfig, epoch: int) -> float:
        return self._app.rate(self.part, cfg, epoch)


class _Run:
    """One job's progress state (kept across preemptions: progress and epoch are not lost)."""

    __slots__ = (
        "job",
        "app",
        "cfg",
        "placement",
        "epoch",
        "progress",
        "delay_left",
        "last",
        "rate",
        "ver",
        "running",
        "since",
        "typed",
        "cfg_type",
        "cfg_limit",
    )

    def __init__(self, job: JobState, app: Application) -> None:
        self.job = job
        self.app = app
        #: the job's application in the profiles of each GPU type that has its own
        self.typed: dict[str, Application] = {}
        self.cfg: BatchConfig | None = None
        #: the GPU type whose own profile's batch limits ``cfg`` obeys (None: the default
        #: profile's), and the micro-batch cap of a placement spanning typed GPUs
        self.cfg_type: str | None = None
        self.cfg_limit: int | None = None
        self.placement: tuple[int, ...] = ()
        self.epoch = 0
        self.progress = 0.0
        self.delay_left = 0.0
        self.last = 0.0
        self.rate = 0.0
        self.ver = 0
        self.running = False
        self.since = 0.0


def placement_tuple(gpus: tuple[int, ...], gpu_server: tuple[int, ...]) -> tuple[int, ...]:
    """GPUs per node as run lengths of consecutive equal node ids in allocation order (the
    artifact's placement tuple)."""
    return node_runs(gpu_server[g] for g in gpus)


class ProfileExecutor:
    """Executor for application-profile jobs; ``semantics`` = ``events`` or ``rounds``."""

    def __init__(
        self,
        applications: dict[str, Application],
        *,
        semantics: str = "events",
        rescale_delay: float = 30.0,
        interval: float = 60.0,
        interference: float = 1.0,
        pair_interference: dict[tuple[str, str], float] | None = None,
        type_applications: dict[str, dict[str, Application]] | None = None,
        slowdowns: dict[str, float] | None = None,
        app_delays: dict[str, float] | None = None,
    ) -> None:
        if semantics not in ("events", "rounds"):
            raise ValueError(f"unknown semantics {semantics!r}")
        self.apps = applications
        self.semantics = semantics
        self.rescale_delay = rescale_delay
        self.interval = interval
        #: ξ (Luo Eq. 5–6): a job's iteration time is multiplied by ξ while another job shares
        #: one of its GPUs
        self.interference = interference
        #: ξ per (application, co-resident application): the first one's slowdown; pairs not
        #: listed use ``interference``
        self.pairs = dict(pair_interference or {})
        #: micro-batch limits chosen by a sharing policy for a job's next start (gradient
        #: accumulation with sub-batch ≤ limit), by job id
        self.micro_limit: dict[int, int] = {}
        #: total batch chosen by an elastic policy (Pollux) for a job's next start, by job id
        self.batch_override: dict[int, int] = {}
        #: seconds without progress a policy chose for a job's next start, by job id
        self.delay_override: dict[int, float] = {}
        #: an elastic policy's job agent (observations and batch re-tuning between epochs)
        self.agent: JobAgent | None = None
        #: GPU type → its own measured profiles (a cluster file's ``[gpu_types.T] profiles``):
        #: a job runs there at that profile's rate, not the default one's × the type's speed
        self.type_apps = dict(type_applications or {})
        #: application → factor its every rate is divided by (Sia's calibration SLOWDOWNS,
        #: simulator_config.py:31-33, job.py:485); applications not listed: 1
        self.slowdowns = dict(slowdowns or {})
        #: application → its restart delay in seconds, instead of ``rescale_delay`` (Sia's
        #: ``Application.rescale_time``, applications.py:56-69)
        self.app_delays = dict(app_delays or {})

    # ------------------------------------------------------------------ Executor protocol
    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        self.runs: dict[int, _Run] = {}
        n = sim.cluster.num_gpus
        #: Σ over ended allocations of held seconds × GPUs (a shared GPU once per job) …
        self.busy = 0.0
        #: … minus what sharing counted twice: Σ over each GPU's held periods of (the jobs'
        #: held seconds − the period's length); exactly 0.0 without sharing
        self.shared_twice = 0.0
        #: per GPU, its current held period: jobs on it, start, latest job end, jobs' seconds
        self._period_jobs = [0] * n
        self._period_start = [0.0] * n
        self._period_end = [0.0] * n
        self._period_sum = [0.0] * n
        #: busy seconds per GPU of the allocations that ended (see ``gpu_busy``)
        self.gpu_busy_done = [0.0] * n
        #: batch configurations by (job, micro-batch limit, replicas, batch, GPU type): pure
        #: functions of the job
        self._configs: dict[tuple[int, int | None, int, int, str | None], BatchConfig] = {}
        #: remaining_time memo: (job, placement, config, epoch, progress) → seconds
        self._remaining: dict[tuple, float] = {}
        cl = sim.cluster
        if self.type_apps:  # per-type profiles: each GPU's type, each type's speed
            self._gpu_type = [cl.gpu_type(g) for g in range(n)]
            self._speed = {s.gpu_type: s.speed if cl.typed else 1.0 for s in cl.servers}
        #: some type's own tables are in Sia's layout (measured within the type only): the
        #: estimates on the cluster's most consolidated placement become per-type ones
        self._within_types = any(
            a.max_nodes is not None for apps in self.type_apps.values() for a in apps.values()
        )
        for j in sim.jobs:
            self.add_run(j)

    def add_run(self, j: JobState) -> None:
        """Know ``j``, a job of the engine's (at attach; a service's jobs as they come): its
        application's profile, and each GPU type's own where types have them."""
        app = self._wrap(self.apps[j.spec.application], j)
        r = self.runs[j.job_id] = _Run(j, app)
        for t, apps in self.type_apps.items():
            r.typed[t] = self._wrap(apps[j.spec.application], j)

    @staticmethod
    def _wrap(app: Application, j: JobState) -> Application:
        if j.spec.iterations > 0:  # a fixed iteration count instead of epochs
            return FixedIterations(app, j.spec.iterations)  # type: ignore[return-value]
        return app

    # ------------------------------------------------------------------ GPU types
    def _parts(self, gpus: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
        """GPU type → the placement tuple of the GPUs of ``gpus`` of that type (in allocation
        order), for a placement spanning several types."""
        by_type: dict[str, list[int]] = {}
        for g in gpus:
            by_type.setdefault(self._gpu_type[g], []).append(g)
        server = self.sim.cluster.gpu_server
        return {t: placement_tuple(tuple(gs), server) for t, gs in by_type.items()}

    def _paces(self, r: _Run, gpus: tuple[int, ...]) -> list[tuple[Application, float]]:
        """(profile, speed factor) of each GPU type among ``gpus`` (per-type profiles only):
        a type with its own profiles at speed 1, the other types as one entry, the default
        profile at their slowest speed (the rate grows with the speed). Where ``gpus`` span
        several types, a type's own tables in Sia's layout (measured within the type only)
        give the pace of the job's part on that type (``TypePart``)."""
        out: list[tuple[Application, float]] = []
        slow: float | None = None
        types = sorted({self._gpu_type[g] for g in gpus})
        parts = self._parts(gpus) if len(types) > 1 else {}
        for t in types:
            own = r.typed.get(t)
            if own is not None:
                if parts and own.max_nodes is not None:
                    own = TypePart(own, parts[t])  # type: ignore[assignment]
                out.append((own, 1.0))
            elif slow is None or self._speed[t] < slow:
                slow = self._speed[t]
        if slow is not None:
            out.insert(0, (r.app, slow))
        return out

    def _rate(self, r: _Run, placement: tuple[int, ...], cfg: BatchConfig, epoch: int) -> float:
        """Progress per second of ``r`` on its GPUs with ``placement``/``cfg`` at ``epoch``
        (no interference): its slowest worker's pace — the smallest over the GPU types it
        holds of the type's own profile's rate, or the default profile's at the type's speed
        (``rate_at``); one ``rate_at`` at the slowest speed where no type has own profiles;
        ÷ the application's calibration slowdown (``slowdowns``)."""
        if self.slowdowns:
            slow = self.slowdowns.get(r.job.spec.application, 1.0)
            if slow != 1.0:
                return self._raw_rate(r, placement, cfg, epoch) / slow
        return self._raw_rate(r, placement, cfg, epoch)

    def _raw_rate(self, r: _Run, placement: tuple[int, ...], cfg: BatchConfig, epoch: int) -> float:
        """``_rate`` before the calibration slowdown."""
        if not self.type_apps:
            speed = self.sim.cluster.slowest_speed(r.job.gpus)  # 1.0 if types are undeclared
            return rate_at(r.app, placement, cfg, epoch, speed)
        paces = self._paces(r, r.job.gpus)
        try:
            return min(rate_at(a, placement, cfg, epoch, s) for a, s in paces)
        except ValueError as e:  # a type's own tables do not cover what the policy chose
            types = sorted({self._gpu_type[g] for g in r.job.gpus})
            raise InputError(
                f"job {r.job.job_id} ({r.job.spec.application}) on {len(r.job.gpus)} GPU(s) "
                f"of type(s) {', '.join(types)}, placement {placement}, micro-batch {cfg.a}: "
                f"the profiles have no step time there ({getattr(e, 'message', e)})",
                field="profiles",
            ) from None

    def config_type(self, gpus: tuple[int, ...] | list[int]) -> str | None:
        """The GPU type whose own profile sets the batch limits of a job on ``gpus``: their
        type when all of them are of one type with its own profiles — each type has its own
        measured local-batch range, as in Sia's per-type applications (applications.py:49-52;
        its job takes the batch limits of the type it runs on, job.py:317-340) — else None (the
        default profile's limits)."""
        if not self.type_apps or not gpus:
            return None
        t = self._gpu_type[gpus[0]]
        if t in self.type_apps and all(self._gpu_type[g] == t for g in gpus):
            return t
        return None

    def _type_limit(self, r: _Run, gpus: tuple[int, ...], placement: tuple[int, ...]) -> int | None:
        """The micro-batch cap of a job on ``gpus`` from the GPU types' own profiles (None: no
        cap below its configuration's profile's ``max_local``). One type's own profile in
        Sia's layout (``max_nodes`` set): the largest local batch measured on ``placement``
        (Sia's per-placement limit, ``Application.max_local_at``). A placement spanning
        several types, some with own profiles: the smallest of their limits (Sia's layout:
        each on the job's part on its type)."""
        types = {self._gpu_type[g] for g in gpus}
        own = [(t, r.typed[t]) for t in sorted(types) if t in r.typed]
        if not own:
            return None
        parts = self._parts(gpus) if len(types) > 1 else {t: placement for t in types}
        caps = [
            a.max_local_at(parts[t]) if a.max_nodes is not None else a.max_local for t, a in own
        ]
        base = own[0][1] if len(types) == 1 else r.app
        cap = min(caps)
        return cap if cap < base.max_local else None

    def pace(self, job: JobState) -> tuple[Application, float]:
        """(profile, speed factor) running ``job`` runs at on its placement: its slowest GPU
        type's own profile at speed 1, else the default profile at the slowest speed — what a
        job agent measures (``rate_at(profile, …, speed)`` is the job's rate)."""
        r = self.runs[job.job_id]
        if not self.type_apps:
            return r.app, self.sim.cluster.slowest_speed(job.gpus)
        paces = self._paces(r, job.gpus)
        if len(paces) == 1:
            return paces[0]
        assert r.cfg is not None
        cfg, placement, epoch = r.cfg, r.placement, r.epoch
        return min(paces, key=lambda p: rate_at(p[0], placement, cfg, epoch, p[1]))

    def application_on(self, job: JobState, gpu_type: str) -> tuple[Application, float]:
        """(profile, speed factor) ``job`` runs at on GPUs of ``gpu_type`` only: the type's own
        profile at speed 1, else the default profile at the type's speed (1.0 where types are
        undeclared). A policy's per-type throughput of the job on n GPUs of the type is
        ``rate_at(app, placement, config(job, replicas=n, gpu_type=t), epoch, speed)``."""
        r = self.runs[job.job_id]
        own = r.typed.get(gpu_type)
        if own is not None:
            return own, 1.0
        cl = self.sim.cluster
        speeds = {s.gpu_type: s.speed for s in cl.servers}
        if gpu_type not in speeds:
            raise ValueError(f"cluster {cl.name!r} has no GPU type {gpu_type!r}")
        return r.app, speeds[gpu_type] if cl.typed else 1.0

    # ------------------------------------------------------------------ what policies tell it
    def configure(self, job: JobState, config: JobConfig) -> None:
        """``job`` runs with ``config`` from its next start (``sim.start(job, gpus, config)``):
        its total batch, micro-batch limit and restart delay, used once."""
        if config.micro_limit is not None:
            self.micro_limit[job.job_id] = config.micro_limit
        if config.batch_size is not None:
            self.batch_override[job.job_id] = config.batch_size
        if config.restart_delay is not None:
            d = config.restart_delay
            if not (isinstance(d, (int, float)) and math.isfinite(d) and d >= 0):
                raise ScheduleError(
                    f"job {job.job_id}: restart_delay must be a number of seconds ≥ 0, got {d!r}"
                )
            self.delay_override[job.job_id] = float(d)

    def register_agent(self, agent: JobAgent) -> None:
        """``agent`` observes every configuration a job runs and re-tunes its batch."""
        self.agent = agent

    # ------------------------------------------------------------------ estimates for policies
    def application(self, job: JobState) -> Application:
        """The application ``job`` runs (a fixed iteration count wraps it)."""
        return self.runs[job.job_id].app

    def epoch(self, job: JobState) -> int:
        """Epochs ``job`` has completed."""
        return self.runs[job.job_id].epoch

    def remaining_consolidated(self, job: JobState, cfg: BatchConfig | None = None) -> float:
        """``remaining_time`` on the most consolidated placement of the job's requested GPUs
        with ``cfg`` (default: the requested batch). Where GPU types have their own tables in
        Sia's layout (measured within one type, which the cluster's most consolidated
        placement may not be): at the count-weighted mean of the per-type rates, each type's
        on its own most consolidated placement (as ``alone_time``)."""
        per = self.sim.cluster.max_gpus_per_server
        placement = compact_placement(job.num_gpus, per)
        default = self.config(job) if cfg is None else cfg
        if not self._within_types:
            return self.remaining_time(job, placement, default)
        r = self.runs[job.job_id]
        shares = self._alone_shares(r, job, placement, default, cfg)
        total, progress = 0.0, self.progress_now(job)
        for e in range(r.epoch, r.app.max_epochs):
            target = r.app.progress_at(e + 1)
            total += max(target - progress, 0.0) / self._mean_rate(shares, e)
            progress = target
        return total

    def alone_time(self, job: JobState) -> float:
        """Seconds from start to finish alone on the most consolidated placement of the
        requested GPUs at the requested batch (``AloneTimes``), on GPU types at the cluster's
        count-weighted mean speed (the default profiles are measured on one type). Where
        some types have their own profiles, at the count-weighted mean of the per-type rates
        (Σ_t c_t · rate_t / Σ_t c_t: an equal time-share of the types; rate_t is the type's own
        profile's rate, else the default profile's at the type's speed; a type with tables in
        Sia's layout at its own most consolidated placement and batch limits, and left out
        where its tables cannot run the job at its size: ``_alone_shares``)."""
        r = self.runs[job.job_id]
        app = r.app
        cl = self.sim.cluster
        placement = compact_placement(job.num_gpus, cl.max_gpus_per_server)
        cfg = self.config(job)
        speed = cl.mean_speed  # GPU types: an equal time-share of them
        shares = self._alone_shares(r, job, placement, cfg) if self.type_apps else []
        total, progress = 0.0, 0.0
        for e in range(app.max_epochs):
            target = app.progress_at(e + 1)
            if self.type_apps:
                g = self._mean_rate(shares, e)
            else:
                g = rate_at(app, placement, cfg, e, speed)
            total += max(target - progress, 0.0) / g
            progress = target
        return total

    def _alone_shares(
        self,
        r: _Run,
        job: JobState,
        placement: tuple[int, ...],
        cfg: BatchConfig,
        fixed: BatchConfig | None = None,
    ) -> list[tuple[int, Application, float, tuple[int, ...], BatchConfig]]:
        """Per GPU type of the cluster: (GPUs of the type, profile, speed, placement, batch
        configuration) of the job alone there. A type with its own tables in Sia's layout: on
        its own most consolidated placement within its own batch limits (or with ``fixed``);
        a type whose tables cannot run the job at its size is left out. Other types:
        ``placement``/``cfg`` (a type with its own profiles: micro-batches capped at its
        largest measured local batch)."""
        cl = self.sim.cluster
        out = []
        for t, c in cl.gpu_types.items():
            own = r.typed.get(t)
            if own is None:
                out.append((c, r.app, self._speed[t], placement, cfg))
            elif own.max_nodes is None:  # a cluster file's profiles: micro-batches in range
                cap = own.max_local
                fit = cfg if fixed is not None or cfg.a <= cap else self.config(job, cap)
                out.append((c, own, 1.0, placement, fit))
            else:
                per = max(s.num_gpus for s in cl.servers if s.gpu_type == t)
                p_t = compact_placement(job.num_gpus, per)
                try:
                    cap = own.max_local_at(p_t)
                    cfg_t = fixed or self.config(
                        job, cap if cap < own.max_local else None, gpu_type=t
                    )
                    own.step_time(p_t, cfg_t.a)  # the tables cover it
                except ValueError:
                    continue
                out.append((c, own, 1.0, p_t, cfg_t))
        if not out:
            raise InputError(
                f"job {job.job_id} ({job.spec.application}) on {job.num_gpus} GPU(s): no GPU "
                "type's profiles measure a placement of that size",
                field="profiles",
            )
        return out

    @staticmethod
    def _mean_rate(
        shares: list[tuple[int, Application, float, tuple[int, ...], BatchConfig]], epoch: int
    ) -> float:
        """The count-weighted mean over the GPU types of the per-type rates (exactly the
        common rate where they are all equal)."""
        rates = [(c, rate_at(a, p, cfg, epoch, speed)) for c, a, speed, p, cfg in shares]
        if len({g for _, g in rates}) == 1:
            return rates[0][1]
        return sum(c * g for c, g in rates) / sum(c for c, _ in rates)

    def remaining_as_running(self, job: JobState) -> float:
        """``remaining_time`` of running ``job`` on its placement and configuration."""
        r = self.runs[job.job_id]
        assert r.cfg is not None
        return self.remaining_time(job, r.placement, r.cfg)

    def busy_gpu_seconds(self) -> float:
        """GPU-seconds the GPUs held a job, a shared GPU counted once (docs/models.md)."""
        return self.busy - self.shared_twice

    def gpu_busy(self, gpu: int) -> float:
        """Accumulated execution time of ``gpu`` so far (allocated seconds, every job on it)."""
        now = self.sim.now
        return self.gpu_busy_done[gpu] + sum(
            now - self.runs[j.job_id].since for j in self.sim.residents[gpu]
        )

    def _hold(self, gpus: tuple[int, ...]) -> None:
        """A job takes ``gpus`` now: a GPU that held none starts a held period."""
        now = self.sim.now
        for g in gpus:
            if self._period_jobs[g] == 0:
                self._period_start[g] = self._period_end[g] = now
                self._period_sum[g] = 0.0
            self._period_jobs[g] += 1

    def _account(self, r: _Run, end: float | None = None) -> None:
        """``r`` leaves its GPUs; it ran until ``end`` (default now; in ``rounds`` its finish,
        before the boundary where the GPUs are freed)."""
        now = self.sim.now
        stop = now if end is None else end
        ran = stop - r.since
        self.busy += ran * len(r.job.gpus)
        held = now - r.since
        for g in r.job.gpus:
            self.gpu_busy_done[g] += held
            self._period_sum[g] += ran
            if self._period_end[g] < stop:
                self._period_end[g] = stop
            self._period_jobs[g] -= 1
            if self._period_jobs[g] == 0:  # the period ends: what sharing counted twice
                self.shared_twice += self._period_sum[g] - (
                    self._period_end[g] - self._period_start[g]
                )

    def config(
        self,
        job: JobState,
        limit: int | None = None,
        replicas: int | None = None,
        batch: int | None = None,
        gpu_type: str | None = None,
    ) -> BatchConfig:
        """The job's batch configuration on ``replicas`` GPUs (default: requested) with total
        ``batch`` (default: requested); ``limit`` caps the micro-batch (accumulation);
        ``gpu_type``: on GPUs of that type, within its own profile's batch limits (a type
        without its own profiles, or None: the default profile's)."""
        R = replicas or job.num_gpus
        B = batch or job.spec.batch_size
        r = self.runs[job.job_id]
        own = r.typed.get(gpu_type) if gpu_type is not None else None
        key = (job.job_id, limit, R, B, gpu_type if own is not None else None)
        cfg = self._configs.get(key)
        if cfg is None:
            app = r.app if own is None else own
            if limit is None or limit >= app.max_local:
                cfg = app.batch_config(R, B)
            else:
                cfg = accumulated_config(app, R, B, limit)
            self._configs[key] = cfg
        return cfg

    def memory_share(self, job: JobState) -> float:
        """Fraction of a GPU's memory one worker uses: micro-batch ÷ the application's maximum
        local batch (the largest that fits a GPU alone) — the default memory model."""
        r = self.runs[job.job_id]
        if r.cfg is None:
            return 0.0
        app = r.typed[r.cfg_type] if r.cfg_type is not None else r.app
        return r.cfg.a / app.max_local

    def start(self, job: JobState, delay: float) -> None:
        r = self.runs[job.job_id]
        limit = self.micro_limit.pop(job.job_id, None)
        r.cfg_type = self.config_type(job.gpus)
        r.placement = placement_tuple(job.gpus, self.sim.cluster.gpu_server)
        r.cfg_limit = self._type_limit(r, job.gpus, r.placement) if self.type_apps else None
        if r.cfg_limit is not None and (limit is None or r.cfg_limit < limit):
            limit = r.cfg_limit
        r.cfg = self.config(
            job,
            limit,
            replicas=len(job.gpus),
            batch=self.batch_override.pop(job.job_id, None),
            gpu_type=r.cfg_type,
        )
        delay = self.delay_override.pop(job.job_id, None)
        if delay is None:
            delay = self.app_delays.get(job.spec.application, self.rescale_delay)
        r.delay_left = delay
        r.running = True
        r.since = r.last = self.sim.now
        self._hold(job.gpus)
        if self.semantics == "events":
            self._retime(r)
            self._retime_neighbours(r)

    def stop(self, job: JobState) -> None:
        r = self.runs[job.job_id]
        if self.semantics == "events":
            self._advance(r, self.sim.now)
        self._leave(r)

    def _leave(self, r: _Run, end: float | None = None) -> None:
        """``r`` leaves its GPUs (preempted or finished, at ``end``: default now): void its
        pending event, account its busy time, re-time the jobs that shared its GPUs."""
        r.running = False
        r.ver += 1
        self._account(r, end)
        if self.semantics == "events":
            self._retime_neighbours(r, leaving=True)

    def ratio(self, app: str, other: str) -> float:
        """ξ of a job of ``app`` sharing a GPU with a job of ``other``."""
        return self.pairs.get((app, other), self.interference)

    def slowdown(self, job: JobState, leaving: JobState | None = None) -> float:
        """The largest ξ over the jobs sharing one of ``job``'s GPUs (1 if none)."""
        if self.interference == 1.0 and not self.pairs:
            return 1.0
        worst = 1.0
        for g in job.gpus:
            for other in self.sim.residents[g]:
                if other is not job and other is not leaving:
                    worst = max(worst, self.ratio(job.spec.application, other.spec.application))
        return worst

    def _neighbours(self, job: JobState) -> list[_Run]:
        seen: dict[int, _Run] = {}
        for g in job.gpus:
            for other in self.sim.residents[g]:
                if other is not job:
                    seen[other.job_id] = self.runs[other.job_id]
        return [seen[k] for k in sorted(seen)]

    def _retime_neighbours(self, r: _Run, leaving: bool = False) -> None:
        for n in self._neighbours(r.job):
            if n.running:
                self._advance(n, self.sim.now)
                self._retime(n, leaving=r.job if leaving else None)

    def progress_now(self, job: JobState) -> float:
        """Progress of ``job`` at this instant (a running job's fluid progress since its last
        event included; nothing is changed)."""
        r = self.runs[job.job_id]
        if not r.running or self.semantics != "events":
            return r.progress
        return self._fluid(r, self.sim.now)[0]

    def remaining_time(self, job: JobState, placement: tuple[int, ...], cfg: BatchConfig) -> float:
        """Seconds ``job`` still needs alone on ``placement`` with ``cfg`` from now (Luo's L_k):
        the sum over its remaining epochs of progress ÷ rate (no restart delay)."""
        r = self.runs[job.job_id]
        now_progress = self.progress_now(job)
        key = (job.job_id, placement, cfg, r.epoch, now_progress)
        hit = self._remaining.get(key)
        if hit is not None:
            return hit
        if len(self._remaining) > 100_000:
            self._remaining.clear()
        app = r.app
        total = 0.0
        progress = now_progress
        for e in range(r.epoch, app.max_epochs):
            target = app.progress_at(e + 1)
            total += max(target - progress, 0.0) / app.rate(placement, cfg, e)
            progress = target
        self._remaining[key] = total
        return total

    def remaining_alone(self, job: JobState) -> float:
        """L_k: ``remaining_time`` on the most consolidated placement at the requested batch."""
        return self.remaining_consolidated(job)

    def refresh(self, job: JobState) -> None:
        """Service left for policies: epochs still to run (a progress measure, not seconds)."""
        r = self.runs[job.job_id]
        job.service_left = float(r.app.max_epochs - r.epoch)

    def settle(self) -> None:
        pass

    def attained(self, job: JobState) -> float:
        """Progress so far (for reports and tests)."""
        return self.runs[job.job_id].progress

    # ------------------------------------------------------------------ events semantics
    @staticmethod
    def _fluid(r: _Run, now: float) -> tuple[float, float]:
        """(progress, restart delay left) of ``r`` at ``now``: the delay is served first, then
        progress grows at ``r.rate`` (events mode, within the current epoch)."""
        dt = now - r.last
        if dt <= 0:
            return r.progress, r.delay_left
        wait = min(r.delay_left, dt)
        return r.progress + r.rate * (dt - wait), r.delay_left - wait

    def _advance(self, r: _Run, now: float) -> None:
        """Bring ``r`` to ``now`` (see ``_fluid``)."""
        if now > r.last:
            r.progress, r.delay_left = self._fluid(r, now)
            r.last = now

    def _retime(self, r: _Run, leaving: JobState | None = None) -> None:
        """Schedule the next epoch crossing (or completion) of a running job."""
        assert r.cfg is not None
        if self.agent is not None:
            self.agent.observe(r)
        r.rate = self._rate(r, r.placement, r.cfg, r.epoch) / self.slowdown(r.job, leaving)
        target = r.app.progress_at(r.epoch + 1)
        t = r.last + r.delay_left + max(target - r.progress, 0.0) / r.rate
        r.ver += 1
        self.sim.at(t, self._cross, r, r.ver)

    def _cross(self, r: _Run, ver: int) -> None:
        if ver != r.ver or not r.running:
            return
        r.delay_left = 0.0
        r.last = self.sim.now
        r.epoch += 1
        r.progress = r.app.progress_at(r.epoch)
        if r.epoch >= r.app.max_epochs:
            self._finish(r, self.sim.now)
        else:
            self._rebatch(r)
            self._retime(r)

    def _rebatch(self, r: _Run) -> bool:
        """Ask the agent for ``r``'s batch (between epochs, as the artifact's ``Job.step``
        re-tunes it; sim:156, 162); True if the configuration changed."""
        if self.agent is None:
            return False
        batch = self.agent.rebatch(r)
        if batch is None:
            return False
        cfg = self.config(
            r.job, r.cfg_limit, replicas=len(r.job.gpus), batch=batch, gpu_type=r.cfg_type
        )
        if cfg == r.cfg:
            return False
        r.cfg = cfg
        return True

    def rebatch(self, job: JobState) -> None:
        """Re-tune a running job's batch now without a restart (an elastic policy's round in
        ``events`` semantics; ``rounds`` re-tunes inside every step)."""
        r = self.runs[job.job_id]
        if not r.running or self.semantics != "events":
            return
        self._advance(r, self.sim.now)
        if self._rebatch(r):
            self._retime(r)

    def _model_ended(self, r: _Run) -> None:
        """The model ran out of epochs while the job's real work goes on (live, replay): it
        stays at its end, in its last epoch, so its rates and gradient statistics stay
        defined (a restart on other GPUs asks them) and its remaining time is 0; a restart
        re-times it to that end at once (progress frozen there: rate 0 until then)."""
        last = r.app.max_epochs
        r.epoch = last - 1
        r.progress = r.app.progress_at(last)
        r.rate = 0.0

    def _finish(self, r: _Run, at: float) -> None:
        at = min(at, self.sim.now)  # a rounded sub-step second never passes the boundary
        self._leave(r, at)
        self.sim.job_finished(r.job, at=at)

    # ------------------------------------------------------------------ rounds semantics
    def tick(self, now: float) -> None:
        """Advance every running job over the step [now − interval, now] (the artifact's
        ``Job.step``); jobs that complete are recorded at their sub-step second and release
        their GPUs now, at the boundary."""
        start = now - self.interval
        done: list[tuple[_Run, float]] = []
        for jid in sorted(self.sim.running):
            r = self.runs[jid]
            end = self._step(r, start, self.interval)
            if end is not None:
                done.append((r, end))
        for r, end in done:
            self._finish(r, end)

    def _step(self, r: _Run, start: float, length: float) -> float | None:
        assert r.cfg is not None
        app = r.app
        d = min(r.delay_left, length)
        r.delay_left -= d
        s = length - d
        t = start + d
        slow = self.slowdown(r.job)
        while s > 0:
            if self.agent is not None:
                self.agent.observe(r)
            g = self._rate(r, r.placement, r.cfg, r.epoch) / slow
            target = app.progress_at(r.epoch + 1)
            if r.progress + g * s < target:
                r.progress += g * s
                self._rebatch(r)
                return None
            r.epoch += 1
            delta = round((target - r.progress) / g)  # whole seconds, halves to even
            r.progress = target
            s -= delta
            t += delta
            if r.epoch >= app.max_epochs:
                return t
            self._rebatch(r)
        return None
