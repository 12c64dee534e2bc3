"""The service's HTTP server on aiohttp (issue #27, "well-kept parts"), in this process with a
stand-in service: what the framework's configuration and the small layer over it keep — a
connection that never finishes its headers is cut off, a body that never arrives too (408),
one connection over ``MAX_CONNECTIONS`` gets 503 at once and the service answers again when
connections end, aiohttp's own refusals are one-line JSON, ``/metrics`` parses as Prometheus
text, and ``shutdown`` is prompt and leaves no thread. Loopback only, bounded in time."""

from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import time
from typing import Any

import pytest

from ddlsched.core.cluster import Cluster
from ddlsched.live.service import httpapi
from ddlsched.live.service.history import metrics_text

TOKEN = "httpapi-token-0123456789"


class FakeStore:
    def counts(self) -> dict[str, int]:
        return {"queued": 3, "running": 1, "finished": 2, "failed": 1, "restarts": 4,
                "event:submit": 7, "event:preempt": 5}  # fmt: skip

    def jobs(self, states: Any = None) -> list[Any]:
        return []


class FakeService:
    """What ``httpapi.ServiceView`` asks for, and no more."""

    def __init__(self, token: str | None = TOKEN) -> None:
        self.host, self.port, self.url, self.token = "127.0.0.1", 0, "", token
        self.ready, self.draining = True, False
        self.store: Any = FakeStore()
        self.cluster = Cluster.homogeneous(2, 4)
        self.executor = None
        self.inbox: queue.Queue[tuple[str, Any]] = queue.Queue()

    @property
    def max_body(self) -> int:
        return 1 << 20

    def service_info(self) -> dict[str, object]:
        return {"gpus": self.cluster.num_gpus, "draining": self.draining}

    def busy_gpus(self) -> int:
        return 2

    def host_allowed(self, host: str | None) -> bool:
        return host == f"127.0.0.1:{self.port}"

    def origins(self) -> set[str]:
        return {f"http://127.0.0.1:{self.port}"}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DDLSCHED_HTTP_TIMEOUT_S", "1.5")
    svc = FakeService()
    server = httpapi.start_server(svc)
    svc.port = server.server_address[1]
    svc.url = f"http://127.0.0.1:{svc.port}"
    yield svc, server
    server.shutdown()
    server.server_close()


def _get(svc: FakeService, path: str, token: str | None = TOKEN) -> tuple[int, Any, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, resp.headers, body
    finally:
        conn.close()


def _closed_within(s: socket.socket, seconds: float) -> bytes:
    """What the server sent before it closed ``s``; fails if it is still open after
    ``seconds``."""
    s.settimeout(seconds)
    got = b""
    try:
        while chunk := s.recv(4096):
            got += chunk
    except TimeoutError:
        pytest.fail(f"the connection is still open after {seconds} s")
    except ConnectionResetError:
        pass
    return got


def test_a_connection_that_never_finishes_its_headers_is_cut_off(api) -> None:
    svc, _ = api
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", svc.port), timeout=5)
    s.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{svc.port}\r\n".encode())
    assert _closed_within(s, 6.0) == b""
    assert time.monotonic() - t0 < 5.0  # 1.5 s, rounded up by the loop's timer
    s.close()
    idle = socket.create_connection(("127.0.0.1", svc.port), timeout=5)  # sends nothing
    assert _closed_within(idle, 6.0) == b""
    idle.close()
    assert _get(svc, "/health")[0] == 200


def test_a_body_that_never_arrives_is_cut_off_with_408(api) -> None:
    svc, _ = api
    s = socket.create_connection(("127.0.0.1", svc.port), timeout=5)
    s.sendall(f"POST /jobs HTTP/1.1\r\nHost: 127.0.0.1:{svc.port}\r\nAuthorization: Bearer "
              f"{TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
              "{".encode())  # fmt: skip
    got = _closed_within(s, 6.0)
    s.close()
    assert got.startswith(b"HTTP/1.1 408 "), got
    assert json.loads(got.split(b"\r\n\r\n", 1)[1])["error"].startswith("the request body did")


def test_one_connection_over_the_cap_gets_503_and_the_cap_frees_up(api) -> None:
    svc, _ = api
    socks = [socket.create_connection(("127.0.0.1", svc.port), timeout=5)
             for _ in range(httpapi.MAX_CONNECTIONS)]  # fmt: skip
    try:
        time.sleep(0.3)
        over = socket.create_connection(("127.0.0.1", svc.port), timeout=5)
        got = _closed_within(over, 5.0)
        over.close()
        assert got.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), got
        assert json.loads(got.split(b"\r\n\r\n", 1)[1]) == {
            "error": "too many connections; try again"
        }
    finally:
        for s in socks:
            s.close()
    deadline = time.monotonic() + 5
    while _get(svc, "/health")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"NOT A REQUEST\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n",
        b"GET /health HTTP/1.1\r\nBad Header Line\r\n\r\n",
        b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\n\r\n",
    ],
)
def test_what_the_parser_refuses_is_a_one_line_json_400(api, request_bytes: bytes) -> None:
    svc, _ = api
    s = socket.create_connection(("127.0.0.1", svc.port), timeout=5)
    s.sendall(request_bytes)
    got = _closed_within(s, 5.0)
    s.close()
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == b"400", got
    assert b"Content-Type: application/json" in head
    doc = json.loads(body)
    assert set(doc) == {"error"} and "\n" not in doc["error"], doc
    assert _get(svc, "/health")[0] == 200


def test_metrics_parse_as_prometheus_text(api) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    svc, _ = api
    status, headers, body = _get(svc, "/metrics")
    assert status == 200
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    types = {name: f.type for name, f in families.items()}
    assert types == {
        "ddlsched_queue_length": "gauge", "ddlsched_running_jobs": "gauge",
        "ddlsched_gpus": "gauge", "ddlsched_gpus_busy": "gauge",
        "ddlsched_gpu_utilization": "gauge", "ddlsched_submissions": "counter",
        "ddlsched_jobs_ended": "counter", "ddlsched_job_completions": "counter",
        "ddlsched_preemptions": "counter", "ddlsched_restarts": "counter",
        "ddlsched_draining": "gauge",
    }  # fmt: skip
    value = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for f in families.values() for s in f.samples}  # fmt: skip
    assert value[("ddlsched_gpu_utilization", ())] == 0.25
    assert value[("ddlsched_submissions_total", ())] == 7
    assert value[("ddlsched_preemptions_total", ())] == 5
    assert value[("ddlsched_jobs_ended_total", (("state", "failed"),))] == 1
    assert value[("ddlsched_jobs_ended_total", (("state", "cancelled"),))] == 0
    # the text is what the hand-written exposition gave, whole numbers as integers
    assert body.decode() == metrics_text(svc.store.counts(), 8, 2, False)
    assert "ddlsched_queue_length 3\n" in body.decode()
    assert _get(svc, "/metrics", token=None)[0] == 401


def _http_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ddlsched-http")]


def test_shutdown_is_prompt_and_leaves_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLSCHED_HTTP_TIMEOUT_S", "30")
    svc = FakeService()
    server = httpapi.start_server(svc)
    svc.port = server.server_address[1]
    assert _get(svc, "/health")[0] == 200  # the pool has a thread now
    idle = socket.create_connection(("127.0.0.1", svc.port), timeout=5)
    idle.sendall(b"GET /health HTTP/1.1\r\n")  # a request half sent
    time.sleep(0.2)
    assert _http_threads()
    t0 = time.monotonic()
    server.shutdown()
    server.server_close()
    assert time.monotonic() - t0 < 3.0
    assert _http_threads() == []
    assert _closed_within(idle, 2.0) == b""
    idle.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", svc.port), timeout=2)
    server.shutdown()  # twice is fine


def test_a_port_in_use_is_one_line() -> None:
    from ddlsched.errors import InputError

    first = httpapi.start_server(FakeService())
    try:
        svc = FakeService()
        svc.port = first.server_address[1]
        with pytest.raises(InputError, match="cannot listen on 127.0.0.1"):
            httpapi.start_server(svc)
    finally:
        first.shutdown()


#: (method, path, extra headers, body, status, the answer's headers beyond the usual three,
#: its body): as the ``http.server`` API answered them before the move to aiohttp (recorded
#: from it), but for ``Connection: close`` where the server closes the connection after the
#: answer (it did not say so before); ``/health`` is the stand-in service's
BEFORE = [
    ("GET", "/jobs", {"Authorization": ""}, None, 401, {"WWW-Authenticate": "Bearer"},
     b'{"error": "missing or wrong token (send \'Authorization: Bearer TOKEN\')"}\n'),
    ("GET", "/nowhere", {}, None, 404, {}, b'{"error": "no such resource \'/nowhere\'"}\n'),
    ("PUT", "/jobs", {"Content-Type": "application/json"}, b"{}", 405, {"Allow": "GET, POST"},
     b'{"error": "PUT is not allowed on /jobs"}\n'),
    ("GET", "/drain", {}, None, 405, {"Allow": "POST"},
     b'{"error": "GET is not allowed on /drain"}\n'),
    ("OPTIONS", "/jobs", {"Origin": "http://evil.example"}, None, 403, {},
     b'{"error": "cross-origin requests are not accepted (no CORS)"}\n'),
    ("GET", "/jobs", {"Origin": "http://evil.example"}, None, 403, {},
     b'{"error": "requests from origin \'http://evil.example\' are refused"}\n'),
    ("GET", "/jobs", {"Sec-Fetch-Site": "cross-site"}, None, 403, {},
     b'{"error": "cross-site requests are refused"}\n'),
    ("POST", "/jobs", {"Content-Type": "text/plain"}, b"{}", 415, {},
     b'{"error": "a request body must be JSON (Content-Type: application/json)"}\n'),
    ("POST", "/jobs", {"Content-Type": "application/json"}, None, 411, {"Connection": "close"},
     b'{"error": "a request body needs a Content-Length"}\n'),
    ("POST", "/jobs", {"Content-Type": "application/json", "Content-Length": str(2 << 30)},
     None, 413, {"Connection": "close"},
     b'{"error": "request body of 2147483648 bytes exceeds the limit of 1048576 bytes"}\n'),
    ("POST", "/jobs", {"Content-Type": "application/json"}, b"{not json", 400, {},
     b'{"error": "the request body is not valid JSON: Expecting property name enclosed in '
     b'double quotes: line 1 column 2 (char 1)"}\n'),
    ("GET", "/jobs/abc", {}, None, 404, {},
     b'{"error": "no job \'abc\': job ids are positive integers"}\n'),
    ("GET", "/health", {}, None, 200, {}, b'{"draining": false, "gpus": 8, "ok": true, "url": '
     b'"URL"}\n'),
    ("HEAD", "/health", {}, None, 200, {}, b""),
]  # fmt: skip


def test_the_answers_are_those_of_before(api) -> None:
    svc, _ = api
    usual = {"Content-Type": "application/json", "Cache-Control": "no-store",
             "Server": httpapi.SERVER_HEADER}  # fmt: skip
    for method, path, extra, body, status, headers, want in BEFORE:
        conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=10)
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for k, v in {"Authorization": f"Bearer {TOKEN}", **extra}.items():
                conn.putheader(k, v)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            got = resp.read()
        finally:
            conn.close()
        seen = {k: v for k, v in resp.getheaders() if k not in ("Date", "Content-Length")}
        assert (resp.status, seen, got) == (
            status, {**usual, **headers}, want.replace(b"URL", svc.url.encode())
        ), (method, path, extra)  # fmt: skip
    svc.ready = False
    status, headers, got = _get(svc, "/jobs")
    assert (status, headers["Retry-After"], json.loads(got)) == (
        503, "1", {"error": "the service is starting (launcher, recovery); try again in a moment"}
    )  # fmt: skip


def test_a_model_job_is_refused_with_the_command_that_runs_it(api) -> None:
    """The service plans nothing ahead: a job with a model (the offline planners' input,
    ``ddlsched live``) is refused with one line, and nothing reaches the service's inbox."""
    svc, _ = api
    job = {"gpus": 1, "command": ["true"], "iterations": 5, "size_mb": 1.0, "t_forward": 0.1}
    body = json.dumps({"jobs": [job]}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=10)
    try:
        conn.request("POST", "/jobs", body=body, headers={
            "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})  # fmt: skip
        resp = conn.getresponse()
        doc = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 400, doc
    assert "`ddlsched live`" in doc["error"] and "iterations" in doc["error"]
    assert svc.inbox.empty()
