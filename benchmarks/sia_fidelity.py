"""Sia fidelity check (issue #29): ddlsched's average JCT beside the Sia artifact's own.

    python benchmarks/sia_fidelity.py SIA_DIR --results RESULTS.csv [--trace philly]
        [--workloads 1,2,3] [--policy sia]

``SIA_DIR`` is an extracted ``sia-simulator`` folder of github.com/siasosp23/artifacts
(commit ``aaf7a0de``): its ``workloads/<trace>/workload-N.csv`` and ``traces/`` profiles.
``RESULTS.csv`` holds the artifact's results, one row per run, with columns ``trace,
workload, policy, avg_jct_s`` (as written by running the artifact's ``multi_simulator.py``
and its ``print_run_stats.py`` formulas). For every row of the chosen trace, workloads and
policies this runs ddlsched the way the artifact ran it — ``sia-64``, ``semantics=rounds``,
``calibration=sia``, the artifact's profiles — and prints both average JCTs, their relative
difference (target: within 5 %), and ddlsched's wall time. Not a test: the artifact is not in
this repository.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

#: ddlsched policy and settings for each policy name of the artifact's results
POLICIES: dict[str, tuple[str, dict[str, str]]] = {
    "sia": ("sia", {"interval": "60"}),
    "pollux-unaware": ("pollux-unaware", {"interval": "60"}),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sia_dir", type=Path)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--trace", default="philly")
    ap.add_argument("--workloads", default="1,2,3")
    ap.add_argument("--policy", action="append", default=None)
    args = ap.parse_args(argv)
    from ddlsched.cli import main as cli

    wanted = {f"workload-{w.strip()}" for w in args.workloads.split(",")}
    policies = args.policy or ["sia"]
    with args.results.open(newline="") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["trace"] == args.trace and r["workload"] in wanted and r["policy"] in policies
        ]
    rows.sort(key=lambda r: (r["policy"], r["workload"]))
    if not rows:
        print("no matching rows in", args.results, file=sys.stderr)
        return 2
    print(
        f"{'trace':8} {'workload':11} {'policy':7} {'artifact':>10} {'ddlsched':>10} "
        f"{'diff':>7} {'wall s':>7}"
    )
    ours_all, theirs_all = [], []
    for r in rows:
        name, sets = POLICIES[r["policy"]]
        wl = args.sia_dir / "workloads" / args.trace / f"{r['workload']}.csv"
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "o"
            argv2 = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", name]
            settings = {
                "profiles": str(args.sia_dir / "traces"),
                "semantics": "rounds",
                "calibration": "sia",
                **sets,
            }
            for k, v in settings.items():
                argv2 += ["--set", f"{k}={v}"]
            t0 = time.perf_counter()
            rc = cli([*argv2, "--quiet", "--out", str(out)])
            wall = time.perf_counter() - t0
            if rc != 0:
                print(f"ddlsched failed on {wl} ({rc})", file=sys.stderr)
                return rc
            import json

            ours = json.loads((out / "summary.json").read_text())["avg_jct"]
        theirs = float(r["avg_jct_s"])
        ours_all.append(ours)
        theirs_all.append(theirs)
        diff = (ours - theirs) / theirs
        print(
            f"{args.trace:8} {r['workload']:11} {r['policy']:7} {theirs:10.1f} {ours:10.1f} "
            f"{diff:+7.1%} {wall:7.1f}",
            flush=True,
        )
    if len(rows) > 1:
        o, t = sum(ours_all) / len(ours_all), sum(theirs_all) / len(theirs_all)
        print(f"{'mean':8} {'':11} {'':7} {t:10.1f} {o:10.1f} {(o - t) / t:+7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
