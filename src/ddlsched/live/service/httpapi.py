"""The service's HTTP/JSON API (docs/live.md, "The service's API"), on the standard library's
threading HTTP server. Every answer is JSON (``/`` is the status page, ``/metrics`` the
Prometheus text); every error is ``{"error": "one line"}`` with its status: 400 bad request or
job, 401 no or wrong token, 403 another origin or Host (or a CORS preflight), 404 unknown path
or job, 405 wrong method, 409 illegal state change, 411 no length, 413 body too large, 415 a
body that is not JSON, 503 draining or still starting (the API listens from the
first second; the launcher, recovery and engine come up behind it). A request never stops the service."""

from __future__ import annotations

import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from ...errors import InputError, one_line
from ..jobfile import check_commands, jobs_from_records
from ..run import check_fits
from .history import metrics_text, overview
from .store import STATES, StateError, StoredJob, UnknownJobError

if TYPE_CHECKING:  # pragma: no cover
    import queue

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

    @property
    def max_body(self) -> int: ...

    def service_info(self) -> dict[str, object]: ...

    def busy_gpus(self) -> int: ...

    def host_allowed(self, host: str | None) -> bool: ...

    def origins(self) -> set[str]: ...


__all__ = ["ServiceView", "job_record", "start_server"]


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


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
    }


def _job_id(text: str) -> int:
    if not text.isdigit() or len(text) > 18:
        raise _Refused(404, f"no job {text!r}: job ids are positive integers")
    return int(text)


#: seconds a connection may take to send a request's headers and body, or stay idle between
#: requests: a client that never finishes is cut off (the socket's timeout;
#: ``DDLSCHED_HTTP_TIMEOUT_S`` in the service's environment changes it)
REQUEST_TIMEOUT_S = 10.0
#: connections served at once; more are answered 503 and closed at once
MAX_CONNECTIONS = 128


class _Handler(BaseHTTPRequestHandler):
    server_version = "ddlsched"
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT_S
    service: ServiceView  # set on the subclass made per server

    # ------------------------------------------------------------------ plumbing
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # quiet: the store's event log is the record

    def _send(
        self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, doc: object, headers: dict[str, str] | None = None) -> None:
        body = (json.dumps(doc, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
        self._send(status, body, "application/json", headers)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(status, {"error": one_line(message)}, headers)

    def _authorised(self, path: str, query: dict[str, list[str]]) -> bool:
        """The token (when the service has one) in ``Authorization: Bearer TOKEN`` (the
        scheme in any case, RFC 7235); ``?token=`` only opens the read-only status page."""
        token = self.service.token
        if token is None:
            return True
        scheme, _, given = self.headers.get("Authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer":
            given = ""
            if self.command in ("GET", "HEAD") and path == "/":
                given = (query.get("token") or [""])[0]
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode("utf-8"))

    def _web_safe(self) -> None:
        """What a hostile web page could send (docs/live.md "Security model"): a CORS
        preflight (refused: no other origin may call), another ``Origin``, a ``Host`` that is
        not an address this service listens on (DNS rebinding), a write whose body is not
        ``application/json`` (a form or a no-cors ``fetch`` cannot send that type)."""
        if self.command == "OPTIONS":
            raise _Refused(403, "cross-origin requests are not accepted (no CORS)")
        svc = self.service
        host = self.headers.get("Host")
        if not svc.host_allowed(host):
            raise _Refused(403, f"Host {str(host)[:100]!r} is not an address this service "
                                "listens on")  # fmt: skip
        origin = self.headers.get("Origin")
        if origin is not None and origin not in svc.origins():
            raise _Refused(403, f"requests from origin {origin[:100]!r} are refused")
        if self.headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
            raise _Refused(403, "cross-site requests are refused")
        if self.command in ("POST", "PUT", "PATCH"):
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype != "application/json":
                raise _Refused(415, "a request body must be JSON (Content-Type: "
                                    "application/json)")  # fmt: skip

    def _body(self) -> Any:
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise _Refused(411, "chunked bodies are not accepted: send a Content-Length")
        if length is None:
            self.close_connection = True
            raise _Refused(411, "a request body needs a Content-Length")
        if not length.isdigit():
            self.close_connection = True
            raise _Refused(400, f"bad Content-Length {length[:40]!r}")
        n = int(length)
        if n > self.service.max_body:
            self.close_connection = True  # the unread body must not be parsed as a request
            raise _Refused(413, f"request body of {n} bytes exceeds the limit of "
                                f"{self.service.max_body} bytes")  # fmt: skip
        raw = self.rfile.read(n)
        try:
            return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except UnicodeDecodeError:
            raise _Refused(400, "the request body is not UTF-8 text") from None
        except ValueError as e:
            raise _Refused(400, f"the request body is not valid JSON: {e}") from None

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        try:
            self._web_safe()
            if not self._authorised(url.path, query):
                raise _Refused(401, "missing or wrong token (send 'Authorization: Bearer TOKEN')",
                               {"WWW-Authenticate": "Bearer"})  # fmt: skip
            if not self.service.ready:
                raise _Refused(503, "the service is starting (launcher, recovery); try again "
                               "in a moment", {"Retry-After": "1"})  # fmt: skip
            route = _ROUTES.get(_route_key(url.path))
            if route is None:
                raise _Refused(404, f"no such resource {url.path[:100]!r}")
            methods, name = route
            method = "GET" if self.command == "HEAD" else self.command
            if method not in methods:
                raise _Refused(405, f"{self.command} is not allowed on {url.path[:100]}",
                               {"Allow": ", ".join(methods)})  # fmt: skip
            getattr(self, name)(method, url.path, query)
        except _Refused as e:
            self._error(e.status, str(e), e.headers)
        except UnknownJobError as e:
            self._error(404, str(e))
        except StateError as e:
            self._error(409, str(e))
        except InputError as e:
            self._error(400, str(e))
        except Exception as e:  # noqa: BLE001 - a request never stops the service
            self._error(500, f"internal error: {type(e).__name__}: {e}")

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _dispatch

    # ------------------------------------------------------------------ routes
    def jobs(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        svc = self.service
        store = svc.store
        assert store is not None
        if method == "GET":
            states = None
            if "state" in query:
                states = [s for v in query["state"] for s in v.split(",") if s]
                bad = [s for s in states if s not in STATES]
                if bad:
                    raise _Refused(400, f"unknown state {bad[0]!r}; valid: {', '.join(STATES)}")
            self._json(200, {"jobs": [job_record(j) for j in store.jobs(states)]})
            return
        doc = self._body()
        if svc.draining:
            raise _Refused(503, "the service is draining: it accepts no new jobs")
        records = doc.get("jobs", doc) if isinstance(doc, dict) and "jobs" in doc else doc
        jobs = jobs_from_records(records, "request")
        check_commands(jobs, "request")
        assert svc.cluster is not None
        for j in jobs:
            if j.app is not None:
                raise InputError(f"job {j.job_id}: the service schedules jobs without an "
                                 "application profile ('app'); leave it out", source="request",
                                 field="app")  # fmt: skip
        check_fits(jobs, svc.cluster, "request")
        ids = store.submit(jobs, time.time())
        svc.inbox.put(("submit", ids))
        self._json(201, {"ids": ids})

    def job(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        store = self.service.store
        assert store is not None
        job_id = _job_id(path.rstrip("/").rsplit("/", 1)[1])
        if method == "GET":
            doc = job_record(store.job(job_id))
            doc["events"] = [
                {"t": e.t, "event": e.event, **e.detail} for e in store.job_events(job_id)
            ]
            self._json(200, doc)
            return
        if not store.cancel(job_id, time.time()):
            raise _Refused(409, f"job {job_id} already ended ({store.job(job_id).state})")
        self.service.inbox.put(("cancel", job_id))
        self._json(200, {"id": job_id, "state": "cancelled"})

    def drain(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        svc = self.service
        svc.draining = True
        svc.inbox.put(("drain", None))
        self._json(202, {"draining": True, "running": svc.store.counts()["running"]})  # type: ignore[union-attr]

    def health(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        self._json(200, {"ok": True, "url": self.service.url, **self.service.service_info()})

    def overview(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        self._json(200, _overview(self.service))

    def page(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        from .page import status_page

        body = status_page(_overview(self.service)).encode("utf-8")
        self._send(200, body, "text/html; charset=utf-8")

    def metrics(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        svc = self.service
        assert svc.store is not None and svc.cluster is not None
        text = metrics_text(svc.store.counts(), svc.cluster.num_gpus, svc.busy_gpus(),
                            svc.draining)  # fmt: skip
        self._send(200, text.encode("utf-8"), "text/plain; version=0.0.4; charset=utf-8")


def _overview(svc: ServiceView) -> dict[str, object]:
    store = svc.store
    assert store is not None
    executor = svc.executor
    jobs = store.jobs()
    steps = {j.id: executor.step_of(j.id) for j in jobs if j.state == "running"} if executor else {}
    return overview(jobs, store.events(), time.time(), svc.service_info(), steps)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


#: path pattern → (methods, handler); ``ID`` stands for a job id
_ROUTES: dict[str, tuple[tuple[str, ...], str]] = {
    "/jobs": (("GET", "POST"), "jobs"),
    "/jobs/ID": (("GET", "DELETE"), "job"),
    "/drain": (("POST",), "drain"),
    "/health": (("GET",), "health"),
    "/api/overview": (("GET",), "overview"),
    "/metrics": (("GET",), "metrics"),
    "/": (("GET",), "page"),
}


def _route_key(path: str) -> str:
    path = path.rstrip("/") or "/"
    if path.startswith("/jobs/"):
        return "/jobs/ID"
    return path


class _BoundedServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with at most ``MAX_CONNECTIONS`` connections at once (a thread
    each): one more is answered 503 and closed, so slow or idle clients cannot pile threads
    up without bound."""

    daemon_threads = True
    request_queue_size = MAX_CONNECTIONS  # the listen backlog (socketserver's default is 5)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                body = b'{"error": "too many connections; try again"}\n'
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\n\r\n"
                    + body
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def request_timeout() -> float:
    """``REQUEST_TIMEOUT_S``, or ``$DDLSCHED_HTTP_TIMEOUT_S`` where it is a number > 0."""
    try:
        value = float(os.environ.get("DDLSCHED_HTTP_TIMEOUT_S", REQUEST_TIMEOUT_S))
    except ValueError:
        return REQUEST_TIMEOUT_S
    return value if 0 < value < 1e6 else REQUEST_TIMEOUT_S


def start_server(service: ServiceView) -> ThreadingHTTPServer:
    """Bind the service's address and serve in a daemon thread; the server (``shutdown`` it)."""
    handler = type("Handler", (_Handler,), {"service": service, "timeout": request_timeout()})
    try:
        server = _BoundedServer((service.host, service.port), handler)
    except OSError as e:
        raise InputError(f"cannot listen on {service.host}:{service.port}: {e.strerror}",
                         field="--listen") from None  # fmt: skip
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="ddlsched-http", daemon=True).start()
    return server
