"""One scheduling cycle's view of the cluster: the quota tree with the usage of every
admitted workload (Kueue's ``pkg/cache/scheduler/snapshot.go``: ``Snapshot``,
``RemoveWorkload``, ``AddWorkload``, ``SimulateWorkloadUsageRemoval``) at kubernetes-sigs/kueue
ff69552e79ad21652c36caa97038382e55625cf7."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .model import ClusterQueue, QueuesConfig, Workload
from .quota import FR, Node, build_tree


@dataclass
class Info:
    """A workload as the cycle sees it: its ClusterQueue, priority, times, quota usage per
    (flavor, resource), and the flavors of its podsets (admitted ones)."""

    wl: Workload
    usage: dict[FR, int] = field(default_factory=dict)
    flavors: set[FR] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.wl.name

    @property
    def cq(self) -> str:
        return self.wl.queue

    @property
    def priority(self) -> int:
        return self.wl.priority

    def uses(self, frs: set[FR] | frozenset[FR]) -> bool:
        """``WorkloadUsesResources``: does it hold any of ``frs``?"""
        return any(fr in frs for fr in self.flavors)


def podset_requests(wl: Workload, cq: ClusterQueue) -> list[dict[str, int]]:
    """Total requests of each podset (per-pod requests × count), plus ``pods`` = count when the
    ClusterQueue covers the ``pods`` resource (flavorassigner.go, ``assignFlavors``)."""
    out = []
    covers_pods = cq.group_of("pods") is not None
    for ps in wl.podsets:
        req = {r: v * ps.count for r, v in ps.requests.items()}
        if covers_pods:
            req["pods"] = ps.count * 1000
        out.append(req)
    return out


def admitted_info(wl: Workload, cq: ClusterQueue) -> Info:
    """The usage of an admitted workload from its podsets' flavors."""
    info = Info(wl)
    for ps, req in zip(wl.podsets, podset_requests(wl, cq), strict=True):
        for res, v in req.items():
            flavor = ps.flavors.get(res)
            if flavor is None:
                continue  # ``pods`` of a queue that covers it, no flavor given: not counted
            fr = (flavor, res)
            info.usage[fr] = info.usage.get(fr, 0) + v
            info.flavors.add(fr)
    return info


class Snap:
    """The tree plus the admitted workloads of each ClusterQueue."""

    def __init__(self, config: QueuesConfig, admitted: Iterable[Info]) -> None:
        self.config = config
        self.nodes: dict[str, Node] = build_tree(config)
        self.workloads: dict[str, dict[str, Info]] = {cq: {} for cq in config.cluster_queues}
        for info in admitted:
            self.add_workload(info)

    def cq(self, name: str) -> Node:
        return self.nodes[name]

    def spec(self, name: str) -> ClusterQueue:
        return self.config.cluster_queues[name]

    def add_usage(self, cq: str, usage: dict[FR, int]) -> None:
        node = self.nodes[cq]
        for fr, v in usage.items():
            node.add_usage(fr, v)

    def remove_usage(self, cq: str, usage: dict[FR, int]) -> None:
        node = self.nodes[cq]
        for fr, v in usage.items():
            node.remove_usage(fr, v)

    def add_workload(self, info: Info) -> None:
        self.workloads[info.cq][info.name] = info
        self.add_usage(info.cq, info.usage)

    def remove_workload(self, info: Info) -> None:
        del self.workloads[info.cq][info.name]
        self.remove_usage(info.cq, info.usage)

    def fits(self, cq: str, usage: dict[FR, int], removed: Iterable[Info]) -> bool:
        """``fits`` (scheduler.go): with ``removed`` gone (each once: ``MergeWithTargets``),
        does ``usage`` fit (``Fits``)?"""
        removed = list({info.name: info for info in removed}.values())
        for info in removed:
            self.remove_usage(info.cq, info.usage)
        node = self.nodes[cq]
        ok = all(max(0, node.available(fr)) >= v for fr, v in usage.items())
        for info in removed:
            self.add_usage(info.cq, info.usage)
        return ok
