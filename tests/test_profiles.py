"""The Pollux artifact's measured application model (ddlsched.perf.profiles).

Real-data tests read the artifact's traces from ../shared/data/pollux/traces (skipped when absent);
the rest use small synthetic application folders written to tmp_path.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from ddlsched.errors import InputError
from ddlsched.perf.profiles import (
    DEFAULT_MAX_EPOCHS,
    Application,
    BatchConfig,
    canonical_placement,
    load_application,
    load_applications,
    placement_id,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pollux" / "traces"
APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


@pytest.fixture(scope="module")
def apps() -> dict[str, Application]:
    if not (DATA / "bert" / "placements.csv").is_file():
        pytest.skip(f"Pollux artifact traces not found at {DATA} (shared test data absent)")
    return load_applications(DATA)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------- §2 configuration


@pytest.mark.parametrize(
    ("app", "replicas", "batch", "a", "k", "M"),
    [
        ("bert", 6, 384, 10, 5, 360),
        ("cifar10", 6, 2048, 342, 0, 2052),
        ("cifar10", 12, 4096, 341, 0, 4092),
        ("imagenet", 24, 3200, 134, 0, 3216),
        ("ncf", 1, 32768, 16384, 1, 32768),
    ],
)
def test_batch_config_examples(apps, app, replicas, batch, a, k, M):
    cfg = apps[app].batch_config(replicas, batch)
    assert (cfg.a, cfg.accum, cfg.M) == (a, k, M)
    assert cfg.M == replicas * cfg.a * (cfg.accum + 1)


def test_constants(apps):
    assert set(apps) == set(APPS)
    for name, app in apps.items():
        sizes = sorted(int(p.stem.split("-")[1]) for p in (DATA / name).glob("validation-*.csv"))
        assert (app.init_bsz, app.max_bsz) == (sizes[0], sizes[-1])
        assert app.max_epochs == DEFAULT_MAX_EPOCHS[name]
        locs = [int(r["local_bsz"]) for r in _rows(DATA / name / "placements.csv")]
        assert app.min_local == min(locs)
        assert app.max_local == (8 if name == "yolov3" else max(locs))
    assert load_application(DATA / "bert", max_epochs=1).max_epochs == 1


# --------------------------------------------------------------------------- §3 throughput


def test_placement_id_is_smallest_rotation():
    assert placement_id((3, 2, 1)) == "132"
    assert placement_id((4, 2)) == "24"
    assert placement_id((4, 4, 2)) == "244"
    assert placement_id((0, 4, 0, 4, 2, 0)) == "244"
    assert canonical_placement((2, 1, 3)) == (1, 3, 2)  # a rotation, not a sort
    with pytest.raises(ValueError):
        placement_id((0, 0))


def test_rotations_share_measurements(apps):
    app = apps["cifar10"]
    assert app.step_time((3, 2, 1), 100) == app.step_time((1, 3, 2), 100)
    assert app.step_time((3, 2, 1), 100) != app.step_time((1, 2, 3), 100)


def test_interpolation_between_measured_rows(apps):
    app = apps["imagenet"]
    rows = [r for r in _rows(DATA / "imagenet" / "placements.csv") if r["placement"] == "244"]
    pts = sorted((int(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"])) for r in rows)
    for x, step, sync in pts:
        assert app.step_time((4, 4, 2), x) == pytest.approx((step, sync), rel=1e-12)
    (x0, s0, y0), (x1, s1, y1) = pts[2], pts[3]
    step, sync = app.step_time((2, 4, 4), (x0 + x1) / 2)
    assert min(s0, s1) <= step <= max(s0, s1) and min(y0, y1) <= sync <= max(y0, y1)
    assert step == pytest.approx((s0 + s1) / 2, rel=1e-12)
    with pytest.raises(ValueError, match="outside"):
        app.step_time((4, 4, 2), pts[-1][0] + 1)
    with pytest.raises(ValueError, match="outside"):
        app.step_time((4, 4, 2), pts[0][0] - 1)


def test_five_or_more_nodes_linear_nd(apps):
    from scipy.interpolate import LinearNDInterpolator

    app = apps["bert"]
    # independent construction of the §3 point list: grouped means in key order, then scalability
    groups: dict[tuple[int, int, int], list[tuple[float, float]]] = {}
    for r in _rows(DATA / "bert" / "placements.csv"):
        key = (len(r["placement"]), sum(map(int, r["placement"])), int(r["local_bsz"]))
        groups.setdefault(key, []).append((float(r["step_time"]), float(r["sync_time"])))
    pts = [(*k, *np.mean(v, axis=0)) for k, v in sorted(groups.items())]
    pts += [tuple(map(float, r.values())) for r in _rows(DATA / "bert" / "scalability.csv")]
    arr = np.array(pts)
    ref = LinearNDInterpolator(arr[:, :3], arr[:, 3:])
    for placement in [(1,) * 6, (4, 2, 4, 2, 4, 2, 4, 2), (2,) * 20]:
        cfg = app.batch_config(sum(placement), 384)
        step, sync = app.step_time(placement, cfg.a)
        assert math.isfinite(step) and math.isfinite(sync) and step > sync > 0
        nodes = min(len(placement), 16)
        assert (step, sync) == pytest.approx(ref([nodes, sum(placement), cfg.a])[0], rel=1e-12)
    with pytest.raises(ValueError, match="hull"):
        app.step_time((1,) * 6, 10_000)


# --------------------------------------------------------------------------- §2, §4 progress


def test_progress_is_min_over_curves(apps):
    for name, app in apps.items():
        assert app.progress_at(0) == 0.0
        ps = [app.progress_at(e) for e in range(app.max_epochs + 1)]
        assert all(b > a for a, b in zip(ps, ps[1:], strict=False)), name
    app = apps["cifar10"]
    curves = [_rows(p) for p in (DATA / "cifar10").glob("validation-*.csv")]
    assert app.progress_at(7) == min(float(c[6]["progress"]) for c in curves)
    with pytest.raises(ValueError):
        app.progress_at(app.max_epochs + 1)


def test_grad_stats_and_gain(apps):
    app = apps["cifar10"]
    rows = _rows(DATA / "cifar10" / "validation-1024.csv")
    assert app.grad_stats(5, 1024) == (float(rows[5]["grad_sqr"]), float(rows[5]["grad_var"]))
    lo, hi = app.grad_stats(5, 512), app.grad_stats(5, 1024)
    mid = app.grad_stats(5, 768)
    for i in range(2):
        assert mid[i] == pytest.approx((lo[i] + hi[i]) / 2, rel=1e-12)
    for bad in (app.init_bsz - 1, app.max_bsz + 1):
        with pytest.raises(ValueError, match="validated range"):
            app.grad_stats(5, bad)
    for name, a in apps.items():
        assert a.gain(0, a.init_bsz) == pytest.approx(1.0, rel=1e-12), name
        assert a.gain(a.max_epochs - 1, a.max_bsz) >= 1.0


def test_rate_is_gain_over_iteration_time(apps):
    app = apps["bert"]
    cfg = app.batch_config(6, 384)
    step, sync = app.step_time((4, 2), cfg.a)
    t_iter = step + cfg.accum * (step - sync)
    assert app.iteration_time((4, 2), cfg) == pytest.approx(t_iter, rel=1e-14)
    assert app.rate((4, 2), cfg, 1) == pytest.approx(app.gain(1, 360) / t_iter, rel=1e-14)
    assert app.rate([2, 4], cfg, 1) == app.rate((4, 2), cfg, 1)  # lists and rotations


# --------------------------------------------------------------------------- synthetic folders


def _write_app(d: Path, **override: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    files = {
        "placements.csv": "placement,local_bsz,step_time,sync_time\n"
        "1,4,1.0,0.0\n1,8,2.0,0.0\n2,4,1.5,0.5\n2,8,2.5,0.5\n11,4,2.0,1.0\n11,8,3.0,1.0\n",
        "scalability.csv": "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
        "6,6,4,4.0,3.0\n6,6,8,5.0,3.0\n6,12,4,5.0,4.0\n6,12,8,6.0,4.0\n",
        "validation-8.csv": "progress,iteration,metric,grad_sqr,grad_var\n"
        "10,10,0,1.0,3.0\n20,20,0,1.0,3.0\n30,30,0,1.0,3.0\n",
        "validation-32.csv": "progress,iteration,metric,grad_sqr,grad_var\n"
        "11,3,0,3.0,7.0\n19,6,0,3.0,7.0\n33,9,0,3.0,7.0\n",
    }
    files.update(override)
    for fname, text in files.items():
        (d / fname).write_text(text)
    return d


def test_synthetic_application(tmp_path):
    app = load_application(_write_app(tmp_path / "toy"))
    assert (app.name, app.init_bsz, app.max_bsz, app.min_local, app.max_local) == (
        "toy",
        8,
        32,
        4,
        8,
    )
    assert app.max_epochs == 3  # not a known app: every validated epoch
    assert [app.progress_at(e) for e in range(4)] == [0.0, 10.0, 19.0, 30.0]
    assert app.batch_config(2, 32) == BatchConfig(local=16, accum=1, a=8, M=32)
    assert app.batch_config(1, 24) == BatchConfig(local=24, accum=2, a=8, M=24)
    wide = load_application(tmp_path / "toy", max_local=16)
    assert wide.batch_config(1, 12) == BatchConfig(local=12, accum=1, a=6, M=12)  # R = 1, B > init
    assert wide.batch_config(1, 8) == BatchConfig(local=8, accum=0, a=8, M=8)  # B = init_bsz
    assert wide.batch_config(2, 32) == BatchConfig(local=16, accum=0, a=16, M=32)
    assert app.step_time((2,), 6) == (2.0, 0.5)
    assert app.grad_stats(1, 20) == (2.0, 5.0)
    assert app.gain(0, 32) == pytest.approx((7 + 3) / (7 / 4 + 3))
    cfg = app.batch_config(2, 16)
    # M = 16: sqr = (8·3 + 16·1)/24 = 5/3, var = (8·7 + 16·3)/24 = 13/3, scale 2 → gain 36/23;
    # placement "11" at a = 8: step 3, sync 1, k = 0 → T_iter = 3
    assert (cfg.a, cfg.accum, cfg.M) == (8, 0, 16)
    assert app.rate((1, 1), cfg, 0) == pytest.approx(36 / 23 / 3)
    step, sync = app.step_time((1,) * 6, 6)
    assert (step, sync) == pytest.approx((4.5, 3.0))


def test_load_applications_picks_folders(tmp_path):
    _write_app(tmp_path / "a")
    _write_app(tmp_path / "b")
    (tmp_path / "notes").mkdir()
    assert sorted(load_applications(tmp_path)) == ["a", "b"]
    with pytest.raises(InputError, match="no application folders"):
        load_applications(tmp_path / "notes")


@pytest.mark.parametrize(
    ("fname", "text", "line", "field"),
    [
        ("placements.csv", "placement,local,step_time,sync_time\n1,4,1,0\n", 1, "local_bsz"),
        (
            "placements.csv",
            "placement,local_bsz,step_time,sync_time\n1,4,1,0\n1,8,x,0\n",
            3,
            "step_time",
        ),
        ("placements.csv", "placement,local_bsz,step_time,sync_time\n1a,4,1,0\n", 2, "placement"),
        ("placements.csv", "placement,local_bsz,step_time,sync_time\n1,4.5,1,0\n", 2, "local_bsz"),
        (
            "placements.csv",
            "placement,local_bsz,step_time,sync_time\n1,4,1,0\n1,4,2,0\n",
            3,
            "local_bsz",
        ),
        ("placements.csv", "placement,local_bsz,step_time,sync_time\n1,4,1\n", 2, None),
        (
            "scalability.csv",
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,6,4,nan,1\n",
            2,
            "step_time",
        ),
        ("validation-8.csv", "progress,iteration,metric,grad_sqr\n1,1,0,1\n", 1, "grad_var"),
        (
            "validation-8.csv",
            "progress,iteration,metric,grad_sqr,grad_var\n1,1,0,1,abc\n",
            2,
            "grad_var",
        ),
    ],
)
def test_bad_files_name_file_line_field(tmp_path, fname, text, line, field):
    d = _write_app(tmp_path / "toy", **{fname: text})
    with pytest.raises(InputError) as e:
        load_application(d)
    err = e.value
    assert err.source == str(d / fname)
    assert (err.line, err.field) == (line, field)
    assert "\n" not in str(err) and fname in str(err)


def test_bad_folders(tmp_path):
    d = _write_app(tmp_path / "toy")
    (d / "scalability.csv").unlink()
    with pytest.raises(InputError, match="not found") as e:
        load_application(d)
    assert e.value.source == str(d / "scalability.csv")
    d = _write_app(tmp_path / "toy2", **{"validation-big.csv": "progress,grad_sqr,grad_var\n"})
    with pytest.raises(InputError, match="validation-<batch size>.csv"):
        load_application(d)
    d = _write_app(tmp_path / "toy3", **{"placements.csv": ""})
    with pytest.raises(InputError, match="empty"):
        load_application(d)
    with pytest.raises(InputError, match="max_epochs 4"):
        load_application(_write_app(tmp_path / "toy4"), max_epochs=4)
    with pytest.raises(InputError, match="not a directory"):
        load_application(tmp_path / "missing")


def test_profiles_are_parsed_once_per_content(tmp_path, monkeypatch):
    """An experiment builds one simulator per row: the same tables are parsed once, and a
    file rewritten in place with other numbers (same size, same modification time) is read
    anew, as is a bad file on every load."""
    import os

    from ddlsched.perf import profiles

    parsed: list[str] = []
    read_table = profiles._read_table

    def counting(path, columns):
        parsed.append(path.name)
        return read_table(path, columns)

    monkeypatch.setattr(profiles, "_read_table", counting)
    monkeypatch.setattr(profiles, "_PARSED", {})
    d = _write_app(tmp_path / "toy")
    first = load_application(d)
    assert len(parsed) == 4  # placements, scalability, two validation curves
    again = load_application(_write_app(tmp_path / "copy"))  # same content, another folder
    assert len(parsed) == 4 and again is not first
    assert again.step_time((2,), 6) == first.step_time((2,), 6) == (2.0, 0.5)
    # the same bytes' length and time stamp, other numbers: parsed again
    placements = d / "placements.csv"
    stamp = placements.stat()
    text = placements.read_text()
    placements.write_text(text.replace("2,4,1.5,0.5", "2,4,1.7,0.5"))
    os.utime(placements, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert placements.stat().st_size == stamp.st_size
    changed = load_application(d)
    assert len(parsed) == 5 and changed.step_time((2,), 4) == (1.7, 0.5)
    # a bad file is never kept: every load reports it, naming the file and line
    placements.write_text(text.replace("2,4,1.5,0.5", "2,4,x,0.5"))
    for _ in range(2):
        with pytest.raises(InputError) as e:
            load_application(d)
        assert (e.value.source, e.value.line) == (str(placements), 4)
