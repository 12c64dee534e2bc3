"""The clusters of Sia's simulator (Jayaram Subramanya et al., SOSP '23; its artifact
github.com/siasosp23/artifacts, ``sia-simulator/simulator_config.py`` at commit
``aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70``), as cluster presets.

Sia's simulator describes a cluster as nodes per GPU type (``cluster_nnodes``,
simulator_config.py:11-13) and GPUs per node of each type (``cluster_ngpus_per_node``,
simulator_config.py:9). The GPU type names are its profile file suffixes
(``traces/<app>/placements-<type>.csv``), so a preset's types find their profiles in a Sia
profiles directory (``--set profiles=DIR``; ``perf/typed_profiles.py``). Each type's nodes are
contiguous, types in the order the artifact's dict lists them (simulator_config.py:11, 13).

- ``sia-64`` — the default, the paper's *Heterogeneous* setting (§4): 6 ``aws`` nodes × 4,
  2 ``dgx-ext`` × 8, 3 ``rtx`` × 8 = 64 GPUs (simulator_config.py:11).
- ``sia-homo-64`` — the *Homogeneous* setting (Table 4): 16 ``aws`` nodes × 4 = 64 GPUs
  (simulator_config.py:12, commented out there).
- ``sia-physical-44`` — the 44-GPU physical testbed ("phoebe config"): 3 ``rtx`` × 8,
  2 ``dgx-ext`` × 8, 1 ``quad`` × 4 (simulator_config.py:13; paper §5.1).
- ``sia-64xN`` — ``sia-64`` with N times as many nodes of every type (``--cluster_scale N``,
  multi_simulator.py:20-22; the ``workloads/scale/scale_Nx`` traces, N = 2 … 32, paper Fig. 9).

GPU memory and network links follow the paper's hardware list (§4): ``aws`` g4dn.12xlarge,
4 × T4 16 GB, 50 Gb/s; ``rtx`` 8 × RTX 2080 Ti 11 GB, 50 Gb/s Ethernet; ``dgx-ext`` DGX-A100,
8 × A100 40 GB, 1.6 Tb/s InfiniBand; ``quad`` 4 × Quadro RTX 6000 24 GB, 200 Gb/s InfiniBand.
Application-profile jobs take their speed on each type from that type's own profiles, not from a
speed factor: every type is declared with speed 1 (trace jobs run at their duration on each).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .cluster import Cluster, Server


@dataclass(frozen=True)
class SiaGpuType:
    """One GPU type of Sia's simulator: GPUs per node (simulator_config.py:9), and the GPU
    memory and network link of the paper's hardware (§4)."""

    name: str
    gpus_per_node: int
    gpu_memory_mb: float
    network_bandwidth_gbps: float


#: The types the presets use, by their profile suffix (simulator_config.py:1-9)
SIA_GPU_TYPES: dict[str, SiaGpuType] = {
    t.name: t
    for t in (
        SiaGpuType("aws", 4, 16384.0, 50.0),
        SiaGpuType("dgx-ext", 8, 40960.0, 1600.0),
        SiaGpuType("rtx", 8, 11264.0, 50.0),
        SiaGpuType("quad", 4, 24576.0, 200.0),
    )
}

#: Nodes per GPU type of each named cluster (simulator_config.py:11-13), in the artifact's order
SIA_CLUSTERS: dict[str, tuple[tuple[str, int], ...]] = {
    "sia-64": (("aws", 6), ("dgx-ext", 2), ("rtx", 3)),
    "sia-homo-64": (("aws", 16),),
    "sia-physical-44": (("rtx", 3), ("dgx-ext", 2), ("quad", 1)),
}

#: ``sia-64xN``: the default cluster with N × the nodes of every type (``--cluster_scale N``)
SIA_SCALED = re.compile(r"^sia-64x([0-9]{1,6})$")

#: Most nodes of each type the artifact's profiles measure (``cluster_max_physical_nnodes``,
#: simulator_config.py:15): Sia's policy considers no configuration on more nodes of a type
#: (sia.py:110), and the simulator packs a larger allocation onto that many nodes
#: (cluster.py:197-209). For the ``sia`` policy; the presets themselves are not capped.
SIA_MAX_PHYSICAL_NODES: dict[str, int] = {
    "azure": 5,
    "aws": 16,
    "dgx": 2,
    "dgx-ext": 2,
    "quad": 1,
    "rtx": 3,
}


def sia_cluster(nodes: tuple[tuple[str, int], ...], name: str) -> Cluster:
    """A cluster of ``nodes`` (type, node count) of Sia's GPU types, each type's nodes together
    in the given order; GPU types declared (``typed``), every one at speed 1."""
    servers: list[Server] = []
    for type_name, count in nodes:
        t = SIA_GPU_TYPES[type_name]
        srv = Server(
            num_gpus=t.gpus_per_node,
            gpu_memory_mb=t.gpu_memory_mb,
            network_bandwidth_gbps=t.network_bandwidth_gbps,
            gpu_type=t.name,
        )
        servers.extend([srv] * count)
    return Cluster(servers=tuple(servers), name=name, typed=True)


def sia_preset(name: str) -> Cluster:
    """The named Sia cluster (a key of :data:`SIA_CLUSTERS`)."""
    return sia_cluster(SIA_CLUSTERS[name], name)


def sia_scaled(factor: int) -> Cluster:
    """``sia-64x<factor>``: ``sia-64`` with ``factor`` × the nodes of every type (the
    artifact's ``--cluster_scale``, multi_simulator.py:20-22)."""
    if factor < 1:
        raise ValueError("sia-64xN needs N ≥ 1")
    base = SIA_CLUSTERS["sia-64"]
    return sia_cluster(tuple((t, n * factor) for t, n in base), f"sia-64x{factor}")
