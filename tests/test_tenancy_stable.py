"""``--until-stable`` when reclaims never settle (nothing finishes, Kueue's requeue back-off
not modelled): the cycles come back to an earlier state and stop there, said on stderr, instead
of running to the 1,000-cycle cap (issue #28)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.tenancy import cycle, decide, load_queues, load_snapshot

ROOT = Path(__file__).resolve().parents[1]


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    """benchmarks/bench_queues.py's snapshot at 20 ClusterQueues and 300 pending workloads
    (two cohorts, two flavors, borrowing, reclaimWithinCohort Any): its reclaims bounce."""
    spec = importlib.util.spec_from_file_location(
        "bench_queues", ROOT / "benchmarks" / "bench_queues.py"
    )
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("bench_queues", mod)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.write_inputs(tmp_path, 20, 300, False)


def test_a_repeating_state_ends_the_cycles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    q, w = _inputs(tmp_path)
    config = load_queues(q)
    snap = load_snapshot(w, config)
    d = decide(config, snap, until_stable=True)
    assert not d.stable and cycle.WATCH_AFTER < d.cycles < 200
    # the same decision run on: one more cycle from where it stopped changes something, and
    # without the watch the cycles only end at the cap
    monkeypatch.setattr(cycle, "WATCH_AFTER", 10**9)
    capped = decide(config, snap, until_stable=True, max_cycles=300)
    assert (capped.cycles, capped.stable) == (300, False)
    # a snapshot that settles is stable (and stays as it was)
    calm = decide(config, load_snapshot(w, config), until_stable=True, max_cycles=1)
    assert calm.cycles == 1


def test_the_command_says_so_on_stderr_and_prints_the_json(tmp_path: Path, capsys) -> None:
    q, w = _inputs(tmp_path)
    assert (
        main(["queues", "decide", "--queues", str(q), "--workloads", str(w), "--until-stable"]) == 0
    )
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert set(doc) == {"admitted", "preempted", "pending"}
    assert (
        out.err.startswith("ddlsched: note: no stable state: after ") and out.err.count("\n") == 1
    )
    assert main(["queues", "decide", "--queues", str(q), "--workloads", str(w)]) == 0
    assert capsys.readouterr().err == ""  # one cycle: nothing to say
