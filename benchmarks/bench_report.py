"""Benchmark: loading, interval analysis and figures of a Philly-sized run (82k jobs).

Not a test: run ``python benchmarks/bench_report.py`` and record the numbers in
docs/performance.md. Target (issue #6, 2-core machine): every figure of an 82k-job run, and the
whole HTML report, in a few seconds each; the Gantt chart stays bounded (64 GPUs, ≤ 4000 bars).

The run is synthetic (random jobs of 1–16 GPUs, some spanning servers, some sharing), written
in the files ``ddlsched run`` writes, so it needs no trace.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from ddlsched.report import build_report, load_run
from ddlsched.report.figures import figure_bytes, gantt, jct_cdf, queue_cdf, utilisation
from ddlsched.report.intervals import contended_intervals, shared_intervals


def synthetic_run(d: Path, jobs: int, servers: int, gpus_per_server: int, seed: int) -> Path:
    """A run directory with ``jobs`` one-segment jobs on ``servers`` × ``gpus_per_server``."""
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0, jobs * 30.0, jobs))
    start = arrival + rng.exponential(200.0, jobs)
    finish = start + rng.exponential(3000.0, jobs) + 1.0
    sizes = rng.choice([1, 1, 1, 2, 4, 8, 16], jobs)
    jrows = ["job_id,arrival,start,finish,jct,queueing,gpus,placement,preemptions"]
    srows = ["job_id,start,end,placement"]
    for j in range(jobs):
        n = int(sizes[j])
        first = int(rng.integers(0, servers * gpus_per_server - n))
        gpus = range(first, first + n)
        label = ";".join(f"{g // gpus_per_server}:{g % gpus_per_server}" for g in gpus)
        a, s, f = float(arrival[j]), float(start[j]), float(finish[j])
        jrows.append(f"{j},{a!r},{s!r},{f!r},{f - a!r},{s - a!r},{n},{label},0")
        srows.append(f"{j},{s!r},{f!r},{label}")
    d.mkdir(parents=True, exist_ok=True)
    (d / "jobs.csv").write_text("\n".join(jrows) + "\n")
    (d / "segments.csv").write_text("\n".join(srows) + "\n")
    (d / "config.json").write_text(json.dumps({"policy": "synthetic", "seed": seed}))
    (d / "summary.json").write_text(
        json.dumps({"avg_jct": float(np.mean(finish - arrival)), "num_jobs": jobs})
    )
    return d


def timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:28s} {time.perf_counter() - t0:7.2f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=82_000)
    ap.add_argument("--servers", type=int, default=300)
    ap.add_argument("--gpus-per-server", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = synthetic_run(Path(tmp) / "run", args.jobs, args.servers, args.gpus_per_server, 0)
        run = timed(f"load ({args.jobs} jobs)", lambda: load_run(d))
        run.label = "synthetic"
        shared = timed("shared intervals", lambda: shared_intervals(run))
        contended = timed("contended intervals", lambda: contended_intervals(run))
        print(f"  {len(shared)} shared, {len(contended)} contended GPU intervals")
        for name, make in (
            ("JCT CDF", lambda: jct_cdf([run])),
            ("queueing CDF", lambda: queue_cdf([run])),
            ("utilisation", lambda: utilisation([run])),
            ("Gantt (64 GPUs)", lambda: gantt(run, shared=shared, contended=contended)),
        ):
            timed(f"figure: {name}", lambda make=make: figure_bytes(make(), "png"))
        html = timed("HTML report (all of it)", lambda: build_report([run], "bench"))
        print(f"  report: {len(html) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
