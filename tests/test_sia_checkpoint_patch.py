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


# ------------------------------------------------------------------ run_ckpt.sh / batch3.sh
STAND_IN = """import os, sys
# a stand-in for the artifact's simulator: dies once if $DIE is set and no checkpoint exists,
# else prints its average JCT; it records its arguments and its checkpoint path
ckpt = os.environ["SIA_CHECKPOINT"]
with open(os.path.join(os.path.dirname(ckpt), "argv.txt"), "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if os.environ.get("DIE") and not os.path.exists(ckpt):
    open(ckpt, "w").close()
    sys.exit(3)
print("Average JCT:", 1234.5)
"""


def test_runner_scripts_resume_skip_and_record(tmp_path: Path) -> None:
    """``batch3.sh`` runs each spec through ``run_ckpt.sh``: a segment that dies is recorded
    with its code, the next run goes on (the checkpoint is the simulator's business), a
    finished run is skipped and its average JCT is appended to results.csv once."""
    ref = tmp_path / "ref"
    sim = ref / "sia-simulator"
    sim.mkdir(parents=True)
    for name in ("multi_simulator.py", "multi_simulator_unaware.py"):
        (sim / name).write_text(STAND_IN)
    (ref / "venv" / "bin").mkdir(parents=True)
    (ref / "venv" / "bin" / "python").symlink_to(sys.executable)
    batch = ROOT / "benchmarks" / "sia_patches" / "batch3.sh"
    env = {**os.environ, "SIA_REF": str(ref), "DIE": "1"}
    specs = ["saturn:workload-5:pollux-unaware", "philly:workload-1:sia"]
    for _ in range(3):
        subprocess.run([str(batch), *specs], env=env, timeout=60, capture_output=True)
    run = ref / "runs" / "saturn_workload-5_pollux-unaware"
    segments = (run / "segments.txt").read_text().splitlines()
    assert [s.split(" rc=")[-1] for s in segments if s.startswith("segment")] == ["3", "0"]
    assert segments[-1] == "rc=0"
    assert (ref / "results.csv").read_text().splitlines() == [
        "trace,workload,policy,avg_jct_s",
        "saturn,workload-5,pollux-unaware,1234.5",
        "philly,workload-1,sia,1234.5",
    ]
    argv = (run / "argv.txt").read_text().splitlines()
    assert argv[0] == (
        f"workloads/saturn/workload-5.csv --policy=pollux --interval=60 --policy_p_val=-1 "
        f"--output={run}/workload-5.log"
    )
    sia_argv = (ref / "runs" / "philly_workload-1_sia" / "argv.txt").read_text()
    assert "--policy=sia --policy_p_val=-0.5 --mip_lambda_a=0.01 --mip_lambda_n=1.1" in sia_argv
