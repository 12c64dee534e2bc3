"""A testbed's layout as data: names, addresses, the ``ip``/``tc`` lines that build it and its
cluster file. Pure functions (nothing runs here), so the layout is testable without root.

Topology (docs/testbed.md)::

    NAME-0: eth0 10.211.Y.1/24 ─┐                          ┌─ s0 ┐
    NAME-1: eth0 10.211.Y.2/24 ─┼── veth pairs ──> NAME-sw ┼─ s1 ┼── br0 (a bridge, no address)
    …                           ┘                          └─ …  ┘

Every server is a network namespace with one interface, ``eth0``, the server end of a veth
pair whose other end, ``s<i>``, is a port of the bridge ``br0`` in the switch namespace
``NAME-sw``. That pair is the server's uplink: the only way between servers, so it is where
cross-server traffic contends, as on the papers' servers behind one non-blocking switch. It
is shaped in both directions: egress of ``eth0`` (what the server sends) and egress of
``s<i>`` (what it receives). Nothing is made in the root namespace: the veth ends are created
directly inside their namespaces (``ip link add … netns``), the bridge has no address, there is
no route out, no NAT, and the addresses are a private /24 only the testbed's namespaces use.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable

from .spec import TestbedSpec, format_rate

#: the /16 testbeds take their /24s from (RFC 1918, rarely used by hosts or container nets)
POOL = ipaddress.IPv4Network("10.211.0.0/16")
SERVER_DEV = "eth0"
BRIDGE = "br0"
#: alias on the bridge and on every server's eth0: marks a namespace as a testbed's, so that a
#: testbed whose state directory was lost can still be found (``list``) and removed (``down``)
MARKER = "ddlsched-testbed"
#: bytes one shaped queue may hold, in seconds of the link's rate (a switch-port buffer; TCP
#: fills it, so it sets the queueing delay under contention: 50 ms)
QUEUE_S = 0.05


def switch_ns(name: str) -> str:
    return f"{name}-sw"


def server_ns(name: str, i: int) -> str:
    return f"{name}-{i}"


def port(i: int) -> str:
    """Server ``i``'s port on the bridge (in the switch namespace)."""
    return f"s{i}"


def marker(name: str, i: int | None = None) -> str:
    """The alias marking the bridge (``i`` None) or server ``i``'s eth0 as testbed ``name``'s."""
    return f"{MARKER}:{name}" if i is None else f"{MARKER}:{name}:{i}"


def subnet_candidates(name: str) -> list[ipaddress.IPv4Network]:
    """The /24s of :data:`POOL` in the order ``name`` tries them: from one its hash picks
    (deterministic, so a testbed gets the same addresses each time) onwards, wrapping."""
    subnets = list(POOL.subnets(new_prefix=24))
    start = int.from_bytes(hashlib.sha256(name.encode()).digest()[:2], "big") % len(subnets)
    return subnets[start:] + subnets[:start]


def choose_subnet(
    name: str, taken: Iterable[str], host_nets: Iterable[ipaddress.IPv4Network]
) -> ipaddress.IPv4Network | None:
    """The first candidate /24 that no other testbed has (``taken``: their subnets) and that
    overlaps none of the host's own addresses or routes (``host_nets``); None if all are."""
    used = {ipaddress.IPv4Network(s) for s in taken}
    host = list(host_nets)
    for net in subnet_candidates(name):
        if net in used or any(net.overlaps(h) for h in host):
            continue
        return net
    return None


def addresses(subnet: ipaddress.IPv4Network, servers: int) -> list[str]:
    """Server i's address: the subnet's (i+1)-th host (10.211.Y.1 for server 0)."""
    hosts = subnet.hosts()
    return [str(next(hosts)) for _ in range(servers)]


# ------------------------------------------------------------------------------ ip and tc lines
def root_lines(spec: TestbedSpec) -> list[str]:
    """``ip -batch`` lines run from the root namespace: the namespaces, and each uplink's veth
    pair created with both ends already inside their namespaces."""
    sw = switch_ns(spec.name)
    lines = [f"netns add {sw}"] + [
        f"netns add {server_ns(spec.name, i)}" for i in range(spec.servers)
    ]
    lines += [
        f"link add {port(i)} netns {sw} type veth peer name {SERVER_DEV} "
        f"netns {server_ns(spec.name, i)}"
        for i in range(spec.servers)
    ]
    return lines


def switch_lines(spec: TestbedSpec) -> list[str]:
    """``ip -n NAME-sw -batch`` lines: the bridge and its ports."""
    lines = [
        f"link add {BRIDGE} type bridge",
        f"link set {BRIDGE} alias {marker(spec.name)}",
    ]
    for i in range(spec.servers):
        lines += [f"link set {port(i)} master {BRIDGE}", f"link set {port(i)} up"]
    return lines + [f"link set {BRIDGE} up", "link set lo up"]


def server_lines(spec: TestbedSpec, i: int, address: str, prefix: int = 24) -> list[str]:
    """``ip -n NAME-i -batch`` lines: server i's address and its interfaces up."""
    return [
        f"addr add {address}/{prefix} dev {SERVER_DEV}",
        f"link set {SERVER_DEV} alias {marker(spec.name, i)}",
        f"link set {SERVER_DEV} up",
        "link set lo up",
    ]


def shaping_lines(dev: str, rate_bps: int, delay_ms: float = 0.0) -> list[str]:
    """``tc -batch`` lines shaping ``dev``'s egress to ``rate_bps`` with a token bucket
    (``tbf``), plus a ``netem`` delay under it when ``delay_ms`` > 0.

    The bucket holds 2 ms of the rate (at least 16 KiB: a few full-size frames), small enough
    that a transfer of a fraction of a second sees the rate, large enough that the kernel's
    timers keep up at 1 Gbit/s; the queue holds :data:`QUEUE_S` of it (at least 64 KiB)."""
    rate_bytes = rate_bps / 8.0
    burst = max(16 * 1024, int(rate_bytes * 0.002))
    limit = max(64 * 1024, int(rate_bytes * QUEUE_S))
    lines = [
        f"qdisc add dev {dev} root handle 1: tbf rate {format_rate(rate_bps)} "
        f"burst {burst} limit {limit}"
    ]
    if delay_ms > 0:
        packets = max(1000, int(rate_bytes * (delay_ms / 1000.0 + QUEUE_S) / 1500) + 1)
        lines.append(
            f"qdisc add dev {dev} parent 1:1 handle 10: netem delay {delay_ms:g}ms limit {packets}"
        )
    return lines


# ------------------------------------------------------------------------------ cluster file
def cluster_toml(spec: TestbedSpec, namespaces: list[str], addrs: list[str]) -> str:
    """The testbed as a ddlsched cluster file: ``servers`` servers of ``gpus_per_server``
    logical GPUs whose network link is the shaped rate, and a ``[testbed]`` table naming the
    namespaces and addresses, so that live mode can place workers in them."""
    gbps = spec.rate_bps / 1e9
    ns_list = ", ".join(f'"{n}"' for n in namespaces)
    addr_list = ", ".join(f'"{a}"' for a in addrs)
    return (
        f"# Testbed {spec.name}: written by `ddlsched testbed up` (docs/testbed.md). Servers are\n"
        f"# network namespaces, each behind an uplink shaped to {spec.rate} in both directions.\n"
        f'name = "testbed-{spec.name}"\n'
        "\n"
        "[defaults]\n"
        f"network_bandwidth_gbps = {gbps!r}\n"
        "\n"
        "[[servers]]\n"
        f"num_gpus = {spec.gpus_per_server}\n"
        f"count = {spec.servers}\n"
        "\n"
        "[testbed]\n"
        f'name = "{spec.name}"\n'
        f"namespaces = [{ns_list}]\n"
        f"addresses = [{addr_list}]\n"
        f'rate = "{spec.rate}"\n'
        f"delay_ms = {float(spec.delay_ms)!r}\n"
    )
