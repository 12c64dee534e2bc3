"""benchmarks/fuzz_runs.py: random runs of each family, every one checked; a failure is
reported with its seed and policy, and an ``InputError`` counts as a refusal."""

from __future__ import annotations

import importlib.util
import random
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
    # a refusal names the runs it refused, so each can be rerun and checked
    assert "(seed 7 no-such, seed 8 no-such)" in out


@pytest.mark.parametrize("family", ["plain", "queues"])
def test_stop_and_restart_delays_reach_the_runs(family: str, monkeypatch: pytest.MonkeyPatch):
    """Half the runs draw stop and restart delays (a stop longer than a round found the
    engine's early-closed segment and its livelock), from a generator of their own."""
    real, seen = fuzz_runs.simulate, []

    def spy(cluster, jobs, policy, **kw):
        seen.append(kw["settings"])
        return real(cluster, jobs, policy, **kw)

    monkeypatch.setattr(fuzz_runs, "simulate", spy)
    ran, _, failures = fuzz_runs.fuzz(family, range(6), ["fifo"])
    assert (ran, failures) == (6, [])
    assert seen == [fuzz_runs.plain_delays(random.Random(s + 2)) for s in range(6)]
    assert any(not d for d in seen) and any(d.get("stop_delay", 0) > 60 for d in seen)
