"""The per-iteration control channel (``live/channel.py``; docs/live.md "The communication
channel"): its answers are the simulator's gate's for the same state, over a real socket."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ddlsched import Cluster, JobSpec, ModelProfile, Policy, Simulator
from ddlsched.core.taskexec import TaskExecutor
from ddlsched.live.channel import CommChannel, CommState, CommTask
from ddlsched.perf.contention import LinearContention
from ddlsched.policies.gates import AdaDual, SrsfN
from ddlsched.policies.ordering import fifo

SRC = Path(__file__).resolve().parents[1] / "src"


class Fixed:
    """Placement by job id."""

    name = "fixed"

    def __init__(self, where: dict[int, tuple[int, ...]]) -> None:
        self.where = where

    def select(self, job, sim):
        gpus = self.where[job.job_id]
        return gpus if all(sim.fits(job, g) for g in gpus) else None


class Recorder(TaskExecutor):
    """The simulator's executor, logging every all-reduce start and end and every gate answer
    with the state it was given (a test-only subclass: the engine is unchanged)."""

    def __init__(self, model, gate) -> None:
        self.log: list[tuple] = []
        inner = gate

        class Asking:
            name = inner.name

            def blocker(_, ex, run):
                out = inner.blocker(ex, run)
                self.log.append((ex.sim.now, "ask", run.jid, run.servers, run.size, out))
                return out

            def start_watch(_, ex, run, block):
                return inner.start_watch(ex, run, block)

        super().__init__(model, Asking(), shortcuts=False)

    def _comm_start(self, r) -> None:
        self.log.append((self.sim.now, "start", r.jid, r.servers, r.size, None))
        super()._comm_start(r)

    def _comm_done(self, r, ver) -> None:
        if ver == r.comm_ver:
            self.log.append((self.sim.now, "end", r.jid, r.servers, r.size, None))
        super()._comm_done(r, ver)


def _simulated(gate, seed: int):
    import random

    rnd = random.Random(seed)
    cluster = Cluster.homogeneous(4, 2)
    jobs, where = [], {}
    for j in range(8):
        servers = rnd.sample(range(4), 2)
        where[j] = (2 * servers[0] + j % 2, 2 * servers[1] + j % 2)
        size = rnd.choice([20, 50, 100, 300])
        m = ModelProfile(f"m{j}", size, 1000.0, 16, rnd.uniform(0.01, 0.05), 0.02)
        jobs.append(JobSpec(j, rnd.uniform(0, 0.2), 2, rnd.randint(3, 8), m))
    model = LinearContention(a=1e-3, b=1e-9, eta=0.5e-9)
    ex = Recorder(model, gate)
    policy = Policy("t", fifo, Fixed(where), gate=gate)
    Simulator(cluster, jobs, policy, ex).run()
    return ex.log, model


@pytest.mark.parametrize("gate", [SrsfN(1), SrsfN(2), AdaDual()], ids=lambda g: g.name)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_channel_state_answers_as_the_simulators_gate(gate, seed):
    """Replay a simulated run's all-reduce starts and ends into the channel's ``CommState``
    at the simulator's instants: every gate answer the simulator got, the channel's state
    gives too (the same gate object, its fluid model of remaining bytes the simulator's)."""
    log, model = _simulated(gate, seed)
    now = [0.0]
    state = CommState(4, model, clock=lambda: now[0])
    tasks: dict[int, CommTask] = {}
    asks = refused = 0
    for t, what, jid, servers, size, answer in log:
        now[0] = t
        task = tasks.setdefault(jid, CommTask(jid, tuple(servers)))
        if what == "start":
            task.size = size
            state.start(task)
        elif what == "end":
            state.end(task)
        else:
            task.size = size
            assert gate.blocker(state, task) == answer, (t, jid)
            asks += 1
            refused += answer >= 0
    assert asks > 8 and refused > 0  # the runs did contend


def _ask(sock: socket.socket, doc: dict) -> dict:
    sock.sendall(json.dumps(doc).encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(4096)
        assert chunk, "channel closed"
        buf += chunk
    return json.loads(buf)


def _connect(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5.0)
    s.connect(path)
    return s


def test_srsf1_over_the_socket_holds_a_second_job_until_the_first_is_done(tmp_path):
    path = str(tmp_path / "comm.sock")
    with CommChannel(path, SrsfN(1), num_servers=3) as ch:
        ch.register(0, [0, 1], svc=5.0)
        ch.register(1, [1, 2], svc=9.0)
        ch.register(2, [0, 2], svc=1.0)
        a, b = _connect(path), _connect(path)
        assert _ask(a, {"op": "ask", "job": 0, "iter": 0, "bytes": 1e6})["go"] is True
        assert _ask(b, {"op": "ask", "job": 1, "iter": 0, "bytes": 1e6, "block": False}) == {
            "go": False,
            "server": 1,
        }
        got: list[dict] = []
        waiter = threading.Thread(
            target=lambda: got.append(_ask(b, {"op": "ask", "job": 1, "iter": 0, "bytes": 1e6}))
        )
        waiter.start()
        time.sleep(0.2)
        assert got == []  # held: server 1 is busy
        assert _ask(a, {"op": "done", "job": 0, "iter": 0}) == {"ok": True}
        waiter.join(timeout=5.0)
        assert got and got[0]["go"] is True and got[0]["waited_s"] >= 0.15
        assert ch.asks == 3 and ch.waits == 1
        a.close()
        b.close()
    assert not os.path.exists(path)


def test_waiting_asks_start_in_srsf_order_and_a_closed_connection_ends_its_allreduce(tmp_path):
    path = str(tmp_path / "comm.sock")
    with CommChannel(path, SrsfN(1), num_servers=1) as ch:
        for job, svc in ((0, 0.0), (1, 9.0), (2, 1.0)):
            ch.register(job, [0], svc=svc)
        c0, c1, c2 = (_connect(path) for _ in range(3))
        assert _ask(c0, {"op": "ask", "job": 0, "bytes": 10})["go"]
        order: list[int] = []
        threads = [
            threading.Thread(
                target=lambda c=c, j=j: (
                    _ask(c, {"op": "ask", "job": j, "bytes": 10}),
                    order.append(j),
                )  # fmt: skip
            )
            for c, j in ((c1, 1), (c2, 2))
        ]
        for t in threads:
            t.start()
        time.sleep(0.2)
        c0.close()  # job 0's process died mid all-reduce: the link is free again
        time.sleep(0.2)
        assert order == [2]  # the shorter remaining service first
        _ask(c2, {"op": "done", "job": 2})
        for t in threads:
            t.join(timeout=5.0)
        assert order == [2, 1]
        ch.forget(1)  # job 1 gone: its all-reduce ends with it
        assert ch.state.server_comms == [[]]
        c1.close()
        c2.close()


def test_bad_requests_get_one_error_line_and_unknown_jobs_go_ungated(tmp_path):
    path = str(tmp_path / "comm.sock")
    with CommChannel(path, SrsfN(1), num_servers=1) as ch:
        s = _connect(path)
        assert "error" in _ask(s, {"op": "ask", "job": "x", "bytes": 1})
        assert "'bytes'" in _ask(s, {"op": "ask", "job": 1, "bytes": -1})["error"]
        assert "unknown op" in _ask(s, {"op": "nope", "job": 1})["error"]
        s.sendall(b"not json\n")
        assert "error" in json.loads(s.recv(4096))
        answer = _ask(s, {"op": "ask", "job": 7, "bytes": 1})
        assert answer["go"] is True and "not registered" in answer["ungated"]
        assert ch.state.server_comms == [[]]
        s.close()


CLIENT = """
import sys, time
import ddlsched.live as live
t = []
for i in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    assert live.may_communicate(1e6)
    live.done_communicating()
    t.append(time.perf_counter() - t0)
t.sort()
print(t[len(t) // 2])
"""


def _client_env(path: str, rank: int = 0) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(SRC), DDLSCHED_COMM=path, DDLSCHED_JOB_ID="0")
    env["RANK"] = str(rank)
    return env


def test_the_job_client_asks_and_reports_done_round_trip_fast(tmp_path):
    """``live.may_communicate`` / ``done_communicating`` in a job process: the gate sees each
    all-reduce start and end; the median ask + done round trip stays in the millisecond range
    (benchmarks/bench_channel.py measures it on a quiet machine: target ≤ 1 ms)."""
    path = str(tmp_path / "comm.sock")
    with CommChannel(path, SrsfN(1), num_servers=2) as ch:
        ch.register(0, [0, 1])
        out = subprocess.run(
            [sys.executable, "-c", CLIENT, "200"],
            env=_client_env(path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert float(out.stdout) < 0.005
        assert ch.asks == 200 and ch.state.server_comms == [[], []]


def test_other_ranks_and_ungated_runs_never_ask(tmp_path):
    path = str(tmp_path / "absent.sock")
    for env in (_client_env(path, rank=1), {**_client_env(path), "DDLSCHED_COMM": ""}):
        out = subprocess.run(
            [sys.executable, "-c", CLIENT, "3"], env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert out.returncode == 0 and out.stdout.strip(), out.stderr
    out = subprocess.run(  # rank 0 with a channel that is not there: ungated, one line says so
        [sys.executable, "-c", CLIENT, "3"], env=_client_env(path), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("no communication channel") == 1


def test_a_stop_request_while_waiting_returns_false(tmp_path):
    path = str(tmp_path / "comm.sock")
    stop = tmp_path / "stop"
    code = "import ddlsched.live as live\nprint(live.may_communicate(5.0))\n"
    with CommChannel(path, SrsfN(1), num_servers=1) as ch:
        ch.register(0, [0])
        ch.register(1, [0])
        holder = _connect(path)
        assert _ask(holder, {"op": "ask", "job": 1, "bytes": 1})["go"]
        env = dict(_client_env(path), DDLSCHED_STOP=str(stop))
        proc = subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 20
            while ch.waits == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert ch.waits == 1
            stop.touch()
            out, _ = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert out.strip() == "False"
        time.sleep(0.1)
        assert ch.waiting() == []  # the ask was withdrawn with its connection
        holder.close()


def test_live_gate_takes_wang_fit_from_set_and_only_with_a_gate(tmp_path):
    """``testbed measure``'s fit (a, b and a negative η) reaches the gate's model through
    ``--set`` (summary.json ``comm_model``); without ``--gate`` the same keys are refused."""
    root = Path(__file__).resolve().parents[1]
    job = [sys.executable, str(root / "examples" / "testbed" / "allreduce_job.py"),
           "--iters", "3", "--compute-s", "0.05", "--mb", "0.1", "--backend", "ring",
           "--timeout", "30"]  # fmt: skip
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(
        f"[[jobs]]\njob_id = 0\narrival = 0.0\ngpus = 2\ncommand = {json.dumps(job)}\n"
        "duration = 5.0\n"
    )
    env = dict(os.environ, PYTHONPATH=str(root / "src"), DDLSCHED_RUNTIME_DIR=str(tmp_path / "rt"))
    fit = ["--set", "a=0", "--set", "b=1.85e-7", "--set", "eta=-1.4e-8"]

    def live(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ddlsched", "live", "--quiet", "--local", "--cluster", "tiny",
             "--workload", str(jobs), "--policy", "sjf", *fit, *args],
            env=env, cwd=root, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    res = live("--gate", "adadual", "--out", str(tmp_path / "gated"))
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "gated" / "summary.json").read_text())
    assert summary["comm_model"] == {"a": 0.0, "b": 1.85e-7, "eta": -1.4e-8}
    assert summary["comm_asks"] == 3 and summary["num_jobs"] == 1
    res = live("--out", str(tmp_path / "ungated"))
    assert res.returncode == 2 and "field 'a'" in res.stderr
    assert not (tmp_path / "ungated").exists()
    # the same fit from the file `testbed measure` writes (--contention-fit), η < 0 included
    (tmp_path / "summary.json").write_text(json.dumps({"a": 0.0, "b": 1.85e-7, "eta": -1.4e-8}))
    fit.clear()
    fit += ["--contention-fit", str(tmp_path / "summary.json")]
    res = live("--gate", "adadual", "--out", str(tmp_path / "from-file"))
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "from-file" / "summary.json").read_text())
    assert summary["comm_model"] == {"a": 0.0, "b": 1.85e-7, "eta": -1.4e-8}


def test_a_job_is_known_to_the_gate_before_its_processes_start(tmp_path):
    """The live executor registers a job with the channel before it launches the job's
    processes: a rank 0 that asks while its other ranks are still being launched is gated.
    (Registered after the launch, such an ask went ungated, "job 0 is not registered": two
    all-reduces overlapped on a shared server in a loaded CI run, 2026-12-07.) A launch that
    fails leaves the job unknown again."""
    import tempfile

    from ddlsched.core.realtime import RealtimeSimulator
    from ddlsched.live.executor import LiveExecutor
    from ddlsched.live.jobfile import LiveJob
    from ddlsched.live.launchers.base import LaunchError
    from ddlsched.live.run import to_specs

    sys.path.insert(0, str(Path(__file__).parent))
    from test_live_statemachine import FakeLauncher, GreedyFifo

    path = str(tmp_path / "comm.sock")
    answers: list[dict] = []

    class AskingRank0(FakeLauncher):
        """Rank 0 asks the gate as soon as it is launched, before the call returns."""

        fail: set[int] = set()

        def launch(self, job_id, workers):  # noqa: ANN001, ANN201
            if job_id in self.fail:
                raise LaunchError(f"job {job_id}: no such command")
            super().launch(job_id, workers)
            s = _connect(path)
            answers.append(
                _ask(s, {"op": "ask", "job": job_id, "iter": 0, "bytes": 1e6, "block": False})
            )
            s.close()

    cluster = Cluster.homogeneous(1, 2)
    launcher = AskingRank0(cluster)
    launcher.fail = {1}
    jobs = [LiveJob(job_id=j, arrival=0.0, gpus=1, command=("x",)) for j in (0, 1)]
    with CommChannel(path, SrsfN(1), num_servers=1) as ch:
        ex = LiveExecutor(
            launcher, {j.job_id: j for j in jobs}, tempfile.mkdtemp(prefix="ddl-gate-"),
            grace=1.0, channel=ch,
        )  # fmt: skip
        sim = RealtimeSimulator(
            cluster, to_specs(jobs, 1.0), GreedyFifo(), ex, poll_interval=0.2,
            clock=lambda: 0.0, sleep=lambda s: None,
        )  # fmt: skip
        sim._t0 = 0.0
        sim.now = 0.0
        for state in sim.jobs:
            sim._arrive(state)
        sim._policy_pass()
        assert launcher.launches == [(0, (0,))]
        assert answers == [{"go": True, "waited_s": 0.0}]  # gated, not "not registered"
        s = _connect(path)  # job 1's launch failed: the channel does not know it
        reply = _ask(s, {"op": "ask", "job": 1, "iter": 0, "bytes": 1e6, "block": False})
        assert reply.get("ungated") == "job 1 is not registered", reply
        s.close()
