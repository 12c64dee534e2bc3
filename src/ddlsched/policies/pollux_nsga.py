"""The artifacts' own Pollux allocation search: NSGA-II (pymoo), seeded by the run's seed —
``--set pollux_search=nsga2`` on ``pollux`` and ``pollux-unaware``.

Pollux's artifact and Sia's copy of it (``sia-simulator/pollux_unaware.py``, commit
``aaf7a0de``; line numbers below are that file's) search each round's allocation with NSGA-II:
population 100, 100 generations, states J × N (GPUs of job j on node n), jobs in the repair
order (attained service, then submission; 149-152), objectives F1 = −power mean of the
scaled, restart-penalised speedups and F2 = −cluster utility (316-338, 271-297), the chosen
state the lowest F1 of the first front (190). Its operators, as written there:

* crossover (339-352): single point over jobs;
* mutation (354-375): reset 10 % of the jobs to the current allocation; zero each count of
  10 % of the jobs with probability 0.1; raise counts on nodes with a free GPU;
* repair (377-420): at most one multi-node job per node (earlier jobs win), at most
  ``max_replicas`` per job and at most 16 nodes per job over a random node order, node
  capacity (earlier jobs win);
* warm start (``_adapt_prev_states``, 62-89): the previous round's result (its first front,
  ``result.X``) is this round's first population, and jobs present in both rounds are paired **by rank** — the k-th common job
  of the last round's order gives its rows to the k-th of this round's. Two jobs that trade
  places in the order trade rows (docs/reproduction/sia.md, "Saturn w3"). The first round
  starts from the current allocation alone (157-161).

The artifact does not seed NSGA-II, so its runs differ from run to run; here the run's
``--seed`` fixes every draw (pymoo's own generator, handed to the operators). pymoo ≥ 0.6 is
an optional dependency (``pip install 'ddlsched[nsga]'``); the artifact ran pymoo 0.4.2 — the
algorithm is the same, the random streams are not. ddlsched's default search
(:func:`.pollux_search.search`) is deterministic and never scored below this one on recorded
rounds (docs/design.md "Pollux search").
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from ..errors import InputError
from .pollux_search import RoundProblem

#: NSGA-II's population and generations in both artifacts (pollux_unaware.py:164-170)
POP_SIZE = 100
GENERATIONS = 100
#: the repair's most nodes per job (pollux_unaware.py:400; no limit on clusters of ≤ 16 nodes)
MAX_NODES = 16


def require_pymoo(what: str = "--set pollux_search=nsga2") -> None:
    """One line naming the extra when pymoo is not installed."""
    if importlib.util.find_spec("pymoo") is None:
        raise InputError(
            f"{what} needs pymoo (the artifacts' NSGA-II): pip install 'ddlsched[nsga]'"
        )


def _classes() -> tuple[Any, Any, Any, Any]:
    """The artifact's Problem, Crossover, Mutation and Repair on a :class:`RoundProblem`
    (imported late: pymoo is optional). Random draws use pymoo's ``random_state``."""
    from pymoo.core.crossover import Crossover
    from pymoo.core.mutation import Mutation
    from pymoo.core.problem import Problem
    from pymoo.core.repair import Repair

    class Round(Problem):
        """F1, F2 of a population of states (316-338), jobs in the repair order."""

        def __init__(self, p: RoundProblem, order: np.ndarray) -> None:
            self.p = p
            self.base = p.current[order]
            self.cap = p.node_capacity
            self.max_reps = p.max_replicas[order]
            self.single = p.single[order]
            self.multi = p.multi[order]
            self.restart = p.restart[order]
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
            """Σ_j speedup_j / GPUs of the nodes in use (271-297; one resource type)."""
            total = (np.any(S > 0, axis=1) * self.cap).sum(axis=1)
            sp = self.raw_speedups(S).sum(axis=1)
            return np.divide(sp, total, out=np.zeros(len(S)), where=total > 0)

        def _evaluate(self, X, out, *args, **kwargs):
            S = self.states(X)
            s = self.p.scale * self.raw_speedups(S)
            s = s * np.where(np.any(S != self.base, axis=2), self.restart, 1.0)
            mean = (np.sum((s + self.p.eps) ** -1.0, axis=1) / S.shape[1]) ** -1.0
            out["F"] = np.column_stack([-mean, -self.utilities(S)])

    class JobCrossover(Crossover):
        """Single-point crossover over jobs (339-352)."""

        def __init__(self) -> None:
            super().__init__(n_parents=2, n_offsprings=2)

        def _do(self, problem, X, *args, random_state=None, **kwargs):
            _, n_matings, _ = X.shape
            S = np.asarray(X, dtype=np.int64).reshape(2, n_matings, *problem.base.shape)
            J = S.shape[2]
            mask = np.arange(J) < random_state.integers(J, size=(n_matings, 1))
            out = S.copy()
            out[0][mask] = S[1][mask]
            out[1][mask] = S[0][mask]
            return out.reshape(2, n_matings, -1)

    class JobMutation(Mutation):
        """Reset jobs to their current rows, zero some counts, raise some (354-375)."""

        def _do(self, problem, X, *args, random_state=None, **kwargs):
            rng = random_state
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
        """At most one multi-node job per node, replica limits, node capacity (377-420)."""

        def _do(self, problem, X, *args, random_state=None, **kwargs):
            S = problem.states(X).copy()
            distributed = np.count_nonzero(S, axis=2) > 1
            mask = (S * distributed[:, :, None] > 0).cumsum(axis=1) > 1
            S[mask] = 0
            shuffle = np.argsort(random_state.random(S.shape), axis=2)
            S = np.take_along_axis(S, shuffle, axis=2)
            S = np.minimum(np.cumsum(S, axis=2), problem.max_reps[None, :, None])
            S = np.diff(S, axis=2, prepend=0)
            used = np.diff(np.minimum(np.cumsum(S > 0, axis=2), MAX_NODES), axis=2, prepend=0)
            S[used == 0] = 0  # at most MAX_NODES nodes per job, first in the random order
            S = np.take_along_axis(S, np.argsort(shuffle, axis=2), axis=2)
            S = np.minimum(np.cumsum(S, axis=1), problem.cap)
            S = np.diff(S, axis=1, prepend=0)
            return S.reshape(len(S), -1)

    return Round, JobCrossover, JobMutation, JobRepair


def adapt_by_rank(
    prev_ids: tuple[int, ...], prev_states: np.ndarray, ids: tuple[int, ...]
) -> np.ndarray:
    """The artifact's warm start (``_adapt_prev_states``, 62-89; nodes fixed): the common jobs
    paired by rank — the k-th of ``prev_ids`` present in ``ids`` gives its rows to the k-th of
    ``ids`` present in ``prev_ids``; new jobs start with no GPUs."""
    now, before = set(ids), set(prev_ids)
    src = [k for k, jid in enumerate(prev_ids) if jid in now]
    dst = [k for k, jid in enumerate(ids) if jid in before]
    states = np.zeros((len(prev_states), len(ids), prev_states.shape[2]), dtype=np.int64)
    states[:, dst] = prev_states[:, src]
    return states


def adapt_by_id(
    prev_ids: tuple[int, ...], prev_states: np.ndarray, ids: tuple[int, ...]
) -> np.ndarray:
    """A warm start that gives each job its own rows of the last round (new jobs: none)."""
    where = {jid: k for k, jid in enumerate(prev_ids)}
    states = np.zeros((len(prev_states), len(ids), prev_states.shape[2]), dtype=np.int64)
    for k, jid in enumerate(ids):
        if jid in where:
            states[:, k] = prev_states[:, where[jid]]
    return states


class NSGA2Search:
    """The artifact's NSGA-II, chained over a run's rounds (module doc). One per run.

    ``warm_start``: "rank" pairs the last round's jobs with this round's by rank, as the
    artifact does; "id" by job id (each job its own rows). ``with_current``: the current
    allocation joins the first population every round (not only the first round) — both for
    comparing searches on a recorded trajectory (benchmarks/pollux_search_compare.py), where
    the last round's result was not this search's."""

    def __init__(
        self,
        seed: int,
        pop_size: int = POP_SIZE,
        generations: int = GENERATIONS,
        *,
        warm_start: str = "rank",
        with_current: bool = False,
    ) -> None:
        require_pymoo()
        if warm_start not in ("rank", "id"):
            raise ValueError(f"warm_start must be 'rank' or 'id', got {warm_start!r}")
        self.seed, self.pop_size, self.generations = seed, pop_size, generations
        self.warm_start, self.with_current = warm_start, with_current
        self.calls = 0
        self._prev: tuple[tuple[int, ...], np.ndarray] | None = None  # (ids in order, states)
        self._classes = _classes()

    def __call__(self, p: RoundProblem) -> np.ndarray:
        """The chosen allocation (J × N, in the problem's job order)."""
        from pymoo.algorithms.moo.nsga2 import NSGA2
        from pymoo.optimize import minimize
        from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

        Round, JobCrossover, JobMutation, JobRepair = self._classes
        order = np.asarray(
            p.priority if p.priority is not None else np.arange(p.num_jobs), dtype=np.int64
        )
        prob = Round(p, order)
        ids = tuple(p.job_ids[i] for i in order)
        if self._prev is None or self._prev[1].shape[2] != p.num_nodes:
            states = prob.base[None]
        else:
            adapt = adapt_by_rank if self.warm_start == "rank" else adapt_by_id
            states = adapt(*self._prev, ids)
            if self.with_current:
                states = np.unique(np.concatenate([states, prob.base[None]]), axis=0)
        algorithm = NSGA2(
            pop_size=self.pop_size,
            sampling=states.reshape(len(states), -1),
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
            seed=(self.seed * 1_000_003 + self.calls) % 2**32,
            verbose=False,
        )
        # the result's optimum (the first front) seeds the next round, as ``result.X`` does there
        X, F = np.atleast_2d(res.X), np.atleast_2d(res.F)
        final = prob.states(X)
        self._prev = (ids, final.copy())
        front = NonDominatedSorting().do(F, only_non_dominated_front=True)
        best = front[int(np.argmin(F[front, 0]))]
        alloc = np.zeros_like(prob.base)
        alloc[order] = final[best]
        return alloc
