"""Plugin policies that fail (issue #11 §4): a file that does not load, a factory that needs
arguments, raises or exits, a hook that raises, and schedules the engine rejects — each is one
line naming the file and the error, exit 2, no output directory; ``--debug`` shows the traceback.
Built-in policies keep their tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.jobexec import JobExecutor
from ddlsched.core.simulator import Simulator
from ddlsched.errors import InputError, PolicyError, ScheduleError
from ddlsched.policy import register_policy, unregister_policy

# three 1-GPU jobs and one 2-GPU job, all at 0: the first policy call sees them all waiting
WORKLOAD = """job_id,arrival,num_gpus,iterations,model
1,0,1,20,resnet50
2,0,1,20,resnet50
3,0,1,20,resnet50
4,0,2,20,resnet50
"""

POLICY = """
import sys

class P:
    name = "p"
    interval = {interval}

    def attach(self, sim):
        {attach}

    def schedule(self, sim):
        one = [j for j in sim.queue if j.num_gpus == 1]
        two = [j for j in sim.queue if j.num_gpus == 2]
        {schedule}

    def on_round(self, sim):
        {on_round}


def make():
    return P()
"""


def policy_file(
    tmp_path: Path,
    *,
    schedule: str = "pass",
    attach: str = "pass",
    on_round: str = "pass",
    interval: str = "None",
) -> Path:
    p = tmp_path / "pol.py"
    p.write_text(
        POLICY.format(schedule=schedule, attach=attach, on_round=on_round, interval=interval)
    )
    return p


def ddl(tmp_path: Path, policy: str, *extra: str, env: dict | None = None):
    work = tmp_path / "jobs.csv"
    work.write_text(WORKLOAD)
    out = tmp_path / "out"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddlsched.cli",
            *extra,
            "run",
            "--cluster",
            "tiny",
            "--workload",
            str(work),
            "--policy",
            policy,
            "--set",
            "granularity=job",
            "--set",
            "max_jobs_per_gpu=1",
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return r, out


def assert_one_line(r, out: Path, *parts: str) -> str:
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("ddlsched: error: "), r.stderr
    for part in parts:
        assert part in r.stderr, (part, r.stderr)
    assert not out.exists()
    return r.stderr


# ------------------------------------------------------------------ the file and its factory
@pytest.mark.parametrize(
    ("body", "parts"),
    [
        ("def make(:\n    pass\n", ["line 1: syntax error"]),
        (
            "x = 1\nraise ValueError('boom at import')\n",
            ["line 2: policy raised ValueError on import: boom at import"],
        ),
        ("import sys\nsys.exit(3)\n", ["line 2: policy called sys.exit(3) on import"]),
        ("def make(x, y=1):\n    pass\n", ["factory make needs arguments (x)"]),
        (
            "def make():\n    raise RuntimeError('bad factory')\n",
            ["line 2: policy raised RuntimeError in factory make: bad factory"],
        ),
        (
            "import sys\ndef make():\n    sys.exit(0)\n",
            ["policy called sys.exit(0) in factory make"],
        ),
        ("def make():\n    return 42\n", ["is not a policy"]),
    ],
)
def test_a_file_that_does_not_give_a_policy(tmp_path, body, parts):
    p = tmp_path / "pol.py"
    p.write_text(body)
    r, out = ddl(tmp_path, f"{p}:make")
    assert_one_line(r, out, str(p), *parts)


@pytest.mark.parametrize(
    ("body", "parts"),
    [
        ("x = 1\nraise ValueError('boom')\n", ["line 2: policy raised ValueError on import: boom"]),
        (
            "import nonexistent_thing_xyz\n",
            ["line 1: policy raised ModuleNotFoundError on import: No module named"],
        ),
        ("def make(:\n    pass\n", ["line 1: syntax error"]),
        (
            POLICY.format(schedule="1 / 0", attach="pass", on_round="pass", interval="None"),
            ["line 14: policy raised ZeroDivisionError in schedule"],
        ),
    ],
)
def test_a_module_that_fails_on_import(tmp_path, body, parts):
    (tmp_path / "badmod.py").write_text(body)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    r, out = ddl(tmp_path, "badmod:make", env=env)
    assert_one_line(r, out, "module badmod", *parts)


# ------------------------------------------------------------------ hooks that raise
@pytest.mark.parametrize(
    ("kw", "parts"),
    [
        ({"schedule": "1 / 0"}, ["raised ZeroDivisionError in schedule: division by zero"]),
        ({"attach": "raise KeyError('k')"}, ["raised KeyError in attach: 'k'"]),
        (
            {"interval": "1.0", "on_round": "raise ValueError('a\\nb')"},
            ["raised ValueError in on_round: a …"],
        ),
        ({"schedule": "sys.exit(0)"}, ["called sys.exit(0) in schedule"]),
        ({"schedule": "sim.start(None, [0])"}, ["start needs a job of sim.queue, got NoneType"]),
        ({"schedule": "sim.queue[0].spec.nope"}, ["raised AttributeError in schedule"]),
        ({"interval": "-5"}, ["its interval must be a number of seconds > 0, got -5"]),
        ({"schedule": "pass"}, ["left 4 job(s) waiting forever"]),
        # with rounds the clock never stops: the livelock guard ends the run after a week
        (
            {"schedule": "pass", "interval": "3600.0"},
            ["no progress for", "the policy left 4 job(s) waiting with none running"],
        ),
    ],
)
def test_a_policy_hook_that_fails(tmp_path, kw, parts):
    p = policy_file(tmp_path, **kw)
    r, out = ddl(tmp_path, f"{p}:make")
    assert_one_line(r, out, str(p), *parts)


def test_debug_prints_the_traceback(tmp_path):
    p = policy_file(tmp_path, schedule="1 / 0")
    r, out = ddl(tmp_path, f"{p}:make", "--debug")
    assert r.returncode == 2
    assert "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr
    assert r.stderr.splitlines()[-1].startswith("ddlsched: error: ")
    assert not out.exists()


# ------------------------------------------------------------------ schedules the engine rejects
@pytest.mark.parametrize(
    ("schedule", "parts"),
    [
        (
            "sim.start(one[0], [0]); sim.start(one[1], [0])",
            ["job 2 cannot start on GPU 0: it is busy with job(s) 1 (at most 1 job(s) per GPU"],
        ),
        ("sim.start(two[0], [3, 3])", ["job 4 cannot start on GPUs [3, 3]: a GPU appears twice"]),
        ("sim.start(two[0], [3])", ["job 4 asked for 2 GPU(s), the policy gave it 1"]),
        ("sim.start(one[0], [99])", ["job 1 cannot start on GPU 99: GPU ids are integers 0 to 7"]),
        ("sim.start(one[0], [-1])", ["job 1 cannot start on GPU -1: GPU ids are integers 0 to 7"]),
        ("sim.start(one[0], [1.0])", ["job 1 cannot start on GPU 1.0"]),
        (
            "j = one[0]; sim.start(j, [0]); sim.start(j, [1])",
            ["job 1 cannot start: it is not waiting (it is running)"],
        ),
        ("sim.preempt(one[0])", ["job 1 cannot be preempted: it is not running (it is queued)"]),
    ],
)
def test_a_schedule_the_engine_rejects(tmp_path, schedule, parts):
    p = policy_file(tmp_path, schedule=schedule)
    r, out = ddl(tmp_path, f"{p}:make")
    line = assert_one_line(r, out, str(p), *parts)
    assert f"{p}, line 14: " in line  # the line of pol.py that made the call


# ------------------------------------------------------------------ library level
def _jobs() -> list[JobSpec]:
    m = ModelProfile("m", 0.0, 1000.0, 1, 1.0, 2.0)
    return [JobSpec(i, 0.0, 1, 10, m) for i in range(2)]


class _Bad:
    name = "bad"

    def attach(self, sim):
        pass

    def schedule(self, sim):
        sim.start(sim.queue[0], [-1])


def test_negative_gpu_ids_never_wrap_around():
    sim = Simulator(Cluster.homogeneous(1, 2), _jobs(), _Bad(), JobExecutor())  # type: ignore[arg-type]
    with pytest.raises(ScheduleError, match="GPU -1"):
        sim.run()


def test_a_builtin_policy_that_breaks_a_rule_is_a_bug_not_input():
    sim = Simulator(
        Cluster.homogeneous(1, 2),
        _jobs(),
        _Bad(),  # type: ignore[arg-type]
        JobExecutor(),
        builtin_policy=True,
    )
    with pytest.raises(RuntimeError, match="built-in policy bad"):
        sim.run()


def test_a_policy_object_keeps_its_own_exceptions():
    class Raises(_Bad):
        def schedule(self, sim):
            raise ZeroDivisionError("mine")

    with pytest.raises(ZeroDivisionError, match="mine"):
        simulate(Cluster.homogeneous(1, 2), _jobs(), Raises(), settings={"granularity": "job"})


def test_a_registered_policy_that_raises_names_itself():
    class Raises(_Bad):
        def schedule(self, sim):
            raise ZeroDivisionError("mine")

    register_policy("raises-test", Raises)
    try:
        with pytest.raises(PolicyError) as e:
            simulate(
                Cluster.homogeneous(1, 2), _jobs(), "raises-test", settings={"granularity": "job"}
            )
    finally:
        unregister_policy("raises-test")
    assert str(e.value).startswith("policy 'raises-test', line ")
    assert "raised ZeroDivisionError in schedule: mine" in str(e.value)
    assert isinstance(e.value, InputError) and isinstance(e.value.__cause__, ZeroDivisionError)


def test_a_gate_that_raises_names_the_file(tmp_path):
    # the gate runs inside the iteration-level executor, not in a policy hook: the failure is
    # still the policy's (its file is on the stack) and names the gate's method
    p = tmp_path / "gated.py"
    p.write_text(
        "from ddlsched.policy import compose\n"
        "class Gate:\n"
        "    name = 'g'\n"
        "    def blocker(self, ex, run):\n"
        "        raise OverflowError('gate broke')\n"
        "    def start_watch(self, ex, run, block):\n"
        "        return []\n"
        "def make():\n"
        "    return compose('gated', ordering='fifo', placement='ff', gate=Gate())\n"
    )
    work = tmp_path / "jobs.csv"
    work.write_text(WORKLOAD.splitlines()[0] + "\n1,0,8,5,resnet50\n")  # spans both servers
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "run", "--cluster", "tiny", "--workload"]
        + [str(work), "--policy", f"{p}:make", "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_line(r, out, f"{p}, line 5: policy raised OverflowError in blocker: gate broke")
