"""Pollux (Qiao et al., OSDI '21): goodput-driven elastic re-allocation each round.

Every ``interval`` seconds:
1. each running job reports the configuration it ran (placement, micro-batch, measured step and
   sync time, its current gradient statistics) to its ``JobGoodput`` model (the Pollux agent);
2. the allocation — GPUs per job per server — is chosen to maximise the power mean (p = −1) of
   the jobs' speedups (goodput ÷ goodput at the fair share, × servers/GPUs), with the restart
   factor max(age − 30·restarts, 0)/(age + 30) on a job whose per-server GPUs change (the
   artifact's fitness, pol:315-337); at most one multi-server job per server, at most
   ``max_replicas`` per job; NCF stays at one replica and batch ``ncf_batch`` = 32768 (the
   artifact's quirk, sim:188-192, 332-333; ``ncf_batch=0`` makes NCF elastic like the others);
3. jobs whose per-server GPUs changed restart (``rescale_delay``) on exactly those counts, with
   the batch their model picks; the others keep their GPUs.

The search is ours, not the artifact's NSGA-II (:mod:`.pollux_search`, docs/design.md "Pollux
search"): the optimum of a relaxation by dynamic programming, provably optimal whenever it
packs, else local search on real packings; on recorded rounds it is never below NSGA-II
(benchmarks/pollux_search_compare.py). ``search="nsga2"`` (``--set pollux_search=nsga2``) runs
the artifact's own NSGA-II instead, seeded by the run's seed (:mod:`.pollux_nsga`).
``Pollux(record=[])`` keeps every round's problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..core.protocols import JobConfig, ProfileEstimates
from ..perf.goodput import JobGoodput, max_replicas, measured_step
from .pollux_compile import compile_pending
from .pollux_search import RoundProblem, compiled_search_ready, search

if TYPE_CHECKING:  # pragma: no cover
    from ..core.protocols import ProfileRun
    from ..core.simulator import Simulator
    from ..core.state import JobState

NCF_BATCH = 32768


#: jobs from which a Pollux run compiles the search's kernel if numba has not cached it yet
COMPILE_AT_JOBS = 300


@dataclass
class Pollux:
    name: str = "pollux"
    interval: float | None = 60.0
    restart_penalty: float = 30.0
    #: NCF's fixed total batch on one replica (artifact quirk); 0: NCF is elastic too
    ncf_batch: int = NCF_BATCH
    #: resizes jobs (``sim.resize``); recorded as ``elastic`` in summary.json
    elastic = True
    #: a list to append every round's RoundProblem to (offline comparison of searches)
    record: list[RoundProblem] | None = None
    #: the allocation search: "ddlsched" (ours, deterministic), "nsga2" (the artifacts' NSGA-II
    #: seeded by the run's seed: pollux_nsga; setting ``pollux_search``), or a callable
    #: RoundProblem → allocation, one per run (e.g. ``pollux_nsga.NSGA2Search(seed, ...)``)
    search: str | Callable[[RoundProblem], np.ndarray] = "ddlsched"
    #: how the jobs' throughput models are fitted (``perf.goodput.FIT_METHODS``; setting
    #: ``goodput_fit``)
    fit: str = "exact"
    _models: dict[int, JobGoodput] = field(default_factory=dict, init=False, repr=False)
    _restarts: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _rows: dict[int, tuple] = field(default_factory=dict, init=False, repr=False)
    _ever_started: set[int] = field(default_factory=set, init=False, repr=False)
    #: when a restart counts for the restart factor: when a running job is stopped (False,
    #: ddlsched's Pollux) or at every start after the first, a resume included (True: Sia's
    #: simulator, job.py:524-575)
    restarts_at_start = False

    def attach(self, sim: Simulator) -> None:
        # the engine registers this policy as its jobs' agent (``observe``/``rebatch``:
        # core.protocols.JobAgent) with the profile executor
        self.ex = sim.estimates(ProfileEstimates)
        self._attained: dict[int, float] = {}
        self._last_round = 0.0
        #: the search's compiled local search (the same allocations): where it is compiled
        #: already, or where the run is large enough to repay compiling it (≈ 10 s once per
        #: checkout, cached; a 480-job run saves ≈ 20 s)
        ready = compiled_search_ready()
        #: a child process compiles it for this run (``pollux_compile``): the Python search
        #: until the kernel is cached, then the kernel, without waiting for the compile
        self._await_kernel = not ready and compile_pending()
        self._compiled = ready or (not self._await_kernel and len(sim.jobs) >= COMPILE_AT_JOBS)
        self._searcher: Callable[[RoundProblem], np.ndarray] | None = None
        if callable(self.search):
            self._searcher = self.search
        elif self.search == "nsga2":
            from .pollux_nsga import NSGA2Search

            self._searcher = NSGA2Search(sim.seed)

    def schedule(self, sim: Simulator) -> None:
        """Allocation changes only at rounds (``on_round``)."""

    # ------------------------------------------------------------------ the round
    def on_round(self, sim: Simulator) -> None:
        jobs = sorted([*sim.queue, *sim.running.values()], key=lambda j: j.job_id)
        if not jobs:
            return
        self._account(sim)
        if self._await_kernel and compiled_search_ready():
            self._compiled, self._await_kernel = True, False
        prob = self.problem(sim, jobs)
        if self.record is not None:
            self.record.append(prob)
        found = self._searcher(prob) if self._searcher else search(prob, compiled=self._compiled)
        self._apply(sim, jobs, prob, self.repair(prob, found))

    def repair(self, prob: RoundProblem, alloc: np.ndarray) -> np.ndarray:
        """The allocation to realise from the search's (a heterogeneity-unaware variant drops
        GPUs here); Pollux's own: unchanged."""
        return alloc

    def nodes(self, sim: Simulator) -> list[list[int]]:
        """The GPU ids of each node the search allocates on: the cluster's servers (a
        heterogeneity-unaware variant: virtual nodes)."""
        cl = sim.cluster
        return [list(cl.gpus_of_server(s)) for s in range(cl.num_servers)]

    def _account(self, sim: Simulator) -> None:
        """Attained GPU-seconds since the last round (the artifact's repair order, pol:147-150)."""
        dt = sim.now - self._last_round
        for j in sim.running.values():
            self._attained[j.job_id] = self._attained.get(j.job_id, 0.0) + dt * len(j.gpus)
        self._last_round = sim.now

    def _model(self, job: JobState) -> JobGoodput:
        m = self._models.get(job.job_id)
        if m is None:
            m = self._models[job.job_id] = JobGoodput(self.ex.application(job), fit=self.fit)
        return m

    # ------------------------------------------------------------------ the job agent
    def observe(self, run: ProfileRun) -> None:
        """The agent's measurement of the configuration ``run`` runs now (sim:128-130):
        its step and sync time, and the gradient statistics at its batch and epoch."""
        cfg = run.cfg
        assert cfg is not None
        # GPU types (issue #17): the profile and speed of the job's slowest type — a type's own
        # measured profiles at speed 1, else the default profiles at the slowest speed
        app, speed = self.ex.pace(run.job)
        step, sync = app.step_time(run.placement, cfg.a)
        if speed != 1.0:  # what the agent measures there: the compute at that speed
            step = sync + (step - sync) / speed
        try:
            grad = app.grad_stats(run.epoch, cfg.M)
        except ValueError:
            grad = None
        self._model(run.job).observe(
            len(run.placement), sum(run.placement), cfg.a, step, sync, grad=grad
        )

    def observe_measured(self, run: ProfileRun, iteration_time: float) -> tuple[float, float]:
        """A real measurement of ``run``'s configuration (live mode: seconds per iteration
        from the job's progress reports) replaces the profile's in the job's goodput model,
        which is refit — the agent's fit, from what the job reported. The model's rows are
        per synchronising micro-step, and an iteration is ``k`` accumulation micro-steps
        more (T_iter = step + k·(step − sync), §2): the measured iteration is scaled by the
        profile's step ÷ iteration for that configuration, and the sync share of the step is
        the profile's. Returns the (step, sync) recorded."""
        cfg = run.cfg
        assert cfg is not None
        step, sync = measured_step(run.app, run.placement, cfg, iteration_time)
        self._model(run.job).observe(
            len(run.placement), sum(run.placement), cfg.a, step, sync, replace=True
        )
        return step, sync

    def _pinned(self, job: JobState) -> bool:
        """NCF under the artifact's quirk: one replica, batch ``ncf_batch``."""
        return bool(self.ncf_batch) and job.spec.application == "ncf"

    def rebatch(self, run: ProfileRun) -> int:
        """The batch the job's model finds best on its current allocation (sim:156, 162)."""
        if self._pinned(run.job):
            return self.ncf_batch
        return self._model(run.job).optimize(len(run.placement), sum(run.placement), run.epoch)[0]

    def _limit(self, job: JobState, total: int) -> int:
        """The job's replica limit this round: 1 for NCF (sim:332-333), else ``max_replicas``
        capped at the cluster's GPUs."""
        if self._pinned(job):
            return 1
        app = self.ex.application(job)
        return min(max_replicas(app, self._model(job).max_profiled_replicas), total)

    def _speedups(
        self, job_id: int, m: JobGoodput, epoch: int, fair: int, limit: int, per: int
    ) -> tuple[list[float], list[float]]:
        """Job's speedups on one node (r = 1..min(per, limit)) and on several (r = 2..limit).
        Kept per job and reused while the model's exact state and the arguments are the same
        (most jobs' parameters and gradient statistics do not change between rounds)."""
        key = (m.state_key(), epoch if m.grad is None else -1, fair, limit, per)
        hit = self._rows.get(job_id)
        if hit is not None and hit[0] == key:
            return hit[1], hit[2]
        m.prefetch(
            [(1, fair)]
            + [(1, r) for r in range(1, min(per, limit) + 1)]
            + [(max(2, math.ceil(r / per)), r) for r in range(2, limit + 1)],
            epoch,
        )
        s_row = [m.speedup(1, r, epoch, fair) for r in range(1, min(per, limit) + 1)]
        m_row = [m.speedup(max(2, math.ceil(r / per)), r, epoch, fair) for r in range(2, limit + 1)]
        self._rows[job_id] = (key, s_row, m_row)
        return s_row, m_row

    def problem(self, sim: Simulator, jobs: list[JobState]) -> RoundProblem:
        """This round's allocation problem (pollux_search): speedup tables of every job on one
        and on several nodes up to its replica limit, current per-node GPUs, restart factors."""
        view = self.nodes(sim)
        node_of = {g: v for v, gpus in enumerate(view) for g in gpus}
        sizes = [len(gpus) for gpus in view]
        per, total, n = max(sizes), sum(sizes), len(view)
        fair = max(1, math.ceil(total / len(jobs)))
        limits = [self._limit(j, total) for j in jobs]
        k = max(per, *limits)
        single = np.zeros((len(jobs), k + 1))
        multi = np.zeros((len(jobs), k + 1))
        current = np.zeros((len(jobs), n), dtype=np.int64)
        restart = np.ones(len(jobs))
        for i, (j, limit) in enumerate(zip(jobs, limits, strict=True)):
            m, epoch = self._model(j), self.ex.epoch(j)
            s_row, m_row = self._speedups(j.job_id, m, epoch, fair, limit, per)
            single[i, 1 : len(s_row) + 1] = s_row
            multi[i, 2 : len(m_row) + 2] = m_row
            # a preempted job's ``gpus`` still names its last GPUs: count running jobs only
            for g in j.gpus if j.job_id in sim.running else ():
                current[i, node_of[g]] += 1
            age = sim.now - j.arrival
            restarts = self._restarts.get(j.job_id, 0)
            restart[i] = max(age - self.restart_penalty * restarts, 0.0) / (
                age + self.restart_penalty
            )
        order = sorted(
            range(len(jobs)),
            key=lambda i: (self._attained.get(jobs[i].job_id, 0.0), jobs[i].arrival, i),
        )
        # servers of different sizes (e.g. Sia's sia-64: 4- and 8-GPU nodes, a sharing-anomaly
        # private cluster): each node's own GPU count bounds its allocations
        return RoundProblem(
            capacity=None if min(sizes) == per else np.array(sizes, dtype=np.int64),
            num_nodes=n,
            gpus_per_node=per,
            job_ids=tuple(j.job_id for j in jobs),
            current=current,
            max_replicas=np.array(limits, dtype=np.int64),
            single=single,
            multi=multi,
            restart=restart,
            scale=n / total,
            priority=np.array(order, dtype=np.int64),
            time=sim.now,
        )

    def _apply(self, sim: Simulator, jobs: list[JobState], prob: RoundProblem, alloc) -> None:
        """Realise the per-node allocation exactly: jobs whose row is unchanged keep their GPUs
        (and re-tune their batch), the others stop and start on the chosen number of free GPUs
        of each node (lowest GPU ids first), with the batch their model picks."""
        running = [j.job_id in sim.running for j in jobs]
        keep = [run and bool((alloc[i] == prob.current[i]).all()) for i, run in enumerate(running)]
        before: dict[int, tuple[int, ...]] = {}  # the GPUs each stopped job ran on
        for j, run, kept in zip(jobs, running, keep, strict=True):
            if run and not kept:  # stop the jobs whose allocation changes
                before[j.job_id] = tuple(j.gpus)
                sim.preempt(j)
                if not self.restarts_at_start:
                    self._restarts[j.job_id] = self._restarts.get(j.job_id, 0) + 1
        free = [[g for g in gpus if not sim.residents[g]] for gpus in self.nodes(sim)]
        for j, kept in zip(jobs, keep, strict=True):  # kept jobs re-tune their batch (events;
            if kept:  # rounds does it in every step)
                self.ex.rebatch(j)
        for i, j in enumerate(jobs):
            r = int(alloc[i].sum())
            if keep[i] or r == 0:
                continue
            gpus: list[int] = []
            for s in np.flatnonzero(alloc[i]):
                take = int(alloc[i][s])
                if take > len(free[s]):  # the search's allocation is feasible: never happens
                    raise RuntimeError(f"node {s} lacks GPUs for job {j.job_id}")
                gpus += free[s][:take]
                free[s] = free[s][take:]
            batch = self.ncf_batch if self._pinned(j) else self._start_batch(sim, j, gpus)
            old = before.get(j.job_id)
            if old is not None and self._moves_free(sim, j, old, gpus):
                sim.resize(
                    j, gpus, JobConfig(batch_size=int(batch), restart_delay=self._left(sim, j))
                )
            else:
                if self.restarts_at_start and j.job_id in self._ever_started:
                    self._restarts[j.job_id] = self._restarts.get(j.job_id, 0) + 1
                self._ever_started.add(j.job_id)
                self._started(sim, j)
                sim.resize(j, gpus, JobConfig(batch_size=int(batch)))

    def _moves_free(
        self, sim: Simulator, job: JobState, old: tuple[int, ...], new: list[int]
    ) -> bool:
        """Whether moving running ``job`` from GPUs ``old`` to ``new`` costs no restart
        (Pollux's: never; its allocation changed). A policy with free moves counts restarts
        at the start (``restarts_at_start``), so a free move is never counted."""
        return False

    def _left(self, sim: Simulator, job: JobState) -> float:
        """Seconds of its restart delay a freely moved job still has to serve."""
        return 0.0

    def _started(self, sim: Simulator, job: JobState) -> None:
        """``job`` (re)starts now with a restart delay (a hook for the free moves' delay)."""

    def _start_batch(self, sim: Simulator, job: JobState, gpus: list[int]) -> int:
        """The batch ``job`` starts with on ``gpus``: its model's best on as many real servers
        and GPUs (sim:156)."""
        nodes = len({sim.cluster.gpu_server[g] for g in gpus})  # real servers
        return self._model(job).optimize(nodes, len(gpus), self.ex.epoch(job))[0]
