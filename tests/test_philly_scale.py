"""Philly-scale replay (issue #6): the ``philly`` cluster preset, and the fast formulations of
the idle-GPU index, FIFO/SJF and Tiresias checked against plain full-scan references on random
contended workloads (same starts, placements, preemptions and finishes)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from ddlsched.core.cluster import Cluster, Server
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.durationexec import DurationExecutor
from ddlsched.core.freegpus import FreeGpus
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.simulator import Simulator
from ddlsched.policies.luo import Exclusive
from ddlsched.policies.placement import consolidated
from ddlsched.policies.tiresias import Tiresias
from ddlsched.workloads.io import validate_fits

PHILLY = Path(__file__).resolve().parents[1].parent / "shared/data/pollux/traces/philly.csv"
TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def mixed_cluster() -> Cluster:
    """Servers of 8, 2, 4 and 8 GPUs: ties and uneven idle counts for the placement rule."""
    return Cluster(tuple(Server(n) for n in (8, 2, 4, 8, 2)))


def random_jobs(rng: random.Random, n: int) -> list[JobSpec]:
    """Contended duration jobs: bursts of arrivals, 1–16 GPUs, durations 1 s … 2 h, with ties."""
    t = 0.0
    jobs = []
    for i in range(n):
        t += rng.choice((0.0, 0.0, 5.0, rng.uniform(0, 300)))
        gpus = rng.choice((1, 1, 1, 2, 2, 4, 8, 12, 16))
        dur = rng.choice((60.0, float(rng.randint(1, 7200)), rng.uniform(1, 3600)))
        jobs.append(JobSpec(i, t, gpus, 0, TRACE, duration=dur))
    return jobs


def trace_of(res) -> list[tuple]:
    return [(s.job_id, s.start, s.end, s.placement) for s in res.segments]


# ---------------------------------------------------------------------- the philly preset
def test_philly_preset_is_sized_as_the_public_machine_list():
    cl = load_cluster("philly")
    assert (cl.num_servers, cl.num_gpus, cl.max_gpus_per_server) == (552, 2490, 8)
    assert sorted({(s.num_gpus, s.gpu_memory_mb) for s in cl.servers}) == [
        (2, 12288.0),
        (8, 24576.0),
    ]
    # the largest Philly job (128 GPUs) fits
    validate_fits([JobSpec(0, 0.0, 128, 0, TRACE, duration=1.0)], cl, "test")


def test_every_job_of_the_real_philly_trace_fits_the_preset():
    if not PHILLY.is_file():
        pytest.skip(f"Philly trace not found at {PHILLY} (shared test data absent)")
    from ddlsched.workloads.traces import read_trace

    jobs = read_trace(PHILLY, format="philly")
    assert len(jobs) == 82247 and max(j.num_gpus for j in jobs) == 128
    validate_fits(jobs, load_cluster("philly"), str(PHILLY))


# ---------------------------------------------------------------------- idle-GPU index
def test_idle_index_answers_as_the_full_scans():
    cl = mixed_cluster()
    rng = random.Random(7)
    busy = [0.0] * cl.num_gpus
    index = FreeGpus(cl, lambda g: busy[g])
    idle = set(range(cl.num_gpus))
    sim = SimpleNamespace(cluster=cl)
    for _ in range(2000):
        if idle and (rng.random() < 0.5 or len(idle) == cl.num_gpus):
            g = rng.choice(sorted(idle))
            idle.discard(g)
            index.take(g)
        elif len(idle) < cl.num_gpus:
            g = rng.choice(sorted(set(range(cl.num_gpus)) - idle))
            busy[g] += rng.choice((1.0, 2.5, 0.0))
            idle.add(g)
            index.give(g)
        assert len(index) == len(idle) and sorted(index) == sorted(idle)
        need = rng.randint(1, cl.num_gpus)
        assert index.consolidated(need) == consolidated(sim, set(idle), need)  # type: ignore[arg-type]
        ranked = sorted(idle, key=lambda g: (busy[g], g))
        expected = ranked[:need] if len(ranked) >= need else None
        assert index.least_busy(need) == expected


# ---------------------------------------------------------------------- FIFO / SJF
@dataclass
class ScanExclusive(Exclusive):
    """Reference: sort the whole queue and scan it at every pass (the former formulation)."""

    def schedule(self, sim: Simulator) -> None:
        if self.order == "fifo":
            queue = sorted(sim.queue, key=lambda j: (j.arrival, j.job_id))
        else:
            queue = sorted(sim.queue, key=lambda j: (self.length(sim, j), j.arrival, j.job_id))
        free = {g for g in range(sim.cluster.num_gpus) if not sim.residents[g]}
        for job in queue:
            if self.placement == "least-busy":
                ranked = sorted(free, key=lambda g: (self.times.gpu_busy(g), g))
                gpus = ranked[: job.num_gpus] if len(ranked) >= job.num_gpus else None
            else:
                gpus = consolidated(sim, free, job.num_gpus)
            if gpus is None:
                if not self.backfill:
                    return
                continue
            free -= set(gpus)
            sim.start(job, gpus)


def _run(policy, jobs, delay: float = 0.0):
    sim = Simulator(
        mixed_cluster(), jobs, policy, DurationExecutor(), max_jobs_per_gpu=1, restart_delay=delay
    )
    return sim.run()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "order,placement,backfill",
    [
        ("fifo", "least-busy", True),
        ("fifo", "consolidated", False),
        ("sjf", "consolidated", True),
        ("sjf", "least-busy", False),
    ],
)
def test_exclusive_heaps_match_the_full_scan(seed, order, placement, backfill):
    jobs = random_jobs(random.Random(seed), 150)
    kw = dict(order=order, placement=placement, backfill=backfill)
    fast = _run(Exclusive(order, **kw), jobs)
    slow = _run(ScanExclusive(order, **kw), jobs)
    assert trace_of(fast) == trace_of(slow)
    assert max(j.queueing for j in fast.jobs) > 0  # the queue was exercised


# ---------------------------------------------------------------------- Tiresias
@dataclass
class ScanTiresias:
    """Reference: the artifact's 2D-LAS as a full call over every active job (the former
    formulation of policies/tiresias.py)."""

    thresholds: tuple[float, ...]
    name: str = "tiresias-scan"
    interval: float | None = 60.0
    gate = None
    _executed: dict[int, float] = field(default_factory=dict)
    _last: dict[int, float] = field(default_factory=dict)
    _running: set[int] = field(default_factory=set)
    _queue_of: dict[int, int] = field(default_factory=dict)

    def attach(self, sim: Simulator) -> None:
        self._queues: list[list[int]] = [[] for _ in range(len(self.thresholds) + 1)]
        self._state = {j.job_id: j for j in sim.jobs}

    def on_round(self, sim: Simulator) -> None:
        self.schedule(sim)

    def schedule(self, sim: Simulator) -> None:
        now = sim.now
        active = {j.job_id for j in sim.queue} | set(sim.running)
        for q in self._queues:
            q[:] = [jid for jid in q if jid in active]
        for jid in sorted(active - set(self._queue_of)):
            self._queues[0].append(jid)
            self._queue_of[jid] = 0
            self._executed[jid] = 0.0
        for jid in sorted(active):
            if jid in self._running:
                self._executed[jid] += now - self._last.get(jid, 0.0)
                level = self._queue_of[jid]
                gpus = self._state[jid].num_gpus
                if level < len(self.thresholds) and (
                    self._executed[jid] * gpus >= self.thresholds[level]
                ):
                    self._queues[level].remove(jid)
                    self._queues[level + 1].append(jid)
                    self._queue_of[jid] = level + 1
            self._last[jid] = now
        free = sim.cluster.num_gpus
        admitted = []
        for q in self._queues:
            for jid in q:
                job = self._state[jid]
                if job.num_gpus <= free:
                    free -= job.num_gpus
                    admitted.append(job)
        ids = {j.job_id for j in admitted}
        for jid in sorted(self._running - ids):
            if jid in sim.running:
                sim.preempt(self._state[jid])
        self._running = ids
        free_gpus = {g for g in range(sim.cluster.num_gpus) if not sim.residents[g]}
        for job in admitted:
            if job.job_id not in sim.running:
                gpus = consolidated(sim, free_gpus, job.num_gpus)
                assert gpus is not None
                free_gpus.difference_update(gpus)
                sim.start(job, gpus)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("thresholds", [(3600.0,), (1800.0, 20000.0)])
def test_incremental_tiresias_matches_the_full_call(seed, thresholds):
    jobs = random_jobs(random.Random(100 + seed), 150)
    delay = 0.0 if seed % 2 else 30.0
    fast = _run(Tiresias(thresholds=thresholds), jobs, delay)  # type: ignore[arg-type]
    slow = _run(ScanTiresias(thresholds), jobs, delay)  # type: ignore[arg-type]
    assert trace_of(fast) == trace_of(slow)
    assert sum(j.preemptions for j in fast.jobs) > 0  # demotions and preemptions happened
