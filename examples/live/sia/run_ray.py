"""Sia live on a Ray cluster whose nodes name their GPU types (docs/live.md "Sia live"): two
Ray nodes on this machine, each with 2 logical GPUs and an ``accelerator_type`` of ``a`` or
``b`` (as Ray sets it for real GPUs, e.g. ``accelerator_type:A100``), joined by
``ddlsched live --ray-address``. From the repository root, with Ray installed:

    python3 examples/live/sia/run_ray.py [OUT]

Then ``python3 examples/live/sia/moves.py OUT`` lists each job's types and GPU counts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ray.cluster_utils import Cluster

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_profiles import write  # noqa: E402  (the example's made-up profiles)


def main(out: str) -> int:
    write(Path("examples/live/sia/profiles"))
    ray = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0})
    try:
        for kind in ("a", "b"):
            ray.add_node(num_cpus=1, num_gpus=2, resources={f"accelerator_type:{kind}": 1})
        ray.wait_for_nodes()
        live = [
            "ddlsched", "live", "--ray-address", ray.address,
            "--workload", "examples/live/sia/jobs.toml", "--policy", "sia",
            "--set", "profiles=examples/live/sia/profiles",
            "--set", "interval=3", "--set", "rescale_delay=1",
            "--grace", "5", "--out", out, "--overwrite",
        ]  # fmt: skip
        done = subprocess.run(live, timeout=600, check=False)
        if done.returncode == 0:
            subprocess.run([sys.executable, "examples/live/sia/moves.py", out], check=False)
        return done.returncode
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "runs/live-sia-ray"))
