"""The plain-subprocess launcher: a job's workers as child processes of the scheduler on a
cluster of logical GPUs (no Ray) — the fast path, and the reference the Ray launcher is tested
against (``launchers/ray.py``)."""

from __future__ import annotations

import os
import subprocess

from ...core.cluster import Cluster
from . import cgroup
from .base import (
    Capacity,
    JobPoll,
    LauncherBase,
    LaunchError,
    WorkerProcess,
    WorkerSpec,
    check_gang,
    claims,
    free_port,
    stop_gang,
    sweep_strays,
    with_job_gpus,
    worker_env,
)


class LocalLauncher(LauncherBase):
    """Workers as plain subprocesses of this process, on a cluster of logical GPUs (no Ray):
    the fast path, and the reference the Ray launcher is tested against."""

    def __init__(self, cluster: Cluster, master_addr: str = "127.0.0.1") -> None:
        self._cluster = cluster
        self._addr = master_addr
        self._capacity = Capacity(cluster)
        self._jobs: dict[int, list[WorkerProcess]] = {}
        self._final: dict[int, JobPoll] = {}

    def launch(self, job_id: int, workers: list[WorkerSpec]) -> None:
        check_gang(self._cluster, job_id, workers)
        if job_id in self._jobs:
            raise LaunchError(f"job {job_id} is already running")
        workers = with_job_gpus(workers)
        want = claims(workers)
        self._capacity.take(job_id, want)
        addr, port = self.rendezvous(job_id, workers)
        procs: list[WorkerProcess] = []
        try:
            for w in workers:
                p = WorkerProcess(self.placed(w), worker_env(w, addr, port, self.base_env(w)))
                procs.append(p)
                p.start()
        except (OSError, subprocess.SubprocessError) as e:
            stop_gang(
                lambda: [p.kill() for p in procs if p.pid > 0],
                lambda: None,
                lambda: all(p.poll() is not None for p in procs if p.pid > 0),
                0.0,
            )
            self._capacity.give(want)
            self.released(job_id)
            raise LaunchError(
                f"job {job_id}: cannot start {workers[len(procs) - 1].command[0]!r}: {e}"
            ) from e
        self._jobs[job_id] = procs
        self._final.pop(job_id, None)
        self.launched(job_id, [p.pid for p in procs])

    # -- what a launcher placing workers elsewhere (``launchers/testbed.py``) changes
    def rendezvous(self, job_id: int, workers: list[WorkerSpec]) -> tuple[str, int]:
        """``MASTER_ADDR`` and ``MASTER_PORT`` of the gang: this machine and a free port."""
        return self._addr, free_port(self._addr)

    def placed(self, w: WorkerSpec) -> WorkerSpec:
        """The worker as started (here: as given)."""
        return w

    def base_env(self, w: WorkerSpec) -> dict[str, str]:
        """The environment a worker inherits before the contract's variables (this one's)."""
        return dict(os.environ)

    def launched(self, job_id: int, pids: list[int]) -> None:
        """The gang's processes exist (``pids``, rank order)."""

    def released(self, job_id: int) -> None:
        """The gang's processes are gone (or its launch failed)."""

    def poll(self, job_id: int) -> JobPoll:
        if job_id not in self._jobs:
            return self._final[job_id]
        procs = self._jobs[job_id]
        codes = tuple(p.poll() for p in procs)
        state = JobPoll(job_id, codes, tuple(p.pid for p in procs), procs[0].progress())
        if state.all_exited:
            self._release(job_id, state)
        return state

    def sweep(self) -> None:
        """End what ended workers left behind (``sweep_strays``: their cgroups removed once
        empty, or the fallback's token sweep); the scheduler calls it on every pass (nothing is
        read when no worker ended in the last ``STRAY_WINDOW_S``)."""
        sweep_strays()

    def request_stop(self, job_id: int) -> None:
        """Create the stop file and SIGTERM each worker's process group; returns at once."""
        if self._known(job_id):
            for p in self._jobs[job_id]:
                p.terminate()

    def kill(self, job_id: int) -> None:
        """SIGKILL each worker's process group; returns at once (``poll`` reaps)."""
        if self._known(job_id):
            for p in self._jobs[job_id]:
                p.kill()

    def shutdown(self, grace: float = 2.0) -> None:
        """Stop every job still running (SIGTERM, then SIGKILL after ``grace``)."""
        self.stop_many(list(self._jobs), grace)
        cgroup.close()  # the ended workers' cgroups and this process's own, once empty

    def _release(self, job_id: int, state: JobPoll) -> None:
        procs = self._jobs.pop(job_id)
        self._capacity.give(claims(p.spec for p in procs))
        self._final[job_id] = state
        self.released(job_id)
