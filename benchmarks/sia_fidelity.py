"""Sia fidelity check (issue #29): ddlsched's average JCT beside the Sia artifact's own.

    python benchmarks/sia_fidelity.py SIA_DIR --results RESULTS.csv [--trace philly]
        [--workloads 1,2,3] [--policy sia|gavel-tunedjobs ...]

``SIA_DIR`` is an extracted ``sia-simulator`` folder of github.com/siasosp23/artifacts
(commit ``aaf7a0de``): its ``workloads/<trace>/workload-N.csv`` and ``traces/`` profiles.
``RESULTS.csv`` holds the artifact's results, one row per run, with columns ``trace,
workload, policy, avg_jct_s`` (as written by running the artifact's ``multi_simulator.py``
and its ``print_run_stats.py`` formulas). ``--policy`` names ddlsched policies (default
``sia``; repeatable); :data:`POLICIES` maps each to the artifact's policy name in the results
and to its settings (one entry per policy). For every row of the chosen trace, workloads and
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

#: ddlsched policy → (the artifact's policy name in the results, ddlsched settings)
POLICIES: dict[str, tuple[str, dict[str, str]]] = {
    "sia": ("sia", {"interval": "60"}),  # --policy=sia --interval=60
    "gavel-tunedjobs": ("gavel", {"gavel_round": "360"}),  # --policy=gavel --interval=360
    "pollux-unaware": ("pollux-unaware", {"interval": "60"}),  # multi_simulator_unaware.py
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sia_dir", type=Path)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--trace", default="philly")
    ap.add_argument("--workloads", default="1,2,3")
    ap.add_argument("--policy", action="append", default=None, choices=sorted(POLICIES))
    args = ap.parse_args(argv)
    from ddlsched.cli import main as cli

    wanted = {f"workload-{w.strip()}" for w in args.workloads.split(",")}
    ours_of = {POLICIES[p][0]: p for p in args.policy or ["sia"]}
    with args.results.open(newline="") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["trace"] == args.trace and r["workload"] in wanted and r["policy"] in ours_of
        ]
    rows.sort(key=lambda r: (r["policy"], r["workload"]))
    if not rows:
        print("no matching rows in", args.results, file=sys.stderr)
        return 2
    print(
        f"{'trace':8} {'workload':11} {'policy':15} {'artifact':>10} {'ddlsched':>10} "
        f"{'diff':>7} {'wall s':>7}"
    )
    pairs: dict[str, list[tuple[float, float]]] = {}  # policy → (artifact, ddlsched) per row
    for r in rows:
        name = ours_of[r["policy"]]
        sets = POLICIES[name][1]
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
        pairs.setdefault(name, []).append((theirs, ours))
        diff = (ours - theirs) / theirs
        print(
            f"{args.trace:8} {r['workload']:11} {name:15} {theirs:10.2f} {ours:10.2f} "
            f"{diff:+7.2%} {wall:7.1f}",
            flush=True,
        )
    for name, got in pairs.items():
        if len(got) > 1:
            t = sum(a for a, _ in got) / len(got)
            o = sum(b for _, b in got) / len(got)
            print(f"{'mean':8} {'':11} {name:15} {t:10.2f} {o:10.2f} {(o - t) / t:+7.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
