"""Benchmark: the round trip of live mode's per-iteration communication channel (issue #30:
median ≤ 1 ms on loopback).

Not a test: run ``python benchmarks/bench_channel.py [--asks 2000] [--clients 1] [--out
FILE.json]``. A ``CommChannel`` (``live/channel.py``) with the AdaDUAL gate serves a Unix
socket; ``--clients`` job processes (``python -c``, the job client ``ddlsched.live``) each on
their own pair of servers, so the gate lets every ask start, time ``--asks`` rounds of
``live.may_communicate(M)`` then ``live.done_communicating()`` — two request/answer round trips,
what a gated job adds to each iteration — and report the median, p90 and p99 of one round
(ask + done) and of the ask alone. Record the numbers in docs/live.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from ddlsched.live.channel import CommChannel  # noqa: E402
from ddlsched.policies.gates import AdaDual  # noqa: E402

CLIENT = """
import json, sys, time
import ddlsched.live as live
n = int(sys.argv[1])
live.may_communicate(1e6); live.done_communicating()  # connect first
rounds, asks = [], []
for i in range(n):
    t0 = time.perf_counter()
    live.may_communicate(25e6)
    t1 = time.perf_counter()
    live.done_communicating()
    t2 = time.perf_counter()
    rounds.append(t2 - t0)
    asks.append(t1 - t0)
print(json.dumps({"rounds": rounds, "asks": asks}))
"""


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--asks", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "comm.sock")
        with CommChannel(path, AdaDual(), num_servers=2 * args.clients) as ch:
            procs = []
            for j in range(args.clients):
                ch.register(j, [2 * j, 2 * j + 1])
                env = dict(
                    os.environ,
                    PYTHONPATH=str(ROOT / "src"),
                    DDLSCHED_COMM=path,
                    DDLSCHED_JOB_ID=str(j),
                    RANK="0",
                )
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", CLIENT, str(args.asks)],
                        env=env,
                        stdout=subprocess.PIPE,
                        text=True,
                    )
                )
            rounds: list[float] = []
            asks: list[float] = []
            for p in procs:
                out, _ = p.communicate(timeout=600)
                doc = json.loads(out)
                rounds += doc["rounds"]
                asks += doc["asks"]
    ms = 1e3
    result = {
        "asks": args.asks,
        "clients": args.clients,
        "round_median_ms": statistics.median(rounds) * ms,
        "round_p90_ms": quantile(rounds, 0.9) * ms,
        "round_p99_ms": quantile(rounds, 0.99) * ms,
        "ask_median_ms": statistics.median(asks) * ms,
        "ask_p90_ms": quantile(asks, 0.9) * ms,
        "python": platform.python_version(),
        "load_avg_1m": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
