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

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..perf.profiles import Application, BatchConfig
    from .simulator import Simulator
    from .state import JobState


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
    )

    def __init__(self, job: JobState, app: Application) -> None:
        self.job = job
        self.app = app
        self.cfg: BatchConfig | None = None
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
    out: list[int] = []
    prev = -1
    for g in gpus:
        s = gpu_server[g]
        if s == prev:
            out[-1] += 1
        else:
            out.append(1)
            prev = s
    return tuple(out)


class ProfileExecutor:
    """Executor for application-profile jobs; ``semantics`` = ``events`` or ``rounds``."""

    def __init__(
        self,
        applications: dict[str, Application],
        *,
        semantics: str = "events",
        rescale_delay: float = 30.0,
        interval: float = 60.0,
    ) -> None:
        if semantics not in ("events", "rounds"):
            raise ValueError(f"unknown semantics {semantics!r}")
        self.apps = applications
        self.semantics = semantics
        self.rescale_delay = rescale_delay
        self.interval = interval

    # ------------------------------------------------------------------ Executor protocol
    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        self.runs: dict[int, _Run] = {}
        self.busy = 0.0
        for j in sim.jobs:
            self.runs[j.job_id] = _Run(j, self.apps[j.spec.application])

    def busy_gpu_seconds(self) -> float:
        return self.busy

    def start(self, job: JobState, delay: float) -> None:
        r = self.runs[job.job_id]
        r.cfg = r.app.batch_config(job.num_gpus, job.spec.batch_size)
        r.placement = placement_tuple(job.gpus, self.sim.cluster.gpu_server)
        r.delay_left = self.rescale_delay
        r.running = True
        r.since = r.last = self.sim.now
        if self.semantics == "events":
            self._retime(r)

    def stop(self, job: JobState) -> None:
        r = self.runs[job.job_id]
        if self.semantics == "events":
            self._advance(r, self.sim.now)
        r.running = False
        r.ver += 1
        self.busy += (self.sim.now - r.since) * job.num_gpus

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
    def _advance(self, r: _Run, now: float) -> None:
        """Fluid progress from ``r.last`` to ``now`` within the current epoch (events mode)."""
        dt = now - r.last
        if dt <= 0:
            return
        wait = min(r.delay_left, dt)
        r.delay_left -= wait
        r.progress += r.rate * (dt - wait)
        r.last = now

    def _retime(self, r: _Run) -> None:
        """Schedule the next epoch crossing (or completion) of a running job."""
        assert r.cfg is not None
        r.rate = r.app.rate(r.placement, r.cfg, r.epoch)
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
            self._retime(r)

    def _finish(self, r: _Run, at: float) -> None:
        r.running = False
        r.ver += 1
        self.busy += (self.sim.now - r.since) * r.job.num_gpus
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
        while s > 0:
            g = app.rate(r.placement, r.cfg, r.epoch)
            target = app.progress_at(r.epoch + 1)
            if r.progress + g * s < target:
                r.progress += g * s
                return None
            r.epoch += 1
            delta = round((target - r.progress) / g)  # whole seconds, halves to even
            r.progress = target
            s -= delta
            t += delta
            if r.epoch >= app.max_epochs:
                return t
        return None
