"""Pollux on a heterogeneous cluster it sees as one GPU type: Sia's baseline (Jayaram
Subramanya et al., SOSP '23), as the artifact's ``multi_simulator_unaware.py --policy=pollux
--interval=60 --policy_p_val=-1`` runs it.

References are to github.com/siasosp23/artifacts at commit ``aaf7a0de``, folder
``sia-simulator/``. What differs from :class:`~.pollux.Pollux` (everything else is Pollux's
round: its goodput model, fair-share speedups, restart factor, p = −1, and ddlsched's
deterministic allocation search in place of the artifact's unseeded NSGA-II):

1. **Virtual nodes** (cluster_unaware.py:41-51, 634-637): the cluster is seen as nodes of
   G = the fewest GPUs per node of any type; a node of k·G GPUs is k virtual nodes (GPUs
   ``[i·G, (i + 1)·G)`` of the node are its i-th). On ``sia-64``: 6 ``aws`` + 4 ``dgx-ext`` +
   6 ``rtx`` = 16 virtual nodes of 4 GPUs. The search's "node" is the virtual node.
2. **One model per job across types** (job.py:37-48, 388-412): the job's throughput model is
   fitted to every (nodes, replicas, micro-batch) it ran on whatever type, the first
   measurement of a key kept even if another type measured it; its speedups use the reference
   type's application (``aws``: batch range, initial batch; cluster_unaware.py:549-570,
   job.py:240-252). The engine runs the job at its actual type's own profile.
3. **Replica cap** (multi_simulator_unaware.py:36-41, cluster_unaware.py:549-570):
   min(2 × most replicas profiled, C, max_bsz ÷ min_local of the reference type), C = the
   fewest GPUs of any type counting at most ``SIA_MAX_PHYSICAL_NODES`` nodes (16 on sia-64).
4. **Mixed-type fix** (``fix_allocations_by_dropping``, cluster_unaware.py:448-496): a job the
   search spreads over several types keeps only the GPUs of the type holding most of them
   (a tie between the two most common: dgx-ext > azure > quad > rtx > aws); the others stay
   idle this round.
5. **Free moves** (cluster_unaware.py:182-209, job.py:524-552): a running job whose new GPUs
   are of the same type with the same GPUs per *real* node (the per-node tuple, in allocation
   order) moves there without a restart — no restart delay beyond what is left of its last,
   and it does not count for the restart factor. A restart counts at every start after the
   first, a resume after a suspension included (job.py:524-575), not when the job is stopped.
6. **The batch a job runs** (``Job.update_local_bsz`` with ``h_unaware``, job.py:317-386):
   the one model's best batch within the *real* type's application — its largest total
   batch, its local-batch range on the job's placement, its initial batch — not the
   reference type's range the speedups use.

The workload's ``num_replicas`` and ``batch_size`` are ignored (cluster_unaware.py:54-55).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..core.sia_clusters import SIA_MAX_PHYSICAL_NODES
from ..errors import InputError
from ..perf.goodput import JobGoodput, max_replicas
from ..perf.profiles import node_runs
from .pollux import Pollux
from .pollux_search import RoundProblem
from .sia import best_goodput

if TYPE_CHECKING:  # pragma: no cover
    from ..core.cluster import Cluster
    from ..core.protocols import ProfileRun
    from ..core.simulator import Simulator
    from ..core.state import JobState
    from ..perf.profiles import Application

#: Which type to keep on a tie (cluster_unaware.py:453-455): lower first
TIE_ORDER: dict[str, int] = {"dgx-ext": 0, "azure": 1, "quad": 2, "rtx": 3, "aws": 4}
#: The type whose application the merged model's speedups use (cluster_unaware.py:550)
REFERENCE_TYPE = "aws"


@dataclass(frozen=True)
class VirtualNodes:
    """The cluster as virtual nodes (cluster_unaware.py:41-51): GPU ids, GPU type and real
    server of each, in server order."""

    gpus: tuple[tuple[int, ...], ...]
    types: tuple[str, ...]
    servers: tuple[int, ...]


def virtual_nodes(cluster: Cluster) -> VirtualNodes:
    """Split every server into nodes of the fewest GPUs per server (its i-th: GPUs
    ``[i·G, (i + 1)·G)`` of the server); a server whose size G does not divide is an error."""
    size = min(srv.num_gpus for srv in cluster.servers)
    gpus: list[tuple[int, ...]] = []
    types: list[str] = []
    servers: list[int] = []
    for s, srv in enumerate(cluster.servers):
        ids = list(cluster.gpus_of_server(s))
        if len(ids) % size:
            raise InputError(
                f"server {s} has {len(ids)} GPUs, not a multiple of {size} (the fewest on a "
                f"server): pollux-unaware cannot split it into virtual nodes",
                source=cluster.name,
                field="cluster",
            )
        for k in range(0, len(ids), size):
            gpus.append(tuple(ids[k : k + size]))
            types.append(srv.gpu_type)
            servers.append(s)
    return VirtualNodes(tuple(gpus), tuple(types), tuple(servers))


def drop_minority_types(
    row: np.ndarray, types: tuple[str, ...], order: dict[str, int] | None = None
) -> np.ndarray:
    """One job's GPUs per virtual node after ``fix_allocations_by_dropping``
    (cluster_unaware.py:448-496): count GPUs per type, most first (equal counts in order of
    the type's first virtual node, ``Counter.most_common``); keep the first type, or the
    second if it has as many GPUs and comes earlier in ``order`` (only the two most common
    are compared); zero the other types' virtual nodes."""
    order = TIE_ORDER if order is None else order
    counts: Counter[str] = Counter()
    for v in np.flatnonzero(row):
        counts[types[v]] += int(row[v])
    ranked = counts.most_common()
    if len(ranked) <= 1:
        return row
    keep = ranked[0][0]
    if ranked[1][1] == ranked[0][1] and order[ranked[1][0]] < order[keep]:
        keep = ranked[1][0]
    out = row.copy()
    for v in np.flatnonzero(row):
        if types[v] != keep:
            out[v] = 0
    return out


def replica_cap(cluster: Cluster) -> int:
    """The artifact's ``max_num_replicas`` (multi_simulator_unaware.py:36-41): the fewest over
    types of min(GPUs of the type, GPUs per node × ``SIA_MAX_PHYSICAL_NODES``)."""
    per: dict[str, int] = {}
    nodes: dict[str, int] = {}
    for srv in cluster.servers:
        per[srv.gpu_type] = max(per.get(srv.gpu_type, 0), srv.num_gpus)
        nodes[srv.gpu_type] = nodes.get(srv.gpu_type, 0) + 1
    return min(per[t] * min(nodes[t], SIA_MAX_PHYSICAL_NODES.get(t, nodes[t])) for t in per)


@dataclass
class PolluxUnaware(Pollux):
    """Pollux seeing one GPU type (module doc)."""

    name: str = "pollux-unaware"
    reference_type: str = REFERENCE_TYPE
    restarts_at_start = True  # module doc, 5
    #: GPUs the mixed-type fix left idle, summed over rounds
    dropped_gpus: int = field(default=0, init=False)
    #: application → restart delay (s) the engine charges (``calibration``'s), else
    #: ``default_delay``: what is left of it carries over a free move
    restart_delays: dict[str, float] = field(default_factory=dict)
    default_delay: float = 30.0
    #: False: every change of a job's GPUs restarts it, as in ``pollux`` (module doc, 5)
    free_moves_on: bool = True
    #: running jobs moved to GPUs of the same type and per-node tuple without a restart
    free_moves: int = field(default=0, init=False)
    _restore_until: dict[int, float] = field(default_factory=dict, init=False, repr=False)

    def attach(self, sim: Simulator) -> None:
        super().attach(sim)
        self.vnodes = virtual_nodes(sim.cluster)
        self.cap = replica_cap(sim.cluster)
        self._cluster = sim.cluster
        self._view = [list(g) for g in self.vnodes.gpus]
        types = list(dict.fromkeys(self.vnodes.types))
        #: the type whose application the model uses: ``reference_type``, else the first type
        self.model_type = self.reference_type if self.reference_type in types else types[0]

    def nodes(self, sim: Simulator) -> list[list[int]]:
        return self._view

    def _model(self, job: JobState) -> JobGoodput:
        """The job's one model across types, on the reference type's application (the
        cluster's first type where it has no ``reference_type``)."""
        m = self._models.get(job.job_id)
        if m is None:
            m = self._models[job.job_id] = JobGoodput(self._reference_app(job), fit=self.fit)
        return m

    def _reference_app(self, job: JobState) -> Application:
        return self.ex.application_on(job, self.model_type)[0]

    def _limit(self, job: JobState, total: int) -> int:
        if self._pinned(job):
            return 1
        app = self._reference_app(job)
        return min(max_replicas(app, self._model(job).max_profiled_replicas), self.cap, total)

    def _run_batch(self, job: JobState, gpus: tuple[int, ...] | list[int]) -> int:
        """The batch ``job`` runs on ``gpus`` (module doc, 6; ``update_local_bsz``,
        job.py:317-386): the merged model's best of the real type's candidate batches up to
        its max_bsz, micro-batches within its local range on this placement; before the model
        has parameters and gradient statistics, max(init_bsz, min_local·R) of that type."""
        cl = self._cluster
        app = self.ex.application_on(job, cl.gpu_type(gpus[0]))[0]
        placement = node_runs(cl.gpu_server[g] for g in gpus)
        r = len(gpus)
        m = self._model(job)
        if m.params is None or m.grad is None:
            return max(app.init_bsz, app.min_local * r)
        hi = app.max_local_at(placement) if app.max_nodes is not None else app.max_local
        rng = (app.min_local, hi)
        return best_goodput(m.params, m.grad, app.init_bsz, len(placement), r, app.max_bsz, rng)[1]

    def rebatch(self, run: ProfileRun) -> int:
        """The batch the job re-tunes to on its current GPUs (module doc, 6)."""
        if self._pinned(run.job):
            return self.ncf_batch
        return self._run_batch(run.job, run.job.gpus)

    def _start_batch(self, sim: Simulator, job: JobState, gpus: list[int]) -> int:
        return self._run_batch(job, gpus)

    def _moves_free(
        self, sim: Simulator, job: JobState, old: tuple[int, ...], new: list[int]
    ) -> bool:
        """Module doc, 5: same GPU type, same GPUs per real node (allocation order)."""
        if not self.free_moves_on:
            return False
        cl = sim.cluster
        if cl.gpu_type(old[0]) != cl.gpu_type(new[0]):
            return False
        if node_runs(cl.gpu_server[g] for g in old) != node_runs(cl.gpu_server[g] for g in new):
            return False
        self.free_moves += 1
        return True

    def _left(self, sim: Simulator, job: JobState) -> float:
        return max(self._restore_until.get(job.job_id, sim.now) - sim.now, 0.0)

    def _started(self, sim: Simulator, job: JobState) -> None:
        delay = self.restart_delays.get(job.spec.application, self.default_delay)
        self._restore_until[job.job_id] = sim.now + delay

    def repair(self, prob: RoundProblem, alloc: np.ndarray) -> np.ndarray:
        """The mixed-type fix on every job's row (``drop_minority_types``)."""
        out = np.array(alloc, copy=True)
        for i in range(out.shape[0]):
            fixed = drop_minority_types(out[i], self.vnodes.types)
            self.dropped_gpus += int(out[i].sum() - fixed.sum())
            out[i] = fixed
        return out

    def summary_extras(self, sim: Simulator) -> dict[str, object]:
        """GPU-rounds the mixed-type fix left idle (summed over rounds) and free moves."""
        return {
            "pollux_unaware_dropped_gpu_rounds": self.dropped_gpus,
            "pollux_unaware_free_moves": self.free_moves,
        }
