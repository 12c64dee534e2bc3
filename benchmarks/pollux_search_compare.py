"""Benchmark: our Pollux allocation search against the artifact's NSGA-II on recorded rounds.

Not a test. Needs the Pollux artifact data (default ../shared/data/pollux) and pymoo
(``pip install -e '.[bench]'``).

    python benchmarks/pollux_search_compare.py record --workloads 6,1,3 --out /tmp/pollux-rounds
    python benchmarks/pollux_search_compare.py compare /tmp/pollux-rounds/rounds-6.pkl \
        --seeds 0,1,2 --every 5

``record`` runs ``ddlsched run --policy pollux --set semantics=rounds`` on workload-N and pickles
every round's :class:`~ddlsched.policies.pollux_search.RoundProblem`. ``compare`` solves the
rounds with :func:`~ddlsched.policies.pollux_search.search` and with the artifact's NSGA-II
(:class:`~ddlsched.policies.pollux_nsga.NSGA2Search`, jobs' rows carried by id, the current
allocation in every first population) made as the artifact's (pol:115-188, 376-420; pymoo
0.4.2 there, current pymoo here): population 100, 100 generations, the per-node integer encoding with jobs in the artifact's repair order, its
single-point crossover over jobs, its three-part mutation (reset a job to its current row, zero
some counts, raise some counts), its repair (at most one multi-node job per node, earlier jobs
win; replica limits over a random node order; node capacity, earlier jobs win), objectives
(F1 = −power mean, F2 = −cluster utility) and pick (lowest F1 on the first front). Seeding as
the artifact: the previous round's Pareto set (jobs matched by id); the first round, and — since
the recorded trajectory is ours, not NSGA's — every round also gets the current allocation.
With ``--every K`` the NSGA-II chain runs on every K-th round (seeded from the last one it
solved). Both results are scored with the same :func:`objective`.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from ddlsched.policies.pollux_nsga import NSGA2Search  # noqa: E402
from ddlsched.policies.pollux_search import (  # noqa: E402
    RoundProblem,
    SearchStats,
    objective,
    search,
    violations,
)

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "pollux"


# -------------------------------------------------------------------------------------------
# recording
# -------------------------------------------------------------------------------------------


def record(workloads: list[str], out: Path, data: Path, folder: str = "workloads") -> None:
    """Run Pollux on each workload of ``folder`` and pickle its rounds to
    ``out/rounds-N.pkl``."""
    from ddlsched.api import simulate_named
    from ddlsched.policies.pollux import Pollux

    out.mkdir(parents=True, exist_ok=True)
    for n in workloads:
        rounds: list[RoundProblem] = []
        res = simulate_named(
            "luo24",
            str(data / folder / f"workload-{n}.csv"),
            Pollux(record=rounds),
            settings={"profiles": str(data / "traces"), "semantics": "rounds"},
        )
        path = out / f"rounds-{n}.pkl"
        with open(path, "wb") as f:
            pickle.dump(rounds, f)
        print(
            f"workload-{n}: {len(rounds)} rounds, avg JCT {res.summary['avg_jct']:.1f} s → {path}"
        )


# -------------------------------------------------------------------------------------------
# comparison
# -------------------------------------------------------------------------------------------


def compare(path: Path, seeds: list[int], every: int, min_jobs: int) -> dict[str, float]:
    """Ours vs the reference NSGA-II on the recorded rounds of one workload; prints a summary."""
    with open(path, "rb") as f:
        rounds: list[RoundProblem] = pickle.load(f)
    ours_t, ours_f, exact = [], [], 0
    for p in rounds:
        st = SearchStats()
        t0 = time.perf_counter()
        a = search(p, st)
        ours_t.append(time.perf_counter() - t0)
        assert not violations(p, a), violations(p, a)
        ours_f.append(objective(p, a))
        exact += st.exact
    picked = [k for k in range(0, len(rounds), every) if rounds[k].num_jobs >= min_jobs]
    print(
        f"{path.name}: {len(rounds)} rounds; ours {1e3 * statistics.mean(ours_t):.2f} ms mean, "
        f"{1e3 * max(ours_t):.1f} ms max; relaxation optimum packed (provably optimal) in "
        f"{exact}/{len(rounds)}; NSGA-II on {len(picked)} rounds (every {every}, ≥ {min_jobs} jobs)"
    )
    summary: dict[str, float] = {}
    for seed in seeds:
        ref = NSGA2Search(seed, warm_start="id", with_current=True)
        gaps, times, wins = [], [], 0
        for k in picked:
            p = rounds[k]
            t0 = time.perf_counter()
            a = ref(p)
            times.append(time.perf_counter() - t0)
            assert not violations(p, a), violations(p, a)
            f = objective(p, a)
            wins += ours_f[k] >= f - 1e-9
            gaps.append((ours_f[k] - f) / f if f > 0 else 0.0)
        worst = int(np.argmin(gaps))
        print(
            f"  seed {seed}: ours ≥ NSGA-II in {wins}/{len(picked)} rounds; relative gap "
            f"(ours − NSGA)/NSGA mean {100 * statistics.mean(gaps):+.3f} %, worst "
            f"{100 * gaps[worst]:+.3f} % (t = {rounds[picked[worst]].time:.0f} s); "
            f"NSGA-II {statistics.mean(times):.2f} s/round"
        )
        summary[f"seed{seed}_wins"] = wins / len(picked)
    return summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="record the rounds of Pollux runs")
    rec.add_argument("--workloads", default="6,1,3")
    rec.add_argument("--out", type=Path, default=Path("/tmp/pollux-rounds"))
    rec.add_argument("--data", type=Path, default=DATA)
    rec.add_argument(
        "--folder", default="workloads", help="workload folder, e.g. workloads-3.0-generated"
    )
    cmp_ = sub.add_parser("compare", help="our search vs NSGA-II on recorded rounds")
    cmp_.add_argument("rounds", type=Path, nargs="+")
    cmp_.add_argument("--seeds", default="0,1,2")
    cmp_.add_argument("--every", type=int, default=1, help="NSGA-II on every K-th round")
    cmp_.add_argument("--min-jobs", type=int, default=2, help="skip rounds with fewer jobs")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        if not (args.data / "traces").is_dir():
            sys.exit(f"no Pollux data at {args.data}")
        record(args.workloads.split(","), args.out, args.data, args.folder)
    else:
        for path in args.rounds:
            compare(path, [int(s) for s in args.seeds.split(",")], args.every, args.min_jobs)


if __name__ == "__main__":
    main()
