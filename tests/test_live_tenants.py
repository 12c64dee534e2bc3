"""``ddlsched serve --queues`` (issue #28 item 6): Kueue's quota layer in the service, jobs'
names, queues and priorities, a token per LocalQueue and the admin's, ``/metrics`` per queue,
``status --why``, and the state store's migration from schema version 1.

The service tests run real ``ddlsched serve --local`` processes (``test_live_service``'s
harness: loopback only, bounded in time, ended by pid, nothing left behind)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_live_service import cli, home, job, serve  # noqa: F401 - home: the fixture

from ddlsched.errors import InputError
from ddlsched.live.jobfile import LiveJob, read_live_jobs
from ddlsched.live.service.httpapi import ADMIN, _authorised
from ddlsched.live.service.store import SCHEMA_VERSION, JobStore
from ddlsched.live.service.tenants import TENANT_TOKENS_FILE, tenant_tokens
from ddlsched.tenancy import load_queues

QUEUES = """\
[[resourceFlavor]]
name = "v100"

[[cohort]]
name = "lab"

[[clusterQueue]]
name = "cq-a"
cohortName = "lab"
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{ name = "v100", resources = [{ name = "nvidia.com/gpu", nominalQuota = 2 }] }]

[[clusterQueue]]
name = "cq-b"
cohortName = "lab"
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [
  { name = "v100", resources = [{ name = "nvidia.com/gpu", nominalQuota = 2, lendingLimit = 0 }] },
]

[[clusterQueue]]
name = "cq-c"
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{ name = "v100", resources = [{ name = "nvidia.com/gpu", nominalQuota = 2 }] }]

[[localQueue]]
name = "team-a"
clusterQueue = "cq-a"

[[localQueue]]
name = "team-b"
clusterQueue = "cq-b"

[[localQueue]]
name = "team-c"
clusterQueue = "cq-c"

[[workloadPriorityClass]]
name = "high"
value = 100
"""

#: the schema of a version 1 store (ddlsched before issue #28), as it was
V1_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE jobs (
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
    procs TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(procs))
);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    t REAL NOT NULL,
    job INTEGER REFERENCES jobs(id),
    event TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
);
CREATE INDEX jobs_state ON jobs(state);
CREATE INDEX events_job ON events(job);
CREATE TABLE store_identity (id TEXT NOT NULL);
"""


def v1_store(directory: Path, extra: str = "") -> None:
    """A version 1 store with two jobs (one finished, one queued), as ddlsched 1 left it."""
    directory.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(directory / "state.sqlite")
    db.executescript(V1_SCHEMA + extra)
    db.execute("INSERT INTO schema_version VALUES (1)")
    db.execute("INSERT INTO store_identity VALUES ('abc123')")
    for state in ("finished", "queued"):
        db.execute(
            "INSERT INTO jobs (submitted_at, command, gpus, arrival, max_restarts, state)"
            ' VALUES (100.0, \'["python3", "job.py"]\', 2, 0, 3, ?)',
            (state,),
        )
        db.execute(
            "INSERT INTO events (t, job, event) VALUES (100.0, last_insert_rowid(), 'submit')"
        )
    db.commit()
    db.close()
    (directory / "store-id").write_text("abc123\n")


# ------------------------------------------------------------------ the store's migration
def test_a_version_1_store_is_migrated_in_place(tmp_path: Path) -> None:
    v1_store(tmp_path / "s")
    with JobStore(tmp_path / "s") as store:
        assert store.migrated_from == 1
        old = store.jobs()
        assert [(j.id, j.state, j.job.queue, j.job.name) for j in old] == [
            (1, "finished", "", None),
            (2, "queued", "", None),
        ]
        assert store.identity == "abc123"
        (new,) = store.submit(
            [LiveJob(0, 0.0, 1, ("python3",), name="n", queue="team-a", priority="high")], 200.0
        )
        assert new == 3
        j = store.job(3)
        assert (j.job.name, j.job.queue, j.job.priority) == ("n", "team-a", "high")
    with JobStore(tmp_path / "s") as store:  # opened again: already current
        assert store.migrated_from is None
        assert store.job(3).job.name == "n"
    db = sqlite3.connect(tmp_path / "s" / "state.sqlite")
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    db.close()


def test_a_migration_that_fails_leaves_the_version_1_store_as_it_was(tmp_path: Path) -> None:
    # a column the migration adds is there already: its second step fails, the first undone
    v1_store(tmp_path / "s", "ALTER TABLE jobs ADD COLUMN queue TEXT;")
    with pytest.raises(InputError):
        JobStore(tmp_path / "s")
    db = sqlite3.connect(tmp_path / "s" / "state.sqlite")
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
    columns = [r[1] for r in db.execute("PRAGMA table_info(jobs)")]
    assert "name" not in columns and "priority" not in columns
    db.close()


# ------------------------------------------------------------------ jobs' fields
def test_job_files_take_name_queue_and_priority(tmp_path: Path) -> None:
    f = tmp_path / "jobs.toml"
    f.write_text('[[jobs]]\narrival = 0\ngpus = 1\ncommand = ["python3"]\nname = " a <b> "\n'
                 'queue = "team-a"\npriority = 5\n')  # fmt: skip
    (j,) = read_live_jobs(f)
    assert (j.name, j.queue, j.priority) == ("a <b>", "team-a", "5")
    f.write_text('[[jobs]]\narrival = 0\ngpus = 1\ncommand = ["python3"]\nname = "a\\u0007"\n')
    with pytest.raises(InputError, match="name"):
        read_live_jobs(f)


# ------------------------------------------------------------------ token rules
def test_tenant_tokens_are_made_kept_private_and_unique(tmp_path: Path) -> None:
    q = tmp_path / "q.toml"
    q.write_text(QUEUES)
    config = load_queues(str(q))
    tokens = tenant_tokens(tmp_path, config, "admin-token-0123456789")
    assert sorted(tokens) == ["team-a", "team-b", "team-c"]
    path = tmp_path / TENANT_TOKENS_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert tenant_tokens(tmp_path, config, "admin-token-0123456789") == tokens  # kept
    doc = json.loads(path.read_text())
    doc["team-b"] = doc["team-a"]
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="not unique"):
        tenant_tokens(tmp_path, config, "admin")
    doc["team-b"] = "admin-token-0123456789"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="not unique"):
        tenant_tokens(tmp_path, config, "admin-token-0123456789")
    os.chmod(path, 0o644)
    with pytest.raises(InputError, match="chmod 600"):
        tenant_tokens(tmp_path, config, "admin")


def test_a_request_is_the_admin_a_tenant_or_refused() -> None:
    svc = SimpleNamespace(token="admin-token-0123456789", tenants={"tenant-a-token-0123": "team-a"})

    def who(token: str) -> str | None:
        return _authorised(svc, "GET", "/jobs", {}, {"Authorization": f"Bearer {token}"})  # type: ignore[arg-type]

    assert who("admin-token-0123456789") == ADMIN
    assert who("tenant-a-token-0123") == "team-a"
    assert who("tenant-a-token-0124") is None
    assert who("") is None


# ------------------------------------------------------------------ the service
def _queues(path: Path) -> str:
    q = path / "q.toml"
    q.write_text(QUEUES)
    return str(q)


def test_serve_with_queues_admits_by_quota_and_says_why(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home, "--queues", _queues(path))
    ids = svc.submit(job(tag, steps=400, queue="team-a", name="first", priority="high"),
                     job(tag, steps=400, queue="team-a", name="second"))  # fmt: skip
    status, doc = svc.call("GET", f"/jobs/{ids[0]}")
    assert (doc["name"], doc["queue"], doc["priority"]) == ("first", "team-a", "high")  # type: ignore[index]
    for bad, field in (({"queue": "team-z"}, "queue"), ({"queue": "team-a", "priority": "top"},
                       "priority"), ({"queue": "team-a", "gpus": 4}, "gpus"), ({}, "queue")):  # fmt: skip
        status, doc = svc.call("POST", "/jobs", {"jobs": [job(tag, **bad)]})
        assert status == 400 and field in doc["error"] and "\n" not in doc["error"], doc  # type: ignore[index]
    deadline = __import__("time").monotonic() + 30
    while svc.jobs()[ids[0]]["state"] != "running":
        assert __import__("time").monotonic() < deadline
        __import__("time").sleep(0.1)
    __import__("time").sleep(0.5)  # a few passes: the second stays held by its quota
    assert svc.jobs()[ids[1]]["state"] == "queued"
    out = cli(path, "status", "--why", str(ids[1]), "--server", svc.url)
    assert out.returncode == 0, out.stderr
    assert "ClusterQueue cq-a: insufficient unused quota for nvidia.com/gpu in flavor v100, " \
           "2 more needed" in out.stdout, out.stdout  # fmt: skip
    out = cli(path, "status", "--why", str(ids[0]), "--server", svc.url)
    assert "running on GPU(s)" in out.stdout
    out = cli(path, "status", "--server", svc.url)
    assert "first [team-a]" in out.stdout and "second [team-a]" in out.stdout, out.stdout
    for i in ids:
        assert svc.call("DELETE", f"/jobs/{i}")[0] == 200
    svc.wait_ended(ids)
    assert svc.drain() == 0


def test_tenant_tokens_reach_their_own_queue_only(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home, "--queues", _queues(path))
    tokens = json.loads((svc.state / TENANT_TOKENS_FILE).read_text())
    assert stat.S_IMODE(os.stat(svc.state / TENANT_TOKENS_FILE).st_mode) == 0o600
    a = {"Authorization": f"Bearer {tokens['team-a']}"}
    b = {"Authorization": f"Bearer {tokens['team-b']}"}
    status, doc = svc.call("POST", "/jobs", {"jobs": [job(tag, steps=400)]}, headers=a)
    assert status == 201, doc
    (mine,) = doc["ids"]  # type: ignore[index]
    assert svc.jobs()[mine]["queue"] == "team-a"  # a tenant's job goes to its LocalQueue
    status, doc = svc.call("POST", "/jobs", {"jobs": [job(tag, queue="team-b")]}, headers=a)
    assert status == 403 and "team-a" in doc["error"], doc  # type: ignore[index]
    (other,) = svc.submit(job(tag, steps=400, queue="team-b"))  # the admin's: any queue
    status, doc = svc.call("GET", "/jobs", headers=b)
    assert [j["id"] for j in doc["jobs"]] == [other]  # type: ignore[index]
    for method, where in (("GET", f"/jobs/{mine}"), ("DELETE", f"/jobs/{mine}"),
                          ("GET", f"/jobs/{mine}/why"), ("GET", "/metrics")):  # fmt: skip
        status, doc = svc.call(method, where, headers=b)
        assert status == 403 and "\n" not in doc["error"], (method, where, doc)  # type: ignore[index]
    assert svc.call("POST", "/drain", {}, headers=b)[0] == 403
    status, doc = svc.call("GET", "/api/overview", headers=b)
    assert {j["id"] for j in doc["queue"] + doc["running"]} == {other}  # type: ignore[index,operator]
    status, text = svc.call("GET", "/metrics")
    assert status == 200
    assert 'ddlsched_queue_jobs{queue="team-a",state="cancelled"} 0' in text  # type: ignore[operator]
    assert 'ddlsched_cluster_queue_nominal_gpus{cluster_queue="cq-c"} 2' in text  # type: ignore[operator]
    # the CLI with a tenant's token: submit --name, status shows it; cancel its own job
    tf = path / "a.token"
    tf.write_text(tokens["team-a"])
    os.chmod(tf, 0o600)
    out = cli(path, "submit", "--command", f"python3 job.py 5 ok {tag}", "--name", "mine-2",
              "--server", svc.url, "--token-file", str(tf))  # fmt: skip
    assert out.returncode == 0, out.stderr
    out = cli(path, "status", "--server", svc.url, "--token-file", str(tf))
    assert "mine-2 [team-a]" in out.stdout and str(other) not in out.stdout.split("\n", 1)[1][:7]
    out = cli(path, "cancel", str(other), "--server", svc.url, "--token-file", str(tf))
    assert out.returncode != 0 and "403" in out.stderr
    assert svc.call("DELETE", f"/jobs/{mine}", headers=a)[0] == 200
    assert svc.call("DELETE", f"/jobs/{other}")[0] == 200
    svc.wait_ended([mine, other])
    assert svc.drain() == 0


def test_without_queues_a_job_naming_a_queue_is_refused_and_names_work(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home)
    status, doc = svc.call("POST", "/jobs", {"jobs": [job(tag, queue="team-a")]})
    assert status == 400 and "queue" in doc["error"], doc  # type: ignore[index]
    (i,) = svc.submit(job(tag, steps=5, name="<b>x</b>"))
    assert svc.jobs()[i]["name"] == "<b>x</b>"
    status, page = svc.call("GET", "/")
    assert "<b>x</b>" not in page and "\\u003cb\\u003ex" in page  # type: ignore[operator]
    out = cli(path, "status", "--why", str(i), "--server", svc.url)
    assert out.returncode == 0 and f"job {i}: " in out.stdout, out.stderr
    svc.wait_ended([i])
    assert svc.drain() == 0


def test_a_version_1_store_serves_its_old_jobs(home) -> None:  # noqa: F811
    path, tag, _ = home
    v1_store(path / "state")
    db = sqlite3.connect(path / "state" / "state.sqlite")
    db.execute("UPDATE jobs SET command = ? WHERE id = 2",
               (json.dumps(["python3", "job.py", "5", "ok", tag]),))  # fmt: skip
    db.commit()
    db.close()
    svc = serve(home)
    assert "migrated from schema version 1" in svc.log.read_text()
    jobs = svc.wait_ended([2])
    assert jobs[2]["state"] == "finished" and jobs[2]["queue"] is None
    assert svc.drain() == 0


RECLAIM = """\
[[resourceFlavor]]
name = "default"

[[clusterQueue]]
name = "x"
cohortName = "lab"
preemption = { reclaimWithinCohort = "Any" }
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{ name = "default", resources = [{ name = "nvidia.com/gpu", nominalQuota = 4 }] }]

[[clusterQueue]]
name = "y"
cohortName = "lab"
preemption = { reclaimWithinCohort = "Any" }
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{ name = "default", resources = [{ name = "nvidia.com/gpu", nominalQuota = 4 }] }]

[[clusterQueue]]
name = "z"
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{ name = "default", resources = [{ name = "nvidia.com/gpu", nominalQuota = 4 }] }]
"""


def _wait_state(svc, job_id: int, state: str, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while svc.jobs()[job_id]["state"] != state:
        assert time.monotonic() < deadline, (svc.jobs()[job_id], svc.log.read_text()[-2000:])
        time.sleep(0.1)


def test_kueue_reclaims_a_running_borrower_in_the_service_and_it_resumes(home) -> None:  # noqa: F811
    import time

    from test_live_service import starting_steps

    path, tag, _ = home
    q = path / "reclaim.toml"
    q.write_text(RECLAIM)
    svc = serve(home, "--queues", str(q))
    # x borrows y's idle quota for an 8-GPU job (the whole cluster)
    (borrower,) = svc.submit(job(tag, steps=100, gpus=8, queue="x"))
    _wait_state(svc, borrower, "running")
    time.sleep(1.0)  # a few checkpoints
    (owner,) = svc.submit(job(tag, steps=20, gpus=4, queue="y"))
    # y's job reclaims its nominal quota: Kueue evicts the running borrower (a stop, with
    # its checkpoint), the owner runs, then the borrower is admitted again and resumes
    jobs = svc.wait_ended([borrower, owner], timeout=90)
    assert jobs[borrower]["state"] == jobs[owner]["state"] == "finished"
    status, doc = svc.call("GET", f"/jobs/{borrower}")
    events = doc["events"]  # type: ignore[index]
    preempts = [e for e in events if e["event"] == "preempt"]
    assert preempts and all(
        e["reason"] == "evicted by Kueue: InCohortReclamation" for e in preempts
    ), events
    assert [e["event"] for e in events].count("start") >= 2
    assert starting_steps(path / "state", borrower)[-1] > 0  # resumed from its checkpoint
    # the owner started after the borrower's stop was requested, never before
    owner_start = next(e["t"] for e in svc.call("GET", f"/jobs/{owner}")[1]["events"]  # type: ignore[index]
                       if e["event"] == "start")  # fmt: skip
    assert owner_start >= preempts[0]["t"]
    assert svc.drain() == 0


def test_why_says_admitted_and_waiting_for_the_policy(home) -> None:  # noqa: F811
    path, tag, _ = home
    q = path / "reclaim.toml"
    q.write_text(RECLAIM)
    svc = serve(home, "--queues", str(q))
    # quotas add up to 12 GPUs on an 8-GPU cluster: z's job is admitted by its quota while
    # every GPU is busy, so it waits for the policy, not for Kueue
    first = svc.submit(
        job(tag, steps=400, gpus=4, queue="x"), job(tag, steps=400, gpus=4, queue="y")
    )
    for i in first:
        _wait_state(svc, i, "running")
    (third,) = svc.submit(job(tag, steps=400, gpus=4, queue="z"))
    __import__("time").sleep(0.5)
    assert svc.jobs()[third]["state"] == "queued"
    out = cli(path, "status", "--why", str(third), "--server", svc.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines() == [
        f"job {third}: admitted by ClusterQueue z (flavor default, 4 nvidia.com/gpu); "
        "waiting for the policy fifo to start it",
        f"job {third}: 0 of 8 GPUs free now, it asks 4: it waits for GPUs to free up",
    ], out.stdout
    for i in (*first, third):
        assert svc.call("DELETE", f"/jobs/{i}")[0] == 200
    svc.wait_ended([*first, third])
    assert svc.drain() == 0


def test_why_says_whether_a_job_waits_for_gpus_or_for_the_policy() -> None:
    """``status --why`` of a queued job the policy has not started: with too few free GPUs it
    waits for GPUs; with enough free, the policy's order or rounds keep it queued."""
    from ddlsched.live.service.store import StoredJob
    from ddlsched.live.service.tenants import explain

    def stored(gpus: int) -> StoredJob:
        return StoredJob(id=5, submitted_at=0.0, state="queued", attempt=-1, failures=0,
                         gpus_held=(), reason=None, finished_at=None,
                         job=LiveJob(job_id=5, arrival=0.0, gpus=gpus, command=("true",)))  # fmt: skip

    head = "queued: the service runs without --queues; waiting for the policy tiresias to start it"
    assert explain(None, stored(2), "tiresias") == [head]  # the service gave no GPU counts
    assert explain(None, stored(4), "tiresias", (3, 8)) == [
        head, "3 of 8 GPUs free now, it asks 4: it waits for GPUs to free up"]  # fmt: skip
    lines = explain(None, stored(2), "tiresias", (3, 8))
    assert lines[0] == head and lines[1].startswith(
        "3 of 8 GPUs free now, it asks 2: the policy tiresias has not started it (its order"
    )


TYPED = """\
[[resourceFlavor]]
name = "V100"
[[resourceFlavor]]
name = "k80"

[[clusterQueue]]
name = "cq-t"
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [
  { name = "V100", resources = [{ name = "nvidia.com/gpu", nominalQuota = 2 }] },
  { name = "k80", resources = [{ name = "nvidia.com/gpu", nominalQuota = 2 }] },
]

[[localQueue]]
name = "team-t"
clusterQueue = "cq-t"
"""


def test_serve_holds_a_typed_flavors_jobs_to_its_gpu_type(home) -> None:  # noqa: F811
    """`serve --queues` on gavel-4:0:4 (GPUs 0-3 V100, 4-7 K80, one per server): the first
    2-GPU job is admitted in flavor V100 and the second, V100's quota used, in k80. fifo
    would put the second on GPUs 2-3 (the lowest free); its flavor holds it to the K80s."""
    path, tag, _ = home
    q = path / "typed.toml"
    q.write_text(TYPED)
    svc = serve(home, "--cluster", "gavel-4:0:4", "--queues", str(q))
    ids = svc.submit(*[job(tag, steps=400, queue="team-t") for _ in range(2)])
    for i in ids:
        _wait_state(svc, i, "running")
    jobs = svc.jobs()
    assert set(jobs[ids[0]]["gpus_held"]) <= {0, 1, 2, 3}, jobs[ids[0]]
    assert set(jobs[ids[1]]["gpus_held"]) <= {4, 5, 6, 7}, jobs[ids[1]]
    for i in ids:
        assert svc.call("DELETE", f"/jobs/{i}")[0] == 200
    svc.wait_ended(ids)
    assert svc.drain() == 0


def test_a_reclaimed_borrower_moves_to_its_next_flavors_gpus_and_resumes(home) -> None:  # noqa: F811
    """gavel-4:0:4 served with test_tenancy_engine's RECLAIM manifest: a's job borrows b's
    V100 quota and runs on the V100s (GPUs 0-3); b's job reclaims it, and Kueue admits a's
    job again in k80 in the same pass. The job stops (its checkpoint kept), starts again on
    the K80s (GPUs 4-7) and resumes; b's job runs on the V100s; each finishes once."""
    import time

    from test_live_service import starting_steps
    from test_tenancy_engine import RECLAIM

    path, tag, _ = home
    q = path / "typed-reclaim.toml"
    q.write_text(RECLAIM)
    svc = serve(home, "--cluster", "gavel-4:0:4", "--queues", str(q))
    (borrower,) = svc.submit(job(tag, steps=100, gpus=4, queue="a"))
    _wait_state(svc, borrower, "running")
    assert set(svc.jobs()[borrower]["gpus_held"]) == {0, 1, 2, 3}
    time.sleep(1.0)  # a few checkpoints
    (owner,) = svc.submit(job(tag, steps=20, gpus=4, queue="b"))
    jobs = svc.wait_ended([borrower, owner], timeout=90)
    assert jobs[borrower]["state"] == jobs[owner]["state"] == "finished"
    events = svc.call("GET", f"/jobs/{borrower}")[1]["events"]  # type: ignore[index]
    starts = [e for e in events if e["event"] == "start"]
    assert len(starts) == 2, events
    assert set(starts[-1]["gpus"]) == {4, 5, 6, 7}, starts
    preempts = [e for e in events if e["event"] == "preempt"]
    assert [e["reason"] for e in preempts] == ["evicted by Kueue: InCohortReclamation"]
    assert starting_steps(path / "state", borrower)[-1] > 0  # resumed from its checkpoint
    owner_events = svc.call("GET", f"/jobs/{owner}")[1]["events"]  # type: ignore[index]
    assert {g for e in owner_events if e["event"] == "start" for g in e["gpus"]} == {0, 1, 2, 3}
    assert svc.drain() == 0
