"""Yu et al.'s ring-all-reduce model with contention and overhead (Eq. 6–8).

Per-iteration time of job j with w = G_j workers and gradient m bytes (Eq. 8)::

    τ_j = 2(w−1)·m/w / B_j  +  (w−1)·m/w / C  +  γ_j  +  Δf·M + Δb

- B_j = b_i (intra-server bandwidth) if j sits on one server, else b_e / f(α, k_j) with
  k_j = ξ1·p_j (Eq. 7) and p_j the most cross-server jobs on any server j uses (Eq. 6, j counted);
- γ_j = ξ2 · (servers j uses) is the connection overhead;
- C is the GPU's reduction speed (bytes per second); Δf·M + Δb is the job's compute time
  (``ModelProfile.t_forward + t_backward``).

See docs/models.md for the defaults and how they were derived.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .contention import MB

if TYPE_CHECKING:  # pragma: no cover
    from ..core.cluster import Cluster
    from ..core.job import JobSpec
    from ..core.jobexec import JobExecutor
    from ..core.state import JobState


def linear_degradation(alpha: float, k: float) -> float:
    """Yu's example f(α, k) = k + α(k−1): f(α, 1) = 1, increasing in k."""
    return k + alpha * (k - 1.0)


def fair_share(alpha: float, k: float) -> float:
    """f(α, k) = k: an ideal fair share of the link, no degradation."""
    return k


#: ``--set rar_f=NAME``: bandwidth-sharing degradation functions f(α, k)
DEGRADATIONS: dict[str, Callable[[float, float], float]] = {
    "linear": linear_degradation,
    "fair": fair_share,
}


def gbps_to_bytes(gbps: float) -> float:
    return gbps * 1e9 / 8.0


@dataclass(frozen=True)
class RarModel:
    """Parameters of Eq. 6–8 (defaults derived in docs/models.md)."""

    xi1: float = 1.0  # k = ξ1·p (Eq. 7)
    xi2: float = 1e-3  # s of overhead per server per iteration (γ_j)
    alpha: float = 0.2755  # degradation; Wang's η/b = 2.35e-10 / 8.53e-10
    reduction_speed: float = 1e11  # C, bytes/s
    f: Callable[[float, float], float] = field(default=linear_degradation)

    def contenders(self, p: int) -> float:
        """k_j = ξ1·p_j (Eq. 7), never below one job: a job alone gets the whole link."""
        return max(1.0, self.xi1 * p)

    def iteration_time(
        self, spec: JobSpec, num_servers: int, p: int, b_e: float, b_i: float
    ) -> float:
        """Eq. 8: seconds per iteration of ``spec`` on ``num_servers`` servers with ``p``
        cross-server jobs on its busiest server (``b_e``/``b_i`` in bytes/s)."""
        w = spec.num_gpus
        t = self.xi2 * num_servers + spec.model.t_compute
        if w > 1:
            chunk = spec.model.size_mb * MB / w * (w - 1)
            bw = b_i if num_servers <= 1 else b_e / self.f(self.alpha, self.contenders(p))
            # extreme settings can underflow the bandwidth to 0: an endless iteration, which
            # the run-end check (core/timing.py) reports instead of a ZeroDivisionError
            t += (2.0 * chunk / bw if bw > 0 else math.inf) + chunk / self.reduction_speed
        return t

    def bandwidths(self, cluster: Cluster, servers: tuple[int, ...]) -> tuple[float, float]:
        """(b_e, b_i) of a placement: its slowest network link and slowest intra-server bus."""
        srv = [cluster.servers[s] for s in servers]
        return (
            gbps_to_bytes(min(s.network_bandwidth_gbps for s in srv)),
            gbps_to_bytes(min(s.intra_bandwidth_gbps for s in srv)),
        )

    def time_for(self, cluster: Cluster, spec: JobSpec, servers: tuple[int, ...], p: int) -> float:
        """Eq. 8 for a placement given by its distinct ``servers``."""
        b_e, b_i = self.bandwidths(cluster, servers)
        return self.iteration_time(spec, len(servers), p, b_e, b_i)

    def ideal_time(self, cluster: Cluster, spec: JobSpec, servers: tuple[int, ...]) -> float:
        """τ without contention (k = 1) and without overhead (γ = 0): the base that the
        paper's "extra time of contention and overhead" is measured against."""
        return self.time_for(cluster, spec, servers, 1) - self.xi2 * len(servers)


def slotted(t_iter: float) -> float:
    """The paper's per-slot accounting: φ = ⌊1/τ⌋ iterations per 1 s slot (Eq. 9), as a time
    per iteration; an iteration longer than a slot keeps its fluid rate."""
    per_slot = math.floor(1.0 / t_iter + 1e-9) if t_iter > 0 else 0
    return 1.0 / per_slot if per_slot >= 1 else t_iter


class RarRate:
    """The engine's ``RateModel`` for Eq. 6–8 (job level): p_j from the executor's per-server
    count of running cross-server jobs (compute is processor-shared on a shared GPU).
    ``slot`` = 1.0 selects the paper's time-slot mode
    (⌊1/τ⌋ iterations per slot, completions at slot ends)."""

    def __init__(self, model: RarModel | None = None, time_slots: bool = False) -> None:
        self.model = model or RarModel()
        self.slot: float | None = 1.0 if time_slots else None

    def alone_iteration(self, cluster: Cluster, spec: JobSpec, servers: tuple[int, ...]) -> float:
        """Eq. 8 with no other cross-server job (p = 0: the whole link), its overhead
        included; slotted in time-slot mode."""
        t = self.model.time_for(cluster, spec, servers, 0)
        t += cluster.mean_speed_time(spec.model.t_compute) - spec.model.t_compute
        return slotted(t) if self.slot else t

    def iteration_time(self, job: JobState, ex: JobExecutor) -> float:
        p = max(len(ex.cross_on[s]) for s in job.servers) if job.cross_server else 0
        t = self.model.time_for(ex.sim.cluster, job.spec, job.servers, p)
        # Yu's model has one worker per GPU; where a policy lets jobs share a GPU (model=rar
        # with max_jobs_per_gpu ≠ 1) the compute is processor-shared, as in ``WangJobLevel``
        share = max(len(ex.sim.residents[g]) for g in job.gpus)
        if share > 1:
            t += (share - 1) * job.spec.model.t_compute
        speed = ex.sim.cluster.slowest_speed(job.gpus)
        if speed != 1.0:  # the compute part at the slowest worker's pace
            t += share * job.spec.model.t_compute * (1.0 / speed - 1.0)
        return slotted(t) if self.slot else t
