"""GPU placement rules (SPEC §5 "Placement"). Each returns the chosen GPU ids or None.

A GPU is *available* for a job when one more worker fits (memory, sharing degree); every rule
picks distinct GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState


class Placement(Protocol):
    name: str

    def select(self, job: JobState, sim: Simulator) -> tuple[int, ...] | None: ...


def _available(job: JobState, sim: Simulator) -> list[int]:
    fits = sim.fits
    return [g for g in range(sim.cluster.num_gpus) if fits(job, g)]


def cannot_run_on(sim: Simulator, job: JobState) -> frozenset[int]:
    """Servers whose GPU type ``job`` cannot run on (its per-type table says ``inf``, e.g. a
    Gavel configuration measured at 0 steps/s) or may not (the servers of other types than the
    one its Kueue flavor holds it to, ``JobState.flavor_type``), on a cluster of declared
    types; else none."""
    cl = sim.cluster
    if not cl.typed:
        return frozenset()
    held = job.flavor_type
    bad = {t.casefold() for t, d in job.spec.type_durations or () if not d < float("inf")}
    if not bad and held is None:
        return frozenset()
    return frozenset(
        s
        for s, srv in enumerate(cl.servers)
        if srv.gpu_type.casefold() in bad or (held is not None and srv.gpu_type != held)
    )


def fastest_types(sim: Simulator, job: JobState) -> list[frozenset[int]]:
    """For each GPU type of the cluster, fastest for ``job`` first (its table, else the
    type's speed; ties in cluster order): the servers of *all other* types, i.e. what a
    placement on that type alone must avoid. Empty on a cluster of undeclared or one type."""
    cl = sim.cluster
    types = cl.gpu_types
    if not cl.typed or len(types) < 2:
        return []
    speed = {srv.gpu_type: srv.speed for srv in cl.servers}
    spec = job.spec
    order = []
    for k, t in enumerate(types):
        d = spec.duration_on(t, speed[t]) if spec.duration > 0 else None
        if d is None:  # no table entry, or not a duration job: the speed factor
            d = 1.0 / speed[t]
        order.append((d, k, t))
    order.sort()
    return [
        frozenset(s for s, srv in enumerate(cl.servers) if srv.gpu_type != t)
        for d, _k, t in order
        if d < float("inf")
    ]


def consolidated(sim: Simulator, free: set[int], need: int) -> list[int] | None:
    """``need`` GPUs from ``free``, server with the most free GPUs first (lowest index on ties)."""
    if len(free) < need:
        return None
    cl = sim.cluster
    per: list[list[int]] = [[] for _ in range(cl.num_servers)]
    server = cl.gpu_server
    for g in sorted(free):
        per[server[g]].append(g)
    out: list[int] = []
    while need > 0:
        s = max(range(cl.num_servers), key=lambda k: (len(per[k]), -k))
        take = min(len(per[s]), need)
        out += per[s][:take]
        per[s] = per[s][take:]
        need -= take
    return out


@dataclass(frozen=True)
class FirstFit:
    """FF: the first n available GPUs in cluster order."""

    name: str = "ff"

    def select(self, job: JobState, sim: Simulator) -> tuple[int, ...] | None:
        n = job.num_gpus
        chosen: list[int] = []
        fits = sim.fits
        for g in range(sim.cluster.num_gpus):
            if fits(job, g):
                chosen.append(g)
                if len(chosen) == n:
                    return tuple(chosen)
        return None


@dataclass(frozen=True)
class ListScheduling:
    """LS: the n available GPUs with the least remaining workload, anywhere (ties: GPU order)."""

    name: str = "ls"

    def select(self, job: JobState, sim: Simulator) -> tuple[int, ...] | None:
        avail = _available(job, sim)
        if len(avail) < job.num_gpus:
            return None
        load = sim.gpu_loads()
        avail.sort(key=lambda g: (load[g], g))
        return tuple(sorted(avail[: job.num_gpus]))


@dataclass(frozen=True)
class RandomPlacement:
    """RAND: n available GPUs drawn uniformly at random (from the simulation's seeded RNG)."""

    name: str = "rand"

    def select(self, job: JobState, sim: Simulator) -> tuple[int, ...] | None:
        avail = _available(job, sim)
        if len(avail) < job.num_gpus:
            return None
        idx = sim.rng.choice(len(avail), size=job.num_gpus, replace=False)
        return tuple(sorted(avail[i] for i in idx))


@dataclass(frozen=True)
class LeastWorkloadFirst:
    """LWF-κ (Wang Alg. 1).

    n ≤ κ: as LS, the top-n available GPUs with least workload (lines 2–9). n > κ: servers sorted
    by total remaining workload L_S; walk them in that order appending each server's available
    GPUs sorted by L_g, and take the first n (lines 10–21). Ties: lower index first.
    """

    kappa: int = 1

    @property
    def name(self) -> str:
        return f"lwf-{self.kappa}"

    def select(self, job: JobState, sim: Simulator) -> tuple[int, ...] | None:
        n = job.num_gpus
        if n <= self.kappa:
            return ListScheduling().select(job, sim)
        cluster = sim.cluster
        if len(_available(job, sim)) < n:
            return None
        load = sim.gpu_loads()
        server_load = [
            (sum(load[g] for g in cluster.gpus_of_server(s)), s) for s in range(cluster.num_servers)
        ]
        server_load.sort()
        chosen: list[int] = []
        for _, s in server_load:
            gpus = [g for g in cluster.gpus_of_server(s) if sim.fits(job, g)]
            gpus.sort(key=lambda g: (load[g], g))
            chosen.extend(gpus[: n - len(chosen)])
            if len(chosen) == n:
                return tuple(sorted(chosen))
        return None


@dataclass(frozen=True)
class _Registered:
    factory: Callable[..., Placement]
    takes_kappa: bool


#: placements by name (``register_placement`` adds to it); ``lwf-K`` is LWF with κ = K
PLACEMENTS: dict[str, _Registered] = {}
#: the names ``ddlsched list`` and messages show: every registered placement, then ``lwf-K``
PLACEMENT_NAMES: list[str] = []
_BUILTIN: frozenset[str] = frozenset()


def register_placement(
    name: str,
    factory: Callable[..., Placement],
    *,
    takes_kappa: bool = False,
    replace: bool = False,
) -> Callable[..., Placement]:
    """Make ``name`` a placement for ``--placement``, ``compose(placement=name)`` and
    ``ddlsched list``: ``factory()`` (``factory(kappa)`` with ``takes_kappa``; κ is None unless
    the run sets it) builds one. Returns ``factory`` (decorator use)."""
    from .naming import new_part_name

    if not callable(factory):
        raise TypeError(f"factory must be callable, got {factory!r}")
    key = new_part_name("placement", name, PLACEMENTS, _BUILTIN, replace)
    if _is_lwf_k(key):
        raise ValueError(f"placement name {name!r} is taken by lwf-K")
    PLACEMENTS[key] = _Registered(factory, takes_kappa)
    PLACEMENT_NAMES[:] = [*PLACEMENTS, "lwf-K"]
    return factory


def _is_lwf_k(key: str) -> bool:
    return key.startswith("lwf-") and key[4:].isascii() and key[4:].isdigit() and int(key[4:]) >= 1


register_placement("ff", FirstFit)
register_placement("ls", ListScheduling)
register_placement("rand", RandomPlacement)
register_placement(
    "lwf", lambda kappa: LeastWorkloadFirst(kappa if kappa is not None else 1), takes_kappa=True
)
_BUILTIN = frozenset(PLACEMENTS)


def make_placement(name: str, kappa: int | None = None) -> Placement:
    """Placement by name: ``ff``, ``ls``, ``rand``, ``lwf`` (κ from ``kappa``, default 1),
    ``lwf-K``, or a registered one. Raises KeyError for unknown names."""
    key = name.lower()
    entry = PLACEMENTS.get(key)
    if entry is not None:
        return entry.factory(kappa) if entry.takes_kappa else entry.factory()
    if _is_lwf_k(key):
        return LeastWorkloadFirst(int(key[4:]))
    raise KeyError(name)
