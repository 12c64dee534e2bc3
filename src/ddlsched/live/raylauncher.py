"""Live jobs on Ray: one placement group per job launch (a gang: all bundles or none), one small
actor per worker that starts and watches the worker's process on its node.

``RayLauncher.local(cluster)`` starts a private Ray instance on this machine whose servers and GPUs
are logical resources (``ddlsched_s<i>``), so a machine without GPUs runs any cluster.
``RayLauncher.connect(address)`` joins a Ray cluster and schedules on its real GPU nodes (one
server per alive node with GPUs, pinned with the node's ``node:<ip>`` resource). There a worker's
``cwd``, ``log_path`` and ``run_dir`` are paths on its node (a shared file system in practice), and
every node must import ddlsched (the actors' class lives here). Ray is imported only inside
functions, so importing this module stays cheap.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.cluster import Cluster, Server
from .launch import (
    LOST,
    Capacity,
    JobPoll,
    LauncherBase,
    LaunchError,
    WorkerProcess,
    WorkerSpec,
    check_gang,
    claims,
    free_port,
    worker_env,
)

#: Ray resource name of server ``i``'s logical GPUs in a local instance
RESOURCE = "ddlsched_s{}"


class WorkerHost:
    """The Ray actor of one worker (``ray.remote(num_cpus=0)``): starts its process and answers
    cheap calls about it. Every method returns at once; waiting is the launcher's."""

    def __init__(self, base_env: Mapping[str, str] | None) -> None:
        if base_env is None:  # a node of a Ray cluster: its environment, less Ray's own
            base_env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith("RAY_") and k != "CUDA_VISIBLE_DEVICES"
            }
        self._base = dict(base_env)
        self._proc: WorkerProcess | None = None

    def endpoint(self, loopback: bool) -> tuple[str, int]:
        """MASTER_ADDR and a free MASTER_PORT on this node."""
        if loopback:
            return "127.0.0.1", free_port("127.0.0.1")
        import ray

        return ray.util.get_node_ip_address(), free_port("0.0.0.0")

    def start(self, spec: WorkerSpec, addr: str, port: int, cuda_visible: str | None) -> int:
        self._proc = WorkerProcess(spec, worker_env(spec, addr, port, self._base, cuda_visible))
        return self._proc.start()

    def poll(self, progress: bool) -> tuple[int | None, dict | None]:
        if self._proc is None:
            return LOST, None
        return self._proc.poll(), (self._proc.progress() if progress else None)

    def terminate(self) -> None:
        if self._proc is not None:
            self._proc.terminate()

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()


_ACTOR: list[Any] = []


def _actor_class() -> Any:
    """``WorkerHost`` as a Ray actor class (made once, on first use)."""
    if not _ACTOR:
        import ray

        _ACTOR.append(ray.remote(num_cpus=0)(WorkerHost))
    return _ACTOR[0]


@dataclass
class _Job:
    specs: list[WorkerSpec]
    actors: list[Any]
    pg: Any
    pids: tuple[int, ...]
    codes: list[int | None]
    progress: dict | None = None


class RayLauncher(LauncherBase):
    """The ``Launcher`` on Ray (see the module docstring). Make one with ``local`` or
    ``connect``; ``shutdown`` (or ``with``) stops every job and, when it started Ray, Ray."""

    def __init__(
        self,
        cluster: Cluster,
        bundle_of: Callable[[int, float], dict[str, float]],
        *,
        loopback: bool,
        started_ray: bool,
        cuda: bool,
        ready_timeout: float = 30.0,
        call_timeout: float = 30.0,
    ) -> None:
        self._cluster = cluster
        self._bundle_of = bundle_of
        self._loopback = loopback
        self._started_ray = started_ray
        self._cuda = cuda
        #: seconds a gang may wait for its placement group before ``launch`` gives up
        self.ready_timeout = ready_timeout
        #: seconds any call to the worker actors may take
        self.call_timeout = call_timeout
        self._capacity = Capacity(cluster)
        self._jobs: dict[int, _Job] = {}
        self._final: dict[int, JobPoll] = {}
        self._closed = False
        self._pending: list[Any] = []  # refs of calls not awaited (request_stop, kill)

    # ------------------------------------------------------------------ construction
    @classmethod
    def local(
        cls,
        cluster: Cluster,
        *,
        num_cpus: int = 1,
        object_store_mb: int = 128,
        ready_timeout: float = 30.0,
        call_timeout: float = 30.0,
    ) -> RayLauncher:
        """A private Ray instance on this machine with each server's GPUs as the logical
        resource ``ddlsched_s<i>`` (workers take no CPU, so ``num_cpus`` limits nothing)."""
        import ray

        if ray.is_initialized():
            raise LaunchError("Ray is already running in this process; use RayLauncher.connect")
        resources = {RESOURCE.format(i): float(s.num_gpus) for i, s in enumerate(cluster.servers)}
        with _keep_signal_handlers():
            try:
                ray.init(
                    num_cpus=num_cpus,
                    num_gpus=0,
                    resources=resources,
                    object_store_memory=object_store_mb * 1024 * 1024,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise LaunchError(f"cannot start Ray: {e}") from e

        def bundle(server: int, gpus: float) -> dict[str, float]:
            return {RESOURCE.format(server): gpus}

        return cls(
            cluster,
            bundle,
            loopback=True,
            started_ray=True,
            cuda=False,
            ready_timeout=ready_timeout,
            call_timeout=call_timeout,
        )

    @classmethod
    def connect(
        cls, address: str = "auto", *, ready_timeout: float = 60.0, call_timeout: float = 30.0
    ) -> RayLauncher:
        """Join the Ray cluster at ``address``: one server per alive node with GPUs (in order of
        node IP, then node id), its real ``GPU`` resource, CUDA_VISIBLE_DEVICES set to the local
        indices of the GPUs the policy chose."""
        import ray

        started = not ray.is_initialized()
        if started:
            with _keep_signal_handlers():
                try:
                    ray.init(address=address, log_to_driver=False, configure_logging=False)
                except (ConnectionError, ValueError, RuntimeError) as e:
                    raise LaunchError(f"cannot reach Ray at {address}: {e}") from e
        nodes = sorted(
            (n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("GPU", 0) >= 1),
            key=lambda n: (n["NodeManagerAddress"], n["NodeID"]),
        )
        if not nodes:
            if started:
                ray.shutdown()
            raise LaunchError(f"the Ray cluster at {address} has no alive node with GPUs")
        servers = tuple(
            Server(num_gpus=int(n["Resources"]["GPU"]), gpu_type=_gpu_type(n)) for n in nodes
        )
        ips = [n["NodeManagerAddress"] for n in nodes]

        def bundle(server: int, gpus: float) -> dict[str, float]:
            return {"GPU": gpus, f"node:{ips[server]}": 0.001}

        return cls(
            Cluster(servers=servers, name="ray"),
            bundle,
            loopback=False,
            started_ray=started,
            cuda=True,
            ready_timeout=ready_timeout,
            call_timeout=call_timeout,
        )

    # ------------------------------------------------------------------ the protocol
    def launch(self, job_id: int, workers: list[WorkerSpec]) -> None:
        """Start the gang, or raise ``LaunchError`` with nothing of it left (does not fit in what
        this launcher has handed out, placement group not ready in ``ready_timeout``, a command
        that cannot start)."""
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if self._closed:
            raise LaunchError("the launcher is shut down")
        check_gang(self._cluster, job_id, workers)
        if job_id in self._jobs:
            raise LaunchError(f"job {job_id} is already running")
        want = claims(workers)
        self._capacity.take(job_id, want)
        pg = placement_group([self._bundle_of(w.server, w.claim) for w in workers], strategy="PACK")
        actors: list[Any] = []
        try:
            try:
                ray.get(pg.ready(), timeout=self.ready_timeout)
            except ray.exceptions.GetTimeoutError:
                raise LaunchError(
                    f"job {job_id}: Ray did not place its {len(workers)} workers within "
                    f"{self.ready_timeout:g} s"
                ) from None
            host = _actor_class()
            base = dict(os.environ) if self._loopback else None
            for i in range(len(workers)):
                strategy = PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=i)
                actors.append(
                    host.options(num_cpus=0, scheduling_strategy=strategy, max_restarts=0).remote(
                        base
                    )
                )
            addr, port = ray.get(
                actors[0].endpoint.remote(self._loopback), timeout=self.call_timeout
            )
            refs = [
                a.start.remote(w, addr, port, self._cuda_of(w))
                for a, w in zip(actors, workers, strict=True)
            ]
            pids = self._get_all(refs, f"job {job_id}: start")
        except BaseException as e:
            self._abandon(actors, pg)
            self._capacity.give(want)
            if isinstance(e, LaunchError) or not isinstance(e, Exception):
                raise
            raise LaunchError(f"job {job_id}: cannot start: {_cause(e)}") from e
        self._jobs[job_id] = _Job(list(workers), actors, pg, tuple(pids), [None] * len(workers))
        self._final.pop(job_id, None)

    def poll(self, job_id: int) -> JobPoll:
        """Exit codes and rank 0's progress, gathered from all workers in one round."""
        if job_id not in self._jobs:
            return self._final[job_id]
        self._drain()
        job = self._jobs[job_id]
        self._refresh([job])
        state = JobPoll(job_id, tuple(job.codes), job.pids, job.progress)
        if state.all_exited:
            self._release(job_id)
        return state

    def request_stop(self, job_id: int) -> None:
        """Stop file and SIGTERM to each running worker's group, sent to the actors without
        waiting (the next ``poll`` runs after it on every actor)."""
        self._send(job_id, "terminate")

    def kill(self, job_id: int) -> None:
        """SIGKILL to each running worker's group, sent without waiting (``poll`` reaps)."""
        self._send(job_id, "kill")

    def shutdown(self, grace: float = 2.0) -> None:
        """Stop every job, end the actors and placement groups, and Ray when this launcher
        started it. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            import ray

            if ray.is_initialized() and self._jobs:
                try:
                    self.stop_many(list(self._jobs), grace)
                except Exception:  # Ray broken: fall back to the pids we know (local only)
                    pass
            for job_id in list(self._jobs):
                job = self._jobs.pop(job_id)
                if self._loopback:
                    for pid, code in zip(job.pids, job.codes, strict=True):
                        if code is None and pid > 0:
                            _killpg(pid)
                self._abandon(job.actors, job.pg)
        finally:
            if self._started_ray:
                import ray

                ray.shutdown()

    # ------------------------------------------------------------------ internals
    def _cuda_of(self, w: WorkerSpec) -> str | None:
        if not self._cuda:
            return None
        return ",".join(str(self._cluster.gpu_local[g]) for g in w.gpus)

    def _send(self, job_id: int, method: str) -> None:
        if not self._known(job_id):
            return
        job = self._jobs[job_id]
        for a, c in zip(job.actors, job.codes, strict=True):
            if c is None:
                self._pending.append(getattr(a, method).remote())

    def _drain(self) -> None:
        """Collect the answers of calls sent without waiting (errors: an actor gone, which the
        next poll reports as ``LOST``)."""
        import ray

        if not self._pending:
            return
        done, self._pending = ray.wait(self._pending, num_returns=len(self._pending), timeout=0)
        for ref in done:
            try:
                ray.get(ref)
            except ray.exceptions.RayError:
                pass

    def _refresh(self, jobs: list[_Job]) -> None:
        """Update exit codes (and rank 0's progress) of ``jobs`` in one round of actor calls."""
        import ray

        calls = [
            (job, r, a.poll.remote(r == 0))
            for job in jobs
            for r, (a, c) in enumerate(zip(job.actors, job.codes, strict=True))
            if c is None or r == 0
        ]
        if not calls:
            return
        refs = [ref for _, _, ref in calls]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.call_timeout)
        if len(ready) < len(refs):
            raise LaunchError(f"Ray workers did not answer within {self.call_timeout:g} s")
        for job, rank, ref in calls:
            try:
                code, progress = ray.get(ref)
            except ray.exceptions.RayError:
                code, progress = LOST, None
            if job.codes[rank] is None:
                job.codes[rank] = code
            if rank == 0 and progress is not None:
                job.progress = progress

    def _get_all(self, refs: list[Any], what: str, lost_ok: bool = False) -> list[Any]:
        import ray

        if not refs:
            return []
        try:
            return ray.get(refs, timeout=self.call_timeout)
        except ray.exceptions.GetTimeoutError:
            raise LaunchError(
                f"{what}: Ray workers did not answer within {self.call_timeout:g} s"
            ) from None
        except ray.exceptions.RayActorError:
            if lost_ok:
                return []
            raise

    def _abandon(self, actors: list[Any], pg: Any) -> None:
        """SIGKILL whatever the actors started, wait until reaped, end the actors and the group."""
        import ray
        from ray.util.placement_group import remove_placement_group

        if actors:
            try:
                self._get_all([a.kill.remote() for a in actors], "kill", lost_ok=True)
                deadline = time.monotonic() + self.call_timeout
                while time.monotonic() < deadline:
                    states = self._get_all(
                        [a.poll.remote(False) for a in actors], "poll", lost_ok=True
                    )
                    if all(c is not None for c, _ in states):
                        break
                    time.sleep(0.05)
            except Exception:
                pass
            for a in actors:
                try:
                    ray.kill(a, no_restart=True)
                except Exception:
                    pass
        try:
            remove_placement_group(pg)
        except Exception:
            pass

    def _release(self, job_id: int) -> None:
        job = self._jobs.pop(job_id)
        self._final[job_id] = JobPoll(job_id, tuple(job.codes), job.pids, job.progress)
        self._abandon(job.actors, job.pg)
        self._capacity.give(claims(job.specs))


def _gpu_type(node: Mapping[str, Any]) -> str:
    """The GPU type of a Ray node from its ``accelerator_type:X`` resource ("GPU" when absent)."""
    for key in node.get("Resources", {}):
        if key.startswith("accelerator_type:"):
            return key.split(":", 1)[1]
    return "GPU"


def _cause(e: BaseException) -> str:
    """The one-line reason of an exception raised in a Ray actor (its original cause)."""
    cause = getattr(e, "cause", None)
    err = cause if isinstance(cause, BaseException) else e
    return " ".join(f"{type(err).__name__}: {err}".split())[:500]


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _keep_signal_handlers:
    """Put back Python's SIGINT and SIGTERM handlers after ``ray.init`` (which installs its own
    SIGTERM handler); a no-op off the main thread."""

    def __enter__(self) -> None:
        self._saved: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                handler = signal.getsignal(sig)
                if handler is not None:
                    self._saved[sig] = handler

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
