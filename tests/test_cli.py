"""End-to-end tests of the ``ddlsched`` command line (run in a subprocess, as a user would)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.cli import main


def ddl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


WORKLOAD = """job_id,arrival,num_gpus,iterations,model
1,0,2,200,resnet50
2,1,4,100,vgg16
3,2.5,1,300,lstm-ptb
4,3,8,50,inception3
"""


@pytest.fixture
def workload(tmp_path: Path) -> Path:
    p = tmp_path / "jobs.csv"
    p.write_text(WORKLOAD)
    return p


def test_run_writes_contract_files(tmp_path: Path, workload: Path) -> None:
    out = tmp_path / "out"
    r = ddl(
        "run",
        "--cluster",
        "tiny",
        "--workload",
        str(workload),
        "--policy",
        "ada-srsf",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "avg_jct",
        "median_jct",
        "p95_jct",
        "p99_jct",
        "makespan",
        "avg_queueing",
        "gpu_util",
        "num_jobs",
    ):
        assert key in summary
    assert summary["num_jobs"] == 4
    assert 0.0 <= summary["gpu_util"] <= 1.0
    with open(out / "jobs.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "job_id",
        "arrival",
        "start",
        "finish",
        "jct",
        "queueing",
        "gpus",
        "placement",
        "preemptions",
    ]
    by_id = {int(r["job_id"]): r for r in rows}
    assert set(by_id) == {1, 2, 3, 4}
    # job 4 has 8 GPUs on a 2 × 4 cluster: it spans both servers
    labels = by_id[4]["placement"].split(";")
    assert len(labels) == 8 and {lab.split(":")[0] for lab in labels} == {"0", "1"}
    for r_ in rows:
        assert float(r_["jct"]) == pytest.approx(float(r_["finish"]) - float(r_["arrival"]))
        assert float(r_["queueing"]) == pytest.approx(float(r_["start"]) - float(r_["arrival"]))
    with open(out / "segments.csv") as f:
        segs = list(csv.DictReader(f))
    assert list(segs[0]) == ["job_id", "start", "end", "placement"]
    assert len(segs) == 4  # non-preemptive: one segment per job
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["policy"] == "ada-srsf" and cfg["seed"] == 0


def test_run_is_byte_identical_across_runs(tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        out = tmp_path / f"o{i}"
        assert (
            main(
                [
                    "run",
                    "--cluster",
                    "wang20",
                    "--workload",
                    "wang20",
                    "--policy",
                    "srsf1",
                    "--placement",
                    "rand",
                    "--seed",
                    "7",
                    "--set",
                    "iterations_per_task=1000",
                    "--quiet",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        outs.append(out)
    for name in ("summary.json", "jobs.csv", "segments.csv"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


def test_different_seed_changes_the_workload(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for out, seed in ((a, "1"), (b, "2")):
        assert (
            main(
                [
                    "run",
                    "--cluster",
                    "wang20",
                    "--workload",
                    "wang20",
                    "--policy",
                    "srsf1",
                    "--seed",
                    seed,
                    "--set",
                    "iterations_per_task=1000",
                    "--quiet",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
    assert (a / "jobs.csv").read_bytes() != (b / "jobs.csv").read_bytes()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--policy", "nope"], "unknown policy 'nope'"),
        (["--placement", "worst-fit"], "unknown placement 'worst-fit'"),
        (["--set", "kapa=2"], "did you mean 'kappa'"),
        (["--set", "iterations_per_task=0"], "iterations_per_task"),
        (["--set", "kappa"], "expected KEY=VALUE"),
    ],
)
def test_bad_options_give_one_line_and_status_2(tmp_path: Path, workload: Path, args, expected):
    base = {
        "--cluster": "tiny",
        "--workload": str(workload),
        "--policy": "ada-srsf",
        "--out": str(tmp_path / "o"),
    }
    for k, v in zip(args[::2], args[1::2], strict=True):
        base[k] = v
    argv = ["run"] + [x for kv in base.items() for x in kv]
    if "--set" in args:
        argv += ["--set", args[args.index("--set") + 1]]
    r = ddl(*argv)
    assert r.returncode == 2
    assert expected in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "summary.json").exists()


def test_malformed_workload_names_file_line_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,arrival,num_gpus,iterations,model\n1,0,2,100,vgg16\n2,-5,1,100,vgg16\n")
    r = ddl(
        "run",
        "--cluster",
        "tiny",
        "--workload",
        str(bad),
        "--policy",
        "srsf1",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.returncode == 2
    assert "bad.csv" in r.stderr and "line 3" in r.stderr and "arrival" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_field_and_never_fitting_job(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    missing.write_text("job_id,arrival,num_gpus,model\n1,0,2,vgg16\n")
    r = ddl(
        "run",
        "--cluster",
        "tiny",
        "--workload",
        str(missing),
        "--policy",
        "srsf1",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.returncode == 2 and "iterations" in r.stderr and "missing.csv" in r.stderr
    huge = tmp_path / "huge.csv"
    huge.write_text("job_id,arrival,num_gpus,iterations,model\n1,0,16,100,vgg16\n")
    r = ddl(
        "run",
        "--cluster",
        "tiny",
        "--workload",
        str(huge),
        "--policy",
        "srsf1",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.returncode == 2 and "num_gpus" in r.stderr and "Traceback" not in r.stderr


def test_malformed_cluster_file(tmp_path: Path, workload: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[[servers]]\nnum_gpus = -4\n")
    r = ddl(
        "run",
        "--cluster",
        str(bad),
        "--workload",
        str(workload),
        "--policy",
        "srsf1",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.returncode == 2 and "c.toml" in r.stderr and "num_gpus" in r.stderr
    r = ddl(
        "run",
        "--cluster",
        "no-such-cluster",
        "--workload",
        str(workload),
        "--policy",
        "srsf1",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.returncode == 2 and "wang20" in r.stderr


def test_cluster_file_used_for_run(tmp_path: Path, workload: Path) -> None:
    c = tmp_path / "c.yaml"
    c.write_text("servers:\n  - num_gpus: 8\n    count: 2\n")
    out = tmp_path / "o"
    assert (
        main(
            [
                "run",
                "--cluster",
                str(c),
                "--workload",
                str(workload),
                "--policy",
                "srsf1",
                "--placement",
                "ff",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with open(out / "jobs.csv") as f:
        rows = {int(r["job_id"]): r for r in csv.DictReader(f)}
    # first fit on a fresh 8-GPU server: job 1 (first arrival, 2 GPUs) takes 0:0 and 0:1
    assert rows[1]["placement"] == "0:0;0:1"


def test_list_and_help() -> None:
    r = ddl("list")
    assert r.returncode == 0
    for name in (
        "ada-srsf",
        "srsf1",
        "srsf2",
        "srsf3",
        "lwf",
        "adadual",
        "wang20",
        "wang20-table4",
        "wang20-table5",
        "wang20-fig5",
    ):
        assert name in r.stdout
    for cmd in ([], ["run"], ["reproduce"], ["list"]):
        h = ddl(*cmd, "--help")
        assert h.returncode == 0 and "usage" in h.stdout


def test_reproduce_writes_table_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "t5"
    r = ddl(
        "reproduce",
        "wang20-table5",
        "--variant",
        "coarse",
        "--seeds",
        "2",
        "--workers",
        "2",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    with open(out / "table.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:9] == [
        "experiment",
        "variant",
        "row",
        "metric",
        "paper",
        "ours_mean",
        "ours_ci_low",
        "ours_ci_high",
        "seeds",
    ]
    names = {r["row"] for r in rows}
    assert names == {"SRSF(1)", "SRSF(2)", "SRSF(3)", "Ada-SRSF"}
    ada = next(r for r in rows if r["row"] == "Ada-SRSF" and r["metric"] == "avg_jct")
    assert float(ada["paper"]) == pytest.approx(1098.57)
    assert float(ada["ours_ci_low"]) <= float(ada["ours_mean"]) <= float(ada["ours_ci_high"])
    assert ada["seeds"] == "2"
    assert (out / "table.md").read_text().count("(paper") >= 16
    png = out / "wang20-table5.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Ada-SRSF" in r.stdout and "paper 1098.6" in r.stdout
    # the PNG is named with the tables; every column states its unit
    assert f"wrote {out}/table.csv, table.md, wang20-table5.png" in r.stdout
    assert "| row | avg_jct (s) | median_jct (s) | p95_jct (s) | gpu_util (%) |" in r.stdout
    assert ada["unit"] == "s" and list(rows[0])[-1] == "unit"


def test_reproduce_unknown_experiment() -> None:
    r = ddl("reproduce", "wang21-table9", "--out", "/tmp/nowhere")
    assert r.returncode == 2 and "wang20-table4" in r.stderr


@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_ctrl_c_exits_cleanly_and_leaves_no_results(tmp_path: Path, command: str) -> None:
    import os
    import signal
    import time

    out = tmp_path / "out"
    if command == "run":  # the Python loop: an exact wang20 run takes many seconds there
        # (the compiled loop's own interruption: tests/test_taskkernel.py)
        args = [
            "run",
            "--cluster",
            "wang20",
            "--workload",
            "wang20",
            "--policy",
            "fifo-ff",
            "--set",
            "compiled=false",
            "--out",
            str(out),
        ]
    else:  # 30 exact runs on worker processes: tens of seconds
        args = ["reproduce", "wang20-fig5", "--out", str(out)]
    p = subprocess.Popen(
        [sys.executable, "-m", "ddlsched.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(4.0)  # past start-up (imports): the simulation (or its workers) is running
    os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130
    assert "Traceback" not in err
    assert err.strip() == "ddlsched: interrupted"
    assert not (out / "summary.json").exists() and not (out / "table.csv").exists()


def test_a_closed_stdout_is_no_traceback() -> None:
    # `ddlsched list | head`: the reader closes the pipe before ddlsched has written
    p = subprocess.Popen(
        [sys.executable, "-m", "ddlsched.cli", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        p.stdout.close()  # before the child has imported ddlsched and written anything
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    assert p.returncode == 141


def test_building_the_parser_imports_no_service_or_engine_module() -> None:
    """``ddlsched --help`` stays fast: the live service, the engine and the API load only when
    a command runs them (a parser that imported ``live.service`` cost 0.1 s more)."""
    import subprocess
    import sys

    code = (
        "import sys; from ddlsched.cli import build_parser; build_parser(); "
        "print(','.join(sorted(m for m in sys.modules if m.startswith('ddlsched'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = set(out.stdout.strip().split(","))
    assert "ddlsched.live.service.endpoints" in loaded
    for heavy in ("ddlsched.live.service.server", "ddlsched.live.service.remote", "ddlsched.core.simulator",
                  "ddlsched.api", "ddlsched.settings"):  # fmt: skip
        assert heavy not in loaded, heavy


def test_python_dash_m_ddlsched_is_the_cli(tmp_path: Path) -> None:
    """``python -m ddlsched`` runs the same program as ``ddlsched`` (it failed: no
    ``__main__``)."""
    import os

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    r = subprocess.run([sys.executable, "-m", "ddlsched", "list"], capture_output=True,
                       text=True, timeout=60, cwd=tmp_path, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "fifo" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "ddlsched", "run", "--policy"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
