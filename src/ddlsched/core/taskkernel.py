"""The iteration-level task loop compiled with numba: ``core/taskexec.py`` line for line.

Each function here mirrors the method of ``TaskExecutor`` of the same name, on flat arrays
instead of ``Run`` objects, so that one event costs a fraction of a microsecond instead of
4–6 µs. It must give the very same events as the Python loop (tests/test_taskkernel.py runs
both): times are integer nanoseconds, and wherever the Python code computes a float and rounds
it to the 1 ns grid (``round(x, 9)``), ``qround`` computes the same float and rounds it the same
way (exactly, ties to even). Events are ordered by (time, sequence number), the sequence shared
with the engine's own heap.

``State`` holds every array; ``new_state`` builds it. Run slots are indices into the per-run
arrays; a run's GPUs and servers are rows of ``gpus``/``servers`` in the job's order.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np
from numba import njit
from numba import types as nt

# worker states, task kinds and comm states: the values of core/taskexec.py
F_READY, RUNNING, B_READY, WAIT, INACTIVE = 0, 1, 2, 3, 4
K_F, K_B, K_GANG_FB, K_GANG_F, K_GANG_B, K_MACRO, K_FB = range(7)
C_NONE, C_WAITING, C_RUNNING = 0, 1, 2
# event kinds
EV_TASK, EV_GANG, EV_COMM, EV_ACTIVATE = 0, 1, 2, 3
# gates
GATE_NONE, GATE_SRSF, GATE_ADADUAL = 0, 1, 2
# what ``run`` stopped for
S_EMPTY, S_PYTHON, S_FINISHED, S_INSTANT, S_GROW = 0, 1, 2, 3, 4
# scalar ints (``si``): clock, sequence counter, counters, list lengths, parameters
(
    I_NOW,
    I_SEQ,
    I_COUNT,
    I_HEAP,
    I_NFIN,
    I_NDIRTY,
    I_NAFF,
    I_NPEND,
    I_EPOCH,
    I_STARTS,
    I_SHORTCUTS,
    I_GATE,
    I_GATE_N,
    I_MARGIN,
    I_RANGE,
) = range(15)
I_EV = 16  # si[I_EV : I_EV + 7]: the event being processed (no array allocated per event)
#: times from here on (2**23 s) are beyond the grid this kernel emulates exactly
#: (``compiledtask.EXACT_UNTIL``); an event there sets ``si[I_RANGE]``
LIMIT_NS = 2**23 * 10**9
# scalar floats (``sf``): busy GPU-seconds, the model's a, AdaDUAL's threshold
F_BUSY, F_A, F_THRESHOLD = range(3)

#: per-run integer fields (columns of ``ri``), named as the attributes of ``taskexec.Run``
#: (``csvc`` = comm_service of the current task; ``pend_flag``/``seen``: bookkeeping)
RUN_INT = (
    "jid G cross nserv ngpu tasks_left last_scale ipt scale tfs tbs tf_full tb_full tf_last "
    "tb_last svc pending gang gang_start gang_end ver comm comm_ver nfused csvc csvc_full "
    "csvc_last iters_left pend_flag seen"
).split()
(
    R_JID,
    R_G,
    R_CROSS,
    R_NSERV,
    R_NGPU,
    R_TASKS_LEFT,
    R_LAST_SCALE,
    R_IPT,
    R_SCALE,
    R_TFS,
    R_TBS,
    R_TF_FULL,
    R_TB_FULL,
    R_TF_LAST,
    R_TB_LAST,
    R_SVC,
    R_PENDING,
    R_GANG,
    R_GANG_START,
    R_GANG_END,
    R_VER,
    R_COMM,
    R_COMM_VER,
    R_NFUSED,
    R_CSVC,
    R_CSVC_FULL,
    R_CSVC_LAST,
    R_ITERS_LEFT,
    R_PEND_FLAG,
    R_SEEN,
) = range(len(RUN_INT))
#: per-run float fields (columns of ``rf``)
RUN_FLOAT = (
    "size comm_min comm_min_full comm_min_last comm_lb lat_left bytes_left per_byte comm_last"
).split()
(
    R_SIZE,
    R_COMM_MIN,
    R_COMM_MIN_FULL,
    R_COMM_MIN_LAST,
    R_COMM_LB,
    R_LAT_LEFT,
    R_BYTES_LEFT,
    R_PER_BYTE,
    R_COMM_LAST,
) = range(len(RUN_FLOAT))
# per worker of a run (``rw[slot, worker]``): its GPU, state, forward end of a fused task
W_GPU, W_STATE, W_FUSED = range(3)
# per server of a run (``rs[slot, position]``): the server, in its waiting lists (0/1)
P_SERVER, P_WAIT_END, P_WAIT_START = range(3)
# per GPU (``gi``): residents, the run computing, ready workers, its task, version, dirty
G_CNT, G_RUN, G_READY, G_TASK_KIND, G_TASK_START, G_TASK_END, G_VER, G_DIRTY_FLAG = range(8)
# per server (``sv``): running all-reduces, waiting lists' lengths, affected flag
S_SCNT, S_SEND_N, S_SSTART_N, S_AFF_FLAG = range(4)
# per server lists (``slist[s, k]``): running all-reduces, waiting for an end, for a start
L_COMM, L_WAIT_END, L_WAIT_START = range(3)
# engine lists (``lists[q]``): finished runs, pending gates, dirty GPUs, affected servers
Q_FIN, Q_PEND, Q_DIRTY, Q_AFF, Q_SORT = range(5)  # Q_SORT: scratch for a sorted copy

#: the kernel's arrays: few, so that compiling the functions that take them stays quick
State = namedtuple("State", "ri rf rw rs gi gres sv slist lists heap gheap per_byte_k si sf")


def new_state(
    num_gpus: int,
    num_servers: int,
    runs: int,
    max_gpus: int,
    max_servers: int,
    per_gpu: int,
    per_server: int,
    per_byte_k: np.ndarray,
    shortcuts: bool,
    gate: int,
    gate_n: int,
    a: float,
    threshold: float,
    heap_rows: int = 1024,
) -> State:
    """Empty arrays for ``runs`` run slots on ``num_gpus`` GPUs and ``num_servers`` servers."""
    i64 = np.int64
    rw = np.full((runs, max_gpus, 3), -1, i64)
    rw[:, :, W_STATE] = INACTIVE
    rs = np.zeros((runs, max_servers, 3), i64)
    rs[:, :, P_SERVER] = -1
    gi = np.zeros((num_gpus, 8), i64)
    gi[:, G_RUN] = -1
    gi[:, G_TASK_KIND] = -1
    si = np.zeros(I_EV + 8, i64)
    si[I_SHORTCUTS] = int(shortcuts)
    si[I_GATE] = gate
    si[I_GATE_N] = gate_n
    sf = np.zeros(4)
    sf[F_A] = a
    sf[F_THRESHOLD] = threshold
    return State(
        ri=np.zeros((runs, len(RUN_INT)), i64),
        rf=np.zeros((runs, len(RUN_FLOAT))),
        rw=rw,
        rs=rs,
        gi=gi,
        gres=np.full((num_gpus, per_gpu, 2), -1, i64),
        sv=np.zeros((num_servers, 4), i64),
        slist=np.full((num_servers, per_server, 3), -1, i64),
        lists=np.zeros((5, max(runs, num_gpus, num_servers)), i64),
        heap=np.zeros((heap_rows, 7), i64),
        gheap=np.zeros((runs * (max_servers + 1) + 4, 3), i64),
        per_byte_k=np.asarray(per_byte_k, dtype=np.float64),
        si=si,
        sf=sf,
    )


def grown(st: State, **sizes: int) -> State:
    """A copy of ``st`` with more room (``runs``, ``per_gpu``, ``per_server``, ``heap_rows``)."""
    runs = sizes.get("runs", st.ri.shape[0])
    per_gpu = sizes.get("per_gpu", st.gres.shape[1])
    per_server = sizes.get("per_server", st.slist.shape[1])
    heap_rows = sizes.get("heap_rows", st.heap.shape[0])
    max_servers = st.rs.shape[1]
    shapes = {
        "ri": (runs, st.ri.shape[1]),
        "rf": (runs, st.rf.shape[1]),
        "rw": (runs, st.rw.shape[1], 3),
        "rs": (runs, max_servers, 3),
        "gres": (st.gres.shape[0], per_gpu, 2),
        "slist": (st.slist.shape[0], per_server, 3),
        "lists": (5, max(runs, st.lists.shape[1])),
        "heap": (heap_rows, 7),
        "gheap": (runs * (max_servers + 1) + 4, 3),
    }
    fields = st._asdict()
    for name, shape in shapes.items():
        arr = fields[name]
        if arr.shape == shape:
            continue
        new = np.full(shape, -1 if name in ("rw", "gres", "slist") else 0, dtype=arr.dtype)
        if name == "rw":
            new[..., W_STATE] = INACTIVE
            new[..., W_FUSED] = -1
        if name == "rs":
            new[..., P_SERVER] = -1
        new[tuple(slice(0, n) for n in arr.shape)] = arr
        fields[name] = new
    return State(**fields)


# --------------------------------------------------------------------- compiling
# Every function runs without numba's reference counting (``_nrt=False``: nothing here
# allocates, and counting the arrays of ``State`` on every call cost half the time). Only the
# entry points get a CPython wrapper; the helpers called with constant arguments get their one
# signature up front, so numba does not compile a version per constant (compile time).
_OPTS = {"cache": True, "_nrt": False}
kernel = njit(**_OPTS)
inner = njit(no_cpython_wrapper=True, **_OPTS)
I8 = nt.int64
ST = numba.typeof(new_state(1, 1, 1, 1, 1, 1, 1, np.zeros(3), True, 0, 0, 0.0, 0.0))


def inner_typed(signature):
    return njit(signature, no_cpython_wrapper=True, **_OPTS)


# --------------------------------------------------------------------- time grid
@inner
def _two_product_err(a: float, b: float, p: float) -> float:
    """The exact error ``a·b − p`` of the float product ``p = a·b`` (Dekker's TwoProduct)."""
    c = 134217729.0  # 2**27 + 1
    t = c * a
    ah = t - (t - a)
    al = a - ah
    t = c * b
    bh = t - (t - b)
    bl = b - bh
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


@kernel
def qround(x: float) -> int:
    """``round(x, 9)`` of Python as a whole number of nanoseconds (x ≥ 0): the nearest multiple
    of 1 ns to the exact value of ``x``, ties to even (CPython's correctly rounded ``round``)."""
    p = x * 1e9
    e = _two_product_err(x, 1e9, p)
    n = np.floor(p)
    frac = p - n  # exact
    if frac > 0.5:
        return int(n) + 1
    if frac < 0.5:
        if frac == 0.0 and e < 0.0:
            return int(n)  # just below an integer: still nearest to it
        return int(n)
    # frac == 0.5: the exact value is above, below or at the tie
    if e > 0.0:
        return int(n) + 1
    if e < 0.0:
        return int(n)
    k = int(n)
    return k if k % 2 == 0 else k + 1


@kernel
def _sec(ns: int) -> float:
    """The float time of a grid point (the nearest double to ns·1e-9, as ``round`` gives)."""
    return ns / 1e9


# --------------------------------------------------------------------- event heap
@inner_typed(nt.void(ST, I8, I8, I8, I8, I8, I8))
def _push(st, t: int, kind: int, a: int, b: int, c: int, d: int) -> None:
    si = st.si
    seq = si[I_SEQ] + 1
    si[I_SEQ] = seq
    if t >= LIMIT_NS:
        si[I_RANGE] = 1
    h = st.heap
    i = si[I_HEAP]
    si[I_HEAP] = i + 1
    while i > 0:
        p = (i - 1) >> 1
        if h[p, 0] < t or (h[p, 0] == t and h[p, 1] < seq):
            break
        for k in range(7):
            h[i, k] = h[p, k]
        i = p
    h[i, 0] = t
    h[i, 1] = seq
    h[i, 2] = kind
    h[i, 3] = a
    h[i, 4] = b
    h[i, 5] = c
    h[i, 6] = d


@inner
def _heap_drop_first(h, n: int) -> None:
    """Remove row 0 of the binary heap ``h[:n]`` (ordered by columns 0, then 1): the last
    row sifts down from the top. Shared by the event heap and the gates' heap."""
    n -= 1
    if n == 0:
        return
    t = h[n, 0]
    s = h[n, 1]
    w = h.shape[1]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (
            h[c + 1, 0] < h[c, 0] or (h[c + 1, 0] == h[c, 0] and h[c + 1, 1] < h[c, 1])
        ):
            c += 1
        if t < h[c, 0] or (t == h[c, 0] and s < h[c, 1]):
            break
        for k in range(w):
            h[i, k] = h[c, k]
        i = c
    for k in range(w):
        h[i, k] = h[n, k]


@inner
def _pop(st) -> None:
    """Remove the earliest event into ``si[I_EV : I_EV + 7]``."""
    h = st.heap
    si = st.si
    for k in range(7):
        si[I_EV + k] = h[0, k]
    n = si[I_HEAP]
    si[I_HEAP] = n - 1
    _heap_drop_first(h, n)


# --------------------------------------------------------------------- small helpers
@inner_typed(nt.void(ST, nt.int64[:, ::1], I8, I8, I8, I8))
def _add_once(st, flags, i: int, col: int, q: int, count: int) -> None:
    """Append ``i`` to the engine list ``lists[q]`` (length ``si[count]``) unless its flag
    ``flags[i, col]`` says it is there already: the dirty GPUs, affected servers and runs
    waiting for their gate."""
    if not flags[i, col]:
        flags[i, col] = 1
        n = st.si[count]
        st.lists[q, n] = i
        st.si[count] = n + 1


@inner
def _mark_dirty(st, g: int) -> None:
    _add_once(st, st.gi, g, G_DIRTY_FLAG, Q_DIRTY, I_NDIRTY)


@inner
def _mark_run_gpus_dirty(st, r: int) -> None:
    for j in range(st.ri[r, R_NGPU]):
        _mark_dirty(st, st.rw[r, j, W_GPU])


@inner
def _mark_affected(st, r: int) -> None:
    for j in range(st.ri[r, R_NSERV]):
        _add_once(st, st.sv, st.rs[r, j, P_SERVER], S_AFF_FLAG, Q_AFF, I_NAFF)


@inner
def _add_pending(st, r: int) -> None:
    _add_once(st, st.ri, r, R_PEND_FLAG, Q_PEND, I_NPEND)


@inner
def _server_pos(st, r: int, s: int) -> int:
    for j in range(st.ri[r, R_NSERV]):
        if st.rs[r, j, P_SERVER] == s:
            return j
    return -1


@kernel
def set_scale(st, r: int) -> None:
    """Run.set_scale: real iterations in the current task (the last takes the remainder)."""
    if st.ri[r, R_TASKS_LEFT] > 1:
        st.ri[r, R_SCALE] = st.ri[r, R_IPT]
        st.ri[r, R_TFS] = st.ri[r, R_TF_FULL]
        st.ri[r, R_TBS] = st.ri[r, R_TB_FULL]
        st.rf[r, R_COMM_MIN] = st.rf[r, R_COMM_MIN_FULL]
        st.ri[r, R_CSVC] = st.ri[r, R_CSVC_FULL]
    else:
        st.ri[r, R_SCALE] = st.ri[r, R_LAST_SCALE]
        st.ri[r, R_TFS] = st.ri[r, R_TF_LAST]
        st.ri[r, R_TBS] = st.ri[r, R_TB_LAST]
        st.rf[r, R_COMM_MIN] = st.rf[r, R_COMM_MIN_LAST]
        st.ri[r, R_CSVC] = st.ri[r, R_CSVC_LAST]


@inner_typed(I8(ST, I8))
def _compute_left(st, r: int) -> int:
    if st.ri[r, R_TASKS_LEFT] <= 0:
        return 0
    full = st.ri[r, R_TASKS_LEFT] - 1
    return (
        full * (st.ri[r, R_TF_FULL] + st.ri[r, R_TB_FULL])
        + st.ri[r, R_TF_LAST]
        + st.ri[r, R_TB_LAST]
    )


@inner_typed(I8(ST, I8, I8, nt.boolean))
def _macro_tasks_done(st, r: int, now: int, count_ending_now: bool) -> int:
    period = st.ri[r, R_TF_FULL] + st.ri[r, R_TB_FULL]
    if period <= 0:
        return 0
    base = _sec(st.ri[r, R_GANG_START])
    done = max(int((_sec(now) - base) // (period * 1e-9)), 0)
    while done > 0 and qround(base + (done * period) * 1e-9) > now:
        done -= 1
    while qround(base + ((done + 1) * period) * 1e-9) <= now:
        done += 1
    if not count_ending_now and done and qround(base + (done * period) * 1e-9) == now:
        done -= 1
    return min(done, st.ri[r, R_TASKS_LEFT] - 1)


@inner
def _eff_svc(st, r: int) -> int:
    now = st.si[I_NOW]
    tfs = st.ri[r, R_TFS]
    svc = st.ri[r, R_SVC]
    for j in range(st.ri[r, R_NGPU]):
        f_end = st.rw[r, j, W_FUSED]
        if f_end >= 0 and f_end <= now:
            svc -= tfs
    return svc


@inner
def svc_now(st, r: int) -> int:
    """TaskExecutor._svc_now: L_J as the task-by-task execution would hold it now."""
    if st.ri[r, R_GANG] < 0:
        return _eff_svc(st, r) if st.ri[r, R_NFUSED] > 0 else st.ri[r, R_SVC]
    now = st.si[I_NOW]
    svc = st.ri[r, R_SVC]
    tfs = st.ri[r, R_TFS]
    start = st.ri[r, R_GANG_START]
    G = st.ri[r, R_G]
    if st.ri[r, R_GANG] == K_MACRO:
        done = _macro_tasks_done(st, r, now, True)
        if done:
            period = st.ri[r, R_TF_FULL] + st.ri[r, R_TB_FULL]
            svc -= G * period * done
            tfs = st.ri[r, R_TF_FULL] if st.ri[r, R_TASKS_LEFT] - done > 1 else st.ri[r, R_TF_LAST]
            start = qround(_sec(start) + (done * period) * 1e-9)
    elif st.ri[r, R_GANG] != K_GANG_FB:
        return svc
    if now >= qround(_sec(start) + tfs * 1e-9):
        svc -= G * tfs
    return max(svc, 0)


@kernel
def services(st, slots, out) -> None:
    """``svc_now`` of every slot in ``slots`` into ``out`` (one call per policy pass)."""
    for k in range(len(slots)):
        out[k] = svc_now(st, slots[k])


# --------------------------------------------------------------------- compute
@inner_typed(nt.boolean(ST, I8, I8, I8))
def _can_fuse(st, g: int, r: int, f_end: int) -> bool:
    nowf = _sec(st.si[I_NOW])
    fendf = _sec(f_end)
    for k in range(st.gi[g, G_CNT]):
        q = st.gres[g, k, 0]
        if q == r:
            continue
        if st.rw[q, st.gres[g, k, 1], W_STATE] != WAIT or not st.ri[q, R_CROSS]:
            return False
        earliest = (
            st.rf[q, R_COMM_LB] if st.ri[q, R_COMM] == C_RUNNING else nowf + st.rf[q, R_COMM_MIN]
        )
        if earliest - fendf <= 1e-9:
            return False
    return True


@inner_typed(nt.void(ST, I8, I8, I8, I8, I8, I8))
def _start_task(st, g: int, r: int, i: int, kind: int, start: int, end: int) -> None:
    st.rw[r, i, W_STATE] = RUNNING
    st.gi[g, G_READY] -= 1
    st.gi[g, G_RUN] = r
    st.gi[g, G_TASK_KIND] = kind
    st.gi[g, G_TASK_START] = start
    st.gi[g, G_TASK_END] = end
    ver = st.gi[g, G_VER] + 1
    st.gi[g, G_VER] = ver
    _push(st, end, EV_TASK, g, r, i, ver)


@inner
def _pick(st, g: int) -> None:
    """An idle GPU starts the ready task of the resident job with least remaining service."""
    best = -1
    bi = -1
    bsvc = 0
    n = st.gi[g, G_CNT]
    for k in range(n):
        r = st.gres[g, k, 0]
        i = st.gres[g, k, 1]
        w = st.rw[r, i, W_STATE]
        if w == F_READY or w == B_READY:
            svc = _eff_svc(st, r) if st.ri[r, R_NFUSED] > 0 else st.ri[r, R_SVC]
            if best < 0 or svc < bsvc or (svc == bsvc and st.ri[r, R_JID] < st.ri[best, R_JID]):
                best = r
                bi = i
                bsvc = svc
    if best < 0:
        return
    r = best
    now = st.si[I_NOW]
    nowf = _sec(now)
    if st.rw[r, bi, W_STATE] == B_READY:
        _start_task(st, g, r, bi, K_B, now, qround(nowf + st.ri[r, R_TBS] * 1e-9))
        return
    if not st.si[I_SHORTCUTS]:
        _start_task(st, g, r, bi, K_F, now, qround(nowf + st.ri[r, R_TFS] * 1e-9))
        return
    alone = n == 1
    if alone:
        for j in range(st.ri[r, R_NGPU]):
            h = st.rw[r, j, W_GPU]
            if st.gi[h, G_CNT] != 1 or st.rw[r, j, W_STATE] != F_READY:
                alone = False
                break
    if alone:
        # gang: the job is alone on all its GPUs (its workers are in lockstep)
        if st.ri[r, R_CROSS]:
            kind = K_GANG_FB
            end = qround(nowf + (st.ri[r, R_TFS] + st.ri[r, R_TBS]) * 1e-9)
        else:
            kind = K_MACRO
            end = qround(nowf + _compute_left(st, r) * 1e-9)
        st.ri[r, R_GANG] = kind
        st.ri[r, R_GANG_START] = now
        st.ri[r, R_GANG_END] = end
        st.ri[r, R_VER] += 1
        for j in range(st.ri[r, R_NGPU]):
            h = st.rw[r, j, W_GPU]
            st.rw[r, j, W_STATE] = RUNNING
            st.gi[h, G_READY] -= 1
            st.gi[h, G_RUN] = r
        _push(st, end, EV_GANG, r, st.ri[r, R_VER], 0, 0)
        return
    f_end = qround(nowf + st.ri[r, R_TFS] * 1e-9)
    if _can_fuse(st, g, r, f_end):
        st.rw[r, bi, W_FUSED] = f_end
        st.ri[r, R_NFUSED] += 1
        _start_task(st, g, r, bi, K_FB, now, qround(_sec(f_end) + st.ri[r, R_TBS] * 1e-9))
    else:
        _start_task(st, g, r, bi, K_F, now, f_end)


@inner
def _task_done(st, g: int, r: int, i: int, ver: int) -> None:
    if ver != st.gi[g, G_VER]:
        return  # re-timed by a split
    kind = st.gi[g, G_TASK_KIND]
    st.sf[F_BUSY] += _sec(st.gi[g, G_TASK_END]) - _sec(st.gi[g, G_TASK_START])
    st.gi[g, G_RUN] = -1
    _mark_dirty(st, g)
    if kind == K_F:
        st.ri[r, R_SVC] -= st.ri[r, R_TFS]
        st.rw[r, i, W_STATE] = B_READY
        st.gi[g, G_READY] += 1
        return
    if kind == K_FB:
        st.rw[r, i, W_FUSED] = -1
        st.ri[r, R_NFUSED] -= 1
        st.ri[r, R_SVC] -= st.ri[r, R_TFS] + st.ri[r, R_TBS]
    else:
        st.ri[r, R_SVC] -= st.ri[r, R_TBS]
    st.rw[r, i, W_STATE] = WAIT
    st.ri[r, R_PENDING] -= 1
    if st.ri[r, R_PENDING] == 0:
        _compute_done(st, r)


@inner
def _gang_done(st, r: int, ver: int) -> None:
    if ver != st.ri[r, R_VER]:
        return
    kind = st.ri[r, R_GANG]
    st.ri[r, R_GANG] = -1
    st.sf[F_BUSY] += st.ri[r, R_G] * (_sec(st.ri[r, R_GANG_END]) - _sec(st.ri[r, R_GANG_START]))
    for j in range(st.ri[r, R_NGPU]):
        st.gi[st.rw[r, j, W_GPU], G_RUN] = -1
    _mark_run_gpus_dirty(st, r)
    if kind == K_MACRO:
        _finish(st, r)
        return
    if kind == K_GANG_F:
        st.ri[r, R_SVC] -= st.ri[r, R_G] * st.ri[r, R_TFS]
        for j in range(st.ri[r, R_NGPU]):
            st.rw[r, j, W_STATE] = B_READY
            st.gi[st.rw[r, j, W_GPU], G_READY] += 1
        return
    st.ri[r, R_SVC] -= st.ri[r, R_G] * (
        st.ri[r, R_TBS] if kind == K_GANG_B else st.ri[r, R_TFS] + st.ri[r, R_TBS]
    )
    for j in range(st.ri[r, R_NGPU]):
        st.rw[r, j, W_STATE] = WAIT
    st.ri[r, R_PENDING] = 0
    _compute_done(st, r)


@inner
def _split(st, r: int, i: int, g: int) -> None:
    """TaskExecutor._split: turn a shortcut task of ``r`` covering GPU ``g`` into exact tasks."""
    now = st.si[I_NOW]
    if st.rw[r, i, W_FUSED] >= 0 and st.gi[g, G_RUN] == r:
        f_end = st.rw[r, i, W_FUSED]
        st.rw[r, i, W_FUSED] = -1
        st.ri[r, R_NFUSED] -= 1
        start = st.gi[g, G_TASK_START]
        if now <= f_end:  # still in its forward: the GPU is up for grabs at f_end
            st.gi[g, G_TASK_KIND] = K_F
            st.gi[g, G_TASK_END] = f_end
            st.gi[g, G_VER] += 1
            _push(st, f_end, EV_TASK, g, r, i, st.gi[g, G_VER])
        else:  # its forward is done; the rest is a plain backward
            st.sf[F_BUSY] += _sec(f_end) - _sec(start)
            st.ri[r, R_SVC] -= st.ri[r, R_TFS]
            st.gi[g, G_TASK_KIND] = K_B
            st.gi[g, G_TASK_START] = f_end
        return
    G = st.ri[r, R_G]
    if st.ri[r, R_GANG] == K_MACRO:
        done = _macro_tasks_done(st, r, now, False)
        task_start = st.ri[r, R_GANG_START]
        if done:
            period = st.ri[r, R_TF_FULL] + st.ri[r, R_TB_FULL]
            task_start = qround(_sec(task_start) + (done * period) * 1e-9)
            st.ri[r, R_SVC] -= G * period * done
            st.ri[r, R_ITERS_LEFT] -= done * st.ri[r, R_IPT]
            st.ri[r, R_TASKS_LEFT] -= done
            set_scale(st, r)
        st.sf[F_BUSY] += G * (_sec(task_start) - _sec(st.ri[r, R_GANG_START]))
        st.ri[r, R_GANG_START] = task_start
        f_end = qround(_sec(task_start) + st.ri[r, R_TFS] * 1e-9)
        if now <= f_end:
            st.ri[r, R_GANG] = K_GANG_F
            st.ri[r, R_GANG_END] = f_end
        else:
            st.ri[r, R_SVC] -= G * st.ri[r, R_TFS]  # this iteration's forward is done
            st.ri[r, R_GANG] = K_GANG_B
            st.ri[r, R_GANG_END] = qround(_sec(f_end) + st.ri[r, R_TBS] * 1e-9)
    elif st.ri[r, R_GANG] == K_GANG_FB and now <= qround(
        _sec(st.ri[r, R_GANG_START]) + st.ri[r, R_TFS] * 1e-9
    ):
        st.ri[r, R_GANG] = K_GANG_F
        st.ri[r, R_GANG_END] = qround(_sec(st.ri[r, R_GANG_START]) + st.ri[r, R_TFS] * 1e-9)
    else:
        return
    st.ri[r, R_VER] += 1
    _push(st, st.ri[r, R_GANG_END], EV_GANG, r, st.ri[r, R_VER], 0, 0)


@inner
def _compute_done(st, r: int) -> None:
    if st.ri[r, R_CROSS]:
        st.ri[r, R_COMM] = C_WAITING
        _add_pending(st, r)
    else:
        _iteration_done(st, r)


@inner
def _iteration_done(st, r: int) -> None:
    s = st.ri[r, R_SCALE]
    st.ri[r, R_SVC] -= st.ri[r, R_CSVC]
    st.ri[r, R_ITERS_LEFT] -= s
    st.ri[r, R_TASKS_LEFT] -= 1
    if st.ri[r, R_TASKS_LEFT] == 0:
        _finish(st, r)
        return
    set_scale(st, r)
    for j in range(st.ri[r, R_NGPU]):
        st.rw[r, j, W_STATE] = F_READY
        st.gi[st.rw[r, j, W_GPU], G_READY] += 1
    st.ri[r, R_PENDING] = st.ri[r, R_G]
    _mark_run_gpus_dirty(st, r)


@inner
def _finish(st, r: int) -> None:
    for j in range(st.ri[r, R_NGPU]):
        g = st.rw[r, j, W_GPU]
        n = st.gi[g, G_CNT]
        k = 0
        while st.gres[g, k, 0] != r:
            k += 1
        for m in range(k, n - 1):  # keep the residents' order
            st.gres[g, m, 0] = st.gres[g, m + 1, 0]
            st.gres[g, m, 1] = st.gres[g, m + 1, 1]
        st.gres[g, n - 1, 0] = -1
        st.gres[g, n - 1, 1] = -1
        st.gi[g, G_CNT] = n - 1
    st.ri[r, R_SVC] = 0
    _mark_run_gpus_dirty(st, r)
    n = st.si[I_NFIN]
    st.lists[Q_FIN, n] = r
    st.si[I_NFIN] = n + 1


@inner
def _activate(st, r: int) -> None:
    for j in range(st.ri[r, R_NGPU]):
        st.rw[r, j, W_STATE] = F_READY
        st.gi[st.rw[r, j, W_GPU], G_READY] += 1
    _mark_run_gpus_dirty(st, r)


@kernel
def start(st, r: int, delay: float) -> None:
    """TaskExecutor.start for the run in slot ``r`` (its fields filled by the caller)."""
    for j in range(st.ri[r, R_NGPU]):
        g = st.rw[r, j, W_GPU]
        for k in range(st.gi[g, G_CNT]):  # another job lands here: undo the residents' shortcuts
            _split(st, st.gres[g, k, 0], st.gres[g, k, 1], g)
        n = st.gi[g, G_CNT]
        st.gres[g, n, 0] = r
        st.gres[g, n, 1] = j
        st.gi[g, G_CNT] = n + 1
    if delay > 0:
        for j in range(st.ri[r, R_NGPU]):
            st.rw[r, j, W_STATE] = INACTIVE
        _push(st, qround(_sec(st.si[I_NOW]) + delay), EV_ACTIVATE, r, 0, 0, 0)
    else:
        for j in range(st.ri[r, R_NGPU]):
            st.rw[r, j, W_STATE] = F_READY
            st.gi[st.rw[r, j, W_GPU], G_READY] += 1
        _mark_run_gpus_dirty(st, r)


# --------------------------------------------------------------------- communication
@inner
def _advance(st, q: int) -> None:
    nowf = _sec(st.si[I_NOW])
    dt = nowf - st.rf[q, R_COMM_LAST]
    if dt > 0:
        lat = min(dt, st.rf[q, R_LAT_LEFT])
        st.rf[q, R_LAT_LEFT] -= lat
        dt -= lat
        if dt > 0 and st.rf[q, R_PER_BYTE] > 0:
            st.rf[q, R_BYTES_LEFT] = max(st.rf[q, R_BYTES_LEFT] - dt / st.rf[q, R_PER_BYTE], 0.0)
        st.rf[q, R_COMM_LAST] = nowf


@inner
def _remaining_bytes(st, q: int) -> float:
    dt = _sec(st.si[I_NOW]) - st.rf[q, R_COMM_LAST] - st.rf[q, R_LAT_LEFT]
    if dt <= 0 or st.rf[q, R_PER_BYTE] <= 0:
        return st.rf[q, R_BYTES_LEFT]
    return max(st.rf[q, R_BYTES_LEFT] - dt / st.rf[q, R_PER_BYTE], 0.0)


@inner
def _blocker(st, r: int) -> int:
    """The built-in gates of policies/gates.py: −1 to start, else the blocking server."""
    kind = st.si[I_GATE]
    if kind == GATE_NONE:
        return -1
    if kind == GATE_SRSF:
        n = st.si[I_GATE_N]
        for j in range(st.ri[r, R_NSERV]):
            s = st.rs[r, j, P_SERVER]
            if st.sv[s, S_SCNT] >= n:
                return s
        return -1
    max_tasks = 0  # AdaDual (Wang Alg. 2)
    busiest = -1
    for j in range(st.ri[r, R_NSERV]):
        s = st.rs[r, j, P_SERVER]
        k = st.sv[s, S_SCNT]
        if k > max_tasks:
            max_tasks = k
            busiest = s
    if max_tasks == 0:
        return -1
    if max_tasks > 1:
        return busiest
    m_old = _remaining_bytes(st, st.slist[busiest, 0, L_COMM])
    if m_old > 0 and (st.rf[r, R_SIZE] * st.ri[r, R_SCALE]) / m_old < st.sf[F_THRESHOLD]:
        return -1
    return busiest


@inner_typed(I8(ST, I8, I8, I8, I8))
def _gheap_push(st, n: int, svc: int, jid: int, r: int) -> int:
    h = st.gheap
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if h[p, 0] < svc or (h[p, 0] == svc and h[p, 1] < jid):
            break
        h[i, 0] = h[p, 0]
        h[i, 1] = h[p, 1]
        h[i, 2] = h[p, 2]
        i = p
    h[i, 0] = svc
    h[i, 1] = jid
    h[i, 2] = r
    return n + 1


@inner_typed(I8(ST, I8))
def _gheap_pop(st, n: int) -> int:
    """Remove the least (svc, jid) entry; returns its run slot (the heap then has n − 1)."""
    r = st.gheap[0, 2]
    _heap_drop_first(st.gheap, n)
    return r


@inner
def _run_gates(st) -> None:
    """TaskExecutor._run_gates (Alg. 3 lines 15–21)."""
    si = st.si
    while si[I_NPEND] > 0:
        n = 0
        for k in range(si[I_NPEND]):
            r = st.lists[Q_PEND, k]
            st.ri[r, R_PEND_FLAG] = 0
            n = _gheap_push(st, n, st.ri[r, R_SVC], st.ri[r, R_JID], r)
        si[I_NPEND] = 0
        si[I_EPOCH] += 1
        epoch = si[I_EPOCH]
        while n > 0:
            r = _gheap_pop(st, n)
            n -= 1
            if st.ri[r, R_SEEN] == epoch or st.ri[r, R_COMM] != C_WAITING:
                continue
            st.ri[r, R_SEEN] = epoch
            svc = st.ri[r, R_SVC]
            jid = st.ri[r, R_JID]
            block = _blocker(st, r)
            if block < 0:
                _comm_start(st, r)
                for j in range(st.ri[r, R_NSERV]):
                    s = st.rs[r, j, P_SERVER]
                    for k in range(st.sv[s, S_SSTART_N]):
                        w = st.slist[s, k, L_WAIT_START]
                        st.rs[w, _server_pos(st, w, s), P_WAIT_START] = 0
                        if st.ri[w, R_SEEN] != epoch and (
                            st.ri[w, R_SVC] > svc
                            or (st.ri[w, R_SVC] == svc and st.ri[w, R_JID] > jid)
                        ):
                            n = _gheap_push(st, n, st.ri[w, R_SVC], st.ri[w, R_JID], w)
                        else:
                            _add_pending(st, w)
                    st.sv[s, S_SSTART_N] = 0
            else:
                pos = _server_pos(st, r, block)
                if not st.rs[r, pos, P_WAIT_END]:
                    st.rs[r, pos, P_WAIT_END] = 1
                    m = st.sv[block, S_SEND_N]
                    st.slist[block, m, L_WAIT_END] = r
                    st.sv[block, S_SEND_N] = m + 1
                if st.si[I_GATE] == GATE_ADADUAL and st.sv[block, S_SCNT] == 1:
                    # start_watch: servers before the refusing one in the job's order
                    for j in range(pos):
                        s = st.rs[r, j, P_SERVER]
                        if not st.rs[r, j, P_WAIT_START]:
                            st.rs[r, j, P_WAIT_START] = 1
                            m = st.sv[s, S_SSTART_N]
                            st.slist[s, m, L_WAIT_START] = r
                            st.sv[s, S_SSTART_N] = m + 1


@inner
def _comm_start(st, r: int) -> None:
    for j in range(st.ri[r, R_NSERV]):
        s = st.rs[r, j, P_SERVER]
        for k in range(st.sv[s, S_SCNT]):
            _advance(st, st.slist[s, k, L_COMM])
    for j in range(st.ri[r, R_NSERV]):
        s = st.rs[r, j, P_SERVER]
        m = st.sv[s, S_SCNT]
        st.slist[s, m, L_COMM] = r
        st.sv[s, S_SCNT] = m + 1
    _mark_affected(st, r)
    nowf = _sec(st.si[I_NOW])
    st.ri[r, R_COMM] = C_RUNNING
    st.rf[r, R_COMM_LB] = nowf + st.rf[r, R_COMM_MIN]
    st.rf[r, R_LAT_LEFT] = st.sf[F_A] * st.ri[r, R_SCALE]
    st.rf[r, R_BYTES_LEFT] = st.rf[r, R_SIZE] * st.ri[r, R_SCALE]
    st.rf[r, R_PER_BYTE] = 0.0
    st.rf[r, R_COMM_LAST] = nowf
    st.si[I_STARTS] += 1


@inner
def _comm_done(st, r: int, ver: int) -> None:
    if ver != st.ri[r, R_COMM_VER]:
        return
    for j in range(st.ri[r, R_NSERV]):
        s = st.rs[r, j, P_SERVER]
        m = st.sv[s, S_SCNT]
        for k in range(m):
            _advance(st, st.slist[s, k, L_COMM])
        k = 0
        while st.slist[s, k, L_COMM] != r:
            k += 1
        for x in range(k, m - 1):
            st.slist[s, x, L_COMM] = st.slist[s, x + 1, L_COMM]
        st.slist[s, m - 1, L_COMM] = -1
        st.sv[s, S_SCNT] = m - 1
        for k in range(st.sv[s, S_SEND_N]):
            w = st.slist[s, k, L_WAIT_END]
            st.rs[w, _server_pos(st, w, s), P_WAIT_END] = 0
            _add_pending(st, w)
        st.sv[s, S_SEND_N] = 0
    _mark_affected(st, r)
    st.ri[r, R_COMM] = C_NONE
    st.ri[r, R_COMM_VER] += 1
    _iteration_done(st, r)


@inner_typed(nt.void(ST, I8, I8))
def _sort_into_scratch(st, row: int, n: int) -> None:
    """The first ``n`` entries of ``lists[row]`` sorted into ``lists[Q_SORT]`` (insertion
    sort: the lists are short, and nothing is allocated)."""
    out = st.lists[Q_SORT]
    src = st.lists[row]
    for k in range(n):
        v = src[k]
        j = k
        while j > 0 and out[j - 1] > v:
            out[j] = out[j - 1]
            j -= 1
        out[j] = v


@inner
def _retime_comms(st) -> None:
    si = st.si
    n = si[I_NAFF]
    _sort_into_scratch(st, Q_AFF, n)
    servers = st.lists[Q_SORT]
    for k in range(n):
        st.sv[servers[k], S_AFF_FLAG] = 0
    si[I_NAFF] = 0
    si[I_EPOCH] += 1
    epoch = si[I_EPOCH]
    nowf = _sec(si[I_NOW])
    for i in range(n):
        s = servers[i]
        for k in range(st.sv[s, S_SCNT]):
            q = st.slist[s, k, L_COMM]
            if st.ri[q, R_SEEN] == epoch:
                continue
            st.ri[q, R_SEEN] = epoch
            _advance(st, q)
            kmax = 0
            for j in range(st.ri[q, R_NSERV]):
                c = st.sv[st.rs[q, j, P_SERVER], S_SCNT]
                if c > kmax:
                    kmax = c
            pb = st.per_byte_k[kmax]
            if pb != st.rf[q, R_PER_BYTE]:
                st.rf[q, R_PER_BYTE] = pb
                st.ri[q, R_COMM_VER] += 1
                end = nowf + st.rf[q, R_LAT_LEFT] + st.rf[q, R_BYTES_LEFT] * pb
                _push(st, qround(end), EV_COMM, q, st.ri[q, R_COMM_VER], 0, 0)


# --------------------------------------------------------------------- end of instant, loop
@kernel
def settle(st) -> None:
    """TaskExecutor.settle: gates, re-timed all-reduces, idle GPUs (in GPU order)."""
    si = st.si
    if si[I_NPEND] > 0:
        _run_gates(st)
    if si[I_NAFF] > 0:
        _retime_comms(st)
    n = si[I_NDIRTY]
    if n == 0:
        return
    _sort_into_scratch(st, Q_DIRTY, n)
    gpus = st.lists[Q_SORT]
    for k in range(n):
        st.gi[gpus[k], G_DIRTY_FLAG] = 0
    si[I_NDIRTY] = 0
    for i in range(n):
        g = gpus[i]
        if st.gi[g, G_RUN] < 0 and st.gi[g, G_READY]:
            _pick(st, g)


@inner
def _dispatch(st) -> None:
    ev = st.si
    kind = ev[I_EV + 2]
    if kind == EV_TASK:
        _task_done(st, ev[I_EV + 3], ev[I_EV + 4], ev[I_EV + 5], ev[I_EV + 6])
    elif kind == EV_GANG:
        _gang_done(st, ev[I_EV + 3], ev[I_EV + 4])
    elif kind == EV_COMM:
        _comm_done(st, ev[I_EV + 3], ev[I_EV + 4])
    else:
        _activate(st, ev[I_EV + 3])


@kernel
def events_at(st, t: int, seq_limit: int) -> None:
    """Process this loop's events at time ``t`` with a sequence number below ``seq_limit``
    (an instant shared with the engine's events); no settle."""
    si = st.si
    si[I_NOW] = t
    h = st.heap
    while si[I_HEAP] > 0 and h[0, 0] == t and h[0, 1] < seq_limit:
        _pop(st)
        _dispatch(st)
        si[I_COUNT] += 1


@kernel
def run(st, py_t: int, one_instant: bool) -> int:
    """Process whole instants of this loop's own events strictly before ``py_t`` (the engine's
    next event), settling each; stop early after an instant in which a job finished, or after
    one instant if ``one_instant``, before settling it (the engine runs its policy first).

    Only ``settle`` and ``start`` push events (at most ``pi[3]`` per instant), so the heap has
    room for an instant when that many rows are free; else ``S_GROW`` asks for a bigger one.
    """
    si = st.si
    h = st.heap
    room = h.shape[0] - st.si[I_MARGIN]
    while True:
        if si[I_HEAP] == 0:
            return S_EMPTY
        t = h[0, 0]
        if t >= py_t:
            return S_PYTHON
        if si[I_HEAP] >= room:
            return S_GROW
        si[I_NOW] = t
        while si[I_HEAP] > 0 and h[0, 0] == t:
            _pop(st)
            _dispatch(st)
            si[I_COUNT] += 1
        if si[I_NFIN] > 0:
            return S_FINISHED
        if one_instant:
            return S_INSTANT
        settle(st)
