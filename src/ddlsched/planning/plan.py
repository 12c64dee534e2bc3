"""Offline plans and the estimated timeline planners build them on (Yu et al. §5).

A planner sees every job at time 0 and emits a ``Plan``: per job its GPU set and its planned
(estimated) start and end, in start order. Planners place jobs one at a time on a ``Timeline``
that keeps, per GPU, the accumulated estimated execution time U (Alg. 1–3's U_s^g) and which
GPUs are busy at the planning clock ``now``; "wait for some job to exit" (Alg. 2 line 10,
Alg. 3 line 14) advances ``now`` to the next planned completion.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.cluster import Cluster
from ..core.job import JobSpec
from ..perf.rar import RarModel, gbps_to_bytes

#: slack for float comparisons of accumulated times against θ
EPS = 1e-9


@dataclass(frozen=True)
class PlannedJob:
    """One job of a plan: its GPUs and its estimated start and end (seconds)."""

    job_id: int
    gpus: tuple[int, ...]
    start: float
    end: float


@dataclass(frozen=True)
class Plan:
    """A planner's output: entries in planned start order, plus what the planner chose."""

    entries: tuple[PlannedJob, ...]
    planner: str
    params: Mapping[str, float] = field(default_factory=dict)

    @property
    def makespan(self) -> float:
        return max((e.end for e in self.entries), default=0.0)

    @property
    def avg_jct(self) -> float:
        return float(np.mean([e.end for e in self.entries])) if self.entries else 0.0


class PlanningError(Exception):
    """No feasible plan within the horizon T."""


class Estimator:
    """ρ̂_j(y): the estimated execution time of job j on GPU set y, F_j · τ_j (Eq. 8).

    ``mode`` = ``start``: p_j counts the cross-server jobs the timeline has running on y's
    servers at the planned start (j included); ``isolated``: p_j = 1 (no contention), so ρ̂
    depends on the placement only (the model of the exact solver, ``yu22-optgap``).
    """

    def __init__(self, cluster: Cluster, model: RarModel, mode: str = "start") -> None:
        if mode not in ("start", "isolated"):
            raise ValueError(f"unknown estimate mode {mode!r}")
        self.cluster = cluster
        self.model = model
        self.mode = mode
        self.gpu_server = np.asarray(cluster.gpu_server)
        self.b_e = np.array([gbps_to_bytes(s.network_bandwidth_gbps) for s in cluster.servers])
        self.b_i = np.array([gbps_to_bytes(s.intra_bandwidth_gbps) for s in cluster.servers])

    def rho(self, spec: JobSpec, gpus: np.ndarray, cross: np.ndarray | None = None) -> float:
        servers = np.unique(self.gpu_server[gpus])
        n = len(servers)
        p = 1
        if n > 1 and self.mode == "start" and cross is not None:
            p = int(cross[servers].max()) + 1
        tau = self.model.iteration_time(
            spec, n, p, float(self.b_e[servers].min()), float(self.b_i[servers].min())
        )
        return spec.iterations * tau

    def rho_lower(self, spec: JobSpec) -> float:
        """ρ̂ on one server without contention: no placement does better (b_e ≤ b_i)."""
        return self.rho_by_servers(spec, 1)

    def rho_by_servers(self, spec: JobSpec, num_servers: int) -> float:
        """Isolated ρ̂ on ``num_servers`` servers of the fastest kind (for bounds and solvers)."""
        tau = self.model.iteration_time(
            spec, num_servers, 1, float(self.b_e.max()), float(self.b_i.max())
        )
        return spec.iterations * tau


def makespan_lower_bound(cluster: Cluster, jobs: Sequence[JobSpec], model: RarModel) -> float:
    """No schedule finishes before max(total GPU-time ÷ GPUs, longest job), each job taken on
    one server without contention (``Estimator.rho_lower``)."""
    est = Estimator(cluster, model, "isolated")
    rho = [est.rho_lower(s) for s in jobs]
    work = sum(s.num_gpus * r for s, r in zip(jobs, rho, strict=True))
    return max(work / cluster.num_gpus, max(rho, default=0.0))


class Timeline:
    """The planning clock, per-GPU accumulated time U and the planned jobs running at ``now``."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.U = np.zeros(cluster.num_gpus)
        self.free = np.ones(cluster.num_gpus, dtype=bool)
        self.cross = np.zeros(cluster.num_servers, dtype=int)
        self.gpu_server = np.asarray(cluster.gpu_server)
        self.now = 0.0
        self._running: list[tuple[float, int, np.ndarray, np.ndarray]] = []
        self.entries: list[PlannedJob] = []

    def available(self) -> np.ndarray:
        """Boolean mask of the GPUs not held by a planned job at ``now``."""
        return self.free

    def advance(self) -> bool:
        """Wait for the next planned job(s) to exit; False when none is running."""
        if not self._running:
            return False
        end = self._running[0][0]
        while self._running and self._running[0][0] <= end + EPS:
            _, _, gpus, servers = heapq.heappop(self._running)
            self.free[gpus] = True
            if len(servers) > 1:
                self.cross[servers] -= 1
        self.now = max(self.now, end)
        return True

    def commit(self, spec: JobSpec, gpus: np.ndarray, duration: float) -> PlannedJob:
        """Start ``spec`` on ``gpus`` at ``now`` for ``duration``; U += duration (Alg. 2 l. 6)."""
        gpus = np.asarray(gpus)
        self.U[gpus] += duration
        self.free[gpus] = False
        servers = np.unique(self.gpu_server[gpus])
        if len(servers) > 1:
            self.cross[servers] += 1
        end = self.now + duration
        heapq.heappush(self._running, (end, spec.job_id, gpus, servers))
        e = PlannedJob(spec.job_id, tuple(int(g) for g in gpus), self.now, end)
        self.entries.append(e)
        return e


class PlacementRule:
    """Which GPUs a job gets at the planning clock: ``candidates`` returns, in preference
    order, the available GPUs with U ≤ ``bound`` (= θ_u − ρ̂/u); the first G_j are taken."""

    name = "rule"

    def candidates(self, spec: JobSpec, tl: Timeline, bound: float) -> np.ndarray:
        raise NotImplementedError


def least_busy_first(ids: np.ndarray, U: np.ndarray) -> np.ndarray:
    """``ids`` sorted by U, ties in the given order (stable): "top-G with least U"."""
    return ids[np.argsort(U[ids], kind="stable")]


def place_job(
    spec: JobSpec,
    rule: PlacementRule,
    tl: Timeline,
    est: Estimator,
    theta: float,
    u: float,
) -> PlannedJob | None:
    """Place one job at the earliest planning instant where ``rule`` finds G_j GPUs that keep
    every chosen GPU's U + ρ̂/u ≤ θ_u; wait for planned exits otherwise; None if infeasible.

    ρ̂ depends on the GPUs chosen, which depend on ρ̂ (through the θ filter): start from the
    one-server lower bound, choose, re-estimate, and accept only a choice whose own ρ̂ passes
    the filter (at most three rounds, then wait) — so constraint (16) holds for every GPU.
    """
    g = spec.num_gpus
    while True:
        rho = est.rho_lower(spec)
        for _ in range(3):
            cand = rule.candidates(spec, tl, theta - rho / u + EPS)
            if len(cand) < g:
                break
            y = cand[:g]
            rho_y = est.rho(spec, y, tl.cross)
            if tl.U[y].max() + rho_y / u <= theta + EPS:
                return tl.commit(spec, y, rho_y / u)
            rho = rho_y
        if not tl.advance():
            return None


def list_schedule(
    order: Sequence[JobSpec],
    rule_of: Mapping[int, PlacementRule] | PlacementRule,
    cluster: Cluster,
    est: Estimator,
    theta: float,
    u: float,
) -> list[PlannedJob] | None:
    """Place ``order`` one by one (Alg. 1 lines 10–20); None as soon as one job cannot be."""
    tl = Timeline(cluster)
    for spec in order:
        rule = rule_of if isinstance(rule_of, PlacementRule) else rule_of[spec.job_id]
        if place_job(spec, rule, tl, est, theta, u) is None:
            return None
    return tl.entries
