"""Trace jobs with a measured duration (issue #6): the duration executor under FIFO, SJF and
Tiresias (hand-worked JCTs, preemption keeping progress, restart delay), the API's choices and
errors, and a CLI run on a tiny Philly-format trace."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ddlsched.api import Settings, build_simulator, simulate
from ddlsched.cli import main
from ddlsched.core.cluster import Cluster
from ddlsched.core.durationexec import DurationExecutor
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.simulator import Simulator
from ddlsched.errors import InputError
from ddlsched.policies.luo import Exclusive
from ddlsched.policies.tiresias import Tiresias

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def jobs_of(*rows: tuple[float, int, float]) -> list[JobSpec]:
    """Duration jobs from (arrival, GPUs, duration) rows, numbered in order."""
    return [
        JobSpec(i, arrival, gpus, 0, TRACE, duration=dur)
        for i, (arrival, gpus, dur) in enumerate(rows)
    ]


def one_server() -> Cluster:
    return Cluster.homogeneous(1, 4)


def by_id(res):
    return {j.job_id: j for j in res.jobs}


# ---------------------------------------------------------------------- FIFO and SJF by hand
def test_fifo_runs_in_arrival_order():
    # A (4 GPUs, 100 s) from 0; B (4 GPUs, 50 s) at 10 and C (4 GPUs, 30 s) at 20 wait:
    # B 100–150, C 150–180 → JCTs 100, 140, 160
    jobs = jobs_of((0, 4, 100), (10, 4, 50), (20, 4, 30))
    res = simulate(one_server(), jobs, "fifo")
    assert [(j.start, j.finish, j.jct) for j in res.jobs] == [
        (0.0, 100.0, 100.0),
        (100.0, 150.0, 140.0),
        (150.0, 180.0, 160.0),
    ]
    assert res.summary["avg_jct"] == pytest.approx(400 / 3)


def test_sjf_runs_the_shortest_remaining_duration_first():
    # same jobs: at 100 C (30 s) goes before B (50 s): C 100–130, B 130–180 → JCTs 100, 170, 110
    jobs = jobs_of((0, 4, 100), (10, 4, 50), (20, 4, 30))
    res = by_id(simulate(one_server(), jobs, "sjf"))
    assert (res[1].start, res[1].jct) == (130.0, 170.0)
    assert (res[2].start, res[2].jct) == (100.0, 110.0)


def test_fifo_backfills_a_job_that_fits():
    # A (2 GPUs, 100 s) runs; B (4 GPUs) at 1 does not fit; C (2 GPUs, 10 s) at 2 backfills
    jobs = jobs_of((0, 2, 100), (1, 4, 10), (2, 2, 10))
    res = by_id(simulate(one_server(), jobs, "fifo"))
    assert (res[2].start, res[2].finish) == (2.0, 12.0)
    assert (res[1].start, res[1].finish) == (100.0, 110.0)


def test_fifo_without_backfill_blocks_behind_the_first_waiting_job():
    jobs = jobs_of((0, 2, 100), (1, 4, 10), (2, 2, 10))
    sim = Simulator(
        one_server(),
        jobs,
        Exclusive("fifo", backfill=False),
        DurationExecutor(),
        max_jobs_per_gpu=1,
    )
    res = by_id(sim.run())
    assert (res[1].start, res[2].start) == (100.0, 110.0)


def test_fifo_places_on_the_least_busy_gpus():
    # A (1 GPU, 10 s) on GPU 0; then B (1 GPU) at 20 goes to GPU 1, the least busy idle GPU
    jobs = jobs_of((0, 1, 10), (20, 1, 5))
    res = simulate(Cluster.homogeneous(1, 2), jobs, "fifo")
    assert [j.placement for j in res.jobs] == ["0:0", "0:1"]


# ---------------------------------------------------------------------- Tiresias by hand
def _tiresias(jobs, threshold: float, delay: float = 0.0) -> Simulator:
    return Simulator(
        one_server(),
        jobs,
        Tiresias(thresholds=(threshold,)),  # type: ignore[arg-type]
        DurationExecutor(),
        max_jobs_per_gpu=1,
        restart_delay=delay,
    )


def test_tiresias_demotes_preempts_and_keeps_progress():
    # A (4 GPUs, 300 s) at 0, B (4 GPUs, 300 s) at 10; threshold 400 GPU-s = 100 s on 4 GPUs,
    # rounds every 60 s: at 120 A (480 GPU-s) drops to queue 1, B runs and A is preempted with
    # 120 s done; at 240 B drops behind A; A resumes and needs 180 s more → 420; B → 600.
    sim = _tiresias(jobs_of((0, 4, 300), (10, 4, 300)), 400.0)
    res = sim.run()
    segs = [(s.job_id, s.start, s.end) for s in res.segments]
    assert segs == [(0, 0.0, 120.0), (1, 120.0, 240.0), (0, 240.0, 420.0), (1, 420.0, 600.0)]
    assert [j.preemptions for j in res.jobs] == [1, 1]
    assert sim.policy.queue_of(0) == sim.policy.queue_of(1) == 1
    assert sim.policy.attained(0) == 300.0  # executed wall time, as the artifact counts it


def test_restart_delay_is_paid_on_every_restart_not_the_first_start():
    # as above with a 5 s restart delay: A restarts at 240, works from 245, ends 425; B
    # restarts at 425, works from 430 with 180 s left → 610
    sim = _tiresias(jobs_of((0, 4, 300), (10, 4, 300)), 400.0, delay=5.0)
    res = by_id(sim.run())
    assert (res[0].start, res[0].finish) == (0.0, 425.0)
    assert (res[1].start, res[1].finish) == (120.0, 610.0)
    # GPUs are held through the delay: (120 + 185) s × 4 GPUs for each job
    assert sim.executor.busy_gpu_seconds() == pytest.approx(2 * 305 * 4)


def test_tiresias_below_the_threshold_is_fifo_with_backfill():
    jobs = jobs_of((0, 2, 100), (0, 4, 10), (0, 2, 10))
    res = by_id(_tiresias(jobs, 1e12).run())
    assert (res[0].start, res[2].start, res[1].start) == (0.0, 0.0, 100.0)


def test_remaining_time_and_gpu_busy_mid_run():
    jobs = jobs_of((0, 2, 100))
    sim = Simulator(one_server(), jobs, Exclusive("sjf"), DurationExecutor(), max_jobs_per_gpu=1)
    seen = {}

    def probe():
        job = sim.jobs[0]
        seen["left"] = sim.executor.remaining_time(job)
        seen["done"] = sim.executor.attained(job)
        seen["busy"] = [sim.executor.gpu_busy(g) for g in range(4)]
        sim.executor.refresh(job)
        seen["service"] = job.service_left

    sim.at(30.0, probe)
    sim.run()
    assert seen == {"left": 70.0, "done": 30.0, "busy": [30.0, 30.0, 0.0, 0.0], "service": 140.0}


# ---------------------------------------------------------------------- API choices and errors
def test_api_picks_the_duration_executor_and_checks_its_inputs():
    jobs = jobs_of((0, 1, 10))
    sim = build_simulator(one_server(), jobs, "tiresias", settings=Settings(restart_delay=3.0))
    assert isinstance(sim.executor, DurationExecutor) and sim.restart_delay == 3.0
    with pytest.raises(InputError) as e:
        build_simulator(one_server(), jobs, "ada-srsf")
    assert e.value.field == "policy" and "fifo, sjf" in str(e.value)
    with pytest.raises(InputError) as e:
        build_simulator(one_server(), jobs, "fifo", settings=Settings(semantics="rounds"))
    assert e.value.field == "semantics"
    mixed = jobs + [JobSpec(1, 0.0, 1, 10, TRACE)]
    with pytest.raises(InputError) as e:
        build_simulator(one_server(), mixed, "fifo")
    assert e.value.field == "duration"


# ---------------------------------------------------------------------- CLI
PHILLY_CSV = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-03 00:00:20,30.0,8,240.0,vc1
2017-10-03 00:00:00,100.0,8,800.0,vc1
2017-10-03 00:00:10,50.0,8,400.0,vc2
"""


def test_cli_runs_a_philly_trace(tmp_path: Path):
    trace = tmp_path / "philly.csv"
    trace.write_text(PHILLY_CSV)
    out = tmp_path / "out"
    args = ["run", "--cluster", "tiny", "--workload", str(trace), "--policy", "sjf"]
    assert main([*args, "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    # jobs numbered by submission: 100 s at 0, 50 s at 10, 30 s at 20, each on all 8 GPUs;
    # SJF runs the 30 s job before the 50 s one
    assert [(r["arrival"], r["start"], r["finish"]) for r in rows] == [
        ("0", "0", "100"),
        ("10", "130", "180"),
        ("20", "100", "130"),
    ]
    assert rows[0]["placement"] == "0:0;0:1;0:2;0:3;1:0;1:1;1:2;1:3"
