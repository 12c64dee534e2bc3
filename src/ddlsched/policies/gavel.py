"""Gavel's round-based policies on trace (duration) jobs (#17): ``gavel-fifo``, ``gavel-fifo-perf``,
``max-min-fairness[-perf]``, ``finish-time-fairness[-perf]``, ``min-total-duration-perf``.

Gavel (Narayanan et al., OSDI '20; github.com/stanford-futuredata/gavel, MIT licence, read at
commit c4fa400) schedules in *rounds*: a policy computes an allocation X[j, t] (the fraction of
time job j should spend on GPU type t; :mod:`ddlsched.policies.gavel_lp`), and a mechanism turns
X into one round of job → GPUs at a time, favouring the jobs that received the smallest fraction
of their allocation so far. This module is that mechanism, as Gavel's *simulator* runs it
(``Scheduler.simulate`` with ``simulate=True``, scripts/drivers/simulate_scheduler_with_trace.py),
on ddlsched's engine. "scheduler.py:f" below is scheduler/scheduler.py, function ``f``.

What is followed, step by step (all from the code; the paper, §5, describes the same mechanism
without the constants):

1. Rounds (scheduler.py:simulate, _get_num_steps, _get_job_steps_and_finish_times). Every
   job scheduled for a round runs one "micro-task" of ``int(thr × gavel_round)`` whole steps
   (thr: its steps/s on its type, from ``JobSpec.iterations`` = Gavel's total_steps;
   ``gavel_round`` is Gavel's ``time_per_iteration``, default 360), i.e. ``int(thr × 360) /
   thr`` ≤ 360 s (a job without a step count: 360 s), or less if it finishes; the round ends
   when the last micro-task ends, earlier when every scheduled job finished. The next round is
   decided at that instant. A job that finishes mid-round leaves its GPUs idle until the round
   ends (the simulator only looks at the cluster at round ends). Jobs that arrive during a round
   are seen at its end (``arrival_time <= current_timestamp``); when no job ran in a round, the
   next decision is at the next arrival.
2. What a decision does, in Gavel's order (simulate's loop body): account the micro-tasks of
   the round that ended (scheduler.py:_done_callback: each job's ``_job_time_so_far[type]`` and
   ``_worker_time_so_far[type]`` grow by its execution time, once per job whatever its GPU
   count; a finished job then leaves: scheduler.py:_remove_job), add the arrived jobs
   (scheduler.py:add_job: ``_job_time_so_far`` = ``gavel_round``/2 on every type, deficits 0),
   then scheduler.py:_schedule_jobs_on_workers. A job's execution time is its micro-task's end
   minus ``current_round_start_time``, which is the end of the previous round *that ran
   something* (0 before the first): after an idle gap, the gap is counted too (a Gavel quirk,
   reproduced).
3. When the allocation is recomputed (scheduler.py:_update_priorities, simulation branch): only
   when the job set changed since the last computation (an arrival or a completion:
   ``_need_to_update_allocation``) *and* at least ``gavel_reset_interval`` seconds (Gavel's
   ``minimum_time_between_allocation_resets``, default 1920) passed since the last reset, or
   the last reset time is 0. Until then a new job has no allocation (priority 0) and a finished
   job's share stays unused. When all jobs have arrived and the previous round ran nothing, the
   last reset time is set to 0 (simulate: "force a reset"), so the next decision recomputes.
4. The reset (scheduler.py:_reset_time_run_so_far), before the allocation is recomputed: for
   every active job and type, deficit += X_old[j, t] × (now − last reset) − (time received −
   ``gavel_round``/2); then every job's time on every type is set to ``gavel_round``/2 and each
   type's total to the sum of those.
5. Priorities (scheduler.py:_update_priorities): fraction[j, t] = job time on t ÷ total time on
   t (0 if the total is 0); priority[j, t] = X[j, t] ÷ fraction (X × 1e9 if the fraction is 0;
   0 if X = 0, if the job cannot run on t, or if the job has no allocation yet).
6. Which jobs run (scheduler.py:_schedule_jobs_on_workers_helper, ``enable_global_queue``
   false): the types in Gavel's order v100, p100, k80 (types Gavel does not know come after
   them, fastest first, then by name), shuffled every decision by ``random.Random(seed + 5)``
   for the heterogeneity-agnostic policies (policy names without "Perf":
   ``_worker_type_shuffler``); for each type in turn, its jobs sorted by (priority, deficit,
   allocation) descending, ties in arrival order (Python's stable sort); one pass over that
   concatenated list: a job runs on the type of its first entry where it is not yet scheduled,
   has a non-zero throughput, has that many GPUs left, and (FIFO only) a positive priority.
   A job never spans two types.
7. Which GPUs (scheduler.py:_schedule_jobs_on_workers, _assign_workers_to_job): per type,
   jobs by decreasing GPU count; a job keeps its previous round's GPUs if they are of the same
   type and still free; the others get GPUs server by server in GPU-id order from a pointer
   that only moves forward. A job the helper scheduled but that has no allocation yet gets no
   GPUs (its GPUs stay idle this round; a Gavel quirk, reproduced).
8. Across rounds (engine side): a job given the same GPUs again keeps running (no restart); a
   job that loses its GPUs or moves is preempted and keeps its work. Gavel's simulator charges
   nothing for this; here ``restart_delay`` (default 0; a job's own
   ``JobSpec.restart_delay``) is paid on every restart, as for every trace policy.
9. Allocations (:mod:`gavel_lp`; Gavel's policy classes via scheduler.py:_compute_allocation):
   job order by id, priority weights 1; throughputs T[j, t] = 1 / (job j's seconds alone on
   type t, ``JobSpec.duration_on``; 0 where it cannot run), i.e. "jobs per second", and steps
   remaining = the fraction of the job left. Gavel uses steps/s and steps; every objective here
   is invariant to scaling a job's row of T and its steps remaining by the same constant
   (max-min normalises each row, finish-time fairness and min-total-duration use
   remaining/throughput in seconds), so the allocations are the same.
   ``max-min-fairness[-perf]``: MaxMinFairnessPolicy[WithPerf]; ``finish-time-fairness[-perf]``:
   FinishTimeFairnessPolicy[WithPerf], whose cumulative isolated time per job (state between
   calls: steps done since the previous call ÷ the isolated throughput then) is kept here as in
   finish_time_fairness.py; ``min-total-duration-perf``: MinTotalDurationPolicyWithPerf (Gavel's
   bisection). The agnostic policies use the ``v100`` column for every type, as Gavel hard-codes
   it; on a cluster without a v100 type, 1 / ``JobSpec.duration`` (the reference type's time).
10. FIFO (scheduler/policies/fifo.py:FIFOPolicy.get_allocation, ported line by line): jobs by
   id; ``gavel-fifo`` keeps each job's type once given (completed jobs' places go to the queue's
   head first); a job gets a random type among those with enough free GPUs
   (``random.Random(seed)``, Gavel's FIFOPolicy(seed=seed)); a job that fits nowhere blocks the
   queue. Gavel's code draws the random index but then uses the loop variable ``worker_type``
   left over from the scan of the available types, i.e. the alphabetically last type with free
   GPUs ('v100' while any V100 is free, whether or not it has room), and on the cluster running
   out of that type removes the *drawn* type from the list: the V100s get over-subscribed and
   time-shared while other types idle. ``gavel_fifo_quirk = true`` reproduces that; the default
   places the job on the drawn type (the evident intent). ``gavel-fifo-perf`` (FIFOPolicyWithPerf:
   FIFO mode 'perf') recomputes from scratch at every reset, giving each job in id order the
   type of highest throughput among those with room (ties: alphabetical). The mechanism does
   not run a FIFO job on a type where its priority is 0.

Deviations (everything else is as above):

* Progress within a round. Round times and the time accounted per job are Gavel's (item 1),
  but a job progresses continuously while it holds its GPUs: one whose micro-task ends before
  the round does keeps working until the round ends (Gavel: it idles), at most one step more
  per round: ≤ 0.8 % of a round's progress for the slowest job type of Gavel's throughputs
  file (ResNet-50, batch 128, on a K80: 125 steps per round), ≤ 0.2 % for most.
* Solvers. Where the optional ``ecos`` package is installed (``ddlsched[gavel]``),
  max-min fairness (both) and min-total-duration are solved by ECOS on the program CVXPY builds
  for Gavel, in Gavel's units (steps/s, steps): Gavel's allocations bit for bit
  (benchmarks/gavel_mtd_ecos_check.py), and the split below is not applied. Otherwise, and
  always for finish-time fairness, the solutions are HiGHS's (``gavel_lp``, with its refining
  second LP where the optimum is not unique); Gavel's are ECOS's interior-point solutions (tiny positive values where HiGHS
  gives exact zeros, so Gavel's priorities of such entries are tiny but positive). Here X is
  rounded to 1e-6 (gavel_lp's refining LP moves optima by ~1e-9), so that jobs the LP treats
  alike tie and the stable sort's arrival order decides, not the solver's last bits. The
  agnostic policies' LPs see the same throughput on every type, so any split of a job's time
  over the types is optimal: HiGHS returns a vertex (a job's time all on one type), ECOS a
  central point. Here each job's total time is
  split in proportion to the types' GPU counts (what the central point is on Gavel's
  equal-count clusters). On eight 100-job traces run by Gavel's own simulator (docs/gavel.md)
  the average JCT of ``finish-time-fairness`` differed from Gavel's by up to 15 % with the
  vertex, by at most 2.3 % with the split (``max-min-fairness``: 2.4 % and 0.5 %).
* A job no type can hold (more GPUs than any type has, or no throughput on a type that could)
  is an error here; Gavel's simulator would loop forever. If all jobs have arrived, nothing
  runs and a forced reset does not change that, Gavel loops forever; here the run ends and
  the engine reports the jobs left waiting.
* Only the simulation branch of Gavel's mechanism: no lease extensions, throughput
  estimation, space sharing (packing), global queue, SLOs or prices; priority weights are 1.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..core.protocols import JobTimes
from ..core.state import DONE, HELD, QUEUED, RUNNING
from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState

#: Gavel's worker types in the order its mechanism walks them (scheduler.py:
#: _schedule_jobs_on_workers: ``worker_types = ["v100", "p100", "k80"]``)
GAVEL_ORDER = ("v100", "p100", "k80")
#: allocation kinds → (Gavel's policy class names without "_Perf")
ALLOCATIONS = ("fifo", "max_min_fairness", "finish_time_fairness", "min_total_duration")
#: allocations are rounded to this many decimals (solver round-off is not a preference)
_DIGITS = 6
#: a round end estimated this close to the deadline is the deadline (float slack, seconds)
_SLACK = 1e-6


def gavel_priority(x: float, job_time: float, total_time: float) -> float:
    """A job's priority on a type (scheduler.py:_update_priorities; Sia's gavel.py:249-269):
    its allocation ÷ its fraction of the time the type has given so far (x × 1e9 where that
    fraction is 0); 0 where x is 0. Computed as Gavel does, x / (job time / total time)."""
    if x == 0.0:
        return 0.0
    frac = job_time / total_time if total_time != 0.0 else 0.0
    return x / frac if frac > 0.0 else x * 1e9


def take_in_order(
    entries: Iterable[tuple[int, int]],
    order: Sequence[int],
    left: list[int],
    gpus: Mapping[int, int],
    skip: Callable[[int, int], bool] | None = None,
) -> dict[int, list[tuple[int, int]]]:
    """Gavel's greedy pass (scheduler.py:_schedule_jobs_on_workers_helper; Sia's gavel.py:
    284-330): over (job, column) ``entries`` in order, a job not yet taken goes to the column
    if it still has ``gpus[job]`` GPUs of ``left`` (and ``skip`` does not refuse it). Returns
    column → [(job, GPUs)] in the order taken, for every column of ``order``."""
    done: set[int] = set()
    out: dict[int, list[tuple[int, int]]] = {k: [] for k in order}
    for jid, k in entries:
        if left[k] == 0 or jid in done or (skip is not None and skip(jid, k)):
            continue
        sf = gpus[jid]
        if sf > left[k]:
            continue
        left[k] -= sf
        done.add(jid)
        out[k].append((jid, sf))
    return out


def assign_workers(
    order: Sequence[int],
    scheduled: Mapping[int, list[tuple[int, int]]],
    servers: Sequence[Sequence[Sequence[int]]],
    previous: Mapping[int, tuple[int, tuple[int, ...]]],
    allocated: Container[int] | None = None,
) -> dict[int, tuple[int, tuple[int, ...]]]:
    """GPUs of each scheduled job (scheduler.py:_schedule_jobs_on_workers and
    _assign_workers_to_job; Sia's gavel.py:360-441): per column of ``order``, its jobs by GPU
    count descending; within a count, a job keeps its ``previous`` (column, GPUs) if all of
    them are still free, the others take GPUs server by server (``servers[column]``: GPU ids
    per server) from a pointer that only moves forward. Jobs not in ``allocated`` (where
    given) get no GPUs. Returns job → (column, GPU ids)."""
    new: dict[int, tuple[int, tuple[int, ...]]] = {}
    for k in order:
        jobs = sorted(scheduled[k], key=lambda x: x[1], reverse=True)
        free = [list(s) for s in servers[k]]
        assigned: set[int] = set()
        ptr = 0
        for sf in sorted({x[1] for x in jobs}, reverse=True):
            for jid, s in jobs:  # keep jobs on their previous GPUs where possible
                if s != sf:
                    continue
                prev = previous.get(jid)
                if prev is not None and prev[0] == k and not assigned.intersection(prev[1]):
                    new[jid] = prev
                    assigned.update(prev[1])
            for jid, s in jobs:  # _assign_workers_to_job
                if s != sf or (allocated is not None and jid not in allocated):
                    continue
                ids = list(new[jid][1]) if jid in new else []
                while len(ids) < s and ptr < len(free):
                    if not free[ptr]:
                        ptr += 1
                        continue
                    g = free[ptr][0]
                    if g not in assigned:
                        ids.append(g)
                        assigned.add(g)
                    free[ptr].pop(0)
                if len(ids) != s:
                    raise RuntimeError(f"Gavel mechanism: could not place job {jid}")
                new[jid] = (k, tuple(ids))
    return new


@dataclass
class GavelPolicy:
    """Gavel's round-based mechanism with one of its allocation policies (module doc)."""

    #: keeps its own books of arrived jobs (``sim.jobs[:sim.arrived]``): with ``--queues``
    #: it must take evictions (``on_evicted``; docs/tenancy.md "In the engine")
    keeps_arrivals: ClassVar[bool] = True
    #: a job a Kueue flavor holds to a GPU type (``JobState.flavor_type``) gets throughput 0
    #: on every other type (``_add``), so neither the LP nor the mechanism puts it there
    holds_flavor_types: ClassVar[bool] = True
    name: str
    allocation: str  # one of ALLOCATIONS
    perf: bool  # heterogeneity-aware ("_Perf" in Gavel)
    round_length: float = 360.0  # time_per_iteration
    reset_interval: float = 1920.0  # minimum_time_between_allocation_resets
    fifo_quirk: bool = False
    #: decisions (rounds) made and allocations computed, for summary.json
    rounds: int = field(default=0, init=False)
    allocations: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.allocation not in ALLOCATIONS:
            raise ValueError(f"unknown Gavel allocation {self.allocation!r}")
        if self.allocation == "min_total_duration" and not self.perf:
            raise ValueError("only min-total-duration-perf is offered")

    # ------------------------------------------------------------------ set-up
    def attach(self, sim: Simulator) -> None:
        cl = sim.cluster
        by_type: dict[str, list[list[int]]] = {}
        speed: dict[str, float] = {}
        for s, srv in enumerate(cl.servers):
            gpus = list(cl.gpus_of_server(s))
            if gpus:
                by_type.setdefault(srv.gpu_type, []).append(gpus)
                speed[srv.gpu_type] = srv.speed
        #: LP columns: the types with GPUs, alphabetically (Gavel's Policy.flatten)
        self._types = sorted(by_type)
        K = len(self._types)
        col = {t: k for k, t in enumerate(self._types)}
        self._counts = np.array([sum(len(g) for g in by_type[t]) for t in self._types], float)
        self._count_of = [int(c) for c in self._counts]
        #: per type (column index): GPU ids grouped by server, in id order
        self._servers = [by_type[t] for t in self._types]
        known = [t for g in GAVEL_ORDER for t in self._types if t.casefold() == g]
        rest = sorted((t for t in self._types if t not in known), key=lambda t: (-speed[t], t))
        #: the mechanism's walk over types (before any shuffle), as column indices
        self._order = [col[t] for t in (*known, *rest)]
        self._speed = [speed[t] for t in self._types]
        ref = [k for k, t in enumerate(self._types) if t.casefold() == "v100"]
        self._ref = ref[0] if ref else None
        self._shuffle = not self.perf  # Gavel: names without "Perf" (and "Packing")
        self._shuffler = random.Random(sim.seed + 5)  # Gavel's _worker_type_shuffler
        self._fifo_rng = random.Random(sim.seed)  # FIFOPolicy(seed=seed)
        self._K = K
        self._half = self.round_length / 2.0
        self._times: JobTimes = sim.estimates(JobTimes)
        # per job: throughput per column (jobs/s); ``_rows`` keeps every type's, ``_thr``
        # the ones its flavor allows (``_add``)
        self._rows: dict[int, list[float]] = {}
        self._thr: dict[int, list[float]] = {}
        self._state: dict[int, JobState] = {}
        for job in sim.jobs:
            self._take(job)
        # mechanism state (scheduler.py names in comments)
        self._active: dict[int, JobState] = {}  # _jobs, in arrival order (= _priorities order)
        self._job_time: dict[int, list[float]] = {}  # _job_time_so_far
        self._worker_time = [0.0] * K  # _worker_time_so_far
        self._deficit: dict[int, list[float]] = {}  # _deficits
        self._alloc: dict[int, list[float]] = {}  # _allocation
        self._need_update = False  # _need_to_update_allocation
        self._last_reset = 0.0  # _last_reset_time
        self._assign: dict[int, tuple[int, tuple[int, ...]]] = {}  # _current_worker_assignments
        # FIFO policy state (fifo.py: self._allocation, one type per job)
        self._fifo: dict[int, int] = {}
        # finish-time fairness state (finish_time_fairness.py)
        self._cum_iso: dict[int, float] = {}
        self._prev_left: dict[int, float] = {}
        self._prev_iso: dict[int, float] = {}
        # round bookkeeping
        self._seen = 0  # jobs of sim.jobs taken in
        self._entered = 0  # sim.entered at the last decision
        self._round: dict[int, int] = {}  # jobs of the current round → column
        self._micro_end: dict[int, float] = {}  # when each one's micro-task ends
        self._in_round = False
        self._deadline = 0.0
        self._ver = 0  # version of the pending round-end event
        self._prev_end: float | None = None  # current_round_end_time
        self._acct_start = 0.0  # current_round_start_time
        self._decided_at: float | None = None
        self._ran_nothing = False  # the previous decision started no job
        #: jobs the quota layer evicted (``--queues``), out of the mechanism until admitted
        self._evicted: set[int] = set()

    def _take(self, job: JobState) -> None:
        """Throughputs of ``job`` per column; a job no type can hold is an error."""
        spec = job.spec
        row = []
        for k, t in enumerate(self._types):
            d = spec.duration_on(t, self._speed[k])
            row.append(1.0 / d if d is not None and 0 < d < math.inf else 0.0)
        ok = any(row[k] > 0 and self._count_of[k] >= job.num_gpus for k in range(self._K))
        if not ok:
            raise InputError(
                f"job {job.job_id} ({job.num_gpus} GPU(s)) fits on no GPU type of this "
                f"cluster where it can run ({', '.join(self._types)}): Gavel places a job on "
                "GPUs of one type",
                field="workload",
            )
        self._rows[job.job_id] = self._thr[job.job_id] = row
        self._state[job.job_id] = job

    # ------------------------------------------------------------------ engine hooks
    def schedule(self, sim: Simulator) -> None:
        """End of an instant with arrivals or completions and waiting jobs: decide now if no
        round is in progress (an arrival into an idle cluster) or if every job of the round
        has finished (the round ends with its last micro-task); otherwise the round's end
        decides."""
        if sim.now == self._decided_at and not self._joined_since(sim):
            return
        if not self._in_round or all(self._state[j].status == DONE for j in self._round):
            self._decide(sim)

    def _joined_since(self, sim: Simulator) -> bool:
        """Whether jobs joined after this instant's decision: with ``--queues``, Kueue may
        admit a job (or admit an evicted one again) in a later pass of the same instant, and
        with no round under way nothing else would ever take it in."""
        return sim.arrived > self._seen or any(
            self._state[j].status == QUEUED for j in self._evicted
        )

    def on_evicted(self, sim: Simulator, job: JobState) -> None:
        """The quota layer took ``job``'s admission back (``--queues``): it leaves the
        mechanism as a finished job does (``_remove_job``: allocation recomputed, its time and
        deficits dropped) and its micro-task ends now; when it is admitted again it comes back
        as a new job (``add_job``), as a resubmitted job would in Gavel."""
        jid = job.job_id
        if jid not in self._active:
            return
        k = self._round.pop(jid, None)
        if k is not None:  # its micro-task counts up to now (_done_callback)
            start = self._prev_end if self._prev_end is not None else self._acct_start
            self._worker_time[k] += max(0.0, sim.now - start)
        del self._active[jid]
        del self._job_time[jid]
        del self._deficit[jid]
        self._assign.pop(jid, None)
        self._micro_end.pop(jid, None)
        self._evicted.add(jid)
        self._need_update = True

    def _readmitted(self, sim: Simulator) -> None:
        """Evicted jobs back in ``sim.queue`` rejoin as new arrivals (``add_job``)."""
        back = [j for j in self._evicted if self._state[j].status == QUEUED]
        for jid in sorted(back):
            self._evicted.discard(jid)
            self._add(self._state[jid])
        for jid in [j for j in self._evicted if self._state[j].status == DONE]:
            self._evicted.discard(jid)

    def _add(self, job: JobState) -> None:
        """``add_job``; a job whose Kueue flavor holds it to a GPU type (``--queues``) runs
        only there: its other columns' throughputs are 0 (as Gavel's for a type a job cannot
        run on), set anew at each admission, since Kueue may re-admit it in another flavor."""
        jid = job.job_id
        row = self._rows[jid]
        held = job.flavor_type
        if held is not None:
            row = [x if t == held else 0.0 for x, t in zip(row, self._types, strict=True)]
            k = self._fifo.get(jid)
            if k is not None and self._types[k] != held:  # FIFO's type from its last admission
                del self._fifo[jid]
        self._thr[jid] = row
        self._active[jid] = job
        self._job_time[jid] = [self._half] * self._K
        self._deficit[jid] = [0.0] * self._K
        self._need_update = True

    def _round_end(self, sim: Simulator, ver: int) -> None:
        if ver != self._ver:
            return
        # decide after every other event of this instant (arrivals at the round end count)
        sim.at(sim.now, self._round_end_now, sim, ver)

    def _round_end_now(self, sim: Simulator, ver: int) -> None:
        if ver != self._ver:
            return
        now = sim.now
        if now < self._deadline - _SLACK:
            left = [j for j in self._round if self._state[j].status == RUNNING]
            if left:  # the estimate was a hair early: wait for those jobs
                end = max(self._finish_estimate(self._state[j], now, 0.0) for j in left)
                self._arm(sim, min(self._deadline, max(end, now + 1e-9)))
                return
        self._decide(sim)

    def summary_extras(self, sim: Simulator) -> dict[str, Any]:
        return {"gavel_rounds": self.rounds, "gavel_allocations": self.allocations}

    # ------------------------------------------------------------------ one decision
    def _decide(self, sim: Simulator) -> None:
        """One iteration of Gavel's simulate loop at ``sim.now`` (module doc, items 1–2)."""
        now = sim.now
        self._decided_at = now
        self._ver += 1
        self._in_round = False
        # force a reset (simulate): every job arrived before and the last decision ran nothing
        if self._entered == len(sim.jobs) and self._ran_nothing:
            self._last_reset = 0.0
        # account the micro-tasks of the round that ended (_done_callback)
        if self._round:
            if self._prev_end is not None:
                self._acct_start = self._prev_end
            self._prev_end = now
            finished = []
            for jid, k in self._round.items():
                job = self._state[jid]
                end = job.finish if job.status == DONE else self._micro_end[jid]
                spent = end - self._acct_start
                self._job_time[jid][k] += spent
                self._worker_time[k] += spent
                if job.status == DONE:
                    finished.append(jid)
            for jid in finished:  # _remove_job
                del self._active[jid]
                del self._job_time[jid]
                del self._deficit[jid]
                self._need_update = True
            self._round = {}
        if sim.finished == len(sim.jobs):
            return
        # arrivals (add_job)
        if sim.arrived > self._seen:
            for job in sim.jobs[self._seen : sim.arrived]:
                if job.job_id not in self._thr:  # (a service adds jobs after attach)
                    self._take(job)
                if job.status == HELD:  # admitted, then evicted before this decision
                    self._evicted.add(job.job_id)
                else:
                    self._add(job)
            self._seen = sim.arrived
        # every job whose arrival has happened, held by the quota layer or not (``--queues``)
        self._entered = sim.entered
        if self._evicted:
            self._readmitted(sim)
        for attempt in range(2):
            assignment = self._schedule_jobs_on_workers(sim)
            if assignment or not self._active or self._entered < len(sim.jobs) or attempt:
                break
            self._last_reset = 0.0  # the force reset of the next loop iteration (same time)
        self.rounds += 1
        self._apply(sim, assignment)
        self._ran_nothing = not assignment

    def _apply(self, sim: Simulator, assignment: dict[int, tuple[int, tuple[int, ...]]]) -> None:
        """Preempt what moves or stops, start what is new, arm the round's end."""
        now = sim.now
        for jid in sorted(sim.running):
            job = sim.running[jid]
            want = assignment.get(jid)
            if want is None or want[1] != job.gpus:
                sim.preempt(job)
        self._round = {jid: k for jid, (k, _) in assignment.items()}
        self._assign = assignment
        if not assignment:
            return
        end = 0.0
        self._micro_end = {}
        longest = 0.0
        for jid, (k, gpus) in assignment.items():
            job = self._state[jid]
            delay = 0.0
            if job.status != RUNNING:
                delay = sim.restart_delay_of(job) if job.start is not None else 0.0
                sim.start(job, gpus)
            micro = self._micro(job, k)
            self._micro_end[jid] = now + micro
            longest = max(longest, micro)
            end = max(end, min(now + micro, self._finish_estimate(job, now, delay, k)))
        self._deadline = now + longest
        self._in_round = True
        self._arm(sim, end)

    def _micro(self, job: JobState, k: int) -> float:
        """The length of a Gavel micro-task of ``job`` on column ``k``: ``int(thr ×
        gavel_round)`` whole steps at thr steps/s (scheduler.py:_get_num_steps), i.e. at most
        ``gavel_round`` seconds; ``gavel_round`` for a job without a step count."""
        steps = job.spec.iterations
        if steps <= 0:
            return self.round_length
        per_s = steps * self._thr[job.job_id][k]
        whole = math.floor(per_s * self.round_length)
        return whole / per_s if whole > 0 else self.round_length

    def _arm(self, sim: Simulator, t: float) -> None:
        self._ver += 1
        sim.at(t, self._round_end, sim, self._ver)

    def _finish_estimate(self, job: JobState, now: float, delay: float, k: int | None = None):
        """When ``job`` would finish on its type (column ``k``; default its round's)."""
        if k is None:
            k = self._round[job.job_id]
        pace = 1.0 / (self._thr[job.job_id][k] * job.spec.duration)
        return now + delay + self._times.remaining_alone(job) * pace

    # ------------------------------------------------------------------ the mechanism
    def _schedule_jobs_on_workers(self, sim: Simulator) -> dict[int, tuple[int, tuple[int, ...]]]:
        """scheduler.py:_schedule_jobs_on_workers (module doc, items 3–7): job → (column,
        GPUs)."""
        prio = self._update_priorities(sim)
        order = list(self._order)
        if self._shuffle:
            self._shuffler.shuffle(order)
        scheduled = self._helper(order, prio)
        return assign_workers(order, scheduled, self._servers, self._assign, self._alloc)

    def _helper(self, order: list[int], prio: dict[int, list[float]]) -> dict[int, list]:
        """scheduler.py:_schedule_jobs_on_workers_helper: column → [(job, GPUs)]."""
        entries: list[tuple[int, int]] = []
        for k in order:
            per = [
                (jid, prio[jid][k], self._deficit[jid][k], self._alloc_of(jid, k))
                for jid in self._active
            ]
            per.sort(key=lambda x: (x[1], x[2], x[3]), reverse=True)
            entries += [(e[0], k) for e in per]
        fifo = self.allocation == "fifo"

        def skip(jid: int, k: int) -> bool:
            return self._thr[jid][k] <= 0 or (fifo and prio[jid][k] <= 0.0)

        gpus = {jid: job.num_gpus for jid, job in self._active.items()}
        return take_in_order(entries, order, list(self._count_of), gpus, skip)

    def _alloc_of(self, jid: int, k: int) -> float:
        a = self._alloc.get(jid)
        return a[k] if a is not None else 0.0

    def _update_priorities(self, sim: Simulator) -> dict[int, list[float]]:
        """scheduler.py:_update_priorities (simulation branch): reset, reallocate, priorities."""
        now = sim.now
        elapsed = now - self._last_reset
        if self._need_update and (elapsed >= self.reset_interval or self._last_reset == 0):
            self._reset_time_run_so_far(now)
            self._alloc = self._compute_allocation(sim)
            self.allocations += 1
            self._need_update = False
        prio: dict[int, list[float]] = {}
        wt = self._worker_time
        for jid in self._active:
            a = self._alloc.get(jid)
            thr = self._thr[jid]
            jt = self._job_time[jid]
            row = [0.0] * self._K
            if a is not None:
                for k in range(self._K):
                    x = a[k]
                    if x == 0.0 or thr[k] == 0.0:
                        continue
                    row[k] = gavel_priority(x, jt[k], wt[k])
            prio[jid] = row
        return prio

    def _reset_time_run_so_far(self, now: float) -> None:
        elapsed = now - self._last_reset
        half = self._half
        for k in range(self._K):
            total = 0.0
            for jid, jt in self._job_time.items():
                received = jt[k] - half
                a = self._alloc.get(jid)
                should = a[k] * elapsed if a is not None else 0.0
                self._deficit[jid][k] += should - received
                jt[k] = half
                total += half
            self._worker_time[k] = total
        self._last_reset = now

    # ------------------------------------------------------------------ allocations
    def _compute_allocation(self, sim: Simulator) -> dict[int, list[float]]:
        """scheduler.py:_compute_allocation with this policy (module doc, items 9–10)."""
        if self.allocation == "fifo":
            return self._fifo_allocation()
        from . import gavel_lp

        ids = sorted(self._active)
        if not ids:
            if self.allocation == "finish_time_fairness":
                self._prev_left, self._prev_iso = {}, {}
            return {}
        T = np.array([self._thr[j] for j in ids])
        scale = np.array([self._active[j].num_gpus for j in ids], float)
        counts = self._counts
        solved_by_ecos = False
        if self.allocation == "max_min_fairness":
            fn = gavel_lp.max_min_fairness_perf if self.perf else gavel_lp.max_min_fairness
            if gavel_lp.ecos_available():
                # Gavel's units (steps/s) and Gavel's solver: its optimum is not unique, and
                # ECOS's point is Gavel's allocation (benchmarks/gavel_mtd_ecos_check.py)
                steps = np.array([float(self._active[j].spec.iterations or 1) for j in ids])
                X = fn(T * steps[:, None], scale, counts, method="ecos")
                solved_by_ecos = True
            else:
                X = fn(T, scale, counts)
        else:
            rem = self._times.remaining_alone
            left = np.array(
                [max(rem(self._active[j]) / self._active[j].spec.duration, 1e-12) for j in ids]
            )
            if not self.perf:
                T = self._reference(T, ids)
            if self.allocation == "min_total_duration":
                # in Gavel's units (steps/s, steps left: a Gavel trace job's iterations are its
                # total_steps), solved by Gavel's solver where ecos is installed: its
                # feasibility problem has many answers, and ECOS's is Gavel's
                steps = np.array([float(self._active[j].spec.iterations or 1) for j in ids])
                X = gavel_lp.min_total_duration_perf(
                    T * steps[:, None], scale, counts, left * steps, method="ecos"
                )
            else:
                iso = gavel_lp.isolated_throughput(T, scale, counts)
                cum = np.zeros(len(ids))
                for i, j in enumerate(ids):  # FinishTimeFairnessPolicyWithPerf's state
                    c = self._cum_iso.get(j, 0.0)
                    if j in self._prev_left:
                        c += (self._prev_left[j] - left[i]) / self._prev_iso[j]
                    self._cum_iso[j] = cum[i] = c
                # the clock keeps TIME_DIGITS decimals; an arrival may have more
                since = np.array([max(0.0, sim.now - self._active[j].arrival) for j in ids])
                X = gavel_lp.finish_time_fairness_perf(T, scale, counts, left, since, cum)
                self._prev_left = dict(zip(ids, left.tolist(), strict=True))
                self._prev_iso = dict(zip(ids, iso.tolist(), strict=True))
        if not self.perf and not solved_by_ecos:
            # type-blind throughputs: any split of a job's time over the types is optimal;
            # take the one proportional to the types' sizes (module doc, deviations)
            X = X.sum(axis=1, keepdims=True) * (counts / counts.sum())[None, :]
        X = np.round(X, _DIGITS)  # ties the LP makes are ties (module doc, deviations)
        return {j: X[i].tolist() for i, j in enumerate(ids)}

    def _reference(self, T: np.ndarray, ids: list[int]) -> np.ndarray:
        """The agnostic policies' throughputs: the v100 column on every type (Gavel), else
        (no v100 type, or a job that cannot run on one) 1 / duration, the reference type's."""
        col = np.array([1.0 / self._active[j].spec.duration for j in ids])
        if self._ref is not None:
            col = np.where(T[:, self._ref] > 0, T[:, self._ref], col)
        return np.repeat(col[:, None], self._K, axis=1)

    def _fifo_allocation(self) -> dict[int, list[float]]:
        """fifo.py:FIFOPolicy.get_allocation, mode 'base' (gavel-fifo) or 'perf', line by line
        (module doc, item 10). Types by name (``sorted`` as Gavel's); the allocation is one
        type per job; returns X (1.0 on that type)."""
        names = self._types  # alphabetical = Gavel's sorted(available_worker_types)
        available = {k: self._count_of[k] for k in range(self._K)}
        thr = self._thr
        sf = {j: job.num_gpus for j, job in self._active.items()}
        if self.perf:
            self._fifo = {}
        alloc = self._fifo
        queue = [j for j in sorted(self._active) if j not in alloc]
        for sj in sorted(alloc):
            k = alloc[sj]
            if sj not in self._active:  # completed: its place goes to the queue's head
                if queue:
                    head = queue[0]
                    if sf[head] <= available[k] and thr[head][k] > 0.0:
                        queue.pop(0)
                        alloc[head] = k
                        available[k] -= sf[head]
                del alloc[sj]
            else:
                available[k] -= sf[sj]
        types = sorted((k for k in available if available[k] > 0), key=lambda k: names[k])
        while queue and types:
            j = queue.pop(0)
            s = sf[j]
            held = self._active[j].flavor_type  # its Kueue flavor's type only (``_add``)
            fits, where = [], []
            for i, k in enumerate(types):
                if available[k] >= s and (held is None or names[k] == held):
                    fits.append(k)
                    where.append(i)
            if not fits:
                break
            if not self.perf:
                idx = self._fifo_rng.randrange(len(fits))
                # Gavel uses the scan's last ``worker_type`` (quirk) instead of fits[idx]
                k = types[-1] if self.fifo_quirk and held is None else fits[idx]
            else:
                k, idx, best = -1, -1, -1.0
                for i, x in enumerate(fits):
                    if thr[j][x] > best:
                        best, k, idx = thr[j][x], x, i
            if thr[j][k] > 0.0:
                alloc[j] = k
                available[k] -= s
                if available[k] == 0:
                    types.pop(where[idx])
        out = {}
        for j in self._active:
            row = [0.0] * self._K
            if j in alloc:
                row[alloc[j]] = 1.0
            out[j] = row
        return out


#: ``--policy`` name → (allocation, heterogeneity-aware, Gavel's policy name)
POLICIES: dict[str, tuple[str, bool, str]] = {
    "gavel-fifo": ("fifo", False, "fifo"),
    "gavel-fifo-perf": ("fifo", True, "fifo_perf"),
    "max-min-fairness": ("max_min_fairness", False, "max_min_fairness"),
    "max-min-fairness-perf": ("max_min_fairness", True, "max_min_fairness_perf"),
    "finish-time-fairness": ("finish_time_fairness", False, "finish_time_fairness"),
    "finish-time-fairness-perf": ("finish_time_fairness", True, "finish_time_fairness_perf"),
    "min-total-duration-perf": ("min_total_duration", True, "min_total_duration_perf"),
}


def make_gavel(
    name: str,
    round_length: float = 360.0,
    reset_interval: float = 1920.0,
    fifo_quirk: bool = False,
) -> GavelPolicy:
    """The policy ``name`` of :data:`POLICIES`."""
    allocation, perf, _ = POLICIES[name]
    return GavelPolicy(
        name,
        allocation,
        perf,
        round_length=round_length,
        reset_interval=reset_interval,
        fifo_quirk=fifo_quirk,
    )
