"""The library entry point: build a simulation from names and settings, run it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields

from .core.cluster import Cluster
from .core.job import JobSpec
from .core.jobexec import JobExecutor, WangJobLevel
from .core.results import SimResult
from .core.simulator import Simulator
from .core.taskexec import TaskExecutor
from .errors import InputError, suggest
from .perf.contention import LinearContention
from .policies.registry import make_policy


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
                        raise ValueError(text)
                    val: object = text in ("1", "true", "yes", "on")
                elif isinstance(default, int):
                    val = int(raw)  # type: ignore[arg-type]
                elif isinstance(default, float):
                    val = float(raw)  # type: ignore[arg-type]
                else:
                    val = str(raw)
            except (TypeError, ValueError):
                raise InputError(
                    f"expected a {type(default).__name__}, got {raw!r}", source=source, field=key
                ) from None
            out[key] = val
        s = cls(**out)  # type: ignore[arg-type]
        s.check(source)
        return s

    def check(self, source: str = "--set") -> None:
        if self.granularity not in ("iteration", "job"):
            raise InputError("must be 'iteration' or 'job'", source=source, field="granularity")
        for name in ("iterations_per_task", "kappa"):
            if getattr(self, name) < 1:
                raise InputError("must be ≥ 1", source=source, field=name)
        for name in ("a", "b", "eta", "restart_delay", "max_jobs_per_gpu"):
            if getattr(self, name) < 0:
                raise InputError("must be ≥ 0", source=source, field=name)

    @property
    def contention(self) -> LinearContention:
        return LinearContention(a=self.a, b=self.b, eta=self.eta)


def build_simulator(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    policy: str = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Simulator:
    """Compose policy, executor and engine for one run (no I/O)."""
    settings = settings or Settings()
    try:
        pol = make_policy(policy, placement, settings.kappa)
    except KeyError as e:
        raise InputError(f"unknown {e.args[0]}; see `ddlsched list`") from None
    if settings.granularity == "iteration":
        executor: TaskExecutor | JobExecutor = TaskExecutor(
            settings.contention, pol.gate, settings.iterations_per_task, settings.shortcuts
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


def simulate_named(
    cluster: str,
    workload: str,
    policy: str = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | Mapping[str, object] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SimResult:
    """``simulate`` from a cluster preset/file and a workload preset/file, checking that every
    job can fit (the path of ``ddlsched run`` and of every experiment run)."""
    from .core.cluster_io import load_cluster
    from .workloads.io import validate_fits
    from .workloads.presets import load_workload

    cl = load_cluster(cluster)
    jobs = load_workload(workload, seed=seed)
    validate_fits(jobs, cl, workload)
    return simulate(
        cl, jobs, policy, placement=placement, seed=seed, settings=settings, progress=progress
    )


def simulate(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    policy: str = "ada-srsf",
    *,
    placement: str | None = None,
    seed: int = 0,
    settings: Settings | Mapping[str, object] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SimResult:
    """Run one simulation and return its records and summary."""
    if settings is not None and not isinstance(settings, Settings):
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
    return sim.run()
