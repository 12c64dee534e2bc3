"""``ddlsched live --testbed NAME`` (issue #30): each worker runs inside its server's network
namespace (``ip netns exec``), rendezvous on testbed addresses, and the per-iteration channel
gates the jobs' all-reduces. Needs root and network namespaces (skips elsewhere, saying why);
every testbed is taken down in a ``finally`` and the test checks that no process is left in its
namespaces and no pid file of the run remains."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from test_testbed import NETNS_PROBLEM  # noqa: E402 - the same probe (root, ip/tc, netns, tbf)

from ddlsched.testbed import TestbedSpec, down, up
from ddlsched.testbed import commands as tb_commands
from ddlsched.testbed import state as tb_state

pytestmark = [
    pytest.mark.solo,
    pytest.mark.skipif(NETNS_PROBLEM is not None, reason=str(NETNS_PROBLEM)),
]
ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "testbed" / "allreduce_job.py"


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "runtime"
    monkeypatch.setenv("DDLSCHED_RUNTIME_DIR", str(d))
    return d


def _live(*args: str, runtime: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), DDLSCHED_RUNTIME_DIR=str(runtime))
    return subprocess.run(
        [sys.executable, "-m", "ddlsched", "live", "--quiet", *args],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def _jobs(path: Path, iters: int = 6) -> Path:
    lines = []
    for j, dur in ((0, 8.0), (1, 9.0)):
        cmd = [sys.executable, str(JOB), "--iters", str(iters), "--compute-s", "0.1",
               "--mb", "1", "--backend", "ring", "--timeout", "30"]  # fmt: skip
        lines += ["[[jobs]]", f"job_id = {j}", "arrival = 0.0", "gpus = 3",
                  f"command = {json.dumps(cmd)}", f"duration = {dur}", ""]  # fmt: skip
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_live_on_a_testbed_runs_workers_in_the_namespaces_gated(tmp_path, runtime):
    name = f"t{secrets.token_hex(2)}"
    up(TestbedSpec(name, servers=3, gpus_per_server=2, rate_bps=100_000_000))
    try:
        out = tmp_path / "run"
        res = _live(
            "--testbed", name, "--workload", str(_jobs(tmp_path / "jobs.toml")),
            "--policy", "fifo", "--gate", "srsf1", "--out", str(out), runtime=runtime,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr + res.stdout
        summary = json.loads((out / "summary.json").read_text())
        assert summary["num_jobs"] == 2 and summary["failed_jobs"] == 0
        # 3-GPU jobs on 2-GPU servers: fifo puts them on servers {0, 1} and {1, 2}; they share
        # server 1's uplink, so SRSF(1) makes asks wait; every iteration asked once
        assert summary["comm_asks"] == 12 and summary["comm_waits"] > 0
        addrs = tb_state.load_state(name).addresses
        logs = {
            (j, r): (out / "jobs" / str(j) / "attempt-0" / f"rank-{r}.log").read_text()
            for j in (0, 1)
            for r in range(3)
        }
        # the ring connected over testbed addresses, which only the namespaces reach: each
        # worker ran inside the namespace of the server the policy chose for it
        want = {(0, 0): 0, (0, 1): 0, (0, 2): 1, (1, 0): 1, (1, 1): 2, (1, 2): 2}
        for (j, r), server in want.items():
            assert f"rank {r}/3 ring at {addrs[server]}: 6 steps" in logs[j, r]
        config = json.loads((out / "config.json").read_text())
        assert config["testbed"] == name and config["gate"] == "srsf1"
        assert config["resolved"]["launcher"] == "testbed"
        # nothing left behind: no process in any namespace, no pid file of the run
        for ns in tb_state.load_state(name).server_ns:
            assert tb_commands.netns_pids(ns) == []
        assert not list((tb_state.testbed_dir(name) / tb_state.PIDS_DIR).glob("live-*"))
        assert not (out / "comm.sock").exists()
    finally:
        down(name)


def test_testbed_errors_name_their_option(tmp_path, runtime):
    jobs = str(_jobs(tmp_path / "jobs.toml"))
    res = _live("--testbed", "nosuch", "--workload", jobs, "--policy", "fifo", "--out",
                str(tmp_path / "a"), runtime=runtime)  # fmt: skip
    assert res.returncode == 2 and "--testbed" in res.stderr and "nosuch" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = _live("--testbed", "nosuch", "--cluster", "tiny", "--workload", jobs, "--policy",
                "fifo", "--out", str(tmp_path / "b"), runtime=runtime)  # fmt: skip
    assert res.returncode == 2 and "not both" in res.stderr
    res = _live("--local", "--cluster", "tiny", "--gate", "srsf9", "--workload", jobs,
                "--policy", "fifo", "--out", str(tmp_path / "c"), runtime=runtime)  # fmt: skip
    assert res.returncode == 2 and "--gate" in res.stderr and "srsf1" in res.stderr
    assert not (tmp_path / "c").exists()
