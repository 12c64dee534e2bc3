"""Experiment files (``ddlsched run --config``): validation, precedence, exact re-runs."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from ddlsched import __version__
from ddlsched.api import Settings
from ddlsched.cli import main
from ddlsched.config import OMITTED_WHEN_UNSET, RUN_KEYS, load_run_config, with_overrides
from ddlsched.errors import InputError
from ddlsched.settings import RECORDED_IF_CHANGED

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

WORKLOAD = """job_id,arrival,num_gpus,iterations,model
1,0,2,200,resnet50
2,1,4,100,vgg16
3,2.5,1,300,lstm-ptb
4,3,8,50,inception3
"""

CONFIG = """# a small experiment
cluster = "tiny"
workload = "jobs.csv"
policy = "ada-srsf"
placement = "lwf"
seed = 1

[settings]
iterations_per_task = 10
kappa = 2
"""


def ddl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture
def exp(tmp_path: Path) -> Path:
    d = tmp_path / "exp"
    d.mkdir()
    (d / "jobs.csv").write_text(WORKLOAD)
    p = d / "exp.toml"
    p.write_text(CONFIG)
    return p


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def error_of(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_run_config(path)
    return info.value


def test_file_values_are_loaded_and_relative_files_resolved(exp: Path) -> None:
    cfg = load_run_config(exp)
    assert (cfg.cluster, cfg.policy, cfg.placement, cfg.seed) == ("tiny", "ada-srsf", "lwf", 1)
    assert cfg.workload == str(exp.parent / "jobs.csv")  # relative to the file, made absolute
    assert cfg.settings.kappa == 2 and cfg.settings.iterations_per_task == 10
    assert cfg.settings.granularity == "iteration"  # not given: the default


@pytest.mark.parametrize(
    "text, field, line, hint",
    [
        ('cluster = "tiny"\npolcy = "srsf1"\n', "polcy", 2, "did you mean 'policy'"),
        ('policy = "x"\n\n[settings]\nkapa = 2\n', "settings.kapa", 4, "did you mean 'kappa'"),
        ("[setings]\nkappa = 2\n", "setings", 1, "did you mean 'settings'"),
    ],
)
def test_unknown_key_names_file_key_line_and_closest(tmp_path, text, field, line, hint) -> None:
    path = write(tmp_path, text)
    err = error_of(path)
    assert err.source == str(path) and err.field == field and err.line == line
    assert "unknown key" in str(err) and hint in str(err)


@pytest.mark.parametrize(
    "text, field, line, expected",
    [
        ('seed = "1"\n', "seed", 1, "expected an integer, got '1'"),
        ("cluster = 4\n", "cluster", 1, "expected a string"),
        ("[settings]\nkappa = 1.5\n", "settings.kappa", 2, "expected an integer"),
        ('[settings]\nshortcuts = "yes"\n', "settings.shortcuts", 2, "expected true or false"),
        ("[settings]\na = true\n", "settings.a", 2, "expected a number"),
        ("settings = 3\n", "settings", 1, "expected a table"),
    ],
)
def test_wrong_types_name_file_key_and_expected_type(tmp_path, text, field, line, expected):
    path = write(tmp_path, text)
    err = error_of(path)
    assert (err.source, err.field, err.line) == (str(path), field, line)
    assert expected in str(err)


def test_numbers_are_accepted_for_float_keys(tmp_path: Path) -> None:
    cfg = load_run_config(write(tmp_path, "[settings]\na = 1\nrestart_delay = 2.5\n"))
    assert cfg.settings.a == 1.0 and isinstance(cfg.settings.a, float)
    assert cfg.settings.restart_delay == 2.5


def test_out_of_range_setting_and_bad_toml_name_the_file(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "[settings]\nkappa = 0\n"))
    assert err.field == "kappa" and "c.toml" in str(err) and "≥ 1" in str(err)
    err = error_of(write(tmp_path, 'cluster = "tiny"\nseed = = 3\n', "bad.toml"))
    assert err.line == 2 and "invalid TOML" in str(err)
    err = error_of(tmp_path / "absent.toml")
    assert "no such config file" in str(err)


def test_a_sweep_file_is_refused_by_run(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, '[sweep]\npolicies = ["srsf1"]\n'))
    assert "ddlsched sweep" in str(err)


def test_command_line_overrides_the_file(exp: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    argv = ["run", "--config", str(exp), "--seed", "3", "--placement", "ls"]
    argv += ["--set", "kappa=1", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    rec = json.loads((out / "config.json").read_text())
    assert rec["seed"] == 3 and rec["placement"] == "ls"  # command line wins
    assert rec["settings"]["placement"]["kappa"] == 1  # --set wins over [settings]
    assert rec["settings"]["iteration"]["iterations_per_task"] == 10  # the file's, not overridden
    assert rec["policy"] == "ada-srsf" and rec["cluster"] == "tiny"  # the file's
    assert rec["version"] == __version__
    assert "out" not in rec and "quiet" not in rec  # outputs are not part of the config


def test_with_overrides_ignores_options_not_given(exp: Path) -> None:
    cfg = load_run_config(exp)
    same = with_overrides(cfg, {"seed": None, "placement": None, "quiet": None})
    assert same == cfg
    with pytest.raises(InputError, match="did you mean 'seed'"):
        with_overrides(cfg, {"sed": 1})


def test_rerun_from_recorded_config_is_byte_identical(exp: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["run", "--config", str(exp), "--quiet", "--out", str(first)]) == 0
    # the record names every file absolutely: it re-runs from any folder
    r = ddl("run", "--config", str(first / "config.json"), "--out", str(second), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("config.json", "jobs.csv", "segments.csv", "summary.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_record_has_every_setting_and_run_key(exp: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert main(["run", "--config", str(exp), "--quiet", "--out", str(out)]) == 0
    rec = json.loads((out / "config.json").read_text())
    # every setting, except those recorded only when changed (how, not what, is computed)
    assert {k for sec in rec["settings"].values() for k in sec} == {
        f.name for f in fields(Settings)
    } - RECORDED_IF_CHANGED
    # every run key, except those recorded only when given (``queues``: a run without them
    # records what it always did)
    assert set(rec) == {k for k, key in RUN_KEYS.items() if key.recorded} - set(
        OMITTED_WHEN_UNSET
    ) | {"settings", "resolved"}
    # what ran: the model ``model=auto`` chose, and the backend
    assert rec["settings"]["model"]["model"] == "auto"
    assert rec["resolved"]["model"] in ("wang", "rar") and rec["resolved"]["backend"]


def test_json_config_with_nulls_is_accepted(tmp_path: Path) -> None:
    p = write(tmp_path, '{"cluster": "tiny", "placement": null, "max_gpus": null}', "c.json")
    cfg = load_run_config(p)
    assert cfg.cluster == "tiny" and cfg.placement is None


def test_missing_policy_is_one_line_and_status_2(exp: Path, tmp_path: Path) -> None:
    text = exp.read_text().replace('policy = "ada-srsf"\n', "")
    p = write(exp.parent, text, "nopolicy.toml")
    r = ddl("run", "--config", str(p), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "policy" in r.stderr and "--policy" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = ddl("run", "--config", str(exp))
    assert r.returncode == 2 and "--out" in r.stderr


def test_unknown_key_from_the_cli_is_one_line(tmp_path: Path) -> None:
    p = write(
        tmp_path, 'cluster = "tiny"\nworkload = "wang20"\npolicy = "srsf1"\nplacment = "ff"\n'
    )
    r = ddl("run", "--config", str(p), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"ddlsched: error: {p}, line 4, field 'placment': unknown key (did you mean 'placement'?)"
    )


def test_example_experiment_file_runs_from_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    r = ddl("run", "--config", str(EXAMPLES / "exp.toml"), "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rec = json.loads((out / "config.json").read_text())
    assert rec["workload"] == str(EXAMPLES / "tiny-jobs.csv")
    assert json.loads((out / "summary.json").read_text())["num_jobs"] == 6


def test_docs_list_every_config_key() -> None:
    doc = (ROOT / "docs" / "experiments.md").read_text()
    for key in [*RUN_KEYS, *(f.name for f in fields(Settings))]:
        assert f"`{key}`" in doc, key


def test_workload_options_come_from_the_file_and_the_command_line(exp: Path, tmp_path) -> None:
    exp.write_text(exp.read_text().replace("seed = 1\n", "seed = 1\nmax_gpus = 4\n"))
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", "--config", str(exp), "--quiet", "--out", str(a)]) == 0
    assert json.loads((a / "config.json").read_text())["max_gpus"] == 4
    assert json.loads((a / "summary.json").read_text())["num_jobs"] == 3  # the 8-GPU job gone
    assert main(["run", "--config", str(exp), "--max-gpus", "1", "--quiet", "--out", str(b)]) == 0
    assert json.loads((b / "summary.json").read_text())["num_jobs"] == 1
    err = error_of(write(tmp_path, "max_gpus = 2.5\n"))
    assert err.field == "max_gpus" and "expected an integer" in str(err)


def test_gavel_options_are_run_options_and_config_keys(tmp_path):
    """Every `run` option has a config key: the Gavel throughput options reach the loader."""
    import json as _json

    from ddlsched.cli import main

    data = Path("../shared/data/gavel")
    if not (data / "simulation_throughputs.json").exists():
        pytest.skip("Gavel data not found (../shared/data/gavel)")
    trace = tmp_path / "t.trace"
    trace.write_text(
        "ResNet-18 (batch size 32)\tcmd\t--num_steps\t1\t1000\t0\t1\n"
        "ResNet-18 (batch size 32)\tcmd\t--num_steps\t1\t2000\t10\t1\n"
    )
    thr = str((data / "simulation_throughputs.json").resolve())
    out = tmp_path / "r"
    rc = main(
        [
            "run",
            "--cluster",
            "tiny",
            "--workload",
            str(trace),
            "--policy",
            "fifo",
            "--gavel-throughputs",
            thr,
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    rec = _json.loads((out / "config.json").read_text())
    assert rec["gavel_throughputs"] == thr
    cfg = tmp_path / "exp.toml"
    cfg.write_text(
        f'cluster = "tiny"\nworkload = "{trace}"\npolicy = "fifo"\n'
        f'gavel_throughputs = "{thr}"\ngavel_gpu = "k80"\n'
    )
    out2 = tmp_path / "r2"
    assert main(["run", "--config", str(cfg), "--out", str(out2), "--quiet"]) == 0
    jobs_v100 = (out / "jobs.csv").read_text()
    jobs_k80 = (out2 / "jobs.csv").read_text()
    assert jobs_v100 != jobs_k80  # the GPU type changes the durations
