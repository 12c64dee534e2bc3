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


#: a job's GPUs per node on a board, sparse: (node, GPUs) pairs with GPUs > 0, by node
Row = tuple[tuple[int, int], ...]


def dense(row: Row, num_nodes: int) -> list[int]:
    """``row`` as GPUs per node (length ``num_nodes``)."""
    out = [0] * num_nodes
    for n, c in row:
        out[n] = c
    return out


class _Board:
    """A partial allocation being built: GPUs per node of each placed job (sparse rows), free
    GPUs and multi-node jobs per node. Plain Python lists: a board has a node count's worth of
    entries, and numpy's per-call cost on such small arrays was most of the search's time."""

    def __init__(self, problem: RoundProblem) -> None:
        self.p = problem
        self.rows: list[Row] = [()] * problem.num_jobs
        self.free: list[int] = problem.node_capacity.tolist()
        self.multi_on: list[bool] = [False] * problem.num_nodes
        self.opt: list[Option | None] = [None] * problem.num_jobs
        #: the nodes open to a multi-node job (free GPUs, none there), their count and free
        #: GPUs in all: the counts kept up to date, the list made when asked for
        self.avail_n = sum(1 for f in self.free if f > 0)
        self.avail_free = sum(self.free)
        self._avail_list: list[int] | None = None
        self._current = _current_rows(problem)

    @property
    def alloc(self) -> np.ndarray:
        """The allocation as a J × N array."""
        out = np.zeros((self.p.num_jobs, self.p.num_nodes), dtype=np.int64)
        for i, row in enumerate(self.rows):
            for n, c in row:
                out[i, n] = c
        return out

    def avail(self) -> list[int]:
        """The nodes open to a multi-node job, by index; kept until the board changes
        (``row_for`` is called for one option after another on an unchanged board)."""
        if self._avail_list is None:
            free, multi_on = self.free, self.multi_on
            self._avail_list = [n for n, f in enumerate(free) if f > 0 and not multi_on[n]]
        return self._avail_list

    def _touch(self, row: Row, sign: int) -> None:
        """Take (``sign`` = −1) or give back (+1) ``row``'s GPUs, keeping the open-node counts:
        a multi-node row's nodes are closed to other multi-node jobs while it is on them."""
        free, multi_on = self.free, self.multi_on
        multi = len(row) > 1
        for n, c in row:
            f, m = free[n], multi_on[n]
            if f > 0 and not m:  # its old contribution
                self.avail_n -= 1
                self.avail_free -= f
            f += sign * c
            if multi:
                m = sign < 0
            free[n], multi_on[n] = f, m
            if f > 0 and not m:
                self.avail_n += 1
                self.avail_free += f
        self._avail_list = None

    def snapshot(self) -> tuple:
        return (
            list(self.rows),
            list(self.free),
            list(self.multi_on),
            list(self.opt),
            self.avail_n,
            self.avail_free,
        )

    def restore(self, saved: tuple) -> None:
        rows, free, multi_on, opt, self.avail_n, self.avail_free = saved
        self.rows, self.free, self.multi_on, self.opt = (
            list(rows),
            list(free),
            list(multi_on),
            list(opt),
        )
        self._avail_list = None

    def cost(self) -> float:
        return sum(o.cost if o is not None else 1.0 / self.p.eps for o in self.opt)

    def remove(self, i: int) -> Row:
        row = self.rows[i]
        self._touch(row, 1)
        self.rows[i] = ()
        self.opt[i] = None
        return row

    def put(self, i: int, o: Option, row: Row) -> None:
        self.rows[i] = row
        self._touch(row, -1)
        self.opt[i] = o

    def rows_for(self, i: int, o: Option) -> list[Row]:
        """:meth:`row_for`, and for a one-node option every other node that fits and differs
        in free GPUs or multi-node job (best fit first)."""
        if o.kind != SINGLE:
            row = self.row_for(i, o)
            return [] if row is None else [row]
        free, multi_on, r = self.free, self.multi_on, o.replicas
        fits = [n for n, f in enumerate(free) if f >= r]
        seen, rows = set(), []
        for n in sorted(fits, key=lambda k: (free[k], not multi_on[k], k)):
            key = (free[n], multi_on[n])
            if key not in seen:
                seen.add(key)
                rows.append(((n, r),))
        return rows

    def row_for(self, i: int, o: Option) -> Row | None:
        """Where option ``o`` of job i would go now (None if it does not fit): KEEP on its
        current GPUs; one node by best fit (ties: a node with a multi-node job, then the
        lowest index); several nodes among those without a multi-node job, most free first,
        the last piece best fit, never all on one node."""
        r = o.replicas
        if r == 0:
            return ()
        free, multi_on = self.free, self.multi_on
        if o.kind == KEEP:
            row = self._current[i]
            for n, c in row:
                if c > free[n]:
                    return None
            if o.nodes:
                for n, _ in row:
                    if multi_on[n]:
                        return None
            return row
        if o.kind == SINGLE:
            best_n, best_f, best_m = -1, 0, False
            for k, f in enumerate(free):  # key (free, not multi-node, index), smallest first
                if f >= r and (
                    best_n < 0 or f < best_f or (f == best_f and multi_on[k] and not best_m)
                ):
                    best_n, best_f, best_m = k, f, multi_on[k]
            return None if best_n < 0 else ((best_n, r),)
        if self.avail_n < 2 or self.avail_free < r:
            return None
        avail = self.avail()
        out: dict[int, int] = {}
        left = r
        while left > 0:
            rest = [n for n in avail if n not in out]
            if not rest:
                return None
            fit = [n for n in rest if free[n] >= left]
            if fit and not out:  # one node would do: start on the smallest piece
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
        return tuple(sorted(out.items())) if len(out) >= 2 else None


def _current_rows(problem: RoundProblem) -> list[Row]:
    """Each job's current GPUs per node as a sparse row."""
    return [
        tuple((int(n), int(c)) for n, c in enumerate(cur) if c > 0)
        for cur in problem.current.tolist()
    ]


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


def _by_cost(job_opts: list[Option]) -> list[Option]:
    return sorted(job_opts, key=lambda o: o.cost)


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
        _place_best(board, i, _by_cost([o for o in opts[i] if o.replicas <= choice[i].replicas]))
    return board


def _place_best(board: _Board, i: int, by_cost: list[Option], below: float = math.inf) -> bool:
    """Place job i (not on the board) with its cheapest option (``by_cost``: its options,
    cheapest first) that fits and costs less than ``below``; False if there is none."""
    for o in by_cost:
        if o.cost >= below:
            return False
        if o.kind == MULTI and (board.avail_n < 2 or board.avail_free < o.replicas):
            continue  # row_for's first check, without the call
        row = board.row_for(i, o)
        if row is not None:
            board.put(i, o, row)
            return True
    return False


def _improve(board: _Board, tab: _Tables, rounds: int = 50) -> None:
    """Local search: re-place one job at a time with its cheapest option that fits the
    others, while Σ cost drops (at most ``rounds`` passes)."""
    for _ in range(rounds):
        better = False
        for i in range(board.p.num_jobs):
            o0 = board.opt[i]
            assert o0 is not None
            row0 = board.remove(i)
            if _place_best(board, i, tab.by_cost[i], below=o0.cost - 1e-12):
                better = True
            else:
                board.put(i, o0, row0)
        if not better:
            return


class _Tables:
    """Job i's options as arrays (kinds, replicas, costs) for vectorised fit checks, and
    cheapest first."""

    def __init__(self, opts: list[list[Option]]) -> None:
        self.opts = opts
        self.kind = [np.array([o.kind for o in jo]) for jo in opts]
        self.reps = [np.array([o.replicas for o in jo]) for jo in opts]
        self.cost = [np.array([o.cost for o in jo]) for jo in opts]
        self.by_cost = [_by_cost(jo) for jo in opts]
        self.is_single = [k == SINGLE for k in self.kind]
        self.is_keep = [k == KEEP for k in self.kind]
        self.is_zero = [r == 0 for r in self.reps]


def _fits(board: _Board, tab: _Tables, i: int) -> np.ndarray:
    """Which of job i's options fit if job i were re-placed now (exactly
    :meth:`_Board.row_for` is not None)."""
    row = board.rows[i]
    free = list(board.free)
    for n, c in row:
        free[n] += c
    multi_on = board.multi_on
    if len(row) > 1:  # i's own nodes are open to it
        mine = {n for n, _ in row}
        taken = [m and n not in mine for n, m in enumerate(multi_on)]
    else:
        taken = multi_on
    avail_n = avail_free = 0
    for n, f in enumerate(free):
        if f > 0 and not taken[n]:
            avail_n += 1
            avail_free += f
    reps = tab.reps[i]
    ok = np.where(tab.is_single[i], reps <= max(free), (avail_n >= 2) & (reps <= avail_free))
    cur = board._current[i]
    keep_ok = all(c <= free[n] for n, c in cur) and (
        len(cur) <= 1 or not any(taken[n] for n, _ in cur)
    )
    ok = np.where(tab.is_keep[i], keep_ok, ok)
    return ok | tab.is_zero[i]


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
        if _place_best(board, i, tab.by_cost[i], below=before - ok_opt.cost - 1e-12):
            return True
        board.remove(k)
    tried = 0
    for o in tab.by_cost[i]:
        if o.cost >= i_opt.cost - 1e-12 or tried >= PAIR_OPTIONS:
            break
        new_i = board.row_for(i, o)
        if new_i is None:
            continue
        tried += 1
        board.put(i, o, new_i)
        if _place_best(board, k, tab.by_cost[k], below=before - o.cost - 1e-12):
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
    g_max = board.p.num_gpus
    job_of = np.concatenate([np.full(len(r), i) for i, r in enumerate(tab.reps)])
    all_reps = np.concatenate(tab.reps)
    all_cost = np.concatenate(tab.cost)
    for _ in range(passes):
        cur = np.array([o.cost for o in board.opt])  # type: ignore[union-attr]
        reps = np.array([o.replicas for o in board.opt])  # type: ignore[union-attr]
        spare = sum(board.free)
        # best[i, g]: job i's cheapest option with at most reps[i] + g replicas
        best = np.full((J, g_max + 1), np.inf)
        extra = np.minimum(np.clip(all_reps - reps[job_of], 0, None), g_max)
        np.minimum.at(best, (job_of, extra), all_cost)
        best = np.minimum.accumulate(best, axis=1)
        # every (k, option ok of k, i) whose optimistic gain is positive, as sort keys
        keys: list[np.ndarray] = []
        for k in range(J):
            oks = np.flatnonzero(_fits(board, tab, k) & (tab.reps[k] <= reps[k]))
            if not len(oks):
                continue
            freed = reps[k] - tab.reps[k][oks]
            loss = tab.cost[k][oks] - cur[k]
            net = cur - best[:, np.minimum(freed + spare, g_max)].T - loss[:, None]
            net[:, k] = -np.inf
            at_ok, at_i = np.nonzero(net > 1e-12)
            if len(at_ok):
                keys.append(np.stack([-net[at_ok, at_i], np.full(len(at_ok), k), oks[at_ok], at_i]))
        cands: list[tuple[float, int, int, int]] = []
        if keys:
            allk = np.concatenate(keys, axis=1)
            order = np.lexsort((allk[3], allk[2], allk[1], allk[0]))[:TRANSFER_TRIES]
            cands = [
                (float(allk[0, j]), int(allk[1, j]), int(allk[2, j]), int(allk[3, j]))
                for j in order
            ]
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


def search(
    problem: RoundProblem, stats: SearchStats | None = None, compiled: bool | None = None
) -> np.ndarray:
    """The allocation (J × N GPUs per node) this round: the relaxation's optimum
    (:func:`relaxation_optimum`) packed by :func:`pack` — then optimal for the round. If it
    does not pack, the better of two local searches on real packings, one started from the
    relaxation's choices where they fit, one from the current allocation (warm start; so never
    worse than keeping it): marginal-gain growth (:func:`_grow`), one-job re-placements
    (:func:`_improve`), two-job moves (:func:`_transfer`), growth and re-placements again.
    ``compiled``: run the DP and the local search in ``pollux_kernel`` (numba; the same
    allocation); default: where that is compiled already (:func:`compiled_search_ready`)."""
    stats = stats if stats is not None else SearchStats()
    J = problem.num_jobs
    if J == 0:
        return np.zeros((0, problem.num_nodes), dtype=np.int64)
    opts = [options(problem, i) for i in range(J)]
    if compiled is None:
        compiled = compiled_search_ready()
    arrays = _Arrays(opts) if compiled else None
    if arrays is not None:
        chosen = (
            search_kernel()
            .relaxation_optimum(
                arrays.reps,
                arrays.nodes,
                arrays.cost,
                arrays.nopt,
                problem.num_gpus,
                problem.num_nodes,
            )
            .tolist()
        )
    else:
        chosen = relaxation_optimum(problem, opts)
    choice = [opts[i][k] for i, k in enumerate(chosen)]
    stats.packs += 1
    alloc = pack(problem, choice)
    if alloc is not None:
        stats.exact = True
        return alloc
    keep = [jo[0] for jo in opts]  # KEEP everyone: warm start
    if arrays is not None:
        return _search_compiled(problem, opts, arrays, [(choice, chosen), (keep, [0] * J)])
    tab = _Tables(opts)
    starts = [_greedy_board(problem, opts, choice), _greedy_board(problem, opts, keep)]
    best = None
    for board in starts:
        _grow(board, tab)
        _improve(board, tab)
        _transfer(board, tab)
        _grow(board, tab)
        _improve(board, tab)
        if best is None or board.cost() < best.cost() - 1e-12:
            best = board
    assert best is not None
    return best.alloc


def compiled_search_ready() -> bool:
    """Whether the compiled search runs without compiling first: compiled in this process
    already, or in numba's cache (its index files; a cache that does not fit this machine is
    recompiled by numba, with the same results)."""
    import os

    K = search_kernel()
    if K is None:
        return False
    for fn in (K.local_search, K.relaxation_optimum):
        if fn.signatures:
            continue
        try:
            if not os.path.exists(fn._cache._cache_file._index_path):
                return False
        except AttributeError:  # pragma: no cover - another numba's internals
            return False
    return True


def search_kernel():
    """``pollux_kernel`` where numba is installed, else None."""
    try:
        from . import pollux_kernel
    except ImportError:  # pragma: no cover - numba is a dependency; kept as a fallback
        return None
    return pollux_kernel


class _Arrays:
    """Every job's options as padded arrays for ``pollux_kernel`` (``nopt[i]`` per job;
    ``byc[i]``: their indices cheapest first, ties in list order, as ``_by_cost``)."""

    def __init__(self, opts: list[list[Option]]) -> None:
        J, width = len(opts), max(len(jo) for jo in opts)
        self.kind = np.zeros((J, width), dtype=np.int64)
        self.reps = np.zeros((J, width), dtype=np.int64)
        self.nodes = np.zeros((J, width), dtype=np.int64)
        self.cost = np.full((J, width), np.inf)
        self.byc = np.zeros((J, width), dtype=np.int64)
        self.nopt = np.array([len(jo) for jo in opts], dtype=np.int64)
        for i, jo in enumerate(opts):
            n = len(jo)
            self.kind[i, :n] = [o.kind for o in jo]
            self.reps[i, :n] = [o.replicas for o in jo]
            self.nodes[i, :n] = [o.nodes for o in jo]
            self.cost[i, :n] = [o.cost for o in jo]
            self.byc[i, :n] = sorted(range(n), key=lambda k, jo=jo: jo[k].cost)


def _search_compiled(
    problem: RoundProblem,
    opts: list[list[Option]],
    a: _Arrays,
    starts: list[tuple[list[Option], list[int]]],
) -> np.ndarray:
    """:func:`search`'s local searches in ``pollux_kernel``, one call per start, the better
    kept as there."""
    K = search_kernel()
    cap = problem.node_capacity.astype(np.int64)
    cur = np.ascontiguousarray(problem.current, dtype=np.int64)
    best, best_cost = None, math.inf
    for choice, index in starts:
        order = np.array(_place_order(choice, False), dtype=np.int64)
        rows, total = K.local_search(
            cap,
            cur,
            a.kind,
            a.reps,
            a.nodes,
            a.cost,
            a.nopt,
            a.byc,
            order,
            np.array(index, dtype=np.int64),
            problem.num_gpus,
            float(problem.eps),
        )
        if best is None or total < best_cost - 1e-12:
            best, best_cost = rows, total
    assert best is not None
    return best
