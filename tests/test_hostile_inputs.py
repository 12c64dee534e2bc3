"""Hostile and unrepresentable inputs through the command line (issue #11 §2 and §4): each is
one line ``ddlsched: error: ...``, exit status 2, no traceback and nothing written. Every
subprocess is bounded with ``timeout=``; the YAML bombs also in-process (they are refused
while composing, before any expansion)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.parsing import MAX_ALIAS_NODES, load_json, load_yaml

TIMEOUT = 120
DEPTH = 2000


def ddl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=TIMEOUT,
    )


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """The run failed as a user-input error: exit 2, one stderr line, no traceback."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddlsched: error: "), proc.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def nested_json(depth: int = DEPTH) -> str:
    return "[" * depth + "]" * depth


BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def run_args(tmp: Path, *extra: str, cluster: str = "tiny", workload: str = "wang20") -> list[str]:
    return ["run", "--cluster", cluster, "--workload", workload, "--policy", "ada-srsf"] + [
        "--out",
        str(tmp / "out"),
        "--quiet",
        *extra,
    ]


# ---------------------------------------------------------------------- nesting and aliases
@pytest.mark.parametrize("what", ["workload", "cluster", "config"])
def test_deeply_nested_json_is_one_line(tmp_path: Path, what: str) -> None:
    path = tmp_path / f"{what}.json"
    path.write_text(nested_json())
    if what == "config":
        args = ["run", "--config", str(path), "--out", str(tmp_path / "out")]
    else:
        args = run_args(tmp_path, **{what: str(path)})
    one_line_error(ddl(*args, cwd=tmp_path), path.name, "nested")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "text, words",
    [
        ("a: &a [*a]\n", "recursive alias"),
        (BILLION_LAUGHS, f"more than {MAX_ALIAS_NODES} nodes"),
        ("servers: " + "[" * DEPTH + "]" * DEPTH + "\n", "nested"),
    ],
    ids=["self-reference", "billion-laughs", "deep"],
)
def test_hostile_yaml_cluster_is_one_line(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    line = one_line_error(ddl(*run_args(tmp_path, cluster=str(path)), cwd=tmp_path), words)
    assert "c.yaml" in line
    assert not (tmp_path / "out").exists()


def test_yaml_bombs_are_refused_while_composing() -> None:
    with pytest.raises(InputError, match="line 1.*recursive alias"):
        load_yaml("a: &a [*a]\n", "f.yaml")
    with pytest.raises(InputError, match="aliases expand") as info:
        load_yaml(BILLION_LAUGHS, "f.yaml")
    assert info.value.line is not None and info.value.line <= 10
    with pytest.raises(InputError, match="nested"):
        load_json(nested_json(), "f.json")
    assert load_yaml("d: &d {x: 1}\n" + "".join(f"s{i}: *d\n" for i in range(100)), "f")


# ---------------------------------------------------------------------- numbers
@pytest.mark.parametrize(
    "setting",
    ["xi2=nan", "interference=nan", "alpha=nan", "rescale_delay=inf", "horizon=nan"],
)
def test_nan_and_inf_settings_write_nothing(tmp_path: Path, setting: str) -> None:
    one_line_error(ddl(*run_args(tmp_path, "--set", setting), cwd=tmp_path), "finite")
    assert not (tmp_path / "out").exists()


def test_pollux_with_infinite_interference_or_nan_contention(tmp_path: Path) -> None:
    for setting in ("interference=inf", "a=nan", "eta=inf"):
        args = run_args(tmp_path, "--set", setting, workload="luo24-physical")
        args[args.index("ada-srsf")] = "pollux"
        one_line_error(ddl(*args, cwd=tmp_path), "finite", setting.split("=")[0])


def test_seed_minus_one_on_the_command_line_and_in_toml(tmp_path: Path) -> None:
    one_line_error(ddl(*run_args(tmp_path, "--seed", "-1"), cwd=tmp_path), "seed", "≥ 0")
    cfg = tmp_path / "c.toml"
    cfg.write_text('cluster = "tiny"\nworkload = "wang20"\npolicy = "ada-srsf"\nseed = -1\n')
    line = one_line_error(ddl("run", "--config", str(cfg), "--out", "out", cwd=tmp_path))
    assert "c.toml, line 4, field 'seed'" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "option, value, field",
    [("--seed", "-1", "seed"), ("--sample", "-3", "sample"), ("--max-gpus", "0", "max_gpus")],
)
def test_trace_stats_bounds(tmp_path: Path, option: str, value: str, field: str) -> None:
    one_line_error(ddl("trace", "stats", "wang20", option, value, cwd=tmp_path), field)


def test_load_scale_beyond_the_time_range(tmp_path: Path) -> None:
    proc = ddl(*run_args(tmp_path, "--load-scale", "1e-300"), cwd=tmp_path)
    one_line_error(proc, "1e9", "--load-scale")
    assert not (tmp_path / "out").exists()


def test_arrival_beyond_the_time_range(tmp_path: Path) -> None:
    w = tmp_path / "w.csv"
    w.write_text("job_id,arrival,num_gpus,iterations,model\n0,1e16,1,50,resnet50\n")
    one_line_error(ddl(*run_args(tmp_path, workload=str(w)), cwd=tmp_path), "arrival", "1e9")


def test_sweep_grid_nan_writes_nothing(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'cluster = "tiny"\nworkload = "wang20"\n[sweep]\npolicies = ["ada-srsf"]\nseeds = 2\n'
        "[sweep.grid]\nxi2 = [0.5, nan]\n"
    )
    line = one_line_error(ddl("sweep", "--config", str(sweep), "--out", "out", cwd=tmp_path))
    assert "s.toml, line 7, field 'sweep.grid.xi2'" in line and "finite" in line
    assert not (tmp_path / "out").exists()


def test_lenient_numbers_in_files_and_options(tmp_path: Path) -> None:
    w = tmp_path / "w.json"
    w.write_text(
        '[{"job_id": 0, "arrival": 0, "num_gpus": "4", "iterations": 5, "model": "vgg16"}]'
    )
    one_line_error(ddl(*run_args(tmp_path, workload=str(w)), cwd=tmp_path), "num_gpus")
    proc = ddl("trace", "stats", "wang20", "--sample", "1_0", cwd=tmp_path)
    assert proc.returncode == 2 and "invalid integer value: '1_0'" in proc.stderr
    for args in (["run", "--seed", "١"], ["plot", "d", "--out", "p", "--max-gpus", "٦٤"]):
        proc = ddl(*args, cwd=tmp_path)  # Python's int() takes Arabic-Indic digits
        assert proc.returncode == 2 and "invalid integer value" in proc.stderr
    proc = ddl("trace", "stats", "wang20", "--load-scale", "nan", cwd=tmp_path)
    assert proc.returncode == 2 and "invalid number value: 'nan'" in proc.stderr


def test_trace_convert_without_durations_writes_nothing(tmp_path: Path) -> None:
    trace = tmp_path / "g.trace"
    trace.write_text("A\tcmd\tdir\t--steps\t0\t100\t1\t1\t-1\t0\n")
    out = tmp_path / "g.csv"
    proc = ddl("trace", "convert", str(trace), "--out", str(out), cwd=tmp_path)
    one_line_error(proc, "job 0", "--gavel-throughputs")
    assert not out.exists()


def test_gavel_infinite_throughput_is_named(tmp_path: Path) -> None:
    trace = tmp_path / "g.trace"
    trace.write_text("A\tcmd\tdir\t--steps\t0\t100\t1\t1\t-1\t0\n")
    thr = tmp_path / "thr.json"
    thr.write_text('{"v100": {\n"(\'A\', 1)": {"null": Infinity}}}')
    proc = ddl("trace", "stats", str(trace), "--gavel-throughputs", str(thr), cwd=tmp_path)
    line = one_line_error(proc, "thr.json, line 2", "Infinity is not a finite number")
    assert "give --gavel-throughputs" not in line


def test_run_pushed_beyond_the_time_range_is_one_line(tmp_path: Path) -> None:
    for sets in (["model=rar", "xi1=1e308"], ["a=1e9"]):  # ZeroDivisionError, overflow before
        sets_args = (x for s in sets for x in ("--set", s))
        args = run_args(tmp_path, *sets_args, "--sample", "8", cluster="wang20")  # 8 jobs: quick
        line = one_line_error(ddl(*args, cwd=tmp_path))
        assert "beyond the engine's time range" in line or "field 'a'" in line
        assert not (tmp_path / "out").exists()


def test_deeply_nested_toml_config_and_sweep_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("x = " + nested_json() + "\n")  # tomllib recursed into RecursionError
    for command in ("run", "sweep"):
        proc = ddl(command, "--config", str(path), "--out", "out", cwd=tmp_path)
        one_line_error(proc, "deep.toml", "nested")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------- names too long
LONG = "9" * 300  # longer than a file name may be: Path.exists() raises "File name too long"


@pytest.mark.parametrize(
    "case", ["cluster", "workload", "luo24", "policy-file", "out", "out-parent", "sweep-grid"]
)
def test_names_longer_than_a_file_name_are_one_line(tmp_path: Path, case: str) -> None:
    """A name of 300 characters is "no such file" (or an unusable --out), never an OSError."""
    (tmp_path / "jobs.csv").write_text("job_id,arrival,num_gpus,iterations,model\n1,0,1,10,vgg16\n")
    if case == "sweep-grid":
        (tmp_path / "s.toml").write_text(
            'cluster = "tiny"\nworkload = "jobs.csv"\n[sweep]\npolicies = ["ada-srsf"]\n'
            f'[sweep.grid]\nworkload = ["{LONG}"]\n'
        )
        args = ["sweep", "--config", "s.toml", "--out", str(tmp_path / "out"), "--quiet"]
    else:
        args = run_args(tmp_path, workload="jobs.csv")
        at = {"cluster": "--cluster", "workload": "--workload", "luo24": "--workload"}
        at |= {"policy-file": "--policy", "out": "--out", "out-parent": "--out"}
        value = {"luo24": f"luo24-{LONG}", "policy-file": f"{LONG}.py:make"}
        value["out-parent"] = str(tmp_path / LONG / "out")
        args[args.index(at[case]) + 1] = value.get(case, LONG)
    before = sorted(p.name for p in tmp_path.iterdir())
    one_line_error(ddl(*args, cwd=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
