"""The live executor: jobs are real processes started, watched and stopped through a
``Launcher`` (Ray, or plain subprocesses), instead of progress computed from a model.

It offers the engine what the trace executor offers (``JobTimes``: remaining time alone from
the job's ``duration`` estimate, GPU busy time), so every policy for trace jobs (fifo, sjf,
tiresias, and plugins registered for them) schedules real processes unchanged.

Nothing waits inside the scheduling loop. Each start of a job is an :class:`Attempt` with one
explicit state machine (docs/live.md, "Exactly-once outcomes")::

    running ──exit──────────────────────────────→ finished | crashed | lost
       └─stop asked─→ stopping ──exit──────────→ stopped | finished | cancelled
                          └─grace over: SIGKILL─┘

A stop is a request: ``stop`` returns at once (``True``: the engine lets the job's GPUs drain)
and its completion — the processes seen gone at a later ``poll`` — is an event that ends the
attempt and tells the engine (``Simulator.stop_done``). How an exit is read:

- the job said its work is done (a last progress record with ``"done": true``:
  ``live.report(..., done=True)``) → finished, whatever the timing and however its processes
  ended (a SIGTERM that crossed its exit included);
- every process exited 0 and no stop was asked before the exit → finished (today's
  contract: exit 0 = done); a job whose processes were already gone when the stop was to be
  asked is read so too, and no stop is sent;
- any other exit after a stop request → stopped (preempted; the job resumes later from its
  checkpoint), cancelled when the stop was a cancel;
- a non-zero exit without a stop request → crashed: restarted in place up to
  ``max_restarts``, then failed (its GPUs freed; ``failed_job_ids`` in summary.json);
- ``LOST`` (the worker's host went away) → requeued.

A finished job is never started again: the engine ends it (``job_finished``) in whatever state
the policy left it (running, queued after a preemption, or waiting to relaunch).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..core.state import DONE
from .launchers.base import LOST, JobPoll, Launcher, LaunchError, WorkerSpec

if TYPE_CHECKING:  # pragma: no cover
    from ..core.cluster import Cluster
    from ..core.simulator import Simulator
    from ..core.state import JobState
    from .channel import CommChannel
    from .jobfile import LiveJob

#: attempt states (``Attempt.state``); the last five are final
RUNNING, STOPPING = "running", "stopping"
FINISHED, STOPPED, CRASHED, CANCELLED, LOST_STATE = (
    "finished",
    "stopped",
    "crashed",
    "cancelled",
    "lost",
)
#: why a stop was asked (``Attempt.intent``)
PREEMPT, CANCEL, HUNG, INTERRUPT = "preempt", "cancel", "hung", "interrupt"


#: seconds before a crashed job's first restart; doubled at every further failure, at most
#: ``BACKOFF_MAX`` (a job that always fails cannot restart in a tight loop)
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 60.0


def restart_backoff(failures: int) -> float:
    """Seconds to wait before restarting a job that has failed ``failures`` times (≥ 1)."""
    return min(BACKOFF_FIRST * 2.0 ** max(failures - 1, 0), BACKOFF_MAX)


def gpu_types_of(cluster: Cluster, gpus: list[int]) -> str:
    """``DDLSCHED_GPU_TYPE`` of a job on ``gpus``: the GPU type of its GPUs, or — a job whose
    GPUs are of several types — the types in the order of its GPUs, comma-separated."""
    out: list[str] = []
    for g in sorted(gpus):
        t = cluster.gpu_type(g)
        if t not in out:
            out.append(t)
    return ",".join(out)


class EventLog:
    """``events.jsonl`` of a live run: one JSON object per line (time, event, job, …),
    flushed per line so that a crash keeps what happened."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f: IO[str] | None = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, t: float, event: str, job: int | None = None, **fields: object) -> None:
        if self._f is None:
            return
        rec: dict[str, object] = {"t": round(t, 3), "event": event}
        if job is not None:
            rec["job"] = job
        rec.update(fields)
        self._f.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
        self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


@dataclass
class Attempt:
    """One start of a job's processes, from launch to the exit of its last process."""

    number: int
    gpus: tuple[int, ...]
    launched: float  # engine time of the launch
    state: str = RUNNING
    #: why a stop was asked (preempt, cancel, hung, interrupt); None: no stop asked
    intent: str | None = None
    stop_asked: float | None = None
    #: the processes were already gone when the stop was to be asked: no stop was sent
    gone_before_stop: bool = False
    killed: bool = False  # SIGKILLed after the grace period
    #: a hung attempt: whether the job restarts once it is gone (its crash is counted)
    restart: bool = False
    ended: float | None = None
    exit_codes: tuple[int | None, ...] = ()
    #: engine time of its first progress report, and the step it reported
    first_report: float | None = None
    first_step: object = None
    #: the last step it had reported when the stop was asked; the seconds of work it did after
    #: that (steps reported after the request × its own seconds per step): work a replay counts
    step_at_stop: int | None = None
    work_after_stop: float = 0.0

    @property
    def startup(self) -> float | None:
        """Seconds from the launch to the first progress report (None: it never reported)."""
        return None if self.first_report is None else self.first_report - self.launched

    @property
    def live(self) -> bool:
        """Its processes may still run (running or stopping)."""
        return self.state in (RUNNING, STOPPING)


@dataclass
class LiveRun:
    """One live job's state across its attempts."""

    job: LiveJob
    attempt: int = -1  # incremented at every start
    failures: int = 0
    attained: float = 0.0  # seconds held, over attempts that ended
    since: float = 0.0  # start of the current attempt
    failed: bool = False
    finished: bool = False
    cancelled: bool = False
    current: Attempt | None = None
    history: list[Attempt] = field(default_factory=list)
    progress: dict | None = None  # the last report of rank 0
    #: seconds from each stop request to the exit of the attempt's last process
    stop_seconds: list[float] = field(default_factory=list)
    #: the current attempt's pace is measured between these reports: (job's unix time, step).
    #: The base is the attempt's second report seen, not its first: the first may precede any
    #: step (a job's start report, made before the loop's first iteration) or follow a
    #: warm-up, so the time from it to the next report is not a whole iteration.
    first_seen: tuple[float, int] | None = None
    last_seen: tuple[float, int] | None = None
    exit_codes: tuple[int | None, ...] = ()
    #: a launch that failed, handled at the next poll (never inside the policy's call)
    launch_error: str | None = None

    @property
    def running(self) -> bool:
        """Its current attempt's processes may still run."""
        return self.current is not None and self.current.live


class LiveExecutor:
    """Executor of live jobs (``Polls``, ``JobTimes``, ``RanksGpus``)."""

    def __init__(
        self,
        launcher: Launcher,
        jobs: Mapping[int, LiveJob],
        run_dir: Path,
        *,
        grace: float = 10.0,
        cwd: str | None = None,
        log: EventLog | None = None,
        channel: CommChannel | None = None,
    ) -> None:
        self.launcher = launcher
        #: the per-iteration communication channel (``live/channel.py``): its socket is each
        #: worker's ``DDLSCHED_COMM``; a job is registered at each launch, forgotten at its end
        self.channel = channel
        self.live = dict(jobs)
        self.run_dir = Path(run_dir)
        self.grace = grace
        self.cwd = cwd or os.getcwd()
        self.log = log
        self.runs: dict[int, LiveRun] = {}
        self.busy = 0.0
        self.gpu_busy_done: list[float] = []
        #: the engine's view of each job with live processes (by id)
        self._states: dict[int, JobState] = {}
        #: how a job that ended (finished or failed) leaves the engine; the live profile
        #: executor first ends the job's model run
        self.on_done: Callable[[JobState], None] | None = None
        #: the total batch a job runs with (``DDLSCHED_BATCH_SIZE``): the job file's, or what
        #: an elastic policy chose (the live profile executor)
        self.batch_of: Callable[[JobState], int | None] | None = None
        #: why the next ``stop`` happens (the service's cancel sets CANCEL)
        self.intent = PREEMPT

    # ------------------------------------------------------------------ Executor protocol
    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        self.runs = {j.job_id: LiveRun(self.live[j.job_id]) for j in sim.jobs}
        self.gpu_busy_done = [0.0] * sim.cluster.num_gpus

    def start(self, job: JobState, delay: float) -> None:
        self._launch(job, self.runs[job.job_id])

    def _launch(self, job: JobState, r: LiveRun) -> None:
        """A new attempt of ``job`` on its GPUs. A launch that fails is handled at the next
        ``poll`` (the job fails with the reason), never inside the policy's call."""
        if r.finished or r.failed or r.cancelled or r.running:
            raise RuntimeError(f"live job {job.job_id} cannot start again: it has ended or runs")
        r.attempt += 1
        r.since = self.sim.now
        r.first_seen = r.last_seen = None
        self._states[job.job_id] = job
        if self.channel is not None:  # SRSF order of waiting asks: remaining service (Alg. 3)
            # before the processes start: an ask from a job the channel does not know goes
            # ungated, and rank 0 may ask while the other ranks are still being launched
            servers = sorted({self.sim.cluster.gpu_server[g] for g in job.gpus})
            self.channel.register(
                job.job_id, servers, svc=self.remaining_alone(job) * len(job.gpus)
            )
        try:
            workers = self.workers(job, r)
            self.launcher.launch(job.job_id, workers)
        except (LaunchError, OSError, ValueError) as e:
            r.launch_error = " ".join(str(e).split()) or type(e).__name__
            if self.channel is not None:
                self.channel.forget(job.job_id)
            return
        r.current = Attempt(r.attempt, tuple(job.gpus), self.sim.now)
        r.history.append(r.current)
        batch = workers[0].env.get("DDLSCHED_BATCH_SIZE")
        typed = {}
        if "DDLSCHED_GPU_TYPE" in workers[0].env:
            typed["gpu_type"] = workers[0].env["DDLSCHED_GPU_TYPE"]
        self._event("start", job, gpus=list(job.gpus), attempt=r.attempt, batch=batch, **typed)

    def stop(self, job: JobState) -> bool:
        """Ask ``job``'s processes to stop (stop file + SIGTERM; SIGKILL once ``grace`` is
        over); returns at once: ``True``, the completion comes from ``poll``. A job whose
        processes are already gone gets no signal: its exit is read as one without a stop."""
        r = self.runs[job.job_id]
        a = r.current
        if a is None or a.state != RUNNING:
            r.launch_error = None
            return False
        intent, self.intent = self.intent, PREEMPT
        a.state, a.intent, a.stop_asked = STOPPING, intent, self.sim.now
        a.step_at_stop = r.last_seen[1] if r.last_seen is not None else None
        self._states[job.job_id] = job
        try:
            p = self.launcher.poll(job.job_id)
        except Exception:  # noqa: BLE001 - a launcher error is this job's, read at the exit
            p = None
        if p is not None:
            self._progress(job, r, p)
            if p.all_exited:
                a.gone_before_stop = True
                self._event("stop_requested", job, reason=intent, already_exited=True)
                return True
        self._request_stop(job.job_id)
        self._event("stop_requested", job, reason=intent, attempt=a.number)
        self.sim.at(self.sim.now + self.grace, self._grace_over, job.job_id, a.number)
        return True

    def refresh(self, job: JobState) -> None:
        job.service_left = self.remaining_alone(job) * job.num_gpus

    def settle(self) -> None:
        pass

    def busy_gpu_seconds(self) -> float:
        now = self.sim.now
        return self.busy + sum(
            (now - r.since) * len(r.current.gpus) for r in self.runs.values() if r.running
        )

    # ------------------------------------------------------------------ the stop protocol
    def _request_stop(self, job_id: int) -> None:
        request = getattr(self.launcher, "request_stop", None)
        if request is not None:
            request(job_id)
        else:  # a launcher without the non-blocking API: its blocking stop
            self.launcher.stop(job_id, self.grace)

    def _grace_over(self, job_id: int, number: int) -> None:
        """The grace period of attempt ``number`` is over: SIGKILL what is left of it."""
        r = self.runs.get(job_id)
        a = r.current if r is not None else None
        if a is None or a.number != number or a.state != STOPPING:
            return
        a.killed = True
        kill = getattr(self.launcher, "kill", None)
        if kill is not None:
            kill(job_id)
        else:
            self.launcher.stop(job_id, 0.0)
        self._event("killed", self._states[job_id], attempt=number, grace=self.grace)

    # ------------------------------------------------------------------ Polls
    def poll(self) -> None:
        """Read every job's live processes: progress, and exits (each an attempt's end)."""
        sweep = getattr(self.launcher, "sweep", None)
        if sweep is not None:
            sweep()  # processes ended workers left behind (local launcher)
        live = [i for i, r in self.runs.items() if r.running and r.launch_error is None]
        polls: dict[int, JobPoll] = {}
        many = getattr(self.launcher, "poll_many", None)
        if many is not None and len(live) > 1:
            try:
                polls = many(live)  # Ray: one round of calls for every job
            except Exception:  # noqa: BLE001 - then job by job, each failure its job's own
                polls = {}
        for job_id, r in list(self.runs.items()):
            try:
                if r.launch_error is not None:
                    self._launch_failed(job_id, r)
                elif r.running:
                    self._poll_one(job_id, r, polls.get(job_id))
            except Exception as e:  # noqa: BLE001 - one job's trouble is that job's alone
                self._job_error(job_id, r, e)

    def _job_error(self, job_id: int, r: LiveRun, error: Exception) -> None:
        """Watching or ending ``job_id`` raised: the job fails with the reason (its processes
        are killed by id) and the run or service goes on."""
        reason = " ".join(f"{type(error).__name__}: {error}".split())
        job = self._states.get(job_id)
        try:
            kill = getattr(self.launcher, "kill", None)
            if kill is not None and r.running:
                kill(job_id)
        except Exception:  # noqa: BLE001
            pass
        if r.current is not None and r.current.live:
            r.current.state = CRASHED
        r.failed, r.launch_error = True, None
        if job is None:
            return
        self._event("failed", job, reason=f"internal error: {reason}")
        try:
            self.record_fail(job, r, f"internal error: {reason}")
        except Exception:  # noqa: BLE001 - the store refused (e.g. it ended already)
            pass
        if job.job_id in self.sim.stopping:
            self.sim.stop_done(job)
        self._done(job)

    def _poll_one(self, job_id: int, r: LiveRun, p: JobPoll | None = None) -> None:
        job = self._states[job_id]
        if p is None:
            try:
                p = self.launcher.poll(job_id)
            except KeyError:  # the launcher does not know it: its processes are gone
                p = JobPoll(job_id, (LOST,), (), None)
        self._progress(job, r, p)
        if p.all_exited:
            self.exited(job, r, p)

    def _launch_failed(self, job_id: int, r: LiveRun) -> None:
        error, r.launch_error = r.launch_error, None
        job = self._states[job_id]
        if self.sim.running.get(job_id) is not job:
            return  # preempted or ended before its failure was read
        r.failed = True
        self.record_fail(job, r, f"cannot launch: {error}")
        self._event("failed", job, reason=f"cannot launch: {error}")
        self._done(job)

    def exited(self, job: JobState, r: LiveRun, p: JobPoll) -> None:
        """Every process of the current attempt has exited: read the outcome (module
        docstring) and tell the engine, exactly once."""
        a = r.current
        assert a is not None
        self._ended(job, r, a, p)
        codes = list(p.exit_codes)
        stop_asked = a.stop_asked is not None and not a.gone_before_stop
        # its own word that the work is done wins over how the processes ended (a job killed
        # by the stop's SIGTERM just after its last report is finished, not stopped)
        done = self._said_done(r) or (all(c == 0 for c in codes) and not stop_asked)
        if a.stop_asked is not None:
            r.stop_seconds.append(self.sim.now - a.stop_asked)
            a.work_after_stop = self._work_after_stop(r, a)
        if a.intent in (PREEMPT, CANCEL):
            # the engine already took the job off its GPUs: they drain until now
            if done:
                self._finish(job, r, a, during=a.intent)
            elif a.gone_before_stop and LOST not in codes and a.intent == PREEMPT:
                # it crashed before the stop was asked: a crash (it is queued already)
                a.state = CRASHED
                if self.record_crash(job, r, f"exit codes {codes}"):
                    self._event("crashed", job, exit_codes=codes, failures=r.failures)
                else:
                    r.failed = True
                    self._event("failed", job, exit_codes=codes, failures=r.failures)
                    self._done(job)
            else:
                a.state = CANCELLED if a.intent == CANCEL else STOPPED
                if a.intent == CANCEL:
                    r.cancelled = True
                self._event(a.state, job, exit_codes=codes, step=self._step(r), killed=a.killed)
            self.sim.stop_done(job)
            return
        if done:
            self._finish(job, r, a)
            return
        if a.intent == HUNG:  # the crash was counted when the hang was found
            again = a.restart
        elif LOST in codes and a.stop_asked is None:
            a.state = LOST_STATE
            self._event("lost", job, exit_codes=codes)
            self.requeue(job, "worker lost")
            return
        else:
            again = self.record_crash(job, r, f"exit codes {codes}")
        a.state = CRASHED
        if again:  # restart in place, from its checkpoint, once the back-off is over
            wait = restart_backoff(r.failures)
            self._event("crashed", job, exit_codes=codes, failures=r.failures, retry_in=wait)
            self.sim.at(self.sim.now + wait, self._relaunch, job.job_id, a.number)
        else:
            r.failed = True
            self._event("failed", job, exit_codes=codes, failures=r.failures)
            self._done(job)  # ends the job; recorded in summary `failed_jobs`

    @staticmethod
    def _work_after_stop(r: LiveRun, a: Attempt) -> float:
        """Seconds of work ``a`` did between its stop request and its exit: the steps it
        reported after the request at the attempt's own pace (0 where it is not known)."""
        if a.step_at_stop is None or r.first_seen is None or r.last_seen is None:
            return 0.0
        (t0, s0), (t1, s1) = r.first_seen, r.last_seen
        if s1 <= a.step_at_stop or s1 <= s0 or t1 <= t0:
            return 0.0
        return (s1 - a.step_at_stop) * (t1 - t0) / (s1 - s0)

    def _relaunch(self, job_id: int, number: int) -> None:
        """The back-off after attempt ``number`` crashed is over: start the next attempt on
        the same GPUs, unless the job has moved on (preempted, cancelled) meanwhile."""
        r = self.runs.get(job_id)
        job = self._states.get(job_id)
        if r is None or job is None or r.current is None or r.current.number != number:
            return
        if r.current.state != CRASHED or self.sim.running.get(job_id) is not job:
            return
        if job_id in self.sim.launch_pending:
            return
        try:
            self._launch(job, r)
        except Exception as e:  # noqa: BLE001 - this job's trouble only
            self._job_error(job_id, r, e)

    def _finish(self, job: JobState, r: LiveRun, a: Attempt, during: str | None = None) -> None:
        a.state = FINISHED
        r.finished = True
        self.record_finish(job, r)
        extra = {"during": during} if during else {}
        self._event("finish", job, step=self._step(r), **extra)
        self._done(job)

    @staticmethod
    def _said_done(r: LiveRun) -> bool:
        """The job's last report says its work is done (``live.report(..., done=True)``)."""
        return bool(r.progress) and r.progress.get("done") is True  # type: ignore[union-attr]

    def record_finish(self, job: JobState, r: LiveRun) -> None:
        """Hook: ``job`` finished (the service commits it before the engine frees its GPUs)."""

    def record_fail(self, job: JobState, r: LiveRun, reason: str) -> None:
        """Hook: ``job`` failed for ``reason`` (the service commits it)."""

    def record_crash(self, job: JobState, r: LiveRun, reason: str) -> bool:
        """Count a crash of ``job``; whether it may restart (failures ≤ ``max_restarts``)."""
        r.failures += 1
        return r.failures <= r.job.max_restarts

    def requeue(self, job: JobState, reason: str) -> None:
        """Put ``job`` back in the queue, its processes gone (a lost worker): the policy
        starts it again, from its checkpoint."""
        if self.sim.running.get(job.job_id) is job:
            self.sim.preempt(job)

    def _done(self, job: JobState) -> None:
        if job.finish is not None or job.status == DONE:
            return  # the engine ended it already (a cancel)
        if self.on_done is not None:
            self.on_done(job)
        else:
            self.sim.job_finished(job)

    # ------------------------------------------------------------------ what policies ask
    def remaining_alone(self, job: JobState) -> float:
        """The job's ``duration`` estimate minus the time it has run (inf without an
        estimate: SJF then keeps arrival order among such jobs)."""
        r = self.runs[job.job_id]
        estimate = r.job.duration
        if not estimate:
            return math.inf
        return max(estimate - self.attained(job), 0.0)

    def attained(self, job: JobState) -> float:
        r = self.runs[job.job_id]
        return r.attained + (self.sim.now - r.since if r.running else 0.0)

    def gpu_busy(self, gpu: int) -> float:
        now = self.sim.now
        return self.gpu_busy_done[gpu] + sum(
            now - self.runs[j.job_id].since
            for j in self.sim.residents[gpu]
            if self.runs[j.job_id].running
        )

    # ------------------------------------------------------------------ the processes
    def workers(self, job: JobState, r: LiveRun) -> list[WorkerSpec]:
        """One process per GPU, ranks in GPU order, local ranks per server."""
        spec = r.job
        cluster = self.sim.cluster
        gpus = sorted(job.gpus)
        per_server: dict[int, int] = {}
        attempt_dir = self.run_dir / "jobs" / str(job.job_id) / f"attempt-{r.attempt}"
        checkpoint = spec.checkpoint_dir or str(self.run_dir / "jobs" / str(job.job_id) / "ckpt")
        os.makedirs(checkpoint, exist_ok=True)
        env = {
            "DDLSCHED_JOB_ID": str(job.job_id),
            "DDLSCHED_ATTEMPT": str(r.attempt),
            "DDLSCHED_CHECKPOINT_DIR": str(Path(checkpoint).resolve()),
        }
        batch = self.batch_of(job) if self.batch_of is not None else spec.batch_size
        if batch:
            env["DDLSCHED_BATCH_SIZE"] = str(batch)
        if self.channel is not None:
            env["DDLSCHED_COMM"] = str(Path(self.channel.path).resolve())
        if cluster.typed:  # declared GPU types (a cluster file's [gpu_types]): the job's type
            env["DDLSCHED_GPU_TYPE"] = gpu_types_of(cluster, gpus)
        # a GPU-sharing policy puts up to k jobs on a GPU: each worker claims 1/k of it
        share = 1.0 / max(self.sim.max_jobs_per_gpu or 1, 1)
        out = []
        for rank, g in enumerate(gpus):
            server = cluster.gpu_server[g]
            local = per_server.get(server, 0)
            per_server[server] = local + 1
            out.append(
                WorkerSpec(
                    job_id=job.job_id,
                    rank=rank,
                    world_size=len(gpus),
                    local_rank=local,
                    server=server,
                    gpus=(g,),
                    command=tuple(spec.command),
                    env=env,
                    cwd=self.cwd,
                    log_path=str(attempt_dir / f"rank-{rank}.log"),
                    run_dir=str(attempt_dir),
                    gpu_share=share,
                )
            )
        return out

    def _ended(self, job: JobState, r: LiveRun, a: Attempt, p: JobPoll) -> None:
        """An attempt's processes are gone: account the time it held its GPUs."""
        a.ended = self.sim.now
        a.exit_codes = r.exit_codes = p.exit_codes
        if self.channel is not None:
            self.channel.forget(job.job_id)
        held = self.sim.now - r.since
        r.attained += held
        self.busy += held * len(a.gpus)
        for g in a.gpus:
            self.gpu_busy_done[g] += held
        self._progress(job, r, p)
        if a.state == RUNNING or a.state == STOPPING:
            a.state = STOPPED  # provisional; ``exited`` sets the outcome

    def _progress(self, job: JobState, r: LiveRun, p: JobPoll) -> None:
        if p.progress is None or p.progress == r.progress:
            return
        a = r.current
        if a is not None and a.first_report is None:
            a.first_report, a.first_step = self.sim.now, p.progress.get("step")
            self._event("first_report", job, attempt=a.number, step=a.first_step)
        r.progress = p.progress
        t, step = p.progress.get("time"), p.progress.get("step")
        if isinstance(t, (int, float)) and isinstance(step, int):
            if r.first_seen is None and r.last_seen is not None:  # the attempt's second
                r.first_seen = (float(t), step)
            r.last_seen = (float(t), step)

    def step_time(self, job: JobState, least: int = 5) -> float | None:
        """Seconds per step of ``job``'s current attempt, from its reports (the job's own
        clock), once it reported ``least`` steps; None before."""
        r = self.runs[job.job_id]
        if r.first_seen is None or r.last_seen is None:
            return None
        (t0, s0), (t1, s1) = r.first_seen, r.last_seen
        if s1 - s0 < least or t1 <= t0:
            return None
        return (t1 - t0) / (s1 - s0)

    @staticmethod
    def _step(r: LiveRun) -> object:
        return r.progress.get("step") if r.progress else None

    def _event(self, event: str, job: JobState, **fields: object) -> None:
        if self.log is not None:
            self.log.write(self.sim.now, event, job.job_id, **fields)

    def stop_all(self, wait: Callable[[float], None] = time.sleep) -> list[int]:
        """Stop every job whose processes run (checkpoint and exit; Ctrl-C), waiting for
        them: ``grace``, then SIGKILL; their ids. Outcomes are read as usual (a job that
        finished meanwhile is recorded finished)."""
        live = [i for i, r in self.runs.items() if r.running]
        for i in live:
            r = self.runs[i]
            if r.current is not None and r.current.state == RUNNING:
                self.intent = INTERRUPT
                self.stop(self._states[i])
        deadline = time.monotonic() + self.grace
        killed = False
        while any(self.runs[i].running for i in live):
            for i in live:
                r = self.runs[i]
                if r.running:
                    self._poll_interrupted(i, r)
            if not any(self.runs[i].running for i in live):
                break
            if time.monotonic() >= deadline:
                if killed:
                    break
                killed = True
                for i in live:
                    if self.runs[i].running:
                        self._grace_over(i, self.runs[i].current.number)  # type: ignore[union-attr]
                deadline = time.monotonic() + 10.0
            wait(0.05)
        return live

    def _poll_interrupted(self, job_id: int, r: LiveRun) -> None:
        """``_poll_one`` of Ctrl-C: exits are recorded, nothing is restarted or requeued."""
        job = self._states[job_id]
        try:
            p = self.launcher.poll(job_id)
        except KeyError:
            p = JobPoll(job_id, (LOST,), (), None)
        self._progress(job, r, p)
        if not p.all_exited:
            return
        a = r.current
        assert a is not None
        self._ended(job, r, a, p)
        gone = a.stop_asked is None or a.gone_before_stop
        if self._said_done(r) or (all(c == 0 for c in p.exit_codes) and gone):
            self._finish(job, r, a, during=INTERRUPT)
        else:
            self._event("stopped", job, exit_codes=list(p.exit_codes), step=self._step(r))

    def measured(self) -> list[dict[str, object]]:
        """Per finished job, what the run measured, as a trace job to simulate the same
        workload with ``ddlsched run``: its arrival, GPUs and ``duration`` = the seconds its
        attempts ran until they ended or were asked to stop, plus the work they did after a
        stop request (``Attempt.work_after_stop``), minus the start-up (launch → first report)
        of its restarts, which a simulation charges as ``restart_delay``
        (``summary.json``'s ``mean_restart_startup_s``)."""
        rows = []
        for job in sorted(self.sim.jobs, key=lambda j: (j.arrival, j.job_id)):
            r = self.runs[job.job_id]
            if not r.finished or job.finish is None:
                continue
            ran = sum(
                (a.stop_asked if a.stop_asked is not None else a.ended or a.launched)
                - a.launched
                + a.work_after_stop
                for a in r.history
            )
            duration = ran - sum(a.startup or 0.0 for a in r.history if a.number > 0)
            rows.append(
                {
                    "arrival": job.arrival,
                    "num_gpus": job.num_gpus,
                    "duration": round(max(duration, 1e-6), 6),
                    "name": f"live-{job.job_id}",
                }
            )
        return rows

    def summary(self) -> dict[str, object]:
        """Extra ``summary.json`` keys of a live run."""
        failed = sorted(i for i, r in self.runs.items() if r.failed)
        restarts = sum(max(r.attempt, 0) for r in self.runs.values())
        attempts = [a for r in self.runs.values() for a in r.history if a.startup is not None]
        startups = [a.startup for a in attempts]
        restart = [a.startup for a in attempts if a.number > 0]
        stops = [s for r in self.runs.values() for s in r.stop_seconds]
        return {
            "failed_jobs": len(failed),
            "failed_job_ids": failed,
            "attempts_restarted": restarts,
            # seconds from a launch to the job's first progress report, over all attempts,
            # and over restarts only (what `ddlsched run --set restart_delay=` models)
            "mean_startup_s": sum(startups) / len(startups) if startups else 0.0,
            "mean_restart_startup_s": sum(restart) / len(restart) if restart else 0.0,
            # seconds from a stop request to the exit of the job's last process
            "mean_stop_s": sum(stops) / len(stops) if stops else 0.0,
        }
