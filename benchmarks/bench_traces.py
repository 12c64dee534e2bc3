"""Benchmark: import the real traces (Philly job summaries, Gavel's 15 Philly VC traces, the
three Tiresias conversions) and compute their stats.

Not a test: run ``make bench`` (or ``python benchmarks/bench_traces.py [--data DIR]``). Target
(issue #6): the 82,247-job ``philly.csv`` imported in at most 3 s, cold, on the project's 2-core
machine. Skips with a message when the shared data is absent.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched.workloads.trace_stats import trace_stats  # noqa: E402
from ddlsched.workloads.traces import read_trace  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TARGET_PHILLY_S = 3.0


def timed(label: str, files: list[Path], **kwargs: object) -> float:
    """Import ``files`` (cold: parser caches cleared) and print jobs and seconds."""
    from ddlsched.workloads import philly

    philly._read_cached.cache_clear()
    t0 = time.perf_counter()
    n = sum(len(read_trace(f, **kwargs)) for f in files)  # type: ignore[arg-type]
    wall = time.perf_counter() - t0
    print(f"{label:34s} {len(files):3d} files {n:8,d} jobs {wall:7.2f} s")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    args = ap.parse_args()
    philly_csv = args.data / "pollux" / "traces" / "philly.csv"
    gavel = args.data / "gavel"
    if not philly_csv.is_file() or not gavel.is_dir():
        print(f"skipped: shared data not found under {args.data}")
        return
    wall = timed("philly.csv", [philly_csv])
    msr = sorted((gavel / "msr-seed0").glob("*.trace"))
    timed("gavel msr-seed0 (steps)", msr)
    thr = gavel / "simulation_throughputs.json"
    timed("gavel msr-seed0 (+ V100 durations)", msr, throughputs=thr)
    timed("tiresias converted", sorted((gavel / "converted").glob("*.csv")))
    jobs = read_trace(philly_csv)
    t0 = time.perf_counter()
    trace_stats(jobs)
    print(f"{'trace_stats(philly)':34s} {time.perf_counter() - t0:31.2f} s")
    verdict = "ok" if wall <= TARGET_PHILLY_S else "SLOWER THAN TARGET"
    print(f"philly.csv import {wall:.2f} s, target ≤ {TARGET_PHILLY_S:g} s: {verdict}")


if __name__ == "__main__":
    main()
