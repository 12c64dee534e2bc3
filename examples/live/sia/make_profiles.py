"""Write the tiny application profiles of the Sia live example, in Sia's layout (docs/sia.md
"Profile directories"): one application, ``alpha``, measured on two GPU types of 2 GPUs per
server — ``a`` and ``b``, whose steps take three times ``a``'s. The numbers are made up (a
step of 0.01 s + 0.5 ms per sample of the local batch, × 3 on ``b``; 1 ms of sync per extra
GPU); nothing is taken from Sia's artifact. They are written on use (``run.sh`` and
``run_ray.py`` call this first), not kept in the repository.

    python3 examples/live/sia/make_profiles.py [DIR]   (default: examples/live/sia/profiles)
"""

from __future__ import annotations

import sys
from pathlib import Path

#: GPU type → its step-time factor
TYPES = {"a": 1.0, "b": 3.0}
GPUS_PER_SERVER = 2
LOCAL_BATCHES = (8, 16, 32)
VALIDATED = (32, 64, 128, 256)  # total batches with a validation curve
EPOCHS = 3


def step_sync(factor: float, gpus: int, local: int) -> tuple[float, float]:
    sync = 0.001 * (gpus - 1)
    return factor * (0.01 + 0.0005 * local) + sync, sync


def write(root: Path) -> Path:
    app = root / "alpha"
    app.mkdir(parents=True, exist_ok=True)
    for t, factor in TYPES.items():
        rows = [
            (g, a, *step_sync(factor, g, a))
            for g in range(1, GPUS_PER_SERVER + 1)
            for a in LOCAL_BATCHES
        ]
        (app / f"placements-{t}.csv").write_text(
            "placement,local_bsz,step_time,sync_time\n"
            + "".join(f"{g},{a},{s:.6f},{y:.6f}\n" for g, a, s, y in rows)
        )
        (app / f"scalability-{t}.csv").write_text(
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
            + "".join(f"1,{g},{a},{s:.6f},{y:.6f}\n" for g, a, s, y in rows)
        )
    for b in VALIDATED:
        (app / f"validation-{b}.csv").write_text(
            "progress,iteration,metric,grad_sqr,grad_var\n"
            + "".join(f"{100.0 * (e + 1)},{100 * (e + 1)},0.5,1.0,2.0\n" for e in range(EPOCHS))
        )
    return root


if __name__ == "__main__":
    out = write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "profiles")
    print(f"wrote {out}")
