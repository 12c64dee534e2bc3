"""Cluster topology: servers with GPUs, memory and bandwidths (SPEC §2).

GPUs are numbered globally in cluster order (server 0's GPUs first); ``gpu_label`` gives the
public ``server:gpu`` form used in output files.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Server:
    """One server: ``num_gpus`` identical GPUs behind one network link to a non-blocking switch.

    ``speed`` is its GPU type's speed factor (a cluster file's ``[gpu_types]``): a job without
    its own per-type table runs ``speed`` times as fast here as on a type of speed 1."""

    num_gpus: int
    gpu_memory_mb: float = 16384.0
    intra_bandwidth_gbps: float = 100.0
    network_bandwidth_gbps: float = 10.0
    gpu_type: str = "V100"
    speed: float = 1.0


@dataclass(frozen=True)
class TypeProfiles:
    """A GPU type's own measured application profiles (a cluster file's ``[gpu_types.NAME]
    profiles = "DIR"``): ``directory`` holds application folders as the ``profiles`` setting's
    does. Application-profile jobs on GPUs of ``gpu_type`` run at these profiles' rates instead
    of the default profiles' × the type's speed. ``source``/``line``: where the cluster file
    names it (for error messages)."""

    gpu_type: str
    directory: str
    source: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class TestbedRef:
    """The network testbed a cluster file describes (its ``[testbed]`` table, written by
    ``ddlsched testbed up``; docs/testbed.md): server i is network namespace ``namespaces[i]``
    with address ``addresses[i]``, behind an uplink shaped to ``rate``. Simulation ignores it;
    it tells live mode where the servers are."""

    __test__ = False

    name: str
    namespaces: tuple[str, ...]
    addresses: tuple[str, ...]
    rate: str = ""
    delay_ms: float = 0.0


@dataclass(frozen=True)
class Cluster:
    """A set of servers. Heterogeneous GPU counts per server are allowed."""

    servers: tuple[Server, ...]
    name: str = "custom"
    #: whether GPU types are declared (a cluster file's ``[gpu_types]``, a ``gavel-*`` preset):
    #: then a trace job's own per-type table, else its duration ÷ the type's speed, sets its
    #: time on each type. Undeclared (the default unless some server's speed is not 1), every
    #: type runs a trace job at its ``duration``, as before GPU types had speeds
    typed: bool | None = None
    #: GPU types with their own measured application profiles (``TypeProfiles``); the other
    #: types run application-profile jobs on the default profiles at their speed
    type_profiles: tuple[TypeProfiles, ...] = ()
    #: the network testbed whose namespaces are these servers (a cluster file's ``[testbed]``)
    testbed: TestbedRef | None = None
    # derived lookup tables, filled in __post_init__
    gpu_server: tuple[int, ...] = field(init=False, repr=False, compare=False)
    gpu_local: tuple[int, ...] = field(init=False, repr=False, compare=False)
    server_first_gpu: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.servers:
            raise ValueError("a cluster needs at least one server")
        gs: list[int] = []
        gl: list[int] = []
        first: list[int] = []
        for s, srv in enumerate(self.servers):
            first.append(len(gs))
            for g in range(srv.num_gpus):
                gs.append(s)
                gl.append(g)
        object.__setattr__(self, "gpu_server", tuple(gs))
        object.__setattr__(self, "gpu_local", tuple(gl))
        object.__setattr__(self, "server_first_gpu", tuple(first))
        if self.typed is None:
            object.__setattr__(self, "typed", any(s.speed != 1.0 for s in self.servers))
        if self.testbed is not None and len(self.testbed.namespaces) != len(self.servers):
            raise ValueError(
                f"testbed {self.testbed.name!r} has {len(self.testbed.namespaces)} namespaces "
                f"for {len(self.servers)} servers"
            )

    @classmethod
    def homogeneous(
        cls, num_servers: int, gpus_per_server: int, name: str = "custom", **server_kw: float | str
    ) -> Cluster:
        """``num_servers`` identical servers with ``gpus_per_server`` GPUs each."""
        srv = Server(num_gpus=gpus_per_server, **server_kw)  # type: ignore[arg-type]
        return cls(servers=tuple(srv for _ in range(num_servers)), name=name)

    @property
    def num_servers(self) -> int:
        return len(self.servers)

    @property
    def num_gpus(self) -> int:
        return len(self.gpu_server)

    @property
    def max_gpus_per_server(self) -> int:
        return max(s.num_gpus for s in self.servers)

    def gpus_of_server(self, server: int) -> range:
        start = self.server_first_gpu[server]
        return range(start, start + self.servers[server].num_gpus)

    def gpu_memory(self, gpu: int) -> float:
        return self.servers[self.gpu_server[gpu]].gpu_memory_mb

    def gpu_type(self, gpu: int) -> str:
        return self.servers[self.gpu_server[gpu]].gpu_type

    def gpu_speed(self, gpu: int) -> float:
        return self.servers[self.gpu_server[gpu]].speed

    @property
    def gpu_types(self) -> dict[str, int]:
        """GPU type → number of GPUs of that type, in cluster order."""
        out: dict[str, int] = {}
        for srv in self.servers:
            out[srv.gpu_type] = out.get(srv.gpu_type, 0) + srv.num_gpus
        return out

    def slowest_speed(self, gpus: tuple[int, ...] | list[int]) -> float:
        """The smallest speed factor among ``gpus`` (1.0 where types are undeclared): a
        synchronous job's compute runs at its slowest worker's pace."""
        if not self.typed:
            return 1.0
        return min(self.servers[self.gpu_server[g]].speed for g in gpus)

    @property
    def mean_speed(self) -> float:
        """The GPU types' speed factors averaged over the GPUs (Σ_t c_t · speed_t / G): the
        speed of an equal time-share of the types (1.0 where types are undeclared)."""
        if not self.typed:
            return 1.0
        return sum(srv.speed * srv.num_gpus for srv in self.servers) / self.num_gpus

    def mean_speed_time(self, seconds: float) -> float:
        """``seconds`` of speed-1 compute on an equal time-share of the GPU types
        (``seconds`` ÷ ``mean_speed``; unchanged where types are undeclared)."""
        if not self.typed:
            return seconds
        return seconds / self.mean_speed

    @property
    def heterogeneous(self) -> bool:
        """Whether GPUs differ in speed (more than one speed factor)."""
        return len({srv.speed for srv in self.servers}) > 1

    def gpu_label(self, gpu: int) -> str:
        return f"{self.gpu_server[gpu]}:{self.gpu_local[gpu]}"

    def placement_label(self, gpus: tuple[int, ...] | list[int]) -> str:
        return ";".join(self.gpu_label(g) for g in gpus)

    def consolidated_servers(self, need: int) -> tuple[int, ...]:
        """The fewest servers that hold ``need`` GPUs, largest first (lowest index on ties):
        where a job alone on the cluster runs most consolidated."""
        order = sorted(range(self.num_servers), key=lambda s: (-self.servers[s].num_gpus, s))
        out: list[int] = []
        for s in order:
            if need <= 0:
                break
            out.append(s)
            need -= self.servers[s].num_gpus
        return tuple(sorted(out))

    def servers_of(self, gpus: tuple[int, ...] | list[int]) -> tuple[int, ...]:
        """Distinct servers a GPU set spans, in cluster order."""
        return tuple(sorted({self.gpu_server[g] for g in gpus}))
