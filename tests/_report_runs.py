"""Hand-made result directories for the report tests (the files ``ddlsched run`` writes)."""

from __future__ import annotations

import json
from pathlib import Path

# Hand-made run on the tiny cluster (2 servers × 4 GPUs):
#   job 1  0–10 on 0:0,0:1           (one server)
#   job 2  5–15 on 0:1,1:0           cross-server; shares 0:1 with job 1 during [5, 10)
#   job 3  8–20 on 0:2,1:1           cross-server; with job 2 on servers 0 and 1 during [8, 15)
#   job 5 10–12 on 0:0               starts as job 1 ends there: touching, not shared
#   job 4 20–30 on 0:0
#   job 6 40–50 on 0:3,1:3           cross-server but alone: no contention
SEGMENTS = [
    (1, 0, 10, "0:0;0:1"),
    (2, 5, 15, "0:1;1:0"),
    (3, 8, 20, "0:2;1:1"),
    (5, 10, 12, "0:0"),
    (4, 20, 30, "0:0"),
    (6, 40, 50, "0:3;1:3"),
]


def write_run(
    d: Path,
    segments=SEGMENTS,
    *,
    policy: str = "fifo",
    seed: int = 0,
    cluster: str | None = "tiny",
    summary: dict | None = None,
) -> Path:
    """A run directory with the files ``ddlsched run`` writes (arrival 0 for every job)."""
    d.mkdir(parents=True, exist_ok=True)
    config = {"policy": policy, "seed": seed, "version": "0.1.0", "workload": "hand"}
    if cluster is not None:
        config["cluster"] = cluster
    (d / "config.json").write_text(json.dumps(config))
    jobs = ["job_id,arrival,start,finish,jct,queueing,gpus,placement,preemptions"]
    for j, a, b, p in segments:
        jobs.append(f"{j},0,{a},{b},{b},{a},{len(p.split(';'))},{p},0")
    (d / "jobs.csv").write_text("\n".join(jobs) + "\n")
    segs = ["job_id,start,end,placement"] + [f"{j},{a},{b},{p}" for j, a, b, p in segments]
    (d / "segments.csv").write_text("\n".join(segs) + "\n")
    base = {"avg_jct": 10.0, "p95_jct": 20.0, "makespan": 50.0, "gpu_util": 0.5}
    (d / "summary.json").write_text(json.dumps(base | (summary or {})))
    return d
