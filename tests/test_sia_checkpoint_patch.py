"""benchmarks/sia_patches/checkpoint.py: its blocks go in at their anchors once, and the
instrumented loop really saves and resumes. A text of our own stands in for the artifact's
``multi_simulator*.py`` (ddlsched carries none of it)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "checkpoint_patch", ROOT / "benchmarks" / "sia_patches" / "checkpoint.py"
)
checkpoint = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checkpoint)

# The shape of the simulators' main loop: set-up, `while not cluster.all_complete():`, a step,
# then prints. Our stand-in cluster draws from both random generators at every step, and the
# run dies at the step named by $DIE_AT (as a session's end kills a process).
TEXT = """import os, random, sys
import numpy


class Cluster:
    def __init__(self, policy):
        self.policy: dict = policy
        self.current_time: int = 0
        self.trace = []

    def all_complete(self) -> bool:
        return self.current_time >= 600

    def step(self, seconds):
        self.current_time = self.current_time + seconds
        self.policy["rounds"] += 1
        self.trace.append((self.current_time, random.random(), float(numpy.random.rand())))


def main(args):
    random.seed(1)
    numpy.random.seed(1)
    policy = {"rounds": 0}
    cluster = Cluster(policy)
    while not cluster.all_complete():
        cluster.step(args.interval)
        if cluster.current_time == int(os.environ.get("DIE_AT", "-1")):
            os._exit(9)
    assert cluster.policy is policy  # one object, as the artifact's cluster and policy
    print(repr((cluster.trace, policy["rounds"])))


class Args:
    interval = 60


main(Args())
"""


def test_blocks_go_in_at_their_anchors_once_and_compile() -> None:
    out = checkpoint.instrument(TEXT)
    lines = out.splitlines()
    first = next(i for i, s in enumerate(lines) if "# ddlsched checkpoint (1/2)" in s)
    loop = next(i for i, s in enumerate(lines) if s.strip() == "while not cluster.all_complete():")
    assert first < loop  # the load comes before the loop
    second = next(i for i, s in enumerate(lines) if "# ddlsched checkpoint (2/2)" in s)
    assert lines[second - 1].strip() == "cluster.step(args.interval)"
    assert lines[second].startswith(" " * 8)  # inside the loop, at the step's indentation
    assert checkpoint.instrument(out) == out  # idempotent
    compile(out, "multi_simulator.py", "exec")


def _run(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_killed_run_resumes_from_its_checkpoint_with_the_same_result(tmp_path: Path) -> None:
    script = tmp_path / "sim.py"
    script.write_text(checkpoint.instrument(TEXT))
    whole = _run(script, {})
    assert whole.returncode == 0, whole.stderr
    expected = whole.stdout.splitlines()[-1]

    ckpt = tmp_path / "ckpt.pkl"
    env = {"SIA_CHECKPOINT": str(ckpt), "SIA_CHECKPOINT_EVERY": "0"}
    died = _run(script, {**env, "DIE_AT": "300"})
    assert died.returncode == 9  # killed at its fifth step, after that step's save
    assert "checkpoint at simulated time 300" in died.stdout
    assert ckpt.exists() and not Path(str(ckpt) + ".tmp").exists()

    resumed = _run(script, env)
    assert resumed.returncode == 0, resumed.stderr
    assert "# resumed from" in resumed.stdout and "at simulated time 300" in resumed.stdout
    # the same rounds, the same random draws: the saved generators' states were restored
    assert resumed.stdout.splitlines()[-1] == expected
