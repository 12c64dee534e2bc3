"""Benchmark (issue #17): a 1,000-job Gavel trace on ``gavel-36:36:36`` with Gavel's policies.

Not a test: ``make bench`` or ``python benchmarks/bench_gavel.py [--policies a,b]``. The trace
is 1,000 jobs sampled (seed 0) from Gavel's Philly-derived ``msr-seed0/ee9e8c.trace`` in
``../shared/data/gavel``, durations per GPU type from its throughputs file. Target: the
``max-min-fairness-perf`` run under 60 s on the project's 2-core machine, process start to
files written (it is what ``ddlsched run`` does, timed from outside). Skips when the data is
absent.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gavel"
TRACE = DATA / "msr-seed0" / "ee9e8c.trace"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--policies", default="max-min-fairness-perf,gavel-fifo-perf")
    args = ap.parse_args()
    if not TRACE.exists():
        print(f"skipped: {TRACE} not found")
        return 0
    for policy in args.policies.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            argv = [sys.executable, "-m", "ddlsched.cli", "run", "--cluster", "gavel-36:36:36"]
            argv += ["--workload", str(TRACE), "--sample", "1000", "--policy", policy]
            argv += ["--quiet", "--out", str(Path(tmp) / "out")]
            t0 = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
            wall = time.perf_counter() - t0
        line = next((x for x in proc.stdout.splitlines() if "avg JCT" in x), proc.stderr.strip())
        print(f"{policy:28s} {wall:6.1f} s  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
