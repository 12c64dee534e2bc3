"""``ddlsched plot``: write chosen figures of some runs as PNG/SVG/PDF files."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError, suggest
from ..parsing import NumberError, parse_float
from .figures import (
    FORMATS,
    gantt,
    groups,
    jct_cdf,
    policy_bars,
    queue_bars,
    queue_cdf,
    rho_cdf,
    save_figure,
)
from .figures import utilisation as utilisation_figure
from .load import load_runs

KINDS = ("jct-cdf", "queue-cdf", "util", "gantt", "bars", "rho-cdf", "queues")


def parse_kinds(text: str | None) -> list[str]:
    """``"jct-cdf,gantt"`` → the listed figure kinds (all when ``None`` or empty)."""
    if not text:
        return list(KINDS)
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            raise InputError(
                f"unknown figure kind '{k}'{suggest(k, KINDS)}; available: {', '.join(KINDS)}",
                field="--kind",
            )
    return list(dict.fromkeys(kinds))


def parse_window(text: str | None) -> tuple[float, float] | None:
    """``"100:500"`` → ``(100.0, 500.0)``: the Gantt chart's time window in seconds."""
    if not text:
        return None
    start, sep, end = text.partition(":")
    try:
        window = (parse_float(start), parse_float(end))
    except NumberError:
        window = None
    if not sep or window is None or not window[1] > window[0]:
        raise InputError(f"expected START:END with END > START, got '{text}'", field="--window")
    return window


def plot_runs(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    kinds: Sequence[str] = KINDS,
    fmt: str = "png",
    window: tuple[float, float] | None = None,
    max_gpus: int = 64,
) -> list[Path]:
    """Write each requested figure of the runs under ``paths`` into ``out_dir``; the paths.

    Gantt charts are per group of runs (the group's first run): ``gantt.FMT`` for one group,
    ``gantt-LABEL.FMT`` for several.
    """
    if fmt not in FORMATS:
        raise InputError(
            f"unknown format '{fmt}'{suggest(fmt, FORMATS)}; available: {', '.join(FORMATS)}",
            field="--format",
        )
    if max_gpus < 1:
        raise InputError("must be ≥ 1", field="--max-gpus")
    runs = load_runs(paths)
    out = Path(out_dir)
    written = []
    makers = {
        "jct-cdf": jct_cdf,
        "queue-cdf": queue_cdf,
        "rho-cdf": rho_cdf,
        "util": utilisation_figure,
        "bars": policy_bars,
        "queues": queue_bars,
    }
    for kind in kinds:
        if kind == "rho-cdf" and not any(r.rho.size for r in runs):
            if list(kinds) == list(KINDS):
                continue  # every kind by default: runs without fairness.csv skip this one
            raise InputError(
                "no run has fairness.csv (runs of this version write it; a user's rate "
                "model without alone times does not)",
                field="--kind",
            )
        if kind == "queues" and not any(r.summary.get("queues") for r in runs):
            if list(kinds) == list(KINDS):
                continue  # every kind by default: runs without --queues skip this one
            raise InputError("no run was made with --queues (per-queue metrics)", field="--kind")
        if kind == "gantt":
            grouped = groups(runs)
            for label, rs in grouped.items():
                stem = "gantt" if len(grouped) == 1 else f"gantt-{_slug(label)}"
                fig = gantt(rs[0], window=window, max_gpus=max_gpus)
                written.append(save_figure(fig, out / f"{stem}.{fmt}"))
        else:
            written.append(save_figure(makers[kind](runs), out / f"{kind}.{fmt}"))
    return written


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "run"
