"""Gavel's allocation LPs (ddlsched.policies.gavel_lp): hand solutions, brute force, properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.policies import gavel_lp as g

TOL = 1e-7


def _assert_feasible(X, scale, counts):
    assert np.all(X >= 0)
    assert np.all(X.sum(axis=1) <= 1 + 1e-12)
    assert np.all(scale @ X <= counts + 1e-9)


# --------------------------------------------------------------------------- hand solutions


def test_max_min_perf_two_jobs_two_types_hand_solution():
    # Types: 2 GPUs of type 0, 1 GPU of type 1; both jobs 1 GPU, weight 1.
    # T = [[1, 4], [1, 2]]: job 0 speeds up 4x on type 1, job 1 only 2x.
    # Gavel's normaliser (ProportionalPolicy): prop_j = (2 T[j,0] + T[j,1]) / 3 -> prop = (2, 4/3).
    # Objective terms: f0 = (x00 + 4 x01) / 2, f1 = 3 (x10 + 2 x11) / 4.
    # Upper bound: x00 <= 1 - x01 gives f0 <= (1 + 3 x01) / 2, so f0 >= z needs x01 >= (2z - 1)/3;
    # likewise f1 >= z needs x11 >= 4z/3 - 1; type 1 has one GPU: x01 + x11 <= 1, hence
    # (2z - 1)/3 + 4z/3 - 1 <= 1, i.e. z <= 7/6. Equality forces x01 = 4/9, x11 = 5/9 and every
    # row full: x00 = 5/9, x10 = 4/9 (type 0 then uses 1 of its 2 GPUs). It attains
    # f0 = (5/9 + 16/9) / 2 = 7/6 and f1 = 3 (4/9 + 10/9) / 4 = 7/6, so it is the unique optimum.
    T = np.array([[1.0, 4.0], [1.0, 2.0]])
    scale, counts = np.ones(2), np.array([2.0, 1.0])
    X = g.max_min_fairness_perf(T, scale, counts)
    np.testing.assert_allclose(X, np.array([[5, 4], [4, 5]]) / 9, atol=TOL)
    np.testing.assert_allclose(g.max_min_normalised(T, X, scale, counts), [7 / 6, 7 / 6], atol=TOL)
    # Unique optimum: the unrefined vertex is the same point.
    np.testing.assert_allclose(g.max_min_fairness_perf(T, scale, counts, refine=False), X, atol=TOL)


def test_agnostic_gives_equal_time_where_perf_does_not():
    # 3 one-GPU jobs, one GPU each of two types; job 2 runs 3x faster on type 1.
    # Agnostic (T := 1): maximise min_j sum_t X[j,t]; total time is 2, so each job gets 2/3.
    # Perf: prop = (1, 1, 2). With job 2 on type 1 for time c and jobs 0, 1 sharing the rest,
    # 3c/2 = (2 - c)/2 gives c = 1/2 and value 3/4 (> 2/3); time shares (3/4, 3/4, 1/2).
    T = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 3.0]])
    scale, counts = np.ones(3), np.ones(2)
    agn = g.max_min_fairness(T, scale, counts)
    perf = g.max_min_fairness_perf(T, scale, counts)
    np.testing.assert_allclose(agn.sum(axis=1), [2 / 3] * 3, atol=TOL)
    np.testing.assert_allclose(perf.sum(axis=1), [3 / 4, 3 / 4, 1 / 2], atol=TOL)
    np.testing.assert_allclose(perf[2], [0, 1 / 2], atol=TOL)
    np.testing.assert_allclose(g.max_min_normalised(T, perf, scale, counts), [3 / 4] * 3, atol=TOL)


def test_agnostic_scale_factor_and_weights():
    # Gavel multiplies by scale_factor: jobs get equal GPU-time. One type with 2 GPUs, jobs of
    # scale 1 and 2: max min(x0, 2 x1) s.t. x0 + 2 x1 <= 2 -> x0 = 1, x1 = 1/2.
    X = g.max_min_fairness(np.ones((2, 1)), [1, 2], [2])
    np.testing.assert_allclose(X[:, 0], [1, 0.5], atol=TOL)
    # Weights: one GPU, weights (1, 3): max min(x0, x1 / 3) -> x0 = 1/4, x1 = 3/4.
    X = g.max_min_fairness(np.ones((2, 1)), [1, 1], [1], weights=[1, 3])
    np.testing.assert_allclose(X[:, 0], [0.25, 0.75], atol=TOL)


def test_refine_fills_spare_capacity():
    # T = [[1, 3], [2, 1]], one GPU per type: job 1's term is at most 2/1.5 = 4/3, so the
    # optimum is 4/3 with job 1 on type 0; job 0 needs only x01 >= 8/9 but refine gives it 1.
    T = np.array([[1.0, 3.0], [2.0, 1.0]])
    X = g.max_min_fairness_perf(T, [1, 1], [1, 1])
    np.testing.assert_allclose(X, [[0, 1], [1, 0]], atol=TOL)
    vals = g.max_min_normalised(
        T, g.max_min_fairness_perf(T, [1, 1], [1, 1], refine=False), [1, 1], [1, 1]
    )
    assert vals.min() == pytest.approx(4 / 3, abs=TOL)


def test_reference_shares():
    T = np.array([[1.0, 4.0], [2.0, 2.0], [3.0, 0.0]])
    counts = np.array([2.0, 2.0])
    np.testing.assert_allclose(g.proportional_throughput(T, counts), [2.5, 2.0, 1.5])
    # N * scale >= sum(counts) for all jobs: isolated = prop * sum(counts) / (N * scale).
    scale = np.array([2.0, 4.0, 2.0])
    iso = g.isolated_throughput(T, scale, counts)
    np.testing.assert_allclose(iso, g.proportional_throughput(T, counts) * 4 / (3 * scale))
    # Under-loaded: one job of scale 1 on 4 GPUs gets a whole job-time, split 1:1.
    np.testing.assert_allclose(g.isolated_throughput(T[:1], [1], counts), [2.5])
    np.testing.assert_allclose(g.effective_throughput(T, np.full((3, 2), 0.5)), [2.5, 2, 1.5])
    assert g.jain_index([1, 1, 1]) == pytest.approx(1)
    assert g.jain_index([1, 0, 0]) == pytest.approx(1 / 3)
    assert g.jain_index([0, 0]) == 1.0


def test_agnostic_variants_use_reference_column():
    T = np.array([[1.0, 4.0], [1.0, 2.0]])
    R = np.array([2000.0, 3000.0])
    ref = np.repeat(T[:, [1]], 2, axis=1)
    np.testing.assert_array_equal(
        g.finish_time_fairness(T, [1, 1], [1, 1], R, reference_type=1),
        g.finish_time_fairness_perf(ref, [1, 1], [1, 1], R),
    )
    np.testing.assert_array_equal(
        g.min_total_duration(T, [1, 1], [1, 1], R, reference_type=1),
        g.min_total_duration_perf(ref, [1, 1], [1, 1], R),
    )


# --------------------------------------------------------------------------- brute force (2 x 2)

_STEP = 1 / 32


def _grid_2x2(scale, counts):
    """All feasible X on a 1/32 grid, shape (n, 2, 2)."""
    v = np.arange(0, 1 + 1e-12, _STEP)
    G = np.stack(np.meshgrid(v, v, v, v, indexing="ij"), axis=-1).reshape(-1, 2, 2)
    ok = (G.sum(axis=2) <= 1 + 1e-12).all(axis=1)
    ok &= (np.einsum("j,njt->nt", scale, G) <= counts + 1e-12).all(axis=1)
    return G[ok]


def _instances(seed, n):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        T = rng.uniform(0.5, 5.0, size=(2, 2))
        scale = rng.integers(1, 3, size=2).astype(float)
        counts = rng.integers(1, 4, size=2).astype(float)
        yield T, scale, counts, rng


@pytest.mark.parametrize("case", range(6))
def test_finish_time_fairness_vs_grid(case):
    T, scale, counts, rng = list(_instances(100 + case, case + 1))[-1]
    R = rng.uniform(1e3, 1e5, size=2)
    tss = rng.uniform(0, 2e3, size=2)
    cum = rng.uniform(0, 1e3, size=2)
    X = g.finish_time_fairness_perf(T, scale, counts, R, tss, cum)
    _assert_feasible(X, scale, counts)
    lp = g.finish_time_ratios(T, X, scale, counts, R, tss, cum).max()
    G = _grid_2x2(scale, counts)
    iso_time = cum + R / g.isolated_throughput(T, scale, counts)
    thr = np.einsum("jt,njt->nj", T, G)
    with np.errstate(divide="ignore"):
        grid = ((tss + R / thr) / iso_time).max(axis=1).min()
    assert lp <= grid * (1 + 1e-8)  # no grid point beats the LP
    assert grid <= lp * 1.1  # and the grid's best is close (resolution 1/32)
    # Bisection on rho (the slower method) agrees.
    Xb = g.finish_time_fairness_perf(T, scale, counts, R, tss, cum, method="bisection")
    _assert_feasible(Xb, scale, counts)
    assert g.finish_time_ratios(T, Xb, scale, counts, R, tss, cum).max() == pytest.approx(
        lp, rel=1e-8
    )
    # Isolated allocation is feasible, so the optimum is no worse than it.
    assert lp <= ((tss + R / g.isolated_throughput(T, scale, counts)) / iso_time).max() * (1 + 1e-9)


@pytest.mark.parametrize("case", range(6))
def test_min_total_duration_vs_grid(case):
    T, scale, counts, rng = list(_instances(200 + case, case + 1))[-1]
    R = rng.uniform(1e3, 1e5, size=2)
    G = _grid_2x2(scale, counts)
    with np.errstate(divide="ignore"):
        grid = (R / np.einsum("jt,njt->nj", T, G)).max(axis=1).min()
    exact = g.min_total_duration_perf(T, scale, counts, R, method="exact")
    bis = g.min_total_duration_perf(T, scale, counts, R)
    for X in (exact, bis):
        _assert_feasible(X, scale, counts)
    m_exact, m_bis = g.makespan(T, exact, R), g.makespan(T, bis, R)
    assert m_exact <= grid * (1 + 1e-8)  # refine gives up 1e-9 relative
    assert grid <= m_exact * 1.1
    # Gavel's bisection stops at a 5% bracket (its optimum here is well above 100 s).
    assert m_exact * (1 - 1e-9) <= m_bis <= 1.05 * m_exact


def test_min_total_duration_bisection_floor_is_gavels():
    # Gavel never searches below ~100 s: a 10 s optimum comes back as some allocation
    # finishing within the first bracket's 5% (<= 105 s), not the 10 s one.
    T = np.array([[10.0, 10.0]])
    X = g.min_total_duration_perf(T, [1], [1, 1], [100.0], refine=False)
    assert g.makespan(T, X, [100.0]) <= 105.0
    assert g.makespan(
        T, g.min_total_duration_perf(T, [1], [1, 1], [100.0], method="exact"), [100.0]
    ) == pytest.approx(10.0)


# --------------------------------------------------------------------------- properties


@st.composite
def _problem(draw, max_jobs=6):
    J = draw(st.integers(1, max_jobs))
    K = draw(st.integers(1, 3))
    tput = st.floats(0.0, 10.0, allow_nan=False).map(lambda v: round(v, 3))
    T = np.array(draw(st.lists(st.lists(tput, min_size=K, max_size=K), min_size=J, max_size=J)))
    counts = np.array(draw(st.lists(st.integers(0, 4), min_size=K, max_size=K)), float)
    if counts.sum() == 0:
        counts[0] = 1
    best = int(np.argmax(counts))
    T[:, best] = np.maximum(T[:, best], 0.1)  # every job can run somewhere
    scale = np.array(draw(st.lists(st.sampled_from([1, 2, 4]), min_size=J, max_size=J)), float)
    weights = np.array(draw(st.lists(st.sampled_from([0.5, 1, 2]), min_size=J, max_size=J)))
    return T, scale, counts, weights


@settings(max_examples=100, deadline=None)
@given(_problem())
def test_max_min_properties(p):
    T, scale, counts, weights = p
    X = g.max_min_fairness_perf(T, scale, counts, weights)
    _assert_feasible(X, scale, counts)
    value = g.max_min_normalised(T, X, scale, counts, weights).min()
    # No worse than the (feasible) isolated 1/N share.
    J = T.shape[0]
    X_iso = np.tile(counts / J, (J, 1)) / scale[:, None]
    X_iso /= np.maximum(X_iso.sum(axis=1), 1)[:, None]
    _assert_feasible(X_iso, scale, counts)
    assert value >= g.max_min_normalised(T, X_iso, scale, counts, weights).min() * (1 - 1e-7)
    # The unrefined optimum has the same value; refining never lowers the sum.
    X0 = g.max_min_fairness_perf(T, scale, counts, weights, refine=False)
    v0 = g.max_min_normalised(T, X0, scale, counts, weights)
    assert v0.min() == pytest.approx(value, rel=1e-7)
    assert g.max_min_normalised(T, X, scale, counts, weights).sum() >= v0.sum() * (1 - 1e-7)
    # Agnostic: feasible too.
    A = g.max_min_fairness(T, scale, counts, weights)
    _assert_feasible(A, scale, counts)


@settings(max_examples=20, deadline=None)
@given(_problem(max_jobs=5), st.randoms(use_true_random=False))
def test_ftf_and_makespan_properties(p, rnd):
    T, scale, counts, _ = p
    J = T.shape[0]
    R = np.array([rnd.uniform(1e3, 1e5) for _ in range(J)])
    tss = np.array([rnd.uniform(0, 1e3) for _ in range(J)])
    X = g.finish_time_fairness_perf(T, scale, counts, R, tss)
    _assert_feasible(X, scale, counts)
    rho = g.finish_time_ratios(T, X, scale, counts, R, tss).max()
    iso = g.isolated_throughput(T, scale, counts)
    assert rho <= ((tss + R / iso) / (R / iso)).max() * (1 + 1e-7)
    Xb = g.finish_time_fairness_perf(T, scale, counts, R, tss, method="bisection", refine=False)
    _assert_feasible(Xb, scale, counts)
    assert g.finish_time_ratios(T, Xb, scale, counts, R, tss).max() == pytest.approx(rho, rel=1e-7)
    E = g.min_total_duration_perf(T, scale, counts, R, method="exact")
    _assert_feasible(E, scale, counts)
    assert g.makespan(T, E, R) <= (R / iso).max() * (1 + 1e-7)
    B = g.min_total_duration_perf(T, scale, counts, R)
    _assert_feasible(B, scale, counts)
    assert g.makespan(T, B, R) <= max(1.05 * g.makespan(T, E, R), 105.0) * 1.05


def test_deterministic():
    rng = np.random.default_rng(7)
    T = rng.uniform(0.1, 10, size=(12, 3))
    scale = rng.choice([1.0, 2.0, 4.0], size=12)
    counts = np.array([4.0, 8.0, 2.0])
    R = rng.uniform(1e3, 1e5, size=12)
    tss = rng.uniform(0, 1e3, size=12)
    for f, args in [
        (g.max_min_fairness_perf, (T, scale, counts)),
        (g.max_min_fairness, (T, scale, counts)),
        (g.finish_time_fairness_perf, (T, scale, counts, R, tss)),
        (g.min_total_duration_perf, (T, scale, counts, R)),
    ]:
        np.testing.assert_array_equal(f(*args), f(*args))


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([[1.0, 2.0]], [1], [1, 1, 1]), "one entry per GPU type"),
        (([[1.0]], [1, 1], [1]), "one entry per job"),
        ((np.zeros((1, 0)), [1], []), "at least one GPU type"),
        (([1.0, 2.0], [1], [1, 1]), "2-D"),
        (([[-1.0, 2.0]], [1], [1, 1]), "non-negative"),
        (([[1.0, 2.0]], [0], [1, 1]), "scale factors must be positive"),
        (([[1.0, 2.0]], [1], [0, 0]), "no GPUs"),
        (([[1.0, 2.0]], [1], [1, -1]), "counts must be non-negative"),
        (([[np.nan, 2.0]], [1], [1, 1]), "finite"),
        (([[0.0, 2.0]], [1], [1, 0]), r"jobs \[0\] have zero throughput"),
    ],
)
def test_validation(args, match):
    with pytest.raises(ValueError, match=match):
        g.max_min_fairness_perf(*args)


def test_validation_per_job_inputs():
    T = [[1.0, 2.0]]
    with pytest.raises(ValueError, match="weights must be positive"):
        g.max_min_fairness_perf(T, [1], [1, 1], weights=[0])
    with pytest.raises(ValueError, match="steps_remaining must be positive"):
        g.finish_time_fairness_perf(T, [1], [1, 1], [0])
    with pytest.raises(ValueError, match="times_since_start must be non-negative"):
        g.finish_time_fairness_perf(T, [1], [1, 1], [1], [-1])
    with pytest.raises(ValueError, match="method"):
        g.min_total_duration_perf(T, [1], [1, 1], [1], method="newton")
    with pytest.raises(ValueError, match="reference_type"):
        g.min_total_duration(T, [1], [1, 1], [1], reference_type=2)
    assert g.max_min_fairness_perf(np.zeros((0, 2)), [], [1, 1]).shape == (0, 2)


def _mtd_instance(seed: int):
    rng = np.random.default_rng(seed)
    J = int(rng.integers(2, 9))
    T = rng.uniform(0.2, 3.0, (J, 3))
    scale = rng.choice([1.0, 2.0, 4.0], J)
    counts = np.array([4.0, 4.0, 4.0])
    R = rng.uniform(1e3, 1e5, J)
    return T, scale, counts, R


@pytest.mark.parametrize("seed", range(8))
def test_min_total_duration_with_gavels_solver(seed):
    """``method="ecos"`` (Gavel's solver; checked equal to Gavel's own policy class by
    benchmarks/gavel_mtd_ecos_check.py): a feasible allocation whose makespan is within the
    bisection's 5 % of the exact LP optimum, deterministic."""
    pytest.importorskip("ecos")
    T, scale, counts, R = _mtd_instance(seed)
    X = g.min_total_duration_perf(T, scale, counts, R, method="ecos")
    assert (X >= 0).all() and (X.sum(axis=1) <= 1 + 1e-7).all()
    assert (scale @ X <= counts + 1e-6).all()
    best = g.makespan(T, g.min_total_duration_perf(T, scale, counts, R, method="exact"), R)
    assert best <= g.makespan(T, X, R) <= 1.06 * best + 1e-6
    again = g.min_total_duration_perf(T, scale, counts, R, method="ecos")
    assert np.array_equal(X, again)


def test_min_total_duration_without_ecos_falls_back(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ecos(name, *args, **kwargs):
        if name == "ecos":
            raise ImportError("no ecos here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ecos)
    assert not g.ecos_available()
    T, scale, counts, R = _mtd_instance(3)
    X = g.min_total_duration_perf(T, scale, counts, R, method="ecos")
    assert np.array_equal(X, g.min_total_duration_perf(T, scale, counts, R))


@pytest.mark.parametrize("seed", range(6))
def test_max_min_with_gavels_solver_reaches_the_optimum(seed):
    """``method="ecos"`` (Gavel's solver, equal to Gavel's own policy classes bit for bit:
    benchmarks/gavel_mtd_ecos_check.py) reaches the max-min value HiGHS finds; the point may
    differ (the optimum is not unique), the constraints hold."""
    pytest.importorskip("ecos")
    T, scale, counts, _ = _mtd_instance(seed)
    for fn in (g.max_min_fairness_perf, g.max_min_fairness):
        X = fn(T, scale, counts, method="ecos")
        ref = fn(T, scale, counts)
        assert (X >= 0).all() and (X.sum(axis=1) <= 1 + 1e-7).all()
        assert (scale @ X <= counts + 1e-6).all()
        Tm = T if fn is g.max_min_fairness_perf else np.ones_like(T)
        got = g.max_min_normalised(Tm, X, scale, counts).min()
        want = g.max_min_normalised(Tm, ref, scale, counts).min()
        assert got == pytest.approx(want, rel=1e-6)
