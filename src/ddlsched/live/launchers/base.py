"""The process layer of live mode: what one worker process is (``WorkerSpec``), what every launcher
offers the scheduler (``Launcher``), and the plain-subprocess machinery the launchers share.

A launcher starts a job's workers as a gang (all or none), reports their exit codes and the latest
progress of rank 0, and stops them: stop file, SIGTERM to each worker's process group, SIGKILL
after a grace period. Processes are only ever signalled by their own pid/pgid, or through the
worker's own cgroup (``cgroup.kill``; ``launchers/cgroup.py``) where the system offers one.

Files of one job attempt live in ``WorkerSpec.run_dir`` (the scheduler picks one directory per job
and attempt; empty: the directory of ``log_path``): ``stop`` (one per attempt, shared by its ranks)
and ``progress.<rank>.jsonl``. The launcher creates the directory and removes a stale stop file.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, Self

from ...core.cluster import Cluster
from ...processes import HELPER_ENV, process_start_time
from . import cgroup

#: exit code reported for a worker whose host went away (Ray node or actor died) before it exited
LOST = -1000
#: how long to wait for processes to go after SIGKILL before giving up on them
KILL_WAIT = 10.0
#: capacity slack: shares such as 1/3 + 1/3 + 1/3 must fit one GPU
_EPS = 1e-6


class LaunchError(RuntimeError):
    """A gang could not be started (does not fit, a command cannot run, the cluster failed);
    nothing of it is left running."""


@dataclass(frozen=True)
class WorkerSpec:
    """One process of a job: its rank, where it runs (``server``: index in the launcher's cluster;
    ``gpus``: global GPU ids of that server), what it runs and where its files go.

    ``env`` holds the scheduler's variables (DDLSCHED_JOB_ID, DDLSCHED_ATTEMPT,
    DDLSCHED_CHECKPOINT_DIR, DDLSCHED_BATCH_SIZE, ...); the launcher adds RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR, MASTER_PORT, DDLSCHED_PROGRESS, DDLSCHED_STOP, DDLSCHED_GPUS and
    DDLSCHED_JOB_ID (these win over ``env``). ``gpu_share`` is the fraction of each listed GPU the
    worker claims (0.5 when a sharing policy puts two jobs on a GPU). ``job_gpus``: every global
    GPU id of the job (``DDLSCHED_GPUS``); empty: the launchers fill in the gang's GPUs
    (``with_job_gpus``)."""

    job_id: int
    rank: int
    world_size: int
    local_rank: int
    server: int
    gpus: tuple[int, ...]
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = "."
    log_path: str = "worker.log"
    run_dir: str = ""
    gpu_share: float = 1.0
    job_gpus: tuple[int, ...] = ()

    @property
    def attempt_dir(self) -> Path:
        """The per-job per-attempt directory holding the stop and progress files."""
        return Path(self.run_dir) if self.run_dir else Path(self.log_path).parent

    @property
    def progress_path(self) -> Path:
        return self.attempt_dir / f"progress.{self.rank}.jsonl"

    @property
    def stop_path(self) -> Path:
        return self.attempt_dir / "stop"

    @property
    def claim(self) -> float:
        """Logical GPUs this worker reserves on its server."""
        return len(self.gpus) * self.gpu_share


@dataclass(frozen=True)
class JobPoll:
    """The state of a job's workers, by rank: exit code (None: still running; negative: killed by
    that signal; ``LOST``: its host went away), pid (on the worker's host) and the latest
    progress record of rank 0 (the last JSON line of its progress file, None before the first)."""

    job_id: int
    exit_codes: tuple[int | None, ...]
    pids: tuple[int, ...]
    progress: dict | None

    @property
    def all_exited(self) -> bool:
        return all(c is not None for c in self.exit_codes)

    @property
    def running(self) -> int:
        """Number of workers still running."""
        return sum(c is None for c in self.exit_codes)


class Launcher(Protocol):
    """What the live scheduler needs from the cluster layer (``RayLauncher``, ``LocalLauncher``).

    A job's resources are released once ``poll``/``poll_many``/``stop`` sees all its workers
    exited; the job id may then be launched again (a restart). ``poll``/``stop`` of a finished
    job return its last state; of a job never launched raise ``KeyError``. Not thread-safe: one
    scheduler thread.

    What blocks, and for how long (measured on 2 cores: docs/performance.md "Live mode"):

    - ``launch``: starts the gang and returns once every worker process exists (not once it
      runs the command's first line). Local: one fork/exec per worker, milliseconds. Ray: one
      round of calls to worker hosts already running (started with the launcher and reused),
      tens of milliseconds; longer only when a host died and its replacement is still starting
      (≈ 1 s), bounded by ``call_timeout``.
    - ``poll``, ``poll_many``: one round of cheap calls (local: ``waitid`` and the progress
      file; Ray: one call per worker host involved), milliseconds; Ray: ≤ ``call_timeout``.
    - ``request_stop``, ``kill``: never wait: the stop file and the signal are sent (local) or
      handed to Ray (Ray: the calls are submitted, not awaited; a later ``poll`` sees their
      effect, as calls to one host run in order). Exits show up in later polls.
    - ``stop``, ``stop_many``: ``request_stop``, then polling until all exited, ``kill`` after
      ``grace`` seconds: up to ``grace`` + ``KILL_WAIT``. For callers that may block.
    """

    def launch(self, job_id: int, workers: list[WorkerSpec]) -> None: ...

    def poll(self, job_id: int) -> JobPoll: ...

    def poll_many(self, job_ids: Iterable[int]) -> dict[int, JobPoll]: ...

    def request_stop(self, job_id: int) -> None: ...

    def kill(self, job_id: int) -> None: ...

    def stop(self, job_id: int, grace: float) -> JobPoll: ...

    def stop_many(self, job_ids: Iterable[int], grace: float) -> dict[int, JobPoll]: ...

    def running_jobs(self) -> list[int]: ...

    def shutdown(self) -> None: ...

    def cluster(self) -> Cluster: ...


# ------------------------------------------------------------------------------- checks
def check_gang(cluster: Cluster, job_id: int, workers: Sequence[WorkerSpec]) -> None:
    """ValueError unless ``workers`` is one consistent gang of ``job_id`` on ``cluster``."""
    if not workers:
        raise ValueError(f"job {job_id}: a gang needs at least one worker")
    n = len(workers)
    for i, w in enumerate(workers):
        if w.job_id != job_id or w.rank != i or w.world_size != n:
            raise ValueError(
                f"job {job_id}: worker {i} has job_id={w.job_id} rank={w.rank} "
                f"world_size={w.world_size}; expected job_id={job_id} rank={i} world_size={n}"
            )
        if not 0 <= w.server < cluster.num_servers:
            raise ValueError(f"job {job_id} rank {i}: no server {w.server}")
        bad = [
            g for g in w.gpus if not 0 <= g < cluster.num_gpus or cluster.gpu_server[g] != w.server
        ]
        if bad:
            raise ValueError(f"job {job_id} rank {i}: GPUs {bad} are not on server {w.server}")
        lack = sorted(set(w.gpus) - set(w.job_gpus)) if w.job_gpus else []
        if lack:
            raise ValueError(f"job {job_id} rank {i}: job_gpus {w.job_gpus} lack its GPUs {lack}")
        bad = [g for g in w.job_gpus if not 0 <= g < cluster.num_gpus]
        if bad:
            raise ValueError(f"job {job_id} rank {i}: job_gpus {bad} are not GPUs of the cluster")
        if not w.command:
            raise ValueError(f"job {job_id} rank {i}: empty command")
        if not 0 < w.gpu_share <= 1:
            raise ValueError(f"job {job_id} rank {i}: gpu_share {w.gpu_share} not in (0, 1]")


def claims(workers: Iterable[WorkerSpec]) -> dict[int, float]:
    """Logical GPUs a gang reserves, per server."""
    out: dict[int, float] = {}
    for w in workers:
        out[w.server] = out.get(w.server, 0.0) + w.claim
    return out


class Capacity:
    """Bookkeeping of logical GPUs reserved per server, so a gang that cannot fit fails at once."""

    def __init__(self, cluster: Cluster) -> None:
        self._free = [float(s.num_gpus) for s in cluster.servers]

    def take(self, job_id: int, want: Mapping[int, float]) -> None:
        short = {s: (n, self._free[s]) for s, n in want.items() if n > self._free[s] + _EPS}
        if short:
            text = ", ".join(
                f"server {s}: {n:g} GPUs wanted, {f:g} free" for s, (n, f) in short.items()
            )
            raise LaunchError(f"job {job_id} does not fit: {text}")
        for s, n in want.items():
            self._free[s] -= n

    def give(self, want: Mapping[int, float]) -> None:
        for s, n in want.items():
            self._free[s] += n

    def free(self, server: int) -> float:
        return self._free[server]


def with_job_gpus(workers: Sequence[WorkerSpec]) -> list[WorkerSpec]:
    """The gang with ``job_gpus`` set where it is empty: every GPU of the gang, sorted (the
    policy's choice for the job, which each worker sees in ``DDLSCHED_GPUS``)."""
    every = tuple(sorted({g for w in workers for g in w.gpus}))
    return [w if w.job_gpus else replace(w, job_gpus=every) for w in workers]


# ---------------------------------------------------------------------- environment
def worker_env(
    spec: WorkerSpec,
    master_addr: str,
    master_port: int,
    base: Mapping[str, str],
    cuda_visible: str | None = None,
) -> dict[str, str]:
    """The environment of one worker (LIVE.md's contract): ``base``, then the scheduler's
    ``spec.env``, then the launcher's variables; CUDA_VISIBLE_DEVICES only when given. Never
    the service's helper mark (:data:`~ddlsched.processes.HELPER_ENV`): a job's worker is
    stopped gracefully after a crash, not killed as a helper; nor its store's cgroup tag
    (``cgroup.STORE_ENV``): a ``ddlsched live`` run inside a job owns its own cgroups."""
    env = dict(base)
    env.update({str(k): str(v) for k, v in spec.env.items()})
    env.pop(HELPER_ENV, None)
    env.pop(cgroup.STORE_ENV, None)
    env.update(
        RANK=str(spec.rank),
        WORLD_SIZE=str(spec.world_size),
        LOCAL_RANK=str(spec.local_rank),
        MASTER_ADDR=master_addr,
        MASTER_PORT=str(master_port),
        DDLSCHED_JOB_ID=str(spec.job_id),
        DDLSCHED_GPUS=",".join(str(g) for g in spec.job_gpus or spec.gpus),
        DDLSCHED_PROGRESS=str(Path(spec.cwd, spec.progress_path).absolute()),
        DDLSCHED_STOP=str(Path(spec.cwd, spec.stop_path).absolute()),
    )
    if cuda_visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = cuda_visible
    return env


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the OS's pick; the usual small race until it is bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def read_last_json(path: str | Path, tail: int = 65536) -> dict | None:
    """The last complete JSON object line of ``path`` (a half-written last line is skipped);
    None when the file is missing or holds none. Reads at most ``tail`` bytes."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - tail))
            data = f.read()
    except OSError:
        return None
    for line in reversed(data.splitlines()):
        line = line.strip()
        if not line:
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            return doc
    return None


# --------------------------------------------------------------------------- processes
def end_process_group(pid: int, start_time: int, grace: float) -> bool:
    """End the process group led by ``pid`` if that process is still the one that started at
    ``start_time`` (a worker a crashed service left behind): SIGTERM, SIGKILL after ``grace``.
    Whether such a process was found."""
    if start_time <= 0 or process_start_time(pid) != start_time:
        return False
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, KILL_WAIT)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if process_start_time(pid) != start_time or _zombie(pid):
                return True
            time.sleep(0.05)
    return True


def _check_command(command: Sequence[str], env: Mapping[str, str], cwd: str) -> None:
    """FileNotFoundError / PermissionError where ``Popen(command, env=env, cwd=cwd)`` would
    raise them (a contained worker is started through ``/bin/sh``, which would only exit 127)."""
    prog = command[0]
    if "/" in prog:
        candidates = [os.path.join(cwd, prog)]
    else:
        candidates = [os.path.join(cwd, d, prog) for d in os.get_exec_path(dict(env))]
    denied = False
    for path in candidates:
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return
            denied = True
    if denied:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), prog)
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), prog)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return stat[stat.rindex(")") + 2] == "Z"
    except (OSError, ValueError, IndexError):
        return True


# ------------------------------------------------------------------ containment (issue #27)
#: the environment variable that marks every process a worker starts, daemons included: a
#: token per worker process, so what it left behind is found by id, never by name
TOKEN_ENV = "DDLSCHED_WORKER_TOKEN"
#: a worker's log (its stdout and stderr) is cut to its last ``LOG_KEEP_BYTES`` once it
#: passes ``LOG_CAP_BYTES`` (environment ``DDLSCHED_LOG_CAP_BYTES`` of the scheduler's process
#: overrides it), looked at every poll: one job cannot fill the disk with output
LOG_CAP_BYTES = 64 << 20
LOG_KEEP_BYTES = 1 << 20
#: seconds after a worker ended during which its token is still looked for (a daemon it
#: forked may detach a moment after the worker's exit)
STRAY_WINDOW_S = 10.0
_strays: dict[str, float] = {}  # token of an ended worker → until when it is looked for
_seen_strays: set[int] = set()  # pids of strays this process killed: reaped once they are gone
_workers: set[int] = set()  # pids of this process's running workers (never reaped here)
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process the child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a process a
    worker leaves behind (fork, ``setsid``, fork again) is reparented here rather than to
    init, so it stays in our tree (``sweep_strays`` finds it by its token either way, and
    reaps it). Called by the processes that own workers for good — ``ddlsched live``,
    ``ddlsched serve``, a Ray worker host — never by a library caller's process, whose other
    orphans it would inherit. Whether it holds (False elsewhere)."""
    global _subreaper
    if _subreaper is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER = 36
        except (OSError, AttributeError):
            _subreaper = False
    return _subreaper


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def sweep_strays(now: float | None = None) -> int:
    """End (SIGKILL) every process still carrying the token of a worker that has ended, and
    reap the zombies of those that were reparented to this process; the number ended. Cheap
    when no worker ended recently (nothing is read)."""
    now = time.monotonic() if now is None else now
    for token, until in list(_strays.items()):
        if until < now:
            del _strays[token]
    ended = 0
    if _strays:
        markers = {f"{TOKEN_ENV}={t}".encode() for t in _strays}
        me = os.getpid()
        try:
            pids = [int(e) for e in os.listdir("/proc") if e.isdigit()]
        except OSError:
            pids = []
        for pid in pids:
            if pid == me or pid in _workers:
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = set(f.read().split(b"\0"))
            except OSError:
                continue
            if env & markers:
                try:
                    os.kill(pid, signal.SIGKILL)
                    ended += 1
                    _seen_strays.add(pid)
                except (ProcessLookupError, PermissionError):
                    pass
    for pid in list(_seen_strays):  # reparented to us: reap, else they stay zombies
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (init reaps it) or reaped already
            _seen_strays.discard(pid)
            continue
        if done:
            _seen_strays.discard(pid)
    cgroup.sweep(_workers)  # ended workers' cgroups: removed once empty, orphans reaped
    return ended


class WorkerProcess:
    """One worker's process in its own session (so its process group is its pgid = pid).

    The group is SIGKILLed once the leader has exited but before it is reaped, so no straggler of
    the group survives and the pgid cannot have been reused by then. What escaped the group
    (``setsid`` daemons) is ended with the worker's cgroup (``cgroup.Leaf``: the process enters
    it before its command runs; ``cgroup.kill`` at the leader's exit) where there is one; else
    (the fallback) it carries the worker's token (``TOKEN_ENV``) and is ended by
    ``sweep_strays``: this process is their subreaper."""

    def __init__(self, spec: WorkerSpec, env: Mapping[str, str]) -> None:
        self.spec = spec
        self.env = dict(env)
        self.token = uuid.uuid4().hex
        self.env[TOKEN_ENV] = self.token
        self._proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None
        #: the worker's own cgroup (None: none, the token and subreaper fallback)
        self.cgroup: cgroup.Leaf | None = None

    @property
    def pid(self) -> int:
        return self._proc.pid if self._proc is not None else -1

    def start(self) -> int:
        """Start the process (FileNotFoundError/PermissionError when the command cannot run)."""
        spec = self.spec
        stop = Path(spec.cwd, spec.stop_path)
        stop.parent.mkdir(parents=True, exist_ok=True)
        stop.unlink(missing_ok=True)
        log = Path(spec.cwd, spec.log_path)
        log.parent.mkdir(parents=True, exist_ok=True)
        attempt = spec.env.get("DDLSCHED_ATTEMPT", "x")
        name = f"job-{spec.job_id}-{attempt}-{spec.rank}-{self.token[:8]}"
        leaf = cgroup.Leaf.make(name) if cgroup.available()[0] else None
        argv = list(spec.command)
        try:
            if leaf is not None:
                _check_command(argv, self.env, spec.cwd)  # what Popen's exec would say
                argv = ["/bin/sh", "-c", cgroup.GATE, "sh", *argv]
            with open(log, "ab") as out:
                self._proc = subprocess.Popen(
                    argv,
                    env=self.env,
                    cwd=spec.cwd,
                    stdin=subprocess.PIPE if leaf else subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                )
        except BaseException:
            if leaf is not None:
                leaf.end()
            raise
        _workers.add(self._proc.pid)
        if leaf is not None:  # the gate waits for its line: in the leaf before the command runs
            self.cgroup = leaf if leaf.place(self._proc.pid) else None
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(b"go\n")
                self._proc.stdin.close()
            except OSError:  # it died meanwhile (killed): its exit shows in ``poll``
                pass
        return self._proc.pid

    def poll(self) -> int | None:
        """The exit code once the process has exited (its group then SIGKILLed, what escaped
        the group swept for ``STRAY_WINDOW_S``), else None."""
        if self.returncode is not None or self._proc is None:
            return self.returncode
        if not self._leader_exited():
            self.cap_log()
            return None
        self._signal_group(signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.end()  # cgroup.kill: everything it forked, wherever it went
        self.returncode = self._proc.wait()
        self.cap_log()  # what it wrote since the last look
        _workers.discard(self._proc.pid)
        if self.cgroup is None:  # the fallback: what escaped is found by its token
            _strays[self.token] = time.monotonic() + STRAY_WINDOW_S
        sweep_strays()
        return self.returncode

    def progress(self) -> dict | None:
        return read_last_json(Path(self.spec.cwd, self.spec.progress_path))

    def cap_log(self, cap: int | None = None) -> int:
        """Keep the worker's log under ``LOG_CAP_BYTES``: past it, the log is cut to its last
        ``LOG_KEEP_BYTES`` behind a line saying how much was dropped (the worker appends, so
        it writes on at the new end). Bytes dropped (0: under the cap)."""
        if cap is None:
            try:
                cap = int(os.environ.get("DDLSCHED_LOG_CAP_BYTES", LOG_CAP_BYTES))
            except ValueError:
                cap = LOG_CAP_BYTES
        path = Path(self.spec.cwd, self.spec.log_path)
        try:
            size = path.stat().st_size
            if size <= cap:
                return 0
            keep = min(LOG_KEEP_BYTES, cap // 2)
            with open(path, "r+b") as f:
                f.seek(size - keep)
                # to the end as it is now, not as it was at the stat: what the worker appended
                # meanwhile would be lost with the truncation (the window is now from this
                # read's end to the truncation, not the whole copy)
                tail = f.read()
                f.seek(0)
                f.truncate(0)
                note = f"[ddlsched: log over {cap} bytes: {size - keep} bytes dropped]\n"
                f.write(note.encode() + tail)
            return size - keep
        except OSError:
            return 0

    def terminate(self) -> None:
        """Ask to stop: create the stop file, SIGTERM the process group."""
        Path(self.spec.cwd, self.spec.stop_path).touch()
        if self.poll() is None:
            self._signal_group(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the process group (no wait; ``poll`` reaps)."""
        if self.poll() is None:
            self._signal_group(signal.SIGKILL)
            if self.cgroup is not None:
                self.cgroup.kill()

    def _leader_exited(self) -> bool:
        assert self._proc is not None
        waitid = getattr(os, "waitid", None)
        if waitid is None:  # not Linux: reap at once (the pgid is then killed just after)
            code = self._proc.poll()
            return code is not None
        try:
            info = waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None and info.si_pid == self._proc.pid

    def _signal_group(self, sig: int) -> None:
        assert self._proc is not None
        try:
            os.killpg(self._proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_gang(
    terminate: Callable[[], None],
    kill: Callable[[], None],
    poll: Callable[[], bool],
    grace: float,
    interval: float = 0.05,
) -> bool:
    """The stop protocol over a set of workers: ``terminate`` (stop file + SIGTERM), wait up to
    ``grace`` for ``poll`` to say all exited, then ``kill`` and wait up to ``KILL_WAIT``. Returns
    whether all exited."""
    terminate()
    deadline = time.monotonic() + max(0.0, grace)
    while not poll():
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    else:
        return True
    kill()
    deadline = time.monotonic() + KILL_WAIT
    while not poll():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


# ------------------------------------------------------------------------ local launcher
class LauncherBase:
    """What both launchers share: ``with`` shuts down; the cluster they run on
    (``_cluster``) and the jobs they run (``_jobs``, by id)."""

    _cluster: Cluster
    _jobs: Mapping[int, object]
    _final: Mapping[int, JobPoll]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        raise NotImplementedError

    def cluster(self) -> Cluster:
        return self._cluster

    def running_jobs(self) -> list[int]:
        return sorted(self._jobs)

    def poll(self, job_id: int) -> JobPoll:
        raise NotImplementedError

    def poll_many(self, job_ids: Iterable[int]) -> dict[int, JobPoll]:
        """``poll`` of several jobs (Ray: in one round of calls)."""
        return {j: self.poll(j) for j in job_ids}

    def request_stop(self, job_id: int) -> None:
        raise NotImplementedError

    def kill(self, job_id: int) -> None:
        raise NotImplementedError

    def stop(self, job_id: int, grace: float) -> JobPoll:
        """Stop file, SIGTERM to each worker's group, SIGKILL after ``grace``; returns when all
        have exited (or ``KILL_WAIT`` after SIGKILL)."""
        return self.stop_many([job_id], grace)[job_id]

    def stop_many(self, job_ids: Iterable[int], grace: float) -> dict[int, JobPoll]:
        """``stop`` for several jobs at once (one grace period for all): ``request_stop`` each,
        poll until all exited, ``kill`` those left after ``grace``."""
        ids = list(job_ids)
        live = [j for j in ids if j in self._jobs]
        if live:
            stop_gang(
                lambda: [self.request_stop(j) for j in live],
                lambda: [self.kill(j) for j in live if j in self._jobs],
                lambda: all(p.all_exited for p in self.poll_many(live).values()),
                grace,
            )
        return {j: self.poll(j) for j in ids}

    def _known(self, job_id: int) -> bool:
        """Whether ``job_id`` is running; False when it finished; KeyError if never launched."""
        if job_id in self._jobs:
            return True
        if job_id in self._final:
            return False
        raise KeyError(job_id)
