"""The local search of :func:`~ddlsched.policies.pollux_search.search`, compiled with numba.

The same steps as the Python functions in ``pollux_search`` (``_greedy_board``, ``_grow``,
``_improve``, ``_transfer`` with ``_pair_move`` and ``_place_best``), on arrays: a job's options
as rows of ``kind``/``reps``/``nodes``/``cost`` (``nopt[i]`` of them, ``byc[i]`` their indices
cheapest first), the board as dense rows, free GPUs, multi-node flags and the open-node counts.
Every comparison, sum and tie-break is made in the same order as there, so the allocation is
the same bit for bit (tests/test_pollux_search.py checks it on random rounds); the Python
functions stay the reference and the fallback where numba is missing. A 480-job Pollux run
spends most of its rounds here (issue #15).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: the option kinds and the local search's limits, as ``pollux_search`` defines them (that
#: module imports this one, so they are repeated here; tests/test_pollux_search.py checks that
#: they agree)
KEEP, SINGLE, MULTI = 0, 1, 2
TRANSFER_TRIES = 30
PAIR_OPTIONS = 4

#: "no replica limit" for ``_place_best``
BIG = 1 << 40

_OPTS = {"cache": True}


@njit(**_OPTS)
def _no_limit():
    """``BIG`` as a plain int64 (not a literal: one compiled ``_place_best``)."""
    return np.int64(BIG)


@njit(**_OPTS)
def _nnz(row):
    c = 0
    for x in row:
        if x > 0:
            c += 1
    return c


@njit(**_OPTS)
def _touch(row, free, mon, st, sign):
    """Take (sign −1) or give back (+1) ``row``'s GPUs; keep the open-node counts ``st``."""
    multi = _nnz(row) > 1
    for n in range(len(row)):
        c = row[n]
        if c == 0:
            continue
        f = free[n]
        m = mon[n]
        if f > 0 and not m:
            st[0] -= 1
            st[1] -= f
        f += sign * c
        if multi:
            m = sign < 0
        free[n] = f
        mon[n] = m
        if f > 0 and not m:
            st[0] += 1
            st[1] += f


@njit(**_OPTS)
def _remove(i, rows, free, mon, st, oi, out):
    out[:] = rows[i]
    _touch(out, free, mon, st, 1)
    rows[i, :] = 0
    oi[i] = -1


@njit(**_OPTS)
def _put(i, k, row, rows, free, mon, st, oi):
    rows[i, :] = row
    _touch(row, free, mon, st, -1)
    oi[i] = k


@njit(**_OPTS)
def _row_for(i, k, kind, reps, nodes, cur, free, mon, st, out):
    """``_Board.row_for``: where option k of job i goes now, into ``out``; False if nowhere."""
    N = len(free)
    out[:] = 0
    r = reps[i, k]
    if r == 0:
        return True
    kd = kind[i, k]
    if kd == KEEP:
        for n in range(N):
            if cur[i, n] > free[n]:
                return False
        if nodes[i, k] != 0:
            for n in range(N):
                if cur[i, n] > 0 and mon[n]:
                    return False
        out[:] = cur[i]
        return True
    if kd == SINGLE:
        best_n, best_f, best_m = -1, 0, False
        for n in range(N):
            f = free[n]
            if f >= r and (best_n < 0 or f < best_f or (f == best_f and mon[n] and not best_m)):
                best_n, best_f, best_m = n, f, mon[n]
        if best_n < 0:
            return False
        out[best_n] = r
        return True
    if st[0] < 2 or st[1] < r:
        return False
    left, used = r, 0
    while left > 0:
        min_rest, min_fit, max_rest = -1, -1, -1
        for n in range(N):
            f = free[n]
            if f <= 0 or mon[n] or out[n] > 0:
                continue
            if min_rest < 0 or f < free[min_rest]:
                min_rest = n
            if max_rest < 0 or f > free[max_rest]:
                max_rest = n
            if f >= left and (min_fit < 0 or f < free[min_fit]):
                min_fit = n
        if min_rest < 0:
            return False
        if min_fit >= 0 and used == 0:  # one node would do: start on the smallest piece
            n = min_rest
            take = min(free[n], left - 1)
        elif min_fit >= 0:
            n = min_fit
            take = left
        else:
            n = max_rest
            take = free[n]
        out[n] = take
        left -= take
        used += 1
    return used >= 2


@njit(**_OPTS)
def _place_best(i, below, limit, kind, reps, nodes, cost, nopt, byc, cur, B, buf):
    """``_place_best``: job i (off the board) with its cheapest option of at most ``limit``
    replicas that fits and costs less than ``below``."""
    rows, free, mon, st, oi = B
    for p in range(nopt[i]):
        k = byc[i, p]
        if reps[i, k] > limit:
            continue
        if cost[i, k] >= below:
            return False
        if kind[i, k] == MULTI and (st[0] < 2 or st[1] < reps[i, k]):
            continue
        if _row_for(i, k, kind, reps, nodes, cur, free, mon, st, buf):
            _put(i, k, buf, rows, free, mon, st, oi)
            return True
    return False


@njit(**_OPTS)
def _board_cost(cost, oi, eps):
    total = 0.0
    for j in range(len(oi)):
        total += cost[j, oi[j]] if oi[j] >= 0 else 1.0 / eps
    return total


@njit(**_OPTS)
def _fits(i, kind, reps, nopt, cur, B, ok):
    """``_fits``: which options of job i fit if it were re-placed now (into ``ok``)."""
    rows, free, mon, st, oi = B
    N = len(free)
    row = rows[i]
    multi_self = _nnz(row) > 1
    fmax = -1
    avail_n, avail_free = 0, 0
    for n in range(N):
        f = free[n] + row[n]
        taken = mon[n] and not (row[n] > 0) if multi_self else mon[n]
        if f > fmax:
            fmax = f
        if f > 0 and not taken:
            avail_n += 1
            avail_free += f
    keep_ok = True
    cur_multi = _nnz(cur[i]) > 1
    for n in range(N):
        f = free[n] + row[n]
        if cur[i, n] > f:
            keep_ok = False
        if cur_multi and cur[i, n] > 0:
            taken = mon[n] and not (row[n] > 0) if multi_self else mon[n]
            if taken:
                keep_ok = False
    for k in range(nopt[i]):
        r = reps[i, k]
        kd = kind[i, k]
        if kd == KEEP:
            v = keep_ok
        elif kd == SINGLE:
            v = r <= fmax
        else:
            v = avail_n >= 2 and r <= avail_free
        ok[k] = v or r == 0


@njit(**_OPTS)
def _grow(kind, reps, nodes, cost, nopt, cur, B, buf, ok):
    rows, free, mon, st, oi = B
    J = len(oi)
    while True:
        # not literal −1s: numba would compile the callees for those constants too
        found, best_gain, bi, bk = False, 0.0, np.int64(-1), np.int64(-1)
        for i in range(J):
            k0 = oi[i]
            r0, c0 = reps[i, k0], cost[i, k0]
            some = False
            for k in range(nopt[i]):
                if reps[i, k] > r0 and cost[i, k] < c0 - 1e-12:
                    some = True
                    break
            if not some:
                continue
            _fits(i, kind, reps, nopt, cur, B, ok)
            gk, g = -1, 0.0
            for k in range(nopt[i]):
                if reps[i, k] > r0 and cost[i, k] < c0 - 1e-12 and ok[k]:
                    gain = (c0 - cost[i, k]) / max(reps[i, k] - r0, 1)
                    if gk < 0 or gain > g:
                        gk, g = k, gain
            if gk < 0:
                continue
            if not found or g > best_gain:
                found, best_gain, bi, bk = True, g, i, gk
        if not found:
            return
        _remove(bi, rows, free, mon, st, oi, buf)
        _row_for(bi, bk, kind, reps, nodes, cur, free, mon, st, buf)
        _put(bi, bk, buf, rows, free, mon, st, oi)


@njit(**_OPTS)
def _improve(kind, reps, nodes, cost, nopt, byc, cur, B, buf, row0):
    rows, free, mon, st, oi = B
    for _ in range(50):
        better = False
        for i in range(len(oi)):
            k0 = oi[i]
            _remove(i, rows, free, mon, st, oi, row0)
            if _place_best(
                i, cost[i, k0] - 1e-12, _no_limit(), kind, reps, nodes, cost, nopt, byc, cur, B, buf
            ):
                better = True
            else:
                _put(i, k0, row0, rows, free, mon, st, oi)
        if not better:
            return


@njit(**_OPTS)
def _single_nodes(r, free, mon):
    """``_Board.rows_for`` of a one-node option of r GPUs: the nodes that fit, best fit first
    (free, then a node with a multi-node job, then index), one per (free, multi-node)."""
    N = len(free)
    cand = np.empty(N, dtype=np.int64)
    m = 0
    for n in range(N):
        if free[n] >= r:
            # insertion by key (free, not multi-node, index)
            pos = m
            while pos > 0:
                q = cand[pos - 1]
                if free[q] > free[n] or (free[q] == free[n] and (not mon[q]) > (not mon[n])):
                    cand[pos] = q
                    pos -= 1
                else:
                    break
            cand[pos] = n
            m += 1
    out = np.empty(m, dtype=np.int64)
    c = 0
    for x in range(m):
        n = cand[x]
        dup = False
        for y in range(c):
            if free[out[y]] == free[n] and mon[out[y]] == mon[n]:
                dup = True
                break
        if not dup:
            out[c] = n
            c += 1
    return out[:c]


@njit(**_OPTS)
def _pair_move(k, okk, i, kind, reps, nodes, cost, nopt, byc, cur, B, bufs):
    """``_pair_move``: re-place jobs k (with option ``okk``) and i together, or i first with
    one of its best improving options and then k; False (board unchanged) if nothing lowers
    their summed cost."""
    rows, free, mon, st, oi = B
    buf, row_k, row_i, new = bufs[0], bufs[1], bufs[2], bufs[3]
    k_opt, i_opt = oi[k], oi[i]
    before = cost[k, k_opt] + cost[i, i_opt]
    _remove(k, rows, free, mon, st, oi, row_k)
    _remove(i, rows, free, mon, st, oi, row_i)
    below = before - cost[k, okk] - 1e-12
    if kind[k, okk] == SINGLE:
        for n in _single_nodes(reps[k, okk], free, mon):
            new[:] = 0
            new[n] = reps[k, okk]
            _put(k, okk, new, rows, free, mon, st, oi)
            if _place_best(i, below, _no_limit(), kind, reps, nodes, cost, nopt, byc, cur, B, buf):
                return True
            _remove(k, rows, free, mon, st, oi, new)
    elif _row_for(k, okk, kind, reps, nodes, cur, free, mon, st, new):
        _put(k, okk, new, rows, free, mon, st, oi)
        if _place_best(i, below, _no_limit(), kind, reps, nodes, cost, nopt, byc, cur, B, buf):
            return True
        _remove(k, rows, free, mon, st, oi, new)
    tried = 0
    for p in range(nopt[i]):
        o = byc[i, p]
        if cost[i, o] >= cost[i, i_opt] - 1e-12 or tried >= PAIR_OPTIONS:
            break
        if not _row_for(i, o, kind, reps, nodes, cur, free, mon, st, new):
            continue
        tried += 1
        _put(i, o, new, rows, free, mon, st, oi)
        if _place_best(
            k,
            before - cost[i, o] - 1e-12,
            _no_limit(),
            kind,
            reps,
            nodes,
            cost,
            nopt,
            byc,
            cur,
            B,
            buf,
        ):
            return True
        _remove(i, rows, free, mon, st, oi, new)
    _put(k, k_opt, row_k, rows, free, mon, st, oi)
    _put(i, i_opt, row_i, rows, free, mon, st, oi)
    return False


@njit(**_OPTS)
def _transfer(kind, reps, nodes, cost, nopt, byc, cur, B, bufs, ok, g_max, eps):
    rows, free, mon, st, oi = B
    J = len(oi)
    curc = np.empty(J)
    curr = np.empty(J, dtype=np.int64)
    best = np.empty((J, g_max + 1))
    for _ in range(50):
        for j in range(J):
            curc[j] = cost[j, oi[j]]
            curr[j] = reps[j, oi[j]]
        spare = 0
        for n in range(len(free)):
            spare += free[n]
        best[:, :] = np.inf
        for j in range(J):
            for k in range(nopt[j]):
                e = min(max(reps[j, k] - curr[j], 0), g_max)
                if cost[j, k] < best[j, e]:
                    best[j, e] = cost[j, k]
            for g in range(1, g_max + 1):
                if best[j, g - 1] < best[j, g]:
                    best[j, g] = best[j, g - 1]
        # every (k, ok, i) with a positive optimistic gain, in (k, ok, i) order
        net_l, k_l, o_l, i_l = [0.0], [0], [0], [0]
        net_l.pop()
        k_l.pop()
        o_l.pop()
        i_l.pop()
        for kk in range(J):
            _fits(kk, kind, reps, nopt, cur, B, ok)
            for okk in range(nopt[kk]):
                if not (ok[okk] and reps[kk, okk] <= curr[kk]):
                    continue
                freed = curr[kk] - reps[kk, okk]
                loss = cost[kk, okk] - curc[kk]
                col = min(freed + spare, g_max)
                for ii in range(J):
                    if ii == kk:
                        continue
                    net = curc[ii] - best[ii, col] - loss
                    if net > 1e-12:
                        net_l.append(-net)
                        k_l.append(kk)
                        o_l.append(okk)
                        i_l.append(ii)
        order = np.argsort(np.array(net_l), kind="mergesort")[:TRANSFER_TRIES]
        before = _board_cost(cost, oi, eps)
        best_c, best_cost = -1, before - 1e-12
        for c in order:
            saved = (rows.copy(), free.copy(), mon.copy(), st.copy(), oi.copy())
            if _pair_move(k_l[c], o_l[c], i_l[c], kind, reps, nodes, cost, nopt, byc, cur, B, bufs):
                cst = _board_cost(cost, oi, eps)
                if cst < best_cost:
                    best_c, best_cost = c, cst
            rows[:, :] = saved[0]
            free[:] = saved[1]
            mon[:] = saved[2]
            st[:] = saved[3]
            oi[:] = saved[4]
        if best_c < 0:
            return
        _pair_move(
            k_l[best_c], o_l[best_c], i_l[best_c], kind, reps, nodes, cost, nopt, byc, cur, B, bufs
        )


@njit(**_OPTS)
def local_search(cap, cur, kind, reps, nodes, cost, nopt, byc, order, choice, g_max, eps):
    """One start of the local search: jobs placed in ``order`` with their ``choice`` where
    they fit, the others with their best option of no more replicas (``_greedy_board``), then
    growth, re-placements, two-job moves, growth and re-placements. Returns (allocation, Σ
    cost)."""
    J, N = cur.shape
    K = kind.shape[1]
    rows = np.zeros((J, N), dtype=np.int64)
    free = cap.copy()
    mon = np.zeros(N, dtype=np.bool_)
    st = np.zeros(2, dtype=np.int64)
    for n in range(N):
        if free[n] > 0:
            st[0] += 1
            st[1] += free[n]
    oi = np.full(J, -1, dtype=np.int64)
    B = (rows, free, mon, st, oi)
    bufs = np.zeros((4, N), dtype=np.int64)
    buf = bufs[0]
    ok = np.zeros(K, dtype=np.bool_)
    missed = np.empty(J, dtype=np.int64)
    m = 0
    for i in order:
        if _row_for(i, choice[i], kind, reps, nodes, cur, free, mon, st, buf):
            _put(i, choice[i], buf, rows, free, mon, st, oi)
        else:
            missed[m] = i
            m += 1
    for x in range(m):
        i = missed[x]
        _place_best(i, np.inf, reps[i, choice[i]], kind, reps, nodes, cost, nopt, byc, cur, B, buf)
    row0 = np.zeros(N, dtype=np.int64)
    _grow(kind, reps, nodes, cost, nopt, cur, B, buf, ok)
    _improve(kind, reps, nodes, cost, nopt, byc, cur, B, buf, row0)
    _transfer(kind, reps, nodes, cost, nopt, byc, cur, B, bufs, ok, g_max, eps)
    _grow(kind, reps, nodes, cost, nopt, cur, B, buf, ok)
    _improve(kind, reps, nodes, cost, nopt, byc, cur, B, buf, row0)
    return rows, _board_cost(cost, oi, eps)


@njit(**_OPTS)
def relaxation_optimum(reps, nodes, cost, nopt, g_max, d_max):
    """``pollux_search.relaxation_optimum`` on arrays: each job's option index minimising Σ
    cost with Σ replicas ≤ ``g_max`` and Σ multi-node nodes ≤ ``d_max`` (the same DP, boxes,
    strict comparisons in option order and traceback)."""
    J = len(nopt)
    dp = np.full((g_max + 1, d_max + 1), np.inf)
    dp[0, 0] = 0.0
    picks = np.full((J, g_max + 1, d_max + 1), -1, dtype=np.int16)
    reach_g = reach_d = 0
    for i in range(J):
        new = np.full((g_max + 1, d_max + 1), np.inf)
        top_g = top_d = 0
        for k in range(nopt[i]):
            w, d = reps[i, k], nodes[i, k]
            if w > g_max or d > d_max:
                continue
            rows = min(reach_g, g_max - w) + 1
            cols = min(reach_d, d_max - d) + 1
            top_g = max(top_g, w + rows - 1)
            top_d = max(top_d, d + cols - 1)
            c = cost[i, k]
            for a in range(rows):
                for b in range(cols):
                    cand = dp[a, b] + c
                    if cand < new[w + a, d + b]:
                        new[w + a, d + b] = cand
                        picks[i, w + a, d + b] = k
        dp = new
        reach_g, reach_d = top_g, top_d
    at = np.argmin(dp)
    g, d = at // (d_max + 1), at % (d_max + 1)
    chosen = np.zeros(J, dtype=np.int64)
    for i in range(J - 1, -1, -1):
        k = picks[i, g, d]
        chosen[i] = k
        g -= reps[i, k]
        d -= nodes[i, k]
    return chosen


def warm_up() -> None:
    """Compile (or load from numba's cache) both entry points with the argument types
    ``pollux_search`` passes, on a one-job round (≈ 15 s the first time on a 2-core machine)."""
    one = np.zeros((1, 1), dtype=np.int64)
    cost = np.full((1, 1), 1000.0)
    nopt = np.ones(1, dtype=np.int64)
    first = np.zeros(1, dtype=np.int64)
    relaxation_optimum(one, one, cost, nopt, 1, 1)
    local_search(
        np.ones(1, dtype=np.int64), one, one, one, one, cost, nopt, one, first, first, 1, 1e-3
    )
