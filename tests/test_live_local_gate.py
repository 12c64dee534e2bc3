"""``ddlsched live --local --gate`` without root (issue #30): the per-iteration channel on
plain local processes. Two 3-GPU jobs on 3 servers × 2 GPUs share server 1 (fifo places them
on {0, 1} and {1, 2}); under SRSF(1) their gated sections never overlap, and every iteration
asks once. Bounded in time; the jobs' processes are checked gone by the PIDs they wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _processes import alive

ROOT = Path(__file__).resolve().parents[1]

JOB = """\
import os, sys, time
from ddlsched import live
out, iters = sys.argv[1], int(sys.argv[2])
with open(os.path.join(out, f"pid-{live.job_id()}-{live.rank()}"), "w") as f:
    f.write(str(os.getpid()))
for i in range(iters):
    time.sleep(0.05)  # compute
    if live.rank() == 0:
        assert live.may_communicate(1e6)
        t0 = time.time()
        time.sleep(0.25)  # the all-reduce
        with open(os.path.join(out, f"comm-{live.job_id()}"), "a") as f:
            f.write(f"{t0} {time.time()}\\n")
        live.done_communicating()
    live.report(iteration=i + 1)
"""


def _alive(pid: int) -> bool:
    return alive(pid)


def test_local_gate_srsf1_serialises_allreduces_on_a_shared_server(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    job = tmp_path / "job.py"
    job.write_text(JOB)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('name = "c"\n[[servers]]\nnum_gpus = 2\ncount = 3\n')
    iters = 4
    lines = []
    for j, dur in ((0, 3.0), (1, 4.0)):
        cmd = [sys.executable, str(job), str(marks), str(iters)]
        lines += ["[[jobs]]", f"job_id = {j}", "arrival = 0.0", "gpus = 3",
                  f"command = {json.dumps(cmd)}", f"duration = {dur}", ""]  # fmt: skip
    jobs = tmp_path / "jobs.toml"
    jobs.write_text("\n".join(lines))
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env["DDLSCHED_RUNTIME_DIR"] = str(tmp_path / "runtime")
    res = subprocess.run(
        [sys.executable, "-m", "ddlsched", "live", "--quiet", "--local", "--cluster",
         str(cluster), "--workload", str(jobs), "--policy", "fifo", "--gate", "srsf1",
         "--out", str(out)],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr + res.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_jobs"] == 2 and summary["failed_jobs"] == 0
    assert summary["comm_asks"] == 2 * iters and summary["comm_waits"] > 0
    spans = sorted(
        tuple(map(float, line.split()))
        for j in (0, 1)
        for line in (marks / f"comm-{j}").read_text().splitlines()
    )
    assert len(spans) == 2 * iters
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end - 1e-3  # SRSF(1): one all-reduce at a time on server 1
    pids = [int(p.read_text()) for p in marks.glob("pid-*")]
    assert len(pids) == 6 and not any(_alive(p) for p in pids)
    assert not (out / "comm.sock").exists()
