"""Paper experiments as data, run by one runner (SPEC §8 ``experiments/``).

An ``Experiment`` names a cluster, a workload generator, rows (policy + placement + settings, with
the paper's numbers) and variants (e.g. exact vs coarse granularity). ``run_experiment`` runs
rows × variants × seeds (in parallel processes), aggregates means with 95 % t-intervals (clipped
to each metric's range: a time's never goes below 0), and
writes ``table.csv``, ``table.md`` and, where the paper has a figure, a PNG.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.results import atomic_write_text, csv_text
from ..parallel import map_in_processes
from ..policies.pollux_compile import compiling_in_background

TABLE_COLUMNS = [
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


@dataclass(frozen=True)
class Row:
    """One line of a paper's table: a policy configuration and the paper's numbers."""

    name: str
    policy: str
    placement: str | None = None
    settings: Mapping[str, object] = field(default_factory=dict)
    paper: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    cluster: str
    workload: str
    rows: Sequence[Row]
    metrics: Sequence[str]
    #: variant name → settings applied to every row (key ``cluster`` overrides the cluster)
    variants: Mapping[str, Mapping[str, object]] = field(default_factory=lambda: {"default": {}})
    #: variants that run only when named with ``--variant`` (e.g. luo24's ``paper-workload``:
    #: extra studies that leave the experiment's default table as it was)
    optional_variants: frozenset[str] = frozenset()
    #: variant → the rows it applies to (default: every row), e.g. a ξ variant only for the
    #: policies that share GPUs (a setting that has no effect on a run is an error)
    variant_rows: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: the figure(s): a path, several paths (one figure per knob), or None
    plot: Callable[[Experiment, list[dict], Path], Path | list[Path] | None] | None = None
    default_seeds: int = 5
    notes: str = ""
    #: experiments that are not rows × seeds of ``simulate_named`` (e.g. ``yu22-optgap``)
    #: compute their table themselves: ``custom(exp, seeds, workers, progress)`` returns the
    #: table rows (dicts with ``TABLE_COLUMNS``); ``run_experiment`` writes them as usual
    custom: Callable[..., list[dict]] | None = None
    #: per metric, a factor applied to our values in the table (e.g. 1/3600: hours, like the
    #: paper, whose numbers are then given in that unit)
    units: Mapping[str, float] = field(default_factory=dict)
    #: resolves the experiment's data (cluster, workload, extra settings) when it runs, e.g. to
    #: fall back to built-in data when a data directory is absent; gets ``reproduce --data``
    #: (None when not given) and returns (cluster, workload, settings, note). A setting
    #: ``data`` it returns is no run setting: ``{data}`` in a variant's workload is replaced by it
    #: (without one, a variant's ``builtin_workload`` replaces its workload)
    resolve: Callable[[str | None], tuple[str, str, Mapping[str, object], str]] | None = None
    #: metrics computed from a run's summary (e.g. GPU-hours per job), beside its own keys
    derived: Mapping[str, Callable[[Mapping[str, float]], float]] = field(default_factory=dict)
    #: the paper's numbers where they differ by variant (variant → row name → metric → value;
    #: e.g. one table per trace), taking precedence over ``Row.paper``
    paper_by_variant: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict)
    #: a closing section computed from the table (e.g. luo24-claim's verdict), appended to
    #: ``table.md`` and to what ``reproduce`` prints
    verdict: Callable[[Experiment, list[dict]], str] | None = None
    #: an estimate of one task's run time (any unit): tasks are handed to the workers
    #: longest first, so a few long runs do not form the tail; the table does not change
    task_cost: Callable[[Task], float] | None = None

    def rows_of(self, variant: str) -> list[Row]:
        """The rows that ``variant`` runs (``variant_rows``)."""
        only = self.variant_rows.get(variant)
        return [r for r in self.rows if only is None or r.name in only]

    def paper(self, variant: str, row: Row, metric: str) -> float:
        """The paper's value of ``metric`` for ``row`` in ``variant`` (NaN: none)."""
        by_row = self.paper_by_variant.get(variant, {}).get(row.name)
        source = row.paper if by_row is None else by_row
        return float(source.get(metric, float("nan")))

    def metric_value(self, summary: Mapping[str, float], metric: str) -> float:
        """``metric`` of one run: a summary key, else a ``derived`` metric."""
        if metric in summary or metric not in self.derived:
            return summary[metric]
        return self.derived[metric](summary)

    def default_variants(self) -> list[str]:
        """The variants a run without ``--variant`` computes: all but the optional ones."""
        return [v for v in self.variants if v not in self.optional_variants]


@dataclass(frozen=True)
class Task:
    """One simulation of an experiment: picklable, so it can run in another process."""

    cluster: str
    workload: str
    policy: str
    placement: str | None
    seed: int
    settings: tuple[tuple[str, object], ...]


def run_task(task: Task) -> dict[str, float]:
    """Run one simulation and return its summary (the unit of work of every runner)."""
    from ..api import simulate_named

    res = simulate_named(
        task.cluster,
        task.workload,
        task.policy,
        placement=task.placement,
        seed=task.seed,
        settings=dict(task.settings),
    )
    return res.summary


#: summary metrics that are fractions in [0, 1] (besides every ``*_share``)
FRACTION_METRICS = frozenset({"gpu_util"})
#: summary metrics that cannot be negative besides the times (``is_time_metric``): counts,
#: ratios of times
NON_NEGATIVE_METRICS = frozenset(
    {
        "num_jobs",
        "makespan_lower_bound",
        "makespan_over_lb",
        "plan_theta",
        "plan_kappa",
        "plan_horizon",
        "plan_extended",
        "preemptions",
        "gpu_hours_per_job",
    }
)
CI_NOTE = "95 % Student-t interval, clipped to the metric's range"


def metric_range(metric: str, scale: float = 1.0) -> tuple[float, float]:
    """The values ``metric`` (times ``scale``) can take: [0, scale] for fractions, [0, ∞) for
    times and counts, unbounded for anything else (e.g. a gap that may be negative)."""
    if metric in FRACTION_METRICS or metric.endswith("_share"):
        return 0.0, scale
    if metric in NON_NEGATIVE_METRICS or is_time_metric(metric) or metric.startswith("num_"):
        return 0.0, math.inf
    return -math.inf, math.inf


#: a factor in ``Experiment.units`` → the unit of a time scaled by it
TIME_UNITS = {1.0: "s", 1 / 60: "min", 1 / 3600: "h"}


def is_time_metric(metric: str) -> bool:
    """Whether ``metric`` is a time (seconds in ``summary.json``)."""
    return (
        metric.endswith(("_jct", "_queueing", "makespan"))
        or metric.startswith("avg_jct_")  # avg_jct_large, avg_jct_small
        or metric == "makespan_lower_bound"
    )


def is_percent_metric(metric: str) -> bool:
    """Whether tables show ``metric`` (a fraction) in %."""
    return metric == "gpu_util" or metric.endswith("_share") or metric.startswith("gap_")


def metric_unit(exp: Experiment, metric: str) -> str:
    """The unit of ``metric``'s values in ``table.csv``: ``s``/``h`` for times (after
    ``exp.units``), ``fraction`` for shares and utilisation, ``""`` for counts and ratios."""
    if is_time_metric(metric):
        f = exp.units.get(metric, 1.0)
        return next((u for k, u in TIME_UNITS.items() if math.isclose(k, f)), f"{1 / f:g} s")
    return "fraction" if is_percent_metric(metric) else ""


def mean_ci(
    values: Sequence[float],
    level: float = 0.95,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> tuple[float, float, float]:
    """Mean and two-sided Student-t confidence interval (a single value has a zero-width one),
    the interval clipped to ``bounds`` (``metric_range``: a time's interval never goes below 0,
    a utilisation's never above 1)."""
    arr = np.asarray(values, dtype=float)
    m = float(arr.mean())
    if len(arr) < 2:
        return m, m, m
    from scipy import stats  # imported on first use: `ddlsched list` stays fast

    half = float(stats.t.ppf(0.5 + level / 2, len(arr) - 1) * arr.std(ddof=1) / math.sqrt(len(arr)))
    lo, hi = bounds
    return m, max(m - half, lo), min(m + half, hi)


def run_experiment(
    exp: Experiment,
    seeds: int | None = None,
    out: str | Path | None = None,
    *,
    workers: int | None = None,
    variants: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_variant: Callable[[str, list[dict]], None] | None = None,
    data: str | None = None,
) -> list[dict]:
    """Run every row × variant × seed; return the aggregated table rows. With ``out``, also
    write the result folder all-or-nothing (``write_reproduction`` into a staging directory
    that replaces ``out`` in one rename). ``on_variant(v, rows)`` gets each variant's table
    rows as soon as its last run is done (``reproduce`` prints them then). ``data`` is
    ``reproduce --data``: the folder of the experiment's inputs (``Experiment.resolve``)."""
    n_seeds = seeds or exp.default_seeds
    if out is None:
        return _compute(exp, n_seeds, workers, variants, progress, on_variant, data)
    from ..core.rundir import output_dir

    with output_dir(out, overwrite=True) as staging:
        table = _compute(exp, n_seeds, workers, variants, progress, on_variant, data)
        write_reproduction(exp, table, staging, variants or exp.default_variants(), n_seeds, data)
    return table


def _compute(
    exp: Experiment,
    n_seeds: int,
    workers: int | None,
    variants: Sequence[str] | None,
    progress: Callable[[int, int], None] | None,
    on_variant: Callable[[str, list[dict]], None] | None = None,
    data: str | None = None,
) -> list[dict]:
    """The table of ``exp`` (rows × variants × seeds, or its custom computation)."""
    if data is not None and exp.resolve is None:
        from ..errors import InputError

        raise InputError(f"{exp.name} reads no data folder", field="--data")
    if exp.custom is not None:
        table = exp.custom(exp, n_seeds, workers, progress)
        if on_variant is not None:
            for v in dict.fromkeys(t["variant"] for t in table):
                on_variant(v, [t for t in table if t["variant"] == v])
        return table
    chosen = list(variants) if variants else exp.default_variants()
    base_cluster, base_workload, base_settings, note = exp.cluster, exp.workload, {}, ""
    if exp.resolve is not None:
        base_cluster, base_workload, base_settings, note = exp.resolve(data)
    tasks: list[tuple[str, Row, Task]] = []
    for v in chosen:
        for row in exp.rows_of(v):
            settings = {**base_settings, **exp.variants[v], **row.settings}
            cluster = str(settings.pop("cluster", base_cluster))
            root = settings.pop("data", None)
            builtin = settings.pop("builtin_workload", None)
            workload = str(settings.pop("workload", base_workload))
            if root is not None:
                workload = workload.replace("{data}", str(root))
            elif builtin is not None:  # no data folder: the variant's built-in stand-in
                workload = str(builtin)
            for seed in range(n_seeds):
                tasks.append(
                    (
                        v,
                        row,
                        Task(
                            cluster,
                            # "{n}" in a workload path: the n-th file (n = seed + 1)
                            workload.replace("{n}", str(seed + 1)),
                            row.policy,
                            row.placement,
                            seed,
                            tuple(sorted(settings.items())),
                        ),
                    )
                )
    results: list = [None] * len(tasks)
    left = {v: sum(1 for tv, _, _ in tasks if tv == v) for v in chosen}

    def variant_rows(v: str) -> list[dict]:
        rows = []
        for row in exp.rows_of(v):
            sums = [
                r
                for (tv, trow, _), r in zip(tasks, results, strict=True)
                if tv == v and trow is row
            ]
            for metric in exp.metrics:
                f = exp.units.get(metric, 1.0)
                values = [exp.metric_value(s, metric) * f for s in sums]
                paper = exp.paper(v, row, metric)
                rows.append(table_row(exp, v, row.name, metric, paper, values, note))
        return rows

    def arrived(i: int, r: dict) -> None:
        results[i] = r
        v = tasks[i][0]
        left[v] -= 1
        if left[v] == 0 and on_variant is not None:
            on_variant(v, variant_rows(v))

    # Pollux runs ahead and its search's kernel not cached: compiled beside the runs
    with compiling_in_background(any(t.policy == "pollux" for _, _, t in tasks)):
        map_in_processes(
            run_task,
            [t for _, _, t in tasks],
            workers,
            progress,
            on_result=arrived,
            cost=exp.task_cost,
        )
    return [t for v in chosen for t in variant_rows(v)]


def table_row(
    exp: Experiment,
    variant: str,
    row: str,
    metric: str,
    paper: float,
    values: Sequence[float],
    note: str = "",
) -> dict:
    """One line of an experiment's table: our mean and 95 % CI of ``values`` beside ``paper``."""
    m, lo, hi = mean_ci(values, bounds=metric_range(metric))
    return {
        "experiment": exp.name,
        "variant": variant,
        "row": row,
        "metric": metric,
        "paper": paper,
        "ours_mean": m,
        "ours_ci_low": lo,
        "ours_ci_high": hi,
        "seeds": len(values),
        "note": note,
    }


def _num(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.6g}"


def _header(exp: Experiment, metric: str) -> str:
    """A column header with its unit, e.g. ``avg_jct (h)``, ``gpu_util (%)``."""
    unit = "%" if is_percent_metric(metric) else metric_unit(exp, metric)
    return f"{metric} ({unit})" if unit else metric


def format_markdown(exp: Experiment, table: list[dict]) -> str:
    """One markdown table per variant: rows × metrics, ``ours [95 % CI] (paper)``."""
    parts = [markdown_head(exp, table)]
    for v in dict.fromkeys(t["variant"] for t in table):
        parts.append(markdown_variant(exp, table, v))
    parts.append(markdown_tail(exp, table))
    return "".join(parts)


def markdown_head(exp: Experiment, table: list[dict]) -> str:
    """The title, description, notes and data note of :func:`format_markdown`."""
    lines = [f"# {exp.name}", "", exp.description, ""]
    if exp.notes:
        lines += [exp.notes, ""]
    note = next((t.get("note") for t in table if t.get("note")), "")
    if note:
        lines += [f"**Data:** {note}", ""]
    return "\n".join(lines) + "\n"


def markdown_variant(exp: Experiment, table: list[dict], v: str) -> str:
    """The section of variant ``v`` of :func:`format_markdown` (``reproduce`` prints each one
    as soon as its runs are done)."""
    lines = [f"## variant: {v}", ""]
    lines.append("| row | " + " | ".join(_header(exp, m) for m in exp.metrics) + " |")
    lines.append("|---|" + "---|" * len(exp.metrics))
    for row in exp.rows:
        cells = []
        for metric in exp.metrics:
            t = next(
                (
                    x
                    for x in table
                    if x["variant"] == v and x["row"] == row.name and x["metric"] == metric
                ),
                None,
            )
            if t is None:
                cells.append("")
                continue
            scale, unit = (100.0, "%") if is_percent_metric(metric) else (1.0, "")
            cell = (
                f"{t['ours_mean'] * scale:.1f}{unit} "
                f"[{t['ours_ci_low'] * scale:.1f}, {t['ours_ci_high'] * scale:.1f}]"
            )
            if not math.isnan(t["paper"]):
                cell += f" (paper {t['paper'] * scale:.1f}{unit})"
            cells.append(cell)
        lines.append(f"| {row.name} | " + " | ".join(cells) + " |")
    seeds = table[0]["seeds"] if table else 0
    lines += ["", f"Mean over {seeds} seeds; in brackets the {CI_NOTE}.", ""]
    return "\n".join(lines) + "\n"


def markdown_tail(exp: Experiment, table: list[dict]) -> str:
    """The verdict section of :func:`format_markdown` (if the experiment has one)."""
    if exp.verdict is not None and table:
        return exp.verdict(exp, table) + "\n"
    return ""


#: the file of a ``reproduce`` folder that says what it holds (experiment, variants, seeds,
#: ``run_id``) and the SHA-256 of every other file
REPRODUCE_MARKER = "reproduce.json"


def reproduction_id(
    exp: Experiment, variants: Sequence[str], seeds: int, data: str | None = None
) -> str:
    """The id of a reproduction: hash of the experiment name, variants, number of seeds and
    ``--data`` folder if given (the worker count does not change results, so it is not part
    of it)."""
    from ..core.rundir import run_id_of

    doc: dict[str, object] = {"experiment": exp.name, "variants": list(variants), "seeds": seeds}
    if data is not None:
        doc["data"] = os.path.abspath(data)
    return run_id_of(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def write_reproduction(
    exp: Experiment,
    table: list[dict],
    out: Path,
    variants: Sequence[str],
    seeds: int,
    data: str | None = None,
) -> list[str]:
    """Write the table files and the PNG (``write_table``) and ``reproduce.json`` into ``out``
    (a staging directory); returns the names written."""
    from ..core.rundir import dumps_json, sha256_hex, write_file

    written = write_table(exp, table, out)
    doc = {
        "experiment": exp.name,
        "variants": list(variants),
        "seeds": seeds,
        "run_id": reproduction_id(exp, variants, seeds, data),
        "files": {p.name: sha256_hex(p.read_bytes()) for p in written},
    }
    write_file(out / REPRODUCE_MARKER, dumps_json(doc, REPRODUCE_MARKER).encode("utf-8"))
    return [p.name for p in written] + [REPRODUCE_MARKER]


def write_table(exp: Experiment, table: list[dict], out: Path) -> list[Path]:
    """Write ``table.csv``, ``table.md`` and the experiment's figure into ``out``; returns the
    paths written."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [
        [_num(t[c]) if isinstance(t[c], float) else t[c] for c in TABLE_COLUMNS]
        + [metric_unit(exp, t["metric"])]
        for t in table
    ]
    atomic_write_text(out / "table.csv", csv_text([*TABLE_COLUMNS, "unit"], rows))
    atomic_write_text(out / "table.md", format_markdown(exp, table))
    written = [out / "table.csv", out / "table.md"]
    if exp.plot is not None:
        p = exp.plot(exp, table, out)
        if isinstance(p, list):
            written.extend(p)
        elif p is not None:
            written.append(p)
    return written
