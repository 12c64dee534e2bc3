"""Sia's pollux-unaware baseline searched as the artifact searches it (issue #29): ddlsched's
``pollux-unaware`` with ``--set pollux_search=nsga2`` under several seeds, beside the artifact's
own (unseeded) runs and beside ddlsched's deterministic search.

    python benchmarks/sia_unaware_nsga.py SIA_DIR --results RESULTS.csv --trace philly \
        --workloads 2,3 --seeds 1,2,3 [--jobs 2] [--keep DIR]

The artifact's NSGA-II is unseeded, so one artifact run is one draw of a random variable; this
draws more of the same variable with ddlsched's engine and models (the search the artifact's,
policies/pollux_nsga.py) and says whether each artifact run lies within their range and how
far their means are apart. Runs as ``benchmarks/sia_fidelity.py`` does (``sia-64``,
``semantics=rounds``, ``calibration=sia``, interval 60), each in its own process, ``--jobs``
at a time. Not a test: the artifact is not in this repository. Needs pymoo
(``pip install 'ddlsched[nsga]'``); about 1 s per 60-s round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sia_fidelity import artifact_results, run_argv  # noqa: E402


def run(sia_dir: Path, trace: str, workload: str, seed: int | None, out: Path) -> float:
    """One ddlsched run (``seed`` None: the deterministic search); its average JCT. A kept
    folder with a summary is reused (a study resumes where it stopped)."""
    done = out / "summary.json"
    if not done.exists():
        nsga = {"pollux_search": "nsga2"} if seed is not None else {}
        argv = run_argv(sia_dir, trace, workload, "pollux-unaware", **nsga)
        argv += ["--out", str(out), "--overwrite", "--quiet"]
        argv += ["--seed", str(seed)] if seed is not None else []
        subprocess.run(
            [sys.executable, "-m", "ddlsched", *argv], check=True, stdout=subprocess.DEVNULL
        )
    return float(json.loads(done.read_text())["avg_jct"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sia_dir", type=Path)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--trace", default="philly")
    ap.add_argument("--workloads", default="2,3")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep run folders under KEEP; runs already there are reused",
    )
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    workloads = [f"workload-{w.strip()}" for w in args.workloads.split(",")]
    theirs = {
        w: got
        for (_, w), got in artifact_results(
            args.results, args.trace, None, {"pollux-unaware"}
        ).items()
    }
    base = args.keep or Path(tempfile.mkdtemp(prefix="sia-nsga-"))
    tasks = [(w, s) for w in workloads for s in [None, *seeds]]

    def one(task: tuple[str, int | None]) -> float:
        w, s = task
        out = base / f"{args.trace}_{w}_{'ddlsched' if s is None else f'nsga2-s{s}'}"
        return run(args.sia_dir, args.trace, w, s, out)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        got = dict(zip(tasks, pool.map(one, tasks), strict=True))
    print(
        f"{'trace':8} {'workload':11} {'artifact runs':24} {'ddlsched':>9} "
        f"{'nsga2 mean':>10} {'nsga2 range':>19} {'gap':>7}  artifact inside"
    )
    for w in workloads:
        ours = got[(w, None)]
        draws = [got[(w, s)] for s in seeds]
        mean = statistics.fmean(draws)
        arts = theirs.get(w, [])
        art = ", ".join(f"{a:.1f}" for a in arts) or "-"
        gap = f"{statistics.fmean(arts) / mean - 1:+7.1%}" if arts else "      -"
        inside = ", ".join("yes" if min(draws) <= a <= max(draws) else "no" for a in arts) or "-"
        print(
            f"{args.trace:8} {w:11} {art:24} {ours:9.1f} {mean:10.1f} "
            f"{min(draws):9.1f} … {max(draws):7.1f} {gap}  {inside}"
        )
        print(f"{'':20} nsga2 per seed: " + ", ".join(f"{s}: {got[(w, s)]:.1f}" for s in seeds))
    print(f"run folders: {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
