"""One function per report figure, each returning a matplotlib ``Figure``.

Figures are built as plain ``Figure`` objects (no pyplot: no global state, nothing to close,
no display needed); saving uses the Agg renderer.

Figures have fixed sizes and are saved without dates or version stamps, so the same runs give
byte-identical files (``figure_bytes``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..core.results import atomic_write_bytes
from ..experiments.runner import mean_ci, metric_range
from .intervals import (
    Intervals,
    contended_intervals,
    segment_gpu_pairs,
    shared_intervals,
    utilisation_series,
)
from .load import RunData

DPI = 100
FORMATS = ("png", "svg", "pdf")
# bar-chart metrics: summary.json key → (axis label, scale)
BAR_METRICS = {
    "avg_jct": ("average JCT (s)", 1.0),
    "p95_jct": ("p95 JCT (s)", 1.0),
    "makespan": ("makespan (s)", 1.0),
    "gpu_util": ("GPU utilisation (%)", 100.0),
}
_CONTENDED_COLOR = "#d62728"


@dataclass(frozen=True)
class GanttView:
    """What a Gantt chart shows: GPU rows (indexes into ``run.gpus``) and a time window."""

    rows: np.ndarray
    t0: float
    t1: float
    truncated_rows: bool
    truncated_time: bool


def groups(runs: Sequence[RunData]) -> dict[str, list[RunData]]:
    """Runs by label (the config values that differ, seeds pooled), in first-seen order."""
    out: dict[str, list[RunData]] = {}
    for r in runs:
        out.setdefault(r.label, []).append(r)
    return out


def _colors(n: int) -> list:
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _short(label: str, limit: int = 60) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _legend_layout(labels: Sequence[str], width_in: float) -> tuple[int, float]:
    """Columns and height (inches) of a legend under the axes for these labels."""
    longest = max((len(_short(lab)) for lab in labels), default=1)
    ncol = max(1, min(len(labels), int(width_in * 12 // (longest + 4))))
    rows = -(-len(labels) // ncol) if labels else 0
    return ncol, 0.18 * rows + 0.1


def _figure_with_legend(
    labels: Sequence[str], width: float, height: float, ncols: int = 1
) -> tuple[Figure, np.ndarray, int, float]:
    """A figure of ``ncols`` axes, taller by the room a bottom legend for ``labels`` needs."""
    ncol, room = _legend_layout(labels, width)
    fig = Figure(figsize=(width, height + room), dpi=DPI)
    axes = fig.subplots(1, ncols, squeeze=False)
    return fig, axes[0], ncol, room


def _finish(fig: Figure, handles: list, ncol: int, room: float) -> Figure:
    """Legend under the axes (labels shortened), then a layout that leaves it its room."""
    if handles:
        for h in handles:
            h.set_label(_short(h.get_label()))
        fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, room / height, 1, 1))
    return fig


def _cdf_figure(runs: Sequence[RunData], attr: str, xlabel: str, title: str) -> Figure:
    grouped = groups(runs)
    fig, (ax,), ncol, room = _figure_with_legend(list(grouped), 6.4, 3.8)
    biggest = 0.0
    handles = []
    for color, (label, rs) in zip(_colors(len(grouped)), grouped.items(), strict=True):
        values = np.sort(np.concatenate([getattr(r, attr) for r in rs]))
        if len(values) == 0:
            continue
        biggest = max(biggest, float(values[-1]))
        y = np.arange(1, len(values) + 1) / len(values)
        name = f"{label} ({len(rs)} runs)" if len(rs) > 1 else label
        handles += ax.step(values, y, where="post", color=color, label=name)
    if biggest > 1000:
        ax.set_xscale("symlog", linthresh=10.0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    return _finish(fig, handles, ncol, room)


def jct_cdf(runs: Sequence[RunData]) -> Figure:
    """CDF of job completion times, one line per group of runs (seeds pooled)."""
    return _cdf_figure(runs, "jct", "job completion time (s)", "JCT CDF")


def rho_cdf(runs: Sequence[RunData]) -> Figure:
    """CDF of finish-time fairness ρ (``fairness.csv``), one line per group of runs."""
    return _cdf_figure(
        [r for r in runs if r.rho.size],
        "rho",
        "finish-time fairness ρ (JCT ÷ JCT on an equal 1/N share)",
        "Finish-time fairness CDF",
    )


def queue_cdf(runs: Sequence[RunData]) -> Figure:
    """CDF of queueing delays (start − arrival), one line per group of runs."""
    return _cdf_figure(runs, "queueing", "queueing delay (s)", "Queueing-delay CDF")


def utilisation(runs: Sequence[RunData], max_points: int = 2000) -> Figure:
    """Fraction of GPUs busy over time, one step line per run (a group shares a colour)."""
    grouped = groups(runs)
    fig, (ax,), ncol, room = _figure_with_legend(list(grouped), 6.4, 3.8)
    handles = []
    for color, (label, rs) in zip(_colors(len(grouped)), grouped.items(), strict=True):
        for i, r in enumerate(rs):
            t, u = utilisation_series(r, max_points)
            lines = ax.step(
                t,
                100 * u,
                where="post",
                color=color,
                alpha=1.0 if len(rs) == 1 else 0.5,
                linewidth=1.0,
                label=label,
            )
            if i == 0:
                handles += lines
    ax.set_xlabel("time (s)")
    ax.set_ylabel("busy GPUs (%)")
    ax.set_ylim(0, 105)
    ax.grid(True, alpha=0.3)
    ax.set_title("GPU utilisation over time")
    return _finish(fig, handles, ncol, room)


def gantt_view(
    run: RunData,
    window: tuple[float, float] | None = None,
    max_gpus: int = 64,
    max_bars: int = 4000,
) -> GanttView:
    """Rows and window of a bounded Gantt chart: the first ``max_gpus`` GPUs, and (unless a
    window is given) a window from the first segment holding at most ``max_bars`` bars."""
    rows = np.arange(min(len(run.gpus.labels), max(max_gpus, 1)))
    truncated_rows = len(rows) < len(run.gpus.labels)
    _, row, start, end = segment_gpu_pairs(run)
    keep = row < len(rows)
    start, end = start[keep], end[keep]
    if window is not None:
        t0, t1 = window
        return GanttView(rows, float(t0), float(t1), truncated_rows, False)
    if len(start) == 0:
        return GanttView(rows, 0.0, 1.0, truncated_rows, False)
    t0, t1 = float(start.min()), float(end.max())
    truncated_time = len(start) > max_bars
    if truncated_time:
        # the window ends where the (max_bars + 1)-th bar begins
        t1 = float(np.partition(start, max_bars)[max_bars])
    if t1 <= t0:
        t1 = t0 + 1.0
    return GanttView(rows, t0, t1, truncated_rows, truncated_time)


def _rects(row: np.ndarray, start: np.ndarray, end: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Rectangle vertices ``(n, 4, 2)``: x from start to end, y from row + lo to row + hi."""
    y0, y1 = row + lo, row + hi
    return np.stack(
        [
            np.stack([start, y0], axis=1),
            np.stack([end, y0], axis=1),
            np.stack([end, y1], axis=1),
            np.stack([start, y1], axis=1),
        ],
        axis=1,
    )


def _clip(iv_row, iv_start, iv_end, view: GanttView):
    sel = (iv_row < len(view.rows)) & (iv_end > view.t0) & (iv_start < view.t1)
    return (
        iv_row[sel],
        np.maximum(iv_start[sel], view.t0),
        np.minimum(iv_end[sel], view.t1),
    )


def gantt(
    run: RunData,
    window: tuple[float, float] | None = None,
    max_gpus: int = 64,
    max_bars: int = 4000,
    shared: Intervals | None = None,
    contended: Intervals | None = None,
) -> Figure:
    """Per-GPU timeline: which job ran where (colour per job), hatched where a GPU was shared,
    a red band where the GPU's all-reduce contended with another cross-server job."""
    view = gantt_view(run, window, max_gpus, max_bars)
    shared = shared_intervals(run) if shared is None else shared
    contended = contended_intervals(run) if contended is None else contended
    n = len(view.rows)
    fig = Figure(figsize=(9.0, min(1.2 + 0.18 * n, 12.0)), dpi=DPI)
    ax = fig.subplots()
    seg, row, start, end = segment_gpu_pairs(run)
    sel = (row < n) & (end > view.t0) & (start < view.t1)
    seg, row = seg[sel], row[sel]
    start, end = np.maximum(start[sel], view.t0), np.minimum(end[sel], view.t1)
    # job colours: tab20 without its two reds, which mark contention
    palette = np.array(matplotlib.colormaps["tab20"].colors)[
        [i for i in range(20) if i not in (6, 7)]
    ]
    jobs = run.seg_job[seg]
    face = palette[jobs % len(palette)]
    ax.add_collection(
        PolyCollection(
            _rects(row, start, end, 0.1, 0.9), facecolors=face, edgecolors="none", linewidths=0
        )
    )
    s_row, s_start, s_end = _clip(shared.key, shared.start, shared.end, view)
    if len(s_row):
        ax.add_collection(
            PolyCollection(
                _rects(s_row, s_start, s_end, 0.1, 0.9),
                facecolors="none",
                edgecolors="black",
                hatch="////",
                linewidths=0.4,
            )
        )
    c_row, c_start, c_end = _clip(contended.key, contended.start, contended.end, view)
    if len(c_row):
        ax.add_collection(
            PolyCollection(
                _rects(c_row, c_start, c_end, 0.62, 0.9),
                facecolors=_CONTENDED_COLOR,
                edgecolors="none",
                linewidths=0,
            )
        )
    if len(start) <= 60:
        for j, r, a, b in zip(jobs, row, start, end, strict=True):
            ax.text((a + b) / 2, r + 0.5, str(j), ha="center", va="center", fontsize=6)
    # server boundaries
    servers = run.gpus.server[view.rows]
    for y in np.flatnonzero(servers[1:] != servers[:-1]) + 1:
        ax.axhline(y, color="grey", linewidth=0.5)
    ax.set_xlim(view.t0, view.t1)
    ax.set_ylim(n, 0)
    step = max(1, int(np.ceil(n / 40)))
    ticks = np.arange(0, n, step)
    ax.set_yticks(ticks + 0.5, [run.gpus.labels[i] for i in view.rows[ticks]], fontsize=6)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("GPU (server:gpu)")
    notes = []
    if view.truncated_rows:
        notes.append(f"first {n} of {len(run.gpus.labels)} GPUs")
    if view.truncated_time:
        notes.append(f"t ∈ [{view.t0:.0f}, {view.t1:.0f}] s")
    ax.set_title(f"GPU timeline: {run.label}" + (f" ({'; '.join(notes)})" if notes else ""))
    ax.legend(
        handles=[
            Patch(facecolor="white", edgecolor="black", hatch="////", label="shared GPU"),
            Patch(facecolor=_CONTENDED_COLOR, label="all-reduce contention"),
        ],
        fontsize=7,
        loc="upper right",
        framealpha=0.9,
    )
    fig.tight_layout()
    return fig


def policy_bars(runs: Sequence[RunData], metrics: Sequence[str] = tuple(BAR_METRICS)) -> Figure:
    """Bars of summary metrics per group with 95 % Student-t confidence intervals over seeds."""
    grouped = groups(runs)
    labels = list(grouped)
    fig, axes, ncol, room = _figure_with_legend(
        [f"{i + 1}: {g}" for i, g in enumerate(labels)], 3.0 * len(metrics), 3.2, len(metrics)
    )
    colors = _colors(len(labels))
    several = any(len(v) > 1 for v in grouped.values())
    for ax, metric in zip(axes, metrics, strict=True):
        name, scale = BAR_METRICS.get(metric, (metric.replace("_", " "), 1.0))
        stats = [
            mean_ci(
                [scale * float(r.summary.get(metric, np.nan)) for r in grouped[g]],
                bounds=metric_range(metric, scale),
            )
            for g in labels
        ]
        means = [m for m, _, _ in stats]
        err = [[m - lo for m, lo, _ in stats], [hi - m for m, _, hi in stats]]
        xs = np.arange(len(labels))
        ax.bar(xs, means, 0.7, yerr=err if several else None, capsize=3, color=colors)
        ax.set_xticks(xs, [str(i + 1) for i in xs], fontsize=7)
        ax.set_title(name, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    counts = sorted({len(v) for v in grouped.values()})
    fig.suptitle(
        "error bars: 95 % CI over " + "/".join(map(str, counts)) + " runs per group"
        if several
        else "one run per group (no CI)",
        fontsize=9,
    )
    handles = [
        Patch(facecolor=c, label=f"{i + 1}: {g}")
        for i, (c, g) in enumerate(zip(colors, labels, strict=True))
    ]
    return _finish(fig, handles, ncol, room)


#: per-queue panels: summary.json ``queues`` key → (title, scale); hours for times
QUEUE_METRICS = {
    "avg_jct": ("average JCT (h)", 1 / 3600),
    "avg_queueing": ("average queueing (h)", 1 / 3600),
    "used_over_nominal": ("GPU-hours used ÷ nominal", 1.0),
    "gpu_hours_borrowed": ("borrowed GPU-hours", 1.0),
    "kueue_preemptions": ("preempted by Kueue", 1.0),
    "sharing_anomaly": ("sharing anomaly (h)", 1 / 3600),
}


def queue_value(m: dict, key: str) -> float:
    """One per-queue metric of ``summary.json`` ``queues`` (NaN where the run has none)."""
    if key == "used_over_nominal":
        nominal = float(m.get("gpu_hours_nominal") or 0.0)
        return float(m.get("gpu_hours_used", np.nan)) / nominal if nominal > 0 else np.nan
    if key == "kueue_preemptions":
        return float(sum(v for r, v in (m.get("preemptions") or {}).items() if r != "policy"))
    value = m.get(key)
    return np.nan if value is None else float(value)


def queue_bars(runs: Sequence[RunData]) -> Figure:
    """Per-tenant metrics of runs with ``--queues`` (``summary.json`` ``queues``): one panel
    per metric, queues along x, one bar per group of runs (mean over its seeds); the
    sharing-anomaly panel only when a run measured it (``--set sharing_anomaly=true``)."""
    grouped = {g: rs for g, rs in groups(runs).items() if any(r.summary.get("queues") for r in rs)}
    names = sorted(
        {q for rs in grouped.values() for r in rs for q in r.summary.get("queues") or {}}
    )
    metrics = [
        k
        for k in QUEUE_METRICS
        if k != "sharing_anomaly"
        or any(
            m.get("sharing_anomaly") is not None
            for rs in grouped.values()
            for r in rs
            for m in (r.summary.get("queues") or {}).values()
        )
    ]
    labels = list(grouped)
    cols = 3
    rows = -(-len(metrics) // cols)
    width = max(9.0, 0.35 * len(names) * max(1, len(labels)) * cols)
    ncol, room = _legend_layout(labels, width)
    fig = Figure(figsize=(width, 2.8 * rows + room), dpi=DPI)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    colors = _colors(len(labels))
    xs = np.arange(len(names))
    bar = 0.8 / max(1, len(labels))
    for ax, key in zip(axes, metrics, strict=False):
        title, scale = QUEUE_METRICS[key]
        for i, (g, color) in enumerate(zip(labels, colors, strict=True)):
            vals = []
            for q in names:
                per = [
                    queue_value(r.summary["queues"][q], key)
                    for r in grouped[g]
                    if q in (r.summary.get("queues") or {})
                ]
                per = [v for v in per if not np.isnan(v)]
                vals.append(scale * float(np.mean(per)) if per else np.nan)
            ax.bar(xs - 0.4 + bar * (i + 0.5), vals, bar, color=color)
        if key == "used_over_nominal":
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        if key == "sharing_anomaly":
            ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(xs, names, fontsize=7, rotation=45 if len(names) > 6 else 0, ha="right")
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle("per ClusterQueue (runs with --queues; mean over a group's seeds)", fontsize=9)
    handles = [Patch(facecolor=c, label=g) for c, g in zip(colors, labels, strict=True)]
    return _finish(fig, handles, ncol, room)


# ---------------------------------------------------------------------- saving
def figure_bytes(fig: Figure, fmt: str = "png") -> bytes:
    """The figure encoded as ``fmt`` with no dates or versions in it (same input, same bytes)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown figure format {fmt!r}")
    metadata: dict[str, object]
    if fmt == "png":
        metadata = {"Software": None}
    elif fmt == "svg":
        metadata = {"Date": None, "Creator": None}
    else:
        metadata = {"CreationDate": None, "Creator": None, "Producer": None}
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "ddlsched", "svg.fonttype": "path"}):
        fig.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue()


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write the figure (format from the extension) atomically."""
    path = Path(path)
    atomic_write_bytes(path, figure_bytes(fig, path.suffix.lstrip(".").lower()))
    return path
