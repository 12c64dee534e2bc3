"""The live service's durable state store (ddlsched.live.service.store): every transition, the illegal
ones, all-or-nothing submissions, the schema version check, a real SIGKILL mid-write, and
concurrent writers in separate processes."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.live.jobfile import LiveJob
from ddlsched.live.service.store import (
    SCHEMA_VERSION,
    JobStore,
    StateError,
    UnknownJobError,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def job(gpus: int = 1, max_restarts: int = 3, **kw: object) -> LiveJob:
    return LiveJob(job_id=99, arrival=0.0, gpus=gpus, command=("python3", "t.py"),
                   max_restarts=max_restarts, **kw)  # type: ignore[arg-type]  # fmt: skip


@pytest.fixture
def store(tmp_path: Path):
    s = JobStore(tmp_path / "state")
    yield s
    s.close()


def snapshot(s: JobStore) -> tuple:
    return (s.jobs(), s.events())


# ------------------------------------------------------------------ opening, schema
def test_open_creates_wal_store_with_version(tmp_path: Path) -> None:
    with JobStore(tmp_path / "st") as s:
        assert s.path == tmp_path / "st" / "state.sqlite"
        assert s.integrity() == "ok"
    db = sqlite3.connect(tmp_path / "st" / "state.sqlite")
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        db.close()
    with JobStore(tmp_path / "st") as s:  # reopening an existing store
        assert s.jobs() == []


def test_other_schema_version_is_refused(tmp_path: Path) -> None:
    JobStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / "state.sqlite")
    db.execute("UPDATE schema_version SET version = 7")
    db.commit()
    db.close()
    with pytest.raises(InputError) as e:
        JobStore(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert str(tmp_path / "state.sqlite") in msg
    assert "7" in msg and str(SCHEMA_VERSION) in msg


def test_not_a_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="not a ddlsched state store"):
        JobStore(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    db = sqlite3.connect(other / "state.sqlite")
    db.execute("CREATE TABLE foo (x)")
    db.commit()
    db.close()
    with pytest.raises(InputError, match="no schema_version"):
        JobStore(other)


# ------------------------------------------------------------------ submit
def test_submit_stores_fields_and_ids_unique_across_reopen(tmp_path: Path) -> None:
    j = LiveJob(job_id=5, arrival=2.5, gpus=4, command=("python3", "x.py", "--a b"),
                app="resnet50", max_restarts=1, checkpoint_dir="/ck", duration=30.0,
                batch_size=64)  # fmt: skip
    with JobStore(tmp_path) as s:
        ids = s.submit([j, job()], now=10.0)
        assert ids == [1, 2]
        got = s.job(1)
        assert got.job == LiveJob(job_id=1, **{k: getattr(j, k) for k in (
            "arrival", "gpus", "command", "app", "max_restarts", "checkpoint_dir",
            "duration", "batch_size")})  # fmt: skip
        assert (got.state, got.attempt, got.failures, got.gpus_held) == ("queued", -1, 0, ())
        assert got.submitted_at == 10.0 and got.finished_at is None
        # the highest id is cancelled and would be the one reused by a plain rowid table
        s.cancel(2, now=11.0)
    with JobStore(tmp_path) as s:
        db = s._db  # delete the last row outright: AUTOINCREMENT must still not reuse it
        db.execute("DELETE FROM events WHERE job = 2")
        db.execute("DELETE FROM jobs WHERE id = 2")
        assert s.submit([job()], now=12.0) == [3]
        assert [(e.event, e.job) for e in s.events()] == [("submit", 1), ("submit", 3)]


def test_submit_is_all_or_nothing(store: JobStore) -> None:
    store.submit([job()], now=1.0)
    before = snapshot(store)
    bad = [job(), job(), LiveJob(job_id=0, arrival=0.0, gpus=0, command=("x",)), job()]
    with pytest.raises(InputError, match="job 2 of the submission.*gpus"):
        store.submit(bad, now=2.0)
    assert snapshot(store) == before
    for bad_job in (
        LiveJob(job_id=0, arrival=-1.0, gpus=1, command=("x",)),
        LiveJob(job_id=0, arrival=float("nan"), gpus=1, command=("x",)),
        LiveJob(job_id=0, arrival=0.0, gpus=1, command=()),
        LiveJob(job_id=0, arrival=0.0, gpus=1, command=("x",), max_restarts=-1),
        LiveJob(job_id=0, arrival=0.0, gpus=1, command=("x",), duration=0.0),
        LiveJob(job_id=0, arrival=0.0, gpus=1, command=("x",), batch_size=0),
        "not a job",
    ):
        with pytest.raises(InputError):
            store.submit([job(), bad_job], now=3.0)  # type: ignore[list-item]
        assert snapshot(store) == before
    with pytest.raises(InputError):
        store.submit([], now=3.0)
    assert store.submit([job()], now=4.0) == [2]  # a rolled-back submission used no id


def test_database_constraint_is_a_backstop(store: JobStore) -> None:
    """A job the Python check lets through but the CHECK constraints refuse rolls back too."""
    store.submit([job()], now=1.0)
    before = snapshot(store)
    with pytest.raises(sqlite3.IntegrityError), store._write() as cur:
        cur.execute(
            "INSERT INTO jobs (submitted_at, command, gpus, arrival, max_restarts, state)"
            " VALUES (1, '[\"x\"]', 1, 0, 0, 'queued')"
        )
        cur.execute(
            "INSERT INTO jobs (submitted_at, command, gpus, arrival, max_restarts, state)"
            " VALUES (1, '[\"x\"]', 1, 0, 0, 'sleeping')"
        )
    assert snapshot(store) == before


# ------------------------------------------------------------------ transitions
def test_lifecycle_start_preempt_finish(store: JobStore) -> None:
    (a,) = store.submit([job(gpus=2)], now=0.0)
    store.start(a, [0, 1], attempt=0, now=1.0)
    j = store.job(a)
    assert (j.state, j.attempt, j.gpus_held) == ("running", 0, (0, 1))
    store.preempt(a, now=2.0, reason="tiresias")
    j = store.job(a)
    assert (j.state, j.attempt, j.gpus_held) == ("queued", 0, ())
    store.start(a, [2, 3], attempt=1, now=3.0)
    store.finish(a, now=4.0)
    j = store.job(a)
    assert (j.state, j.finished_at, j.gpus_held, j.reason) == ("finished", 4.0, (), None)
    ev = store.events()
    assert [(e.event, e.job) for e in ev] == [
        ("submit", a), ("start", a), ("preempt", a), ("start", a), ("finish", a),
    ]  # fmt: skip
    assert ev[2].detail == {"reason": "tiresias"}
    assert ev[3].detail == {"gpus": [2, 3], "attempt": 1}
    assert [e.seq for e in ev] == sorted({e.seq for e in ev})
    assert store.events(since_seq=ev[2].seq) == ev[3:]
    assert store.events(limit=2) == ev[:2]


def test_resize_moves_a_running_job_in_one_step(store: JobStore) -> None:
    """An elastic policy's resize: running → running on other GPUs as a new attempt; a
    queued job, a repeated attempt or a bad GPU list is refused and changes nothing."""
    (a,) = store.submit([job(gpus=1)], now=0.0)
    with pytest.raises(StateError, match="cannot resize job"):
        store.resize(a, [0, 1], attempt=0, now=0.5)  # not running yet
    store.start(a, [0], attempt=0, now=1.0)
    store.resize(a, [2, 3], attempt=1, now=2.0, batch_size=256)
    j = store.job(a)
    assert (j.state, j.attempt, j.gpus_held) == ("running", 1, (2, 3))
    ev = store.events()[-1]
    assert ev.event == "resize"
    assert ev.detail == {"gpus": [2, 3], "before": [0], "attempt": 1, "batch_size": 256}
    before = snapshot(store)
    for gpus, attempt in (([1], 1), ([1], 0), ([1, 1], 2), ([], 2), ([-1], 2)):
        with pytest.raises(StateError):
            store.resize(a, gpus, attempt=attempt, now=3.0)
    assert snapshot(store) == before


def test_fail_cancel(store: JobStore) -> None:
    a, b, c, d = store.submit([job(), job(), job(), job()], now=0.0)
    store.start(b, [0], 0, now=1.0)
    store.start(d, [1], 0, now=1.0)
    store.fail(a, now=2.0, reason="program not found")  # queued → failed
    store.fail(b, now=2.0, reason="node lost twice")  # running → failed
    assert store.cancel(c, now=3.0) is True  # queued → cancelled
    assert store.cancel(d, now=3.0) is True  # running → cancelled
    for ended in (a, b, c, d):
        before = snapshot(store)
        assert store.cancel(ended, now=4.0) is False
        assert snapshot(store) == before
    assert {j.id: (j.state, j.reason) for j in store.jobs()} == {
        a: ("failed", "program not found"),
        b: ("failed", "node lost twice"),
        c: ("cancelled", "cancelled"),
        d: ("cancelled", "cancelled"),
    }
    assert [j.id for j in store.jobs(["failed"])] == [a, b]
    assert [j.id for j in store.jobs("cancelled")] == [c, d]
    assert store.jobs([]) == []
    with pytest.raises(InputError, match="unknown job state"):
        store.jobs(["done"])


def test_crashed_restarts_up_to_max_restarts_then_fails(store: JobStore) -> None:
    (a,) = store.submit([job(max_restarts=2)], now=0.0)
    for attempt in range(3):
        store.start(a, [0], attempt, now=attempt + 0.5)
        may = store.crashed(a, now=attempt + 1.0, reason="exit 1")
        assert may is (attempt < 2)
        assert store.job(a).failures == attempt + 1
    j = store.job(a)
    assert j.state == "failed" and j.finished_at == 3.0
    assert j.reason is not None and "exit 1" in j.reason and "max_restarts 2" in j.reason
    assert [e.event for e in store.events()][-2:] == ["crash", "fail"]
    (z,) = store.submit([job(max_restarts=0)], now=5.0)
    store.start(z, [0], 0, now=5.0)
    assert store.crashed(z, now=6.0, reason="segfault") is False
    assert store.job(z).state == "failed"


def test_illegal_transitions_change_nothing(store: JobStore) -> None:
    q, r, f = store.submit([job(), job(), job()], now=0.0)
    store.start(r, [0], 0, now=1.0)
    store.start(f, [1], 0, now=1.0)
    store.finish(f, now=2.0)
    illegal = [
        lambda: store.finish(q, 3.0),  # finish a queued job
        lambda: store.preempt(q, 3.0),
        lambda: store.crashed(q, 3.0, "x"),
        lambda: store.start(r, [2], 1, 3.0),  # start a running job
        lambda: store.start(f, [2], 1, 3.0),  # start a finished job
        lambda: store.finish(f, 3.0),
        lambda: store.fail(f, 3.0, "x"),
        lambda: store.preempt(f, 3.0),
        lambda: store.crashed(f, 3.0, "x"),
        lambda: store.start(q, [], 0, 3.0),  # no GPUs
        lambda: store.start(q, [1, 1], 0, 3.0),  # a GPU twice
        lambda: store.start(q, [-1], 0, 3.0),
        lambda: store.start(q, [0], -1, 3.0),  # attempt not after the last (-1)
    ]
    for call in illegal:
        before = snapshot(store)
        with pytest.raises(StateError) as e:
            call()
        assert "\n" not in str(e.value)
        assert snapshot(store) == before
    store.preempt(r, now=2.5)
    before = snapshot(store)
    with pytest.raises(StateError, match="attempt 0 is not after its last attempt 0"):
        store.start(r, [0], 0, 3.0)  # attempt 0 again: an attempt never runs twice
    assert snapshot(store) == before
    with pytest.raises(StateError, match=r"cannot finish job 1: it is queued, not running"):
        store.finish(q, 3.0)
    for call in (
        lambda: store.start(42, [0], 0, 3.0),
        lambda: store.finish(42, 3.0),
        lambda: store.cancel(42, 3.0),
        lambda: store.job(42),
        lambda: store.job("1"),  # type: ignore[arg-type]
    ):
        with pytest.raises(UnknownJobError):
            call()
    with pytest.raises(InputError, match="finite"):
        store.finish(r, float("inf"))


def test_recover_requeues_running_jobs(tmp_path: Path) -> None:
    with JobStore(tmp_path) as s:
        a, b, c, d = s.submit([job(), job(), job(), job()], now=0.0)
        s.start(a, [0], 0, now=1.0)
        s.start(c, [1], 0, now=1.0)
        s.start(d, [2], 0, now=1.0)
        s.finish(d, now=2.0)
    # the service died here; a new one opens the same state
    with JobStore(tmp_path) as s:
        last = s.events()[-1].seq
        assert s.recover(now=10.0) == [a, c]
        assert {j.id: j.state for j in s.jobs()} == {
            a: "queued",
            b: "queued",
            c: "queued",
            d: "finished",
        }
        assert all(j.gpus_held == () for j in s.jobs())
        ev = s.events(since_seq=last)
        assert [(e.event, e.job, e.detail) for e in ev] == [
            ("requeue", a, {"reason": "requeued after restart"}),
            ("requeue", c, {"reason": "requeued after restart"}),
        ]
        assert s.job(a).attempt == 0  # the next start must be attempt 1
        with pytest.raises(StateError):
            s.start(a, [0], 0, now=11.0)
        s.start(a, [0], 1, now=11.0)
        assert s.recover(now=12.0) == [a]
        assert s.recover(now=13.0) == []


def test_threads_share_one_store(store: JobStore) -> None:
    got: list[int] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                got.extend(store.submit([job()], now=time.time()))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and not errors
    assert sorted(got) == list(range(1, 201))


# ------------------------------------------------------------------ real processes
WRITER = textwrap.dedent(
    """
    import sys, time
    from ddlsched.live.jobfile import LiveJob
    from ddlsched.live.service.store import JobStore
    state, count, batch, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    s = JobStore(state)
    j = LiveJob(job_id=0, arrival=0.0, gpus=1, command=("python3", "t.py", "x" * 200))
    print("ready", flush=True)
    sys.stdin.readline()  # wait for the go, so that the writers overlap
    i = 0
    while count < 0 or i < count:
        ids = s.submit([j] * batch, now=time.time())
        if start == "start":
            s.start(ids[0], [0], 0, now=time.time())
        print(" ".join(map(str, ids)), flush=True)
        i += 1
    """
)


def _writer(state: Path, count: int, batch: int, start: bool) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(state),
            str(count),
            str(batch),
            "start" if start else "-",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    for f in (proc.stdin, proc.stdout):
        if f is not None:
            f.close()


def _readline(proc: subprocess.Popen[str], deadline: float) -> str:
    assert proc.stdout is not None
    if time.monotonic() > deadline:
        raise AssertionError("writer too slow")
    return proc.stdout.readline()


def _kill_writer_midway(state: Path, after: int, rng: random.Random) -> list[int]:
    """Run a writer (batches of 5 jobs, then a start of the first) and SIGKILL it by pid
    once it printed ``after`` ids, plus a random few milliseconds: the ids it printed."""
    proc = _writer(state, count=-1, batch=5, start=True)
    printed: list[int] = []
    try:
        deadline = time.monotonic() + 30
        assert _readline(proc, deadline).strip() == "ready"
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        while len(printed) < after:
            line = _readline(proc, deadline)
            assert line, "writer died"
            printed.extend(int(x) for x in line.split())
        time.sleep(rng.uniform(0, 0.01))
        os.kill(proc.pid, signal.SIGKILL)  # in the middle of its next transactions
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert proc.stdout is not None
        for line in proc.stdout:  # what it printed between our last read and the kill
            if line.endswith("\n"):  # a line cut by the kill is not an acknowledgement
                printed.extend(int(x) for x in line.split())
    finally:
        _end(proc)
    return printed


def test_sigkill_mid_write_loses_nothing_acknowledged(tmp_path: Path) -> None:
    JobStore(tmp_path).close()
    rng = random.Random(14)
    printed: list[int] = []
    unstarted_ok: set[int] = set()  # the last batch of each round may miss its start
    for _round in range(3):
        printed += _kill_writer_midway(tmp_path, after=5 * 40, rng=rng)
        with JobStore(tmp_path) as s:
            assert s.integrity() == "ok"
            ids = [j.id for j in s.jobs()]
            unstarted_ok.add(len(ids) - 4)
    with JobStore(tmp_path) as s:
        assert s.integrity() == "ok"
        jobs = s.jobs()
        ids = [j.id for j in jobs]
        assert set(printed) <= set(ids)  # every acknowledged id survived the kill
        # no half-written submission: whole batches of 5, consecutive ids from 1
        assert ids == list(range(1, len(ids) + 1))
        assert len(ids) % 5 == 0
        submits = {e.job for e in s.events() if e.event == "submit"}
        starts = {e.job for e in s.events() if e.event == "start"}
        assert submits == set(ids)
        for j in jobs:  # every row complete; a job is running exactly when its start committed
            assert j.job.command == ("python3", "t.py", "x" * 200) and j.submitted_at > 0
            assert (j.state == "running") == (j.id in starts)
            assert j.gpus_held == ((0,) if j.state == "running" else ())
        # only a batch killed between its two transactions misses its start
        firsts = set(range(1, len(ids) + 1, 5))
        assert firsts - starts <= unstarted_ok
        # and the store goes on: new ids follow the old ones
        assert s.submit([job()], now=time.time()) == [len(ids) + 1]


def test_four_processes_submit_1000_jobs(tmp_path: Path) -> None:
    procs = [
        _writer(tmp_path, count=250, batch=1, start=False) for _ in range(4)
    ]  # all create the store
    got: list[list[int]] = [[] for _ in procs]
    try:
        deadline = time.monotonic() + 60
        for p in procs:
            assert _readline(p, deadline).strip() == "ready"
        t0 = time.perf_counter()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()

        def drain(i: int) -> None:
            assert procs[i].stdout is not None
            for line in procs[i].stdout:
                got[i].extend(int(x) for x in line.split())

        readers = [threading.Thread(target=drain, args=(i,)) for i in range(4)]
        for r in readers:
            r.start()
        for p in procs:
            assert p.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
        for r in readers:
            r.join(timeout=10)
        elapsed = time.perf_counter() - t0
    finally:
        for p in procs:
            _end(p)
    assert all(len(g) == 250 for g in got)
    every = [i for g in got for i in g]
    assert sorted(every) == list(range(1, 1001))  # unique, none lost
    with JobStore(tmp_path) as s:
        assert s.integrity() == "ok"
        assert len(s.jobs()) == 1000 and len(s.jobs(["queued"])) == 1000
        assert len(s.events()) == 1000
    # one committed transaction per submission; printed for the report, not asserted
    print(f"4 processes: 1000 submissions in {elapsed:.2f} s, "
          f"{1000 / elapsed:.0f} submissions/s")  # fmt: skip


# ------------------------------------------------------------------ the store knows itself
def test_an_emptied_or_replaced_database_is_refused(tmp_path: Path) -> None:
    """Issue #27 item 3: an emptied state.sqlite used to be taken for a new store, ids
    restarted at 1 and the new job 2 resumed the old job 2's checkpoint."""
    import shutil

    from ddlsched.live.service.store import STORE_ID_FILE

    d = tmp_path / "st"
    with JobStore(d) as s:
        s.submit([job(), job()], now=0.0)
        ident = s.identity
    assert (d / STORE_ID_FILE).read_text().strip() == ident
    with JobStore(d) as s:  # reopened: the same store
        assert s.identity == ident and len(s.jobs()) == 2
    keep = tmp_path / "keep.sqlite"
    shutil.copy(d / "state.sqlite", keep)
    for suffix in ("-wal", "-shm"):
        (d / f"state.sqlite{suffix}").unlink(missing_ok=True)
    (d / "state.sqlite").write_bytes(b"")  # emptied
    with pytest.raises(InputError, match="new or was emptied") as e:
        JobStore(d)
    assert "\n" not in str(e.value)
    (d / "state.sqlite").unlink()  # removed
    with pytest.raises(InputError, match="new or was emptied"):
        JobStore(d)
    with JobStore(tmp_path / "other") as other:  # another store's database
        other.submit([job()], now=0.0)
    (d / "state.sqlite").unlink(missing_ok=True)
    shutil.copy(tmp_path / "other" / "state.sqlite", d / "state.sqlite")
    with pytest.raises(InputError, match="foreign database"):
        JobStore(d)
    shutil.copy(keep, d / "state.sqlite")  # restored: accepted again
    with JobStore(d) as s:
        assert s.identity == ident and len(s.jobs()) == 2


def test_a_damaged_page_is_found_at_open(tmp_path: Path) -> None:
    """Issue #27 item 6: a corrupt page went unnoticed at start."""
    d = tmp_path / "st"
    with JobStore(d) as s:
        s.submit([job() for _ in range(300)], now=0.0)
    db = d / "state.sqlite"
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    # the last pages (the event log's and the indexes'), which opening the store never reads:
    # only PRAGMA quick_check finds them
    for start in range(len(data) - 3 * page, len(data), page):
        data[start : start + 8] = b"\xff" * 8
    db.write_bytes(bytes(data))
    with pytest.raises(InputError) as e:
        JobStore(d)
    text = str(e.value)
    assert "quick_check" in text and "\n" not in text


def test_a_read_only_state_directory_is_one_line(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(InputError) as e:
            JobStore(d)
        assert "\n" not in str(e.value)
    finally:
        d.chmod(0o700)


def test_the_service_counts_a_shared_gpu_once_as_busy(tmp_path) -> None:
    """``/metrics``' busy GPUs and ``status --why``'s free ones: two jobs sharing GPU 0 (a
    sharing policy) and one more on GPU 1 hold two GPUs, not three."""
    from ddlsched.live.service.server import ServeConfig, Service

    svc = Service(ServeConfig(state=str(tmp_path / "state"), policy="sjf-bsbf", launcher="local"))
    with JobStore(tmp_path / "state") as st:
        svc.store = st
        a, b = st.submit([job(gpus=1), job(gpus=2)], now=0.0)
        st.start(a, [0], attempt=0, now=1.0)
        st.start(b, [0, 1], attempt=0, now=1.0)
        assert svc.busy_gpus() == 2
