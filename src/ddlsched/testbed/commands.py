"""Running ``ip`` and ``tc``: the only way the testbed changes the machine's network.

Commands go in batches (``ip -batch -`` / ``tc -batch -`` with ``-n NS`` for a namespace), so
bringing up a testbed costs a handful of processes rather than one per link. A failing command
becomes one :class:`InputError` line with the tool's own first error line, and no command here
ever runs in the root namespace except ``ip netns add``/``del``/``list``/``pids``, ``ip link add``
with both ends placed in testbed namespaces, and read-only ``ip -o addr``/``route``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from ..errors import InputError, one_line

#: seconds one ip/tc invocation may take (a batch of a few hundred lines takes milliseconds)
COMMAND_TIMEOUT_S = 30.0


def require_privileges() -> None:
    """One line of InputError unless this process may build a testbed: root (network
    namespaces and qdiscs need CAP_NET_ADMIN) with ``ip`` and ``tc`` (iproute2) on PATH."""
    if os.geteuid() != 0:
        raise InputError(
            "needs root: network namespaces, veth links and tc qdiscs need CAP_NET_ADMIN "
            "(run as root, e.g. sudo ddlsched testbed …)",
            field="testbed",
        )
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise InputError(
                f"'{tool}' not found on PATH: install iproute2 (Debian: apt-get install iproute2)",
                field="testbed",
            )


class CommandError(InputError):
    """An ``ip``/``tc`` command failed; the message carries the tool's first error line."""


def run(args: Sequence[str], *, stdin: str | None = None, check: bool = True) -> str:
    """Run one ip/tc command line; its stdout. ``check``: a non-zero exit raises
    :class:`CommandError` with the command and its first error line."""
    try:
        proc = subprocess.run(
            list(args),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise InputError(f"'{args[0]}' not found: install iproute2", field="testbed") from None
    except subprocess.TimeoutExpired:
        raise CommandError(
            f"`{' '.join(args)}` took more than {COMMAND_TIMEOUT_S:g} s", field="testbed"
        ) from None
    if check and proc.returncode != 0:
        raise CommandError(
            f"`{' '.join(args)}` failed: {first_error(proc.stderr or proc.stdout)}",
            field="testbed",
        )
    return proc.stdout


def first_error(text: str) -> str:
    """The first non-empty line of a tool's error output (``ip -batch`` adds the line number
    of the failing command on a line of its own: both are kept)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "no error message"
    msg = lines[0]
    if len(lines) > 1 and lines[1].startswith("Command failed"):
        msg += f" ({lines[1]})"
    return one_line(msg)


def ip_batch(lines: Sequence[str], netns: str | None = None, force: bool = False) -> None:
    """``ip [-n NETNS] -batch -`` with ``lines`` (nothing to do: no process). ``force``: go
    on past a failing line (``ip -force``; the caller checks what was done)."""
    if lines:
        run(
            [
                "ip",
                *(["-n", netns] if netns else []),
                *(["-force"] if force else []),
                "-batch",
                "-",
            ],
            stdin="\n".join(lines) + "\n",
            check=not force,
        )


def tc_batch(lines: Sequence[str], netns: str) -> None:
    """``tc -n NETNS -batch -`` with ``lines``."""
    if lines:
        run(["tc", "-n", netns, "-batch", "-"], stdin="\n".join(lines) + "\n")


def netns_list() -> list[str]:
    """The names of the machine's network namespaces (``ip netns list``)."""
    out = run(["ip", "netns", "list"])
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_pids(netns: str) -> list[int]:
    """The processes running in a namespace (``ip netns pids``); [] where it is gone."""
    out = run(["ip", "netns", "pids", netns], check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def link_alias(netns: str, dev: str) -> str | None:
    """The alias (``ip link set DEV alias …``) of ``dev`` in ``netns``; None where either is
    missing or it has none."""
    out = run(["ip", "-n", netns, "-o", "link", "show", "dev", dev], check=False)
    marker = "alias "
    for part in out.split("\\"):
        part = part.strip()
        if part.startswith(marker):
            return part[len(marker) :].strip()
    return None
