"""Self-contained HTML report: summary tables and every figure as an embedded PNG (data: URI).

The file needs no server and no network: open it in any browser. A small inline script records
how many images decoded (``<body data-images-loaded=N data-images-broken=M>``), which the
browser test reads back.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.results import atomic_write_text
from ..experiments.runner import mean_ci
from .figures import (
    QUEUE_METRICS,
    figure_bytes,
    gantt,
    groups,
    jct_cdf,
    policy_bars,
    queue_bars,
    queue_cdf,
    queue_value,
    rho_cdf,
    utilisation,
)
from .intervals import contended_intervals, shared_intervals
from .load import RunData, load_runs

MAX_GANTTS = 8
MAX_RUN_ROWS = 200
_TABLE_METRICS = (
    ("avg_jct", "avg JCT (s)", 1.0),
    ("p95_jct", "p95 JCT (s)", 1.0),
    ("makespan", "makespan (s)", 1.0),
    ("gpu_util", "GPU util (%)", 100.0),
)
_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; }
code { font-size: 0.9em; }
"""
_SCRIPT = """
window.addEventListener("load", function () {
  var imgs = document.images, ok = 0, bad = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; } else { bad++; }
  }
  document.body.dataset.imagesLoaded = ok;
  document.body.dataset.imagesBroken = bad;
});
"""


def write_report(
    paths: Sequence[str | Path], out: str | Path, title: str = "ddlsched report"
) -> Path:
    """Load the runs under ``paths`` and write one self-contained HTML report to ``out``."""
    runs = load_runs(paths)
    out = Path(out)
    atomic_write_text(out, build_report(runs, title))
    return out


def build_report(runs: Sequence[RunData], title: str = "ddlsched report") -> str:
    """The report's HTML text for ``runs`` (deterministic: same runs, same text)."""
    esc = html.escape
    grouped = groups(runs)
    shared = {id(r): shared_intervals(r) for r in runs}
    contended = {id(r): contended_intervals(r) for r in runs}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p>{len(runs)} run{'s' if len(runs) != 1 else ''} in {len(grouped)} "
        f"group{'s' if len(grouped) != 1 else ''} (runs that differ only in the seed form a "
        "group; ± is the half-width of the 95 % Student-t confidence interval).</p>",
        "<h2>Summary</h2>",
        _group_table(grouped),
    ]
    if any(r.summary.get("queues") for r in runs):
        parts += ["<h2>Tenants</h2>", _queue_table(grouped)]
    parts.append("<h2>Figures</h2>")
    figures = [
        (
            "bars",
            policy_bars(runs),
            "Summary metrics per group, error bars: 95 % confidence intervals across seeds, "
            "clipped to the metric's range (a time's never goes below 0).",
        ),
        ("jct-cdf", jct_cdf(runs), "Job completion time CDF (seeds of a group pooled)."),
        ("queue-cdf", queue_cdf(runs), "Queueing delay (first start − arrival) CDF."),
        ("util", utilisation(runs), "Fraction of the cluster's GPUs holding at least one job."),
    ]
    if any(r.rho.size for r in runs):
        figures.insert(
            3,
            (
                "rho-cdf",
                rho_cdf(runs),
                "Finish-time fairness ρ: JCT ÷ the JCT on an equal 1/N share of the cluster "
                '(docs/models.md "Fairness metrics"); ρ ≤ 1: at least its fair share.',
            ),
        )
    if any(r.summary.get("queues") for r in runs):
        figures.append(
            (
                "queues",
                queue_bars(runs),
                "Per tenant (ClusterQueue) of the runs with --queues: average JCT and "
                "queueing, GPU-hours used ÷ nominal quota (dashed: 1), borrowed GPU-hours, "
                "jobs preempted by Kueue (every reason), and HiveD's sharing anomaly where "
                "measured (queueing minus that on a private cluster of the nominal GPUs; "
                "> 0: the tenant waits longer than alone).",
            )
        )
    for label, rs in list(grouped.items())[:MAX_GANTTS]:
        r = rs[0]
        figures.append(
            (
                "gantt",
                gantt(r, shared=shared[id(r)], contended=contended[id(r)]),
                f"Per-GPU timeline of {label} ({_run_name(r)}): one colour per job; hatched: "
                "GPU shared by ≥ 2 jobs; red band: all-reduce contending with another "
                "cross-server job on the same server.",
            )
        )
    for kind, fig, caption in figures:
        parts.append(_figure_html(kind, fig, caption))
    if len(grouped) > MAX_GANTTS:
        parts.append(f"<p>Timelines shown for the first {MAX_GANTTS} groups only.</p>")
    parts += ["<h2>Runs</h2>", _run_table(runs, shared, contended)]
    parts += [f"<script>{_SCRIPT}</script>", "</body></html>", ""]
    return "\n".join(parts)


def _figure_html(kind: str, fig, caption: str) -> str:
    width, height = (int(round(v)) for v in fig.get_size_inches() * fig.dpi)
    data = base64.b64encode(figure_bytes(fig, "png")).decode("ascii")
    return (
        f'<figure class="{kind}"><img src="data:image/png;base64,{data}" '
        f'width="{width}" height="{height}" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _fmt_ci(values: list[float]) -> str:
    values = [v for v in values if np.isfinite(v)]
    if not values:
        return "–"
    m, lo, hi = mean_ci(values)
    if len(values) < 2:
        return f"{m:.1f}"
    return f"{m:.1f} ± {(hi - lo) / 2:.1f}"


def _fmt_count(counts: list[int]) -> str:
    """A count per run: the integer when every run has the same, else mean ± half-width."""
    if len(set(counts)) == 1:
        return str(counts[0])
    return _fmt_ci([float(c) for c in counts])


def _group_table(grouped: dict[str, list[RunData]]) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(name)}</th>" for _, name, _ in _TABLE_METRICS)
    rows = [f"<table><tr><th>group</th><th>runs</th><th>jobs</th>{head}</tr>"]
    for label, rs in grouped.items():
        cells = "".join(
            f"<td>{_fmt_ci([scale * float(r.summary.get(key, np.nan)) for r in rs])}</td>"
            for key, _, scale in _TABLE_METRICS
        )
        jobs = _fmt_count([len(r.jct) for r in rs])
        rows.append(f"<tr><td>{esc(label)}</td><td>{len(rs)}</td><td>{jobs}</td>{cells}</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _queue_table(grouped: dict[str, list[RunData]]) -> str:
    """Per tenant of each group with queues: the queue figure's numbers (mean ± CI over
    seeds)."""
    esc = html.escape
    head = "".join(f"<th>{esc(name)}</th>" for name, _ in QUEUE_METRICS.values())
    rows = [f"<table><tr><th>group</th><th>queue</th><th>jobs</th>{head}</tr>"]
    for label, rs in grouped.items():
        names = sorted({q for r in rs for q in r.summary.get("queues") or {}})
        for q in names:
            ms = [r.summary["queues"][q] for r in rs if q in (r.summary.get("queues") or {})]
            cells = "".join(
                f"<td>{_fmt_ci([scale * queue_value(m, key) for m in ms])}</td>"
                for key, (_, scale) in QUEUE_METRICS.items()
            )
            jobs = _fmt_count([int(m.get("jobs", 0)) for m in ms])
            rows.append(f"<tr><td>{esc(label)}</td><td>{esc(q)}</td><td>{jobs}</td>{cells}</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _run_name(run: RunData) -> str:
    return run.path.as_posix() + (f", seed {run.seed}" if run.seed is not None else "")


def _run_table(runs: Sequence[RunData], shared: dict, contended: dict) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(name)}</th>" for _, name, _ in _TABLE_METRICS)
    rows = [
        "<table><tr><th>run</th><th>group</th><th>seed</th><th>jobs</th>"
        f"{head}<th>shared GPU·s</th><th>contended GPU·s</th></tr>"
    ]
    for r in runs[:MAX_RUN_ROWS]:
        cells = "".join(
            f"<td>{scale * float(r.summary.get(key, np.nan)):.1f}</td>"
            for key, _, scale in _TABLE_METRICS
        )
        sh, co = shared[id(r)], contended[id(r)]
        rows.append(
            f"<tr><td><code>{esc(r.path.as_posix())}</code></td><td>{esc(r.label)}</td>"
            f"<td>{'' if r.seed is None else r.seed}</td><td>{len(r.jct)}</td>{cells}"
            f"<td>{float(np.sum(sh.end - sh.start)):.1f}</td>"
            f"<td>{float(np.sum(co.end - co.start)):.1f}</td></tr>"
        )
    rows.append("</table>")
    if len(runs) > MAX_RUN_ROWS:
        rows.append(f"<p>First {MAX_RUN_ROWS} of {len(runs)} runs listed.</p>")
    return "\n".join(rows)
