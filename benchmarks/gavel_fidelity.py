"""Issue #17 fidelity: our Gavel policies against Gavel's own simulator on the same traces.

Not a test (it needs Gavel's results): ``python benchmarks/gavel_fidelity.py
[--reference /work/gavel-run/reference.json]``. The reference comes from
``benchmarks/gavel_reference.py`` (Gavel c4fa400's ``simulate_scheduler_with_trace.py``, ECOS,
seed 0, 360 s rounds; docs/gavel-reference.md). For every (trace, policy) it runs ours on the
same trace file and cluster (``gavel-V:P:K``, seed 0) and prints Gavel's average JCT, ours and
the difference, then per policy the largest |difference|.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched.api import simulate_named  # noqa: E402
from ddlsched.workloads.traces import TraceOptions, gavel_data_file  # noqa: E402

#: Gavel's policy names → ours (Gavel's fifo is its quirk: every job tried on v100 first)
POLICIES = {
    "fifo": ("gavel-fifo", {"gavel_fifo_quirk": True}),
    "fifo_perf": ("gavel-fifo-perf", {}),
    "max_min_fairness": ("max-min-fairness", {}),
    "max_min_fairness_perf": ("max-min-fairness-perf", {}),
    "finish_time_fairness": ("finish-time-fairness", {}),
    "finish_time_fairness_perf": ("finish-time-fairness-perf", {}),
    "min_total_duration_perf": ("min-total-duration-perf", {}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reference", default="/work/gavel-run/reference.json")
    args = ap.parse_args()
    runs = json.load(open(args.reference))
    thr = gavel_data_file()
    worst: dict[str, float] = defaultdict(float)
    print(f"{'trace':40s} {'policy':28s} {'Gavel (h)':>10s} {'ours (h)':>10s} {'diff':>8s}")
    for r in runs:
        ours_name, extra = POLICIES[r["policy"]]
        res = simulate_named(
            f"gavel-{r['cluster']}",
            r["trace_file"],
            ours_name,
            seed=0,
            settings=extra or None,
            trace=TraceOptions(gavel_throughputs=str(thr)),
        )
        ours, theirs = res.summary["avg_jct"], r["avg_jct_s"]
        diff = (ours - theirs) / theirs
        worst[ours_name] = max(worst[ours_name], abs(diff))
        name = os.path.basename(r["trace_file"]).removesuffix(".trace")
        print(
            f"{name:40s} {ours_name:28s} {theirs / 3600:10.2f} {ours / 3600:10.2f} "
            f"{100 * diff:+7.1f}%",
            flush=True,
        )
    print()
    for name, w in worst.items():
        print(f"{name:28s} largest |difference| {100 * w:.1f} %")


if __name__ == "__main__":
    main()
