"""Gavel as Sia's simulator runs it (``gavel-tunedjobs``, the "Gavel+TJ" of Sia's Table 3).

References are to github.com/siasosp23/artifacts at commit ``aaf7a0de``, folder
``sia-simulator/`` (``gavel.py``, ``policies/max_sum_throughput.py``, ``cluster.py``,
``job.py``), run as ``run_experiment.sh`` does: ``multi_simulator.py W --policy=gavel
--interval=360``. Every ``round_length`` (360) seconds, over the jobs that have arrived and
not finished (in submission order):

1. **Throughputs** (``GavelPolicy.predict_throughput``, gavel.py:515-546): an *oracle* from
   the true per-type profiles, at the workload's fixed GPU count ("TunedJobs":
   ``num_replicas``) and batch (``batch_size``; batch tuning is off, multi_simulator.py:52-53):
   the job packed onto whole nodes of the type, local batch ⌈B/R⌉, gradient accumulation above
   the placement's largest measured local batch (at least one step on one GPU), iterations
   per second ÷ the application's calibration slowdown (``job.slowdown_factor``,
   cluster.py:498); 0.1 where the job has more GPUs than the type's largest configuration
   (:func:`oracle_throughput`).
2. **Allocation** (``ThroughputSumWithPerf``, max_sum_throughput.py:35-90, the artifact's
   ``gavel_default_policy``, simulator_config.py:75): X maximises Σ T·X over time fractions
   with Σ_t X ≤ 1 per job and Σ_j R_j X ≤ GPUs per type
   (:func:`~ddlsched.policies.gavel_lp.max_sum_throughput_perf`, HiGHS where the artifact
   uses ECOS), rounded to 5 decimals and clipped to [0, 1].
3. **Priorities** (gavel.py:111-125, 249-282): a new job gets 180 s (half a round) of time on
   every type, added to the type's total (which keeps every job ever seen, finished ones
   included); priority = X ÷ (job's time on the type ÷ the type's total)
   (:func:`~ddlsched.policies.gavel.gavel_priority`).
4. **Which jobs run** (gavel.py:284-330): all (job, type) pairs sorted together by (priority,
   deficit = 0, X) descending — the artifact sorts the concatenation once, not per type as
   Gavel's own scheduler does — ties in type order (the cluster's) then submission order; a
   job runs on the first type of its list that still has its GPU count free
   (:func:`~ddlsched.policies.gavel.take_in_order`), zero-priority entries included. A job
   that runs adds ``round_length`` to its time and the type's total (gavel.py:505-510).
5. **Which GPUs** (gavel.py:360-441): per type, jobs by GPU count descending; a job keeps its
   previous round's GPUs if they are all free, the others take the first free GPUs server by
   server (:func:`~ddlsched.policies.gavel.assign_workers`).
6. **What the engine does** (cluster.py:184-215, job.py:524-580): every job runs on exactly
   the GPUs computed. A job given the same GPUs keeps running; a job moved to other GPUs of
   the same type with the same GPUs per node (in allocation order) moves without a restart
   (``JobConfig(restart_delay=0)``; the artifact restarts a job only when its type or that
   tuple changes; ``summary.json``: ``gavel_free_moves``); a job that stops is suspended,
   and pays its restart delay when it runs again, as at its first start. The engine runs the
   job at the workload's batch with the placement's local-batch limit, as the artifact's
   ``update_local_bsz`` with batch tuning off (job.py:317-386).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..core.protocols import JobConfig, ProfileEstimates
from ..errors import InputError
from ..perf.profiles import accumulated_config, compact_placement, node_runs
from .gavel import assign_workers, gavel_priority, take_in_order
from .gavel_lp import max_sum_throughput_perf
from .sia import configurations

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState
    from ..perf.profiles import Application

#: The throughput the artifact gives a job on a type with fewer GPUs than it needs
#: (gavel.py:520-522; iterations per second, not 0)
NO_ROOM = 0.1
#: Decimals the artifact rounds X to (max_sum_throughput.py:90)
DIGITS = 5


def oracle_throughput(
    app: Application,
    replicas: int,
    batch: int,
    per_node: int,
    type_gpus: int,
    slowdown: float = 1.0,
) -> float:
    """Iterations per second of a job of ``replicas`` GPUs at total ``batch`` on a GPU type
    of ``per_node`` GPUs per node whose largest configuration has ``type_gpus`` GPUs
    (``GavelPolicy.predict_throughput``, gavel.py:515-546): :data:`NO_ROOM` if ``replicas >
    type_gpus``; else packed onto whole nodes, local = ⌈batch/replicas⌉, k = ⌈local/cap⌉ − 1
    accumulation steps with cap the placement's largest measured local batch (k ≥ 1 on one
    GPU), micro-batch ⌈local/(k+1)⌉ within max_bsz, 1/(step + (step − sync)·k) ÷
    ``slowdown``."""
    if replicas > type_gpus:
        return NO_ROOM
    placement = compact_placement(replicas, per_node)
    cap = app.max_local_at(placement, per_replicas=False)
    cfg = accumulated_config(app, replicas, batch, cap, one_replica_accum=True)
    step, sync = app.step_time(placement, cfg.a)
    t_iter = step + (step - sync) * cfg.accum
    if not t_iter > 0:
        raise ValueError(f"{app.name}: no positive iteration time on {placement}")
    return 1.0 / t_iter / slowdown


def run_order(priority: np.ndarray, allocation: np.ndarray) -> list[tuple[int, int]]:
    """(job row, type column) pairs in the order the artifact's greedy pass visits them
    (gavel.py:296-306): every pair of every type, sorted together by (priority, deficit = 0,
    X) descending; equal keys in type order, then job order (a stable sort)."""
    jobs, types = priority.shape
    entries = [(i, k) for k in range(types) for i in range(jobs)]
    entries.sort(key=lambda e: (priority[e], 0.0, allocation[e]), reverse=True)
    return entries


@dataclass
class GavelRound:
    """One round (kept with ``GavelTunedJobs(record=[])``): job ids, throughputs T (jobs ×
    types, the cluster's type order), allocation X (rounded), priorities, and the GPUs given
    (job → (type column, GPU ids))."""

    time: float
    job_ids: tuple[int, ...]
    throughputs: np.ndarray
    allocation: np.ndarray
    priorities: np.ndarray
    assignment: dict[int, tuple[int, tuple[int, ...]]]


@dataclass
class GavelTunedJobs:
    """Gavel's max-sum-throughput policy with fixed GPU counts and batches, in 360 s rounds,
    as Sia's artifact runs it (module doc). ``slowdowns``: the run's calibration factors
    (application → divisor of its rates, ``--set calibration=sia``); ``symmetric``: identical
    jobs share the LP's optimum equally (``max_sum_throughput_perf``)."""

    name: str = "gavel-tunedjobs"
    #: a job a Kueue flavor holds to a GPU type (``--queues``) gets throughput 0 on the other
    #: types, and the greedy pass never puts it there (``on_round``)
    holds_flavor_types: ClassVar[bool] = True
    round_length: float = 360.0
    slowdowns: dict[str, float] = field(default_factory=dict)
    symmetric: bool = True
    #: a list to append every round's ``GavelRound`` to
    record: list[GavelRound] | None = None
    rounds: int = field(default=0, init=False)
    #: running jobs moved to other GPUs of the same shape without a restart
    moved: int = field(default=0, init=False)

    @property
    def interval(self) -> float:
        """Rounds every ``round_length`` seconds (``events`` semantics; under ``rounds`` the
        engine's step is ``round_length`` itself)."""
        return self.round_length

    # ------------------------------------------------------------------ set-up
    def attach(self, sim: Simulator) -> None:
        self.ex = sim.estimates(ProfileEstimates)
        cl = sim.cluster
        #: GPU types in the cluster's order (the artifact's ``cluster_name`` order)
        self.types: list[str] = list(cl.gpu_types)
        col = {t: k for k, t in enumerate(self.types)}
        self._servers: list[list[list[int]]] = [[] for _ in self.types]
        self._server_ids: list[list[int]] = [[] for _ in self.types]
        self.per_node = [0] * len(self.types)
        for s, srv in enumerate(cl.servers):
            gpus = list(cl.gpus_of_server(s))
            if not gpus:
                continue
            k = col[srv.gpu_type]
            self._servers[k].append(gpus)
            self._server_ids[k].append(s)
            self.per_node[k] = max(self.per_node[k], len(gpus))
        self.counts = [cl.gpu_types[t] for t in self.types]
        #: GPUs of each type's largest configuration (``num_gpu``, gavel.py:57-72)
        self.limit = [
            configurations(self.per_node[k], len(self._servers[k]))[-1][1]
            for k in range(len(self.types))
        ]
        biggest = max(self.counts)
        for job in sim.jobs:
            if job.num_gpus > biggest:
                raise InputError(
                    f"job {job.job_id} ({job.num_gpus} GPUs) fits on no GPU type of this "
                    f"cluster (most GPUs of a type: {biggest}): Gavel runs a job on GPUs of one "
                    "type, at its workload GPU count",
                    field="workload",
                )
        self._half = self.round_length / 2.0
        self._job_time: dict[int, list[float]] = {}
        self._cluster_time = [0.0] * len(self.types)
        self._thr: dict[int, list[float]] = {}
        self._assign: dict[int, tuple[int, tuple[int, ...]]] = {}

    def schedule(self, sim: Simulator) -> None:
        """Allocations change only at rounds (``on_round``)."""

    def throughputs(self, job: JobState) -> list[float]:
        """The job's oracle throughput on each type (:func:`oracle_throughput`; cached: it
        depends on the job's fixed GPU count and batch only)."""
        row = self._thr.get(job.job_id)
        if row is None:
            slow = self.slowdowns.get(job.spec.application, 1.0)
            row = self._thr[job.job_id] = [
                oracle_throughput(
                    self.ex.application_on(job, t)[0],
                    job.num_gpus,
                    job.spec.batch_size,
                    self.per_node[k],
                    self.limit[k],
                    slow,
                )
                for k, t in enumerate(self.types)
            ]
        return row

    # ------------------------------------------------------------------ the round
    def on_round(self, sim: Simulator) -> None:
        jobs = sorted([*sim.queue, *sim.running.values()], key=lambda j: j.job_id)
        if not jobs:
            return
        K = len(self.types)
        for j in jobs:  # add_jobs (gavel.py:111-125)
            if j.job_id not in self._job_time:
                self._job_time[j.job_id] = [self._half] * K
                for k in range(K):
                    self._cluster_time[k] += self._half
        held = {j.job_id: j.flavor_type for j in jobs if j.flavor_type is not None}
        T = np.array([self.throughputs(j) for j in jobs])
        for i, j in enumerate(jobs):
            if j.job_id in held:
                T[i] = [
                    x if t == held[j.job_id] else 0.0 for x, t in zip(T[i], self.types, strict=True)
                ]
        scale = np.array([j.num_gpus for j in jobs], dtype=float)
        X = max_sum_throughput_perf(
            T, scale, np.array(self.counts, float), symmetric=self.symmetric
        )
        X = np.clip(np.round(X, DIGITS), 0.0, 1.0)
        P = np.array(
            [
                [
                    gavel_priority(float(X[i, k]), self._job_time[j.job_id][k], ct)
                    for k, ct in enumerate(self._cluster_time)
                ]
                for i, j in enumerate(jobs)
            ]
        )
        gpus = {j.job_id: j.num_gpus for j in jobs}
        types = self.types
        scheduled = take_in_order(
            ((jobs[i].job_id, k) for i, k in run_order(P, X)),
            range(K),
            list(self.counts),
            gpus,
            (lambda jid, k: held.get(jid, types[k]) != types[k]) if held else None,
        )
        old = self._assign
        new = assign_workers(range(K), scheduled, self._servers, old)
        self._assign = new
        for jid, (k, _) in new.items():
            self._job_time[jid][k] += self.round_length
            self._cluster_time[k] += self.round_length
        self.rounds += 1
        if self.record is not None:
            self.record.append(
                GavelRound(sim.now, tuple(j.job_id for j in jobs), T, X, P, dict(new))
            )
        self._apply(sim, jobs, old, new)

    # ------------------------------------------------------------------ the engine
    def _apply(
        self,
        sim: Simulator,
        jobs: list[JobState],
        old: dict[int, tuple[int, tuple[int, ...]]],
        new: dict[int, tuple[int, tuple[int, ...]]],
    ) -> None:
        """Keep, move, suspend and start jobs on exactly the computed GPUs (module doc,
        item 6): a running job given the same GPUs keeps running; one given other GPUs of
        the same type with the same GPUs per node moves there for free (``restart_delay``
        0: the artifact restarts a job only when its type or per-node tuple changes); the
        others stop, and start (with their restart delay) where they are given GPUs."""
        server = sim.cluster.gpu_server
        free_move: set[int] = set()
        todo: list[JobState] = []
        for j in jobs:
            want = new.get(j.job_id)
            if j.job_id in sim.running:
                if want is not None and tuple(j.gpus) == want[1]:
                    continue
                prev = old.get(j.job_id)
                if (
                    want is not None
                    and prev is not None
                    and prev[0] == want[0]
                    and node_runs(server[g] for g in prev[1])
                    == node_runs(server[g] for g in want[1])
                ):
                    free_move.add(j.job_id)
                sim.preempt(j)
            if want is not None:
                todo.append(j)
        for j in todo:
            config = JobConfig(restart_delay=0.0) if j.job_id in free_move else None
            sim.start(j, new[j.job_id][1], config)
        self.moved += len(free_move)

    def summary_extras(self, sim: Simulator) -> dict[str, object]:
        """Rounds decided, and free moves (module doc, item 6)."""
        return {"gavel_rounds": self.rounds, "gavel_free_moves": self.moved}
