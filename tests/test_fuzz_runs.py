"""benchmarks/fuzz_runs.py: random runs of each family, every one checked; a failure is
reported with its seed and policy, and an ``InputError`` counts as a refusal."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from test_sia_inputs import write_sia_profiles

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fuzz_runs", ROOT / "benchmarks" / "fuzz_runs.py")
fuzz_runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_runs)


def test_plain_runs_are_checked(capsys) -> None:
    assert fuzz_runs.main(["plain", "--seeds", "3:6", "--policies", "fifo,gavel-fifo"]) == 0
    assert "plain: 6 runs checked, 0 failed, 0 refused" in capsys.readouterr().out


def test_sia_runs_on_small_profiles(tmp_path: Path, capsys) -> None:
    """Without ``--profiles`` it writes the tests' small profiles; with them it reads those."""
    assert fuzz_runs.main(["sia", "--seeds", "1:3", "--policies", "sia,fifo"]) == 0
    assert "sia: 4 runs checked, 0 failed" in capsys.readouterr().out
    root = write_sia_profiles(tmp_path / "p", apps=("alpha", "beta"), epoch_progress=2e4)
    argv = ["sia", "--seeds", "1:2", "--policies", "gavel-tunedjobs", "--profiles", str(root)]
    assert fuzz_runs.main(argv) == 0
    assert "sia: 1 runs checked, 0 failed" in capsys.readouterr().out


def test_a_failure_names_its_seed_and_policy_and_a_refusal_is_counted(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    real = fuzz_runs.simulate

    def flaky(cluster, jobs, policy, **kw):
        if kw["seed"] == 8 and policy == "fifo":
            raise RuntimeError("unfinished jobs")
        return real(cluster, jobs, policy, **kw)

    monkeypatch.setattr(fuzz_runs, "simulate", flaky)
    assert fuzz_runs.main(["queues", "--seeds", "7:9", "--policies", "fifo,no-such"]) == 1
    out = capsys.readouterr().out
    assert "queues seed 8 fifo: RuntimeError: unfinished jobs" in out
    assert "queues: 2 runs checked, 1 failed, 2 refused" in out
