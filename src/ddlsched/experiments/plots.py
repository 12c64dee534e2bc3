"""Figures for reproductions (matplotlib, headless)."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from ..core.results import atomic_write_bytes


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless Agg backend, imported on the first figure (so
    that ``ddlsched list`` and ``--help`` do not pay for matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bar_chart(exp, table: list[dict], out: Path, metric: str = "avg_jct", suffix: str = "") -> Path:
    """Bars of ``metric`` per row (one group per variant) with 95 % CIs; paper values as marks."""
    variants = list(dict.fromkeys(t["variant"] for t in table))
    rows = [r.name for r in exp.rows]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(rows), 3.6))
    width = 0.8 / max(len(variants), 1)
    for i, v in enumerate(variants):
        sel = {t["row"]: t for t in table if t["variant"] == v and t["metric"] == metric}
        xs = [k + (i - (len(variants) - 1) / 2) * width for k in range(len(rows))]
        means = [sel[r]["ours_mean"] for r in rows]
        err = [
            [sel[r]["ours_mean"] - sel[r]["ours_ci_low"] for r in rows],
            [sel[r]["ours_ci_high"] - sel[r]["ours_mean"] for r in rows],
        ]
        ax.bar(xs, means, width, yerr=err, capsize=3, label=f"ours ({v})")
        if getattr(exp, "paper_by_variant", None):  # the paper's value per bar
            marks = [sel[r]["paper"] for r in rows]
            ax.scatter(
                xs,
                marks,
                marker="_",
                s=200,
                color="black",
                zorder=3,
                label="paper" if not i else None,
            )
    if getattr(exp, "paper_by_variant", None):
        ax.set_xticks(range(len(rows)), rows)
        return _save(fig, ax, exp, metric, out, suffix)
    paper = [
        next((t["paper"] for t in table if t["row"] == r and t["metric"] == metric), math.nan)
        for r in rows
    ]
    if any(not math.isnan(p) for p in paper):
        ax.scatter(
            range(len(rows)), paper, marker="_", s=600, color="black", zorder=3, label="paper"
        )
    ax.set_xticks(range(len(rows)), rows)
    return _save(fig, ax, exp, metric, out, suffix)


def line_chart(
    exp,
    table: list[dict],
    out: Path,
    metric: str = "avg_jct",
    xlabel: str = "",
    tick_every: int = 1,
) -> Path:
    """``metric`` against the rows (e.g. κ), one line per variant, with CI bands."""
    variants = list(dict.fromkeys(t["variant"] for t in table))
    rows = [r.name for r in exp.rows]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    xs = range(len(rows))
    for v in variants:
        sel = {t["row"]: t for t in table if t["variant"] == v and t["metric"] == metric}
        ax.plot(xs, [sel[r]["ours_mean"] for r in rows], marker="o", label=f"ours ({v})")
        ax.fill_between(
            xs,
            [sel[r]["ours_ci_low"] for r in rows],
            [sel[r]["ours_ci_high"] for r in rows],
            alpha=0.2,
        )
    shown = list(xs)[::tick_every]
    ax.set_xticks(shown, [rows[i] for i in shown])
    ax.set_xlabel(xlabel)
    return _save(fig, ax, exp, metric, out)


def series_chart(
    exp,
    table: list[dict],
    out: Path,
    metric: str,
    xlabel: str,
    xticks: list[str],
    suffix: str = "",
) -> Path:
    """``metric`` against the variants (e.g. cluster sizes), one line per row, with CI bands."""
    variants = list(dict.fromkeys(t["variant"] for t in table))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    xs = list(range(len(variants)))
    for r in exp.rows:
        sel = {t["variant"]: t for t in table if t["row"] == r.name and t["metric"] == metric}
        ax.plot(xs, [sel[v]["ours_mean"] for v in variants], marker="o", label=r.name)
        ax.fill_between(
            xs,
            [sel[v]["ours_ci_low"] for v in variants],
            [sel[v]["ours_ci_high"] for v in variants],
            alpha=0.2,
        )
    labels = xticks if len(xticks) == len(variants) else variants
    ax.set_xticks(xs, labels)
    ax.set_xlabel(xlabel)
    return _save(fig, ax, exp, metric, out, suffix)


def _save(fig, ax, exp, metric: str, out: Path, suffix: str = "") -> Path:
    """Label (with the metric's unit), title and legend, then write ``out/NAME[-SUFFIX].png``
    atomically."""
    from .runner import metric_unit

    unit = metric_unit(exp, metric)
    ax.set_ylabel(metric.replace("_", " ") + (f" ({unit})" if unit else ""))
    name = exp.name
    ax.set_title(name)
    ax.legend(fontsize=8)
    fig.tight_layout()
    stem = f"{name}-{suffix}" if suffix else name
    path = out / f"{stem}.png"
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=120, format="png")
    finally:
        _pyplot().close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path
