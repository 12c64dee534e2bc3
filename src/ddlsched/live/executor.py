"""The live executor: jobs are real processes started, watched and stopped through a
``Launcher`` (Ray, or plain subprocesses), instead of progress computed from a model.

It offers the engine what the trace executor offers (``JobTimes``: remaining time alone from
the job's ``duration`` estimate, GPU busy time), so every policy for trace jobs (fifo, sjf,
tiresias, and plugins registered for them) schedules real processes unchanged. A job has
finished when all its processes exited 0 without a stop request; a preempted job is stopped
(stop file + SIGTERM, SIGKILL after ``grace``) and restarts later from its checkpoint; a
failed one (non-zero exit) is restarted in place up to its ``max_restarts``, then recorded as
failed (it leaves the cluster; ``failed_job_ids`` in summary.json).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .launch import LOST, JobPoll, Launcher, WorkerSpec

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState
    from .jobfile import LiveJob


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
class LiveRun:
    """One live job's state across its attempts."""

    job: LiveJob
    attempt: int = -1  # incremented at every start
    failures: int = 0
    attained: float = 0.0  # seconds run, over finished attempts
    since: float = 0.0  # start of the current attempt
    running: bool = False
    failed: bool = False
    progress: dict | None = None  # the last report of rank 0
    first_step: list[object] = field(default_factory=list)  # first reported step per attempt
    startup: list[float] = field(default_factory=list)  # seconds from launch to first report
    #: the current attempt's first and latest report: (job's unix time, step)
    first_seen: tuple[float, int] | None = None
    last_seen: tuple[float, int] | None = None
    exit_codes: tuple[int | None, ...] = ()


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
    ) -> None:
        self.launcher = launcher
        self.live = dict(jobs)
        self.run_dir = Path(run_dir)
        self.grace = grace
        self.cwd = cwd or os.getcwd()
        self.log = log
        self.runs: dict[int, LiveRun] = {}
        self.busy = 0.0
        self.gpu_busy_done: list[float] = []
        #: how a job that ended (finished or failed) leaves the engine; the live profile
        #: executor first ends the job's model run
        self.on_done: Callable[[JobState], None] | None = None
        #: the total batch a job runs with (``DDLSCHED_BATCH_SIZE``): the job file's, or what
        #: an elastic policy chose (the live profile executor)
        self.batch_of: Callable[[JobState], int | None] | None = None

    # ------------------------------------------------------------------ Executor protocol
    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        self.runs = {j.job_id: LiveRun(self.live[j.job_id]) for j in sim.jobs}
        self.gpu_busy_done = [0.0] * sim.cluster.num_gpus

    def start(self, job: JobState, delay: float) -> None:
        self._launch(job, self.runs[job.job_id])

    def _launch(self, job: JobState, r: LiveRun) -> None:
        """A new attempt of ``job`` on its GPUs."""
        r.attempt += 1
        r.since = self.sim.now
        r.first_seen = r.last_seen = None
        workers = self.workers(job, r)
        self.launcher.launch(job.job_id, workers)
        r.running = True  # only once launched: an interrupted launch left nothing running
        batch = workers[0].env.get("DDLSCHED_BATCH_SIZE")
        self._event("start", job, gpus=list(job.gpus), attempt=r.attempt, batch=batch)

    def stop(self, job: JobState) -> None:
        r = self.runs[job.job_id]
        if r.running:
            poll = self.launcher.stop(job.job_id, self.grace)
            self._ended(job, r, poll)
            self._event("stopped", job, exit_codes=list(poll.exit_codes), step=self._step(r))

    def refresh(self, job: JobState) -> None:
        job.service_left = self.remaining_alone(job) * job.num_gpus

    def settle(self) -> None:
        pass

    def busy_gpu_seconds(self) -> float:
        return self.busy + sum(
            (self.sim.now - r.since) * len(self.sim.running[i].gpus)
            for i, r in self.runs.items()
            if r.running and i in self.sim.running
        )

    # ------------------------------------------------------------------ Polls
    def poll(self) -> None:
        """Read every running job's processes: progress, and exits (finished or failed)."""
        for job in list(self.sim.running.values()):
            r = self.runs[job.job_id]
            p = self.launcher.poll(job.job_id)
            self._progress(job, r, p)
            if p.all_exited:
                self._ended(job, r, p)
                self.exited(job, r, p)

    def exited(self, job: JobState, r: LiveRun, p: JobPoll) -> None:
        """Every process of ``job``'s attempt has exited: it finished (all 0), its host went
        away (``LOST``: requeued, not a failure), or it crashed (restarted in place up to
        ``max_restarts``, then failed)."""
        codes = list(p.exit_codes)
        if all(c == 0 for c in codes):
            self.record_finish(job, r)
            self._event("finish", job, step=self._step(r))
            self._done(job)
        elif LOST in codes:
            self._event("lost", job, exit_codes=codes)
            self.requeue(job, "worker lost")
        elif self.record_crash(job, r, f"exit codes {codes}"):
            self._event("crashed", job, exit_codes=codes, failures=r.failures)
            self._launch(job, r)  # restart in place, from its checkpoint
        else:
            r.failed = True
            self._event("failed", job, exit_codes=codes, failures=r.failures)
            self._done(job)  # ends the job; recorded in summary `failed_jobs`

    def record_finish(self, job: JobState, r: LiveRun) -> None:
        """Hook: ``job`` finished (the service commits it before the engine frees its GPUs)."""

    def record_crash(self, job: JobState, r: LiveRun, reason: str) -> bool:
        """Count a crash of ``job``; whether it may restart (failures ≤ ``max_restarts``)."""
        r.failures += 1
        return r.failures <= r.job.max_restarts

    def requeue(self, job: JobState, reason: str) -> None:
        """Put ``job`` back in the queue, its processes gone (a lost worker): the policy
        starts it again, from its checkpoint."""
        self.sim.preempt(job)

    def _done(self, job: JobState) -> None:
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
        ran = r.attained + (self.sim.now - r.since if r.running else 0.0)
        return max(estimate - ran, 0.0)

    def attained(self, job: JobState) -> float:
        r = self.runs[job.job_id]
        return r.attained + (self.sim.now - r.since if r.running else 0.0)

    def gpu_busy(self, gpu: int) -> float:
        now = self.sim.now
        return self.gpu_busy_done[gpu] + sum(
            now - self.runs[j.job_id].since for j in self.sim.residents[gpu]
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

    def _ended(self, job: JobState, r: LiveRun, p: JobPoll) -> None:
        """An attempt's processes are gone: account its held time."""
        if not r.running:
            return
        r.running = False
        r.exit_codes = p.exit_codes
        held = self.sim.now - r.since
        r.attained += held
        self.busy += held * len(job.gpus)
        for g in job.gpus:
            self.gpu_busy_done[g] += held
        self._progress(job, r, p)

    def _progress(self, job: JobState, r: LiveRun, p: JobPoll) -> None:
        if p.progress is None or p.progress == r.progress:
            return
        if len(r.first_step) <= r.attempt:
            r.first_step.append(p.progress.get("step"))
            r.startup.append(self.sim.now - r.since)
            self._event("first_report", job, attempt=r.attempt, step=p.progress.get("step"))
        r.progress = p.progress
        t, step = p.progress.get("time"), p.progress.get("step")
        if isinstance(t, (int, float)) and isinstance(step, int):
            if r.first_seen is None:
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

    def stop_all(self) -> list[int]:
        """Stop every running job (checkpoint and exit; Ctrl-C); their ids."""
        known = set(self.launcher.running_jobs())
        running = [
            j
            for j in self.sim.running.values()
            if self.runs[j.job_id].running and j.job_id in known
        ]
        if not running:
            return []
        polls = self.launcher.stop_many([j.job_id for j in running], self.grace)
        for job in running:
            r = self.runs[job.job_id]
            self._ended(job, r, polls[job.job_id])
            self._event("stopped", job, exit_codes=list(r.exit_codes), step=self._step(r))
        return [j.job_id for j in running]

    def measured(self) -> list[dict[str, object]]:
        """Per finished job, what the run measured, as a trace job to simulate the same
        workload with ``ddlsched run``: its arrival, GPUs and ``duration`` = the seconds it
        held its GPUs over all attempts minus the start-up (launch → first report) of its
        restarts, which a simulation charges as ``restart_delay`` (``summary.json``'s
        ``mean_restart_startup_s``)."""
        rows = []
        for job in sorted(self.sim.jobs, key=lambda j: (j.arrival, j.job_id)):
            r = self.runs[job.job_id]
            if job.finish is None or r.failed:
                continue
            duration = r.attained - sum(r.startup[1:])
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
        startups = [s for r in self.runs.values() for s in r.startup]
        restart = [s for r in self.runs.values() for s in r.startup[1:]]
        return {
            "failed_jobs": len(failed),
            "failed_job_ids": failed,
            "attempts_restarted": restarts,
            # seconds from a launch to the job's first progress report, over all attempts,
            # and over restarts only (what `ddlsched run --set restart_delay=` models)
            "mean_startup_s": sum(startups) / len(startups) if startups else 0.0,
            "mean_restart_startup_s": sum(restart) / len(restart) if restart else 0.0,
        }
