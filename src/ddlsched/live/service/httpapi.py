"""The service's HTTP/JSON API (docs/live.md, "The service's API"), on aiohttp's low-level
server (``aiohttp.web.Server``) in an event loop of its own thread; the routes' blocking work
(the store, a job file's checks) runs in a small thread pool, never on the loop. Every answer
is JSON (``/`` is the status page, ``/metrics`` the Prometheus text of ``prometheus_client``);
every error is ``{"error": "one line"}`` with its status: 400 bad request or job (a request
aiohttp's parser refuses too), 401 no or wrong token, 403 another origin or Host (or a CORS
preflight), 404 unknown path or job, 405 wrong method, 408 a body that does not arrive in
time, 409 illegal state change, 411 no length, 413 body too large, 415 a body that is not
JSON, 503 draining, still starting (the API listens from the first second; the launcher,
recovery and engine come up behind it) or too many connections. A request never stops the
service.

What aiohttp does by configuration: the HTTP parsing (llhttp, strict: a malformed request
line, header or ``Content-Length`` is a 400), the limits on a request line and a header
(``max_line_size``, ``max_field_size``), the body limit (``client_max_size``), the cut-off of
a connection that does not finish its headers or stays idle (``keepalive_timeout``, counted
from the connection's start). What is kept here, small: the web-safety checks and the token
(``_web_safe``, ``_authorised``), the cap on connections (``_Server``: one over is answered
503 at once), the time a body may take (``_read_body``) and JSON for aiohttp's own errors
(``_Protocol.handle_error``)."""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from ...errors import InputError, one_line
from ..jobfile import check_commands, jobs_from_records
from ..run import check_fits
from .history import METRICS_CONTENT_TYPE, exposition, metrics_registry, overview
from .store import STATES, StateError, StoredJob, UnknownJobError

if TYPE_CHECKING:  # pragma: no cover
    import queue

    from multidict import CIMultiDictProxy

    from ...core.cluster import Cluster
    from .store import JobStore


class ServiceView(Protocol):
    """What the API sees of the running service (``server.Service`` is one): the HTTP layer
    reads the store and posts to the loop's inbox; it never calls up into the service."""

    host: str
    port: int
    url: str
    token: str | None
    ready: bool
    draining: bool
    store: JobStore | None
    cluster: Cluster | None
    executor: Any
    inbox: queue.Queue[tuple[str, Any]]
    #: a service of application-profile jobs: checks a submission's jobs; None: trace jobs
    profile_check: Callable[[list[Any]], None] | None

    @property
    def max_body(self) -> int: ...

    def service_info(self) -> dict[str, object]: ...

    def busy_gpus(self) -> int: ...

    def host_allowed(self, host: str | None) -> bool: ...

    def origins(self) -> set[str]: ...


__all__ = ["ApiServer", "ServiceView", "job_record", "start_server"]

#: seconds a connection may take to send a request's headers (counted from the connection's
#: start, or from the end of the previous answer) and then its body: a client that never
#: finishes is cut off (aiohttp's ``keepalive_timeout``; ``DDLSCHED_HTTP_TIMEOUT_S`` in the
#: service's environment changes it)
REQUEST_TIMEOUT_S = 10.0
#: connections served at once; more are answered 503 and closed at once
MAX_CONNECTIONS = 128
#: threads that run the routes' blocking work (the store, a submission's checks)
WORKERS = 4
#: the ``Server`` header, as the standard library's server sent it
SERVER_HEADER = f"ddlsched Python/{sys.version.split()[0]}"
_TOO_MANY_BODY = b'{"error": "too many connections; try again"}\n'
_TOO_MANY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: "
    + str(len(_TOO_MANY_BODY)).encode()
    + b"\r\n\r\n"
    + _TOO_MANY_BODY
)

#: (status, body, Content-Type, extra headers): what a route answers
Answer = tuple[int, bytes, str, dict[str, str]]


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None,
                 close: bool = False) -> None:  # fmt: skip
        super().__init__(message)
        self.status = status
        self.headers = headers or {}
        self.close = close  # the unread body must not be parsed as a request


def job_record(j: StoredJob) -> dict[str, Any]:
    """A stored job as the API shows it."""
    return {
        "id": j.id,
        "state": j.state,
        "command": list(j.job.command),
        "gpus": j.job.gpus,
        "submitted_at": j.submitted_at,
        "arrival": j.job.arrival,
        "duration": j.job.duration,
        "max_restarts": j.job.max_restarts,
        "attempt": j.attempt,
        "failures": j.failures,
        "gpus_held": list(j.gpus_held),
        "reason": j.reason,
        "finished_at": j.finished_at,
        "name": j.job.name,
        "queue": j.job.queue or None,
        "priority": j.job.priority or None,
    }


def _job_id(text: str) -> int:
    if not text.isdigit() or len(text) > 18:
        raise _Refused(404, f"no job {text!r}: job ids are positive integers")
    return int(text)


def _json(status: int, doc: object, headers: dict[str, str] | None = None) -> Answer:
    body = (json.dumps(doc, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
    return status, body, "application/json", headers or {}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Answer:
    return _json(status, {"error": one_line(message)}, headers)


def _response(answer: Answer, close: bool = False) -> web.Response:
    status, body, ctype, extra = answer
    headers = {"Content-Type": ctype, "Cache-Control": "no-store", "Server": SERVER_HEADER}
    resp = web.Response(status=status, body=body, headers={**headers, **extra})
    if close:
        resp.force_close()
    return resp


# ---------------------------------------------------------------------- checks (on the loop)
def _web_safe(svc: ServiceView, method: str, headers: CIMultiDictProxy[str]) -> None:
    """What a hostile web page could send (docs/live.md "Security model"): a CORS preflight
    (refused: no other origin may call), another ``Origin``, a ``Host`` that is not an
    address this service listens on (DNS rebinding), a write whose body is not
    ``application/json`` (a form or a no-cors ``fetch`` cannot send that type)."""
    if method == "OPTIONS":
        raise _Refused(403, "cross-origin requests are not accepted (no CORS)")
    host = headers.get("Host")
    if not svc.host_allowed(host):
        raise _Refused(403, f"Host {str(host)[:100]!r} is not an address this service "
                            "listens on")  # fmt: skip
    origin = headers.get("Origin")
    if origin is not None and origin not in svc.origins():
        raise _Refused(403, f"requests from origin {origin[:100]!r} are refused")
    if headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
        raise _Refused(403, "cross-site requests are refused")
    if method in ("POST", "PUT", "PATCH"):
        ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise _Refused(415, "a request body must be JSON (Content-Type: "
                                "application/json)")  # fmt: skip


#: who a request is: ``ADMIN`` (the service's token, or no token at all), or a tenant (the
#: name of the LocalQueue whose token it carries); None: refused
ADMIN = ""


def _authorised(svc: ServiceView, method: str, path: str, query: dict[str, list[str]],
                headers: CIMultiDictProxy[str]) -> str | None:  # fmt: skip
    """Who sends the request: the token (when the service has one) in ``Authorization:
    Bearer TOKEN`` (the scheme in any case, RFC 7235) is the admin's (:data:`ADMIN`) or a
    LocalQueue's (its name; ``serve --queues``); None: no or a wrong token. ``?token=`` only
    opens the read-only status page. Every token is compared, each in constant time."""
    token = svc.token
    if token is None:
        return ADMIN
    scheme, _, given = headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer":
        given = ""
        if method in ("GET", "HEAD") and path == "/":
            given = (query.get("token") or [""])[0]
    raw = given.strip().encode("utf-8", "replace")
    who = ADMIN if hmac.compare_digest(raw, token.encode("utf-8")) else None
    for tenant_token, queue in getattr(svc, "tenants", {}).items():
        if hmac.compare_digest(raw, tenant_token.encode("utf-8")):
            who = queue
    return who


def _own(who: str, j: StoredJob) -> None:
    """A tenant acts on its own LocalQueue's jobs only (403, one line)."""
    if who != ADMIN and j.job.queue != who:
        raise _Refused(403, f"job {j.id} is not in LocalQueue {who!r}: a tenant's token "
                            "reaches its own queue's jobs only")  # fmt: skip


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise _Refused(400, "the request body is not UTF-8 text") from None
    except ValueError as e:
        raise _Refused(400, f"the request body is not valid JSON: {e}") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


# ---------------------------------------------------------------------- routes (in the pool)
def _jobs(svc: ServiceView, method: str, path: str, query: dict[str, list[str]],
          raw: bytes | None, who: str = ADMIN) -> Answer:  # fmt: skip
    store = svc.store
    assert store is not None
    if method == "GET":
        states = None
        if "state" in query:
            states = [s for v in query["state"] for s in v.split(",") if s]
            bad = [s for s in states if s not in STATES]
            if bad:
                raise _Refused(400, f"unknown state {bad[0]!r}; valid: {', '.join(STATES)}")
        mine = [j for j in store.jobs(states) if who == ADMIN or j.job.queue == who]
        return _json(200, {"jobs": [job_record(j) for j in mine]})
    assert raw is not None
    doc = _decode(raw)
    if svc.draining:
        raise _Refused(503, "the service is draining: it accepts no new jobs")
    records = doc.get("jobs", doc) if isinstance(doc, dict) and "jobs" in doc else doc
    jobs = jobs_from_records(records, "request")
    check_commands(jobs, "request")
    assert svc.cluster is not None
    profile_check = getattr(svc, "profile_check", None)
    for j in jobs:
        if j.app is not None and profile_check is None:
            raise InputError(f"job {j.job_id}: the service's policy schedules jobs without an "
                             "application profile ('app'); leave it out (serve pollux, sia, "
                             "sjf-ffs or sjf-bsbf takes jobs with one)", source="request",
                             field="app")  # fmt: skip
        if j.app is None and profile_check is not None:
            raise InputError(f"job {j.job_id}: the service's policy schedules jobs with an "
                             "application profile: give each job an 'app' and a 'batch_size'",
                             source="request", field="app")  # fmt: skip
        if j.iterations is not None:
            raise InputError(f"job {j.job_id}: the service schedules jobs without a model "
                             "(iterations, size_mb, t_forward): the planners that read it "
                             "plan the whole workload ahead; run them with `ddlsched live`",
                             source="request", field="iterations")  # fmt: skip
    check_fits(jobs, svc.cluster, "request")
    if profile_check is not None:
        from ..profile import to_profile_specs

        profile_check(to_profile_specs(jobs, 1.0))
    jobs = _queued(svc, jobs, who)
    ids = store.submit(jobs, time.time())
    svc.inbox.put(("submit", ids))
    return _json(201, {"ids": ids})


def _queued(svc: ServiceView, jobs: list[Any], who: str) -> list[Any]:
    """The jobs' queues and priorities checked (``serve --queues``; without it a job may
    name neither); a tenant's jobs go to its LocalQueue, and to no other (403)."""
    from .tenants import with_tenant_queue

    admission = getattr(svc, "admission", None)
    out = []
    for index, j in enumerate(jobs):
        if admission is None:
            for name in ("queue", "priority"):
                if getattr(j, name):
                    raise InputError(f"job {index}: the service runs without --queues; leave "
                                     f"{name} out", source="request", field=name)  # fmt: skip
            out.append(j)
            continue
        if who != ADMIN:
            j = with_tenant_queue(j, who)
            if j.queue != who:
                raise _Refused(403, f"job {index}: a tenant of LocalQueue {who!r} submits to "
                                    f"it only, not to {j.queue!r}")  # fmt: skip
        out.append(admission.check(j, index))
    return out


def _job(svc: ServiceView, method: str, path: str, query: dict[str, list[str]],
         raw: bytes | None, who: str = ADMIN) -> Answer:  # fmt: skip
    store = svc.store
    assert store is not None
    parts = path.rstrip("/").split("/")
    why = len(parts) == 4 and parts[3] == "why"
    job_id = _job_id(parts[2] if why else parts[-1])
    _own(who, store.job(job_id))
    if why:  # /jobs/ID/why
        from .tenants import explain

        policy = str(svc.service_info().get("policy", "?"))
        total = svc.cluster.num_gpus if svc.cluster is not None else None
        free = (total - svc.busy_gpus(), total) if total is not None else None
        return _json(200, {"id": job_id,
                           "why": explain(getattr(svc, "admission", None), store.job(job_id),
                                          policy, free)})  # fmt: skip
    if method == "GET":
        doc = job_record(store.job(job_id))
        doc["events"] = [{"t": e.t, "event": e.event, **e.detail} for e in store.job_events(job_id)]
        return _json(200, doc)
    if not store.cancel(job_id, time.time()):
        raise _Refused(409, f"job {job_id} already ended ({store.job(job_id).state})")
    svc.inbox.put(("cancel", job_id))
    return _json(200, {"id": job_id, "state": "cancelled"})


def _drain(svc: ServiceView, method: str, path: str, query: dict[str, list[str]],
           raw: bytes | None, who: str = ADMIN) -> Answer:  # fmt: skip
    if who != ADMIN:
        raise _Refused(403, "only the admin's token drains the service")
    svc.draining = True
    svc.inbox.put(("drain", None))
    return _json(202, {"draining": True, "running": svc.store.counts()["running"]})  # type: ignore[union-attr]


def _health(svc: ServiceView, method: str, path: str, query: dict[str, list[str]],
            raw: bytes | None, who: str = ADMIN) -> Answer:  # fmt: skip
    return _json(200, {"ok": True, "url": svc.url, **svc.service_info()})


def _overview_route(svc: ServiceView, method: str, path: str, query: dict[str, list[str]],
                    raw: bytes | None, who: str = ADMIN) -> Answer:  # fmt: skip
    return _json(200, _overview(svc, who))


def _page(svc: ServiceView, method: str, path: str, query: dict[str, list[str]],
          raw: bytes | None, who: str = ADMIN) -> Answer:  # fmt: skip
    from .page import status_page

    return 200, status_page(_overview(svc, who)).encode("utf-8"), "text/html; charset=utf-8", {}


def _overview(svc: ServiceView, who: str = ADMIN) -> dict[str, object]:
    store = svc.store
    assert store is not None
    executor = svc.executor
    jobs = store.jobs()
    if who != ADMIN:  # a tenant sees its own LocalQueue's jobs
        jobs = [j for j in jobs if j.job.queue == who]
        ids = {j.id for j in jobs}
        events = [e for e in store.events() if e.job in ids]
        steps = (
            {j.id: executor.step_of(j.id) for j in jobs if j.state == "running"} if executor else {}
        )
        return overview(jobs, events, time.time(), svc.service_info(), steps)
    steps = {j.id: executor.step_of(j.id) for j in jobs if j.state == "running"} if executor else {}
    return overview(jobs, store.events(), time.time(), svc.service_info(), steps)


#: path pattern → (methods, handler, whether its POST reads a body); ``ID`` a job id
_ROUTES: dict[str, tuple[tuple[str, ...], Any, bool]] = {
    "/jobs": (("GET", "POST"), _jobs, True),
    "/jobs/ID": (("GET", "DELETE"), _job, False),
    "/jobs/ID/why": (("GET",), _job, False),
    "/drain": (("POST",), _drain, False),
    "/health": (("GET",), _health, False),
    "/api/overview": (("GET",), _overview_route, False),
    "/metrics": (("GET",), None, False),  # the service's registry (``_Api.metrics``)
    "/": (("GET",), _page, False),
}


def _route_key(path: str) -> str:
    path = path.rstrip("/") or "/"
    if path.startswith("/jobs/"):
        return "/jobs/ID/why" if path.count("/") == 3 and path.endswith("/why") else "/jobs/ID"
    return path


def _refusal(e: BaseException) -> Answer:
    """The answer to what a request raised."""
    if isinstance(e, _Refused):
        return _error(e.status, str(e), e.headers)
    if isinstance(e, UnknownJobError):
        return _error(404, str(e))
    if isinstance(e, StateError):
        return _error(409, str(e))
    if isinstance(e, InputError):
        return _error(400, str(e))
    return _error(500, f"internal error: {type(e).__name__}: {e}")


def _run(route: Any, *args: Any) -> Answer:
    """A route, in the pool; what it raises becomes its error answer."""
    try:
        return route(*args)  # type: ignore[no-any-return]
    except Exception as e:  # noqa: BLE001 - a request never stops the service
        return _refusal(e)


# ---------------------------------------------------------------------- the server
class _Api:
    """The request handler ``aiohttp.web.Server`` calls, on the loop."""

    def __init__(self, service: ServiceView, timeout: float, pool: ThreadPoolExecutor) -> None:
        self.service = service
        self.timeout = timeout
        self.pool = pool
        self.metrics = metrics_registry(
            lambda: (
                service.store.counts(),  # type: ignore[union-attr]
                service.cluster.num_gpus,  # type: ignore[union-attr]
                service.busy_gpus(),
                service.draining,
            )
        )
        config = getattr(service, "queues_config", None)
        if config is not None:  # ``serve --queues``: the families per queue too
            from .tenants import QueueCollector

            self.metrics.register(QueueCollector(lambda: service.store, config))

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        svc = self.service
        method = request.method
        url = urlsplit(request.raw_path)
        query = parse_qs(url.query)
        try:
            _web_safe(svc, method, request.headers)
            who = _authorised(svc, method, url.path, query, request.headers)
            if who is None:
                raise _Refused(401, "missing or wrong token (send 'Authorization: Bearer TOKEN')",
                               {"WWW-Authenticate": "Bearer"})  # fmt: skip
            if not svc.ready:
                raise _Refused(503, "the service is starting (launcher, recovery); try again "
                               "in a moment", {"Retry-After": "1"})  # fmt: skip
            route = _ROUTES.get(_route_key(url.path))
            if route is None:
                raise _Refused(404, f"no such resource {url.path[:100]!r}")
            methods, handler, reads_body = route
            verb = "GET" if method == "HEAD" else method
            if verb not in methods:
                raise _Refused(405, f"{method} is not allowed on {url.path[:100]}",
                               {"Allow": ", ".join(methods)})  # fmt: skip
            if handler is None and who != ADMIN:
                raise _Refused(403, "/metrics is the admin's: a tenant's token does not read it")
            raw = await self._read_body(request) if reads_body and verb == "POST" else None
        except _Refused as e:
            return _response(_refusal(e), close=e.close)
        loop = asyncio.get_running_loop()
        if handler is None:
            answer = await loop.run_in_executor(self.pool, self._metrics)
        else:
            answer = await loop.run_in_executor(
                self.pool, _run, handler, svc, verb, url.path, query, raw, who
            )
        return _response(answer)

    async def _read_body(self, request: web.BaseRequest) -> bytes:
        headers = request.headers
        if headers.get("Transfer-Encoding"):
            raise _Refused(411, "chunked bodies are not accepted: send a Content-Length",
                           close=True)  # fmt: skip
        length = headers.get("Content-Length")
        if length is None:
            raise _Refused(411, "a request body needs a Content-Length", close=True)
        if not length.isdigit():  # pragma: no cover - aiohttp's parser refuses it first
            raise _Refused(400, f"bad Content-Length {length[:40]!r}", close=True)
        n, limit = int(length), self.service.max_body
        if n > limit:
            raise _Refused(413, f"request body of {n} bytes exceeds the limit of {limit} "
                                "bytes", close=True)  # fmt: skip
        try:
            async with asyncio.timeout(self.timeout):
                return await request.read()
        except TimeoutError:
            raise _Refused(408, f"the request body did not arrive within {self.timeout:g} s",
                           close=True) from None  # fmt: skip
        except web.HTTPRequestEntityTooLarge:  # pragma: no cover - Content-Length says first
            raise _Refused(413, f"request body exceeds the limit of {limit} bytes",
                           close=True) from None  # fmt: skip

    def _metrics(self) -> Answer:
        try:
            body = exposition(self.metrics)
        except Exception as e:  # noqa: BLE001 - a request never stops the service
            return _refusal(e)
        return 200, body, METRICS_CONTENT_TYPE, {}


class _Protocol(RequestHandler):
    """aiohttp's connection handler, its own error answers as the API's one-line JSON."""

    def __init__(self, server: _Server, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self._cap = server  # the base forgets its server when the connection ends

    def handle_error(self, request: web.BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:  # fmt: skip
        if request.writer.output_size > 0:  # an answer is on its way: the connection ends
            raise ConnectionError("the answer was sent already")
        if status == 500:
            text = f"internal error: {type(exc).__name__}: {exc}" if exc else "internal error"
        else:
            try:
                phrase = HTTPStatus(status).phrase.lower()
            except ValueError:
                phrase = "refused"
            detail = (str(message or exc or "").strip().splitlines() or [""])[0].rstrip(":")
            detail = detail.split(" when reading:")[0]  # not the bytes it echoes
            text = f"{phrase}: {detail}"[:300]  # llhttp's message: its first line
        return _response(_error(status, text), close=True)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cap.open -= 1
        super().connection_lost(exc)


class _TooMany(asyncio.Protocol):
    """One connection over ``MAX_CONNECTIONS``: 503, closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_TOO_MANY)
        transport.close()


class _Server(web.Server):
    """``aiohttp.web.Server`` with at most ``MAX_CONNECTIONS`` connections at once."""

    def __init__(self, handler: _Api, protocol: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.protocol = protocol
        self.open = 0  # counted here: a connection registers with the server a loop turn late

    def __call__(self) -> asyncio.Protocol:  # type: ignore[override]
        if self.open >= MAX_CONNECTIONS:
            return _TooMany()
        self.open += 1
        return _Protocol(self, loop=asyncio.get_running_loop(), **self.protocol)


class ApiServer:
    """The API, listening: an event loop in a daemon thread (``ddlsched-http``);
    ``shutdown()`` closes every connection, ends the loop, its thread and the pool's."""

    def __init__(self, service: ServiceView, sock: socket.socket, timeout: float) -> None:
        self.server_address = sock.getsockname()[:2]
        self._sock = sock
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="ddlsched-http-worker")
        self._loop = asyncio.new_event_loop()
        api = _Api(service, timeout, self._pool)

        async def listen() -> tuple[_Server, asyncio.Server]:
            loop = asyncio.get_running_loop()
            max_body = service.max_body

            def request(message: Any, payload: Any, protocol: Any, writer: Any,
                        task: Any) -> web.BaseRequest:  # fmt: skip
                return web.BaseRequest(message, payload, protocol, writer, task, loop,
                                       client_max_size=max_body)  # fmt: skip

            web_server = _Server(
                api,
                dict(keepalive_timeout=timeout, access_log=None, max_line_size=8190,
                     max_field_size=8190, max_headers=100, lingering_time=1.0),
                request_factory=request,
            )  # fmt: skip
            server = await loop.create_server(web_server, sock=sock, backlog=MAX_CONNECTIONS)
            return web_server, server

        self._web, self._server = self._loop.run_until_complete(listen())
        self._thread = threading.Thread(target=self._loop.run_forever, name="ddlsched-http",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        self._closed = False

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop listening, end every connection (a request in progress gets ``timeout`` s),
        then the loop, its thread and the pool; at once when called again."""
        if self._closed:
            return
        self._closed = True

        async def close() -> None:
            self._server.close()
            self._web.pre_shutdown()
            await self._web.shutdown(timeout / 2)
            try:
                async with asyncio.timeout(timeout / 2):
                    await self._server.wait_closed()
            except TimeoutError:  # pragma: no cover
                pass

        try:
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout + 1.0)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            self._pool.shutdown(wait=True, cancel_futures=True)
            if not self._thread.is_alive():
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
                self._loop.close()

    def server_close(self) -> None:
        """Close the listening socket (``shutdown`` has; kept for the callers of the
        standard library's server)."""
        self._sock.close()


def request_timeout() -> float:
    """``REQUEST_TIMEOUT_S``, or ``$DDLSCHED_HTTP_TIMEOUT_S`` where it is a number > 0."""
    try:
        value = float(os.environ.get("DDLSCHED_HTTP_TIMEOUT_S", REQUEST_TIMEOUT_S))
    except ValueError:
        return REQUEST_TIMEOUT_S
    return value if 0 < value < 1e6 else REQUEST_TIMEOUT_S


def start_server(service: ServiceView) -> ApiServer:
    """Bind the service's address and serve in a daemon thread; the server (``shutdown`` it)."""
    family = socket.AF_INET6 if ":" in service.host else socket.AF_INET
    try:
        sock = socket.create_server((service.host, service.port), family=family,
                                    backlog=MAX_CONNECTIONS)  # fmt: skip
    except OSError as e:
        raise InputError(f"cannot listen on {service.host}:{service.port}: {e.strerror}",
                         field="--listen") from None  # fmt: skip
    try:
        return ApiServer(service, sock, request_timeout())
    except BaseException:
        sock.close()
        raise
