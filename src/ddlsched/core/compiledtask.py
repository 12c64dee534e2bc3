"""``TaskExecutor`` with its task loop compiled (``core/taskkernel.py``, numba): same events.

The Python ``TaskExecutor`` spends 4–6 µs per event; a 160-job exact run has about 3 M events.
This subclass keeps the executor's state in the kernel's arrays and its events in the kernel's
own heap, which the engine merges with its heap (``Simulator`` runs whole instants of the kernel
without coming back to Python unless a job finishes or an engine event is due). Runs are set up
in Python (``Run`` computes the same integers as before) and copied into a slot. Only the
built-in gates run compiled; ``compiled_available`` says whether numba can be imported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..perf.contention import LinearContention
from .job import JobSpec
from .state import JobState
from .taskexec import MB, NS, Run, TaskExecutor


def compiled_available() -> bool:
    """Whether numba imports here (else the Python ``TaskExecutor`` runs, same answers)."""
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency; this guards odd installs
        return False
    return True


#: the kernel is exact below 2**23 s (97 days): up to there a float time of the Python loop is
#: a point of the 1 ns grid (``round(x, 9)``) and ``n / 1e9`` gives it back; above, floats are
#: coarser than 1 ns and Python's ``round(x, 9)`` leaves them as they are.
EXACT_UNTIL = float(2**23)


#: the kernel's entry points in two halves of about equal compile time (≈ 5 and 7 s of the
#: ≈ 10 s in one process), so that ``python -m ddlsched.warmup`` compiles them on two cores
WARM_UP_PARTS = (("settle", "events_at", "set_scale"), ("run", "start", "services"))


def warm_up(names: Sequence[str] | None = None) -> None:
    """Compile (or load from numba's cache) the kernel's entry points ``names`` (default:
    every one) now, with the argument types the executor passes, so that nothing compiles in
    the middle of a run."""
    from numba import types as nt

    from . import taskkernel as K

    i8, arr = nt.int64, nt.int64[::1]
    signatures = {
        "start": (K.ST, i8, nt.float64),
        "settle": (K.ST,),
        "run": (K.ST, i8, nt.boolean),
        "events_at": (K.ST, i8, i8),
        "services": (K.ST, arr, arr),
        "set_scale": (K.ST, i8),
    }
    for name in signatures if names is None else names:
        getattr(K, name).compile(signatures[name])


def fits(jobs: Sequence[JobSpec], model: LinearContention) -> bool:
    """Whether every time of the run surely stays below ``EXACT_UNTIL``.

    Something always progresses (a task on some GPU or an all-reduce: gates and placements only
    make work wait for other work), so the run ends before the last arrival plus all its work
    done one piece at a time: every worker's tasks, every all-reduce's latency ``a`` and its
    bytes at the slowest aggregate rate of the model (k all-reduces on a link move k bytes per
    ``k·b + (k−1)·η`` seconds, never fewer than one per ``b + η``).
    """
    if not jobs:
        return True
    per_byte = model.b + model.eta
    total = max(j.arrival for j in jobs)
    for j in jobs:
        m = j.model
        compute = j.num_gpus * (m.t_forward + m.t_backward)
        total += j.iterations * (compute + model.a + m.size_mb * MB * per_byte)
    return total < EXACT_UNTIL / 2  # a margin for rounding and restart delays


def _ns(t: float) -> int:
    """A grid time (seconds, as the engine rounds them) as integer nanoseconds."""
    return int(round(t * 1e9))


class CompiledTaskExecutor(TaskExecutor):
    """Iteration-level executor whose per-GPU task loop, gates and all-reduces run compiled.

    ``gate`` is described by ``gate_kind`` (``none``, ``srsf`` with ``gate_n`` = n, or
    ``adadual``); the backend maps the built-in gates to these.
    """

    def __init__(
        self,
        model=None,
        gate=None,
        iterations_per_task: int = 1,
        shortcuts: bool = True,
        *,
        gate_kind: str = "none",
        gate_n: int = 0,
    ) -> None:
        super().__init__(model, gate, iterations_per_task, shortcuts)
        if gate_kind not in ("none", "srsf", "adadual"):
            raise ValueError(f"no compiled gate {gate_kind!r}")
        self.gate_kind = gate_kind
        self.gate_n = gate_n

    # ------------------------------------------------------------------ setup
    def attach(self, sim) -> None:
        from . import taskkernel as K

        self.K = K
        self.sim = sim
        self.runs: dict[int, Run] = {}  # job id → Run (Python-side fields; the kernel owns state)
        self.slot_of: dict[int, int] = {}
        self.job_of: list[JobState] = []
        cluster = sim.cluster
        runs = max(len(sim.jobs), 1)
        max_gpus = max([j.spec.num_gpus for j in sim.jobs] + [1])
        self._max_gpus = max_gpus
        self._server_runs = [0] * cluster.num_servers
        self.st = K.new_state(
            cluster.num_gpus,
            cluster.num_servers,
            runs,
            max_gpus,
            min(max_gpus, cluster.num_servers),
            4,
            4,
            self._per_byte_table(runs),
            self.shortcuts,
            {"none": K.GATE_NONE, "srsf": K.GATE_SRSF, "adadual": K.GATE_ADADUAL}[self.gate_kind],
            self.gate_n,
            self.model.a,
            self.model.adadual_threshold,
        )
        self._set_margin()
        self._svc_key = -1
        self._svc: dict[int, int] = {}
        self._calls = 0

    def _per_byte_table(self, runs: int) -> np.ndarray:
        """``model.per_byte(k)`` for every k an all-reduce can see (k ≤ runs); index 0 unused."""
        return np.array([0.0] + [self.model.per_byte(k) for k in range(1, runs + 2)])

    def _set_margin(self) -> None:
        st = self.st
        st.si[self.K.I_MARGIN] = st.gres.shape[0] + st.ri.shape[0] + 64

    # ------------------------------------------------------------------ kernel calls
    def _enter(self) -> None:
        si = self.st.si
        si[self.K.I_NOW] = _ns(self.sim.now)
        si[self.K.I_SEQ] = self.sim._seq
        self._calls += 1

    def _leave(self) -> None:
        self.sim._seq = int(self.st.si[self.K.I_SEQ])
        if self.st.si[self.K.I_RANGE]:  # ``fits`` rules this out; never silently differ
            raise RuntimeError(
                "the compiled task loop went past its exact time range; run again with "
                "--set compiled=false"
            )

    def _room(self, pushes: int) -> None:
        """Grow the event heap so that ``pushes`` more events fit after an instant's worth."""
        st = self.st
        need = int(st.si[self.K.I_HEAP]) + int(st.si[self.K.I_MARGIN]) + pushes + 1
        if need > st.heap.shape[0]:
            self.st = self.K.grown(st, heap_rows=max(2 * st.heap.shape[0], need))

    def _report_finished(self) -> None:
        st = self.st
        K = self.K
        n = int(st.si[K.I_NFIN])
        if not n:
            return
        slots = [int(x) for x in st.lists[K.Q_FIN, :n]]
        st.si[K.I_NFIN] = 0
        for slot in slots:
            job = self.job_of[slot]
            del self.runs[job.job_id]
            del self.slot_of[job.job_id]
            for s in job.servers:
                self._server_runs[s] -= 1
            job.service_left = 0.0
            self.sim.job_finished(job)

    # ------------------------------------------------------------------ engine interface
    def start(self, job: JobState, delay: float) -> None:
        K = self.K
        run = Run(job, self.model, self.ipt, self.sim.cluster.slowest_speed(job.gpus))
        job.service_left = run.svc * NS
        slot = len(self.job_of)
        st = self.st
        sizes: dict[str, int] = {}
        if slot >= st.ri.shape[0]:
            sizes["runs"] = 2 * st.ri.shape[0]
        per_gpu = max(len(self.sim.residents[g]) for g in job.gpus)
        if per_gpu > st.gres.shape[1]:
            sizes["per_gpu"] = 2 * per_gpu
        for s in job.servers:
            self._server_runs[s] += 1
        per_server = max(self._server_runs[s] for s in job.servers)
        if per_server > st.slist.shape[1]:
            sizes["per_server"] = 2 * per_server
        if len(job.gpus) > st.rw.shape[1] or len(job.servers) > st.rs.shape[1]:
            raise ValueError("a run has more GPUs than the jobs this executor was sized for")
        if sizes:
            st = self.st = K.grown(st, **sizes)
            if "runs" in sizes:
                self.st = st = st._replace(per_byte_k=self._per_byte_table(st.ri.shape[0]))
            self._set_margin()
        self._room(sum(len(self.sim.residents[g]) for g in job.gpus) + 1)
        st = self.st
        self.runs[run.jid] = run
        self.slot_of[run.jid] = slot
        self.job_of.append(job)
        unit = run.a + run.size * run.b  # Run.set_scale's comm_min per iteration
        ints = {
            "jid": run.jid,
            "G": run.G,
            "cross": int(run.cross),
            "nserv": len(run.servers),
            "ngpu": len(run.gpus),
            "tasks_left": run.tasks_left,
            "last_scale": run.last_scale,
            "ipt": run.ipt,
            "tf_full": run.tf_full,
            "tb_full": run.tb_full,
            "tf_last": run.tf_last,
            "tb_last": run.tb_last,
            "svc": run.svc,
            "pending": run.pending,
            "gang": -1,
            "csvc_full": run.comm_service(run.ipt),
            "csvc_last": run.comm_service(run.last_scale),
            "iters_left": job.iterations_left,
        }
        for name, value in ints.items():
            st.ri[slot, K.RUN_INT.index(name)] = value
        st.rf[slot, K.R_SIZE] = run.size
        st.rf[slot, K.R_COMM_MIN_FULL] = unit * run.ipt
        st.rf[slot, K.R_COMM_MIN_LAST] = unit * run.last_scale
        st.rw[slot, : len(run.gpus), K.W_GPU] = run.gpus
        st.rs[slot, : len(run.servers), K.P_SERVER] = run.servers
        K.set_scale(st, slot)
        self._enter()
        K.start(st, slot, float(delay))
        self._leave()

    def refresh(self, job: JobState) -> None:
        slot = self.slot_of.get(job.job_id)
        if slot is None:
            return
        if self._svc_key != self._calls:
            slots = np.fromiter(self.slot_of.values(), np.int64, len(self.slot_of))
            out = np.empty(len(slots), np.int64)
            self._enter()
            self.K.services(self.st, slots, out)
            self._svc = dict(zip(slots.tolist(), out.tolist(), strict=True))
            self._svc_key = self._calls
        job.service_left = self._svc[slot] * NS
        job.iterations_left = int(self.st.ri[slot, self.K.R_ITERS_LEFT])

    def settle(self) -> None:
        self._room(0)
        self._enter()
        self.K.settle(self.st)
        self._leave()

    def busy_gpu_seconds(self) -> float:
        return float(self.st.sf[self.K.F_BUSY])

    @property
    def comm_starts(self) -> int:  # type: ignore[override]
        return int(self.st.si[self.K.I_STARTS]) if hasattr(self, "st") else 0

    @comm_starts.setter
    def comm_starts(self, value: int) -> None:
        pass  # the kernel counts (TaskExecutor.attach sets 0)

    # ------------------------------------------------------------------ the engine's loop
    def own_events(self) -> int:
        """Events this executor has processed from its own heap."""
        return int(self.st.si[self.K.I_COUNT])

    def own_next(self) -> tuple[float, int] | None:
        """(time, sequence number) of this executor's earliest event, None if it has none."""
        st = self.st
        if not st.si[self.K.I_HEAP]:
            return None
        return int(st.heap[0, 0]) / 1e9, int(st.heap[0, 1])

    def own_run(self, before: float | None, one_instant: bool) -> float | None:
        """Run whole instants of own events before ``before`` (None: no engine event left).

        Returns the time of an instant left for the engine to finish (a job finished there, or
        ``one_instant``): its policy pass and ``settle`` are due. None: nothing is left before
        ``before``.
        """
        K = self.K
        py_t = _ns(before) if before is not None else np.iinfo(np.int64).max
        while True:
            self._room(0)
            self._enter()
            status = K.run(self.st, py_t, one_instant)
            self._leave()
            if status == K.S_GROW:
                self.st = K.grown(self.st, heap_rows=2 * self.st.heap.shape[0])
                continue
            if status in (K.S_FINISHED, K.S_INSTANT):
                self.sim.now = int(self.st.si[K.I_NOW]) / 1e9
                self._report_finished()
                return self.sim.now
            return None

    def own_events_at(self, time: float, seq_limit: int | None) -> None:
        """Process own events at ``time`` (the engine's current instant) that come before the
        engine's event numbered ``seq_limit``."""
        K = self.K
        self._enter()
        K.events_at(self.st, _ns(time), np.iinfo(np.int64).max if seq_limit is None else seq_limit)
        self._leave()
        self._report_finished()
