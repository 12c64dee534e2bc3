"""Experiment and sweep tables: confidence intervals stay inside each metric's range, every
column states its unit (table.md header, table.csv's last column ``unit``, figure axes), and the
report's summary shows counts as integers."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from _report_runs import write_run

from ddlsched.experiments import EXPERIMENTS
from ddlsched.experiments.runner import (
    CI_NOTE,
    TABLE_COLUMNS,
    Experiment,
    Row,
    format_markdown,
    mean_ci,
    metric_range,
    metric_unit,
    table_row,
    write_table,
)
from ddlsched.report import build_report, load_runs

# mean 1/3, s = 0.577, n = 3: half-width t(0.975, 2) · s / √3 = 4.3027 / 3 ≈ 1.434
SKEWED = [0.0, 0.0, 1.0]
HALF = 4.302652729911275 * math.sqrt(1 / 3) / math.sqrt(3)


def test_unclipped_interval_is_symmetric_student_t() -> None:
    m, lo, hi = mean_ci(SKEWED)
    assert (m, lo, hi) == pytest.approx((1 / 3, 1 / 3 - HALF, 1 / 3 + HALF))
    assert lo < 0  # the defect: a time's interval reaching below zero


@pytest.mark.parametrize("metric", ["avg_queueing", "avg_jct", "makespan", "num_jobs"])
def test_times_and_counts_never_go_below_zero(metric: str) -> None:
    assert metric_range(metric) == (0.0, math.inf)
    m, lo, hi = mean_ci(SKEWED, bounds=metric_range(metric))
    assert lo == 0.0 and hi == pytest.approx(1 / 3 + HALF) and m == pytest.approx(1 / 3)


@pytest.mark.parametrize("metric", ["gpu_util", "extra_share", "optimal_share"])
def test_fractions_stay_in_zero_one(metric: str) -> None:
    assert metric_range(metric) == (0.0, 1.0)
    assert metric_range(metric, 100.0) == (0.0, 100.0)  # shown in %
    # mean 0.9667, half-width 4.3027 · 0.0577 / √3 = 0.1434: only the upper end is clipped
    m, lo, hi = mean_ci([0.9, 1.0, 1.0], bounds=metric_range(metric))
    assert hi == 1.0 and lo == pytest.approx(0.29 / 0.3 - 4.302652729911275 * 0.1 / 3)
    # both ends
    assert mean_ci([1.0, 1.0, 0.0], bounds=metric_range(metric))[1:] == (0.0, 1.0)


def test_unknown_metrics_are_not_clipped() -> None:
    assert metric_range("gap_small") == (-math.inf, math.inf)
    assert mean_ci(SKEWED, bounds=metric_range("gap_small"))[1] < 0


def test_experiment_rows_and_markdown_clip_and_say_so() -> None:
    exp = EXPERIMENTS["luo24-fig6a"]
    t = table_row(exp, "80 jobs", "FIFO", "avg_queueing", math.nan, SKEWED)
    assert t["ours_ci_low"] == 0.0 and t["ours_ci_high"] == pytest.approx(1 / 3 + HALF)
    md = format_markdown(exp, [t])
    assert "0.3 [0.0, 1.8]" in md
    assert CI_NOTE in md and "clipped to the metric's range" in md


def demo(units: dict[str, float] | None = None) -> Experiment:
    return Experiment(
        "demo",
        "",
        "tiny",
        "wang20",
        [Row("A", "fifo-ff")],
        ["avg_jct", "gpu_util", "makespan_over_lb"],
        units=units or {},
    )


def test_units_of_every_experiment_metric() -> None:
    luo = EXPERIMENTS["luo24-table3"]
    assert metric_unit(luo, "avg_jct") == "h" and metric_unit(luo, "avg_queueing") == "h"
    assert metric_unit(EXPERIMENTS["luo24-table2"], "makespan") == "s"
    assert metric_unit(EXPERIMENTS["pollux-artifact"], "avg_jct") == "s"
    assert metric_unit(EXPERIMENTS["wang20-table4"], "p95_jct") == "s"
    assert metric_unit(EXPERIMENTS["wang20-table4"], "gpu_util") == "fraction"
    assert metric_unit(EXPERIMENTS["yu22-fig4"], "planned_makespan") == "s"
    assert metric_unit(EXPERIMENTS["yu22-fig4"], "makespan_over_lb") == ""
    assert metric_unit(EXPERIMENTS["yu22-optgap"], "gap_small") == "fraction"
    # every time metric of every experiment has a unit
    for exp in EXPERIMENTS.values():
        for m in exp.metrics:
            if m.endswith(("_jct", "_queueing", "makespan")):
                assert metric_unit(exp, m) in ("s", "h"), (exp.name, m)


def test_markdown_headers_and_csv_carry_the_unit(tmp_path: Path) -> None:
    luo = EXPERIMENTS["luo24-table3"]
    header = format_markdown(luo, []).splitlines()
    rows = [table_row(luo, "v", "FIFO", m, 1.0, [1.0, 2.0]) for m in luo.metrics]
    md = format_markdown(luo, rows)
    assert "| row | avg_jct (h) | avg_jct_large (h) | avg_jct_small (h) | avg_queueing (h) |" in md
    assert header  # no rows: no table, still a title
    exp = demo()
    t = [table_row(exp, "default", "A", m, math.nan, [0.5, 0.7]) for m in exp.metrics]
    assert "| row | avg_jct (s) | gpu_util (%) | makespan_over_lb |" in format_markdown(exp, t)
    write_table(exp, t, tmp_path)
    with open(tmp_path / "table.csv") as f:
        reader = csv.DictReader(f)
        got = list(reader)
        assert reader.fieldnames == [*TABLE_COLUMNS, "unit"]  # the new column comes last
    assert [r["unit"] for r in got] == ["s", "fraction", ""]


def test_figure_axis_names_the_unit(tmp_path: Path) -> None:
    from ddlsched.experiments.plots import bar_chart

    exp = demo({"avg_jct": 1 / 3600})
    t = [table_row(exp, "default", "A", "avg_jct", math.nan, [0.5, 0.7])]
    import matplotlib.pyplot as plt

    seen = []
    real = plt.Axes.set_ylabel

    def spy(self, label, *a, **k):
        seen.append(label)
        return real(self, label, *a, **k)

    plt.Axes.set_ylabel = spy
    try:
        bar_chart(exp, t, tmp_path, "avg_jct")
    finally:
        plt.Axes.set_ylabel = real
    assert seen == ["avg jct (h)"]


def test_report_summary_shows_job_counts_as_integers(tmp_path: Path) -> None:
    for seed in range(2):
        write_run(tmp_path / "r" / f"s{seed}", seed=seed)
    text = build_report(load_runs([tmp_path / "r"]), "T")
    assert "<td>fifo</td><td>2</td><td>6</td>" in text
    assert "<td>6.0</td>" not in text
