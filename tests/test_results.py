"""Metrics, atomic writers and the experiment runner's statistics."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ddlsched.core.results import JobRecord, atomic_write_text, summarize
from ddlsched.experiments.runner import mean_ci


def rec(jid: int, arrival: float, start: float, finish: float, gpus: int = 1) -> JobRecord:
    return JobRecord(jid, arrival, start, finish, gpus, "0:0", 0)


def test_summary_metrics_by_hand() -> None:
    jobs = [rec(1, 0, 0, 10), rec(2, 0, 5, 20, gpus=8), rec(3, 10, 10, 40), rec(4, 10, 12, 50)]
    # JCTs: 10, 20, 30, 40; queueing 0, 5, 0, 2; makespan 50 - 0
    s = summarize(jobs, busy_gpu_seconds=100.0, num_gpus=4)
    assert s["avg_jct"] == pytest.approx(25.0)
    assert s["median_jct"] == pytest.approx(25.0)
    # numpy linear percentile: position 0.95 * 3 = 2.85 → 30 + 0.85 * 10
    assert s["p95_jct"] == pytest.approx(38.5)
    assert s["makespan"] == pytest.approx(50.0)
    assert s["avg_queueing"] == pytest.approx(1.75)
    assert s["gpu_util"] == pytest.approx(100.0 / (4 * 50.0))
    assert s["num_jobs"] == 4
    assert s["avg_jct_large"] == pytest.approx(20.0)
    assert s["avg_jct_small"] == pytest.approx((10 + 30 + 40) / 3)


def test_atomic_write_leaves_old_file_on_interrupt(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")

    def boom(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new content")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]  # no temp file left


def test_atomic_write_replaces(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "x.csv"
    atomic_write_text(target, "a\n")
    atomic_write_text(target, "b\n")
    assert target.read_text() == "b\n"


def test_mean_ci_student_t() -> None:
    m, lo, hi = mean_ci([1.0, 2.0, 3.0])
    # sd = 1, t(0.975, df=2) = 4.302652729911275, half-width = t / sqrt(3)
    half = 4.302652729911275 / 3**0.5
    assert m == pytest.approx(2.0)
    assert lo == pytest.approx(2.0 - half)
    assert hi == pytest.approx(2.0 + half)
    assert mean_ci([5.0]) == (5.0, 5.0, 5.0)
