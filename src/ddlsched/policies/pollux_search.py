"""The Pollux allocation problem of one round, its objective, and the searches for it.

The artifact (pol:315-337, 376-420) chooses per-job per-node GPU counts x[j, n] to maximise

    F = [ mean_j (s_j + ε)^(−1) ]^(−1)            (power mean, p = −1; ε = 1e-3)

with s_j = scale × speedup_j(multi-node?, r_j) × (restart factor_j if x[j] ≠ current[j] else 1),
r_j = Σ_n x[j, n], scale = nodes/GPUs (the artifact's dominant share × nodes), subject to node
capacity, r_j ≤ max_replicas_j and at most one multi-node job per node. Its NSGA-II minimises
F1 = −F; :func:`objective` returns F (larger is better).

:class:`RoundProblem` is that problem as plain data (numpy tables), so a run can record every
round (``Pollux(record=[])``) and searches can be compared offline
(benchmarks/pollux_search_compare.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: ε of the artifact's power mean (pol:315-337).
EPS = 1e-3


@dataclass(eq=False)
class RoundProblem:
    """One round's allocation problem (module doc). Job i is ``job_ids[i]``.

    ``single[i, r]`` / ``multi[i, r]``: job i's speedup (unscaled, no restart factor) with r
    replicas on one node / on several nodes, r = 0..K (0 where r is not allowed: r >
    max_replicas[i], single r > gpus_per_node, multi r < 2). ``current[i]``: GPUs per node now.
    ``restart[i]``: the factor max(age − 30·restarts, 0)/(age + 30) applied when the job's
    per-node allocation changes. ``priority``: job indices in the artifact's repair order
    (attained service, then submission; pol:147-150), used only by the reference NSGA-II.
    """

    num_nodes: int
    gpus_per_node: int
    job_ids: tuple[int, ...]
    current: np.ndarray  # (J, N) int
    max_replicas: np.ndarray  # (J,) int
    single: np.ndarray  # (J, K + 1) float
    multi: np.ndarray  # (J, K + 1) float
    restart: np.ndarray  # (J,) float
    scale: float
    eps: float = EPS
    priority: np.ndarray | None = None  # (J,) int
    time: float = 0.0
    capacity: np.ndarray | None = None  # (N,) GPUs per node; None: gpus_per_node each

    @property
    def node_capacity(self) -> np.ndarray:
        """GPUs of each node."""
        if self.capacity is not None:
            return np.asarray(self.capacity, dtype=np.int64)
        return np.full(self.num_nodes, self.gpus_per_node, dtype=np.int64)

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def num_gpus(self) -> int:
        return int(self.node_capacity.sum())

    def speedups(self, alloc: np.ndarray) -> np.ndarray:
        """Scaled speedups s_j of the per-node allocation ``alloc`` (J × N), restart factor
        applied to the jobs whose row differs from ``current``."""
        alloc = np.asarray(alloc)
        reps = alloc.sum(axis=1)
        multi = np.count_nonzero(alloc, axis=1) > 1
        rows = np.arange(self.num_jobs)
        cols = np.minimum(reps, self.single.shape[1] - 1)
        s = np.where(multi, self.multi[rows, cols], self.single[rows, cols])
        s = np.where(reps > self.single.shape[1] - 1, 0.0, s)
        changed = np.any(alloc != self.current, axis=1)
        return self.scale * np.where(changed, s * self.restart, s)


def objective(problem: RoundProblem, alloc: np.ndarray) -> float:
    """The artifact's fitness to maximise: [mean_j (s_j + ε)^(−1)]^(−1) (= −F1, pol:315-337)."""
    s = problem.speedups(alloc)
    if len(s) == 0:
        return 0.0
    return float(1.0 / np.mean(1.0 / (s + problem.eps)))


def violations(problem: RoundProblem, alloc: np.ndarray) -> list[str]:
    """The constraints ``alloc`` breaks (empty if feasible): shape, non-negative integers, node
    capacity, replica limits, at most one multi-node job per node."""
    alloc = np.asarray(alloc)
    out: list[str] = []
    if alloc.shape != (problem.num_jobs, problem.num_nodes):
        return [f"shape {alloc.shape} != {(problem.num_jobs, problem.num_nodes)}"]
    if (alloc < 0).any():
        out.append("negative count")
    used, cap = alloc.sum(axis=0), problem.node_capacity
    for n in np.flatnonzero(used > cap):
        out.append(f"node {n}: {used[n]} GPUs > {cap[n]}")
    reps = alloc.sum(axis=1)
    for i in np.flatnonzero(reps > problem.max_replicas):
        out.append(f"job {problem.job_ids[i]}: {reps[i]} replicas > {problem.max_replicas[i]}")
    multi = np.count_nonzero(alloc, axis=1) > 1
    per_node = np.count_nonzero(alloc[multi] > 0, axis=0)
    for n in np.flatnonzero(per_node > 1):
        out.append(f"node {n}: {per_node[n]} multi-node jobs")
    return out


# -------------------------------------------------------------------------------------------
# the search: exact DP on a relaxation, then a packing that realises it
# -------------------------------------------------------------------------------------------

KEEP, SINGLE, MULTI = 0, 1, 2


@dataclass(frozen=True)
class Option:
    """One way to run a job this round: keep its GPUs (KEEP), or r replicas on one node
    (SINGLE) or on at least ``nodes`` nodes (MULTI), at cost 1/(s + ε)."""

    kind: int
    replicas: int
    nodes: int  # nodes it takes from the one-multi-node-job-per-node budget (0 unless multi)
    cost: float


@dataclass
class SearchStats:
    """How a search went: ``exact`` when the relaxation's optimum was packed (then the result
    is optimal for the round), ``packs`` = packing attempts."""

    exact: bool = False
    packs: int = 0


def options(problem: RoundProblem, i: int) -> list[Option]:
    """Job i's options, KEEP first, then by replicas. An option no cheaper than one of the same
    kind with fewer replicas is dropped (that one packs wherever it does); a one-node option
    does not replace a multi-node one, nor the reverse (each packs where the other may not)."""
    p, per = problem, problem.gpus_per_node
    cur = p.current[i]
    r_cur = int(cur.sum())
    n_cur = int(np.count_nonzero(cur))

    def cost(s: float) -> float:
        return 1.0 / (p.scale * s + p.eps)

    out = [Option(KEEP, 0, 0, 1.0 / p.eps)]
    if r_cur:
        multi = n_cur > 1
        s = float(p.multi[i, r_cur] if multi else p.single[i, r_cur])
        out = [Option(KEEP, r_cur, n_cur if multi else 0, cost(s)), out[0]]
    f = float(p.restart[i])
    limit = min(int(p.max_replicas[i]), p.single.shape[1] - 1, p.num_gpus)
    flexible = [
        Option(SINGLE, r, 0, cost(float(p.single[i, r]) * f)) for r in range(1, 1 + min(per, limit))
    ]
    flexible += [
        Option(MULTI, r, max(2, -(-r // per)), cost(float(p.multi[i, r]) * f))
        for r in range(2, limit + 1)
    ]
    flexible.sort(key=lambda o: (o.replicas, o.kind))
    kept: list[Option] = []
    best = {SINGLE: out[-1].cost, MULTI: out[-1].cost}  # nothing costs 1/ε
    for o in flexible:  # nodes grow with replicas: an earlier option of a kind can replace it
        if o.nodes <= p.num_nodes and o.cost < best[o.kind]:
            kept.append(o)
            best[o.kind] = o.cost
    return out + kept


def relaxation_optimum(problem: RoundProblem, opts: list[list[Option]]) -> list[int]:
    """Index of each job's option minimising Σ cost subject only to Σ replicas ≤ GPUs and
    Σ nodes of multi-node jobs ≤ nodes: exact, by dynamic programming over (GPUs, nodes).
    Every feasible allocation maps to options within these limits, so the minimum is a lower
    bound on the round's Σ 1/(s + ε); ties go to earlier options (KEEP, then fewer GPUs)."""
    g_max, d_max = problem.num_gpus, problem.num_nodes
    dp = np.full((g_max + 1, d_max + 1), np.inf)
    dp[0, 0] = 0.0
    picks = []
    reach_g = reach_d = 0  # dp is ∞ beyond these: only the box [0, reach] can improve
    for job_opts in opts:
        new = np.full_like(dp, np.inf)
        pick = np.full(dp.shape, -1, dtype=np.int16)
        top_g = top_d = 0
        for k, o in enumerate(job_opts):
            w, d = o.replicas, o.nodes
            if w > g_max or d > d_max:
                continue
            rows, cols = min(reach_g, g_max - w) + 1, min(reach_d, d_max - d) + 1
            top_g, top_d = max(top_g, w + rows - 1), max(top_d, d + cols - 1)
            cand = dp[:rows, :cols] + o.cost
            view = new[w : w + rows, d : d + cols]
            better = cand < view
            np.copyto(view, cand, where=better)
            np.copyto(pick[w : w + rows, d : d + cols], k, where=better)
        dp, reach_g, reach_d = new, top_g, top_d
        picks.append(pick)
    g, d = np.unravel_index(int(np.argmin(dp)), dp.shape)
    chosen = [0] * len(opts)
    for i in range(len(opts) - 1, -1, -1):
        k = int(picks[i][g, d])
        chosen[i] = k
        g -= opts[i][k].replicas
        d -= opts[i][k].nodes
    return chosen


class _Board:
    """A partial allocation being built: GPUs per node of each placed job, free GPUs and
    multi-node jobs per node."""

    def __init__(self, problem: RoundProblem) -> None:
        self.p = problem
        self.alloc = np.zeros((problem.num_jobs, problem.num_nodes), dtype=np.int64)
        self.free = problem.node_capacity.copy()
        self.multi_on = np.zeros(problem.num_nodes, dtype=bool)
        self.opt: list[Option | None] = [None] * problem.num_jobs
        self._lists: tuple | None = None

    def _state(self) -> tuple[list[int], list[bool], list[int], int]:
        """(free GPUs, multi-node job?) per node as lists, the nodes open to a multi-node job
        and their free GPUs in all; kept until the board changes (``row_for`` is called for
        one option after another on an unchanged board)."""
        if self._lists is None:
            free, multi_on = self.free.tolist(), self.multi_on.tolist()
            avail = [n for n, f in enumerate(free) if not multi_on[n] and f > 0]
            self._lists = free, multi_on, avail, sum(free[n] for n in avail)
        return self._lists

    def snapshot(self) -> tuple:
        return self.alloc.copy(), self.free.copy(), self.multi_on.copy(), list(self.opt)

    def restore(self, saved: tuple) -> None:
        alloc, free, multi_on, opt = saved
        self.alloc, self.free, self.multi_on, self.opt = (
            alloc.copy(),
            free.copy(),
            multi_on.copy(),
            list(opt),
        )
        self._lists = None

    def cost(self) -> float:
        return sum(o.cost if o is not None else 1.0 / self.p.eps for o in self.opt)

    def remove(self, i: int) -> np.ndarray:
        row = self.alloc[i].copy()
        self.free += row
        if np.count_nonzero(row) > 1:
            self.multi_on[row > 0] = False
        self.alloc[i] = 0
        self.opt[i] = None
        self._lists = None
        return row

    def put(self, i: int, o: Option, row: np.ndarray) -> None:
        self.alloc[i] = row
        self.free -= row
        if np.count_nonzero(row) > 1:
            self.multi_on[row > 0] = True
        self.opt[i] = o
        self._lists = None

    def rows_for(self, i: int, o: Option) -> list[np.ndarray]:
        """:meth:`row_for`, and for a one-node option every other node that fits and differs
        in free GPUs or multi-node job (best fit first)."""
        if o.kind != SINGLE:
            row = self.row_for(i, o)
            return [] if row is None else [row]
        seen, rows = set(), []
        fits = np.flatnonzero(self.free >= o.replicas)
        for n in sorted(fits, key=lambda k: (self.free[k], not self.multi_on[k], k)):
            key = (int(self.free[n]), bool(self.multi_on[n]))
            if key not in seen:
                seen.add(key)
                row = np.zeros(self.p.num_nodes, dtype=np.int64)
                row[n] = o.replicas
                rows.append(row)
        return rows

    def row_for(self, i: int, o: Option) -> np.ndarray | None:
        """Where option ``o`` of job i would go now (None if it does not fit): KEEP on its
        current GPUs; one node by best fit (ties: a node with a multi-node job, then the
        lowest index); several nodes among those without a multi-node job, most free first,
        the last piece best fit, never all on one node."""
        r = o.replicas
        if r == 0:
            return np.zeros(self.p.num_nodes, dtype=np.int64)
        if o.kind == KEEP:
            row = self.p.current[i]
            if (row > self.free).any() or (o.nodes and self.multi_on[row > 0].any()):
                return None
            return row.copy()
        # plain Python on lists: a node count's worth of numpy calls costs more than the work
        free, multi_on, avail, avail_free = self._state()
        if o.kind == SINGLE:
            best = None
            for k, f in enumerate(free):
                if f >= r:
                    key = (f, not multi_on[k], k)
                    if best is None or key < best:
                        best = key
            if best is None:
                return None
            row = np.zeros(self.p.num_nodes, dtype=np.int64)
            row[best[2]] = r
            return row
        if len(avail) < 2 or avail_free < r:
            return None
        out = [0] * len(free)
        left, used = r, 0
        while left > 0:
            rest = [n for n in avail if out[n] == 0]
            if not rest:
                return None
            fit = [n for n in rest if free[n] >= left]
            if fit and not used:  # one node would do: start on the smallest piece
                n = min(rest, key=lambda k: (free[k], k))
                take = min(free[n], left - 1)
            elif fit:
                n = min(fit, key=lambda k: (free[k], k))
                take = left
            else:
                n = max(rest, key=lambda k: (free[k], -k))
                take = free[n]
            out[n] = take
            left -= take
            used += 1
        return np.array(out, dtype=np.int64) if used >= 2 else None


def _place_order(choice: list[Option], multi_first: bool) -> list[int]:
    """KEEP jobs, then one-node and multi-node jobs, each largest first."""
    keep = [i for i, o in enumerate(choice) if o.kind == KEEP]
    single = sorted(
        (i for i, o in enumerate(choice) if o.kind == SINGLE),
        key=lambda i: (-choice[i].replicas, i),
    )
    multi = sorted(
        (i for i, o in enumerate(choice) if o.kind == MULTI), key=lambda i: (-choice[i].replicas, i)
    )
    return keep + (multi + single if multi_first else single + multi)


def pack(problem: RoundProblem, choice: list[Option]) -> np.ndarray | None:
    """A per-node allocation realising every job's option, or None if none is found: KEEP
    jobs keep their rows; then one-node jobs largest first, then multi-node jobs largest
    first (:meth:`_Board.row_for`); failing that, multi-node jobs before one-node jobs."""
    for multi_first in (False, True):
        board = _Board(problem)
        for i in _place_order(choice, multi_first):
            row = board.row_for(i, choice[i])
            if row is None:
                break
            board.put(i, choice[i], row)
        else:
            return board.alloc
    return None


def _greedy_board(problem: RoundProblem, opts: list[list[Option]], choice: list[Option]) -> _Board:
    """Jobs placed with their chosen options where they fit (``pack``'s order), then each
    job that did not fit with its best option that fits and takes no more GPUs."""
    board = _Board(problem)
    missed = []
    for i in _place_order(choice, False):
        row = board.row_for(i, choice[i])
        if row is None:
            missed.append(i)
        else:
            board.put(i, choice[i], row)
    for i in missed:
        _place_best(board, i, [o for o in opts[i] if o.replicas <= choice[i].replicas])
    return board


def _place_best(board: _Board, i: int, job_opts: list[Option], below: float = math.inf) -> bool:
    """Place job i (not on the board) with its cheapest option that fits and costs less than
    ``below``; False if there is none."""
    _, _, avail, avail_free = board._state()
    for o in sorted(job_opts, key=lambda o: o.cost):
        if o.cost >= below:
            return False
        if o.kind == MULTI and (len(avail) < 2 or avail_free < o.replicas):
            continue  # row_for's first check, without the call
        row = board.row_for(i, o)
        if row is not None:
            board.put(i, o, row)
            return True
    return False


def _improve(board: _Board, opts: list[list[Option]], rounds: int = 50) -> None:
    """Local search: re-place one job at a time with its cheapest option that fits the
    others, while Σ cost drops (at most ``rounds`` passes)."""
    for _ in range(rounds):
        better = False
        for i in range(board.p.num_jobs):
            o0 = board.opt[i]
            assert o0 is not None
            row0 = board.remove(i)
            if _place_best(board, i, opts[i], below=o0.cost - 1e-12):
                better = True
            else:
                board.put(i, o0, row0)
        if not better:
            return


class _Tables:
    """Job i's options as arrays (kinds, replicas, costs) for vectorised fit checks."""

    def __init__(self, opts: list[list[Option]]) -> None:
        self.opts = opts
        self.kind = [np.array([o.kind for o in jo]) for jo in opts]
        self.reps = [np.array([o.replicas for o in jo]) for jo in opts]
        self.cost = [np.array([o.cost for o in jo]) for jo in opts]


def _fits(board: _Board, tab: _Tables, i: int) -> np.ndarray:
    """Which of job i's options fit if job i were re-placed now (exactly
    :meth:`_Board.row_for` is not None)."""
    row = board.alloc[i]
    free = board.free + row
    taken = board.multi_on & ~(row > 0) if np.count_nonzero(row) > 1 else board.multi_on
    kind, reps = tab.kind[i], tab.reps[i]
    avail = free[~taken & (free > 0)]
    ok = np.where(kind == SINGLE, reps <= free.max(), (len(avail) >= 2) & (reps <= avail.sum()))
    cur = board.p.current[i]
    keep_ok = bool((cur <= free).all()) and (np.count_nonzero(cur) <= 1 or not taken[cur > 0].any())
    ok = np.where(kind == KEEP, keep_ok, ok)
    return ok | (reps == 0)


def _grow(board: _Board, tab: _Tables) -> None:
    """Marginal-gain greedy on the board: repeatedly re-place the job whose move to a larger
    option that fits lowers its cost most per added GPU."""
    while True:
        best = None
        for i in range(board.p.num_jobs):
            o0 = board.opt[i]
            assert o0 is not None
            reps, cost = tab.reps[i], tab.cost[i]
            mask = (reps > o0.replicas) & (cost < o0.cost - 1e-12)
            if not mask.any():
                continue
            mask &= _fits(board, tab, i)
            if not mask.any():
                continue
            gain = np.where(mask, (o0.cost - cost) / np.maximum(reps - o0.replicas, 1), -1.0)
            k = int(np.argmax(gain))
            if best is None or gain[k] > best[0]:
                best = (float(gain[k]), i, k)
        if best is None:
            return
        _, i, k = best
        board.remove(i)
        o = tab.opts[i][k]
        row = board.row_for(i, o)
        assert row is not None
        board.put(i, o, row)


#: exact checks per pass of the two-job local search (:func:`_transfer`)
TRANSFER_TRIES = 30


#: options of job i tried per two-job move when i is placed first (:func:`_pair_move`)
PAIR_OPTIONS = 4


def _pair_move(board: _Board, tab: _Tables, k: int, ok: int, i: int) -> bool:
    """Re-place jobs k and i together, lowering their summed cost: k with option ``ok`` (on
    each distinct node that fits, if it is a one-node option) then i with its best option
    that fits; or i first with one of its ``PAIR_OPTIONS`` best improving options that fit,
    then k with its best. False (board unchanged) if no such move lowers the sum."""
    ok_opt, k_opt, i_opt = tab.opts[k][ok], board.opt[k], board.opt[i]
    assert k_opt is not None and i_opt is not None
    before = k_opt.cost + i_opt.cost
    row_k, row_i = board.remove(k), board.remove(i)
    for new_k in board.rows_for(k, ok_opt):
        board.put(k, ok_opt, new_k)
        if _place_best(board, i, tab.opts[i], below=before - ok_opt.cost - 1e-12):
            return True
        board.remove(k)
    tried = 0
    for o in sorted(tab.opts[i], key=lambda o: o.cost):
        if o.cost >= i_opt.cost - 1e-12 or tried >= PAIR_OPTIONS:
            break
        new_i = board.row_for(i, o)
        if new_i is None:
            continue
        tried += 1
        board.put(i, o, new_i)
        if _place_best(board, k, tab.opts[k], below=before - o.cost - 1e-12):
            return True
        board.remove(i)
    board.put(k, k_opt, row_k)
    board.put(i, i_opt, row_i)
    return False


def _transfer(board: _Board, tab: _Tables, passes: int = 50) -> None:
    """Two-job moves: job k takes another option with no more GPUs (or moves) so that job i
    can take a better one.
    Candidates are ranked by an optimistic gain (i gets every GPU k frees plus the free ones)
    and the best ``TRANSFER_TRIES`` are tried; the one that lowers Σ cost most is kept."""
    J = board.p.num_jobs
    for _ in range(passes):
        cur = np.array([o.cost for o in board.opt])  # type: ignore[union-attr]
        reps = np.array([o.replicas for o in board.opt])  # type: ignore[union-attr]
        spare = int(board.free.sum())
        g_max = board.p.num_gpus
        # best[i, g]: job i's cheapest option with at most reps[i] + g replicas
        best = np.full((J, g_max + 1), np.inf)
        for i in range(J):
            extra = np.clip(tab.reps[i] - reps[i], 0, None)
            np.minimum.at(best[i], np.minimum(extra, g_max), tab.cost[i])
        best = np.minimum.accumulate(best, axis=1)
        cands = []
        for k in range(J):
            fits = _fits(board, tab, k)
            for ok in np.flatnonzero(fits & (tab.reps[k] <= reps[k])):
                freed = int(reps[k] - tab.reps[k][ok])
                loss = float(tab.cost[k][ok] - cur[k])
                net = cur - best[:, min(freed + spare, g_max)] - loss
                net[k] = -np.inf
                for i in np.flatnonzero(net > 1e-12):
                    cands.append((-float(net[i]), k, int(ok), int(i)))
        cands.sort()
        before = board.cost()
        best_move, best_cost = None, before - 1e-12
        for move in cands[:TRANSFER_TRIES]:
            saved = board.snapshot()
            if _pair_move(board, tab, *move[1:]):
                cost = board.cost()
                if cost < best_cost:
                    best_move, best_cost = move, cost
            board.restore(saved)
        if best_move is None:
            return
        _pair_move(board, tab, *best_move[1:])


def search(problem: RoundProblem, stats: SearchStats | None = None) -> np.ndarray:
    """The allocation (J × N GPUs per node) this round: the relaxation's optimum
    (:func:`relaxation_optimum`) packed by :func:`pack` — then optimal for the round. If it
    does not pack, the better of two local searches on real packings, one started from the
    relaxation's choices where they fit, one from the current allocation (warm start; so never
    worse than keeping it): marginal-gain growth (:func:`_grow`), one-job re-placements
    (:func:`_improve`), two-job moves (:func:`_transfer`), growth and re-placements again."""
    stats = stats if stats is not None else SearchStats()
    J = problem.num_jobs
    if J == 0:
        return np.zeros((0, problem.num_nodes), dtype=np.int64)
    opts = [options(problem, i) for i in range(J)]
    chosen = relaxation_optimum(problem, opts)
    choice = [opts[i][k] for i, k in enumerate(chosen)]
    stats.packs += 1
    alloc = pack(problem, choice)
    if alloc is not None:
        stats.exact = True
        return alloc
    tab = _Tables(opts)
    starts = [
        _greedy_board(problem, opts, choice),
        _greedy_board(problem, opts, [jo[0] for jo in opts]),  # KEEP everyone: warm start
    ]
    best = None
    for board in starts:
        _grow(board, tab)
        _improve(board, opts)
        _transfer(board, tab)
        _grow(board, tab)
        _improve(board, opts)
        if best is None or board.cost() < best.cost() - 1e-12:
            best = board
    assert best is not None
    return best.alloc
