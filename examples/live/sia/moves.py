"""What Sia did to the jobs of a live run: per job the (GPU type, GPUs) of each start, and the
moves across GPU types and resizes within one (from the run's events.jsonl).

    python3 examples/live/sia/moves.py RUN_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def moves(run: Path) -> tuple[dict[int, list[tuple[str, int]]], int, int]:
    """(per job its starts' (type, GPUs), cross-type moves, resizes within a type)."""
    starts: dict[int, list[tuple[str, int]]] = {}
    for line in (run / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "start":
            starts.setdefault(e["job"], []).append((e.get("gpu_type", "?"), len(e["gpus"])))
    across = within = 0
    for seq in starts.values():
        for (t0, n0), (t1, n1) in zip(seq, seq[1:], strict=False):
            across += t0 != t1
            within += t0 == t1 and n0 != n1
    return starts, across, within


if __name__ == "__main__":
    starts, across, within = moves(Path(sys.argv[1]))
    for job, seq in sorted(starts.items()):
        print(f"job {job}: " + " -> ".join(f"{t}x{n}" for t, n in seq))
    print(f"moves across GPU types {across}, resizes within a type {within}")
