"""Placement rules of Yu et al.: FA-FFP (Alg. 2), LBSGF (Alg. 3) and the §7 baselines FF, LS,
RAND. Each returns, in preference order, the available GPUs whose U ≤ bound (see ``plan``)."""

from __future__ import annotations

import numpy as np

from ..core.job import JobSpec
from .plan import PlacementRule, Timeline, least_busy_first


def _eligible(tl: Timeline, bound: float) -> np.ndarray:
    return np.flatnonzero(tl.available() & (tl.U <= bound))


class FaFfp(PlacementRule):
    """Fragment-Aware First Fit Packing (Alg. 2): among available GPUs within θ_u (line 2), the
    top-G_j with least U (line 4), ties in cluster order — so idle GPUs of partly used servers
    come first and small jobs pack onto shared servers."""

    name = "fa-ffp"

    def candidates(self, spec: JobSpec, tl: Timeline, bound: float) -> np.ndarray:
        return least_busy_first(_eligible(tl, bound), tl.U)


class Lbsgf(PlacementRule):
    """Least Busy Server-GPU First (Alg. 3): servers by mean U (ΣU/O_s, line 2), the fewest
    least-busy servers with Σ O_s ≥ λ·G_j; their available GPUs within θ_u (lines 4–5), then
    the top-G_j with least U (line 8; ties keep the server order)."""

    name = "lbsgf"

    def __init__(self, lam: float = 1.0) -> None:
        if lam < 1:
            raise ValueError("λ must be ≥ 1")
        self.lam = lam
        self._cap: np.ndarray | None = None
        self._cap_of: object = None  # the cluster ``_cap`` was computed for

    def candidates(self, spec: JobSpec, tl: Timeline, bound: float) -> np.ndarray:
        cl = tl.cluster
        if self._cap is None or self._cap_of is not cl:
            self._cap = np.array([s.num_gpus for s in cl.servers], dtype=float)
            self._cap_of = cl
        load = np.bincount(tl.gpu_server, weights=tl.U, minlength=cl.num_servers) / self._cap
        order = np.argsort(load, kind="stable")
        need = self.lam * spec.num_gpus
        m = int(np.searchsorted(np.cumsum(self._cap[order]), need - 1e-9)) + 1
        chosen = order[: min(m, len(order))]
        ok = tl.available() & (tl.U <= bound)
        parts = [
            np.flatnonzero(ok[cl.gpus_of_server(s).start : cl.gpus_of_server(s).stop])
            + cl.server_first_gpu[s]
            for s in chosen
        ]
        ids = np.concatenate(parts) if parts else np.empty(0, dtype=int)
        return least_busy_first(ids, tl.U)


class FirstFitRule(PlacementRule):
    """FF baseline (§7): the first G_j available GPUs within θ_u, server by server."""

    name = "ff"

    def candidates(self, spec: JobSpec, tl: Timeline, bound: float) -> np.ndarray:
        return _eligible(tl, bound)


class ListSchedulingRule(PlacementRule):
    """LS baseline (§7): the top-G_j GPUs with least accumulated time, anywhere in the
    cluster (ties in cluster order)."""

    name = "ls"

    def candidates(self, spec: JobSpec, tl: Timeline, bound: float) -> np.ndarray:
        return least_busy_first(_eligible(tl, bound), tl.U)


class RandomRule(PlacementRule):
    """RAND baseline (§7): random available GPUs (seeded), used with θ_u = T."""

    name = "rand"

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def candidates(self, spec: JobSpec, tl: Timeline, bound: float) -> np.ndarray:
        ids = _eligible(tl, bound)
        return self.rng.permutation(ids)
