"""Trace and data-file readers refuse what the fuzzing found (docs/reliability.md ("Fuzzing every reader")): times
beyond the engine's range, counts beyond 64 bits, impossible Gavel scale factors, bad
interference files, each as one line naming file, line and field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.perf.profiles import read_pair_interference
from ddlsched.workloads.io import read_workload
from ddlsched.workloads.traces import filter_jobs, read_trace

PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n"
GAVEL = "A3C\tpython a3c.py\t/w\t--steps\t0\t{steps}\t2\t1.0\t-1\t{arrival}\n"


def _refused(call, *words: str) -> str:
    with pytest.raises(InputError) as e:
        call()
    msg = str(e.value)
    assert "\n" not in msg and "\r" not in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


def test_philly_arrivals_spanning_more_than_the_time_range(tmp_path: Path) -> None:
    p = tmp_path / "p.csv"
    p.write_text(PHILLY + "2017-10-03 10:00:00,100,1,100,a\n1990-01-01 00:00:00,100,1,100,b\n")
    # the 1990 job comes first: the 2017 one arrives 27.8 years later (within 1e9 s)
    assert [j.arrival for j in read_trace(p, "philly")] == [0.0, 875872800.0]
    p.write_text(PHILLY + "2017-10-03 10:00:00,100,1,100,a\n1960-01-01 00:00:00,100,1,100,b\n")
    _refused(lambda: read_trace(p, "philly"), "line 2", "field 'timestamp'", "1e9")


@pytest.mark.parametrize("gpus", ["9223372036854775808", "8e83"])  # fast path, row loop
def test_philly_gpu_count_beyond_64_bits(tmp_path: Path, gpus: str) -> None:
    p = tmp_path / "p.csv"
    p.write_text(PHILLY + f"2017-10-03 10:00:00,100,{gpus},100,a\n")
    _refused(lambda: read_trace(p, "philly"), "line 2", "field 'num_gpus'", "too large")


def test_tiresias_arrival_and_duration_limits(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    head = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
    p.write_text(head + "1,1,0,10,m,1e-7,0\n")
    _refused(lambda: read_trace(p, "tiresias"), "line 2", "field 'duration'", "1e-6")
    p.write_text(head + "1,1,2e9,10,m,10,0\n")
    _refused(lambda: read_trace(p, "tiresias"), "line 2", "field 'submit_time'", "1e9")


def test_generic_csv_time_limits(tmp_path: Path) -> None:
    p = tmp_path / "g.csv"
    p.write_text("arrival,num_gpus,duration\n0,1,10\n5,1,1e300\n")
    _refused(lambda: read_trace(p, "generic"), "line 3", "field 'duration'", "1e9")
    p.write_text("arrival,num_gpus,duration\n1e16,1,10\n")
    _refused(lambda: read_trace(p, "generic"), "line 2", "field 'arrival'", "1e9")


def test_workload_arrival_limit(tmp_path: Path) -> None:
    p = tmp_path / "w.csv"
    p.write_text("job_id,arrival,num_gpus,iterations,model\n0,1e16,1,20,resnet50\n")
    _refused(lambda: read_workload(p), "line 2", "field 'arrival'", "1e9")


def test_gavel_times(tmp_path: Path) -> None:
    thr = tmp_path / "thr.json"
    thr.write_text('{"v100": {"(\'A3C\', 2)": {"null": 1e-300}}}')
    g = tmp_path / "g.trace"
    g.write_text(GAVEL.format(steps=500, arrival=10))
    _refused(
        lambda: read_trace(g, "gavel", throughputs=thr), "line 1", "field 'total_steps'", "1e9"
    )
    g.write_text(GAVEL.format(steps=500, arrival="1e300"))
    _refused(lambda: read_trace(g, "gavel"), "line 1", "field 'arrival_time'", "1e9")


@pytest.mark.parametrize(("scale", "word"), [("0", "≥ 1"), ("9" * 30, "too large")])
def test_gavel_throughput_scale_factor(tmp_path: Path, scale: str, word: str) -> None:
    thr = tmp_path / "thr.json"
    thr.write_text(f'{{"v100": {{"(\'A3C\', {scale})": {{"null": 0.5}}}}}}')
    g = tmp_path / "g.trace"
    g.write_text(GAVEL.format(steps=500, arrival=10))
    _refused(lambda: read_trace(g, "gavel", throughputs=thr), "thr.json", "scale factor", word)


def test_negative_trace_start_moving_arrivals_out_of_range(tmp_path: Path) -> None:
    p = tmp_path / "g.csv"
    p.write_text("arrival,num_gpus,duration\n0,1,10\n")
    jobs = read_trace(p, "generic")
    assert filter_jobs(jobs, start=-5)[0].arrival == 5
    _refused(lambda: filter_jobs(jobs, start=-2e9), "arrival", "1e9", "--trace-start")


def test_pair_interference_file(tmp_path: Path) -> None:
    p = tmp_path / "xi.csv"
    p.write_bytes(b"\xef\xbb\xbfapp,other,xi\nbert,cifar10,1.5\n\n")  # BOM, blank line
    assert read_pair_interference(str(p)) == {("bert", "cifar10"): 1.5}
    p.write_text("app,other,xi\nbert,cifar10,1.5\nbert ,cifar10,2\n")
    _refused(lambda: read_pair_interference(str(p)), "line 3", "duplicate pair", "line 2")
    p.write_text("app,other,xi\nbert,,1.5\n")
    _refused(lambda: read_pair_interference(str(p)), "line 2", "field 'other'")
    p.write_bytes(b"app,other,xi\nbert,cifar10,1.5\xff\n")
    _refused(lambda: read_pair_interference(str(p)), "xi.csv", "UTF-8")


def test_command_line_errors_are_one_line(tmp_path: Path) -> None:
    for args in (["run", "--bogus"], ["run", "--load-scale", "nan"], []):
        r = subprocess.run(
            [sys.executable, "-m", "ddlsched.cli", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert r.returncode == 2 and r.stdout == ""
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("ddlsched: error:"), r.stderr
        assert "--help" in lines[0]


def test_sweep_names_the_grid_point_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_text(
        "job_id,arrival,num_gpus,iterations,model\n0,0,1,20,resnet50\n1,10,1,20,vgg16\n"
    )
    (tmp_path / "s.toml").write_text(
        'cluster = "tiny"\nworkload = "jobs.csv"\n[sweep]\npolicies = ["ada-srsf"]\n'
        "[sweep.grid]\nload_scale = [1, 1e-300]\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "sweep", "--config", "s.toml", "--out", "o"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "load_scale = 1e-300" in r.stderr and "1e9" in r.stderr
    assert not (tmp_path / "o").exists()
