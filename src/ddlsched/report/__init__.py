"""Plots and self-contained HTML reports of result directories (``ddlsched plot``/``report``)."""

from .html import build_report, write_report
from .load import RunData, find_runs, load_run, load_runs
from .plot import KINDS, plot_runs

__all__ = [
    "KINDS",
    "RunData",
    "build_report",
    "find_runs",
    "load_run",
    "load_runs",
    "plot_runs",
    "write_report",
]
