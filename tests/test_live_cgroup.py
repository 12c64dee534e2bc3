"""Contained jobs (issue #27): each worker in a cgroup v2 of its own, ended with
``cgroup.kill`` (``launchers/cgroup.py``), and the fallback without cgroups (the worker token
and the sweep, ``DDLSCHED_CGROUPS=off``). Tests that need a writable cgroup v2 with
``cgroup.kill`` skip, saying why, where there is none. Every test is bounded in time, ends what
it starts by pid and checks that no process and no cgroup directory is left."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_live_service import home  # noqa: F401 - the fixture

from ddlsched.core.cluster import Cluster
from ddlsched.live.launchers import base, cgroup
from ddlsched.live.launchers.base import WorkerSpec
from ddlsched.live.launchers.local import LocalLauncher
from ddlsched.processes import process_start_time

DAEMON = """\
import os, sys, time
tag, mode = sys.argv[1], sys.argv[2]
if mode == "first" and os.environ.get("DDLSCHED_ATTEMPT", "0") != "0":
    sys.exit(0)  # a restart: no daemon this time
if os.fork() == 0:  # the classic double fork: out of the worker's session and group
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", tag])
    os._exit(0)
time.sleep(0.5)
if mode in ("wait", "first"):
    time.sleep(300)
"""
SLEEP = "import time; time.sleep(60)"


def _tagged(tag: str) -> list[int]:
    from _processes import cmdlines

    return [pid for pid, cmd in cmdlines().items() if tag in cmd and "sleep" in cmd]


def _wait(cond, timeout: float = 15.0, what: str = "") -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(0.05)


def _cg_of(pid: int) -> str:
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""
    return next((ln[3:] for ln in text.splitlines() if ln.startswith("0::")), "")


def _end(pids: list[int]) -> None:
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def fallback(monkeypatch: pytest.MonkeyPatch):
    """No cgroups (``DDLSCHED_CGROUPS=off``): the token and sweep path."""
    monkeypatch.setenv(cgroup.ENV, "off")
    cgroup.reset()
    yield
    cgroup.reset()


@pytest.fixture
def cg(monkeypatch: pytest.MonkeyPatch):
    """Cgroups on (skips where the system offers none); afterwards no ``ddlsched-*`` cgroup
    of this process is left."""
    monkeypatch.delenv(cgroup.ENV, raising=False)
    cgroup.reset()
    ok, why = cgroup.available()
    if not ok:
        pytest.skip(f"no usable cgroup v2 here: {why}")
    top = cgroup.top()
    assert top is not None
    yield top
    cgroup.close(5.0)
    assert not top.exists(), f"cgroup left: {sorted(p.name for p in top.iterdir())}"
    cgroup.reset()


def _spec(job_id: int, d: Path, *command: str, attempt: int = 0) -> WorkerSpec:
    return WorkerSpec(job_id, 0, 1, 0, 0, (0,), tuple(command), cwd=str(d),
                      log_path=f"w{job_id}.log", env={"DDLSCHED_ATTEMPT": str(attempt)})  # fmt: skip


# ------------------------------------------------------------------- detection (no cgroups needed)
MOUNTINFO = """\
25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
31 25 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
32 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
"""


def test_the_cgroup_is_found_from_mountinfo_and_proc_cgroup() -> None:
    assert cgroup.locate(MOUNTINFO, "1:cpu:/\n0::/\n") == (Path("/sys/fs/cgroup/unified"), "")
    pure = "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
    got = cgroup.locate(pure, "0::/user.slice/user-1000.slice/session-3.scope\n")
    assert got == (Path("/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"), "")
    # a mount of a subtree (a container's bind mount): paths are relative to its root
    sub = "40 1 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    assert cgroup.locate(sub, "0::/docker/abc/app\n") == (Path("/sys/fs/cgroup/app"), "")
    # a mount point with a space (mountinfo writes \\040)
    spaced = "40 1 0:30 / /mnt/cg\\040two rw - cgroup2 none rw\n"
    assert cgroup.locate(spaced, "0::/a\n") == (Path("/mnt/cg two/a"), "")
    # none of it: a reason each
    for info, cgs, why in [
        (MOUNTINFO, "1:cpu:/\n", "no 0:: line"),
        (MOUNTINFO.replace("cgroup2 cgroup2", "tmpfs tmpfs"), "0::/\n", "no cgroup2"),
        (sub, "0::/elsewhere\n", "under no cgroup2 mount"),
        (pure, "0::/gone (deleted)\n", "not reachable"),
    ]:
        path, reason = cgroup.locate(info, cgs)
        assert path is None and why in reason, (cgs, reason)


def test_the_opt_out_says_so(fallback) -> None:
    assert cgroup.available() == (False, f"{cgroup.ENV}=off")
    assert cgroup.top() is None


def test_only_dead_owners_of_our_pid_namespace_are_judged() -> None:
    ns = cgroup._pid_ns()
    me = os.getpid()
    assert cgroup.owner_alive(f"ddlsched-{ns}-{me}-{process_start_time(me)}") is True
    assert cgroup.owner_alive(f"ddlsched-{ns}-{me}-{process_start_time(me) + 1}") is False
    assert cgroup.owner_alive(f"ddlsched-1{ns}-{me}-1") is None  # another pid namespace
    for other in ("ddlsched-x", "system.slice", f"ddlsched-{ns}-{me}"):
        assert cgroup.owner_alive(other) is None


# ------------------------------------------------------------------------- the cgroup path
def test_a_workers_processes_are_in_its_cgroup_and_end_with_it(cg, tmp_path) -> None:
    """The double-forking daemon is in the worker's leaf while it runs; when the worker
    finishes, ``cgroup.kill`` ends it — the token sweep is not asked (nothing of the worker's
    is in ``base._strays``) — and the leaf is removed."""
    tag = f"cg{uuid.uuid4().hex[:8]}"
    (tmp_path / "daemon.py").write_text(DAEMON)
    daemons: list[int] = []
    with LocalLauncher(Cluster.homogeneous(1, 2)) as launcher:
        try:
            launcher.launch(1, [_spec(1, tmp_path, sys.executable, "daemon.py", tag, "exit")])
            worker = launcher._jobs[1][0]
            assert worker.cgroup is not None
            leaf = worker.cgroup.path
            assert leaf.parent == cg and leaf.name.startswith("job-1-0-0-")
            _wait(lambda: _tagged(tag), what="the daemon")
            daemons = _tagged(tag)
            rel = _cg_of(os.getpid()).rstrip("/") + f"/{cg.name}/{leaf.name}"
            assert _cg_of(worker.pid) == rel and [_cg_of(d) for d in daemons] == [rel]
            assert os.getsid(daemons[0]) != os.getsid(worker.pid)  # escaped the session
            assert set(worker.cgroup.pids()) == {worker.pid, *daemons}
            _wait(lambda: launcher.poll(1).all_exited, what="the worker's exit")
            assert launcher.poll(1).exit_codes == (0,)
            assert worker.token not in base._strays  # not the fallback's doing
            _wait(lambda: not _tagged(tag), timeout=5, what="the daemon's end")
            _wait(lambda: (launcher.sweep(), not leaf.exists())[1], timeout=5, what="rmdir")
        finally:
            _end(daemons)


def test_a_stopped_jobs_daemon_ends_and_its_cgroup_goes(cg, tmp_path) -> None:
    """Cancel (stop file, SIGTERM, SIGKILL after the grace) of a job whose daemon ignores
    all that: ended with the leaf; a relaunch of the same job gets a new leaf."""
    tag = f"cg{uuid.uuid4().hex[:8]}"
    (tmp_path / "daemon.py").write_text(DAEMON)
    daemons: list[int] = []
    with LocalLauncher(Cluster.homogeneous(1, 2)) as launcher:
        try:
            launcher.launch(2, [_spec(2, tmp_path, sys.executable, "daemon.py", tag, "wait")])
            first = launcher._jobs[2][0].cgroup
            assert first is not None
            _wait(lambda: _tagged(tag), what="the daemon")
            daemons = _tagged(tag)
            t = time.monotonic()
            state = launcher.stop(2, grace=0.5)
            assert state.all_exited and time.monotonic() - t < 5
            _wait(lambda: not _tagged(tag), timeout=5, what="the daemon's end")
            launcher.launch(2, [_spec(2, tmp_path, sys.executable, "-c", SLEEP, tag, attempt=1)])
            second = launcher._jobs[2][0].cgroup
            assert second is not None and second.path != first.path
            assert second.path.name.startswith("job-2-1-0-")
            _wait(lambda: (launcher.sweep(), not first.path.exists())[1], timeout=5, what="rmdir")
        finally:
            _end(daemons)
    assert not _tagged(tag)  # shutdown stopped the relaunch; ``cg`` checks the cgroups


def test_a_command_that_cannot_start_leaves_no_cgroup(cg, tmp_path) -> None:
    from ddlsched.live.launchers.base import LaunchError

    with LocalLauncher(Cluster.homogeneous(1, 2)) as launcher:
        with pytest.raises(LaunchError, match="no-such-program"):
            launcher.launch(3, [_spec(3, tmp_path, str(tmp_path / "no-such-program"))])
        (tmp_path / "plain").write_text("not executable")
        with pytest.raises(LaunchError, match="Permission denied"):
            launcher.launch(3, [_spec(3, tmp_path, "./plain")])
    assert not cg.exists() or not [p for p in cg.iterdir() if p.is_dir()]


def test_leftovers_of_a_dead_owner_end_and_go_at_start(cg, tmp_path) -> None:
    """A dead owner's ``ddlsched-<ns>-<pid>-<start>`` (here: made for a process that then
    exited) with a process still in it: ended and removed when cgroups are set up; a living
    owner's is left alone."""
    parent = cg.parent
    gone = subprocess.Popen(["true"])
    gone_start = process_start_time(gone.pid)
    gone.wait(timeout=10)
    alive = subprocess.Popen(["sleep", "60"])
    tag = f"cg{uuid.uuid4().hex[:8]}"
    ns = cgroup._pid_ns()
    dead_dir = parent / f"ddlsched-{ns}-{gone.pid}-{gone_start or 1}"
    live_dir = parent / f"ddlsched-{ns}-{alive.pid}-{process_start_time(alive.pid)}"
    orphan = None
    try:
        (dead_dir / "job-7-0-0-deadbeef").mkdir(parents=True)
        live_dir.mkdir()
        orphan = subprocess.Popen(["/bin/sh", "-c", cgroup.GATE, "sh", sys.executable, "-c", SLEEP, tag],
                                  stdin=subprocess.PIPE)  # fmt: skip
        assert cgroup.Leaf(dead_dir / "job-7-0-0-deadbeef").place(orphan.pid)
        assert orphan.stdin is not None
        orphan.stdin.write(b"go\n")
        orphan.stdin.close()
        _wait(lambda: _tagged(tag), what="the orphan")
        cgroup.reset()  # as a process that starts now
        assert cgroup.available()[0]
        assert orphan.wait(timeout=5) == -9
        _wait(lambda: (cgroup.sweep(), not dead_dir.exists())[1], timeout=5, what="rmdir")
        assert live_dir.is_dir() and alive.poll() is None
    finally:
        for p in (orphan, alive):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        for d in (live_dir, dead_dir / "job-7-0-0-deadbeef", dead_dir):
            if d.exists():
                d.rmdir()


def test_a_dead_owner_of_another_store_is_left_to_that_store(cg, tmp_path, monkeypatch) -> None:
    """A dead service's ``…-<start>-<store>`` directory: a process of no store (or another
    store) leaves its workers running, for that store's next service to stop them with their
    checkpoints; a process of that store ends them."""
    parent = cg.parent
    gone = subprocess.Popen(["true"])
    gone_start = process_start_time(gone.pid)
    gone.wait(timeout=10)
    store = "0123abcd" + uuid.uuid4().hex[:8]
    tag = f"cg{uuid.uuid4().hex[:8]}"
    dead_dir = parent / f"ddlsched-{cgroup._pid_ns()}-{gone.pid}-{gone_start or 1}-{store}"
    assert cgroup.owner_alive(dead_dir.name) is False
    leaf = dead_dir / "job-3-0-0-deadbeef"
    orphan = None
    try:
        leaf.mkdir(parents=True)
        orphan = subprocess.Popen(["/bin/sh", "-c", cgroup.GATE, "sh", sys.executable, "-c", SLEEP, tag],
                                  stdin=subprocess.PIPE)  # fmt: skip
        assert cgroup.Leaf(leaf).place(orphan.pid)
        assert orphan.stdin is not None
        orphan.stdin.write(b"go\n")
        orphan.stdin.close()
        _wait(lambda: _tagged(tag), what="the orphan")
        for other in ("", "fedcba98"):  # a batch run; a service of another store
            monkeypatch.setenv(cgroup.STORE_ENV, other)
            cgroup.reset()  # as a process that starts now
            assert cgroup.available()[0]
            cgroup.collect_leftovers()  # and again, explicitly
            time.sleep(0.3)
            assert orphan.poll() is None and dead_dir.is_dir(), other
            cgroup.close(5.0)
        monkeypatch.setenv(cgroup.STORE_ENV, store.upper())  # as the store's next service
        cgroup.reset()
        assert cgroup.store_tag() == store
        assert cgroup.available()[0]
        assert orphan.wait(timeout=5) == -9
        _wait(lambda: (cgroup.sweep(), not dead_dir.exists())[1], timeout=5, what="rmdir")
    finally:
        if orphan is not None and orphan.poll() is None:
            orphan.kill()
            orphan.wait(timeout=10)
        for d in (leaf, dead_dir):
            if d.exists():
                d.rmdir()


def test_store_names_are_read_and_judged_like_plain_ones() -> None:
    ns, me = cgroup._pid_ns(), os.getpid()
    start = process_start_time(me)
    assert cgroup.owner_alive(f"ddlsched-{ns}-{me}-{start}-00ff") is True
    assert cgroup.owner_alive(f"ddlsched-{ns}-{me}-{start + 1}-00ff") is False
    assert cgroup.owner_alive(f"ddlsched-{ns}-{me}-{start}-xyz") is None  # not a store id
    assert cgroup.owner_alive(f"ddlsched-{ns}-{me}-{start}-00ff-1") is None


def test_a_worker_that_cannot_be_moved_falls_back(cg, tmp_path, monkeypatch, capsys) -> None:
    """Moving the worker into its leaf fails (here: as if its pid were another's, ESRCH):
    the leaf goes, the worker runs under the fallback, and so do those started after it."""
    real = cgroup.Leaf.place
    monkeypatch.setattr(cgroup.Leaf, "place", lambda self, pid: real(self, 2**22 + 1))
    tag = f"cg{uuid.uuid4().hex[:8]}"
    with LocalLauncher(Cluster.homogeneous(1, 2)) as launcher:
        launcher.launch(4, [_spec(4, tmp_path, sys.executable, "-c", SLEEP, tag)])
        worker = launcher._jobs[4][0]
        assert worker.cgroup is None and "ddlsched-" not in _cg_of(worker.pid)
        assert cgroup.available()[0] is False and "cannot move" in cgroup.available()[1]
        assert "cgroups not used from now on" in capsys.readouterr().err
        launcher.stop(4, grace=0.5)
        assert worker.token in base._strays  # the fallback's sweep watches it
    assert not _tagged(tag)


def test_ray_worker_hosts_contain_their_workers(tmp_path) -> None:
    """The Ray launcher's worker hosts start workers with the same ``WorkerProcess``: each
    host makes its own ``ddlsched-*`` cgroup (the host is the owner); a daemon ends with the
    job and the host's cgroups are gone after shutdown."""
    pytest.importorskip("ray")
    ok, why = cgroup.available()
    if not ok:
        pytest.skip(f"no usable cgroup v2 here: {why}")
    from ddlsched.live.launchers.ray import RayLauncher

    tag = f"cg{uuid.uuid4().hex[:8]}"
    (tmp_path / "daemon.py").write_text(DAEMON)
    daemons: list[int] = []
    lau = RayLauncher.local(Cluster.homogeneous(1, 2), ready_timeout=30.0, call_timeout=30.0)
    try:
        lau.launch(1, [_spec(1, tmp_path, sys.executable, "daemon.py", tag, "wait")])
        _wait(lambda: _tagged(tag), timeout=30, what="the daemon")
        daemons = _tagged(tag)
        (pid,) = lau.poll(1).pids
        where = _cg_of(daemons[0])
        assert where == _cg_of(pid) and "/ddlsched-" in where and "/job-1-0-0-" in where
        host = int(where.split("/ddlsched-")[1].split("-")[1])
        assert host != os.getpid()  # the host's, not this process's
        state = lau.stop(1, grace=0.5)
        assert state.all_exited
        _wait(lambda: not _tagged(tag), timeout=10, what="the daemon's end")
    finally:
        lau.shutdown()
        _end(daemons)
    assert not _service_cgroups(host)


# ------------------------------------------------------------------------- the fallback
def test_without_cgroups_the_token_sweep_ends_the_daemon(fallback, tmp_path) -> None:
    """``DDLSCHED_CGROUPS=off``: no cgroup is made; the daemon is found by the worker's token
    and SIGKILLed by the sweep (as on a machine without cgroup v2)."""
    tag = f"fb{uuid.uuid4().hex[:8]}"
    (tmp_path / "daemon.py").write_text(DAEMON)
    daemons: list[int] = []
    with LocalLauncher(Cluster.homogeneous(1, 2)) as launcher:
        try:
            launcher.launch(1, [_spec(1, tmp_path, sys.executable, "daemon.py", tag, "exit")])
            worker = launcher._jobs[1][0]
            assert worker.cgroup is None
            _wait(lambda: _tagged(tag), what="the daemon")
            daemons = _tagged(tag)
            assert "ddlsched-" not in _cg_of(daemons[0])
            _wait(lambda: launcher.poll(1).all_exited, what="the worker's exit")
            assert worker.token in base._strays  # the fallback watches its token
            _wait(lambda: (launcher.sweep(), not _tagged(tag))[1], timeout=5, what="the sweep")
        finally:
            _end(daemons)


# --------------------------------------------------------------------------- the service
@pytest.mark.parametrize("mode", ["cgroup", "fallback"])
def test_the_service_ends_a_jobs_daemon_either_way(home, monkeypatch, mode) -> None:  # noqa: F811
    """``ddlsched serve --local``: a job's daemon is in the job's cgroup (or, with
    ``DDLSCHED_CGROUPS=off``, in none) and ends when the job is cancelled."""
    from test_live_service import serve

    if mode == "cgroup":
        ok, why = cgroup.available()
        if not ok:
            pytest.skip(f"no usable cgroup v2 here: {why}")
        monkeypatch.delenv(cgroup.ENV, raising=False)
    else:
        monkeypatch.setenv(cgroup.ENV, "off")
    path, tag, _ = home
    (path / "daemon.py").write_text(DAEMON)
    svc = serve(home)
    (b,) = svc.submit({"command": [sys.executable, "daemon.py", tag, "wait"], "gpus": 1})
    _wait(lambda: _tagged(tag), timeout=30, what="the daemon")
    (daemon,) = _tagged(tag)
    assert svc.proc is not None
    where = _cg_of(daemon)
    if mode == "cgroup":
        assert f"/ddlsched-{cgroup._pid_ns()}-{svc.proc.pid}-" in where, where
    else:
        assert "ddlsched-" not in where, where
    assert svc.call("DELETE", f"/jobs/{b}")[0] == 200
    _wait(lambda: not _tagged(tag), timeout=15, what="the daemon's end")
    assert svc.drain() == 0
    assert not _service_cgroups(svc.proc.pid)


def _service_cgroups(pid: int) -> list[Path]:
    """The ``ddlsched-*`` cgroups of process ``pid`` (a service this test started)."""
    parent, _ = cgroup.locate(cgroup._proc_text("mountinfo"), cgroup._proc_text("cgroup"))
    if parent is None:
        return []
    return [p for p in parent.iterdir() if p.name.split("-")[2:3] == [str(pid)]]


@pytest.mark.solo  # any service starting meanwhile (another worker's) ends the daemon too
def test_a_kill9d_services_daemons_end_when_the_next_one_starts(home) -> None:  # noqa: F811
    """The service is SIGKILLed while a job's daemon runs: the next service ends the worker
    (by pid and start time, as before) and the daemon (its dead predecessor's cgroup)."""
    from test_live_service import serve

    ok, why = cgroup.available()
    if not ok:
        pytest.skip(f"no usable cgroup v2 here: {why}")
    path, tag, _ = home
    (path / "daemon.py").write_text(DAEMON)
    svc = serve(home)
    (a,) = svc.submit({"command": [sys.executable, "daemon.py", tag, "first"], "gpus": 1})
    _wait(lambda: _tagged(tag), timeout=30, what="the daemon")
    assert svc.proc is not None
    first = svc.proc.pid
    assert _service_cgroups(first)
    svc.kill9()
    time.sleep(0.5)
    assert _tagged(tag), "the daemon should outlive its killed service"
    # a service of another store starts and runs a job: the dead one's workers are not its to
    # end (they would lose their checkpoints); they wait for their own store's next service
    other = serve(home, state="other")
    (o,) = other.submit({"command": [sys.executable, "-c", "pass"], "gpus": 1})
    assert other.wait_ended([o], timeout=30)[o]["state"] == "finished"
    assert other.drain() == 0
    assert _tagged(tag), "another store's service ended the dead service's workers"
    again = serve(home)
    _wait(lambda: not _tagged(tag), timeout=15, what="the daemon's end")
    _wait(lambda: not _service_cgroups(first), timeout=10, what="the old cgroups' removal")
    assert again.wait_ended([a], timeout=30)[a]["state"] == "finished"  # restarted, no daemon
    assert again.proc is not None and again.drain() == 0
    assert not _service_cgroups(again.proc.pid)
