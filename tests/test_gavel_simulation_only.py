"""benchmarks/gavel_patches/simulation_only.py: the edits that let Gavel's simulator run without
its optional parts, made by anchor lines (ddlsched ships no Gavel code), on a stand-in file of
our own with the same anchor lines: the result compiles, runs without the optional modules,
is unchanged by a second pass, and a missing anchor is named."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "simulation_only", ROOT / "benchmarks/gavel_patches/simulation_only.py"
)
assert _spec is not None and _spec.loader is not None
so = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(so)

STAND_IN = """import logging
import os
import matrix_completion
from runtime.rpc import scheduler_server, scheduler_client


class Scheduler:
    def __init__(self):
        logger = logging.getLogger(__name__)
        logger.setLevel(logging.DEBUG)
        self.level = logger.level
"""


def test_edits_make_the_optional_imports_optional_and_are_idempotent(monkeypatch) -> None:
    out = so.edit(STAND_IN, so.EDITS["scheduler.py"])
    assert so.edit(out, so.EDITS["scheduler.py"]) == out
    assert out.count(so.MARK) == 3
    monkeypatch.setenv("GAVEL_LOG_LEVEL", "WARNING")
    ns: dict = {"__name__": "stand_in"}
    exec(compile(out, "stand_in", "exec"), ns)  # neither optional module exists here
    assert ns["matrix_completion"] is None and ns["scheduler_server"] is None
    assert ns["Scheduler"]().level == 30  # WARNING, at the anchor's indentation


def test_a_missing_anchor_is_named(tmp_path) -> None:
    (tmp_path / "scheduler.py").write_text(STAND_IN)
    (tmp_path / "throughput_estimator.py").write_text("import json\n")
    with pytest.raises(ValueError, match="import matrix_completion"):
        so.apply(tmp_path)
