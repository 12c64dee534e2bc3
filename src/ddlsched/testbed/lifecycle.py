"""``ddlsched testbed up`` / ``down`` / ``list``: make, remove and show testbeds.

``up`` records the testbed (status ``creating``) before it makes anything, builds it with a few
batched ``ip``/``tc`` calls, writes the cluster file and records status ``up``. Whatever fails
or interrupts it, it removes what it made before it returns. ``down`` ends every process in the
testbed's namespaces (by pid: those its pid files name and those ``ip netns pids`` lists;
SIGTERM, then SIGKILL), deletes its namespaces (which destroys their veths, the bridge and
every qdisc on them) and its state directory. A later ``up`` of a name whose state or
namespaces were left behind (a crash, a SIGKILL) runs that clean-up first and says so.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, quote
from ..processes import process_start_time
from . import commands, state, topology
from .spec import TestbedSpec, check_name

#: seconds a process in a testbed gets after SIGTERM before SIGKILL
TERM_GRACE_S = 2.0


@dataclass
class UpResult:
    state: state.TestbedState
    cluster_file: Path
    seconds: float
    notes: list[str] = field(default_factory=list)


@dataclass
class DownResult:
    name: str
    namespaces: list[str]
    processes: list[int]


@dataclass
class TestbedRow:
    """One line of ``testbed list``."""

    __test__ = False

    name: str
    status: str
    servers: int | None
    gpus_per_server: int | None
    rate: str
    subnet: str
    namespaces_present: int
    namespaces_expected: int | None


# ------------------------------------------------------------------------------ look-ups
def host_networks() -> list[ipaddress.IPv4Network]:
    """The root namespace's IPv4 networks (its addresses' subnets and its routes' targets):
    a testbed's /24 overlaps none of them, so no address inside a testbed is also the host's."""
    nets: list[ipaddress.IPv4Network] = []
    for line in commands.run(["ip", "-o", "-4", "addr", "show"]).splitlines():
        parts = line.split()
        if "inet" in parts:
            nets.append(ipaddress.ip_interface(parts[parts.index("inet") + 1]).network)
    for line in commands.run(["ip", "-4", "route", "show", "table", "all"]).splitlines():
        parts = line.split()
        dest = parts[1] if parts and parts[0] in ("local", "broadcast", "unicast") else parts[0]
        if dest and dest != "default":
            try:
                nets.append(ipaddress.ip_network(dest, strict=False))
            except ValueError:
                continue
    return nets


def marked_namespaces(name: str, present: list[str]) -> list[str]:
    """The namespaces in ``present`` that carry testbed ``name``'s marker (its switch first):
    the testbed's even where its state directory is gone."""
    found = []
    sw = topology.switch_ns(name)
    if sw in present and commands.link_alias(sw, topology.BRIDGE) == topology.marker(name):
        found.append(sw)
    pattern = re.compile(rf"{re.escape(name)}-([0-9]+)")
    for ns in present:
        m = pattern.fullmatch(ns)
        if m and commands.link_alias(ns, topology.SERVER_DEV) == topology.marker(name, int(m[1])):
            found.append(ns)
    return found


def orphan_names(present: list[str], recorded: set[str]) -> list[str]:
    """Names of testbeds whose switch namespace is present and marked but have no state."""
    out = []
    for ns in present:
        if ns.endswith("-sw"):
            name = ns[: -len("-sw")]
            if name not in recorded and commands.link_alias(ns, topology.BRIDGE) == (
                topology.marker(name)
            ):
                out.append(name)
    return sorted(out)


# ------------------------------------------------------------------------------ processes
def _alive(pid: int, start: int) -> bool:
    """Whether process ``pid`` started at ``start`` still runs (a zombie has ended)."""
    if process_start_time(pid) != start:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return stat[stat.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return False


def end_processes(procs: list[tuple[int, int]], grace: float = TERM_GRACE_S) -> list[int]:
    """SIGTERM each ``(pid, start)`` that still runs, SIGKILL those left after ``grace``; the
    pids signalled. A pid whose start time changed is another process now: left alone."""
    procs = [(p, s) for p, s in dict.fromkeys(procs) if p != os.getpid() and _alive(p, s)]
    for pid, _ in procs:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    left = procs
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [(p, s) for p, s in left if _alive(p, s)]
    for pid, start in left:
        if process_start_time(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [(p, s) for p, s in left if _alive(p, s)]
    if left:
        raise InputError(
            f"processes {', '.join(str(p) for p, _ in left)} did not end after SIGKILL",
            field="testbed",
        )
    return [p for p, _ in procs]


# ------------------------------------------------------------------------------ removal
def _remove(name: str, st: state.TestbedState | None, present: list[str]) -> DownResult:
    """End the processes and delete the namespaces of testbed ``name`` (recorded in ``st`` or
    found by marker), then its state directory. Holds no lock: callers do."""
    ours = [ns for ns in (st.namespaces if st else []) if ns in present]
    ours += [ns for ns in marked_namespaces(name, present) if ns not in ours]
    procs = state.recorded_pids(name)
    for ns in ours:
        procs += [(p, process_start_time(p)) for p in commands.netns_pids(ns)]
    ended = end_processes(procs)
    commands.ip_batch([f"netns del {ns}" for ns in ours], force=True)
    left = [ns for ns in ours if ns in commands.netns_list()]
    if left:  # the state stays, so that `down` can try again
        raise InputError(
            f"could not delete namespace {quote(left[0])} of testbed {quote(name)} "
            f"(`ip netns del {left[0]}`)",
            field="testbed",
        )
    state.remove_state(name)
    return DownResult(name=name, namespaces=ours, processes=ended)


def down(name: str) -> DownResult:
    """Remove testbed ``name``: its processes, namespaces (links, bridge, qdiscs) and state."""
    check_name(name)
    commands.require_privileges()
    with state.locked():
        st = state.load_state(name)
        present = commands.netns_list()
        if st is None and not marked_namespaces(name, present):
            known = sorted(set(state.recorded_names()) | set(orphan_names(present, set())))
            raise InputError(
                f"no testbed {quote(name)}"
                + (f" (testbeds: {', '.join(known)})" if known else " (there are none)"),
                field="--name",
            )
        return _remove(name, st, present)


# ------------------------------------------------------------------------------ creation
def up(spec: TestbedSpec) -> UpResult:
    """Build the testbed ``spec`` describes (module docstring); its state and cluster file."""
    commands.require_privileges()
    t0 = time.monotonic()
    notes: list[str] = []
    with state.locked():
        present = commands.netns_list()
        old = state.load_state(spec.name)
        if old is not None:
            if old.status == "creating" and old.creator_alive():
                raise InputError(
                    f"testbed {quote(spec.name)} is being created by process {old.creator_pid}",
                    field="--name",
                )
            if old.status == "up" and all(ns in present for ns in old.namespaces):
                raise InputError(
                    f"testbed {quote(spec.name)} is up; `ddlsched testbed down --name "
                    f"{spec.name}` first",
                    field="--name",
                )
        if old is not None or marked_namespaces(spec.name, present):
            gone = _remove(spec.name, old, present)
            notes.append(
                f"removed what an earlier testbed {spec.name} left behind "
                f"({len(gone.namespaces)} namespaces, {len(gone.processes)} processes"
                f"{', state ' + old.status if old else ', no state'})"
            )
            present = commands.netns_list()
        planned = [topology.switch_ns(spec.name)] + [
            topology.server_ns(spec.name, i) for i in range(spec.servers)
        ]
        clash = [ns for ns in planned if ns in present]
        if clash:
            raise InputError(
                f"network namespace {quote(clash[0])} exists and is not testbed "
                f"{spec.name}'s; choose another name",
                field="--name",
            )
        taken = []
        for other in state.recorded_names():
            if other != spec.name:
                st_other = state.load_state(other)
                if st_other is not None:
                    taken.append(st_other.subnet)
        subnet = topology.choose_subnet(spec.name, taken, host_networks())
        if subnet is None:
            raise InputError(
                f"no free /24 left in {topology.POOL} (every one is another testbed's or the "
                "host's)",
                field="testbed",
            )
        addrs = topology.addresses(subnet, spec.servers)
        st = state.TestbedState(
            name=spec.name,
            servers=spec.servers,
            gpus_per_server=spec.gpus_per_server,
            rate_bps=spec.rate_bps,
            delay_ms=spec.delay_ms,
            subnet=str(subnet),
            switch_ns=planned[0],
            server_ns=planned[1:],
            addresses=addrs,
            status="creating",
            creator_pid=os.getpid(),
            creator_start=process_start_time(os.getpid()),
            created_at=time.time(),
        )
        state.save_state(st)
        try:
            _build(spec, st)
            cluster = state.testbed_dir(spec.name) / state.CLUSTER_FILE
            cluster.write_text(
                topology.cluster_toml(spec, st.server_ns, st.addresses), encoding="utf-8"
            )
            st.status = "up"
            st.up_seconds = round(time.monotonic() - t0, 3)
            state.save_state(st)
        except BaseException:
            try:
                _remove(spec.name, st, commands.netns_list())
            except InputError:
                pass  # the original error is the one to report; `down` can retry
            raise
    return UpResult(state=st, cluster_file=cluster, seconds=st.up_seconds, notes=notes)


def _build(spec: TestbedSpec, st: state.TestbedState) -> None:
    """The ip/tc batches: namespaces and veths, the bridge, the servers, the shaping."""
    prefix = ipaddress.IPv4Network(st.subnet).prefixlen
    commands.ip_batch(topology.root_lines(spec))
    commands.ip_batch(topology.switch_lines(spec), netns=st.switch_ns)
    for i, ns in enumerate(st.server_ns):
        commands.ip_batch(topology.server_lines(spec, i, st.addresses[i], prefix), netns=ns)
    try:
        commands.tc_batch(
            [
                line
                for i in range(spec.servers)
                for line in topology.shaping_lines(topology.port(i), spec.rate_bps, spec.delay_ms)
            ],
            netns=st.switch_ns,
        )
        for ns in st.server_ns:
            commands.tc_batch(
                topology.shaping_lines(topology.SERVER_DEV, spec.rate_bps, spec.delay_ms),
                netns=ns,
            )
    except commands.CommandError as e:
        msg = str(e).lower()
        if spec.delay_ms > 0 and ("netem" in msg or "unknown" in msg):
            raise InputError(
                "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), which --delay needs; "
                "leave --delay out",
                field="--delay",
            ) from None
        raise


# ------------------------------------------------------------------------------ listing
def list_testbeds() -> list[TestbedRow]:
    """Every testbed recorded under the state directory, and every one whose marked switch
    namespace exists without state (status ``orphaned``: ``down`` removes it)."""
    commands.require_privileges()
    present = commands.netns_list()
    rows = []
    recorded = state.recorded_names()
    for name in recorded:
        st = state.load_state(name)
        if st is None:
            continue
        have = sum(ns in present for ns in st.namespaces)
        status = st.status
        if status == "up" and have < len(st.namespaces):
            status = "broken"
        elif status == "creating" and not st.creator_alive():
            status = "crashed"
        rows.append(
            TestbedRow(
                name=name,
                status=status,
                servers=st.servers,
                gpus_per_server=st.gpus_per_server,
                rate=TestbedSpec(name, 1, 1, st.rate_bps).rate,
                subnet=st.subnet,
                namespaces_present=have,
                namespaces_expected=len(st.namespaces),
            )
        )
    for name in orphan_names(present, set(recorded)):
        rows.append(
            TestbedRow(
                name=name,
                status="orphaned",
                servers=None,
                gpus_per_server=None,
                rate="?",
                subnet="?",
                namespaces_present=len(marked_namespaces(name, present)),
                namespaces_expected=None,
            )
        )
    return sorted(rows, key=lambda r: r.name)
