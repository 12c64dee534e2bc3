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
difference (target: within 5 %), and ddlsched's wall time. Rows ``NAME#TAG`` are repeated
runs of an unseeded artifact policy (``pollux-unaware#r2``): the artifact's value is their mean,
and their range is printed beside it. Not a test: the artifact is not in this repository.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

#: ddlsched policy → (the artifact's policy name in the results, ddlsched settings)
POLICIES: dict[str, tuple[str, dict[str, str]]] = {
    # --policy=sia --interval=60; its jobs' models fitted as the artifact's goodput.py does
    "sia": ("sia", {"interval": "60", "goodput_fit": "artifact"}),
    "gavel-tunedjobs": ("gavel", {"gavel_round": "360"}),  # --policy=gavel --interval=360
    # multi_simulator_unaware.py (the same goodput.py)
    "pollux-unaware": ("pollux-unaware", {"interval": "60", "goodput_fit": "artifact"}),
}


def artifact_results(
    results: Path, trace: str, workloads: set[str] | None, policies: set[str]
) -> dict[tuple[str, str], list[float]]:
    """The artifact's average JCTs in ``results`` per (artifact policy, workload) of ``trace``.

    Repeated runs of one workload are rows whose policy is ``NAME#TAG`` (an unseeded artifact
    policy, e.g. ``pollux-unaware#r2``): they are pooled under ``NAME``. ``workloads`` None
    takes every workload; FAILED rows are skipped."""
    runs: dict[tuple[str, str], list[float]] = {}
    with results.open(newline="") as f:
        for r in csv.DictReader(f):
            policy = r["policy"].split("#", 1)[0]
            if r["trace"] != trace or policy not in policies:
                continue
            if workloads is not None and r["workload"] not in workloads:
                continue
            try:
                runs.setdefault((policy, r["workload"]), []).append(float(r["avg_jct_s"]))
            except ValueError:  # a FAILED row
                continue
    return runs


def run_argv(sia_dir: Path, trace: str, workload: str, policy: str, **settings: str) -> list[str]:
    """``ddlsched run`` arguments (without ``--out``) that run ``policy`` on one artifact
    workload the way the artifact ran it: ``sia-64``, the artifact's profiles,
    ``semantics=rounds``, ``calibration=sia`` and :data:`POLICIES`' settings, then
    ``settings`` (which override them)."""
    wl = sia_dir / "workloads" / trace / f"{workload}.csv"
    argv = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", policy]
    sets = {
        "profiles": str(sia_dir / "traces"),
        "semantics": "rounds",
        "calibration": "sia",
        **POLICIES[policy][1],
        **settings,
    }
    for k, v in sets.items():
        argv += ["--set", f"{k}={v}"]
    return argv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sia_dir", type=Path)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--trace", default="philly")
    ap.add_argument("--workloads", default="1,2,3")
    ap.add_argument("--policy", action="append", default=None, choices=sorted(POLICIES))
    ap.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep ddlsched's run directories as KEEP/TRACE_WORKLOAD_POLICY (for per-job "
        "comparisons with benchmarks/sia_unaware_jcts.py)",
    )
    args = ap.parse_args(argv)
    from ddlsched.cli import main as cli

    wanted = {f"workload-{w.strip()}" for w in args.workloads.split(",")}
    ours_of = {POLICIES[p][0]: p for p in args.policy or ["sia"]}
    runs = artifact_results(args.results, args.trace, wanted, set(ours_of))
    if not runs:
        print("no matching rows in", args.results, file=sys.stderr)
        return 2
    print(
        f"{'trace':8} {'workload':11} {'policy':15} {'artifact':>10} {'ddlsched':>10} "
        f"{'diff':>7} {'wall s':>7}  artifact runs"
    )
    pairs: dict[str, list[tuple[float, float]]] = {}  # policy → (artifact, ddlsched) per row
    for (policy, workload), got in sorted(runs.items()):
        name = ours_of[policy]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "o"
            if args.keep is not None:
                out = args.keep / f"{args.trace}_{workload}_{name}"
            argv2 = run_argv(args.sia_dir, args.trace, workload, name)
            t0 = time.perf_counter()
            keep = ["--overwrite"] if args.keep is not None else []
            rc = cli([*argv2, "--quiet", *keep, "--out", str(out)])
            wall = time.perf_counter() - t0
            if rc != 0:
                print(f"ddlsched failed on {args.trace} {workload} ({rc})", file=sys.stderr)
                return rc
            ours = json.loads((out / "summary.json").read_text())["avg_jct"]
        theirs = sum(got) / len(got)
        pairs.setdefault(name, []).append((theirs, ours))
        diff = (ours - theirs) / theirs
        spread = (
            f"{len(got)}: {min(got):.2f} … {max(got):.2f} "
            f"({max(got) / min(got) - 1:+.1%}; ddlsched "
            f"{'inside' if min(got) <= ours <= max(got) else 'outside'})"
            if len(got) > 1
            else "1"
        )
        print(
            f"{args.trace:8} {workload:11} {name:15} {theirs:10.2f} {ours:10.2f} "
            f"{diff:+7.2%} {wall:7.1f}  {spread}",
            flush=True,
        )
    for name, pair in pairs.items():
        if len(pair) > 1:
            t = sum(a for a, _ in pair) / len(pair)
            o = sum(b for _, b in pair) / len(pair)
            print(f"{'mean':8} {'':11} {name:15} {t:10.2f} {o:10.2f} {(o - t) / t:+7.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
