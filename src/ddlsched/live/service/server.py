"""``ddlsched serve``: the live scheduler as a long-running service (docs/live.md, "Operating
the service"). One state directory holds everything that must survive a crash: the SQLite
store (jobs, events), ``service.json`` (cluster, policy, settings) and each job's files. The
engine runs in the main thread; the HTTP API (``httpapi``: aiohttp, an event loop in a thread
of its own, the store's calls in a small thread pool) writes the store and hands the engine
what changed through an inbox.

Start-up, in order: lock the state directory (one service per directory); end every process a
crashed predecessor recorded and that is still alive (by pid and start time); requeue the jobs
recorded running; load the jobs not ended; listen."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from ... import __version__
from ...core.cluster import Cluster
from ...core.job import JobSpec
from ...core.protocols import Elastic
from ...errors import InputError
from ...processes import HELPER_ENV, RAY_GONE_S, descendants, end_marked, process_start_time
from ...settings import Settings
from ..executor import EventLog
from ..launchers import cgroup
from ..launchers.base import end_process_group
from ..profile import to_profile_specs
from ..run import check_fits, make_launcher, resolve_launcher, to_specs
from .endpoints import DEFAULT_LISTEN, TOKEN_FILE, runtime_file
from .engine import ServiceBackend, ServiceExecutor, ServiceSimulator
from .export import SERVICE_FILE
from .history import histories, origin_of
from .httpapi import start_server
from .profiles import ServiceProfileBackend, profile_service
from .store import ENDED, JobStore, StoredJob

__all__ = ["DEFAULT_LISTEN", "ServeConfig", "Service", "parse_listen"]

#: the address file a running service keeps in its state directory
ENDPOINT_FILE = "endpoint.json"
#: the service's own helper processes (a private Ray's), ended at the next start if a
#: crash left them behind
HELPERS_FILE = "helpers.json"
#: how often the service looks for helper processes started since it last recorded them
HELPERS_REFRESH_S = 2.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (port 0: any free port) → (host, port); InputError naming --listen."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"expected HOST:PORT such as {DEFAULT_LISTEN}, got {value!r}",
                         field="--listen")  # fmt: skip
    return host, int(port)


def own_token(path: Path) -> str:
    """The service's own token in ``path`` (made at the first start: 32 random bytes, mode
    0600; kept across restarts so that clients and open status pages keep working)."""
    import secrets

    try:
        if path.exists():
            return read_token(str(path))
    except InputError:
        path.unlink(missing_ok=True)  # ours and unusable (mode, length): make a new one
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(token + "\n")
    except OSError as e:
        raise InputError(
            f"cannot write the service's token: {e.strerror}", source=str(path)
        ) from None
    return token


def read_token(path: str) -> str:
    """The access token in ``path`` (surrounding white space removed; at least 16 characters)."""
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as e:
        raise InputError(f"cannot read the token file: {e.strerror}", source=path) from None
    except UnicodeDecodeError:
        raise InputError("the token file is not UTF-8 text", source=path) from None
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise InputError(f"cannot read the token file: {e.strerror}", source=path) from None
    if mode & 0o077:
        raise InputError(
            f"the token file is readable by others (mode {mode & 0o777:o}): chmod 600 it",
            source=path,
        )
    if len(token) < 16 or any(c.isspace() for c in token):
        raise InputError("the token must be at least 16 characters, no white space",
                         source=path)  # fmt: skip
    return token


@dataclass
class ServeConfig:
    """One service, as ``ddlsched serve`` takes it."""

    state: str
    policy: str
    cluster: str | None = None
    ray_address: str | None = None
    launcher: str = "ray"  # ray | local
    listen: str = DEFAULT_LISTEN
    token_file: str | None = None
    settings: Settings = field(default_factory=Settings)
    grace: float = 10.0
    hang_timeout: float | None = 600.0
    poll_interval: float = 0.2
    max_body: int = 1 << 20
    #: free space (MB) the state directory's file system must keep: below it the service
    #: does not start, and starts no job (running ones go on) until space is back
    min_free_mb: float = 512.0
    #: no token at all (trust every local user; loopback only). Default: a token of the
    #: service's own in DIR/token unless ``token_file`` names one
    no_token: bool = False
    seed: int = 0
    #: Kueue's manifests (``--queues``): jobs are admitted by their queues' quotas first
    #: (docs/live.md "Tenants"); None: no quota layer, as before
    queues: str | None = None


class Service:
    """The running service: store, engine, HTTP server (``run`` until drained or signalled)."""

    def __init__(self, cfg: ServeConfig, say: Callable[[str], None] | None = None) -> None:
        self.cfg = cfg
        self.say = say or (lambda line: print(line, flush=True))
        self.host, self.port = parse_listen(cfg.listen)
        self.token = read_token(cfg.token_file) if cfg.token_file else None
        if self.host not in _LOOPBACK and self.token is None:
            raise InputError(
                f"listening on {self.host} (not loopback) needs --token-file: every request "
                "must then carry the token",
                field="--listen",
            )
        for name, value in (
            ("--grace", cfg.grace),
            ("--hang-timeout", cfg.hang_timeout or 0),
            ("--min-free-mb", cfg.min_free_mb),
        ):
            if value < 0:
                raise InputError("must be ≥ 0 seconds", field=name)
        self.state = Path(cfg.state)
        self.inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.draining = False
        #: False until Ray (or the local launcher), recovery and the engine are up: the HTTP
        #: API answers from the first second, with 503 "starting" until then
        self.ready = False
        self.url = ""
        self.cluster: Cluster | None = None
        self.sim: ServiceSimulator | None = None
        self.executor: ServiceExecutor | None = None
        self.store: JobStore | None = None
        #: with a policy of application-profile jobs (pollux, sia, …): the check of a
        #: submission's jobs against the profiles (``ServiceProfileBackend.check_jobs``);
        #: None: the service takes trace jobs
        self.profile_check: Callable[[list[JobSpec]], None] | None = None
        self._lock_file: IO[str] | None = None
        self._helpers: list[tuple[int, int]] | None = None  # as last recorded
        #: this service's helper mark: its pid and start time (one value per process for good)
        self.mark = f"{os.getpid()}.{process_start_time(os.getpid())}"
        self._helpers_at = 0.0
        self._disk_at = -1e9
        self._disk_low = False
        #: the quota layer (``--queues``) and the tenants' tokens (token → LocalQueue)
        self.admission: Any = None
        self.tenants: dict[str, str] = {}
        self.queues_config: Any = None
        if cfg.queues is not None:
            from ...tenancy import load_queues

            self.queues_config = load_queues(cfg.queues)

    # ------------------------------------------------------------------ start-up
    def _lock(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        f = open(self.state / "service.lock", "a+", encoding="utf-8")  # noqa: SIM115
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "?"
            f.close()
            raise InputError(
                f"another ddlsched serve (pid {holder}) uses this state directory",
                source=str(self.state),
            ) from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._lock_file = f

    def _reconcile(self, store: JobStore) -> None:
        """End the workers a crashed service left running (stop file first, so that workers
        anywhere checkpoint and exit; then by pid and start time on this machine), then
        requeue its running jobs."""
        left = store.leftover_procs()
        for j in store.jobs(["running"]):
            if j.attempt >= 0:
                stop = self.state / "jobs" / str(j.id) / f"attempt-{j.attempt}" / "stop"
                if stop.parent.is_dir():
                    stop.touch()
        ended = sum(
            end_process_group(pid, start, self.cfg.grace)
            for procs in left.values()
            for pid, start in procs
        )

        store.forget_procs(left)
        requeued = store.recover(time.time())
        if ended or requeued:
            self.say(
                f"ddlsched serve: recovered: ended {ended} process(es) left running, "
                f"requeued job(s) {requeued}"
            )
        # the cgroups of this store's dead services, and of dead batch runs, in this one's
        # cgroup: what lives on in them (daemons that escaped the workers' groups) ends now
        cgroup.collect_leftovers()

    def _record(self, cluster: Cluster, resolved: dict, engine: dict[str, object]) -> None:
        """``service.json``: what the service runs (``engine``: whether its policy resizes
        jobs and how many share a GPU — ``export`` writes them into the summary)."""
        from ...core.results import atomic_write_bytes

        cfg = self.cfg
        record = {
            "version": __version__,
            "policy": cfg.policy,
            "cluster": cfg.cluster if not cfg.cluster or not os.path.exists(cfg.cluster)
            else str(Path(cfg.cluster).resolve()),
            "cluster_name": cluster.name,
            "servers": [asdict(s) for s in cluster.servers],
            "ray_address": cfg.ray_address,
            "launcher": cfg.launcher if not cfg.ray_address else "ray-cluster",
            "seed": cfg.seed,
            **({"queues": str(Path(cfg.queues).resolve())} if cfg.queues else {}),
            "settings": cfg.settings.sectioned(),
            "resolved": resolved,
            **engine,
        }  # fmt: skip
        data = json.dumps(record, indent=2, sort_keys=True) + "\n"
        atomic_write_bytes(self.state / SERVICE_FILE, data.encode("utf-8"))

    # ------------------------------------------------------------------ the engine's side
    def _add(self, stored: StoredJob, attained: float = 0.0) -> None:
        """Hand a stored job to the engine (arrival in engine time, at the earliest now)."""
        assert self.sim is not None and self.executor is not None
        self.executor.add(stored, attained)
        if self.profile_check is not None:
            if not stored.job.app:
                raise InputError(
                    f"job {stored.id} in the state store has no 'app': {self.cfg.policy} "
                    "schedules application-profile jobs; serve this state with the policy "
                    "it was started with, or start with another --state",
                    source=str(self.state),
                )
            spec = to_profile_specs([stored.job], 1.0)[0]
        else:
            spec = to_specs([stored.job], 1.0)[0]
        arrival = stored.submitted_at + stored.job.arrival - self.sim.origin
        self.sim.add_job(replace(spec, job_id=stored.id, arrival=max(arrival, 0.0)))

    def _runnable(self, j: StoredJob) -> bool:
        """A profile service's recovered job must run on the profiles read at this start
        (they may differ from its last: another ``--set profiles``, another cluster); if it
        cannot, it is failed with the reason, and the log says so."""
        if self.profile_check is None or not j.job.app:
            return True
        try:
            self.profile_check(to_profile_specs([j.job], 1.0))
        except InputError as e:
            return self._fail_recovered(j, f"cannot run on this service's profiles: {e.message}")
        return True

    def _fail_recovered(self, j: StoredJob, why: str) -> bool:
        """Fail recovered job ``j`` with ``why`` (said in the log); False."""
        assert self.store is not None
        self.store.fail(j.id, time.time(), why)
        self.say(f"ddlsched serve: job {j.id} failed: {why}")
        return False

    def _admissible(self, j: StoredJob) -> bool:
        """With ``--queues``, whether a recovered job's queue and priority are still known
        (the queues may have changed, or the job is older than them): if not, it is failed
        with the reason, and the log says so."""
        if self.admission is None:
            return True
        try:
            self.admission.check(j.job, j.id)
        except InputError as e:
            return self._fail_recovered(
                j, f"not admissible with --queues {self.cfg.queues}: {e.message}"
            )
        return True

    def _take_inbox(self) -> None:
        """What the HTTP API committed since the last look: new jobs, cancellations,
        a drain request."""
        assert self.sim is not None and self.store is not None
        if time.monotonic() - self._helpers_at >= HELPERS_REFRESH_S:
            self._write_helpers()
        while True:
            try:
                what, arg = self.inbox.get_nowait()
            except queue.Empty:
                return
            if what == "submit":
                for job_id in arg:
                    self._add(self.store.job(job_id))
            elif what == "cancel":
                self.sim.cancel(arg)
            elif what == "drain":
                self.sim.draining = True

    # ------------------------------------------------------------------ run
    def run(self) -> int:
        """Serve until drained (exit 0) or SIGTERM/SIGINT (running jobs are stopped, to be
        requeued at the next start; exit 0)."""
        from ...api import build_simulator
        from ...core.cluster_io import load_cluster

        cfg = self.cfg
        if cfg.ray_address is None and not cfg.cluster:
            raise InputError("give --cluster (or --ray-address to use a Ray cluster's GPUs)")
        cluster = load_cluster(cfg.cluster) if cfg.cluster and not cfg.ray_address else None
        self.cfg = cfg = replace(cfg, launcher=resolve_launcher(cfg.launcher, cfg.ray_address))
        self._lock()
        if self.token is None and not cfg.no_token:
            self.token = own_token(self.state / TOKEN_FILE)
        if self.queues_config is not None and self.token is not None:
            from .tenants import tenant_tokens

            by_queue = tenant_tokens(self.state, self.queues_config, self.token)
            self.tenants = {token: lq for lq, token in by_queue.items()}
        free = self.free_mb()
        if free is not None and free < cfg.min_free_mb:
            raise InputError(
                f"only {free:.0f} MB free where the state directory is, below --min-free-mb "
                f"{cfg.min_free_mb:g}: free space first (a full disk would stop the store)",
                source=str(self.state),
            )
        self.store = store = JobStore(self.state)
        if store.migrated_from is not None:
            self.say(f"ddlsched serve: state store migrated from schema version "
                     f"{store.migrated_from} to {store.path.name}'s current one")  # fmt: skip
        launcher = None
        server = None
        stop = threading.Event()
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            server = start_server(self)  # answers 503 "starting" until ready
            self.url = f"http://{_url_host(self.host)}:{server.server_address[1]}"
            self._write_endpoint()
            self._write_runtime()
            recorded, old_mark = self._read_helpers()
            gone = sum(_end_process(pid, start) for pid, start in recorded)
            if old_mark:  # those started since the last look, reparented ones included
                gone += end_marked(old_mark)
            if gone:
                self.say(f"ddlsched serve: ended {gone} helper process(es) a crashed service left")
            os.environ[HELPER_ENV] = self.mark  # inherited by everything Ray starts from here
            # the workers' cgroups carry this store: only its next service collects them
            os.environ[cgroup.STORE_ENV] = store.identity
            self._write_helpers()  # the mark is on disk before the first helper starts
            launcher = make_launcher(cfg.launcher, cfg.ray_address, cluster)
            self.cluster = cluster = launcher.cluster()
            self._reconcile(store)
            self._write_helpers()
            log = EventLog(self.state / "events.jsonl")
            self.executor = executor = ServiceExecutor(
                launcher, store, self.state, grace=cfg.grace,
                hang_timeout=cfg.hang_timeout or None, log=log,
            )  # fmt: skip
            kind = ServiceProfileBackend if profile_service(cfg.policy) else ServiceBackend
            backend = kind(
                executor, poll_interval=cfg.poll_interval,
                launcher_name=cfg.launcher if cfg.ray_address is None else "ray-cluster",
            )  # fmt: skip
            sim = build_simulator(cluster, [], cfg.policy, seed=cfg.seed,
                                  settings=cfg.settings, backend=backend)  # fmt: skip
            assert isinstance(sim, ServiceSimulator)
            if isinstance(backend, ServiceProfileBackend):
                self.profile_check = backend.check_jobs
            if self.queues_config is not None:
                from .tenants import ServiceAdmission

                self.admission = ServiceAdmission(self.queues_config)
                sim.set_admission(self.admission)
            self.sim = sim
            policy = sim.policy
            self._record(cluster, dict(sim.resolved), {
                "elastic": bool(isinstance(policy, Elastic) and policy.elastic),
                "max_jobs_per_gpu": sim.max_jobs_per_gpu or 1,
            })  # fmt: skip
            jobs = store.jobs()
            hist = histories(jobs, store.events(), origin_of(jobs))
            for j in jobs:
                if j.state not in ENDED:
                    check_fits([j.job], cluster, "the state store")
                    if not self._admissible(j) or not self._runnable(j):
                        continue
                    ran = sum((e if e is not None else s) - s for s, e, _ in hist[j.id].segments)
                    self._add(j, attained=ran)
            sim.between = self._take_inbox
            sim.may_start = lambda: not self.disk_low()
            sim.on_policy_error = lambda text: self.say(
                f"ddlsched serve: error: the policy failed ({text}); no job starts until the "
                "service is restarted with a working policy"
            )

            def on_signal(signum: int, frame: object) -> None:
                stop.set()
                sim.stop_requested = True

            for s in previous:  # before "ready": a client that sees it may signal at once
                signal.signal(s, on_signal)
            self.ready = True
            self._write_endpoint()
            self.say(f"ddlsched serve: {cfg.policy} on {cluster.num_gpus} GPUs, state "
                     f"{self.state}, listening on {self.url}")  # fmt: skip
            if self.token is not None and self.cfg.token_file is None:
                self.say(f"ddlsched serve: status page {self.url}/?token={self.token} (the "
                         f"token is in {self.state / TOKEN_FILE}; local clients find it)")  # fmt: skip
            sim.serve()
            if stop.is_set():
                self._stop_running()
            self.say("ddlsched serve: " + ("stopped" if stop.is_set() else "drained") + "; bye")
            return 0
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            if server is not None:
                server.shutdown()
                server.server_close()
            (self.state / ENDPOINT_FILE).unlink(missing_ok=True)
            if self.url:
                runtime_file(self.url).unlink(missing_ok=True)
            if launcher is not None:
                launcher.shutdown()
            if os.environ.get(HELPER_ENV) == self.mark:
                del os.environ[HELPER_ENV]
                end_marked(self.mark, grace=RAY_GONE_S)  # what Ray's shutdown left behind
            store.close()
            if self._lock_file is not None:
                self._lock_file.close()

    def _stop_running(self) -> None:
        """SIGTERM: every running job is recorded as requeued (commit), then stopped."""
        assert self.sim is not None and self.executor is not None and self.store is not None
        now = time.time()
        for job_id, r in self.executor.runs.items():
            if r.running and r.current is not None and r.current.intent is None:
                self.store.preempt(job_id, now, "service stopped")
        self.executor.stop_all()

    def _read_helpers(self) -> tuple[list[tuple[int, int]], str | None]:
        """The helpers a previous service recorded (pid, start time) and its mark (None in a
        record from before marks)."""
        try:
            doc = json.loads((self.state / HELPERS_FILE).read_text(encoding="utf-8"))
            procs = [(int(p), int(s)) for p, s in doc["processes"]]
        except (OSError, ValueError, KeyError, TypeError):
            return [], None
        mark = doc.get("mark")
        return procs, mark if isinstance(mark, str) and mark else None

    def _write_helpers(self) -> None:
        """Record this service's helper processes by pid and start time: its descendants in
        its own session (a private Ray's head, raylet, agents and worker hosts; none with
        ``--local``), not the jobs' workers (sessions of their own: recovery stops those
        gracefully). Written when the set changes; :meth:`_take_inbox` looks again every
        ``HELPERS_REFRESH_S``, since Ray starts agents and worker hosts after ``ray.init``.
        Those started since the last look are found by the mark (:data:`HELPER_ENV` =
        :attr:`mark`) they inherit, also recorded here."""
        from ...core.results import atomic_write_bytes

        self._helpers_at = time.monotonic()
        helpers = descendants(os.getpid(), session=os.getsid(0))
        if helpers == self._helpers:
            return
        self._helpers = helpers
        doc = {"pid": os.getpid(), "mark": self.mark, "processes": [list(p) for p in helpers]}
        atomic_write_bytes(self.state / HELPERS_FILE, (json.dumps(doc) + "\n").encode())

    def _write_endpoint(self) -> None:
        from ...core.results import atomic_write_bytes

        doc = {"url": self.url, "pid": os.getpid(), "version": __version__, "ready": self.ready}
        atomic_write_bytes(self.state / ENDPOINT_FILE, (json.dumps(doc) + "\n").encode())

    def _write_runtime(self) -> None:
        """Leave the URL and token for this user's clients (``endpoints.runtime_file``, 0600
        in a 0700 directory), so ``ddlsched status`` and friends need no token option."""
        if self.token is None:
            return
        path = runtime_file(self.url)
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(path.parent, 0o700)
            doc = {
                "url": self.url,
                "token": self.token,
                "pid": os.getpid(),
                "state": str(self.state.resolve()),
            }
            fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(doc) + "\n")
            os.replace(path.with_suffix(".tmp"), path)
        except OSError as e:
            self.say(f"ddlsched serve: note: cannot leave the token for local clients in {path} "
                     f"({e.strerror}): give them --token-file {self.state / TOKEN_FILE}")  # fmt: skip

    def free_mb(self) -> float | None:
        """Free space (MB) of the state directory's file system (None where unknown); of its
        nearest existing parent before the directory is made."""
        where = self.state.absolute()
        while not where.exists() and where.parent != where:
            where = where.parent
        try:
            return shutil.disk_usage(where).free / 2**20
        except OSError:
            return None

    def disk_low(self) -> bool:
        """Whether free space is below ``--min-free-mb`` (looked at most every 2 s): the
        engine then starts no job; it says so once in the log when it begins and ends."""
        now = time.monotonic()
        if now - self._disk_at >= 2.0:
            self._disk_at = now
            free = self.free_mb()
            low = free is not None and free < self.cfg.min_free_mb
            if low != self._disk_low:
                self.say(
                    f"ddlsched serve: {free:.0f} MB free, below --min-free-mb "
                    f"{self.cfg.min_free_mb:g}: no job starts until space is freed"
                    if low
                    else "ddlsched serve: free space is back: jobs start again"
                )
            self._disk_low = low
        return self._disk_low

    # ------------------------------------------------------------------ for the HTTP API
    @property
    def max_body(self) -> int:
        """The largest request body the API reads (bytes)."""
        return self.cfg.max_body

    def host_names(self) -> set[str]:
        """The ``Host`` values a request may carry: the listening address and, on loopback,
        its usual names, each with the port (and without it for port 80)."""
        port = self.url.rsplit(":", 1)[-1] if self.url else str(self.port)
        names = {self.host, _url_host(self.host)}
        if self.host in _LOOPBACK:
            names |= {"localhost", "127.0.0.1", "[::1]"}
        out = {f"{n}:{port}" for n in names}
        if port == "80":
            out |= names
        return {n.lower() for n in out}

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request's ``Host`` names this service (DNS rebinding: a hostile name
        resolving to 127.0.0.1 is refused). On a non-loopback address (a token is required
        there) any name is accepted: the clients' names for the machine are not known."""
        if host is None:
            return False
        if self.host not in _LOOPBACK and self.token is not None:
            return True
        return host.strip().lower() in self.host_names()

    def origins(self) -> set[str]:
        """The service's own origins (its status page's requests carry one of them)."""
        return {f"http://{h}" for h in self.host_names()}

    def busy_gpus(self) -> int:
        """GPUs held by running jobs, from the store (a GPU that jobs share counts once)."""
        assert self.store is not None
        return len({g for j in self.store.jobs(["running"]) for g in j.gpus_held})

    def service_info(self) -> dict[str, object]:
        assert self.cluster is not None
        return {
            "policy": self.cfg.policy,
            "cluster": self.cluster.name,
            "gpus": self.cluster.num_gpus,
            "draining": self.draining,
            "policy_error": self.sim.policy_error if self.sim is not None else None,
            "disk_low": self._disk_low,
            "version": __version__,
            "pid": os.getpid(),
        } | ({"queues": self.cfg.queues} if self.cfg.queues is not None else {})


def _end_process(pid: int, start: int, wait: float = 5.0) -> bool:
    """SIGKILL process ``pid`` if it is still the one that started at ``start``."""
    if start <= 0 or process_start_time(pid) != start:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + wait
    while process_start_time(pid) == start and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
