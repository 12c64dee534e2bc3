"""Iteration-level execution: Wang et al.'s DAG model (Sec. III, Alg. 3) on the event engine.

Every iteration of a job: each worker runs a forward then a backward task on its GPU
(non-preemptive; GPUs are time-shared between the jobs placed on them and an idle GPU starts the
ready task of the resident job with the least remaining service), then a barrier, then one
all-reduce of the whole gradient if the job spans servers. A communication gate decides when a
ready all-reduce may start; running all-reduces share each server's link fluidly
(``LinearContention``: per byte ``k·b + (k−1)·η``, k from the job's busiest server).

Exact shortcuts keep the event count low without changing any outcome:
* a job alone on all its GPUs runs the compute phase of an iteration as one gang task;
* a single-server job alone on its GPUs runs all its remaining iterations as one macro task;
* on a shared GPU, forward + backward run as one task when no other resident can have a ready
  task before the forward ends (``_can_fuse``).
Each shortcut is split back into the exact task sequence the moment another job lands on one of
its GPUs (the new job can only win a GPU at the next task boundary, which the split preserves).
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING

from ..perf.contention import (
    MB,
    LinearContention,
    advance_allreduce,
    allreduce_bytes_left,
    ring_factor,
)
from .simulator import quantize
from .state import JobState

if TYPE_CHECKING:  # pragma: no cover
    from ..policies.gates import CommGate
    from .job import JobSpec
    from .simulator import Simulator

NS = 1e-9  # seconds per nanosecond


def to_ns(seconds: float) -> int:
    """A duration in whole nanoseconds (remaining service is kept in exact integer ns)."""
    return int(round(seconds * 1e9))


# worker states
F_READY, RUNNING, B_READY, WAIT, INACTIVE = 0, 1, 2, 3, 4
# task kinds
K_F, K_B, K_GANG_FB, K_GANG_F, K_GANG_B, K_MACRO, K_FB = range(7)
# comm states
C_NONE, C_WAITING, C_RUNNING = 0, 1, 2


class Run:
    """Executor-side state of one running job (iteration level)."""

    __slots__ = (
        "job",
        "jid",
        "gpus",
        "servers",
        "cross",
        "G",
        "tf",
        "tb",
        "e",
        "size",
        "ipt",
        "tasks_left",
        "last_scale",
        "scale",
        "tfs",
        "tbs",
        "tf_full",
        "tb_full",
        "tf_last",
        "tb_last",
        "svc",
        "wstate",
        "pending",
        "gang",
        "gang_start",
        "gang_end",
        "fused",
        "comm_min",
        "comm_lb",
        "a",
        "b",
        "ver",
        "comm",
        "lat_left",
        "bytes_left",
        "per_byte",
        "comm_last",
        "comm_ver",
    )

    def __init__(
        self,
        job: JobState,
        model: LinearContention,
        ipt: int,
        speed: float = 1.0,
        byte_scale: float = 1.0,
    ) -> None:
        spec = job.spec
        self.job = job
        self.jid = spec.job_id
        self.gpus = job.gpus
        self.servers = job.servers
        self.cross = len(job.servers) > 1
        self.G = spec.num_gpus
        # on GPU types of different speeds the gang computes at its slowest worker's pace
        self.tf = spec.model.t_forward if speed == 1.0 else spec.model.t_forward / speed
        self.tb = spec.model.t_backward if speed == 1.0 else spec.model.t_backward / speed
        self.size = spec.model.size_mb * MB * byte_scale
        # uncontended all-reduce time per real iteration (Wang Eq. 8's E_J term)
        self.e = model.time(self.size) if self.cross else 0.0
        self.ipt = ipt
        self.a, self.b = model.a, model.b
        self.comm_lb = 0.0  # earliest end of the running all-reduce (at full speed)
        iters = job.iterations_left
        self.tasks_left = -(-iters // ipt)
        self.last_scale = iters - (self.tasks_left - 1) * ipt
        # task durations in integer nanoseconds (the engine's time grid), so that shortcut
        # tasks and one-event-per-task execution add up to the very same event times
        self.tf_full, self.tb_full = to_ns(self.tf * ipt), to_ns(self.tb * ipt)
        self.tf_last = to_ns(self.tf * self.last_scale)
        self.tb_last = to_ns(self.tb * self.last_scale)
        self.set_scale()
        # Wang's L_J = (C_J + E_J) × |G(J)|, remaining part, in integer ns (exact arithmetic)
        full = self.tasks_left - 1
        self.svc = (
            self.G * self.compute_left()
            + full * self.comm_service(ipt)
            + self.comm_service(self.last_scale)
        )
        self.wstate = dict.fromkeys(self.gpus, F_READY)
        self.pending = self.G
        self.gang = -1  # kind of the running gang task, -1 if none
        self.gang_start = 0.0
        self.gang_end = 0.0
        self.fused: dict[int, float] = {}  # GPU → forward end of a fused forward+backward task
        self.ver = 0
        self.comm = C_NONE
        self.lat_left = 0.0
        self.bytes_left = 0.0
        self.per_byte = 0.0
        self.comm_last = 0.0
        self.comm_ver = 0

    def set_scale(self) -> None:
        """Real iterations in the current task (the last task takes the remainder)."""
        if self.tasks_left > 1:
            self.scale, self.tfs, self.tbs = self.ipt, self.tf_full, self.tb_full
        else:
            self.scale, self.tfs, self.tbs = self.last_scale, self.tf_last, self.tb_last
        # the shortest an all-reduce of this task can take (alone on its links)
        self.comm_min = (self.a + self.size * self.b) * self.scale

    def comm_service(self, scale: int) -> int:
        """E_J share of one task of ``scale`` iterations, summed over workers (ns)."""
        return to_ns(self.G * self.e * scale)

    def compute_left(self) -> int:
        """Per-worker compute time of all remaining tasks, the current one included (ns)."""
        if self.tasks_left <= 0:
            return 0
        full = self.tasks_left - 1
        return full * (self.tf_full + self.tb_full) + self.tf_last + self.tb_last

    def macro_tasks_done(self, now: float, count_ending_now: bool) -> int:
        """Whole tasks a macro shortcut started at ``gang_start`` has completed by ``now``."""
        period = self.tf_full + self.tb_full
        if period <= 0:
            return 0
        base = self.gang_start
        done = max(int((now - base) // (period * NS)), 0)
        while done > 0 and quantize(base + done * period * NS) > now:
            done -= 1
        while quantize(base + (done + 1) * period * NS) <= now:
            done += 1
        if not count_ending_now and done and quantize(base + done * period * NS) == now:
            done -= 1  # its backward ends at this very instant: still running
        return min(done, self.tasks_left - 1)


class TaskExecutor:
    """Iteration-level executor (SPEC §4 "iteration level").

    ``iterations_per_task`` = m lets one simulated iteration stand for m real ones (the Wang
    authors' artifact effectively used m = 1000).
    """

    def __init__(
        self,
        model: LinearContention | None = None,
        gate: CommGate | None = None,
        iterations_per_task: int = 1,
        shortcuts: bool = True,
        ring_bytes: bool = False,
    ) -> None:
        if iterations_per_task < 1:
            raise ValueError("iterations_per_task must be ≥ 1")
        self.model = model or LinearContention()
        self.gate = gate
        self.ipt = int(iterations_per_task)
        #: False = one event per forward/backward task (the reference the shortcuts must match)
        self.shortcuts = shortcuts
        #: True: a w-worker job's all-reduce moves :func:`ring_factor` (w) × its M (``ring_bytes``)
        self.ring_bytes = ring_bytes

    def byte_scale(self, spec: JobSpec) -> float:
        """The bytes one all-reduce of ``spec`` moves per uplink, as a multiple of its M."""
        return ring_factor(spec.num_gpus) if self.ring_bytes else 1.0

    def alone_time(self, job: JobState) -> float:
        """Seconds ``job`` needs alone on its most consolidated placement (``AloneTimes``):
        iterations × (t_f + t_b, plus one uncontended all-reduce when it spans servers), as
        ``WangJobLevel`` times an iteration with no other job."""
        spec = job.spec
        cl = self.sim.cluster
        t = cl.mean_speed_time(spec.model.t_compute)
        if len(cl.consolidated_servers(spec.num_gpus)) > 1:
            t += self.model.time(spec.model.size_mb * MB * self.byte_scale(spec), 1)
        return spec.iterations * t

    # ------------------------------------------------------------------ setup
    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        n = sim.cluster.num_gpus
        self.runs: dict[int, Run] = {}
        self.gpu_run: list[Run | None] = [None] * n  # who computes on the GPU now
        self.gpu_runs: list[list[Run]] = [[] for _ in range(n)]  # runs resident on the GPU
        self.ready = [0] * n  # workers with a ready task per GPU (an idle GPU with 0 skips)
        self.gpu_task: list[tuple[int, float, float]] = [(-1, 0.0, 0.0)] * n  # kind, start, end
        self.gpu_ver = [0] * n
        self.server_comms: list[list[Run]] = [[] for _ in range(sim.cluster.num_servers)]
        # refused all-reduces, re-asked when an all-reduce ends / starts on that server
        self.server_waiting: list[set[Run]] = [set() for _ in range(sim.cluster.num_servers)]
        self.server_waiting_start: list[set[Run]] = [set() for _ in range(sim.cluster.num_servers)]
        self._dirty_gpus: set[int] = set()
        self._gate_pending: set[Run] = set()
        self._affected_servers: set[int] = set()
        self.busy = 0.0
        self.comm_starts = 0

    def busy_gpu_seconds(self) -> float:
        return self.busy

    # ------------------------------------------------------------------ engine interface
    def start(self, job: JobState, delay: float) -> None:
        speed = self.sim.cluster.slowest_speed(job.gpus)
        run = Run(job, self.model, self.ipt, speed, self.byte_scale(job.spec))
        job.service_left = run.svc * NS
        self.runs[run.jid] = run
        for g in run.gpus:
            # another job lands on these GPUs: undo shortcuts of the residents there
            for other in self.gpu_runs[g]:
                self._split(other, g)
            self.gpu_runs[g].append(run)
        if delay > 0:
            for g in run.gpus:
                run.wstate[g] = INACTIVE
            self.sim.at(self.sim.now + delay, self._activate, run)
        else:
            for g in run.gpus:
                self.ready[g] += 1
            self._dirty_gpus.update(run.gpus)

    def stop(self, job: JobState) -> None:
        raise NotImplementedError("preemption is not supported at iteration level")

    def refresh(self, job: JobState) -> None:
        run = self.runs.get(job.job_id)
        if run is None:
            return
        job.service_left = self._svc_now(run) * NS

    def _svc_now(self, r: Run) -> int:
        """L_J as the one-event-per-task execution would hold it now (inside a shortcut task,
        forward and backward tasks that have ended by now are already counted)."""
        if r.gang < 0:
            return self._eff_svc(r) if r.fused else r.svc
        now = self.sim.now
        svc = r.svc
        tfs = r.tfs
        start = r.gang_start
        if r.gang == K_MACRO:
            done = r.macro_tasks_done(now, count_ending_now=True)
            if done:
                svc -= r.G * (r.tf_full + r.tb_full) * done
                tfs = r.tf_full if r.tasks_left - done > 1 else r.tf_last
                start = quantize(start + done * (r.tf_full + r.tb_full) * NS)
        elif r.gang != K_GANG_FB:
            return svc
        if now >= quantize(start + tfs * NS):
            svc -= r.G * tfs
        return max(svc, 0)

    def _eff_svc(self, r: Run) -> int:
        """L_J of a job with fused tasks: their forwards that have ended by now count as done."""
        now = self.sim.now
        return r.svc - r.tfs * sum(1 for f_end in r.fused.values() if f_end <= now)

    def _can_fuse(self, g: int, r: Run, f_end: float) -> bool:
        """May ``r`` run forward and backward on the shared GPU ``g`` as one task?

        Yes if no other resident can have a ready task on ``g`` at ``f_end``: each is a
        cross-server job whose worker here is done with this iteration and whose next iteration
        cannot start before its all-reduce ends, which is after ``f_end`` even at full speed.
        (A job placed on ``g`` meanwhile splits the fused task, see ``_split``.)
        """
        now = self.sim.now
        for k in self.gpu_runs[g]:
            if k is r:
                continue
            if k.wstate[g] != WAIT or not k.cross:
                return False
            earliest = k.comm_lb if k.comm == C_RUNNING else now + k.comm_min
            if earliest - f_end <= 1e-9:  # a margin over the 1 ns time grid
                return False
        return True

    def _activate(self, run: Run) -> None:
        for g in run.gpus:
            run.wstate[g] = F_READY
            self.ready[g] += 1
        self._dirty_gpus.update(run.gpus)

    # ------------------------------------------------------------------ end of instant
    def settle(self) -> None:
        if self._gate_pending:
            self._run_gates()
        if self._affected_servers:
            self._retime_comms()
        dirty_set = self._dirty_gpus
        if dirty_set:
            gpu_run = self.gpu_run
            ready = self.ready
            if len(dirty_set) == 1:
                g = dirty_set.pop()
                if gpu_run[g] is None and ready[g]:
                    self._pick(g)
                return
            dirty = sorted(dirty_set)
            dirty_set.clear()
            for g in dirty:
                if gpu_run[g] is None and ready[g]:
                    self._pick(g)

    # ------------------------------------------------------------------ compute
    def _pick(self, g: int) -> None:
        """An idle GPU starts the ready task of the resident job with least remaining service."""
        best = None
        bsvc = 0
        runs = self.gpu_runs[g]
        for r in runs:
            st = r.wstate[g]
            if st == F_READY or st == B_READY:
                svc = self._eff_svc(r) if r.fused else r.svc
                if best is None or svc < bsvc or (svc == bsvc and r.jid < best.jid):
                    best = r
                    bsvc = svc
        if best is None:
            return
        r = best
        now = self.sim.now
        if r.wstate[g] == B_READY:
            self._start_task(g, r, K_B, now, round(now + r.tbs * NS, 9))
            return
        gpu_runs = self.gpu_runs
        if not self.shortcuts:
            self._start_task(g, r, K_F, now, round(now + r.tfs * NS, 9))
        elif len(runs) == 1 and all(
            len(gpu_runs[h]) == 1 and r.wstate[h] == F_READY for h in r.gpus
        ):
            # gang: the job is alone on all its GPUs (its workers are in lockstep)
            if r.cross:
                kind, end = K_GANG_FB, quantize(now + (r.tfs + r.tbs) * NS)
            else:
                kind, end = K_MACRO, quantize(now + r.compute_left() * NS)
            r.gang, r.gang_start, r.gang_end = kind, now, end
            r.ver += 1
            ready = self.ready
            for h in r.gpus:
                r.wstate[h] = RUNNING
                ready[h] -= 1
                self.gpu_run[h] = r
            self.sim.at(end, self._gang_done, r, r.ver)
        else:
            f_end = round(now + r.tfs * NS, 9)
            if self._can_fuse(g, r, f_end):
                r.fused[g] = f_end
                self._start_task(g, r, K_FB, now, round(f_end + r.tbs * NS, 9))
            else:
                self._start_task(g, r, K_F, now, f_end)

    def _start_task(self, g: int, r: Run, kind: int, start: float, end: float) -> None:
        r.wstate[g] = RUNNING
        self.ready[g] -= 1
        self.gpu_run[g] = r
        self.gpu_task[g] = (kind, start, end)
        ver = self.gpu_ver[g] + 1
        self.gpu_ver[g] = ver
        sim = self.sim
        sim._seq += 1
        heappush(sim._heap, (end, sim._seq, self._task_done, (g, r, ver)))

    def _task_done(self, g: int, r: Run, ver: int) -> None:
        if ver != self.gpu_ver[g]:
            return  # re-timed by a split
        kind, start, end = self.gpu_task[g]
        self.busy += end - start
        self.gpu_run[g] = None
        self._dirty_gpus.add(g)
        if kind == 0:  # K_F
            r.svc -= r.tfs
            r.wstate[g] = B_READY
            self.ready[g] += 1
            return
        if kind == K_FB:
            del r.fused[g]
            r.svc -= r.tfs + r.tbs
        else:
            r.svc -= r.tbs
        r.wstate[g] = WAIT
        r.pending -= 1
        if r.pending == 0:
            self._compute_done(r)

    def _gang_done(self, r: Run, ver: int) -> None:
        if ver != r.ver:
            return
        kind = r.gang
        r.gang = -1
        self.busy += r.G * (r.gang_end - r.gang_start)
        for h in r.gpus:
            self.gpu_run[h] = None
        self._dirty_gpus.update(r.gpus)
        if kind == K_MACRO:
            self._finish(r)
            return
        if kind == K_GANG_F:
            r.svc -= r.G * r.tfs
            for h in r.gpus:
                r.wstate[h] = B_READY
                self.ready[h] += 1
            return
        r.svc -= r.G * (r.tbs if kind == K_GANG_B else r.tfs + r.tbs)
        for h in r.gpus:
            r.wstate[h] = WAIT
        r.pending = 0
        self._compute_done(r)

    def _split(self, r: Run, g: int) -> None:
        """Turn a shortcut task of ``r`` covering GPU ``g`` back into exact tasks.

        The newcomer may take the GPU at the next task boundary of ``r``; a boundary at this very
        instant counts as not yet passed (the GPU is free now in the task-by-task execution).
        """
        now = self.sim.now
        if g in r.fused and self.gpu_run[g] is r:
            f_end = r.fused.pop(g)
            kind, start, end = self.gpu_task[g]
            if now <= f_end:  # still in its forward: the GPU is up for grabs at f_end
                self.gpu_task[g] = (K_F, start, f_end)
                self.gpu_ver[g] += 1
                self.sim.at(f_end, self._task_done, g, r, self.gpu_ver[g])
            else:  # its forward is done; the rest is a plain backward
                self.busy += f_end - start
                r.svc -= r.tfs
                self.gpu_task[g] = (K_B, f_end, end)
            return
        if r.gang == K_MACRO:
            # an iteration ending exactly now stays in the shortcut as a backward ending now
            done = r.macro_tasks_done(now, count_ending_now=False)
            task_start = r.gang_start
            if done:
                task_start = quantize(task_start + done * (r.tf_full + r.tb_full) * NS)
                r.svc -= r.G * (r.tf_full + r.tb_full) * done
                r.job.iterations_left -= done * r.ipt
                r.tasks_left -= done
                r.set_scale()
            self.busy += r.G * (task_start - r.gang_start)
            r.gang_start = task_start
            f_end = quantize(task_start + r.tfs * NS)
            if now <= f_end:
                r.gang, r.gang_end = K_GANG_F, f_end
            else:
                r.svc -= r.G * r.tfs  # this iteration's forward is done
                r.gang, r.gang_end = K_GANG_B, quantize(f_end + r.tbs * NS)
        elif r.gang == K_GANG_FB and now <= quantize(r.gang_start + r.tfs * NS):
            r.gang, r.gang_end = K_GANG_F, quantize(r.gang_start + r.tfs * NS)
        else:
            return
        r.ver += 1
        self.sim.at(r.gang_end, self._gang_done, r, r.ver)

    def _compute_done(self, r: Run) -> None:
        """Barrier reached: all-reduce if the job spans servers, else the iteration is done."""
        if r.cross:
            r.comm = C_WAITING
            self._gate_pending.add(r)
        else:
            self._iteration_done(r)

    def _iteration_done(self, r: Run) -> None:
        s = r.scale
        r.svc -= r.comm_service(s)
        r.job.iterations_left -= s
        r.tasks_left -= 1
        if r.tasks_left == 0:
            self._finish(r)
            return
        r.set_scale()
        ready = self.ready
        for h in r.gpus:
            r.wstate[h] = F_READY
            ready[h] += 1
        r.pending = r.G
        self._dirty_gpus.update(r.gpus)

    def _finish(self, r: Run) -> None:
        del self.runs[r.jid]
        for g in r.gpus:
            self.gpu_runs[g].remove(r)
        r.job.service_left = 0.0
        self._dirty_gpus.update(r.gpus)
        self.sim.job_finished(r.job)

    # ------------------------------------------------------------------ communication
    def _run_gates(self) -> None:
        """Alg. 3 lines 15–21: ready all-reduces in SRSF order, each asks the gate once.

        A refused all-reduce waits until something that can change the answer happens: an
        all-reduce ends on the blocking server, or one starts on a server the gate names
        (``CommGate.start_watch``; AdaDUAL's reference task can change that way). A start during
        the pass re-asks the affected all-reduces at their SRSF position if that is still ahead,
        else in a follow-up pass at the same instant (Alg. 3 would ask them at the next slot).
        """
        gate = self.gate
        on_end = self.server_waiting
        on_start = self.server_waiting_start
        pending_set = self._gate_pending
        while pending_set:
            heap = [(r.svc, r.jid, r) for r in pending_set]
            heapify(heap)
            pending_set.clear()
            seen: set[int] = set()
            while heap:
                svc, jid, r = heappop(heap)
                if jid in seen or r.comm != C_WAITING:
                    continue
                seen.add(jid)
                block = -1 if gate is None else gate.blocker(self, r)
                if block < 0:
                    self._comm_start(r)
                    for s in r.servers:
                        watchers = on_start[s]
                        if not watchers:
                            continue
                        for w in watchers:
                            if w.jid not in seen and (w.svc, w.jid) > (svc, jid):
                                heappush(heap, (w.svc, w.jid, w))
                            else:
                                pending_set.add(w)
                        watchers.clear()
                else:
                    on_end[block].add(r)
                    for s in gate.start_watch(self, r, block):
                        on_start[s].add(r)

    def advance(self, r: Run) -> None:
        """Bring a running all-reduce's remaining latency/bytes up to now."""
        advance_allreduce(r, self.sim.now)

    def remaining_bytes(self, r: Run) -> float:
        """Remaining message size of a running all-reduce (AdaDUAL's M_old), exact at now.

        A pure read: progress is only folded into the state when rates change, so how often a
        gate looks cannot change the arithmetic (and hence the schedule).
        """
        return allreduce_bytes_left(r, self.sim.now)

    def message_bytes(self, r: Run) -> float:
        """Message size of ``r``'s next all-reduce (M_new), scaled by iterations per task."""
        return r.size * r.scale

    def _comm_start(self, r: Run) -> None:
        for s in r.servers:
            for q in self.server_comms[s]:
                self.advance(q)
        for s in r.servers:
            self.server_comms[s].append(r)
        self._affected_servers.update(r.servers)
        r.comm = C_RUNNING
        r.comm_lb = self.sim.now + r.comm_min
        r.lat_left = self.model.a * r.scale
        r.bytes_left = r.size * r.scale
        r.per_byte = 0.0  # set by _retime_comms
        r.comm_last = self.sim.now
        self.comm_starts += 1

    def _comm_done(self, r: Run, ver: int) -> None:
        if ver != r.comm_ver:
            return
        for s in r.servers:
            comms = self.server_comms[s]
            for q in comms:
                self.advance(q)
            comms.remove(r)
            waiting = self.server_waiting[s]
            if waiting:
                self._gate_pending.update(waiting)
                waiting.clear()
        self._affected_servers.update(r.servers)
        r.comm = C_NONE
        r.comm_ver += 1
        self._iteration_done(r)

    def _retime_comms(self) -> None:
        """Recompute k and the finish time of every all-reduce on a server whose count changed."""
        seen: set[int] = set()
        per_byte = self.model.per_byte
        comms = self.server_comms
        now = self.sim.now
        for s in sorted(self._affected_servers):
            for q in comms[s]:
                if q.jid in seen:
                    continue
                seen.add(q.jid)
                self.advance(q)
                k = max(len(comms[x]) for x in q.servers)
                pb = per_byte(k)
                if pb != q.per_byte:
                    q.per_byte = pb
                    q.comm_ver += 1
                    end = now + q.lat_left + q.bytes_left * pb
                    self.sim.at(end, self._comm_done, q, q.comm_ver)
        self._affected_servers.clear()
