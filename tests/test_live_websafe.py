"""The service's API against a hostile web page (issue #27, item 1): another origin, a DNS
rebinding name, a form's or a no-cors fetch's body type, a CORS preflight, the token in a URL
— each refused, with one-line JSON errors, and nothing run. Then the same attack from a real
browser: headless Chromium loads a page served from another loopback port that tries a
no-cors ``fetch`` and a self-submitting form against ``POST /jobs``, ``POST /drain`` and
``DELETE /jobs/ID``; the service runs no command, drains not and cancels nothing.

Bounded in time, loopback only, every process ended by its pid (the fixtures of
test_live_service and test_live_page)."""

from __future__ import annotations

import http.client
import http.server
import json
import threading
import time

from test_live_page import CHROMIUM, browser, chromium
from test_live_service import home, job, serve  # noqa: F401 - the fixture


def _raw(svc, method: str, path: str, body: bytes | None, headers: dict[str, str]):  # noqa: ANN001, ANN202
    host, port = svc.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.putrequest(method, path, skip_host="Host" in headers)
        for k, v in headers.items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def test_requests_a_web_page_could_send_are_refused(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home)
    marker = path / "ran"
    body = json.dumps({"jobs": [{"command": ["touch", str(marker)], "gpus": 1}]}).encode()
    port = svc.url.rsplit(":", 1)[1]
    cases = [
        # a no-cors fetch or a form: text/plain, urlencoded, multipart bodies
        ("POST", "/jobs", body, {"Content-Type": "text/plain"}, 415),
        ("POST", "/jobs", body, {"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ("POST", "/jobs", body, {"Content-Type": "multipart/form-data; boundary=x"}, 415),
        ("POST", "/jobs", body, {}, 415),
        # another origin, even with the right type
        (
            "POST",
            "/jobs",
            body,
            {"Content-Type": "application/json", "Origin": "http://evil.example"},
            403,
        ),  # fmt: skip
        (
            "POST",
            "/drain",
            b"{}",
            {"Content-Type": "application/json", "Origin": "http://127.0.0.1:1"},
            403,
        ),  # fmt: skip
        (
            "POST",
            "/jobs",
            body,
            {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
            403,
        ),  # fmt: skip
        # DNS rebinding: a hostile name that resolves to 127.0.0.1
        (
            "POST",
            "/jobs",
            body,
            {"Content-Type": "application/json", "Host": f"evil.example:{port}"},
            403,
        ),  # fmt: skip
        ("GET", "/jobs", None, {"Host": f"evil.example:{port}"}, 403),
        ("DELETE", "/jobs/1", None, {"Host": f"evil.example:{port}"}, 403),
        # CORS preflight: no other origin may call
        (
            "OPTIONS",
            "/jobs",
            None,
            {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
            403,
        ),  # fmt: skip
    ]
    for method, route, raw, headers, want in cases:
        code, doc = _raw(svc, method, route, raw, headers)
        assert code == want, (method, route, headers, code, doc)
        assert isinstance(doc, dict) and "\n" not in doc["error"], doc
    time.sleep(0.5)
    assert not marker.exists(), "a refused request ran its command"
    assert svc.jobs() == {}
    # the service's own names and origin still work
    auth = {"Authorization": f"Bearer {svc.token}"}  # the service's own token (DIR/token)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        code, doc = _raw(svc, "GET", "/jobs", None, {"Host": host, **auth})
        assert code == 200, (host, doc)
    code, doc = _raw(svc, "POST", "/jobs", json.dumps({"jobs": [job(tag, steps=2)]}).encode(),
                     {"Content-Type": "application/json; charset=utf-8",
                      "Origin": f"http://127.0.0.1:{port}", **auth})  # fmt: skip
    assert code == 201, doc
    svc.wait_ended(doc["ids"], timeout=30)


def test_the_token_only_in_the_header_except_the_status_page(home) -> None:  # noqa: F811
    path, tag, _ = home
    token = "websafe-token-0123456789"
    (path / "token").write_text(token)
    (path / "token").chmod(0o600)
    svc = serve(home, "--token-file", "token", token=token)
    body = json.dumps({"jobs": [job(tag, steps=2)]}).encode()
    json_type = {"Content-Type": "application/json"}
    # ?token= opens the read-only status page, nothing else
    assert _raw(svc, "POST", f"/jobs?token={token}", body, json_type)[0] == 401
    assert _raw(svc, "POST", f"/drain?token={token}", b"{}", json_type)[0] == 401
    assert _raw(svc, "GET", f"/jobs?token={token}", None, {})[0] == 401
    host, port = svc.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", f"/?token={token}")
    assert conn.getresponse().status == 200
    conn.close()
    # the scheme in any case (RFC 7235)
    for scheme in ("bearer", "BEARER", "Bearer"):
        code, doc = _raw(svc, "GET", "/jobs", None, {"Authorization": f"{scheme} {token}"})
        assert code == 200, (scheme, doc)


ATTACK = """<!doctype html><html><body>
<form id="f" method="POST" action="{url}/jobs" enctype="text/plain" target="sink">
<input name='{{"jobs":[{{"command":["touch","{marker}-form"],"gpus":1,"x":"' value='"}}]}}'>
</form>
<form id="d" method="POST" action="{url}/drain" target="sink2"><input name="a" value="b"></form>
<iframe name="sink"></iframe><iframe name="sink2"></iframe>
<script>
var body = JSON.stringify({{jobs: [{{command: ["touch", "{marker}-fetch"], gpus: 1}}]}});
fetch("{url}/jobs", {{method: "POST", mode: "no-cors", body: body,
                      headers: {{"Content-Type": "text/plain"}}}}).catch(function () {{}});
fetch("{url}/jobs", {{method: "POST", body: body,
                      headers: {{"Content-Type": "application/json"}}}}).catch(function () {{}});
fetch("{url}/drain", {{method: "POST", mode: "no-cors", body: "{{}}"}}).catch(function () {{}});
fetch("{url}/jobs/{victim}", {{method: "DELETE"}}).catch(function () {{}});
document.getElementById("f").submit();
document.getElementById("d").submit();
</script></body></html>"""


@browser
def test_a_page_from_another_origin_cannot_submit_drain_or_cancel(home, tmp_path) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home)
    (victim,) = svc.submit(job(tag, steps=600))  # a running job the page tries to cancel
    marker = path / "pwned"
    page = ATTACK.format(url=svc.url, marker=marker, victim=victim).encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert CHROMIUM is not None
        chromium(tmp_path / "profile", "--virtual-time-budget=4000", "--dump-dom",
                 f"http://127.0.0.1:{server.server_address[1]}/")  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    time.sleep(1.0)
    assert not list(path.glob("pwned*")), "the page made the service run a command"
    jobs = svc.jobs()
    assert list(jobs) == [victim], jobs  # nothing submitted
    assert jobs[victim]["state"] in ("running", "queued"), jobs[victim]  # not cancelled
    code, doc = svc.call("GET", "/health")
    assert code == 200 and doc["draining"] is False, doc  # not drained
    assert svc.call("DELETE", f"/jobs/{victim}")[0] == 200


def test_a_token_by_default_that_local_clients_find(home, tmp_path, monkeypatch) -> None:  # noqa: F811
    """Issue #27: without --token-file the service makes a token of its own (DIR/token, 0600)
    and requires it even on loopback: another local user cannot submit a command that runs
    as you. This user's clients find it in the runtime file (0600, in a 0700 directory); a
    restart keeps it; --no-token is the explicit opt-out."""
    import stat

    from test_live_service import cli

    from ddlsched.live.service.endpoints import runtime_file

    path, tag, _ = home
    svc = serve(home)
    token_file = path / "state" / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    assert len(token) >= 32 and svc.token == token
    no_auth = {"Authorization": ""}
    assert svc.call("GET", "/jobs", headers=no_auth)[0] == 401
    body = json.dumps({"jobs": [job(tag, steps=2)]}).encode()
    code, _ = _raw(svc, "POST", "/jobs", body, {"Content-Type": "application/json"})
    assert code == 401  # another local user, with no token
    runtime = runtime_file(svc.url)
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o600
    assert stat.S_IMODE(runtime.parent.stat().st_mode) == 0o700
    # this user's clients: no option needed
    out = cli(path, "submit", "--command", f"true {tag}", "--gpus", "1", "--server", svc.url)
    assert out.returncode == 0, out.stderr
    out = cli(path, "status", "--server", svc.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(("0 queued, 1 running", "0 queued, 0 running, 1 finished")), out
    # a client that does not find it (another user's runtime directory): one line, 401
    env_other = str(tmp_path / "other-user-runtime")
    monkeypatch.setenv("DDLSCHED_RUNTIME_DIR", env_other)
    out = cli(path, "status", "--server", svc.url)
    assert out.returncode == 2 and "401" in out.stderr and len(out.stderr.splitlines()) == 1
    monkeypatch.setenv("DDLSCHED_RUNTIME_DIR", str(path / "runtime"))
    # a restart keeps the token; the runtime file goes with the service
    svc.stop()
    assert not runtime.exists()
    again = serve(home)
    assert again.token == token
    assert again.call("GET", "/jobs")[0] == 200
    again.stop()
    # --no-token: loopback requests without one are accepted (the opt-out)
    open_svc = serve(home, "--no-token", state="state2")
    assert open_svc.token is None
    assert open_svc.call("GET", "/jobs", headers=no_auth)[0] == 200
    assert not (path / "state2" / "token").exists()
