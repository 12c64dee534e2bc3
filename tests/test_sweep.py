"""Sweeps (``ddlsched sweep``): expansion, hashing, cache/resume, intervals, executors."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.errors import InputError
from ddlsched.parallel import handout_order, map_in_processes
from ddlsched.sweep import METRICS, expand, load_sweep, run_sweep, write_summary

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

WORKLOAD = """job_id,arrival,num_gpus,iterations,model
1,0,2,200,resnet50
2,1,4,100,vgg16
3,2.5,1,300,lstm-ptb
4,3,8,50,inception3
"""

SWEEP = """cluster = "tiny"
workload = "jobs.csv"

[settings]
iterations_per_task = 10

[sweep]
policies = ["ada-srsf", "srsf1"]
seeds = 2

[sweep.grid]
placement = ["ff", "rand"]
"""


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    (d / "jobs.csv").write_text(WORKLOAD)
    p = d / "sweep.toml"
    p.write_text(SWEEP)
    return p


def rows(path: Path) -> list[dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_expansion_is_the_cross_product_in_order(tmp_path: Path, sweep_file: Path) -> None:
    text = SWEEP.replace("seeds = 2", "seeds = [4, 1, 9]") + "restart_delay = [0, 5]\n"
    sweep_file.write_text(text)
    runs = expand(load_sweep(sweep_file))
    assert len(runs) == 2 * 2 * 2 * 3  # policies × placements × delays × seeds
    assert len({r.key for r in runs}) == len(runs)
    first = [(r.policy, dict(r.point), r.seed) for r in runs[:4]]
    assert first == [
        ("ada-srsf", {"placement": "ff", "restart_delay": 0.0}, 4),
        ("ada-srsf", {"placement": "ff", "restart_delay": 0.0}, 1),
        ("ada-srsf", {"placement": "ff", "restart_delay": 0.0}, 9),
        ("ada-srsf", {"placement": "ff", "restart_delay": 5.0}, 4),
    ]
    last = runs[-1]
    assert (last.policy, last.config.placement, last.config.settings.restart_delay) == (
        "srsf1",
        "rand",
        5.0,
    )
    assert last.config.settings.iterations_per_task == 10  # the base settings stay
    assert last.record["workload"] == str(sweep_file.parent / "jobs.csv")


def test_hash_is_stable_and_follows_config_and_file_contents(sweep_file: Path) -> None:
    keys = [r.key for r in expand(load_sweep(sweep_file))]
    assert keys == [r.key for r in expand(load_sweep(sweep_file))]
    sweep_file.write_text(SWEEP.replace("iterations_per_task = 10", "iterations_per_task = 20"))
    changed = [r.key for r in expand(load_sweep(sweep_file))]
    assert not set(keys) & set(changed)
    sweep_file.write_text(SWEEP)
    (sweep_file.parent / "jobs.csv").write_text(WORKLOAD.replace("200,resnet50", "201,resnet50"))
    edited = [r.key for r in expand(load_sweep(sweep_file))]
    assert not set(keys) & set(edited)  # same config text, other workload contents


@pytest.mark.parametrize(
    "edit, field, expected",
    [
        (("policies =", "polices ="), "sweep.polices", "did you mean 'policies'"),
        (('placement = ["ff", "rand"]', "kapa = [1, 2]"), "sweep.grid.kapa", "'kappa'"),
        (('placement = ["ff", "rand"]', "kappa = [1, 2.5]"), "sweep.grid.kappa", "integer"),
        (('placement = ["ff", "rand"]', "kappa = 2"), "sweep.grid.kappa", "non-empty list"),
        (('placement = ["ff", "rand"]', "kappa = [0]"), "kappa", "≥ 1"),
        (("seeds = 2", "seeds = [1, 1]"), "sweep.seeds", "distinct"),
        (("seeds = 2", "seeds = 0"), "sweep.seeds", "≥ 1"),
        (("seeds = 2", "seeds = 2\nworkers = 0"), "sweep.workers", "≥ 1"),
        (('cluster = "tiny"', 'cluster = "tiny"\npolicy = "srsf1"'), "policy", "not both"),
    ],
)
def test_bad_sweep_files_name_the_key(sweep_file: Path, edit, field, expected) -> None:
    sweep_file.write_text(SWEEP.replace(*edit))
    with pytest.raises(InputError) as info:
        load_sweep(sweep_file)
    assert info.value.field == field and expected in str(info.value)
    assert str(sweep_file) in str(info.value)


def test_cache_hit_and_resume_run_only_missing_runs(tmp_path: Path, sweep_file: Path) -> None:
    out = tmp_path / "out"
    sweep = load_sweep(sweep_file)
    first = run_sweep(sweep, out, workers=1)
    assert len(first.executed) == 8 and not first.cached
    summary = (out / "summary.csv").read_bytes()
    again = run_sweep(sweep, out, workers=1)
    assert not again.executed and len(again.cached) == 8  # everything cached
    gone = [first.runs[1].key, first.runs[6].key]
    for key in gone:
        shutil.rmtree(out / "runs" / key)
    resumed = run_sweep(sweep, out, workers=2)
    assert sorted(resumed.executed) == sorted(gone) and len(resumed.cached) == 6
    assert (out / "summary.csv").read_bytes() == summary


def test_interrupted_sweep_keeps_finished_runs_and_resumes(tmp_path, sweep_file) -> None:
    out = tmp_path / "out"
    sweep = load_sweep(sweep_file)

    def stop_after_three(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, out, workers=1, progress=stop_after_three)
    finished = sorted(p.parent.name for p in (out / "runs").glob("*/summary.json"))
    assert len(finished) == 3
    assert not (out / "summary.csv").exists()
    seen: list[tuple[int, int]] = []
    resumed = run_sweep(sweep, out, workers=1, progress=lambda d, t: seen.append((d, t)))
    assert len(resumed.executed) == 5 and sorted(resumed.cached) == finished
    assert seen[0] == (4, 8) and seen[-1] == (8, 8)  # progress counts cached runs as done


def test_confidence_intervals_by_hand(tmp_path: Path, sweep_file: Path) -> None:
    sweep_file.write_text(SWEEP.replace("seeds = 2", "seeds = 3"))
    sweep = load_sweep(sweep_file)
    runs = expand(sweep)
    out = tmp_path / "out"
    for i, r in enumerate(runs):  # avg_jct 1, 2, 3 per group; other metrics constant
        d = out / "runs" / r.key
        d.mkdir(parents=True)
        summary = {m: 5.0 for m in METRICS} | {"avg_jct": float(i % 3 + 1), "num_jobs": 4}
        (d / "summary.json").write_text(json.dumps(summary))
    write_summary(sweep, runs, out)
    table = rows(out / "summary.csv")
    assert len(table) == 4
    row = table[0]
    assert (row["policy"], row["placement"], row["runs"]) == ("ada-srsf", "ff", "3")
    # mean 2, s = 1; Student t with 2 degrees of freedom has the closed-form quantile
    # t_p = (2p − 1) / √(2p(1 − p)), so t(0.975, 2) = 0.95 / √0.04875 ≈ 4.3027; half = t·s/√3
    half = 0.95 / math.sqrt(2 * 0.975 * 0.025) / math.sqrt(3)
    assert float(row["avg_jct_mean"]) == pytest.approx(2.0)
    # 2 − half < 0: a time's interval is clipped to [0, ∞) (issue #11)
    assert 2.0 - half < 0 and float(row["avg_jct_ci_low"]) == 0.0
    assert float(row["avg_jct_ci_high"]) == pytest.approx(2.0 + half, rel=1e-12)
    assert row["makespan_mean"] == row["makespan_ci_low"] == row["makespan_ci_high"] == "5"
    per_run = rows(out / "runs.csv")
    assert [r["avg_jct"] for r in per_run[:3]] == ["1", "2", "3"]
    assert [r["seed"] for r in per_run[:3]] == ["0", "1", "2"]
    md = (out / "summary.md").read_text()
    assert "| ada-srsf | ff | 3 | 2.0 [0.0, 4.5] |" in md
    head = (
        "| policy | placement | runs | avg_jct (s) | p95_jct (s) | makespan (s) | avg_queueing (s)"
    )
    assert head + " | gpu_util (%) |" in md  # every column states its unit
    assert "95 % Student-t interval, clipped to the metric's range" in md


def test_map_keeps_input_order_and_reports_each_result() -> None:
    seen: list[tuple[int, int]] = []
    items = [5, 3, 8, 1, 9, 2]
    out = map_in_processes(abs, items, 2, None, on_result=lambda i, r: seen.append((i, r)))
    assert out == items
    assert sorted(seen) == list(enumerate(items))


def _log_and_return(item: tuple[str, int]) -> int:
    """Append the item to its log file (O_APPEND: one whole line per write), return it."""
    path, x = item
    with open(path, "a") as f:
        f.write(f"{x}\n")
    return x


def test_handout_order_is_costliest_first_and_stable() -> None:
    items = [1, 2, 3, 50, 4, 5, 60, 6, 5]
    order = handout_order(items, cost=lambda x: x)
    assert [x for _, x in order] == [60, 50, 6, 5, 5, 4, 3, 2, 1]
    assert [i for i, x in order if x == 5] == [5, 8]  # ties keep input order
    assert handout_order(items) == list(enumerate(items))


def test_map_with_costs_keeps_input_order_and_runs_every_item_once(tmp_path) -> None:
    # which worker writes first is up to the OS scheduler (CI saw [60, 6, 50, ...]): the
    # hand-out order is checked above, here only what no scheduling can change
    log = str(tmp_path / "started")
    items = [(log, x) for x in [1, 2, 3, 50, 4, 5, 60, 6]]
    out = map_in_processes(_log_and_return, items, 2, None, cost=lambda it: it[1])
    assert out == [x for _, x in items]  # results in input order whatever the hand-out order
    started = [int(line) for line in open(log).read().split()]
    assert sorted(started) == sorted(out)


def test_local_processes_and_ray_give_identical_files(tmp_path, sweep_file) -> None:
    ray = pytest.importorskip("ray")
    local, remote = tmp_path / "local", tmp_path / "ray"
    base = ["sweep", "--config", str(sweep_file), "--quiet", "--workers", "2"]
    assert main([*base, "--out", str(local)]) == 0
    try:
        assert main([*base, "--out", str(remote), "--ray-address", "local"]) == 0
    finally:
        if ray.is_initialized():  # run_sweep stops the instance it started
            ray.shutdown()
    for name in ("summary.csv", "summary.md", "runs.csv", "sweep.json"):
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name
    files = sorted(p.relative_to(local) for p in (local / "runs").rglob("*") if p.is_file())
    assert len(files) == 8 * 5  # config, fairness, jobs, segments, summary per run
    for f in files:
        assert (local / f).read_bytes() == (remote / f).read_bytes(), f


def test_example_sweep_file_runs_from_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    argv = ["sweep", "--config", str(EXAMPLES / "sweep.toml"), "--out", str(out)]
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", *argv, "--workers", "2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "12 runs: 0 cached, 12 to run" in r.stderr
    assert "| ada-srsf | ls | 3 |" in r.stdout
    table = rows(out / "summary.csv")
    assert [(t["policy"], t["placement"], t["runs"]) for t in table] == [
        ("ada-srsf", "ls", "3"),
        ("ada-srsf", "rand", "3"),
        ("srsf1", "ls", "3"),
        ("srsf1", "rand", "3"),
    ]
    assert len(rows(out / "runs.csv")) == 12
    # one run re-runs alone from its recorded config
    key = rows(out / "runs.csv")[4]["key"]
    assert (
        main(
            [
                "run",
                "--config",
                str(out / "runs" / key / "config.json"),
                "--quiet",
                "--out",
                str(tmp_path / "one"),
            ]
        )
        == 0
    )
    assert (tmp_path / "one" / "jobs.csv").read_bytes() == (
        out / "runs" / key / "jobs.csv"
    ).read_bytes()


def test_sweep_cli_errors_are_one_line(tmp_path: Path, sweep_file: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "sweep", "--config", str(sweep_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and "--out" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


# ---------------------------------------------------------------------- damaged cache, limits
def _damage_truncate(d: Path) -> None:
    text = (d / "summary.json").read_text()
    (d / "summary.json").write_text(text[: len(text) // 2])


def _damage_remove_jobs(d: Path) -> None:
    (d / "jobs.csv").unlink()


def _damage_edit_segments(d: Path) -> None:
    (d / "segments.csv").write_text("job_id,start,end,placement\n")


def _damage_other_run(d: Path) -> None:
    summary = json.loads((d / "summary.json").read_text())
    (d / "summary.json").write_text(json.dumps(summary | {"run_id": "0" * 16}))


@pytest.mark.parametrize(
    "damage, reason",
    [
        (_damage_truncate, "unreadable summary.json"),
        (_damage_remove_jobs, "jobs.csv missing"),
        (_damage_edit_segments, "segments.csv does not match"),
        (_damage_other_run, "run id differs"),
    ],
)
def test_damaged_cache_entry_is_recomputed_with_a_warning(
    tmp_path, sweep_file, capsys, damage, reason
) -> None:
    out = tmp_path / "out"
    sweep = load_sweep(sweep_file)
    first = run_sweep(sweep, out, workers=1)
    files = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    key = first.runs[2].key
    damage(out / "runs" / key)
    capsys.readouterr()
    again = run_sweep(sweep, out, workers=1)
    assert again.executed == [key] and len(again.cached) == 7
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and key in warning[0] and reason in warning[0]
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == files
    assert not [p for p in (out / "runs").iterdir() if p.name.startswith(".")]


def test_sweep_entries_record_run_ids(tmp_path: Path, sweep_file: Path) -> None:
    out = tmp_path / "out"
    result = run_sweep(load_sweep(sweep_file), out, workers=1)
    for key in result.executed:
        d = out / "runs" / key
        summary = json.loads((d / "summary.json").read_text())
        digest = hashlib.sha256((d / "config.json").read_bytes()).hexdigest()
        assert summary["run_id"] == digest[:16]
    doc = json.loads((out / "sweep.json").read_text())
    assert len(doc["sweep_id"]) == 16


def test_huge_sweep_is_refused_before_expanding(tmp_path: Path, sweep_file: Path) -> None:
    sweep_file.write_text(SWEEP.replace("seeds = 2", "seeds = 100000000"))
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "sweep", "--config", str(sweep_file)]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"{sweep_file}, line 9, field 'sweep.seeds'" in line
    assert "400,000,000 runs" in line and "10,000" in line
    assert not out.exists()
    sweep_file.write_text(SWEEP)  # 8 runs: over a limit of 5, from the file or the option
    with pytest.raises(InputError, match="more than the limit of 5"):
        load_sweep(sweep_file, max_runs=5)
    sweep_file.write_text(SWEEP.replace("seeds = 2", "seeds = 2\nmax_runs = 5"))
    with pytest.raises(InputError, match="more than the limit of 5"):
        load_sweep(sweep_file)
    assert len(expand(load_sweep(sweep_file, max_runs=8))) == 8


@pytest.mark.parametrize(
    "edit, line, field, expected",
    [
        (('"srsf1"]', '"srsf9"]'), 8, "sweep.policies", "unknown policy 'srsf9'"),
        (('"jobs.csv"', '"nojobs.csv"'), 2, "workload", "no such workload preset or file"),
        (('placement = ["ff", "rand"]', 'workload = ["jobs.csv", "gone.csv"]'), 12,
         "sweep.grid.workload", "gone.csv"),
        (("iterations_per_task = 10", 'profiles = "nodir"'), 5, "settings.profiles", "nodir"),
    ],
)  # fmt: skip
def test_bad_names_in_sweep_file_write_nothing(tmp_path, sweep_file, edit, line, field, expected):
    sweep_file.write_text(SWEEP.replace(*edit))
    out = tmp_path / "out"
    code = main(["sweep", "--config", str(sweep_file), "--out", str(out), "--quiet"])
    assert code == 2
    with pytest.raises(InputError) as info:
        load_sweep(sweep_file)
    assert (info.value.source, info.value.line, info.value.field) == (str(sweep_file), line, field)
    assert expected in str(info.value)
    assert not out.exists()


def test_sweep_directory_of_another_sweep_is_refused(tmp_path, sweep_file) -> None:
    out = tmp_path / "out"
    base = ["sweep", "--config", str(sweep_file), "--out", str(out), "--quiet", "--workers", "1"]
    assert main(base) == 0
    # the same sweep with one more seed resumes in the same directory
    sweep_file.write_text(SWEEP.replace("seeds = 2", "seeds = 3"))
    assert main(base) == 0
    assert len(rows(out / "runs.csv")) == 12
    other = sweep_file.parent / "other.toml"
    other.write_text(SWEEP.replace("iterations_per_task = 10", "iterations_per_task = 20"))
    argv = ["sweep", "--config", str(other), "--out", str(out), "--quiet", "--workers", "1"]
    summary = (out / "summary.csv").read_bytes()
    assert main(argv) == 2
    assert (out / "summary.csv").read_bytes() == summary
    assert main([*argv, "--overwrite"]) == 0
    assert len(list((out / "runs").iterdir())) == 8  # the other sweep's runs are gone
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("mine")
    assert main([*argv[:4], str(notes), "--quiet"]) == 2
    assert [p.name for p in notes.iterdir()] == ["a.txt"]
    other.write_text("overwrite = true\n" + other.read_text())  # also a key of the file
    assert load_sweep(other).overwrite and not load_sweep(sweep_file).overwrite


def test_staging_left_in_the_cache_by_a_killed_sweep_is_removed(tmp_path, sweep_file) -> None:
    out = tmp_path / "out"
    sweep = load_sweep(sweep_file)
    first = run_sweep(sweep, out, workers=1)
    stale = out / "runs" / f".{first.runs[0].key}.abc123.tmp"
    stale.mkdir()
    (stale / "summary.json").write_text("{}")
    again = run_sweep(sweep, out, workers=1)
    assert not again.executed and not stale.exists()


def test_a_grid_point_where_a_setting_has_no_effect_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    # κ crossed with placements: kappa=2 has no effect with ff, so the sweep file is invalid
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'cluster = "tiny"\nworkload = "wang20"\nmax_gpus = 8\nsample = 4\n'
        '[sweep]\npolicies = ["srsf1"]\n[sweep.grid]\nplacement = ["ff", "lwf"]\n'
        "kappa = [1, 2]\n"
    )
    with pytest.raises(InputError) as info:
        load_sweep(sweep)
    err = info.value
    assert (err.line, err.field) == (9, "sweep.grid.kappa")
    assert "placement = 'ff', kappa = 2" in err.message and "lwf placement" in err.message


def test_a_policy_that_cannot_run_the_workload_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'cluster = "tiny"\nworkload = "wang20"\nmax_gpus = 8\nsample = 4\n'
        '[sweep]\npolicies = ["srsf1", "tiresias"]\n'
    )
    with pytest.raises(InputError) as info:
        load_sweep(sweep)
    err = info.value
    assert (err.line, err.field) == (6, "sweep.policies")
    assert "tiresias" in err.message and "model jobs" in err.message
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "sweep", "--config", str(sweep)]
        + ["--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "out").exists()
