"""The Pollux agent's per-job goodput model (ddlsched.perf.goodput).

Hand computations use a small synthetic application with known throughput parameters; the fit is
checked on the built-in synthetic applications (exact model) and, when present, on the Pollux
artifact's measured traces in ../shared/data/pollux/traces (skipped when absent).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ddlsched.perf.builtin_apps import builtin_applications
from ddlsched.perf.fitting import ThroughputParams, fit_error
from ddlsched.perf.goodput import (
    CANDIDATES,
    FIT_FLOOR,
    JobGoodput,
    _FitProblem,
    fit_observations,
    max_replicas,
)
from ddlsched.perf.profiles import Application, load_applications

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pollux" / "traces"

#: init 32, max 512, local [8, 64]; statistics differ per batch size and epoch.
VALIDATION = {
    32: [(100.0, 1.0, 4.0), (200.0, 0.5, 8.0)],
    128: [(100.0, 2.0, 2.0), (200.0, 1.0, 4.0)],
    512: [(100.0, 3.0, 0.5), (200.0, 2.0, 1.0)],
}
PARAMS = ThroughputParams(0.05, 0.01, 0.3, 0.02, 0.1, 0.005, 2.0)


def toy_app(min_local: int = 8, max_local: int = 64) -> Application:
    placements = [
        (p, float(b), 1.0, 0.5) for p in ((1,), (2,), (4,), (2, 2)) for b in (min_local, max_local)
    ]
    return Application("toy", placements, [], VALIDATION, max_epochs=2)


def job(params: ThroughputParams | None = PARAMS, **kw) -> JobGoodput:
    return JobGoodput(toy_app(**kw), params=params)


def stats(epoch: int, m: float) -> tuple[float, float]:
    """(sqr, var) of VALIDATION at batch m, linear between validated sizes, clamped."""
    sizes = sorted(VALIDATION)
    m = min(max(m, sizes[0]), sizes[-1])
    for lo, hi in zip(sizes, sizes[1:], strict=False):
        if lo <= m <= hi:
            f = (m - lo) / (hi - lo)
            (_, s0, v0), (_, s1, v1) = VALIDATION[lo][epoch], VALIDATION[hi][epoch]
            return s0 + f * (s1 - s0), v0 + f * (v1 - v0)
    raise AssertionError(m)


def by_hand(
    nodes: int, k: int, a: int, replicas: int, epoch: int, grad: tuple | None = None
) -> float:
    p = PARAMS
    m = replicas * a * (k + 1)
    t_a = p.alpha_c + p.beta_c * a
    if replicas == 1:
        t_o = t_a
    else:
        alpha, beta = (p.alpha_n, p.beta_n) if nodes > 1 else (p.alpha_r, p.beta_r)
        t_net = alpha + beta * max(replicas - 2, 1e-8)
        t_o = (t_a**p.gamma + t_net**p.gamma) ** (1 / p.gamma)
    sqr, var = grad if grad is not None else stats(epoch, m)
    scale = m / 32
    gain = (var + sqr) / (var / scale + sqr)
    return m / (k * t_a + t_o) * gain / scale


# --------------------------------------------------------------------------- goodput by hand


@pytest.mark.parametrize(
    ("nodes", "replicas", "batch", "k", "a"),
    [
        (2, 4, 100, 0, 25),  # local 25, inter-node
        (1, 2, 300, 2, 50),  # local 150 > 64: 3 micro-steps of 50, intra-node
        (1, 1, 40, 1, 20),  # one replica above init: at least one accumulation step
        (1, 1, 32, 0, 32),  # one replica at init: none
        (1, 3, 512, 2, 57),  # effective batch 513 > max_bsz: statistics at 512, scale 513/32
        (2, 4, 250, 0, 63),  # a = ⌈62.5⌉
    ],
)
@pytest.mark.parametrize("epoch", [0, 1])
def test_goodput_by_hand(nodes, replicas, batch, k, a, epoch):
    assert job().goodput(nodes, replicas, batch, epoch) == pytest.approx(
        by_hand(nodes, k, a, replicas, epoch), rel=1e-9
    )


def test_goodput_with_observed_gradient_statistics():
    j = job()
    j.grad = (0.7, 3.0)
    for epoch in (0, 1):  # the epoch no longer matters
        assert j.goodput(2, 4, 100, epoch) == pytest.approx(
            by_hand(2, 0, 25, 4, 0, grad=(0.7, 3.0)), rel=1e-9
        )
    j.grad = (-1.0, 0.5)  # var/scale + sqr ≤ 0: gain 1, as the artifact's np.where
    t = PARAMS.iteration_time(2, 4, 25)
    assert j.goodput(2, 4, 100, 0) == pytest.approx(32 / t, rel=1e-12)
    assert j.optimize(2, 4, 0)[1] > 0


def test_goodput_zero_outside_local_range():
    j = job()
    assert j.goodput(2, 4, 20, 0) == 0.0  # a = 5 < min_local 8
    assert j.goodput(1, 4, 28, 0) == 0.0  # a = 7
    assert j.goodput(1, 4, 32, 0) > 0.0
    with pytest.raises(ValueError):
        j.goodput(3, 2, 100, 0)  # more nodes than replicas


def test_goodput_uses_the_applications_gain():
    j = job()
    app = j.app
    for replicas, batch in ((2, 100), (4, 256), (1, 64)):
        cfg = app.batch_config(replicas, batch)
        t = PARAMS.iteration_time(1, replicas, cfg.a, cfg.accum)
        expected = cfg.M / t * app.gain(1, cfg.M) / (cfg.M / app.init_bsz)
        assert j.goodput(1, replicas, batch, 1) == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- optimize


def brute_force(j: JobGoodput, nodes: int, replicas: int, epoch: int) -> tuple[float, float]:
    app = j.app
    low = max(app.init_bsz, app.min_local * replicas)
    best_m, best_g = 0.0, -1.0
    for m in np.geomspace(low, app.max_bsz, CANDIDATES):
        g = j.goodput(nodes, replicas, float(m), epoch)
        if g > best_g:
            best_m, best_g = float(m), g
    return best_m, best_g


SHAPES = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (2, 4), (2, 8), (3, 12), (4, 16), (8, 32)]


@pytest.mark.parametrize(
    "params",
    [
        PARAMS,
        ThroughputParams(2.0, 1e-4, 0.3, 0.02, 0.1, 0.005, 1.0),  # overhead-bound: big batches
        ThroughputParams(1e-4, 0.05, 1e-3, 0.0, 1e-3, 0.0, 10.0),  # compute-bound: small ones
    ],
)
def test_optimize_matches_brute_force(params):
    j = job(params)
    app = j.app
    for epoch in (0, 1):
        for nodes, replicas in SHAPES:
            batch, good = j.optimize(nodes, replicas, epoch)
            _, best = brute_force(j, nodes, replicas, epoch)
            assert good == pytest.approx(best, rel=1e-12)
            assert good > 0
            # the returned batch scores that goodput and configures a valid micro-batch
            assert j.goodput(nodes, replicas, batch, epoch) == pytest.approx(good, rel=1e-12)
            cfg = app.batch_config(replicas, batch)  # the job's run: the §2 rule with the cap
            assert cfg.M <= app.max_bsz
            assert app.min_local <= cfg.a <= app.max_local
            assert batch == replicas * math.ceil(batch / replicas / (cfg.accum + 1)) * (
                cfg.accum + 1
            )


def test_optimize_picks_extremes_and_memoises():
    big = job(ThroughputParams(2.0, 1e-4, 0.3, 0.02, 0.1, 0.005, 1.0))
    small = job(ThroughputParams(1e-4, 0.05, 1e-3, 0.0, 1e-3, 0.0, 10.0))
    big.grad = small.grad = (1.0, 4.0)  # gain grows with the batch, efficiency falls
    # overhead-bound: the largest candidate without accumulation (an extra micro-step costs
    # another 2 s for less than double the gain)
    m, _ = big.optimize(1, 2, 0)
    local = np.geomspace(32, 512, CANDIDATES) / 2
    expected = max(2 * math.ceil(x - 1e-8) for x in local if x <= 64)
    assert (m, big.app.batch_config(2, m).accum) == (expected, 0)
    # compute-bound: T_iter ∝ a, efficiency falls: the smallest valid batch
    m, _ = small.optimize(1, 4, 0)
    assert m == 32  # max(init 32, min_local 8 × 4)
    first = small.optimize(2, 8, 1)
    assert small.optimize(2, 8, 1) is first  # memoised
    small.params = PARAMS  # new parameters drop the memo
    assert small.optimize(2, 8, 1) != first
    again = small.optimize(2, 8, 1)
    small.grad = (1.0, 1.0)  # so do new gradient statistics
    assert small.optimize(2, 8, 1) is not again


def test_unprofiled():
    j = job(None)
    assert not j.profiled
    assert j.optimize(1, 1, 0) == (32, 0.0)
    assert j.optimize(2, 8, 0) == (64, 0.0)  # min_local × R = 64 > init 32
    assert j.goodput(1, 1, 32, 0) == 0.0
    assert j.speedup(2, 8, 0, 4) == 2.0
    assert j.speedup(1, 3, 0, 4) == 0.75
    assert j.speedup(0, 0, 0, 4) == 0.0
    assert j.max_profiled_replicas == 0


# --------------------------------------------------------------------------- speedup, max_replicas


def test_speedup():
    j = job()
    for epoch in (0, 1):
        for fair in (1, 2, 4, 16):
            assert j.speedup(1, fair, epoch, fair) == 1.0
        assert j.speedup(2, 8, epoch, 2) == pytest.approx(
            j.optimize(2, 8, epoch)[1] / j.optimize(1, 2, epoch)[1]
        )
        assert j.speedup(0, 0, epoch, 2) == 0.0
        assert j.speedup(1, 4, epoch, 1) > 1.0  # 4 GPUs on one node beat 1


def test_max_replicas():
    app = toy_app()  # max_bsz 512 / min_local 8 = 64
    assert [max_replicas(app, p) for p in (0, 1, 3, 20, 32, 40)] == [1, 2, 6, 40, 64, 64]
    narrow = toy_app(min_local=16)  # 512 // 16 = 32
    assert [max_replicas(narrow, p) for p in (0, 8, 16, 17, 100)] == [1, 16, 32, 32, 32]
    odd = Application(
        "odd", [((1,), 24.0, 1.0, 0.5)], [], {32: [(1.0, 1.0, 1.0)], 100: [(1.0, 1.0, 1.0)]}
    )
    assert max_replicas(odd, 10) == 4  # ⌊100/24⌋


# --------------------------------------------------------------------------- observe and fit


def test_observe_keeps_first_measurement_and_refits():
    j = job(None)
    j.observe(1, 1, 32, 0.4, 0.0)
    assert j.profiled
    assert j.profile == {(1, 1, 32): (0.4, 0.0)}
    p1 = j.params
    j.observe(1, 1, 32, 9.0, 1.0, grad=(1.0, 2.0))  # seen before: kept, no refit
    assert j.profile == {(1, 1, 32): (0.4, 0.0)}
    assert j.params is p1
    assert j.grad == (1.0, 2.0)  # but the statistics are the latest
    j.observe(1, 2, 32, 0.5, 0.1)
    assert j.params is not p1
    assert list(j.profile) == [(1, 1, 32), (1, 2, 32)]
    assert j.max_profiled_replicas == 2
    with pytest.raises(ValueError):
        j.observe(1, 4, 32, 0.0, 0.0)
    assert (1, 4, 32) not in j.profile


def test_fit_one_observation_is_optimistic():
    p = fit_observations([1], [1], [32], [0.4], [0.1])
    assert p.alpha_c == pytest.approx(0.15)  # half the compute time (one micro-batch size)
    # one step (0.4 s) and one compute time (0.3 s), one T_a: the two log errors split evenly
    assert p.compute_time(32) == pytest.approx(math.sqrt(0.3 * 0.4), rel=1e-6)
    assert (p.alpha_r, p.beta_r, p.beta_n) == (FIT_FLOOR, FIT_FLOOR, FIT_FLOOR * 1.1)
    assert p.alpha_n == pytest.approx(FIT_FLOOR * 1.1)  # ≥ 1.1 α_r without multi-node data
    # an unobserved link costs nothing: linear scaling predicted
    assert p.iteration_time(4, 16, 32) == pytest.approx(p.iteration_time(1, 1, 32), rel=1e-6)


def test_fit_special_cases():
    # one node, ≤ 2 replicas: β's fixed; inter-node at least 1.1 × intra-node
    p = fit_observations([1, 1, 1], [1, 2, 2], [16, 16, 64], [0.3, 0.5, 0.9], [0.0, 0.2, 0.2])
    assert p.beta_n == pytest.approx(FIT_FLOOR * 1.1) and p.beta_r == FIT_FLOOR
    assert p.alpha_r > 0.1
    assert p.alpha_n == pytest.approx(1.1 * p.alpha_r)
    # multi-node only: α_r, β_r fixed at the floor, no prior applied
    q = fit_observations([2, 2], [2, 2], [16, 64], [0.5, 0.9], [0.3, 0.3])
    assert (q.alpha_r, q.beta_r) == (FIT_FLOOR, FIT_FLOOR)
    assert q.alpha_n > 0.1
    # deterministic
    assert fit_observations([2, 2], [2, 2], [16, 64], [0.5, 0.9], [0.3, 0.3]) == q


def test_fit_gradients():
    rng = np.random.default_rng(0)
    prob = _FitProblem(
        [1, 1, 2, 4, 1], [1, 4, 8, 16, 2], [8, 32, 16, 64, 8], [0.2, 0.6, 0.9, 1.5, 0.25],
        [0.0, 0.2, 0.6, 0.8, 0.05],
    )  # fmt: skip
    assert prob.free.all()
    for _ in range(3):
        z = prob.to_z(np.r_[rng.uniform(1e-3, 0.3, 6), rng.uniform(1.1, 5)])
        h = 1e-6
        num = np.array(
            [(prob.loss(z + d)[0] - prob.loss(z - d)[0]) / (2 * h) for d in np.eye(7) * h]
        )
        assert np.allclose(prob.loss(z)[1], num, rtol=1e-5, atol=1e-7)
        jac = np.array(
            [(prob.residuals(z + d) - prob.residuals(z - d)) / (2 * h) for d in np.eye(7) * h]
        ).T
        assert np.allclose(prob.jacobian(z), jac, rtol=1e-5, atol=1e-7)


OBSERVED = [(1,), (2,), (4,), (4, 4), (4, 4, 4, 4)]


def observe_all(app: Application, placements=OBSERVED) -> JobGoodput:
    j = JobGoodput(app)
    for p in placements:
        for a in (app.min_local, app.max_local):
            try:
                step, sync = app.step_time(p, a)
            except ValueError:  # outside the measured range
                continue
            j.observe(len(p), sum(p), a, step, sync)
    return j


@pytest.mark.parametrize("name", sorted(builtin_applications()))
def test_fit_recovers_synthetic_model(name):
    """The built-in applications follow the model exactly: ten configurations pin it down."""
    app = builtin_applications()[name]
    j = observe_all(app)
    assert fit_error(j.params, app).max_rel < 0.05


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def apps() -> dict[str, Application]:
    if not (DATA / "bert" / "placements.csv").is_file():
        pytest.skip(f"Pollux artifact traces not found at {DATA} (shared test data absent)")
    return load_applications(DATA)


HELD_OUT = [(3,), (2, 2), (3, 3), (4, 2), (4, 4, 4), (2, 2, 2, 2), (4,) * 8]


def held_out_errors(app: Application, params: ThroughputParams) -> np.ndarray:
    errs = []
    for p in HELD_OUT:
        for a in sorted({app.min_local, (app.min_local + app.max_local) // 2, app.max_local}):
            try:
                step, _ = app.step_time(p, a)
            except ValueError:
                continue
            errs.append(abs(params.step_and_sync(len(p), sum(p), a)[0] / step - 1))
    return np.array(errs)


def test_fit_approaches_measured_step_times(apps):
    for name, app in apps.items():
        one = observe_all(app, OBSERVED[:1])
        many = observe_all(app)
        err_one, err_many = held_out_errors(app, one.params), held_out_errors(app, many.params)
        assert len(err_many) >= 5
        assert err_many.mean() < 0.2, name
        assert np.median(err_many) < 0.15, name
        assert err_many.mean() < err_one.mean(), name
        # single-node placements are well predicted
        for a in (app.min_local, app.max_local):
            try:
                step, _ = app.step_time((3,), a)
            except ValueError:  # outside the measured range
                continue
            assert many.params.step_and_sync(1, 3, a)[0] == pytest.approx(step, rel=0.25), name


def test_optimize_on_real_applications(apps):
    for name, app in apps.items():
        j = observe_all(app)
        for nodes, replicas in [(1, 1), (1, 4), (2, 8), (4, 16), (6, 24)]:
            if replicas > max_replicas(app, 64):
                continue
            for epoch in (0, app.max_epochs - 1):
                batch, good = j.optimize(nodes, replicas, epoch)
                assert good == pytest.approx(brute_force(j, nodes, replicas, epoch)[1], rel=1e-12)
                cfg = app.batch_config(replicas, batch)
                assert app.min_local <= cfg.a <= app.max_local, name
                assert cfg.M <= app.max_bsz
        assert j.speedup(1, 4, 0, 4) == 1.0


def test_fit_observations_is_memoised_by_its_exact_arguments(monkeypatch):
    import ddlsched.perf.goodput as gp

    calls = []
    real = gp._fit

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(gp, "_fit", counting)
    monkeypatch.setattr(gp, "_FITS", {})
    args = ([1, 1], [1, 2], [32, 32], [0.1, 0.12], [0.0, 0.02])
    first = gp.fit_observations(*args)
    again = gp.fit_observations(*args)
    assert again is first and len(calls) == 1
    other = gp.fit_observations(*args, start=first)  # another start is another problem
    assert len(calls) == 2 and isinstance(other, type(first))
    gp.fit_observations([1], [1], [32], [0.1], [0.0])
    assert len(calls) == 3


def _reference_evaluations(prob: _FitProblem, z: np.ndarray):
    """The fit's residuals, Jacobian and loss at z, computed from scratch as the fit did before
    it kept evaluations (no memo, np.where selections): the reference for bit-identity."""
    x = prob.x0.copy()
    x[prob.free] = np.where(prob.is_log, np.exp(z), z)
    alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = x
    multi, intra, extra, bsz = prob.multi, prob.intra, prob.extra, prob.bsz
    t_a = alpha_c + beta_c * bsz
    log_a = np.log(t_a)
    t_net = (
        np.where(multi, alpha_n, np.where(intra, alpha_r, FIT_FLOOR))
        + np.where(multi, beta_n, np.where(intra, beta_r, FIT_FLOOR)) * extra
    )
    log_net = np.log(t_net)
    log_o = np.logaddexp(gamma * log_a, gamma * log_net) / gamma
    d_a = np.zeros((prob.n, 7))
    d_a[:, 0] = 1.0 / t_a
    d_a[:, 1] = bsz / t_a
    w = np.exp(gamma * (log_a - log_o))
    v = (1.0 - w) / t_net
    d_o = np.zeros((prob.n, 7))
    d_o[:, :2] = w[:, None] * d_a[:, :2]
    d_o[:, 2] = v * multi
    d_o[:, 3] = v * multi * extra
    d_o[:, 4] = v * intra
    d_o[:, 5] = v * intra * extra
    d_o[:, 6] = (w * log_a + (1.0 - w) * log_net - log_o) / gamma
    log_a, d_a = log_a[prob.ok], d_a[prob.ok]
    r, d_r = prob._regs(x)
    xf = np.where(prob.is_log, np.exp(z), 1.0)
    e1 = (log_a - prob.log_compute) / math.sqrt(max(prob.n_ok, 1))
    e2 = (log_o - prob.log_step) / math.sqrt(prob.n)
    residuals = np.concatenate([e1, e2, r])
    d = np.vstack([d_a / math.sqrt(max(prob.n_ok, 1)), d_o / math.sqrt(prob.n), d_r])
    jacobian = d[:, prob.free] * xf
    value, grad = float(r @ r), 2.0 * (r @ d_r)
    if prob.n_ok:
        e1 = log_a - prob.log_compute
        err1 = math.sqrt(float(e1 @ e1) / prob.n_ok)
        value += err1
        if err1 > 0:
            grad += (e1 @ d_a) / (prob.n_ok * err1)
    e2 = log_o - prob.log_step
    err2 = math.sqrt(float(e2 @ e2) / prob.n)
    value += err2
    if err2 > 0:
        grad += (e2 @ d_o) / (prob.n * err2)
    return residuals, jacobian, value, grad[prob.free] * xf


@pytest.mark.parametrize(
    "rows",
    [
        # all links, all parameters free
        ([1, 1, 2, 4, 1], [1, 4, 8, 16, 2], [8, 32, 16, 64, 8], [0.2, 0.6, 0.9, 1.5, 0.25],
         [0.0, 0.2, 0.6, 0.8, 0.05]),
        # one node, one micro-batch size (α_c fixed), a row without compute time
        ([1, 1, 1], [1, 2, 4], [16, 16, 16], [0.3, 0.5, 0.6], [0.0, 0.2, 0.6]),
    ],
)  # fmt: skip
def test_fit_evaluations_kept_per_point_equal_fresh_ones(rows):
    """The fit keeps the model at the last point: residuals, Jacobian and loss, asked in any
    order at points that repeat and alternate, are bit-identical to fresh evaluations, and
    changing a returned array does not change what a later call returns."""
    prob = _FitProblem(*rows)
    rng = np.random.default_rng(1)
    zs = [prob.to_z(np.r_[rng.uniform(1e-3, 0.3, 6), rng.uniform(1.0, 5)]) for _ in range(3)]
    zs[2] = zs[1].copy()
    zs[2][-1] = np.nextafter(zs[2][-1], np.inf)  # differs from zs[1] in the last bit only
    for k in [0, 0, 1, 0, 2, 1, 2, 2]:
        z = zs[k].copy()
        res, jac, value, grad = _reference_evaluations(prob, z)
        for what in rng.permutation(3):
            if what == 0:
                got = prob.residuals(z)
                assert got.tobytes() == res.tobytes()
            elif what == 1:
                got = prob.jacobian(z)
                assert got.tobytes() == jac.tobytes()
            else:
                v, got = prob.loss(z)
                assert v == value and got.tobytes() == grad.tobytes()
            got[...] = np.nan  # the caller owns what it gets
    fresh = _FitProblem(*rows)
    for k in (0, 1, 2):
        assert prob.loss(zs[k])[1].tobytes() == fresh.loss(zs[k])[1].tobytes()


def test_optimize_memo_follows_the_values_of_params_and_grad():
    """optimize's memo survives a new but equal grad tuple or parameters object (the agent
    sets one every step) and is dropped by any change of value, a sign of zero included."""
    j = job(ThroughputParams(*PARAMS.as_tuple()))
    j.grad = (1.0, 4.0)
    first = j.optimize(2, 8, 0)
    j.grad = (float("1.0"), 4.0 + 0.0)  # equal values, new tuple
    j.params = ThroughputParams(*PARAMS.as_tuple())  # equal values, new object
    assert j.optimize(2, 8, 0) is first
    key = j.state_key()
    j.grad = (-0.0, 4.0)
    assert j.state_key() != key
    for grad, params in [
        ((1.0, 2.0), PARAMS),
        ((1.0, 2.0), ThroughputParams(0.05, 0.02, 0.3, 0.02, 0.1, 0.005, 2.0)),
        ((3.0, 0.5), ThroughputParams(0.05, 0.02, 0.3, 0.02, 0.1, 0.005, 2.0)),
        (None, PARAMS),
    ]:
        j.grad, j.params = grad, params
        fresh = job(params)
        fresh.grad = grad
        for nodes, replicas in SHAPES:
            for epoch in (0, 1):
                assert j.optimize(nodes, replicas, epoch) == fresh.optimize(nodes, replicas, epoch)


@pytest.mark.parametrize("grad", [None, (1.0, 4.0), (2.0, 0.0)])
def test_prefetch_equals_one_optimize_per_shape(grad):
    shapes = SHAPES + [(2, 3), (1, 4), (3, 12)]  # repeats too
    for epoch in (0, 1):
        j, fresh = job(), job()
        j.grad = fresh.grad = grad
        j.optimize(1, 2, epoch)  # one already memoised
        j.prefetch(shapes, epoch)
        for nodes, replicas in shapes:
            got, want = j.optimize(nodes, replicas, epoch), fresh.optimize(nodes, replicas, epoch)
            assert got == want and type(got[0]) is int and type(got[1]) is float
    unprofiled = job(None)
    unprofiled.prefetch(shapes, 0)  # nothing to do
    assert unprofiled.optimize(2, 8, 0) == (64, 0.0)
