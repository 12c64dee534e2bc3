"""The Pollux allocation search (policies/pollux_search.py): objective, constraints, optimality
on problems small enough to enumerate."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsched.policies.pollux_search import (
    EPS,
    RoundProblem,
    SearchStats,
    objective,
    search,
    violations,
)


def toy(**kw) -> RoundProblem:
    """Two nodes × 2 GPUs, two jobs; job 0 runs on node 0 with 2 GPUs, job 1 is queued."""
    single = np.array([[0, 1.0, 1.8, 0, 0], [0, 1.0, 1.5, 0, 0]])
    multi = np.array([[0, 0, 1.6, 2.2, 3.0], [0, 0, 1.2, 1.4, 1.6]])
    args = dict(
        num_nodes=2,
        gpus_per_node=2,
        job_ids=(7, 9),
        current=np.array([[2, 0], [0, 0]]),
        max_replicas=np.array([4, 4]),
        single=single,
        multi=multi,
        restart=np.array([0.5, 0.25]),
        scale=0.5,
    )
    args.update(kw)
    return RoundProblem(**args)


def test_objective_by_hand():
    p = toy()
    # job 0 keeps its row: s = 0.5·1.8, no restart factor; job 1 gets node 1: 0.5·1.5·0.25
    s0, s1 = 0.5 * 1.8, 0.5 * 1.5 * 0.25
    want = 1.0 / (((s0 + EPS) ** -1 + (s1 + EPS) ** -1) / 2)
    assert objective(p, np.array([[2, 0], [0, 2]])) == pytest.approx(want, rel=1e-12)
    # job 0 moves to 1+1 on two nodes: multi-node table and its restart factor; job 1 nothing
    s0 = 0.5 * 1.6 * 0.5
    want = 1.0 / (((s0 + EPS) ** -1 + (0 + EPS) ** -1) / 2)
    assert objective(p, np.array([[1, 1], [0, 0]])) == pytest.approx(want, rel=1e-12)


def test_restart_factor_exactly_when_the_row_changes():
    p = toy()
    kept = p.speedups(np.array([[2, 0], [0, 0]]))
    assert kept[0] == pytest.approx(0.5 * 1.8)  # same row: no factor
    assert kept[1] == 0.0  # queued and still queued: unchanged, nothing to penalise
    moved = p.speedups(np.array([[0, 2], [0, 0]]))  # same count, other node: a restart
    assert moved[0] == pytest.approx(0.5 * 1.8 * 0.5)
    started = p.speedups(np.array([[2, 0], [0, 1]]))  # a queued job that starts restarts too
    assert started[1] == pytest.approx(0.5 * 1.0 * 0.25)


def test_violations_name_each_constraint():
    p = toy()
    assert violations(p, np.array([[2, 0], [0, 2]])) == []
    assert violations(p, np.array([[2, 1], [1, 0]]))[0].startswith("node 0: 3 GPUs")
    q = toy(max_replicas=np.array([1, 4]))
    assert "job 7: 2 replicas > 1" in violations(q, np.array([[2, 0], [0, 0]]))
    assert any("multi-node jobs" in v for v in violations(p, np.array([[1, 1], [1, 1]])))


def test_the_toy_optimum_spreads_nothing_it_need_not():
    p = toy()
    alloc = search(p)
    assert violations(p, alloc) == []
    assert objective(p, alloc) == pytest.approx(objective(p, np.array([[2, 0], [0, 2]])))


# -------------------------------------------------------------------------------------------
# brute force on tiny problems
# -------------------------------------------------------------------------------------------


def all_allocations(jobs: int, nodes: int, gpus: int) -> np.ndarray:
    """Every J × N matrix with entries 0..gpus within node capacity and at most one
    multi-node job per node (replica limits are checked by the caller)."""
    cells = np.array(list(itertools.product(range(gpus + 1), repeat=jobs * nodes)))
    a = cells.reshape(-1, jobs, nodes)
    ok = (a.sum(axis=1) <= gpus).all(axis=1)
    multi = np.count_nonzero(a, axis=2) > 1
    ok &= ((a > 0) & multi[:, :, None]).sum(axis=1).max(axis=1) <= 1
    return a[ok]


@st.composite
def tiny_problems(draw) -> RoundProblem:
    jobs = draw(st.integers(1, 3))
    nodes = draw(st.integers(1, 2))
    gpus = draw(st.integers(2, 4 if jobs * nodes <= 4 else 3))
    k = nodes * gpus
    maxr = np.array([draw(st.integers(1, k)) for _ in range(jobs)])
    value = st.floats(0.0, 4.0, allow_nan=False, width=32)
    single = np.zeros((jobs, k + 1))
    multi = np.zeros((jobs, k + 1))
    for i in range(jobs):
        for r in range(1, min(gpus, maxr[i]) + 1):
            single[i, r] = draw(value)
        for r in range(2, maxr[i] + 1):
            multi[i, r] = draw(value)
    feasible = [a for a in all_allocations(jobs, nodes, gpus) if (a.sum(axis=1) <= maxr).all()]
    current = feasible[draw(st.integers(0, len(feasible) - 1))]
    restart = np.array([draw(st.floats(0.0, 1.0, width=32)) for _ in range(jobs)])
    return RoundProblem(
        num_nodes=nodes,
        gpus_per_node=gpus,
        job_ids=tuple(range(jobs)),
        current=current,
        max_replicas=maxr,
        single=single,
        multi=multi,
        restart=restart,
        scale=1.0 / gpus,
    )


def brute_force(p: RoundProblem) -> float:
    cands = all_allocations(p.num_jobs, p.num_nodes, p.gpus_per_node)
    cands = cands[(cands.sum(axis=2) <= p.max_replicas).all(axis=1)]
    return max(objective(p, a) for a in cands)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_problems())
def test_search_matches_brute_force_on_tiny_problems(p):
    """What ``search`` promises: the optimum when the relaxation's choice packs
    (``stats.exact``), else local search that is never worse than keeping the current
    allocation. It is not always optimal then (``test_a_known_gap_of_the_local_search``)."""
    stats = SearchStats()
    alloc = search(p, stats)
    assert violations(p, alloc) == []
    best = brute_force(p)
    value = objective(p, alloc)
    if stats.exact:
        assert value >= best - 1e-12 * max(1.0, best)
    else:
        keep = objective(p, p.current)
        assert value >= keep - 1e-12 * max(1.0, keep)


def test_a_known_gap_of_the_local_search() -> None:
    """A tiny problem (found by the test above in CI, 2026-11-25) where the relaxation does not
    pack and the local search stops 0.03 % below the optimum; the same allocation before and
    after the Pollux speed-ups of issue #15. Kept so a change of the search shows up here."""
    p = RoundProblem(
        num_nodes=2,
        gpus_per_node=2,
        job_ids=(0, 1, 2),
        current=np.array([[0, 0], [1, 1], [0, 0]]),
        max_replicas=np.array([2, 2, 1]),
        single=np.array(
            [[0.0, 0.0, 3.0, 0.0, 0.0], [0.0, 0.0, 1.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0]]
        ),
        multi=np.array([[0.0] * 5, [0.0, 0.0, 2.0, 0.0, 0.0], [0.0] * 5]),
        restart=np.array([0.5, 1.0, 1.0]),
        scale=0.5,
    )
    stats = SearchStats()
    alloc = search(p, stats)
    assert not stats.exact
    assert alloc.tolist() == [[0, 0], [1, 1], [1, 0]]
    assert objective(p, alloc) == pytest.approx(0.0029910418029315926, rel=1e-12)
    assert brute_force(p) == pytest.approx(0.0029920318725099597, rel=1e-12)


# -------------------------------------------------------------------------------------------
# constraints on larger random problems
# -------------------------------------------------------------------------------------------


def place_on_one_node(rng, i: int, gpus: int, maxr, free, current) -> None:
    """Job i runs on the freest node with a random count of GPUs now, if that fits."""
    want = int(rng.integers(0, min(gpus, maxr[i]) + 1))
    n = int(np.argmax(free))
    if want and free[n] >= want:
        current[i, n] = want
        free[n] -= want


@st.composite
def random_problems(draw) -> RoundProblem:
    nodes = draw(st.integers(2, 8))
    gpus = draw(st.sampled_from([2, 4, 8]))
    jobs = draw(st.integers(1, 24))
    k = nodes * gpus
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    maxr = rng.integers(1, k + 1, size=jobs)
    r = np.arange(k + 1)
    single = np.where((r >= 1) & (r <= gpus), r**0.8, 0.0) * rng.uniform(0.5, 1.5, (jobs, 1))
    multi = np.where(r >= 2, r**0.7, 0.0) * rng.uniform(0.3, 1.5, (jobs, 1))
    single[r[None, :] > maxr[:, None]] = 0.0
    multi[r[None, :] > maxr[:, None]] = 0.0
    # a feasible current allocation: some jobs on one node each, in order, while they fit
    current = np.zeros((jobs, nodes), dtype=np.int64)
    free = np.full(nodes, gpus)
    for i in range(jobs):
        place_on_one_node(rng, i, gpus, maxr, free, current)
    return RoundProblem(
        num_nodes=nodes,
        gpus_per_node=gpus,
        job_ids=tuple(range(100, 100 + jobs)),
        current=current,
        max_replicas=maxr,
        single=single,
        multi=multi,
        restart=rng.uniform(0, 1, jobs),
        scale=1.0 / gpus,
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_problems())
def test_search_keeps_every_constraint_and_beats_keeping_the_current_allocation(p):
    alloc = search(p)
    assert alloc.shape == (p.num_jobs, p.num_nodes)
    assert violations(p, alloc) == []
    assert objective(p, alloc) >= objective(p, p.current) - 1e-12


def test_an_empty_round_allocates_nothing():
    p = toy(
        job_ids=(),
        current=np.zeros((0, 2), dtype=np.int64),
        max_replicas=np.zeros(0, dtype=np.int64),
        single=np.zeros((0, 5)),
        multi=np.zeros((0, 5)),
        restart=np.zeros(0),
    )
    assert search(p).shape == (0, 2)


def test_board_rows_follow_every_change_of_the_board():
    """row_for keeps the board's open nodes until the board changes: put, remove and restore
    must each be seen by the next row_for (rows are sparse: (node, GPUs) pairs)."""
    from ddlsched.policies.pollux_search import KEEP, MULTI, SINGLE, Option, _Board, dense

    p = toy(current=np.array([[2, 0], [0, 0]]))
    board = _Board(p)

    def at(i, o):
        row = board.row_for(i, o)
        return None if row is None else dense(row, 2)

    two, three = Option(SINGLE, 2, 0, 1.0), Option(MULTI, 3, 2, 1.0)
    assert at(1, two) == [2, 0]  # best fit, lowest index
    assert at(1, three) == [2, 1]
    saved = board.snapshot()
    board.put(0, Option(KEEP, 2, 0, 1.0), board.row_for(0, Option(KEEP, 2, 0, 1.0)))
    assert at(1, two) == [0, 2]
    assert at(1, three) is None
    assert at(0, Option(KEEP, 2, 0, 1.0)) is None
    board.remove(0)
    assert at(1, two) == [2, 0]
    board.put(1, three, ((0, 1), (1, 2)))
    assert (board.avail_n, board.avail_free) == (0, 0)  # both nodes hold the multi-node job
    assert at(0, Option(SINGLE, 1, 0, 1.0)) == [1, 0]
    assert at(0, Option(MULTI, 2, 2, 1.0)) is None  # both nodes hold a multi job
    assert board.alloc.tolist() == [[0, 0], [1, 2]]
    board.restore(saved)
    assert (board.avail_n, board.avail_free) == (2, 4)
    assert at(1, three) == [2, 1]


def test_board_open_node_counts_follow_puts_and_removes():
    """The counts of nodes open to a multi-node job (free GPUs, no multi-node job) that
    ``_Board`` keeps up to date equal a recount after every change."""
    from ddlsched.policies.pollux_search import MULTI, SINGLE, Option, _Board

    p = toy(current=np.array([[0, 0], [0, 0]]))
    board = _Board(p)

    def recount():
        nodes = [n for n, f in enumerate(board.free) if f > 0 and not board.multi_on[n]]
        return len(nodes), sum(board.free[n] for n in nodes), nodes

    steps = [
        ("put", 0, Option(SINGLE, 1, 0, 1.0), ((1, 1),)),
        ("put", 1, Option(MULTI, 2, 2, 1.0), ((0, 1), (1, 1))),
        ("remove", 0),
        ("remove", 1),
        ("put", 1, Option(SINGLE, 2, 0, 1.0), ((0, 2),)),
    ]
    for step in steps:
        if step[0] == "put":
            board.put(*step[1:])
        else:
            board.remove(step[1])
        n, free, nodes = recount()
        assert (board.avail_n, board.avail_free) == (n, free), step
        assert board.avail() == nodes, step


# -------------------------------------------------------------------------------------------
# the compiled local search (policies/pollux_kernel.py) against the Python one
# -------------------------------------------------------------------------------------------


def crowded_problem(seed: int) -> RoundProblem:
    """A round with more demand than GPUs (so the relaxation often does not pack) and a
    current allocation that has one- and multi-node jobs (at most one multi-node job a node)."""
    rng = np.random.default_rng(seed)
    nodes = int(rng.integers(2, 9))
    gpus = int(rng.choice([2, 4, 8]))
    jobs = int(rng.integers(2, 40))
    k = nodes * gpus
    maxr = rng.integers(1, k + 1, size=jobs)
    r = np.arange(k + 1)
    single = np.where((r >= 1) & (r <= gpus), r ** rng.uniform(0.5, 1.0), 0.0)
    single = single * rng.uniform(0.5, 1.5, (jobs, 1))
    multi = np.where(r >= 2, r ** rng.uniform(0.4, 0.9), 0.0) * rng.uniform(0.3, 1.5, (jobs, 1))
    single[r[None, :] > maxr[:, None]] = 0.0
    multi[r[None, :] > maxr[:, None]] = 0.0
    current = np.zeros((jobs, nodes), dtype=np.int64)
    free = np.full(nodes, gpus)
    multi_on = np.zeros(nodes, dtype=bool)
    for i in rng.permutation(jobs):
        if rng.random() < 0.3 and maxr[i] >= 2:  # across two nodes without a multi-node job
            open_ = np.flatnonzero((free > 0) & ~multi_on)
            if len(open_) >= 2:
                two = rng.choice(open_, 2, replace=False)
                for n in two:
                    current[i, n] = int(rng.integers(1, free[n] + 1))
                    free[n] -= current[i, n]
                    multi_on[n] = True
                if current[i].sum() > maxr[i]:
                    maxr[i] = current[i].sum()
            continue
        place_on_one_node(rng, i, gpus, maxr, free, current)
    return RoundProblem(
        num_nodes=nodes,
        gpus_per_node=gpus,
        job_ids=tuple(range(jobs)),
        current=current,
        max_replicas=maxr,
        single=single,
        multi=multi,
        restart=rng.uniform(0, 1, jobs),
        scale=1.0 / gpus,
    )


def test_compiled_search_gives_the_python_allocation() -> None:
    """On 300 crowded random rounds the compiled search (DP and local search) returns the
    Python search's allocation exactly, and many rounds exercise the local search."""
    local = 0
    for seed in range(300):
        p = crowded_problem(seed)
        assert violations(p, p.current) == []
        stats = SearchStats()
        want = search(p, stats, compiled=False)
        got = search(p, compiled=True)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), seed
        local += not stats.exact
    assert local >= 40  # 51 of the 300 need the local search (not only the DP)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_problems())
def test_compiled_search_equals_python_on_random_problems(p):
    assert search(p, compiled=True).tolist() == search(p, compiled=False).tolist()


def test_compiled_search_is_ready_only_once_compiled(tmp_path) -> None:
    """Without numba's cache nothing is compiled behind a run's back (a fresh process with an
    empty cache is not ready); once compiled (the tests above), it is."""
    import os
    import subprocess
    import sys

    from ddlsched.policies.pollux_search import compiled_search_ready

    search(crowded_problem(3), compiled=True)
    assert compiled_search_ready()
    code = "from ddlsched.policies.pollux_search import compiled_search_ready as r; print(r())"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert out.stdout.decode().strip() == "False", out.stderr.decode()[-500:]


def test_the_kernel_uses_the_python_search_constants() -> None:
    from ddlsched.policies import pollux_kernel as kernel
    from ddlsched.policies import pollux_search as python

    for name in ("KEEP", "SINGLE", "MULTI", "TRANSFER_TRIES", "PAIR_OPTIONS"):
        assert getattr(kernel, name) == getattr(python, name), name
