"""Small synthetic applications and workloads shared by the profile-policy tests."""

from __future__ import annotations

from pathlib import Path

from ddlsched.perf.profiles import Application
from ddlsched.workloads.io import read_workload


def toy_app(name: str = "toy", step: float = 1.0, max_local: int = 64) -> Application:
    """Nodes of up to 4 GPUs, step time ``step`` s at every local batch in [1, max_local], one
    validated batch size (32, so gain = 1): progress ``1/step`` per second alone; epochs end at
    progress 100, 200, 300."""
    placements = [((n,), float(b), step, 0.0) for n in range(1, 5) for b in (1, max_local)]
    validation = {32: [(100.0, 1.0, 1.0), (200.0, 1.0, 1.0), (300.0, 1.0, 1.0)]}
    return Application(name, placements, [], validation, max_epochs=3)


def toy_jobs(text: str, tmp_path: Path):
    p = tmp_path / "w.csv"
    p.write_text("name,time,application,num_replicas,batch_size\n" + text)
    return read_workload(p)
