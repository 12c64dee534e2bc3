"""The fitted throughput model (ddlsched.perf.fitting) and the built-in synthetic applications.

Real-data tests read the Pollux artifact's traces from ../shared/data/pollux/traces (skipped when
absent) and compare with the artifact's own fitted parameters in applications_summary.json; the
rest need no data.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from ddlsched.perf.builtin_apps import (
    SPECS,
    build_application,
    builtin_applications,
    builtin_params,
    local_batches,
    placement_rows,
    scalability_rows,
    small_placements,
    validation_rows,
)
from ddlsched.perf.fitting import (
    FittedApplication,
    MeasuredRows,
    ThroughputParams,
    fit_error,
    fit_rows,
    fit_throughput,
    fitted_applications,
    measured_rows,
)
from ddlsched.perf.profiles import Application, load_applications

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pollux" / "traces"
SUMMARY = DATA.parent / "applications_summary.json"
APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")

PARAMS = ThroughputParams(0.03, 0.002, 0.25, 0.006, 0.04, 0.0015, 2.2)


def _rel(a: float, b: float) -> float:
    return abs(a / b - 1.0)


# ------------------------------------------------------------------------------ the model


def test_model_single_replica_has_no_allreduce() -> None:
    t_a = PARAMS.compute_time(64)
    assert t_a == pytest.approx(0.03 + 0.002 * 64)
    assert PARAMS.network_time(1, 1) == 0.0
    assert PARAMS.sync_step_time(1, 1, 64) == t_a
    assert PARAMS.step_and_sync(1, 1, 64) == (t_a, 0.0)
    assert PARAMS.iteration_time(1, 1, 64, 3) == pytest.approx(4 * t_a)


def test_model_links_and_retrogression() -> None:
    # intra-node for one node, inter-node for more; β per replica beyond 2, ~0 at R = 2
    assert PARAMS.network_time(1, 2) == pytest.approx(0.04)
    assert PARAMS.network_time(1, 4) == pytest.approx(0.04 + 2 * 0.0015)
    assert PARAMS.network_time(2, 2) == pytest.approx(0.25)
    assert PARAMS.network_time(3, 10) == pytest.approx(0.25 + 8 * 0.006)


def test_model_overlap_and_luo_eq7() -> None:
    no_overlap = ThroughputParams(0.03, 0.002, 0.25, 0.006, 0.04, 0.0015, 1.0)
    t_a, t_net = no_overlap.compute_time(32), no_overlap.network_time(4, 16)
    assert no_overlap.sync_step_time(4, 16, 32) == pytest.approx(t_a + t_net)
    full = ThroughputParams(0.03, 0.002, 0.25, 0.006, 0.04, 0.0015, 10.0)
    assert full.sync_step_time(4, 16, 32) == pytest.approx(max(t_a, t_net), rel=0.01)
    # Luo et al. Eq. 7: t_iter = (s−1)·t_comp(B/s) + (t_comp(B/s)^δ + t_comm^δ)^(1/δ)
    s, per_gpu = 4, 256
    t_comp = PARAMS.compute_time(per_gpu / s)
    t_comm = PARAMS.network_time(2, 8)
    d = PARAMS.gamma
    eq7 = (s - 1) * t_comp + (t_comp**d + t_comm**d) ** (1 / d)
    assert PARAMS.iteration_time(2, 8, per_gpu / s, s - 1) == pytest.approx(eq7, rel=1e-12)
    step, sync = PARAMS.step_and_sync(2, 8, 64)
    assert step - sync == pytest.approx(PARAMS.compute_time(64))


def test_model_vectorised_matches_scalar() -> None:
    nodes = np.array([1, 1, 1, 2, 4, 16])
    reps = np.array([1, 2, 4, 2, 13, 64])
    bsz = np.array([8.0, 16, 32, 64, 128, 256])
    log_a, log_o = PARAMS.log_step_times(nodes, reps, bsz)
    for i in range(len(nodes)):
        assert math.exp(log_a[i]) == pytest.approx(PARAMS.compute_time(bsz[i]), rel=1e-12)
        assert math.exp(log_o[i]) == pytest.approx(
            PARAMS.sync_step_time(int(nodes[i]), int(reps[i]), bsz[i]), rel=1e-12
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"alpha_c": -0.1},
        {"gamma": 0.5},
        {"beta_n": math.nan},
        {"alpha_c": 0.0, "beta_c": 0.0},
    ],
)
def test_params_validated(kwargs: dict[str, float]) -> None:
    base = dict(
        zip(
            ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma"),
            PARAMS.as_tuple(),
            strict=True,
        )
    )
    base.update(kwargs)
    with pytest.raises(ValueError):
        ThroughputParams(**base)


# ------------------------------------------------------------------------------ the fit


def _synthetic_rows(params: ThroughputParams) -> MeasuredRows:
    cols: list[tuple[float, float, float, float, float]] = []
    for n, r in [
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 2),
        (2, 5),
        (3, 9),
        (4, 16),
        (8, 24),
        (16, 64),
    ]:
        for a in (8, 16, 32, 64, 128):
            step, sync = params.step_and_sync(n, r, a)
            cols.append((n, r, a, step, sync))
    arr = np.array(cols, dtype=float)
    return MeasuredRows(*(arr[:, i].copy() for i in range(5)))


@pytest.mark.parametrize(
    "params",
    [
        PARAMS,
        ThroughputParams(0.005, 1e-5, 0.02, 0.0005, 0.004, 0.0002, 1.2),
        ThroughputParams(0.2, 0.05, 1.2, 0.01, 0.3, 0.01, 4.0),
    ],
)
def test_fit_recovers_known_parameters(params: ThroughputParams) -> None:
    fitted = fit_rows(_synthetic_rows(params))
    for got, want in zip(fitted.as_tuple(), params.as_tuple(), strict=True):
        assert got == pytest.approx(want, rel=1e-4)
    err = fit_error(fitted, _synthetic_rows(params))
    assert err.mape < 1e-6 and err.rmsle < 1e-6 and err.compute_mape < 1e-6


def test_fit_is_deterministic() -> None:
    rows = _synthetic_rows(ThroughputParams(0.01, 0.001, 0.1, 0.003, 0.02, 0.0004, 1.7))
    assert fit_rows(rows) == fit_rows(rows)


def test_fit_rejects_empty_rows() -> None:
    empty = MeasuredRows(*(np.zeros(0) for _ in range(5)))
    with pytest.raises(ValueError):
        fit_rows(empty)
    rows = _synthetic_rows(PARAMS)
    rows.step_time[3] = 0.0
    with pytest.raises(ValueError, match="positive"):
        fit_rows(rows)


# ------------------------------------------------------------------------------ built-in apps


@pytest.fixture(scope="module")
def builtin() -> dict[str, Application]:
    return builtin_applications()


def test_builtin_names_and_cache(builtin: dict[str, Application]) -> None:
    assert list(builtin) == [s.name for s in SPECS]
    assert all(name.startswith("synthetic-") for name in builtin)
    again = builtin_applications()
    assert again is not builtin and all(again[n] is builtin[n] for n in builtin)


def test_builtin_constants(builtin: dict[str, Application]) -> None:
    for spec in SPECS:
        app = builtin[spec.name]
        assert (app.init_bsz, app.max_bsz) == (spec.init_bsz, spec.max_bsz)
        assert (app.min_local, app.max_local) == (spec.min_local, spec.max_local)
        assert app.max_epochs == app.epochs == spec.max_epochs
        assert 1 <= app.max_epochs <= 30
        assert app.validated_sizes[0] == spec.init_bsz
        assert app.validated_sizes[-1] == spec.max_bsz
        assert app.max_bsz // app.min_local >= 64  # every job of up to 64 replicas fits
        for e in range(app.max_epochs + 1):
            assert app.progress_at(e) == pytest.approx(e * spec.samples_per_epoch / spec.init_bsz)
        # plausible step times: 0.01–1 s per micro-step over the local range
        for a in (spec.min_local, spec.max_local):
            assert 0.01 <= spec.params.compute_time(a) <= 1.0


def test_builtin_rows_shape() -> None:
    assert len(small_placements()) == 108  # as the artifact's placements.csv
    spec = SPECS[0]
    locals_ = local_batches(spec)
    assert locals_[0] == spec.min_local and locals_[-1] == spec.max_local
    assert len(placement_rows(spec)) == 108 * len(locals_)
    nodes = {int(r[0]) for r in scalability_rows(spec)}
    assert min(nodes) == 6 and max(nodes) == 16
    rows = measured_rows(build_application(spec))
    assert len(rows) == len(placement_rows(spec)) + len(scalability_rows(spec))


def _placements(rng: random.Random) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    for n in range(1, 17):
        out += [(g,) * n for g in range(1, 5)]
        out += [tuple(rng.randint(1, 4) for _ in range(n)) for _ in range(2)]
    return out


def test_builtin_rates_positive_everywhere(builtin: dict[str, Application]) -> None:
    rng = random.Random(7)
    places = _placements(rng)
    for spec in SPECS:
        app = builtin[spec.name]
        for p in places:
            r = sum(p)
            lo = min(max(app.init_bsz, app.min_local * r), app.max_bsz)
            for batch in sorted({lo, app.max_bsz}):
                cfg = app.batch_config(r, batch)
                assert app.min_local <= cfg.a <= app.max_local
                t = app.iteration_time(p, cfg)
                model = spec.params.iteration_time(len(p), r, cfg.a, cfg.accum)
                assert math.isfinite(t) and t > 0
                assert _rel(t, model) < 0.02  # interpolation of the generating model
                for e in (0, app.max_epochs - 1):
                    g = app.rate(p, cfg, e)
                    assert math.isfinite(g) and g > 0


def test_builtin_gain_grows_with_batch(builtin: dict[str, Application]) -> None:
    for app in builtin.values():
        sizes = np.geomspace(app.init_bsz, app.max_bsz, 25)
        for e in range(app.max_epochs):
            gains = [app.gain(e, float(b)) for b in sizes]
            assert gains[0] == pytest.approx(1.0)
            assert all(g >= 1.0 for g in gains)
            assert all(b > a for a, b in itertools.pairwise(gains))
            # …but less than linearly: efficiency gain/scale falls
            assert gains[-1] < app.max_bsz / app.init_bsz


def test_builtin_deterministic() -> None:
    for spec in SPECS:
        assert placement_rows(spec) == placement_rows(spec)
        assert validation_rows(spec) == validation_rows(spec)
    a, b = build_application(SPECS[1]), build_application(SPECS[1])
    cfg = a.batch_config(12, 2048)
    assert a.rate((4, 4, 4), cfg, 3) == b.rate((4, 4, 4), cfg, 3)


def test_fit_recovers_builtin_parameters(builtin: dict[str, Application]) -> None:
    truth = builtin_params()
    for name in ("synthetic-cnn", "synthetic-bert"):
        fitted = fit_throughput(builtin[name])
        for got, want in zip(fitted.as_tuple(), truth[name].as_tuple(), strict=True):
            assert got == pytest.approx(want, rel=1e-4)
        assert fit_throughput(builtin[name]) == fitted


def test_fitted_application_delegates(builtin: dict[str, Application]) -> None:
    app = builtin["synthetic-speech"]
    params = builtin_params()["synthetic-speech"]
    fa = FittedApplication(app, params)
    assert isinstance(fa, Application) and fa.measured is app
    assert repr(fa).startswith("FittedApplication('synthetic-speech'")
    for attr in ("name", "init_bsz", "max_bsz", "min_local", "max_local", "max_epochs", "epochs"):
        assert getattr(fa, attr) == getattr(app, attr)
    assert fa.validated_sizes == app.validated_sizes
    assert fa.progress_at(3) == app.progress_at(3)
    cfg = fa.batch_config(6, 300)
    assert cfg == app.batch_config(6, 300)
    assert fa.gain(2, cfg.M) == app.gain(2, cfg.M)
    # throughput from the model, any number of nodes (no hull), as step + k·(step − sync)
    for p in [(1,), (2,), (3, 1), (4, 4, 4), (1,) * 20, (4,) * 30]:
        r = sum(p)
        cfg = fa.batch_config(r, max(fa.init_bsz, 8 * r))
        step, sync = fa.step_time(p, cfg.a)
        t = fa.iteration_time(p, cfg)
        assert t == pytest.approx(step + cfg.accum * (step - sync), rel=1e-12)
        assert t == params.iteration_time(len(p), r, cfg.a, cfg.accum)
        assert fa.rate(p, cfg, 0) == pytest.approx(fa.gain(0, cfg.M) / t)
    # rewrapping a fitted application wraps the measured one
    assert FittedApplication(fa, params).measured is app
    fitted = fitted_applications({"x": app})
    assert list(fitted) == ["x"] and fitted["x"].measured is app


# ------------------------------------------------------------------------------ real data


@pytest.fixture(scope="module")
def real() -> dict[str, Application]:
    if not (DATA / "bert" / "placements.csv").is_file():
        pytest.skip(f"Pollux artifact traces not found at {DATA} (shared test data absent)")
    return load_applications(DATA)


@pytest.fixture(scope="module")
def real_fitted(real: dict[str, Application]) -> dict[str, FittedApplication]:
    return fitted_applications(real)


@pytest.fixture(scope="module")
def summary() -> dict[str, dict[str, object]]:
    if not SUMMARY.is_file():
        pytest.skip(f"applications_summary.json not found at {SUMMARY} (shared test data absent)")
    return json.loads(SUMMARY.read_text(encoding="utf-8"))


def _csv_rows(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines()[1:] if line.strip())


def test_measured_rows_are_every_row(real: dict[str, Application]) -> None:
    for name in APPS:
        rows = measured_rows(real[name])
        n_place = _csv_rows(DATA / name / "placements.csv")
        n_scal = _csv_rows(DATA / name / "scalability.csv")
        assert len(rows) == n_place + n_scal
        assert np.all(rows.step_time > rows.sync_time)
        assert np.all(rows.replicas >= rows.num_nodes)


def test_fit_reproduces_measured_step_times(
    real: dict[str, Application],
    real_fitted: dict[str, FittedApplication],
    summary: dict[str, dict[str, object]],
) -> None:
    for name in APPS:
        ours = fit_error(real_fitted[name].params, real[name])
        theirs_params = ThroughputParams(**summary[name]["fitted_perf_params"])  # type: ignore[arg-type]
        theirs = fit_error(theirs_params, real[name])
        # our evaluation of the artifact's parameters reproduces its reported error
        assert theirs.mape == pytest.approx(
            summary[name]["fitted_perf_params_step_time_MAPE"], abs=1e-3
        )
        assert ours.mape < 0.15, (name, ours)
        assert ours.mape <= 1.5 * theirs.mape, (name, ours, theirs)
        assert ours.rmsle <= 1.5 * theirs.rmsle, (name, ours, theirs)
        # the well-identified parameters agree with the artifact's fit
        assert real_fitted[name].params.alpha_c == pytest.approx(theirs_params.alpha_c, rel=0.15)
        assert real_fitted[name].params.beta_c == pytest.approx(theirs_params.beta_c, rel=0.15)


def test_fitted_real_applications_run(
    real: dict[str, Application], real_fitted: dict[str, FittedApplication]
) -> None:
    for name in APPS:
        app, fa = real[name], real_fitted[name]
        for p in [(1,), (4,), (2, 2), (4, 4, 4, 4), (4,) * 8, (4,) * 16]:
            r = sum(p)
            batch = min(max(app.init_bsz, app.min_local * r), app.max_bsz)
            cfg = app.batch_config(r, batch)
            measured, model = app.iteration_time(p, cfg), fa.iteration_time(p, cfg)
            assert math.isfinite(model) and model > 0
            assert _rel(model, measured) < 0.6, (name, p, model, measured)
            assert fa.rate(p, cfg, 0) > 0
