"""The engine's livelock guard (``Simulator._check_stalled``): a policy whose rounds go on
while no job can compute (stop and restart delays longer than its round, every job preempted
each round) used to keep the clock running forever; the run now ends with one line."""

from __future__ import annotations

import random

import pytest
from test_fuzz_runs import fuzz_runs  # benchmarks/fuzz_runs.py: its scenarios found the livelock

from ddlsched.api import build_simulator
from ddlsched.core.cluster import Cluster
from ddlsched.core.durationexec import DurationExecutor
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.simulator import Simulator
from ddlsched.errors import ScheduleError
from ddlsched.settings import Settings

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def job(i: int, arrival: float, duration: float, **delays: float) -> JobSpec:
    return JobSpec(i, arrival, 1, 0, TRACE, duration=duration, **delays)  # type: ignore[arg-type]


class Rotate:
    """Every ``interval`` seconds, preempts every running job and starts the waiting ones in
    id order on the free GPUs (the longest-waiting first): a time-sharing policy at its
    simplest."""

    name = "rotate"

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def attach(self, sim: Simulator) -> None:
        pass

    def on_round(self, sim: Simulator) -> None:
        running = sorted(sim.running.values(), key=lambda j: j.job_id)
        for j in running:
            sim.preempt(j)
        waiting = sorted(sim.queue, key=lambda j: (j in running, j.job_id))
        free = [g for g in range(sim.cluster.num_gpus) if not sim.residents[g]]
        for j, g in zip(waiting, free, strict=False):
            sim.start(j, (g,))

    def schedule(self, sim: Simulator) -> None:
        free = [g for g in range(sim.cluster.num_gpus) if not sim.residents[g]]
        for j, g in zip(sorted(sim.queue, key=lambda j: j.job_id), free, strict=False):
            sim.start(j, (g,))


def bounded(sim: Simulator, weeks: float = 50.0) -> Simulator:
    """``sim`` with an event that fails the test once its clock passes ``weeks``: without
    the guard a stalled run would otherwise never end."""

    def too_late() -> None:
        if sim.finished < len(sim.jobs):
            raise AssertionError(f"the run went on past {weeks} weeks of simulated time")

    sim.at(weeks * 7 * 86400.0, too_late)
    return sim


def run(jobs: list[JobSpec], interval: float, restart_delay: float) -> Simulator:
    sim = Simulator(
        Cluster.homogeneous(1, 1),
        jobs,
        Rotate(interval),
        DurationExecutor(),
        max_jobs_per_gpu=1,
        restart_delay=restart_delay,
    )
    bounded(sim).run()
    return sim


def test_jobs_that_only_ever_restart_end_the_run_with_one_line():
    # two jobs share one GPU, swapped every 60 s; each restart costs 100 s: after the first
    # 60 s no job computes again, and the clock ran on forever before the guard
    with pytest.raises(ScheduleError) as e:
        run([job(0, 0.0, 500.0), job(1, 0.0, 500.0)], interval=60.0, restart_delay=100.0)
    text = str(e.value)
    assert "\n" not in text and "policy 'rotate'" in text
    assert "no progress for" in text and "2 job(s) unfinished" in text
    # raised one window (a week of simulated time here) after the last computing: job 1's
    # first run (60–120 s, a first launch has no restart delay) computed until its preemption
    # at 120 s; samples come every tenth of the window
    since = float(text.split("since ")[1].split(" s:")[0])
    seconds = float(text.split("no progress for ")[1].split(" ")[0])
    assert since == 120.0
    assert 7 * 86400 < seconds <= 1.1 * 7 * 86400 + 60


def test_slow_progress_is_not_a_stall():
    # restarts of 50 s in 60-s rounds leave 10 s of work per round: slow, not stuck
    sim = run([job(0, 0.0, 300.0), job(1, 0.0, 300.0)], interval=60.0, restart_delay=50.0)
    # each computes 60 s in its first run (no delay), then 10 s in every other round: 24
    # more runs each, 120 s per pair of rounds → the last finishes at 120 + 24 × 120
    assert sim.finished == 2
    assert max(j.finish for j in sim.jobs) == 3000.0


def test_an_idle_month_between_arrivals_is_not_a_stall():
    # rounds go on while nothing waits (the next job arrives 30 days later)
    month = 30 * 86400.0
    sim = run([job(0, 0.0, 30.0), job(1, month, 30.0)], interval=60.0, restart_delay=0.0)
    assert [j.finish for j in sim.jobs] == [30.0, month + 30.0]


def test_the_stop_delay_counts_in_the_window():
    # a stop of 20,000 s (GPUs held, no work) and restarts of 100 s: the window is 100 × the
    # longest stop + restart delay, longer than a week, and the run still ends with the error
    ex = DurationExecutor(stop_delay=20_000.0)
    sim = Simulator(
        Cluster.homogeneous(1, 1),
        [job(0, 0.0, 500.0), job(1, 0.0, 500.0)],
        Rotate(60.0),
        ex,
        max_jobs_per_gpu=1,
        restart_delay=100.0,
    )
    assert sim.stall_window() == pytest.approx(100 * 20_100.0)
    with pytest.raises(ScheduleError, match="no progress"):
        bounded(sim).run()


def test_the_fuzzers_livelock_ends_with_the_error():
    # benchmarks/fuzz_runs.py plain, seed 17, max-min-fairness on gavel-1:1:1: stops of
    # 497 s and restarts of 352 s against Gavel's 360-s rounds; it hung the fuzzer (the clock
    # passed 500,000,000 s with 4 of 20 jobs left)
    delays = fuzz_runs.plain_delays(random.Random(17 + 2))
    assert delays == {"stop_delay": 497.192, "restart_delay": 351.622}
    cluster, jobs = fuzz_runs.plain_scenario(random.Random(17))
    settings = Settings.from_mapping(delays)
    sim = build_simulator(cluster, jobs, "max-min-fairness", seed=17, settings=settings)
    with pytest.raises(ScheduleError, match="4 job.s. unfinished"):
        bounded(sim).run()


def test_the_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    from ddlsched.cli import main
    from ddlsched.workloads.trace_generic import write_generic

    _, jobs = fuzz_runs.plain_scenario(random.Random(17))
    write_generic(jobs, tmp_path / "jobs.csv")
    argv = ["run", "--cluster", "gavel-1:1:1", "--workload", str(tmp_path / "jobs.csv")]
    argv += ["--policy", "max-min-fairness", "--out", str(tmp_path / "out")]
    argv += ["--set", "stop_delay=497.192", "--set", "restart_delay=351.622"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no progress for" in err and "max-min-fairness" in err
    assert not (tmp_path / "out").exists()  # nothing half-written
