"""Live jobs on Ray: the launcher reserves each server's GPUs in Ray once (one placement group
bundle per server, held while it runs) and starts ``hosts_per_server`` ``WorkerHost`` actors per
server (default 1) in those bundles; a launch asks the hosts of the chosen servers to start the
gang's processes (one round of calls: no actor and no placement group is made per launch, which
cost ≈ 1 s per worker on 2 cores, plus up to 1 s of Ray's placement retry when the GPUs had just
been freed). Which GPUs a gang may use is the launcher's own bookkeeping (``Capacity``): a gang
fits or is refused at once.

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
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...core.cluster import Cluster, Server
from ...processes import keep_signals_through_ray_init
from . import cgroup
from .base import (
    LOST,
    Capacity,
    JobPoll,
    LauncherBase,
    LaunchError,
    WorkerProcess,
    WorkerSpec,
    become_subreaper,
    check_gang,
    claims,
    free_port,
    sweep_strays,
    with_job_gpus,
    worker_env,
)

#: Ray resource name of server ``i``'s logical GPUs in a local instance
RESOURCE = "ddlsched_s{}"


Key = tuple[int, int]  # (launch number, rank): one worker process on a host


class WorkerHost:
    """The Ray actor that starts and watches workers' processes on one server
    (``ray.remote(num_cpus=0)``; ``hosts_per_server`` of them, started with the launcher and
    reused by every launch). Every method returns at once; waiting is the launcher's. A worker is named by its
    ``Key``; one the host does not know (it was replaced) reads as ``LOST``."""

    def __init__(self) -> None:
        become_subreaper()  # this actor process owns its workers
        self._procs: dict[Key, WorkerProcess] = {}

    def ready(self) -> int:
        return os.getpid()

    def endpoint(self, loopback: bool) -> tuple[str, int]:
        """MASTER_ADDR and a free MASTER_PORT on this node."""
        if loopback:
            return "127.0.0.1", free_port("127.0.0.1")
        import ray

        return ray.util.get_node_ip_address(), free_port("0.0.0.0")

    def start(
        self,
        starts: list[tuple[Key, WorkerSpec, str | None]],
        addr: str,
        port: int,
        base_env: Mapping[str, str] | None,
    ) -> list[int]:
        """Start workers (spec, CUDA_VISIBLE_DEVICES); their pids. ``base_env`` None: this
        node's environment less Ray's own. A worker that cannot start raises; those started
        before it are kept (the launcher kills them by key)."""
        if base_env is None:
            base_env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith("RAY_") and k != "CUDA_VISIBLE_DEVICES"
            }
        pids = []
        for key, spec, cuda in starts:
            proc = WorkerProcess(spec, worker_env(spec, addr, port, base_env, cuda))
            self._procs[key] = proc
            pids.append(proc.start())
        return pids

    def poll(self, keys: list[Key], progress: list[Key]) -> list[tuple[int | None, dict | None]]:
        """Exit code of each worker (None: running), with its latest progress record for
        those in ``progress``."""
        want = set(progress)
        out: list[tuple[int | None, dict | None]] = []
        for key in keys:
            proc = self._procs.get(key)
            if proc is None or proc.pid < 0:
                out.append((LOST, None))
            else:
                out.append((proc.poll(), proc.progress() if key in want else None))
        sweep_strays()  # what ended workers on this host left behind
        return out

    def terminate(self, keys: list[Key]) -> None:
        for key in keys:
            if key in self._procs and self._procs[key].pid > 0:
                self._procs[key].terminate()

    def kill(self, keys: list[Key]) -> None:
        for key in keys:
            if key in self._procs and self._procs[key].pid > 0:
                self._procs[key].kill()

    def close(self, timeout: float) -> bool:
        """Before the host is killed: remove its workers' cgroups and its own once empty
        (waits up to ``timeout``); whether all went."""
        sweep_strays()
        return cgroup.close(timeout)

    def forget(self, keys: list[Key]) -> None:
        """Drop exited workers (reaped by ``poll``)."""
        for key in keys:
            proc = self._procs.get(key)
            if proc is not None and (proc.pid < 0 or proc.poll() is not None):
                del self._procs[key]


_ACTOR: list[Any] = []


def _actor_class() -> Any:
    """``WorkerHost`` as a Ray actor class (made once, on first use)."""
    if not _ACTOR:
        import ray

        _ACTOR.append(ray.remote(num_cpus=0)(WorkerHost))
    return _ACTOR[0]


@dataclass(eq=False)
class _Host:
    """One ``WorkerHost`` actor as the launcher sees it."""

    server: int
    actor: Any
    load: int = 0  # workers of running jobs it holds
    dead: bool = False


@dataclass
class _Job:
    specs: list[WorkerSpec]
    hosts: list[_Host]  # by rank
    keys: list[Key]  # by rank
    pids: tuple[int, ...]
    codes: list[int | None]
    progress: dict | None = None

    def by_host(self, ranks: Iterable[int]) -> dict[_Host, list[int]]:
        out: dict[_Host, list[int]] = {}
        for r in ranks:
            out.setdefault(self.hosts[r], []).append(r)
        return out

    def running_ranks(self) -> list[int]:
        return [r for r, c in enumerate(self.codes) if c is None]


class RayLauncher(LauncherBase):
    """The ``Launcher`` on Ray (see the module docstring). Make one with ``local`` or
    ``connect``; ``shutdown`` (or ``with``) stops every job, the hosts, and, when it started
    Ray, Ray. Construction reserves every server's GPUs in Ray and starts ``hosts_per_server``
    worker hosts per server (each ≈ 1 s of a core; they start in parallel); it raises
    ``LaunchError`` (leaving nothing) when Ray cannot do that within ``ready_timeout``."""

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
        hosts_per_server: int = 1,
    ) -> None:
        if hosts_per_server < 1:
            raise ValueError(f"hosts_per_server must be ≥ 1, not {hosts_per_server}")
        self._cluster = cluster
        self._bundle_of = bundle_of
        self._loopback = loopback
        self._started_ray = started_ray
        self._cuda = cuda
        #: seconds Ray may take to reserve the GPUs and start the hosts (construction)
        self.ready_timeout = ready_timeout
        #: seconds any call to the worker hosts may take
        self.call_timeout = call_timeout
        self._capacity = Capacity(cluster)
        self._jobs: dict[int, _Job] = {}
        self._final: dict[int, JobPoll] = {}
        self._closed = False
        self._seq = 0
        self._pending: list[Any] = []  # refs of calls not awaited (stop, kill, forget)
        self._hosts: list[list[_Host]] = [[] for _ in cluster.servers]
        self._pg: Any = None
        try:
            self._reserve(hosts_per_server)
        except BaseException:
            self._closed = True
            self._end_hosts()
            if started_ray:
                import ray

                ray.shutdown()
            raise

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
        hosts_per_server: int = 1,
    ) -> RayLauncher:
        """A private Ray instance on this machine with each server's GPUs as the logical
        resource ``ddlsched_s<i>`` (workers take no CPU, so ``num_cpus`` limits nothing)."""
        import ray

        if ray.is_initialized():
            raise LaunchError("Ray is already running in this process; use RayLauncher.connect")
        resources = {RESOURCE.format(i): float(s.num_gpus) for i, s in enumerate(cluster.servers)}
        with keep_signals_through_ray_init():
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
            hosts_per_server=hosts_per_server,
        )

    @classmethod
    def connect(
        cls,
        address: str = "auto",
        *,
        ready_timeout: float = 60.0,
        call_timeout: float = 30.0,
        hosts_per_server: int = 1,
    ) -> RayLauncher:
        """Join the Ray cluster at ``address``: one server per alive node with GPUs (in order of
        node IP, then node id), its real ``GPU`` resource, CUDA_VISIBLE_DEVICES set to the local
        indices of the GPUs the policy chose. The launcher holds all their GPUs in Ray while it
        runs (other Ray users cannot take them)."""
        import ray

        started = not ray.is_initialized()
        if started:
            with keep_signals_through_ray_init():
                try:
                    ray.init(address=address, log_to_driver=False, configure_logging=False)
                except (ConnectionError, ValueError, RuntimeError) as e:
                    raise LaunchError(f"cannot reach Ray at {address}: {e}") from e
        found = nodes_cluster(ray.nodes())
        if found is None:
            if started:
                ray.shutdown()
            raise LaunchError(f"the Ray cluster at {address} has no alive node with GPUs")
        cluster, ips = found

        def bundle(server: int, gpus: float) -> dict[str, float]:
            return {"GPU": gpus, f"node:{ips[server]}": 0.001}

        return cls(
            cluster,
            bundle,
            loopback=False,
            started_ray=started,
            cuda=True,
            ready_timeout=ready_timeout,
            call_timeout=call_timeout,
            hosts_per_server=hosts_per_server,
        )

    def _reserve(self, hosts_per_server: int) -> None:
        """One placement group with a bundle per server holding all its GPUs, then the hosts
        (in their server's bundle), all started at once and awaited together."""
        import ray
        from ray.util.placement_group import placement_group

        bundles = [
            self._bundle_of(i, float(s.num_gpus)) for i, s in enumerate(self._cluster.servers)
        ]
        self._pg = placement_group(bundles, strategy="PACK")
        try:
            ray.get(self._pg.ready(), timeout=self.ready_timeout)
        except ray.exceptions.GetTimeoutError:
            raise LaunchError(
                f"Ray did not reserve the GPUs of the {len(bundles)} servers within "
                f"{self.ready_timeout:g} s (are other Ray users holding them?)"
            ) from None
        for server in range(self._cluster.num_servers):
            for _ in range(hosts_per_server):
                self._new_host(server)
        hosts = [h for pool in self._hosts for h in pool]
        ready, _ = ray.wait(
            [h.actor.ready.remote() for h in hosts],
            num_returns=len(hosts),
            timeout=self.ready_timeout,
        )
        if len(ready) < len(hosts):
            raise LaunchError(f"Ray did not start the worker hosts within {self.ready_timeout:g} s")
        try:
            ray.get(ready)
        except ray.exceptions.RayError as e:
            raise LaunchError(f"cannot start the worker hosts: {_cause(e)}") from e

    def _new_host(self, server: int) -> _Host:
        """A new host on ``server`` (its creation is not awaited: calls to it wait for it)."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        strategy = PlacementGroupSchedulingStrategy(self._pg, placement_group_bundle_index=server)
        actor = (
            _actor_class()
            .options(num_cpus=0, scheduling_strategy=strategy, max_restarts=0)
            .remote()
        )
        host = _Host(server, actor)
        self._hosts[server].append(host)
        return host

    # ------------------------------------------------------------------ the protocol
    def launch(self, job_id: int, workers: list[WorkerSpec]) -> None:
        """Start the gang on the servers' hosts, or raise ``LaunchError`` with nothing of it
        left (does not fit in what this launcher has handed out, a command that cannot start, a
        host that died). One round of calls: rank 0's endpoint (Ray clusters only; locally the
        port is picked here), then every host's ``start`` at once, awaited together."""
        import ray

        if self._closed:
            raise LaunchError("the launcher is shut down")
        check_gang(self._cluster, job_id, workers)
        if job_id in self._jobs:
            raise LaunchError(f"job {job_id} is already running")
        workers = with_job_gpus(workers)
        want = claims(workers)
        self._capacity.take(job_id, want)
        self._drain()
        self._seq += 1
        keys = [(self._seq, w.rank) for w in workers]
        hosts = self._assign(workers)
        job = _Job(list(workers), hosts, keys, (), [None] * len(workers))
        try:
            if self._loopback:
                addr, port = "127.0.0.1", free_port("127.0.0.1")
            else:
                addr, port = self._get_all(
                    [hosts[0].actor.endpoint.remote(False)], f"job {job_id}: endpoint"
                )[0]
            base = dict(os.environ) if self._loopback else None
            groups = job.by_host(range(len(workers)))
            refs = [
                h.actor.start.remote(
                    [(keys[r], workers[r], self._cuda_of(workers[r])) for r in ranks],
                    addr,
                    port,
                    base,
                )
                for h, ranks in groups.items()
            ]
            answers = self._get_all(refs, f"job {job_id}: start")
            pids = [-1] * len(workers)
            for ranks, got in zip(groups.values(), answers, strict=True):
                for r, pid in zip(ranks, got, strict=True):
                    pids[r] = pid
        except BaseException as e:
            self._abandon(job)
            self._capacity.give(want)
            if isinstance(e, ray.exceptions.RayActorError):
                for h in set(hosts):
                    self._check_host(h)
            if isinstance(e, LaunchError) or not isinstance(e, Exception):
                raise
            raise LaunchError(f"job {job_id}: cannot start: {_cause(e)}") from e
        job.pids = tuple(pids)
        self._jobs[job_id] = job
        self._final.pop(job_id, None)

    def poll(self, job_id: int) -> JobPoll:
        """Exit codes and rank 0's progress, gathered from the job's hosts in one round."""
        return self.poll_many([job_id])[job_id]

    def poll_many(self, job_ids: Iterable[int]) -> dict[int, JobPoll]:
        """``poll`` of several jobs in one round of calls (one per host involved); a job never
        launched raises ``KeyError``."""
        ids = list(job_ids)
        for j in ids:
            self._known(j)
        self._drain()
        jobs = {j: self._jobs[j] for j in ids if j in self._jobs}
        self._refresh(list(jobs.values()))
        for j, job in jobs.items():
            if all(c is not None for c in job.codes):
                self._release(j)
        out = {}
        for j in ids:
            if j in self._jobs:
                job = self._jobs[j]
                out[j] = JobPoll(j, tuple(job.codes), job.pids, job.progress)
            else:
                out[j] = self._final[j]
        return out

    def request_stop(self, job_id: int) -> None:
        """Stop file and SIGTERM to each running worker's group, sent to the hosts without
        waiting (the next ``poll`` runs after it on every host)."""
        self._send(job_id, "terminate")

    def kill(self, job_id: int) -> None:
        """SIGKILL to each running worker's group, sent without waiting (``poll`` reaps)."""
        self._send(job_id, "kill")

    def shutdown(self, grace: float = 2.0) -> None:
        """Stop every job, end the hosts and the reservation, and Ray when this launcher
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
            self._end_hosts()
        finally:
            if self._started_ray:
                import ray

                ray.shutdown()

    # ------------------------------------------------------------------ internals
    def _cuda_of(self, w: WorkerSpec) -> str | None:
        if not self._cuda:
            return None
        return ",".join(str(self._cluster.gpu_local[g]) for g in w.gpus)

    def _assign(self, workers: list[WorkerSpec]) -> list[_Host]:
        """A host per worker: the least loaded alive host of its server (a new one when all
        died), loads counted as the gang is placed."""
        out = []
        for w in workers:
            alive = [h for h in self._hosts[w.server] if not h.dead]
            host = min(alive, key=lambda h: h.load) if alive else self._new_host(w.server)
            host.load += 1
            out.append(host)
        return out

    def _unload(self, job: _Job) -> None:
        for h in job.hosts:
            h.load -= 1

    def _check_host(self, host: _Host) -> None:
        """Mark ``host`` dead if Ray says so, and start its replacement."""
        import ray

        if host.dead:
            return
        try:
            ray.get(host.actor.ready.remote(), timeout=self.call_timeout)
            return
        except ray.exceptions.GetTimeoutError:
            return
        except ray.exceptions.RayError:
            pass
        self._lost(host)

    def _lost(self, host: _Host) -> None:
        if not host.dead:
            host.dead = True
            self._hosts[host.server].remove(host)
            self._new_host(host.server)

    def _send(self, job_id: int, method: str) -> None:
        if not self._known(job_id):
            return
        job = self._jobs[job_id]
        for h, ranks in job.by_host(job.running_ranks()).items():
            if not h.dead:
                self._pending.append(getattr(h.actor, method).remote([job.keys[r] for r in ranks]))

    def _drain(self) -> None:
        """Collect the answers of calls sent without waiting (errors: a host gone, which the
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
        """Update exit codes (and rank 0's progress) of ``jobs`` in one round: one call per
        host, about all of its workers of these jobs."""
        import ray

        asks: dict[_Host, list[tuple[_Job, int]]] = {}
        for job in jobs:
            for r in range(len(job.codes)):
                if job.codes[r] is None or r == 0:
                    asks.setdefault(job.hosts[r], []).append((job, r))
        calls = []
        for h, items in asks.items():
            if h.dead:
                for job, r in items:
                    if job.codes[r] is None:
                        job.codes[r] = LOST
                continue
            progress = [job.keys[0] for job, r in items if r == 0]
            ref = h.actor.poll.remote([job.keys[r] for job, r in items], progress)
            calls.append((h, items, ref))
        if not calls:
            return
        refs = [ref for _, _, ref in calls]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.call_timeout)
        if len(ready) < len(refs):
            raise LaunchError(f"Ray workers did not answer within {self.call_timeout:g} s")
        for h, items, ref in calls:
            try:
                answers = ray.get(ref)
            except ray.exceptions.RayError:
                answers = [(LOST, None)] * len(items)
                self._lost(h)
            for (job, rank), (code, progress) in zip(items, answers, strict=True):
                if job.codes[rank] is None:
                    job.codes[rank] = code
                if rank == 0 and progress is not None:
                    job.progress = progress

    def _get_all(self, refs: list[Any], what: str) -> list[Any]:
        import ray

        if not refs:
            return []
        try:
            return ray.get(refs, timeout=self.call_timeout)
        except ray.exceptions.GetTimeoutError:
            raise LaunchError(
                f"{what}: Ray workers did not answer within {self.call_timeout:g} s"
            ) from None

    def _abandon(self, job: _Job) -> None:
        """A launch that failed: SIGKILL whatever its hosts started, wait until reaped (up to
        ``call_timeout``), forget it, give the hosts' load back."""
        import ray

        groups = {
            h: [job.keys[r] for r in ranks]
            for h, ranks in job.by_host(range(len(job.keys))).items()
        }
        try:
            ray.wait(
                [h.actor.kill.remote(keys) for h, keys in groups.items()],
                num_returns=len(groups),
                timeout=self.call_timeout,
            )
            deadline = time.monotonic() + self.call_timeout
            while time.monotonic() < deadline:
                refs = [h.actor.poll.remote(keys, []) for h, keys in groups.items()]
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.call_timeout)
                states = []
                for ref in ready:
                    try:
                        states.extend(ray.get(ref))
                    except ray.exceptions.RayError:
                        pass
                if len(ready) == len(refs) and all(c is not None for c, _ in states):
                    break
                time.sleep(0.05)
            for h, keys in groups.items():
                self._pending.append(h.actor.forget.remote(keys))
        except Exception:
            pass
        self._unload(job)

    def _release(self, job_id: int) -> None:
        """All of ``job_id``'s workers exited: record its last state, tell the hosts to forget
        them (not awaited), give its GPUs back."""
        job = self._jobs.pop(job_id)
        self._final[job_id] = JobPoll(job_id, tuple(job.codes), job.pids, job.progress)
        for h, ranks in job.by_host(range(len(job.keys))).items():
            if not h.dead:
                self._pending.append(h.actor.forget.remote([job.keys[r] for r in ranks]))
        self._unload(job)
        self._capacity.give(claims(job.specs))

    def _end_hosts(self) -> None:
        """Kill every host and drop the reservation (at shutdown, once the jobs are stopped)."""
        import ray
        from ray.util.placement_group import remove_placement_group

        closing = [h.actor.close.remote(2.0) for pool in self._hosts for h in pool if not h.dead]
        if closing:
            try:
                ray.wait(closing, num_returns=len(closing), timeout=self.call_timeout)
            except Exception:
                pass
        for pool in self._hosts:
            for h in pool:
                try:
                    ray.kill(h.actor, no_restart=True)
                except Exception:
                    pass
        self._hosts = [[] for _ in self._cluster.servers]
        if self._pg is not None:
            try:
                remove_placement_group(self._pg)
            except Exception:
                pass
            self._pg = None


def nodes_cluster(nodes: list[Mapping[str, Any]]) -> tuple[Cluster, list[str]] | None:
    """The cluster of a Ray cluster's nodes (``ray.nodes()``): one server per alive node with
    GPUs, in order of node IP, then node id, with its ``GPU`` count and its accelerator type;
    and the nodes' IPs. Nodes that name their accelerator (``accelerator_type:X``) declare GPU
    types, so a policy that knows types (Sia, per-type profiles) sees them as it sees a cluster
    file's ``[gpu_types]``. None: no alive node has a GPU."""
    alive = sorted(
        (n for n in nodes if n.get("Alive") and n["Resources"].get("GPU", 0) >= 1),
        key=lambda n: (n["NodeManagerAddress"], n["NodeID"]),
    )
    if not alive:
        return None
    servers = tuple(
        Server(num_gpus=int(n["Resources"]["GPU"]), gpu_type=_gpu_type(n)) for n in alive
    )
    typed = any(s.gpu_type != "GPU" for s in servers) or None
    cluster = Cluster(servers=servers, name="ray", typed=typed)
    return cluster, [n["NodeManagerAddress"] for n in alive]


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
