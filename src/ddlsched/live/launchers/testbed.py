"""The testbed launcher: a job's workers as local subprocesses, each inside its server's network
namespace (``ip netns exec NAME-i``), so that the job's own traffic crosses the testbed's
shaped uplinks (``ddlsched live --testbed NAME``; docs/testbed.md "Live on a testbed").

Why processes under ``ip netns exec`` and not one Ray node per namespace: ``ip netns exec``
``exec``s the command after ``setns`` (no extra process), so a worker is the same process the
local launcher starts — its pid, process group, cgroup and token, the stop protocol and every
containment test hold unchanged — and it needs no Ray cluster spanning namespaces (a head
reachable from every namespace, a raylet per namespace, minutes of start-up on two cores) for
what is one machine anyway. The servers' GPUs stay logical, as in ``--local``.

Rendezvous: ``MASTER_ADDR`` is the testbed address of rank 0's server (the job's first
server), ``MASTER_PORT`` a port from :data:`PORTS` that no other running job uses (a job may
use the next few for its own listeners, as the example's ring does), ``GLOO_SOCKET_IFNAME``
the servers' testbed interface unless the environment sets one, ``DDLSCHED_SERVER_ADDR`` the
worker's own server's address and ``DDLSCHED_ADDRS`` every rank's, comma-separated. Each gang's pids are recorded
in the testbed's ``pids/`` while it runs, so ``ddlsched testbed down`` ends them by pid should
the scheduler die.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

from ...core.cluster import Cluster, TestbedRef
from ...errors import InputError
from ...testbed import commands, topology
from ...testbed import state as tb_state
from .base import LaunchError, WorkerSpec
from .local import LocalLauncher

#: the ports a job's rank 0 listens on (29500 is torch.distributed's usual one)
PORTS = range(29500, 29500 + 1000, 7)


def check_testbed(cluster: Cluster, field: str = "--testbed") -> TestbedRef:
    """The cluster's testbed if it is up and usable from here, else an InputError naming
    ``field``: the cluster has a ``[testbed]`` table, we are root and have ``ip``, and every
    namespace of it exists."""
    ref = cluster.testbed
    if ref is None:
        raise InputError("the cluster has no [testbed] table (ddlsched testbed up)", field=field)
    if os.geteuid() != 0:
        raise InputError(f"workers inside testbed {ref.name!r}'s namespaces need root", field=field)
    if shutil.which("ip") is None:
        raise InputError("needs iproute2's `ip` on PATH", field=field)
    present = set(commands.netns_list())
    missing = [ns for ns in ref.namespaces if ns not in present]
    if missing:
        raise InputError(
            f"testbed {ref.name!r} is not up: no namespace {', '.join(missing)} "
            f"(ddlsched testbed up --name {ref.name} …)",
            field=field,
        )
    return ref


class TestbedLauncher(LocalLauncher):
    """``LocalLauncher`` with each worker started inside its server's namespace."""

    __test__ = False

    def __init__(self, cluster: Cluster) -> None:
        self.testbed = check_testbed(cluster)
        super().__init__(cluster, master_addr=self.testbed.addresses[0])
        self._ports: dict[int, tuple[int, int]] = {}  # job → (rank 0's server, port)
        self._addrs: dict[int, str] = {}  # job → every rank's server address, rank order

    def rendezvous(self, job_id: int, workers: list[WorkerSpec]) -> tuple[str, int]:
        server = workers[0].server
        used = {p for _, p in self._ports.values()}
        port = next((p for p in PORTS if p not in used), None)
        if port is None:
            raise LaunchError(f"job {job_id}: no free rendezvous port")
        self._ports[job_id] = (server, port)
        addrs = self.testbed.addresses
        self._addrs[job_id] = ",".join(addrs[w.server] for w in workers)
        return addrs[server], port

    def placed(self, w: WorkerSpec) -> WorkerSpec:
        ns = self.testbed.namespaces[w.server]
        return replace(w, command=("ip", "netns", "exec", ns, *w.command))

    def base_env(self, w: WorkerSpec) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("GLOO_SOCKET_IFNAME", topology.SERVER_DEV)
        env["DDLSCHED_TESTBED"] = self.testbed.name
        env["DDLSCHED_SERVER_ADDR"] = self.testbed.addresses[w.server]
        env["DDLSCHED_ADDRS"] = self._addrs[w.job_id]
        return env

    def launched(self, job_id: int, pids: list[int]) -> None:
        tb_state.record_pids(self.testbed.name, self._tag(job_id), pids)

    def released(self, job_id: int) -> None:
        self._ports.pop(job_id, None)
        self._addrs.pop(job_id, None)
        tb_state.forget_pids(self.testbed.name, self._tag(job_id))

    @staticmethod
    def _tag(job_id: int) -> str:
        return f"live-{os.getpid()}-job-{job_id}"
