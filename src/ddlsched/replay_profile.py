"""Replay of live application-profile runs (``ddlsched replay``; any policy, pollux and the
sharing policies included): each job calibrated in its profile's units.

A live app job is two things, as ``LiveProfileExecutor`` runs it: the application profile gives
the estimates the policies plan with (remaining times, batch configurations, Pollux's goodput),
while the real process decides when the job is done. The replay keeps both: the profile
executor for the estimates (unchanged, with the live run's settings), and per job the work the
live program did, in the profile's units, which ends the job:

- **work**: the samples it trained (per attempt: steps from the checkpoint it resumed from to its
  last step × the total batch that attempt ran with, the ``start`` event's ``batch``);
- **scale**: its measured seconds per step ÷ the profile's iteration time for the
  configuration it ran (``app.batch_config(R, batch)`` on its placement, as the program
  computes it), over its attempts (first report → stop request or finish);
- **start-up** of each start (launch → first report, without the poll's delay, as for trace
  jobs): its first one for the first start, its own mean restart start-up for the others (the
  run's mean where it never restarted; the mean first start-up where the run restarted
  nothing) — an elastic resize is a restart;
- **stop delay**: as for trace jobs.

In the replay a job started on GPUs ``G`` with total batch ``M`` (the policy's configuration,
``DDLSCHED_BATCH_SIZE`` live) trains at ``scale`` × the profile's iteration time of
``batch_config(|G|, M)`` per ``M`` samples, after its start-up; sharing a GPU does not slow it
(the program's steps are timed on logical GPUs: docs/live.md, "Replay"), so the pair slowdown is
1 for the work — the policies still plan with the profile's interference, as live. A Pollux
job's measured step time reaches its agent once per configuration, 5 steps after its start-up,
as live (``observe_measured``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .backends.profile import ProfileBackend
from .core.profileexec import ProfileExecutor
from .core.protocols import ObservesMeasured
from .core.simulator import Simulator
from .errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from .core.profileexec import _Run
    from .core.state import JobState

#: the calibrated jobs a profile replay writes beside its run files
PROFILE_REPLAY_FILE = "replay-jobs.csv"
COLUMNS = (
    "job_id",
    "name",
    "arrival",
    "num_gpus",
    "application",
    "batch_size",
    "work_samples",
    "scale",
    "first_startup",
    "restart_delay",
    "stop_delay",
)


@dataclass(frozen=True)
class ProfileJob:
    """One live app job as the replay runs it (module docstring)."""

    job_id: int
    arrival: float
    num_gpus: int
    application: str
    batch_size: int
    work_samples: float
    scale: float
    first_startup: float
    restart_delay: float
    stop_delay: float

    @property
    def name(self) -> str:
        return f"live-{self.job_id}"

    def spec(self):
        from .core.job import JobSpec
        from .workloads.trace_formats import placeholder_model

        return JobSpec(
            job_id=self.job_id,
            arrival=self.arrival,
            num_gpus=self.num_gpus,
            iterations=0,
            model=placeholder_model(self.application),
            application=self.application,
            batch_size=self.batch_size,
            name=self.name,
            stop_delay=self.stop_delay,
        )


def placement_of(gpus: list[int] | tuple[int, ...], gpu_server: tuple[int, ...]) -> tuple[int, ...]:
    """GPUs per server, servers in the order of the sorted GPUs (``train.py --pace``'s)."""
    from .core.profileexec import placement_tuple

    return placement_tuple(tuple(sorted(gpus)), gpu_server)


def iteration_time(app, gpus, batch: int, gpu_server: tuple[int, ...]) -> float:
    """The profile's seconds per step of ``batch_config(len(gpus), batch)`` on ``gpus`` (with
    Sia's per-placement local-batch limit where the profile has one: a larger micro-batch
    accumulates, as ``train.py --pace`` and the executor run it)."""
    placement = placement_of(gpus, gpu_server)
    cfg = app.batch_config(len(gpus), batch)
    if getattr(app, "max_nodes", None) is not None and cfg.a > app.max_local_at(placement):
        from .core.profileexec import accumulated_config

        cfg = accumulated_config(app, len(gpus), batch, app.max_local_at(placement))
    return app.iteration_time(placement, cfg)


def app_on(apps: dict, type_apps: dict, gpu_types: tuple[str, ...], name: str, gpus) -> object:
    """``name``'s profile on ``gpus``: the own profile of their (first GPU's) type if that type
    has one, else the default profile."""
    if gpus and type_apps:
        own = type_apps.get(gpu_types[min(gpus)], {}).get(name)
        if own is not None:
            return own
    return apps[name]


def write_profile_jobs(jobs: list[ProfileJob], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for j in jobs:
            w.writerow([j.name if c == "name" else getattr(j, c) for c in COLUMNS])


def read_profile_jobs(path: str | Path) -> list[ProfileJob]:
    """The jobs of a profile replay's ``replay-jobs.csv``."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for line, row in enumerate(rows, start=2):
        try:
            out.append(
                ProfileJob(
                    job_id=int(row["job_id"]),
                    arrival=float(row["arrival"]),
                    num_gpus=int(row["num_gpus"]),
                    application=row["application"],
                    batch_size=int(row["batch_size"]),
                    work_samples=float(row["work_samples"]),
                    scale=float(row["scale"]),
                    first_startup=float(row["first_startup"]),
                    restart_delay=float(row["restart_delay"]),
                    stop_delay=float(row["stop_delay"]),
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"bad row ({e})", source=str(path), line=line) from None
    return out


# ---------------------------------------------------------------------- the executor
class _Work:
    """The live program's work of one job in the replay."""

    __slots__ = ("left", "pace", "step", "since", "running", "ver", "started")

    def __init__(self, samples: float) -> None:
        self.left = samples  # samples still to train
        self.pace = 0.0  # seconds per sample in the current run
        self.step = 0.0  # seconds per step in the current run
        self.since = 0.0  # when the current run's work began (after its start-up)
        self.running = False
        self.ver = 0
        self.started = False


class ReplayProfileExecutor(ProfileExecutor):
    """The profile for the estimates; the calibrated work (module docstring) ends a job."""

    def __init__(self, applications: dict, jobs: dict[int, ProfileJob], **options: object):
        super().__init__(applications, **options)  # type: ignore[arg-type]
        self.calibrated = jobs
        self._measured: dict[int, tuple] = {}

    def attach(self, sim: Simulator) -> None:
        super().attach(sim)
        self.work = {j.job_id: _Work(self.calibrated[j.job_id].work_samples) for j in sim.jobs}

    def start(self, job: JobState, delay: float) -> None:
        super().start(job, delay)  # the model: the configuration the policy chose
        r, w, c = self.runs[job.job_id], self.work[job.job_id], self.calibrated[job.job_id]
        assert r.cfg is not None
        batch = r.cfg.M  # what the live program is given (DDLSCHED_BATCH_SIZE)
        own = r.typed.get(r.cfg_type) if r.cfg_type is not None else None  # its type's profile
        app = r.app if own is None else own
        w.step = c.scale * iteration_time(app, job.gpus, batch, self.sim.cluster.gpu_server)
        w.pace = w.step / batch
        w.since = self.sim.now + (c.restart_delay if w.started else c.first_startup)
        w.started = w.running = True
        w.ver += 1
        self.sim.observe_at(w.since + w.left * w.pace, self._done, job, w.ver)
        if isinstance(self.agent, ObservesMeasured):
            self.sim.at(w.since + 5 * w.step, self._observe, job, w.ver)

    def _left(self, w: _Work) -> float:
        return max(w.left - max(self.sim.now - w.since, 0.0) / w.pace, 0.0)

    def stop(self, job: JobState) -> bool:  # type: ignore[override]
        w = self.work[job.job_id]
        w.left = self._left(w)
        w.running = False
        w.ver += 1
        super().stop(job)
        delay = self.calibrated[job.job_id].stop_delay
        if not delay > 0:
            return False
        self.sim.observe_at(self.sim.now + delay, self.sim.stop_done, job)
        return True

    def _observe(self, job: JobState, ver: int) -> None:
        """Pollux's agent learns the job's measured step time (live: 5 reported steps)."""
        w, r = self.work[job.job_id], self.runs[job.job_id]
        if ver != w.ver or not w.running or r.cfg is None:
            return
        key = (r.placement, r.cfg.a)
        if self._measured.get(job.job_id) == key:
            return
        self._measured[job.job_id] = key
        self.agent.observe_measured(r, w.step)  # type: ignore[union-attr]

    def _done(self, job: JobState, ver: int) -> None:
        w, r = self.work[job.job_id], self.runs[job.job_id]
        if ver != w.ver or not w.running:
            return
        w.running = False
        w.left = 0.0
        if r.running:
            self._advance(r, self.sim.now)
            self._leave(r)
        self.sim.job_finished(job)

    def _finish(self, r: _Run, at: float) -> None:
        """The model says the job is done; its calibrated work decides (as live), the model
        stays at its end (``_model_ended``)."""
        self._model_ended(r)


class ReplayProfileBackend(ProfileBackend):
    """Application-profile jobs calibrated from a live run, decided at its polls."""

    name = "replay-profile"

    def __init__(self, jobs: list[ProfileJob], poll_interval: float) -> None:
        self.calibrated = {j.job_id: j for j in jobs}
        self.poll_interval = poll_interval

    def executor(self, apps: dict, **options: object) -> ReplayProfileExecutor:  # type: ignore[override]
        return ReplayProfileExecutor(apps, self.calibrated, **options)

    def simulator(self, *args: object, **options: object):  # type: ignore[override]
        return LaggedRounds(*args, polls_every=self.poll_interval, **options)  # type: ignore[arg-type]


#: seconds a live round is decided after its instant (a loop iteration; about 0.2–0.6 ms
#: measured on the development machine, 1 ms taken)
ROUND_LAG = 1e-3


class LaggedRounds(Simulator):
    """The engine with each periodic round decided ``ROUND_LAG`` after its instant, as the
    live loop decides it (the next one ``interval`` after that, as live). It matters to
    Pollux: a job that arrives at a round's instant has age 0 there, so restart factor 0 and
    no GPU until the next round — live its age is the loop's lag, and it gets one."""

    def _round(self, interval: float, tick: bool = False) -> None:
        if tick:  # ``rounds`` semantics: the artifact's loop, not the live one
            super()._round(interval, tick)
            return
        self.at(self.now + ROUND_LAG, super()._round, interval)


# ---------------------------------------------------------------------- calibration
def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6)


def calibrate_profile(
    measured: list[tuple[int, float, int, float]],
    events: dict,
    summary: dict,
    live_jobs: dict[int, tuple[str, int]],
    apps: dict,
    gpu_server: tuple[int, ...],
    poll: float,
    *,
    type_apps: dict | None = None,
    gpu_types: tuple[str, ...] = (),
) -> tuple[list[ProfileJob], dict[int, list[float]], dict[int, list[float]]]:
    """The finished jobs of a live app run as ``ProfileJob``s (module docstring), and per job
    the restart start-ups and stops measured. ``live_jobs``: job id → (app, batch_size) from
    the live run's job file; ``events``: per job its ``replay.JobEvents``; ``type_apps``: GPU
    type → its own profiles (``gpu_types``: each GPU's type), which an attempt on GPUs of
    that type is calibrated on."""
    typed = type_apps or {}

    @dataclass
    class Seen:
        work: float = 0.0
        dt: float = 0.0  # seconds from first reports to stop requests / finish …
        model: float = 0.0  # … and the profile's seconds for the steps made meanwhile
        startups: list[tuple[int, float, int, float]] | None = None  # (attempt, seen, steps, T)

    seen: dict[int, Seen] = {}
    for job, _arrival, _gpus, _duration in measured:
        app_name, batch0 = live_jobs[job]
        ev = events.get(job)
        s = seen[job] = Seen(startups=[])
        if ev is None:
            continue
        last = max(ev.attempts) if ev.attempts else None
        for k in sorted(ev.attempts):
            a = ev.attempts[k]
            if a.first_t is None or a.first_step is None:
                continue
            batch = a.batch or batch0
            gpus = a.gpus or tuple(range(_gpus))
            app = app_on(apps, typed, gpu_types, app_name, gpus)
            t_iter = iteration_time(app, gpus, batch, gpu_server)
            if a.stop_asked is not None and a.stop_step is not None:
                end_t, end_step = a.stop_asked, a.stop_step
            elif k == last and ev.finish is not None and ev.finish[1] is not None:
                end_t, end_step = ev.finish
            else:
                continue
            resumed = ev._resumed_from(k) or 0
            s.work += max(end_step - resumed, 0) * batch
            if end_step > a.first_step and end_t > a.first_t:
                s.dt += end_t - a.first_t
                s.model += (end_step - a.first_step) * t_iter
            assert s.startups is not None
            s.startups.append((k, a.first_t - a.launched, max(a.first_step - resumed, 0), t_iter))
    scales = [s.dt / s.model for s in seen.values() if s.model > 0]
    run_scale = sum(scales) / len(scales) if scales else 1.0
    firsts: list[float] = []
    restarts: dict[int, list[float]] = {}
    own_first: dict[int, float] = {}
    for job, s in seen.items():
        scale = s.dt / s.model if s.model > 0 else run_scale
        for k, took, early, t_iter in s.startups or []:
            up = max(took - early * scale * t_iter, 0.0)  # without the poll's delay
            if k == 0:
                own_first[job] = up
                firsts.append(up)
            else:
                restarts.setdefault(job, []).append(up)
    every = [r for rs in restarts.values() for r in rs]
    first_default = _mean(firsts) if firsts else float(summary.get("mean_startup_s", 0.0))
    restart_default = _mean(every) if every else first_default
    stops = {job: ev.stops for job, ev in events.items() if ev.stops}
    stop_default = round(float(summary.get("mean_stop_s", 0.0)), 6) if stops else poll
    out = []
    for job, arrival, gpus, _duration in measured:
        s = seen[job]
        app_name, batch0 = live_jobs[job]
        if not s.work > 0:
            raise InputError(
                f"job {job}: no steps measured (its events say no first report and end)",
                source="events.jsonl",
            )
        out.append(
            ProfileJob(
                job_id=job,
                arrival=arrival,
                num_gpus=gpus,
                application=app_name,
                batch_size=batch0,
                work_samples=s.work,
                scale=round(s.dt / s.model if s.model > 0 else run_scale, 6),
                first_startup=round(own_first.get(job, first_default), 6),
                restart_delay=_mean(restarts[job]) if job in restarts else restart_default,
                stop_delay=_mean(stops[job]) if job in stops else stop_default,
            )
        )
    return sorted(out, key=lambda j: (j.arrival, j.job_id)), restarts, stops
