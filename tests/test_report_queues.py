"""Per-tenant report figures and tables of runs with ``--queues`` (issue #28 item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tenancy_engine import job, queues

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.results import write_result
from ddlsched.errors import InputError
from ddlsched.report import build_report, load_runs, plot_runs
from ddlsched.report.figures import queue_bars


def _runs(tmp_path: Path, anomaly: bool) -> list[Path]:
    """fifo and tiresias through ``ddlsched run --queues`` (two groups of one run each)."""
    from ddlsched.cli import main

    tmp_path.mkdir(parents=True, exist_ok=True)
    queues(tmp_path)  # writes queues.toml
    rows = ["arrival,num_gpus,duration,queue"]
    rows += [f"{29 * i},{1 + i % 2},{300 + 17 * (i % 5)},{'ab'[(i // 4) % 2]}" for i in range(16)]
    (tmp_path / "w.csv").write_text("\n".join(rows) + "\n")
    out = []
    for policy in ("fifo", "tiresias"):
        d = tmp_path / f"{policy}-{anomaly}"
        argv = ["run", "--cluster", "tiny", "--quiet", "--workload", str(tmp_path / "w.csv")]
        argv += ["--queues", str(tmp_path / "queues.toml"), "--policy", policy, "--out", str(d)]
        if anomaly:
            argv += ["--set", "sharing_anomaly=true"]
        assert main(argv) == 0
        out.append(d)
    return out


def test_the_report_has_a_tenant_table_with_each_queues_numbers(tmp_path: Path) -> None:
    dirs = _runs(tmp_path, anomaly=True)
    runs = load_runs(dirs)
    text = build_report(runs, "T")
    assert "<h2>Tenants</h2>" in text
    table = text.split("<h2>Tenants</h2>")[1].split("</table>")[0]
    for r in runs:
        for q, m in r.summary["queues"].items():
            row = f"<td>{q}</td><td>{m['jobs']}</td><td>{m['avg_jct'] / 3600:.1f}</td>"
            assert row in table, (q, row)
            assert f"<td>{m['sharing_anomaly'] / 3600:.1f}</td></tr>" in table


def test_plot_queues_writes_one_figure_and_panels_follow_the_data(tmp_path: Path) -> None:
    dirs = _runs(tmp_path, anomaly=False)
    (path,) = plot_runs(dirs, tmp_path / "figs", kinds=["queues"])
    assert path.name == "queues.png" and path.stat().st_size > 1000
    fig = queue_bars(load_runs(dirs))
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert "sharing anomaly (h)" not in titles and "average JCT (h)" in titles
    fig = queue_bars(load_runs(_runs(tmp_path / "x", anomaly=True)))
    assert "sharing anomaly (h)" in [ax.get_title() for ax in fig.axes if ax.get_visible()]
    # every bar of the JCT panel is a queue's mean JCT in hours
    runs = load_runs(dirs)
    ax = next(a for a in fig.axes if a.get_title() == "average JCT (h)")
    assert len(ax.patches) == 2 * len(runs[0].summary["queues"])


def test_runs_without_queues_skip_the_figure_by_default_and_refuse_it_by_name(
    tmp_path: Path,
) -> None:
    res = simulate(Cluster.homogeneous(1, 4), [job(0, 0.0, 1, 10.0, "")], "fifo")
    write_result(res, tmp_path / "plain")
    written = plot_runs([tmp_path / "plain"], tmp_path / "figs")
    assert "queues.png" not in {p.name for p in written}
    assert "<h2>Tenants</h2>" not in build_report(load_runs([tmp_path / "plain"]), "T")
    with pytest.raises(InputError, match="no run was made with --queues"):
        plot_runs([tmp_path / "plain"], tmp_path / "figs", kinds=["queues"])
