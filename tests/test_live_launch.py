"""The live process layer (issue #13): both launchers start real gangs with LIVE.md's
environment, report exit codes and progress, stop with SIGTERM then SIGKILL, refuse gangs that do
not fit, and leave no process behind. One private Ray instance serves the whole module."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ddlsched.core.cluster import Cluster
from ddlsched.live.launchers.base import (
    JobPoll,
    LaunchError,
    WorkerSpec,
    check_gang,
    read_last_json,
    with_job_gpus,
)
from ddlsched.live.launchers.local import LocalLauncher

PY = sys.executable
CLUSTER = Cluster.homogeneous(2, 2)


def children(pid: int) -> set[int]:
    """Live (non-zombie) child processes of ``pid``, from /proc."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            try:
                state = Path(f"/proc/{kid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                found.add(int(kid))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


BEFORE = children(os.getpid())


@pytest.fixture(scope="module", params=["subprocess", "ray"])
def launcher(request):
    if request.param == "ray":
        from ddlsched.live.launchers.ray import RayLauncher

        handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        lau = RayLauncher.local(CLUSTER, ready_timeout=20.0, call_timeout=20.0)
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    else:
        lau = LocalLauncher(CLUSTER)
    yield lau
    lau.shutdown()


def gang(tmp: Path, job_id: int, code: str, placement, args=(), env=None) -> list[WorkerSpec]:
    """Workers of one job running ``python -c code``; placement: (server, gpus) per rank."""
    n = len(placement)
    run = tmp / f"job{job_id}" / "attempt0"
    locals_seen: dict[int, int] = {}
    out = []
    for rank, (server, gpus) in enumerate(placement):
        local = locals_seen.get(server, 0)
        locals_seen[server] = local + 1
        out.append(
            WorkerSpec(
                job_id=job_id,
                rank=rank,
                world_size=n,
                local_rank=local,
                server=server,
                gpus=tuple(gpus),
                command=(PY, "-c", code, *args),
                env=env or {"DDLSCHED_ATTEMPT": "0"},
                cwd=str(tmp),
                log_path=str(run / f"rank{rank}.log"),
                run_dir=str(run),
            )
        )
    return out


def wait_exit(lau, job_id: int, timeout: float = 30.0) -> JobPoll:
    deadline = time.monotonic() + timeout
    while True:
        state = lau.poll(job_id)
        if state.all_exited:
            return state
        assert time.monotonic() < deadline, f"job {job_id} still running: {state}"
        time.sleep(0.1)


def wait_progress(lau, job_id: int, timeout: float = 30.0) -> JobPoll:
    deadline = time.monotonic() + timeout
    while True:
        state = lau.poll(job_id)
        if state.progress is not None:
            return state
        assert not state.all_exited, f"job {job_id} exited before reporting: {state}"
        assert time.monotonic() < deadline, f"job {job_id} never reported"
        time.sleep(0.1)


def wait_every_rank(tmp: Path, job_id: int, ranks: int, timeout: float = 30.0) -> None:
    """Until each of the job's ``ranks`` wrote its first progress line. The scripts below write
    it after installing their SIGTERM handler, so a stop sent afterwards finds every rank
    ready; ``poll``'s progress is rank 0's alone (a sleep after it raced rank 1 on a loaded
    machine: CI once read exit codes (7, -15))."""
    run = tmp / f"job{job_id}" / "attempt0"
    deadline = time.monotonic() + timeout
    while True:
        files = [run / f"progress.{r}.jsonl" for r in range(ranks)]
        if all(f.is_file() and f.read_text().endswith("\n") for f in files):
            return
        assert time.monotonic() < deadline, f"job {job_id}: not every rank reported"
        time.sleep(0.05)


DUMP_ENV = (
    "import json, os, sys\n"
    "json.dump(dict(os.environ), open(sys.argv[1] + '/env' + os.environ['RANK'] + '.json', 'w'))\n"
)


def test_env_contract(launcher, tmp_path):
    specs = gang(
        tmp_path,
        1,
        DUMP_ENV,
        [(0, [0]), (1, [2, 3])],
        args=(str(tmp_path),),
        env={"DDLSCHED_ATTEMPT": "0", "DDLSCHED_CHECKPOINT_DIR": str(tmp_path / "ck"), "RANK": "9"},
    )
    launcher.launch(1, specs)
    state = wait_exit(launcher, 1)
    assert state.exit_codes == (0, 0)
    envs = [json.loads((tmp_path / f"env{r}.json").read_text()) for r in range(2)]
    run = tmp_path / "job1" / "attempt0"
    for r, env in enumerate(envs):
        assert env["RANK"] == str(r)  # the launcher's RANK wins over the scheduler's env
        assert env["WORLD_SIZE"] == "2"
        assert env["LOCAL_RANK"] == "0"
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert 0 < int(env["MASTER_PORT"]) < 65536
        assert env["DDLSCHED_JOB_ID"] == "1"
        assert env["DDLSCHED_ATTEMPT"] == "0"
        assert env["DDLSCHED_CHECKPOINT_DIR"] == str(tmp_path / "ck")
        assert env["DDLSCHED_PROGRESS"] == str(run / f"progress.{r}.jsonl")
        assert env["DDLSCHED_STOP"] == str(run / "stop")
        assert env.get("CUDA_VISIBLE_DEVICES") == os.environ.get("CUDA_VISIBLE_DEVICES")
        assert not any(k.startswith("RAY_") and k not in os.environ for k in env)
    assert envs[0]["MASTER_PORT"] == envs[1]["MASTER_PORT"]
    # every worker sees all the job's GPUs (the launcher fills in the gang's), not its own
    assert (envs[0]["DDLSCHED_GPUS"], envs[1]["DDLSCHED_GPUS"]) == ("0,2,3", "0,2,3")
    assert (run / "rank0.log").exists()
    # resources are released: the same GPUs take a new gang at once
    launcher.launch(1, specs)
    assert wait_exit(launcher, 1).exit_codes == (0, 0)


def test_job_gpus_given_by_the_scheduler_are_kept(launcher, tmp_path):
    specs = [
        replace(w, job_gpus=(1, 3))
        for w in gang(tmp_path, 5, DUMP_ENV, [(0, [1]), (1, [3])], args=(str(tmp_path),))
    ]
    launcher.launch(5, specs)
    assert wait_exit(launcher, 5).exit_codes == (0, 0)
    got = [json.loads((tmp_path / f"env{r}.json").read_text())["DDLSCHED_GPUS"] for r in (0, 1)]
    assert got == ["1,3", "1,3"]


def test_job_gpus_must_hold_the_workers_own(tmp_path):
    (w,) = gang(tmp_path, 6, "pass", [(0, [0])])
    with pytest.raises(ValueError, match=r"job_gpus \(1,\) lack its GPUs \[0\]"):
        check_gang(CLUSTER, 6, [replace(w, job_gpus=(1,))])
    assert [x.job_gpus for x in with_job_gpus(gang(tmp_path, 6, "pass", [(0, [1]), (0, [0])]))] == [
        (0, 1),
        (0, 1),
    ]


PROGRESS = (
    "import json, os, sys, time\n"
    "with open(os.environ['DDLSCHED_PROGRESS'], 'a') as f:\n"
    "    for step in range(1, 6):\n"
    "        f.write(json.dumps({'time': time.time(), 'step': step, 'loss': 1.0 / step}) + '\\n')\n"
    "        f.flush()\n"
    '    f.write(\'{"time": 1, "st\')\n'  # a half-written last line is skipped
    "print('rank', os.environ['RANK'], 'done')\n"
    "sys.exit(0 if os.environ['RANK'] == '0' else 3)\n"
)


def test_progress_and_exit_codes(launcher, tmp_path):
    launcher.launch(2, gang(tmp_path, 2, PROGRESS, [(1, [2]), (1, [3])]))
    state = wait_exit(launcher, 2)
    assert state.exit_codes == (0, 3)
    assert state.progress is not None and state.progress["step"] == 5
    assert launcher.poll(2) == state  # a finished job keeps its last state
    assert "rank 1 done" in (tmp_path / "job2" / "attempt0" / "rank1.log").read_text()


# installs its handler, spawns a grandchild in its group, reports, then waits
STUBBORN = (
    "import json, os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "kid = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)'])\n"
    "open(os.environ['DDLSCHED_PROGRESS'], 'a').write(json.dumps({'step': 0, 'kid': kid.pid}) + '\\n')\n"
    "time.sleep(120)\n"
)
POLITE = (
    "import json, os, signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7 if os.path.exists(os.environ['DDLSCHED_STOP']) else 1))\n"
    "open(os.environ['DDLSCHED_PROGRESS'], 'a').write(json.dumps({'step': 0}) + '\\n')\n"
    "time.sleep(120)\n"
)


def test_stop_kills_after_grace(launcher, tmp_path):
    launcher.launch(3, gang(tmp_path, 3, STUBBORN, [(0, [0, 1])]))
    kid = wait_progress(launcher, 3).progress["kid"]
    assert alive(kid)
    t = time.monotonic()
    state = launcher.stop(3, grace=1.0)
    took = time.monotonic() - t
    assert state.exit_codes == (-signal.SIGKILL,)
    assert 1.0 <= took < 8.0
    assert (tmp_path / "job3" / "attempt0" / "stop").exists()
    deadline = time.monotonic() + 5
    while alive(kid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(kid), "the worker's grandchild survived the stop"
    assert not any(alive(p) for p in state.pids)


def test_stop_lets_a_polite_job_exit(launcher, tmp_path):
    launcher.launch(4, gang(tmp_path, 4, POLITE, [(0, [0]), (1, [2])]))
    wait_every_rank(tmp_path, 4, 2)
    t = time.monotonic()
    state = launcher.stop(4, grace=15.0)
    assert state.exit_codes == (7, 7)
    assert time.monotonic() - t < 8.0


# on SIGTERM: 3 s of "checkpointing", then exit 7 (stop file seen) or 1
SLOW_POLITE = (
    "import json, os, signal, sys, time\n"
    "def bye(*a):\n"
    "    time.sleep(3.0)\n"
    "    sys.exit(7 if os.path.exists(os.environ['DDLSCHED_STOP']) else 1)\n"
    "signal.signal(signal.SIGTERM, bye)\n"
    "with open(os.environ['DDLSCHED_PROGRESS'], 'a') as f:\n"  # closed here, not by a finaliser
    "    f.write(json.dumps({'step': 0}) + '\\n')\n"
    "time.sleep(120)\n"
)


def test_request_stop_returns_at_once(launcher, tmp_path):
    """``request_stop`` sends the stop file and SIGTERM and returns while the workers still
    checkpoint; ``poll`` then sees them exit; a second request and ``kill`` of a finished job
    do nothing; of a job never launched raise KeyError."""
    launcher.launch(11, gang(tmp_path, 11, SLOW_POLITE, [(0, [0]), (1, [2])]))
    launcher.launch(12, gang(tmp_path, 12, SLOW_POLITE, [(1, [3])]))
    wait_every_rank(tmp_path, 11, 2)
    wait_every_rank(tmp_path, 12, 1)
    t = time.monotonic()
    launcher.request_stop(11)
    assert time.monotonic() - t < 1.0
    polls = launcher.poll_many([11, 12])
    assert polls[11].exit_codes == (None, None)  # still checkpointing
    assert polls[12].running == 1
    assert (tmp_path / "job11" / "attempt0" / "stop").exists()
    state = wait_exit(launcher, 11)
    assert state.exit_codes == (7, 7)
    assert time.monotonic() - t >= 2.5
    assert launcher.running_jobs() == [12]
    launcher.request_stop(11)  # finished: nothing happens
    launcher.kill(11)
    assert launcher.poll(11) == state
    with pytest.raises(KeyError):
        launcher.request_stop(99)
    with pytest.raises(KeyError):
        launcher.kill(99)
    with pytest.raises(KeyError):
        launcher.poll_many([12, 99])
    launcher.kill(12)
    assert wait_exit(launcher, 12).exit_codes == (-signal.SIGKILL,)


def test_kill_returns_at_once_and_poll_reaps(launcher, tmp_path):
    """A job that ignores SIGTERM keeps running after ``request_stop``; ``kill`` returns at
    once, and ``poll`` then sees SIGKILL; the worker's grandchild is gone and its GPUs are free
    again."""
    launcher.launch(13, gang(tmp_path, 13, STUBBORN, [(0, [0, 1])]))
    state = wait_progress(launcher, 13)
    kid = state.progress["kid"]
    launcher.request_stop(13)
    time.sleep(0.5)
    assert launcher.poll(13).exit_codes == (None,)
    t = time.monotonic()
    launcher.kill(13)
    assert time.monotonic() - t < 1.0
    state = wait_exit(launcher, 13)
    assert state.exit_codes == (-signal.SIGKILL,)
    deadline = time.monotonic() + 5
    while alive(kid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(kid), "the worker's grandchild survived the kill"
    launcher.launch(13, gang(tmp_path, 13, PROGRESS, [(0, [0]), (0, [1])]))
    assert wait_exit(launcher, 13).exit_codes == (0, 3)


def test_gang_that_does_not_fit(launcher, tmp_path):
    launcher.launch(5, gang(tmp_path, 5, POLITE, [(0, [0, 1])]))
    t = time.monotonic()
    with pytest.raises(LaunchError, match="does not fit"):
        launcher.launch(6, gang(tmp_path, 6, POLITE, [(1, [2, 3]), (0, [1])]))
    assert time.monotonic() - t < 2.0
    assert launcher.running_jobs() == [5]
    with pytest.raises(LaunchError, match="already running"):
        launcher.launch(5, gang(tmp_path, 5, POLITE, [(1, [2])]))
    with pytest.raises(ValueError, match="not on server"):
        launcher.launch(6, gang(tmp_path, 6, POLITE, [(1, [0])]))
    launcher.stop(5, grace=5.0)
    # a command that cannot start: nothing of the gang is left
    bad = gang(tmp_path, 7, POLITE, [(0, [0]), (1, [2])])
    bad[1] = WorkerSpec(**{**bad[1].__dict__, "command": (str(tmp_path / "no-such-program"),)})
    with pytest.raises(LaunchError, match="no-such-program"):
        launcher.launch(7, bad)
    assert launcher.running_jobs() == []
    with pytest.raises(KeyError):
        launcher.poll(7)


def ppid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def test_ray_holds_the_gpus_and_reuses_its_hosts(launcher, tmp_path):
    """The launcher reserves every server's GPUs in Ray once (another Ray user cannot take
    them) and starts workers through hosts it started with it: no actor and no placement group
    is made per launch, and the same host process parents the workers of successive gangs."""
    if isinstance(launcher, LocalLauncher):
        pytest.skip("Ray only")
    import ray
    from ray.util.placement_group import (
        placement_group,
        placement_group_table,
        remove_placement_group,
    )

    other = placement_group([{"ddlsched_s1": 2.0}])
    try:
        with pytest.raises(ray.exceptions.GetTimeoutError):
            ray.get(other.ready(), timeout=1.0)
    finally:
        remove_placement_group(other)
    groups = len(placement_group_table())
    parents = []
    for _ in range(2):
        launcher.launch(8, gang(tmp_path, 8, STUBBORN, [(1, [2]), (1, [3])]))
        state = wait_progress(launcher, 8)
        parents.append({ppid(p) for p in state.pids})
        assert launcher.kill(8) is None
        assert wait_exit(launcher, 8).exit_codes == (-signal.SIGKILL, -signal.SIGKILL)
    assert parents[0] == parents[1]
    assert all("WorkerHost" in Path(f"/proc/{h}/cmdline").read_text() for h in parents[0])
    assert len(placement_group_table()) == groups


def test_ray_lost_host_is_replaced(launcher, tmp_path):
    """A worker host that dies (a lost node, locally): its workers read as LOST, and the next
    gang on that server starts on a new host. The orphaned worker is ended by its pid."""
    if isinstance(launcher, LocalLauncher):
        pytest.skip("Ray only")
    from ddlsched.live.launchers.base import LOST

    launcher.launch(10, gang(tmp_path, 10, POLITE, [(0, [1])]))
    state = wait_progress(launcher, 10)
    worker = state.pids[0]
    host = ppid(worker)
    assert "WorkerHost" in Path(f"/proc/{host}/cmdline").read_text()
    try:
        os.kill(host, signal.SIGKILL)
        assert wait_exit(launcher, 10).exit_codes == (LOST,)
    finally:
        os.killpg(worker, signal.SIGKILL)  # its own session: the group is the worker's
    launcher.launch(10, gang(tmp_path, 10, PROGRESS, [(0, [0, 1])]))
    state = wait_exit(launcher, 10)
    assert state.exit_codes == (0,)
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)


def test_shutdown_leaves_nothing(launcher, tmp_path):
    launcher.launch(9, gang(tmp_path, 9, STUBBORN, [(0, [0]), (1, [3])]))
    state = wait_progress(launcher, 9)
    deadline = time.monotonic() + 20
    while not all(p > 0 for p in state.pids) and time.monotonic() < deadline:
        state = launcher.poll(9)
    pids = [*state.pids, state.progress["kid"]]
    assert all(alive(p) for p in pids)
    launcher.shutdown(grace=0.5)
    launcher.shutdown()  # twice is fine
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        extra = children(os.getpid()) - BEFORE
        if not left and not extra:
            break
        time.sleep(0.2)
    assert not [p for p in pids if alive(p)]
    assert children(os.getpid()) - BEFORE == set()


def test_read_last_json(tmp_path):
    path = tmp_path / "p.jsonl"
    assert read_last_json(path) is None
    path.write_text('{"step": 1}\n[1, 2]\n\n{"step": 2}\n{"step": ')
    assert read_last_json(path) == {"step": 2}


CONNECT = """
import json, signal, sys, time
import ray
from ddlsched.live.launchers.base import WorkerSpec
from ddlsched.live.launchers.ray import RayLauncher

tmp = sys.argv[1]
ray.init(num_cpus=1, num_gpus=3, include_dashboard=False, log_to_driver=False,
         object_store_memory=128 * 1024 * 1024, configure_logging=False)
from ray.util.placement_group import placement_group, remove_placement_group
from ddlsched.live.launchers.base import LaunchError
handler = signal.getsignal(signal.SIGTERM)
other = placement_group([{"GPU": 1}])  # another Ray user holds a GPU: no reservation
ray.get(other.ready(), timeout=20)
try:
    RayLauncher.connect(ready_timeout=2, call_timeout=20)
    refused = ""
except LaunchError as e:
    refused = str(e)
remove_placement_group(other)
lau = RayLauncher.connect(ready_timeout=20, call_timeout=20)
other = placement_group([{"GPU": 1}])  # now the launcher holds all 3
try:
    ray.get(other.ready(), timeout=1)
    held = False
except ray.exceptions.GetTimeoutError:
    held = True
remove_placement_group(other)
out = {"servers": [s.num_gpus for s in lau.cluster().servers],
       "ip": ray.util.get_node_ip_address(), "refused": refused, "held": held}
code = ("import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1] + '/env.json', 'w'))")
spec = WorkerSpec(job_id=1, rank=0, world_size=1, local_rank=0, server=0, gpus=(1, 2),
                  command=(sys.executable, "-c", code, tmp), cwd=tmp, log_path=tmp + "/w.log")
lau.launch(1, [spec])
deadline = time.monotonic() + 30
while not (state := lau.poll(1)).all_exited and time.monotonic() < deadline:
    time.sleep(0.1)
out["codes"] = list(state.exit_codes)
lau.shutdown()
out["still_up"] = ray.is_initialized()  # connect() did not start Ray: it leaves it running
ray.shutdown()
print(json.dumps(out))
"""


def test_connect_to_a_ray_cluster_with_gpus(tmp_path):
    """``connect`` reads the cluster from Ray (one node with 3 declared GPUs), holds its GPUs
    (refused within ``ready_timeout`` while another Ray user holds one), pins the worker there,
    sets CUDA_VISIBLE_DEVICES to the chosen GPUs and MASTER_ADDR to the node's IP."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    env.pop("RAY_ADDRESS", None)
    res = subprocess.run(
        [PY, "-c", CONNECT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        start_new_session=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["servers"] == [3]
    assert "did not reserve the GPUs" in out["refused"]
    assert out["held"] is True
    assert out["codes"] == [0]
    assert out["still_up"] is True
    worker = json.loads((tmp_path / "env.json").read_text())
    assert worker["CUDA_VISIBLE_DEVICES"] == "1,2"
    assert worker["MASTER_ADDR"] == out["ip"]
    assert worker["DDLSCHED_GPUS"] == "1,2"
    assert worker["DDLSCHED_STOP"] == str(tmp_path / "stop")


def test_bench_live_runs_on_the_local_launcher(tmp_path):
    """benchmarks/bench_live.py (not a test: docs/performance.md) runs end to end with small
    numbers on plain subprocesses and writes its JSON."""
    import subprocess

    out = tmp_path / "bench.json"
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_live.py"
    args = ["--launcher", "local", "--launches", "2", "--stops", "2", "--jobs", "8"]
    res = subprocess.run(
        [PY, str(bench), *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "request_stop → poll sees all exited" in res.stdout
    (run,) = json.loads(out.read_text())["runs"]
    assert [d["width"] for d in run["launch"]] == [1, 4]
    assert all(d["to_exec"]["n"] == 2 for d in run["launch"])
    assert run["makespan_loop"]["ideal_s"] == 1.0
    assert run["makespan_live"]["jobs"] == 8 and run["makespan_live"]["ratio"] >= 1.0
    # one wave on 8 GPUs: no GPU stood idle while a job waited
    assert run["makespan_live"]["idle_while_waiting"]["n"] == 0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_bench_live_stop_worker_cannot_lose_its_sigterm(tmp_path):
    """bench_live's stop worker blocks SIGTERM before its ready file and takes it with
    sigtimedwait: with a Python handler, a SIGTERM that landed just before its ``time.sleep``
    ran the handler only after the sleep (about 1 stop in 2,000 hung; CI failed on it)."""
    import ast
    import subprocess

    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_live.py"
    (code,) = (
        ast.literal_eval(node.value)
        for node in ast.parse(bench.read_text()).body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "ON_TERM"
    )
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [PY, "-S", "-I", "-c", code, str(ready)], env={"RANK": "0"}, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 30
        while not (ready.with_suffix(".0").exists() and ready.with_suffix(".0").stat().st_size):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        # where it waits: in sigtimedwait (which unblocks SIGTERM only inside the wait), not
        # in a sleep that a handled SIGTERM interrupts only if it lands inside the syscall
        wchan = Path(f"/proc/{proc.pid}/wchan")
        while not wchan.read_text().startswith("do_sigtimedwait"):
            if wchan.read_text() in ("", "0"):
                pytest.skip("/proc/PID/wchan is hidden on this kernel")
            assert time.monotonic() < deadline, f"the worker waits in {wchan.read_text()}"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
