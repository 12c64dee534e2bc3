"""A workload where no job ever waits (e.g. a Philly trace on the ``philly`` preset) makes every
queue order equal: ``run`` says so and ``trace stats`` gives the peak GPU demand that shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.workloads.trace_stats import format_trace_stats, peak_gpu_demand, trace_stats

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)

# three 8-GPU jobs: 100 s at 0, 50 s at 10, 30 s at 20 (all overlap during [20, 60))
PHILLY_CSV = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-03 00:00:20,30.0,8,240.0,vc1
2017-10-03 00:00:00,100.0,8,800.0,vc1
2017-10-03 00:00:10,50.0,8,400.0,vc2
"""
NOTE = "note: no job waited for GPUs, so the queue order did not matter"


def job(i: int, arrival: float, gpus: int, duration: float) -> JobSpec:
    return JobSpec(i, arrival, gpus, 0, TRACE, duration=duration)


def test_peak_demand_by_hand() -> None:
    # [0, 100) 1 GPU, [50, 150) 4, [100, 130) 2 (arrives as the first ends), [200, 210) 8
    jobs = [job(0, 0, 1, 100), job(1, 50, 4, 100), job(2, 100, 2, 30), job(3, 200, 8, 10)]
    assert peak_gpu_demand(jobs) == 8  # the lone 8-GPU job; 1 + 4 then 4 + 2 = 6 before
    assert peak_gpu_demand(jobs[:3]) == 6  # touching: job 0 frees its GPU before job 2 starts
    s = trace_stats(jobs)
    assert s["peak_gpu_demand"] == 8
    assert "peak demand   8 GPUs at once if no job waited" in format_trace_stats(s)
    assert "--load-scale" in format_trace_stats(s)
    no_durations = [JobSpec(0, 0.0, 2, 100, TRACE)]
    assert trace_stats(no_durations)["peak_gpu_demand"] is None


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    p = tmp_path / "philly.csv"
    p.write_text(PHILLY_CSV)
    return p


def test_trace_stats_prints_the_peak_demand(trace: Path, capsys) -> None:
    assert main(["trace", "stats", str(trace)]) == 0
    assert "peak demand   24 GPUs at once" in capsys.readouterr().out
    assert main(["trace", "stats", str(trace), "--load-scale", "0.1"]) == 0  # 10× sparser
    assert "peak demand   8 GPUs at once" in capsys.readouterr().out


def test_run_notes_when_no_job_waited(trace: Path, tmp_path: Path, capsys) -> None:
    args = ["run", "--workload", str(trace), "--policy", "fifo", "--quiet"]
    assert main([*args, "--cluster", "philly", "--out", str(tmp_path / "big")]) == 0
    out, err = capsys.readouterr()
    first, summary = out.splitlines()[:2]
    assert first == "ran fifo on backend duration: trace (duration) jobs"  # what ran
    assert summary.startswith("3 jobs  avg JCT 60.0 s")  # the summary line is unchanged
    assert NOTE in err and "--load-scale" in err and err.count("\n") == 1
    # 8 GPUs: the jobs wait for each other, no note
    assert main([*args, "--cluster", "tiny", "--out", str(tmp_path / "small")]) == 0
    assert NOTE not in capsys.readouterr().err
