"""Benchmark: our Pollux allocation search against the artifact's NSGA-II on recorded rounds.

Not a test. Needs the Pollux artifact data (default ../shared/data/pollux) and pymoo
(``pip install -e '.[bench]'``).

    python benchmarks/pollux_search_compare.py record --workloads 6,1,3 --out /tmp/pollux-rounds
    python benchmarks/pollux_search_compare.py compare /tmp/pollux-rounds/rounds-6.pkl \
        --seeds 0,1,2 --every 5

``record`` runs ``ddlsched run --policy pollux --set semantics=rounds`` on workload-N and pickles
every round's :class:`~ddlsched.policies.pollux_search.RoundProblem`. ``compare`` solves the
rounds with :func:`~ddlsched.policies.pollux_search.search` and with a reference NSGA-II made as
the artifact's (pol:115-188, 376-420; pymoo 0.4.2 there, current pymoo here): population 100,
100 generations, the per-node integer encoding with jobs in the artifact's repair order, its
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
# the reference NSGA-II
# -------------------------------------------------------------------------------------------


def _nsga_classes():
    """pymoo classes of the reference NSGA-II (imported late: pymoo is optional)."""
    from pymoo.core.crossover import Crossover
    from pymoo.core.mutation import Mutation
    from pymoo.core.problem import Problem
    from pymoo.core.repair import Repair

    class Round(Problem):
        """The artifact's Problem (pol:200-420) on a RoundProblem, jobs in repair order."""

        def __init__(self, p: RoundProblem, rng: np.random.Generator) -> None:
            self.p, self.rng = p, rng
            self.order = np.asarray(
                p.priority if p.priority is not None else np.arange(p.num_jobs), dtype=np.int64
            )
            self.base = p.current[self.order]
            self.cap = p.node_capacity
            self.max_reps = p.max_replicas[self.order]
            self.single = p.single[self.order]
            self.multi = p.multi[self.order]
            self.restart = p.restart[self.order]
            J, N = self.base.shape
            super().__init__(n_var=J * N, n_obj=2, xl=0, xu=np.tile(self.cap, J), vtype=int)

        def states(self, X: np.ndarray) -> np.ndarray:
            return np.asarray(X, dtype=np.int64).reshape(len(X), *self.base.shape)

        def raw_speedups(self, S: np.ndarray) -> np.ndarray:
            reps = S.sum(axis=2)
            nodes = np.count_nonzero(S, axis=2)
            cols = np.minimum(reps, self.single.shape[1] - 1)
            rows = np.arange(S.shape[1])[None, :]
            s = np.where(nodes > 1, self.multi[rows, cols], self.single[rows, cols])
            return np.where(reps > self.single.shape[1] - 1, 0.0, s)

        def utilities(self, S: np.ndarray) -> np.ndarray:
            """Σ_j speedup_j / GPUs of the nodes in use (pol:262-295, one resource type)."""
            total = (np.any(S > 0, axis=1) * self.cap).sum(axis=1)
            sp = self.raw_speedups(S).sum(axis=1)
            return np.divide(sp, total, out=np.zeros(len(S)), where=total > 0)

        def _evaluate(self, X, out, *args, **kwargs):
            S = self.states(X)
            s = self.p.scale * self.raw_speedups(S)
            restart = np.any(S != self.base, axis=2)
            s = s * np.where(restart, self.restart, 1.0)
            mean = (np.sum((s + self.p.eps) ** -1.0, axis=1) / S.shape[1]) ** -1.0
            out["F"] = np.column_stack([-mean, -self.utilities(S)])

    class JobCrossover(Crossover):
        """Single-point crossover over jobs (pol:346-360)."""

        def __init__(self) -> None:
            super().__init__(n_parents=2, n_offsprings=2)

        def _do(self, problem, X, *args, **kwargs):
            _, n_matings, _ = X.shape
            S = X.reshape(2, n_matings, *problem.base.shape)
            J = S.shape[2]
            points = problem.rng.integers(J, size=(n_matings, 1))
            mask = np.arange(J) < points  # (matings, jobs)
            out = S.copy()
            out[0][mask] = S[1][mask]
            out[1][mask] = S[0][mask]
            return out.reshape(2, n_matings, -1)

    class JobMutation(Mutation):
        """Reset jobs to their current rows, zero some counts, raise some (pol:362-374)."""

        def _do(self, problem, X, *args, **kwargs):
            rng = problem.rng
            S = problem.states(X).copy()
            reset = rng.random(S.shape[:2]) < 0.1
            S = np.where(reset[:, :, None], problem.base, S)
            prob = np.where(rng.random(S.shape[:2]) < 0.1, 0.1, 0.0)
            S[rng.random(S.shape) < prob[:, :, None]] = 0
            free = problem.cap - S.sum(axis=1)  # (pop, nodes)
            mask1 = np.broadcast_to((free >= 1)[:, None, :], S.shape)
            prob1 = mask1 / np.maximum(mask1.sum(axis=1, keepdims=True), 1.0)
            mask2 = np.logical_and(S, mask1)
            prob2 = mask2 / np.maximum(mask2.sum(axis=1, keepdims=True), 1.0)
            m = rng.random(S.shape) < prob1 + prob2 - prob1 * prob2
            r = rng.integers(S, np.broadcast_to(problem.cap, S.shape) + 1)
            S[m] = r[m]
            return S.reshape(len(S), -1)

    class JobRepair(Repair):
        """At most one multi-node job per node, replica limits, node capacity (pol:376-420)."""

        def _do(self, problem, X, *args, **kwargs):
            S = problem.states(X).copy()
            distributed = np.count_nonzero(S, axis=2) > 1
            mask = (S * distributed[:, :, None] > 0).cumsum(axis=1) > 1
            S[mask] = 0
            shuffle = np.argsort(problem.rng.random(S.shape), axis=2)
            S = np.take_along_axis(S, shuffle, axis=2)
            S = np.minimum(np.cumsum(S, axis=2), problem.max_reps[None, :, None])
            S = np.diff(S, axis=2, prepend=0)
            S = np.take_along_axis(S, np.argsort(shuffle, axis=2), axis=2)
            S = np.minimum(np.cumsum(S, axis=1), problem.cap)
            S = np.diff(S, axis=1, prepend=0)
            return S.reshape(len(S), -1)

    return Round, JobCrossover, JobMutation, JobRepair


class ReferenceNSGA2:
    """The artifact's NSGA-II, chained over rounds (its previous Pareto set seeds the next)."""

    def __init__(self, seed: int, pop_size: int = 100, generations: int = 100) -> None:
        self.seed, self.pop_size, self.generations = seed, pop_size, generations
        self.rng = np.random.default_rng(seed)
        self.prev: tuple[tuple[int, ...], np.ndarray] | None = None  # (job ids, states)
        self.calls = 0

    def solve(self, p: RoundProblem) -> np.ndarray:
        """The chosen allocation (J × N, the problem's job order)."""
        from pymoo.algorithms.moo.nsga2 import NSGA2
        from pymoo.optimize import minimize
        from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

        Round, JobCrossover, JobMutation, JobRepair = _nsga_classes()
        prob = Round(p, self.rng)
        ids = [p.job_ids[i] for i in prob.order]
        seeds = [prob.base]
        if self.prev is not None:
            prev_ids, prev_states = self.prev
            where = {jid: k for k, jid in enumerate(prev_ids)}
            adapted = np.zeros((len(prev_states), *prob.base.shape), dtype=np.int64)
            for k, jid in enumerate(ids):
                if jid in where:
                    adapted[:, k] = prev_states[:, where[jid]]
            seeds = [*adapted, prob.base]
        sampling = np.unique(np.stack(seeds).reshape(len(seeds), -1), axis=0)
        algorithm = NSGA2(
            pop_size=self.pop_size,
            sampling=sampling,
            crossover=JobCrossover(),
            mutation=JobMutation(),
            repair=JobRepair(),
            eliminate_duplicates=True,
        )
        self.calls += 1
        res = minimize(
            prob,
            algorithm,
            ("n_gen", self.generations),
            seed=self.seed * 100003 + self.calls,
            verbose=False,
        )
        X = np.atleast_2d(res.X)
        F = np.atleast_2d(res.F)
        states = prob.states(X)
        self.prev = (tuple(ids), states.copy())
        front = NonDominatedSorting().do(F, only_non_dominated_front=True)
        best = front[int(np.argmin(F[front, 0]))]
        alloc = np.zeros_like(prob.base)
        alloc[prob.order] = states[best]
        return alloc


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
        ref = ReferenceNSGA2(seed)
        gaps, times, wins = [], [], 0
        for k in picked:
            p = rounds[k]
            t0 = time.perf_counter()
            a = ref.solve(p)
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
