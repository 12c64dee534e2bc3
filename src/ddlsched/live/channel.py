"""The per-iteration control channel of live mode: a job asks before each all-reduce, the
scheduler's communication gate answers (issue #30; docs/live.md "The communication channel").

Wang et al.'s Alg. 3 (lines 15–21) lets a ready all-reduce start only when the policy's gate
(SRSF(n), AdaDUAL's Alg. 2; ``policies/gates.py``) says so. Live, rank 0 of a job calls
``live.may_communicate(nbytes)`` before each all-reduce and ``live.done_communicating()`` after
it; :class:`CommChannel` answers from :class:`CommState`, which holds what the gate reads of the
simulator's ``TaskExecutor`` — ``server_comms`` (running all-reduces per server),
``remaining_bytes`` (Wang's fluid model: latency ``a`` first, then ``k·b + (k−1)·η`` seconds per
byte, k from the busiest server of each all-reduce), ``message_bytes`` and ``model`` — so the
very gate object the simulator uses decides, on the same state, the same way
(``tests/test_live_channel.py`` replays simulated runs through it).

Transport: a Unix stream socket (a path in the run directory), because a filesystem path
crosses network namespaces where the host's loopback does not (testbed workers run inside
``ip netns exec``). One JSON object per line each way, one connection per job process:

=========================================================  =======================================
request                                                    answer
=========================================================  =======================================
``{"op": "ask", "job": J, "iter": I, "bytes": B}``         ``{"go": true, "waited_s": W}`` once
                                                           the gate lets it start (held until then)
``{"op": "ask", …, "block": false}``                       ``{"go": true}`` or ``{"go": false,
                                                           "server": S}``: ask again later
``{"op": "done", "job": J, "iter": I}``                    ``{"ok": true}``: its all-reduce ended
anything else                                              ``{"error": "…"}`` (one line)
=========================================================  =======================================

A job the scheduler has not registered (``register``: its servers, at launch) is answered
``{"go": true, "ungated": "…"}``; a connection that closes (the process ended) ends its job's
running all-reduce, so a killed job never holds the link in the gate's eyes. Waiting asks are
re-asked, in SRSF order (the registered ``svc``, then job id), whenever an all-reduce starts or
ends or a job comes or goes — a superset of the simulator's re-ask triggers (``CommGate``'s
contract), so the answers are the same.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..perf.contention import LinearContention, advance_allreduce, allreduce_bytes_left

#: longest request line accepted (bytes); a longer one is an error and closes the connection
MAX_LINE = 4096


class Gate(Protocol):
    """What the channel needs of a ``policies.gates.CommGate``."""

    def blocker(self, ex: Any, run: Any) -> int: ...


@dataclass(eq=False)
class CommTask:
    """One job's all-reduce as the gate sees it (the fields of ``core.taskexec.Run`` that the
    gates and the fluid model read)."""

    jid: int
    servers: tuple[int, ...]
    svc: float = 0.0  # the job's remaining service: the SRSF order of waiting asks
    size: float = 0.0  # bytes of the all-reduce asked for / running
    scale: int = 1
    iteration: int = -1
    running: bool = False
    lat_left: float = 0.0
    bytes_left: float = 0.0
    per_byte: float = 0.0
    comm_last: float = 0.0


class CommState:
    """The gate's view of the running all-reduces, duck-typing ``TaskExecutor``: each start
    and end advances the all-reduces on the servers concerned and re-times them under the
    new k (``TaskExecutor.advance`` / ``_retime_comms``, Wang Eq. 5 per byte)."""

    def __init__(
        self,
        num_servers: int,
        model: LinearContention | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model or LinearContention()
        self.clock = clock
        self.server_comms: list[list[CommTask]] = [[] for _ in range(num_servers)]

    def advance(self, r: CommTask, now: float) -> None:
        """Bring a running all-reduce's remaining latency and bytes up to ``now``."""
        advance_allreduce(r, now)

    def remaining_bytes(self, r: CommTask) -> float:
        """AdaDUAL's M_old: the model's remaining bytes of a running all-reduce, now."""
        return allreduce_bytes_left(r, self.clock())

    def message_bytes(self, r: CommTask) -> float:
        """AdaDUAL's M_new: the bytes of the all-reduce asked for."""
        return r.size * r.scale

    def start(self, r: CommTask) -> None:
        """Alg. 3 line 18: ``r``'s all-reduce starts now."""
        now = self.clock()
        for s in r.servers:
            for q in self.server_comms[s]:
                self.advance(q, now)
            self.server_comms[s].append(r)
        r.running = True
        r.lat_left = self.model.a * r.scale
        r.bytes_left = r.size * r.scale
        r.comm_last = now
        self._retime(r.servers)

    def end(self, r: CommTask) -> None:
        """``r``'s all-reduce ended (the job said so, or its process went away)."""
        if not r.running:
            return
        now = self.clock()
        for s in r.servers:
            for q in self.server_comms[s]:
                self.advance(q, now)
            self.server_comms[s].remove(r)
        r.running = False
        self._retime(r.servers)

    def _retime(self, servers: Sequence[int]) -> None:
        comms = self.server_comms
        for s in servers:
            for q in comms[s]:
                k = max(len(comms[x]) for x in q.servers)
                q.per_byte = self.model.per_byte(k)


@dataclass
class _Conn:
    sock: socket.socket
    buf: bytearray = field(default_factory=bytearray)
    job: int | None = None  # the job whose all-reduce this connection runs or waits for


@dataclass
class _Ask:
    conn: _Conn
    task: CommTask
    since: float


class CommChannel:
    """The scheduler side: a Unix socket at ``path`` served by one thread, answering from
    ``gate`` (None: every all-reduce starts at once) on a :class:`CommState`.

    ``register(job, servers, svc)`` at a job's launch, ``forget(job)`` when its processes are
    gone. ``asks``/``waits`` count the asks and those that had to wait."""

    def __init__(
        self,
        path: str | Path,
        gate: Gate | None,
        num_servers: int,
        model: LinearContention | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = str(path)
        self.gate = gate
        self.state = CommState(num_servers, model, clock)
        self.asks = 0
        self.waits = 0
        self._jobs: dict[int, CommTask] = {}
        self._pending: dict[int, _Ask] = {}
        self._lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._listener: socket.socket | None = None

    # ------------------------------------------------------------------ scheduler side
    def open(self) -> CommChannel:
        """Bind the socket (mode 0600: only this user's processes may ask) and start serving."""
        Path(self.path).unlink(missing_ok=True)
        lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            lst.bind(self.path)
        finally:
            os.umask(old)
        lst.listen(64)
        lst.setblocking(False)
        self._listener = lst
        self._sel.register(lst, selectors.EVENT_READ, None)
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._thread = threading.Thread(target=self._serve, name="ddlsched-comm", daemon=True)
        self._thread.start()
        return self

    def register(self, job: int, servers: Sequence[int], svc: float = 0.0) -> None:
        """Job ``job`` runs on ``servers`` (its gang's servers, in order); ``svc``: its
        remaining service, the SRSF order among waiting asks."""
        with self._lock:
            self._jobs[job] = CommTask(job, tuple(sorted(set(servers))), svc=svc)

    def waiting(self) -> list[int]:
        """The jobs whose ask waits for the gate now, sorted."""
        with self._lock:
            return sorted(self._pending)

    def forget(self, job: int) -> None:
        """Job ``job``'s processes are gone: its running all-reduce ends, its ask is dropped."""
        with self._lock:
            task = self._jobs.pop(job, None)
            if task is not None:
                self.state.end(task)
                self._pending.pop(job, None)
        self._wake()

    def close(self) -> None:
        """Stop serving, close every connection and remove the socket file."""
        self._closing = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for key in list(self._sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._sel.close()
        self._wake_w.close()
        Path(self.path).unlink(missing_ok=True)

    def __enter__(self) -> CommChannel:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # ------------------------------------------------------------------ the serving thread
    def _serve(self) -> None:
        while not self._closing:
            for key, _ in self._sel.select(timeout=1.0):
                if key.data == "wake":
                    try:
                        self._wake_r.recv(4096)
                    except OSError:
                        pass
                    with self._lock:
                        self._run_gates()
                elif key.data is None:
                    self._accept()
                else:
                    self._read(key.data)

    def _accept(self) -> None:
        assert self._listener is not None
        try:
            sock, _ = self._listener.accept()
        except OSError:
            return
        sock.setblocking(True)
        self._sel.register(sock, selectors.EVENT_READ, _Conn(sock))

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        conn.buf += data
        while b"\n" in conn.buf:
            line, _, rest = bytes(conn.buf).partition(b"\n")
            conn.buf = bytearray(rest)
            self._handle(conn, line)
        if len(conn.buf) > MAX_LINE:
            self._send(conn, {"error": f"request longer than {MAX_LINE} bytes"})
            self._drop(conn)

    def _drop(self, conn: _Conn) -> None:
        """A connection closed: its job's running all-reduce ends (the process is gone)."""
        try:
            self._sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()
        with self._lock:
            if conn.job is not None:
                ask = self._pending.get(conn.job)
                if ask is not None and ask.conn is conn:
                    del self._pending[conn.job]
                task = self._jobs.get(conn.job)
                if task is not None:
                    self.state.end(task)
                self._run_gates()

    def _send(self, conn: _Conn, doc: dict[str, object]) -> None:
        try:
            conn.sock.sendall(json.dumps(doc, separators=(",", ":")).encode() + b"\n")
        except OSError:
            pass

    def _handle(self, conn: _Conn, line: bytes) -> None:
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("not a JSON object")
            op = req.get("op")
            job = req.get("job")
            if not isinstance(job, int) or isinstance(job, bool):
                raise ValueError("'job' must be an integer")
            it = req.get("iter", -1)
            if not isinstance(it, int) or isinstance(it, bool):
                raise ValueError("'iter' must be an integer")
            if op == "ask":
                size = req.get("bytes")
                if not isinstance(size, int | float) or isinstance(size, bool) or size < 0:
                    raise ValueError("'bytes' must be a number ≥ 0")
                self._ask(conn, job, it, float(size), bool(req.get("block", True)))
            elif op == "done":
                self._done(conn, job)
            else:
                raise ValueError(f"unknown op {op!r} (ask, done)")
        except ValueError as e:
            self._send(conn, {"error": str(e)})

    def _ask(self, conn: _Conn, job: int, it: int, size: float, block: bool) -> None:
        with self._lock:
            self.asks += 1
            task = self._jobs.get(job)
            if task is None:
                self._send(conn, {"go": True, "ungated": f"job {job} is not registered"})
                return
            conn.job = job
            if task.running:  # a new ask ends the previous all-reduce (no done was sent)
                self.state.end(task)
            task.size, task.iteration = size, it
            block_server = -1 if self.gate is None else self.gate.blocker(self.state, task)
            if block_server < 0:
                self.state.start(task)
                self._send(conn, {"go": True, "waited_s": 0.0})
                self._run_gates()
            elif not block:
                self._send(conn, {"go": False, "server": block_server})
            else:
                self.waits += 1
                self._pending[job] = _Ask(conn, task, self.state.clock())

    def _done(self, conn: _Conn, job: int) -> None:
        with self._lock:
            task = self._jobs.get(job)
            if task is not None:
                self.state.end(task)
            self._send(conn, {"ok": True})
            self._run_gates()

    def _run_gates(self) -> None:
        """Alg. 3 lines 15–21 over the waiting asks, in SRSF order; after a start, ask the
        others again (a start can turn AdaDUAL's "no" into a "yes"), until nothing starts."""
        gate = self.gate
        started = True
        while started and self._pending:
            started = False
            for job, ask in sorted(self._pending.items(), key=lambda kv: (kv[1].task.svc, kv[0])):
                task = ask.task
                if self._jobs.get(job) is not task:
                    del self._pending[job]
                    continue
                if gate is not None and gate.blocker(self.state, task) >= 0:
                    continue
                del self._pending[job]
                self.state.start(task)
                waited = self.state.clock() - ask.since
                self._send(ask.conn, {"go": True, "waited_s": round(waited, 6)})
                started = True
                break
