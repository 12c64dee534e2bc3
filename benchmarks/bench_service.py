"""Benchmark: 1,000 submissions from 4 concurrent clients against one ``ddlsched serve``.

Not a test: run ``make bench`` (or ``python benchmarks/bench_service.py``) and record the
numbers in docs/performance.md (issue #14). Starts a service (``--local``, ``fifo``, a cluster
of 64 logical GPUs, a fresh state directory) on 127.0.0.1, then 4 client processes each submit
250 one-job requests (``POST /jobs``, the command ``true``: jobs that finish at once) and time
every request. Afterwards it checks that none was lost or duplicated (the store holds exactly
1,000 jobs, ids 1–1000, each client got 250 distinct ids) and waits until all have finished.
Prints throughput (submissions/s) and request latency (median, p99, max).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CLUSTER = 'name = "bench-64"\n[[servers]]\nnum_gpus = 8\ncount = 8\n'


def client(url: str, token: str, n: int, start: mp.Event, out: mp.Queue) -> None:  # type: ignore[type-arg]
    """Submit ``n`` jobs one request at a time; put (ids, latencies) on ``out``."""
    body = json.dumps({"jobs": [{"command": ["true"], "gpus": 1}]}).encode()
    ids, lat = [], []
    start.wait()
    for _ in range(n):
        req = urllib.request.Request(url + "/jobs", data=body, method="POST")
        req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", f"Bearer {token}")
        t = time.perf_counter()
        with urllib.request.urlopen(req, timeout=60) as resp:
            doc = json.loads(resp.read())
        lat.append(time.perf_counter() - t)
        ids.extend(doc["ids"])
    out.put((ids, lat))


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--submissions", type=int, default=1000)
    args = ap.parse_args()
    per = args.submissions // args.clients
    total = per * args.clients
    with tempfile.TemporaryDirectory(prefix="ddl-bench-service-") as tmp:
        home = Path(tmp)
        (home / "cluster.toml").write_text(CLUSTER)
        cmd = [sys.executable, "-m", "ddlsched.cli", "serve", "--cluster", "cluster.toml",
               "--local", "--policy", "fifo", "--state", "state", "--listen", "127.0.0.1:0"]  # fmt: skip
        log = open(home / "serve.log", "wb")  # noqa: SIM115
        env = dict(os.environ, DDLSCHED_RUNTIME_DIR=str(home / "runtime"))
        proc = subprocess.Popen(cmd, cwd=home, stdout=log, stderr=log, env=env)
        try:
            endpoint = home / "state" / "endpoint.json"
            deadline = time.monotonic() + 60
            while not endpoint.exists() or not json.loads(endpoint.read_text()).get("ready"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"serve did not start: {(home / 'serve.log').read_text()}")
                time.sleep(0.1)
            url = json.loads(endpoint.read_text())["url"]
            token = (home / "state" / "token").read_text().strip()  # the service's own
            auth = {"Authorization": f"Bearer {token}"}
            start, out = mp.Event(), mp.Queue()
            workers = [mp.Process(target=client, args=(url, token, per, start, out))
                       for _ in range(args.clients)]  # fmt: skip
            for w in workers:
                w.start()
            t0 = time.perf_counter()
            start.set()
            results = [out.get(timeout=600) for _ in workers]
            wall = time.perf_counter() - t0
            for w in workers:
                w.join(timeout=60)
            ids = [i for r, _ in results for i in r]
            lat = [x for _, ls in results for x in ls]
            assert sorted(ids) == list(range(1, total + 1)), "ids lost or duplicated"
            assert all(len(set(r)) == per for r, _ in results)
            deadline = time.monotonic() + 600
            while True:
                req = urllib.request.Request(url + "/jobs?state=queued,running", headers=auth)
                with urllib.request.urlopen(req, timeout=60) as r:
                    left = len(json.loads(r.read())["jobs"])
                if left == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            drained = time.perf_counter() - t0
            req = urllib.request.Request(url + "/jobs", headers=auth)
            with urllib.request.urlopen(req, timeout=60) as r:
                jobs = json.loads(r.read())["jobs"]
            finished = sum(j["state"] == "finished" for j in jobs)
            print(f"{total} submissions from {args.clients} clients in {wall:.2f} s: "
                  f"{total / wall:.0f} submissions/s; latency median "
                  f"{1000 * quantile(lat, 0.5):.1f} ms, p99 {1000 * quantile(lat, 0.99):.1f} ms, "
                  f"max {1000 * max(lat):.1f} ms")  # fmt: skip
            print(f"store: {len(jobs)} jobs, ids unique 1–{total}; {finished} finished "
                  f"{drained:.1f} s after the first submission")  # fmt: skip
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
