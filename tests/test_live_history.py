"""What a service's store says happened (ddlsched.live.service.history) and the records a submission
is checked as (jobfile.jobs_from_records): hand-made event logs in a real JobStore."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlsched.core.cluster import Cluster
from ddlsched.errors import InputError
from ddlsched.live.jobfile import LiveJob, jobs_from_records
from ddlsched.live.service.history import (
    histories,
    metrics_text,
    origin_of,
    run_result,
    utilisation,
)
from ddlsched.live.service.store import JobStore


def _job(gpus: int = 2, arrival: float = 0.0, max_restarts: int = 3) -> LiveJob:
    return LiveJob(job_id=0, arrival=arrival, gpus=gpus, command=("python3", "t.py"),
                   max_restarts=max_restarts)  # fmt: skip


@pytest.fixture
def store(tmp_path: Path):
    s = JobStore(tmp_path / "st")
    yield s
    s.close()


def test_segments_preemptions_and_in_place_restarts(store: JobStore) -> None:
    a, b, c = store.submit([_job(), _job(arrival=5.0), _job(max_restarts=0)], now=100.0)
    store.start(a, [0, 1], 0, 101.0)
    store.preempt(a, 104.0)
    store.start(a, [2, 3], 1, 106.0)
    assert store.crashed(a, 107.0, "exit codes [1]")  # restarts in place: same segment
    store.start(a, [2, 3], 2, 107.5)
    store.finish(a, 110.0)
    store.start(b, [0, 1], 0, 106.0)  # still running
    store.start(c, [4], 0, 101.0)
    assert not store.crashed(c, 102.0, "exit codes [3]")
    jobs, events = store.jobs(), store.events()
    assert origin_of(jobs) == 100.0
    h = histories(jobs, events, 100.0)
    assert h[a].segments == [(1.0, 4.0, (0, 1)), (6.0, 10.0, (2, 3))]
    assert h[a].preemptions == 1
    assert h[b].segments == [(6.0, None, (0, 1))]
    assert h[c].segments == [(1.0, 2.0, (4,))]
    util = utilisation(h.values(), 8, now=12.0)
    assert util[0] == [0.0, 0.0] and util[-1] == [12.0, 0.25]  # job b holds 2 of 8 GPUs now
    assert [1.0, 0.375] in util and [2.0, 0.25] in util
    res, extra = run_result(Cluster.homogeneous(1, 8), jobs, events)
    # b has not ended; c failed: named in failed_job_ids, not a JCT (issue #26)
    assert [r.job_id for r in res.jobs] == [a]
    first = res.jobs[0]
    assert (first.arrival, first.start, first.finish, first.preemptions) == (0.0, 1.0, 10.0, 1)
    assert extra["failed_job_ids"] == [c] and extra["unfinished_job_ids"] == [b]
    assert extra["interrupted"] is True


def test_a_job_that_finished_while_being_stopped_ran_until_it_finished(store: JobStore) -> None:
    """A preemption (or cancel) committed, then the attempt's processes reported done before
    they stopped (``finish`` with ``was``): the job ran until the finish, and that stop was
    no preemption — the export's segments end at the finish (``ddlsched check``)."""
    a, b = store.submit([_job(), _job()], now=100.0)
    store.start(a, [0, 1], 0, 101.0)
    store.preempt(a, 104.0)
    store.start(a, [2, 3], 1, 106.0)
    store.preempt(a, 109.0)
    store.finish(a, 109.4)  # was: queued
    store.start(b, [4, 5], 0, 101.0)
    store.cancel(b, 103.0)
    store.finish(b, 103.2)  # was: cancelled
    jobs, events = store.jobs(), store.events()
    assert [e.detail for e in events if e.event == "finish"] == [
        {"was": "queued"},
        {"was": "cancelled"},
    ]
    h = histories(jobs, events, 100.0)
    assert h[a].segments == [(1.0, 4.0, (0, 1)), (6.0, 109.4 - 100.0, (2, 3))]
    assert h[a].preemptions == 1
    assert h[b].segments == [(1.0, 103.2 - 100.0, (4, 5))] and h[b].preemptions == 0
    res, _ = run_result(Cluster.homogeneous(1, 8), jobs, events)
    rec = {r.job_id: r for r in res.jobs}
    assert rec[a].finish == 109.4 - 100.0 and rec[a].preemptions == 1


def test_a_cancelled_job_that_never_ran_is_not_a_record(store: JobStore) -> None:
    (a,) = store.submit([_job()], now=0.0)
    store.cancel(a, 3.0)
    res, extra = run_result(Cluster.homogeneous(1, 8), store.jobs(), store.events())
    assert res.jobs == () and extra["cancelled_job_ids"] == [a]
    assert extra["interrupted"] is False


def test_metrics_text_counts() -> None:
    text = metrics_text({"queued": 2, "running": 1, "finished": 5, "restarts": 3,
                         "event:submit": 9, "event:preempt": 4}, gpus=8, busy_gpus=2,
                        draining=True)  # fmt: skip
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert lines["ddlsched_queue_length"] == "2"
    assert lines["ddlsched_gpu_utilization"] == "0.25"
    assert lines["ddlsched_preemptions_total"] == "4"
    assert lines["ddlsched_restarts_total"] == "3"
    assert lines["ddlsched_draining"] == "1"
    assert lines['ddlsched_jobs_ended_total{state="cancelled"}'] == "0"


def test_submitted_records_are_checked_like_job_files() -> None:
    (one,) = jobs_from_records({"command": ["python3", "t.py"], "gpus": 2}, "request")
    assert one.arrival == 0 and one.gpus == 2 and one.command == ("python3", "t.py")
    with pytest.raises(InputError, match=r"request, field 'jobs\[1\]\.gpus'"):
        jobs_from_records([{"command": ["a"], "gpus": 1}, {"command": ["a"], "gpus": "2"}],
                          "request")  # fmt: skip
    with pytest.raises(InputError, match="unknown key 'gpu'"):
        jobs_from_records([{"command": ["a"], "gpu": 1}], "request")
    for bad in ([], "text", [1, 2], None):
        with pytest.raises(InputError):
            jobs_from_records(bad, "request")
