"""The live service's durable state: jobs and their events in ``DIR/state.sqlite`` (stdlib
``sqlite3``, WAL, ``synchronous=FULL``), every change one transaction committed before the
service acts on it, so that a ``kill -9`` loses nothing that was acknowledged.

States and the legal moves between them (anything else is a :class:`StateError` that changes
nothing)::

    submit → queued ⇄ running → finished
             queued (a stop under way) / cancelled → finished, when the job's processes
             show its work was done (exactly-once outcomes, docs/live.md);
             queued/running → cancelled, failed;  running → queued (preempt, crash with
             restarts left, recover after a service restart);  running → running on other
             GPUs (resize: a new attempt)
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..jobfile import MAX_RESTARTS, LiveJob

__all__ = [
    "SCHEMA_VERSION",
    "STATES",
    "ENDED",
    "Event",
    "JobStore",
    "StateError",
    "StoredJob",
    "UnknownJobError",
]

#: The schema this code reads and writes; a version 1 store is migrated in place at open
#: (:data:`MIGRATIONS`), any other version is refused.
SCHEMA_VERSION = 2
#: Every state a job can be in.
STATES: tuple[str, ...] = ("queued", "running", "finished", "failed", "cancelled")
#: The states a job never leaves.
ENDED: tuple[str, ...] = ("finished", "failed", "cancelled")
#: The file in the state directory naming the store its ``state.sqlite`` must be.
STORE_ID_FILE = "store-id"
#: Seconds a writer waits for another connection's lock before giving up.
BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    submitted_at REAL NOT NULL,
    command TEXT NOT NULL CHECK (json_valid(command) AND json_array_length(command) >= 1),
    gpus INTEGER NOT NULL CHECK (gpus >= 1),
    arrival REAL NOT NULL CHECK (arrival >= 0),
    app TEXT,
    batch_size INTEGER CHECK (batch_size IS NULL OR batch_size >= 1),
    duration REAL CHECK (duration IS NULL OR duration > 0),
    max_restarts INTEGER NOT NULL CHECK (max_restarts >= 0),
    checkpoint_dir TEXT,
    state TEXT NOT NULL CHECK (state IN ('queued','running','finished','failed','cancelled')),
    attempt INTEGER NOT NULL DEFAULT -1,
    failures INTEGER NOT NULL DEFAULT 0,
    gpus_held TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(gpus_held)),
    reason TEXT,
    finished_at REAL,
    procs TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(procs)),
    name TEXT,
    queue TEXT,
    priority TEXT
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    t REAL NOT NULL,
    job INTEGER REFERENCES jobs(id),
    event TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS events_job ON events(job);
"""

#: version → the statements that take a store of that version to the next one (issue #28:
#: version 2 adds the jobs' ``name``, ``queue`` and ``priority``; jobs stored before have
#: none: NULL, "no queue"). All of a store's steps run in one transaction with the version's
#: update, so a store is either migrated whole or left as it was.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "ALTER TABLE jobs ADD COLUMN name TEXT",
        "ALTER TABLE jobs ADD COLUMN queue TEXT",
        "ALTER TABLE jobs ADD COLUMN priority TEXT",
    ),
}


class StateError(InputError):
    """An illegal transition (finish a queued job, start a finished one …): names the job, its
    state and what was asked; the store is unchanged. The service answers it with 409."""


class UnknownJobError(StateError):
    """No job with that id in the store (the service answers 404)."""


@dataclass(frozen=True)
class StoredJob:
    """One job as the store has it: the submitted :class:`LiveJob` (its ``job_id`` is the
    store's id) and where it stands."""

    id: int
    submitted_at: float
    job: LiveJob
    state: str
    #: the last attempt started (-1: never started)
    attempt: int
    failures: int
    #: the GPUs it holds while running; () otherwise
    gpus_held: tuple[int, ...]
    reason: str | None
    finished_at: float | None


@dataclass(frozen=True)
class Event:
    """One row of the event log: ``seq`` increases with every committed change."""

    seq: int
    t: float
    job: int | None
    event: str
    detail: dict[str, Any]


def _time(now: float, what: str = "now") -> float:
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise InputError(f"{what} must be a finite number of seconds, got {now!r}")
    return float(now)


def _check_job(job: Any, index: int) -> None:
    """InputError for a job the store cannot hold (the file readers already refuse these; the
    store checks again because its callers may build jobs by hand)."""

    def bad(message: str, field: str) -> InputError:
        return InputError(f"job {index} of the submission: {message}", field=field)

    if not isinstance(job, LiveJob):
        raise InputError(f"job {index} of the submission: expected a LiveJob, got {job!r}")
    if (
        not isinstance(job.command, Sequence)
        or isinstance(job.command, str)
        or not job.command
        or not all(isinstance(a, str) for a in job.command)
        or not job.command[0].strip()
    ):
        raise bad("the command must be a non-empty list of text arguments", "command")
    for name, least in (("gpus", 1), ("max_restarts", 0), ("batch_size", 1)):
        value = getattr(job, name)
        if value is None and name == "batch_size":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise bad(f"{name} must be an integer >= {least}, got {value!r}", name)
    if job.max_restarts > MAX_RESTARTS:
        raise bad(f"max_restarts must be at most {MAX_RESTARTS}, got {job.max_restarts}",
                  "max_restarts")  # fmt: skip
    arrival = job.arrival
    if isinstance(arrival, bool) or not isinstance(arrival, int | float):
        raise bad(f"arrival must be a number of seconds, got {arrival!r}", "arrival")
    if not math.isfinite(arrival) or arrival < 0:
        raise bad(f"arrival must be >= 0 seconds, got {arrival!r}", "arrival")
    if job.duration is not None and (
        isinstance(job.duration, bool)
        or not isinstance(job.duration, int | float)
        or not math.isfinite(job.duration)
        or job.duration <= 0
    ):
        raise bad(f"duration must be > 0 seconds, got {job.duration!r}", "duration")


def _gpu_list(job_id: int, gpus: Sequence[int], verb: str) -> list[int]:
    """``gpus`` as a list of distinct GPU ids ≥ 0 (``StateError`` otherwise)."""
    held = list(gpus) if not isinstance(gpus, str | bytes) else []
    if (
        not held
        or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in held)
        or len(set(held)) != len(held)
    ):
        raise StateError(f"cannot {verb} job {job_id}: bad GPU list {gpus!r}")
    return held


def _check_attempt(job_id: int, attempt: int, last: int, verb: str) -> None:
    """An attempt number must be greater than every one before: an attempt never runs twice."""
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt <= last:
        raise StateError(
            f"cannot {verb} job {job_id}: attempt {attempt!r} is not after its last attempt {last}"
        )


class JobStore:
    """The durable job table and event log of one live service's state directory.

    Safe to share between threads (one connection behind a lock) and between processes
    (SQLite's file locks; writes take ``BEGIN IMMEDIATE`` and wait up to
    :data:`BUSY_TIMEOUT_S`). Every write method is one transaction, committed (and synced)
    before it returns; an exception leaves the store as it was."""

    def __init__(self, path: Path | str) -> None:
        directory = Path(path)
        self.directory = directory
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(
                f"cannot make the state directory: {e.strerror}", source=str(directory)
            ) from None
        self.path = directory / "state.sqlite"
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,  # autocommit: transactions are explicit
                check_same_thread=False,  # guarded by self._lock
            )
        except sqlite3.Error as e:
            raise InputError(f"cannot open the state store: {e}", source=str(self.path)) from None
        try:
            self._open()
            self._check_identity()
        except sqlite3.DatabaseError as e:
            self._db.close()
            text = str(e)
            if "readonly" in text or "read-only" in text or "unable to open" in text:
                raise InputError(
                    f"cannot write the state store ({text}): is the directory read-only?",
                    source=str(self.path),
                ) from None
            if "disk is full" in text or "disk I/O" in text:
                raise InputError(
                    f"cannot write the state store: {text}", source=str(self.path)
                ) from None
            raise InputError(
                f"not a ddlsched state store, or a damaged one (SQLite: {text})",
                source=str(self.path),
            ) from None
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        self.migrated_from = None
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
            raise InputError("cannot switch the state store to WAL mode", source=str(self.path))
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")
        with self._write() as cur:
            tables = {
                r[0] for r in cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if tables - {"sqlite_sequence"} and "schema_version" not in tables:
                raise InputError(
                    "not a ddlsched state store (it has no schema_version table)",
                    source=str(self.path),
                )
            if "schema_version" in tables:
                rows = cur.execute("SELECT version FROM schema_version").fetchall()
                found = rows[0][0] if len(rows) == 1 else None
                if found in MIGRATIONS and isinstance(found, int) and found < SCHEMA_VERSION:
                    for version in range(found, SCHEMA_VERSION):
                        for statement in MIGRATIONS[version]:
                            cur.execute(statement)
                    cur.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
                    self.migrated_from: int | None = found
                    return
                if found != SCHEMA_VERSION:
                    raise InputError(
                        f"state schema version {found} is not the version {SCHEMA_VERSION} "
                        "this ddlsched reads; use the ddlsched that wrote it or a new --state",
                        source=str(self.path),
                    )
                return
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    cur.execute(statement)
            cur.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    def _check_identity(self) -> None:
        """The store knows itself (issue #27): ``PRAGMA quick_check`` must answer ok, and the
        database's id must be the one the directory recorded (``store-id``), so that an
        emptied, replaced or foreign ``state.sqlite`` is refused instead of being taken for a
        new store (whose job 2 would resume the old job 2's checkpoint)."""
        db = self._db
        with self._lock:
            try:
                check = "; ".join(r[0] for r in db.execute("PRAGMA quick_check"))
            except sqlite3.DatabaseError as e:  # a damaged page it could not even walk
                check = str(e)
        if check != "ok":
            raise InputError(
                f"the state store is damaged (quick_check: {check[:200]}): restore it from a "
                "copy, or start the service with a new --state",
                source=str(self.path),
            )
        marker = self.directory / STORE_ID_FILE
        try:
            recorded = marker.read_text(encoding="ascii").strip() if marker.exists() else None
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read the store's id: {e}", source=str(marker)) from None
        with self._write() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS store_identity (id TEXT NOT NULL)")
            rows = cur.execute("SELECT id FROM store_identity").fetchall()
            had_jobs = cur.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] > 0
            if rows:
                ident = rows[0][0]
            elif recorded is not None and not had_jobs:
                raise InputError(
                    f"state.sqlite is new or was emptied, but this directory held store "
                    f"{recorded}: restore its state.sqlite, or start with a new --state",
                    source=str(self.path),
                )
            else:  # a new store, or one written before stores had ids
                ident = recorded or uuid.uuid4().hex
                cur.execute("INSERT INTO store_identity (id) VALUES (?)", (ident,))
        if recorded is not None and recorded != ident:
            raise InputError(
                f"state.sqlite is store {ident}, but this directory held store {recorded}: "
                "a replaced or foreign database; restore the right one or use a new --state",
                source=str(self.path),
            )
        if recorded is None:
            from ...core.results import atomic_write_bytes

            atomic_write_bytes(marker, (ident + "\n").encode("ascii"))
        self.identity = ident

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction: ``BEGIN IMMEDIATE`` (the write lock up front, so two
        writers never deadlock upgrading), committed at the end, rolled back on any error."""
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def close(self) -> None:
        """Close the connection (the data is already committed)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _event(cur: sqlite3.Cursor, t: float, job: int | None, event: str, **detail: Any) -> None:
        cur.execute(
            "INSERT INTO events (t, job, event, detail) VALUES (?, ?, ?, ?)",
            (t, job, event, json.dumps(detail, sort_keys=True)),
        )

    @staticmethod
    def _state(cur: sqlite3.Cursor, job_id: int) -> tuple[str, int, int, int]:
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise UnknownJobError(f"job id must be an integer, got {job_id!r}")
        row = cur.execute(
            "SELECT state, attempt, failures, max_restarts FROM jobs WHERE id = ?", (job_id,)
        ).fetchone()
        if row is None:
            raise UnknownJobError(f"no job {job_id}")
        return tuple(row)  # type: ignore[return-value]

    @staticmethod
    def _require(job_id: int, state: str, allowed: Iterable[str], action: str) -> None:
        allowed = tuple(allowed)
        if state not in allowed:
            raise StateError(
                f"cannot {action} job {job_id}: it is {state}, not {' or '.join(allowed)}"
            )

    # ------------------------------------------------------------------ writes
    def submit(self, jobs: Sequence[LiveJob], now: float) -> list[int]:
        """Store ``jobs`` as queued, all or none; their new ids (unique, never reused, even
        after a job is deleted or the store reopened). A job's own ``job_id`` is ignored."""
        t = _time(now)
        if isinstance(jobs, LiveJob) or not isinstance(jobs, Sequence) or not jobs:
            raise InputError("a submission must be a non-empty list of jobs")
        ids: list[int] = []
        with self._write() as cur:
            for index, job in enumerate(jobs):
                _check_job(job, index)  # inside the transaction: a bad job undoes the others
                cur.execute(
                    "INSERT INTO jobs (submitted_at, command, gpus, arrival, app, batch_size,"
                    " duration, max_restarts, checkpoint_dir, name, queue, priority, state)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued')",
                    (
                        t,
                        json.dumps(list(job.command)),
                        job.gpus,
                        float(job.arrival),
                        job.app,
                        job.batch_size,
                        None if job.duration is None else float(job.duration),
                        job.max_restarts,
                        job.checkpoint_dir,
                        job.name,
                        job.queue or None,
                        job.priority or None,
                    ),
                )
                job_id = int(cur.lastrowid)  # type: ignore[arg-type]
                self._event(cur, t, job_id, "submit", gpus=job.gpus)
                ids.append(job_id)
        return ids

    def start(self, job_id: int, gpus: Sequence[int], attempt: int, now: float) -> None:
        """queued → running on ``gpus`` as attempt number ``attempt`` (greater than every
        attempt started before: an attempt never runs twice)."""
        t = _time(now)
        held = _gpu_list(job_id, gpus, "start")
        with self._write() as cur:
            state, last, _f, _m = self._state(cur, job_id)
            self._require(job_id, state, ("queued",), "start")
            _check_attempt(job_id, attempt, last, "start")
            cur.execute(
                "UPDATE jobs SET state = 'running', attempt = ?, gpus_held = ? WHERE id = ?",
                (attempt, json.dumps(held), job_id),
            )
            self._event(cur, t, job_id, "start", gpus=held, attempt=attempt)

    def resize(
        self,
        job_id: int,
        gpus: Sequence[int],
        attempt: int,
        now: float,
        batch_size: int | None = None,
    ) -> None:
        """running → running on other ``gpus`` as a new ``attempt`` (an elastic policy's
        decision, e.g. Pollux: the job is stopped and restarted from its checkpoint), in one
        transaction, so a crash never leaves it half moved; ``batch_size``: the new total
        batch, recorded in the event."""
        t = _time(now)
        held = _gpu_list(job_id, gpus, "resize")
        with self._write() as cur:
            state, last, _f, _m = self._state(cur, job_id)
            self._require(job_id, state, ("running",), "resize")
            _check_attempt(job_id, attempt, last, "resize")
            before = json.loads(
                cur.execute("SELECT gpus_held FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
            )
            cur.execute(
                "UPDATE jobs SET attempt = ?, gpus_held = ? WHERE id = ?",
                (attempt, json.dumps(held), job_id),
            )
            self._event(
                cur,
                t,
                job_id,
                "resize",
                gpus=held,
                before=before,
                attempt=attempt,
                batch_size=batch_size,
            )

    def launched(self, job_id: int, attempt: int, procs: Sequence[Sequence[int]]) -> None:
        """Record the processes of ``job_id``'s running ``attempt`` as ``(pid, start time)``
        pairs (after the launch, so that a restarted service can end what a crashed one left
        running, by id); no event. Ignored if the job has since moved on."""
        rows = [[int(p), int(s)] for p, s in procs]
        with self._write() as cur:
            cur.execute(
                "UPDATE jobs SET procs = ? WHERE id = ? AND state = 'running' AND attempt = ?",
                (json.dumps(rows), job_id, attempt),
            )

    def leftover_procs(self) -> dict[int, list[tuple[int, int]]]:
        """Every job's recorded processes (``(pid, start time)``), for a restarted service to
        end those still alive; :meth:`forget_procs` once done."""
        with self._lock:
            rows = self._db.execute("SELECT id, procs FROM jobs WHERE procs != '[]'").fetchall()
        return {i: [(int(p), int(s)) for p, s in json.loads(procs)] for i, procs in rows}

    def forget_procs(self, job_ids: Iterable[int]) -> None:
        """Clear the recorded processes of ``job_ids`` (they are known to be gone)."""
        with self._write() as cur:
            cur.executemany("UPDATE jobs SET procs = '[]' WHERE id = ?", [(i,) for i in job_ids])

    def preempt(self, job_id: int, now: float, reason: str = "preempted") -> None:
        """running → queued (its GPUs freed); it keeps its attempt count and failures."""
        t = _time(now)
        with self._write() as cur:
            state, *_ = self._state(cur, job_id)
            self._require(job_id, state, ("running",), "preempt")
            cur.execute(
                "UPDATE jobs SET state = 'queued', gpus_held = '[]' WHERE id = ?", (job_id,)
            )
            self._event(cur, t, job_id, "preempt", reason=reason)

    def finish(self, job_id: int, now: float) -> None:
        """running → finished; also queued → finished (its last attempt finished its work
        while its preemption's stop was under way) and cancelled → finished (the work was
        done before the cancel reached the processes: exactly-once outcomes, docs/live.md)."""
        t = _time(now)
        with self._write() as cur:
            state, attempt, *_ = self._state(cur, job_id)
            if state == "queued" and attempt < 0:
                self._require(job_id, state, ("running",), "finish")
            self._require(job_id, state, ("running", "queued", "cancelled"), "finish")
            self._end(cur, job_id, "finished", t, None)
            extra = {"was": state} if state != "running" else {}
            self._event(cur, t, job_id, "finish", **extra)

    def fail(self, job_id: int, now: float, reason: str) -> None:
        """queued or running → failed, with the reason (a command that cannot start, …)."""
        t = _time(now)
        with self._write() as cur:
            state, *_ = self._state(cur, job_id)
            self._require(job_id, state, ("queued", "running"), "fail")
            self._end(cur, job_id, "failed", t, reason)
            self._event(cur, t, job_id, "fail", reason=reason)

    def cancel(self, job_id: int, now: float) -> bool:
        """queued or running → cancelled; False (and nothing changed) if it had already
        ended. The caller stops a running job's processes after this returns."""
        t = _time(now)
        with self._write() as cur:
            state, *_ = self._state(cur, job_id)
            if state in ENDED:
                return False
            self._end(cur, job_id, "cancelled", t, "cancelled")
            self._event(cur, t, job_id, "cancel", was=state)
            return True

    def crashed(self, job_id: int, now: float, reason: str) -> bool:
        """A running job's process crashed: failures += 1. True if it may restart
        (failures <= max_restarts; it goes back to queued and the caller starts it again with
        a new attempt), else False: it is failed with ``reason``."""
        t = _time(now)
        with self._write() as cur:
            state, attempt, failures, max_restarts = self._state(cur, job_id)
            # queued after a run: it crashed just before its preemption's stop was asked
            allowed = ("running", "queued") if attempt >= 0 else ("running",)
            self._require(job_id, state, allowed, "record a crash of")
            failures += 1
            again = failures <= max_restarts
            cur.execute("UPDATE jobs SET failures = ? WHERE id = ?", (failures, job_id))
            self._event(cur, t, job_id, "crash", reason=reason, failures=failures, restart=again)
            if again:
                cur.execute(
                    "UPDATE jobs SET state = 'queued', gpus_held = '[]' WHERE id = ?", (job_id,)
                )
            else:
                why = f"{reason} (failed {failures} times, max_restarts {max_restarts})"
                self._end(cur, job_id, "failed", t, why)
                self._event(cur, t, job_id, "fail", reason=why)
            return again

    def recover(self, now: float) -> list[int]:
        """After the service restarts: every job recorded running goes back to queued (event
        ``requeue``, reason "requeued after restart"); their ids, for the caller to reconcile
        with what still runs on Ray."""
        t = _time(now)
        with self._write() as cur:
            ids = [
                r[0] for r in cur.execute("SELECT id FROM jobs WHERE state = 'running' ORDER BY id")
            ]
            for job_id in ids:
                cur.execute(
                    "UPDATE jobs SET state = 'queued', gpus_held = '[]' WHERE id = ?", (job_id,)
                )
                self._event(cur, t, job_id, "requeue", reason="requeued after restart")
        return ids

    @staticmethod
    def _end(cur: sqlite3.Cursor, job_id: int, state: str, t: float, reason: str | None) -> None:
        cur.execute(
            "UPDATE jobs SET state = ?, gpus_held = '[]', reason = ?, finished_at = ? WHERE id = ?",
            (state, reason, t, job_id),
        )

    # ------------------------------------------------------------------ reads
    _COLUMNS = (
        "id, submitted_at, command, gpus, arrival, app, batch_size, duration, max_restarts,"
        " checkpoint_dir, state, attempt, failures, gpus_held, reason, finished_at,"
        " name, queue, priority"
    )

    @staticmethod
    def _stored(row: tuple) -> StoredJob:
        (id_, submitted, command, gpus, arrival, app, batch, duration, max_restarts, ckpt,
         state, attempt, failures, held, reason, finished, name, queue, priority) = row  # fmt: skip
        job = LiveJob(
            job_id=id_,
            arrival=arrival,
            gpus=gpus,
            command=tuple(json.loads(command)),
            app=app,
            max_restarts=max_restarts,
            checkpoint_dir=ckpt,
            duration=duration,
            batch_size=batch,
            name=name,
            queue=queue or "",
            priority=priority or "",
        )
        return StoredJob(
            id=id_,
            submitted_at=submitted,
            job=job,
            state=state,
            attempt=attempt,
            failures=failures,
            gpus_held=tuple(json.loads(held)),
            reason=reason,
            finished_at=finished,
        )

    def job(self, job_id: int) -> StoredJob:
        """The job with that id; :class:`UnknownJobError` if there is none."""
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise UnknownJobError(f"job id must be an integer, got {job_id!r}")
        with self._lock:
            row = self._db.execute(
                f"SELECT {self._COLUMNS} FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        if row is None:
            raise UnknownJobError(f"no job {job_id}")
        return self._stored(row)

    def jobs(self, states: Iterable[str] | None = None) -> list[StoredJob]:
        """Every job (or those in ``states``), by id."""
        sql = f"SELECT {self._COLUMNS} FROM jobs"
        args: tuple[str, ...] = ()
        if states is not None:
            args = tuple([states] if isinstance(states, str) else states)
            for s in args:
                if s not in STATES:
                    raise InputError(f"unknown job state {s!r}; valid: {', '.join(STATES)}")
            if not args:
                return []
            sql += f" WHERE state IN ({', '.join('?' * len(args))})"
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [self._stored(r) for r in rows]

    def events(self, since_seq: int = 0, limit: int | None = None) -> list[Event]:
        """The events after ``since_seq`` (0: all), oldest first; at most ``limit``."""
        sql = "SELECT seq, t, job, event, detail FROM events WHERE seq > ? ORDER BY seq"
        args: tuple[int, ...] = (since_seq,)
        if limit is not None:
            sql += " LIMIT ?"
            args += (limit,)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [Event(s, t, j, e, json.loads(d)) for s, t, j, e, d in rows]

    def counts(self) -> dict[str, int]:
        """Jobs per state (every state, 0 when none), events per kind (``event:KIND``) and
        ``restarts``: attempts started again after a crash, a hang or a service restart."""
        with self._lock:
            states = dict(self._db.execute("SELECT state, count(*) FROM jobs GROUP BY state"))
            events = dict(self._db.execute("SELECT event, count(*) FROM events GROUP BY event"))
            restarts = self._db.execute(
                "SELECT count(*) FROM events WHERE (event = 'crash' AND"
                " json_extract(detail, '$.restart')) OR event = 'requeue'"
            ).fetchone()[0]
        out = {s: int(states.get(s, 0)) for s in STATES}
        out["restarts"] = int(restarts)
        out.update({f"event:{k}": int(v) for k, v in events.items()})
        return out

    def queue_counts(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Per (queue, state) with jobs: (jobs, GPUs held); a job without a queue under ""."""
        with self._lock:
            rows = self._db.execute(
                "SELECT coalesce(queue, ''), state, count(*), sum(json_array_length(gpus_held))"
                " FROM jobs GROUP BY 1, 2"
            ).fetchall()
        return {(q, s): (int(n), int(g or 0)) for q, s, n, g in rows}

    def job_events(self, job_id: int) -> list[Event]:
        """The events of one job, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, t, job, event, detail FROM events WHERE job = ? ORDER BY seq",
                (job_id,),
            ).fetchall()
        return [Event(s, t, j, e, json.loads(d)) for s, t, j, e, d in rows]

    def integrity(self) -> str:
        """``PRAGMA integrity_check``'s answer: "ok" for a sound file."""
        with self._lock:
            return "; ".join(r[0] for r in self._db.execute("PRAGMA integrity_check"))
