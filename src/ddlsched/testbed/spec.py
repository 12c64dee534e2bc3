"""What a testbed is asked to be (``ddlsched testbed up``'s options), validated into one value.

Every check names its option, so the CLI's one error line says which one is wrong. The limits
keep every name the testbed makes short: a namespace is ``NAME-sw`` or ``NAME-<i>``, and with a
name of at most 12 characters and at most 64 servers that is at most 15 characters, the limit
Linux puts on an interface name (namespace names have none, but a name that could also be an
interface's is easier to read in ``ip`` output and keeps the door open to host-side links).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError, quote
from ..parsing import NumberError, parse_float, parse_int

#: a testbed's name: lower-case letters, digits and inner dashes, starting with a letter
NAME_RE = re.compile(r"[a-z](?:[a-z0-9-]{0,10}[a-z0-9])?")
MAX_NAME = 12
MAX_SERVERS = 64
MAX_GPUS_PER_SERVER = 64
#: slowest and fastest shaped rate (bits/s): below 1 Mbit/s a test transfer of even 1 MB takes
#: seconds; above 10 Gbit/s two shared cores cannot fill a veth anyway
MIN_RATE, MAX_RATE = 1_000_000, 10_000_000_000
MAX_DELAY_MS = 10_000.0

_RATE_RE = re.compile(r"(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<unit>bit|kbit|mbit|gbit)")
_UNITS = {"bit": 1, "kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}


def check_name(name: str, field: str = "--name") -> str:
    """``name`` if it may name a testbed, else an InputError naming ``field``."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InputError(
            f"{quote(str(name))} is not a testbed name: 1 to {MAX_NAME} characters of a-z, 0-9 "
            "and '-', starting with a letter and not ending with '-'",
            field=field,
        )
    return name


def parse_rate(text: str, field: str = "--bandwidth") -> int:
    """A link rate as ``tc`` writes it (``100mbit``, ``1gbit``, ``1.5gbit``, ``500kbit``) in
    bits per second. Only bit units: tc's ``kbps``/``mbps`` mean *bytes* per second, a classic
    factor-8 mistake, so they are refused with a hint."""
    s = str(text).strip().lower()
    m = _RATE_RE.fullmatch(s)
    if not m:
        hint = " (tc's 'bps' units are bytes per second; write e.g. 100mbit)" if "bps" in s else ""
        raise InputError(
            f"expected a rate such as 100mbit or 1gbit (units: bit, kbit, mbit, gbit), "
            f"got {quote(str(text))}{hint}",
            field=field,
        )
    bps = round(float(m["num"]) * _UNITS[m["unit"]])
    if not MIN_RATE <= bps <= MAX_RATE:
        raise InputError(f"rate {quote(str(text))} is outside 1mbit … 10gbit", field=field)
    return bps


def format_rate(bps: int) -> str:
    """``bps`` as the shortest exact tc rate: 100000000 → ``100mbit``."""
    for unit in ("gbit", "mbit", "kbit"):
        if bps % _UNITS[unit] == 0:
            return f"{bps // _UNITS[unit]}{unit}"
    return f"{bps}bit"


def parse_count(text: str | int, field: str, high: int) -> int:
    """An integer option in 1 … ``high``."""
    try:
        n = text if isinstance(text, int) else parse_int(text)
    except NumberError as e:
        raise InputError(str(e), field=field) from None
    if not 1 <= n <= high:
        raise InputError(f"must be between 1 and {high}, got {n}", field=field)
    return n


def parse_delay(text: str | float | None, field: str = "--delay") -> float:
    """A one-way delay in milliseconds added on every uplink (0: none)."""
    if text is None:
        return 0.0
    try:
        ms = float(text) if isinstance(text, int | float) else parse_float(text)
    except NumberError as e:
        raise InputError(str(e), field=field) from None
    if not 0.0 <= ms <= MAX_DELAY_MS:
        raise InputError(f"must be between 0 and {MAX_DELAY_MS:g} ms, got {ms:g}", field=field)
    return ms


@dataclass(frozen=True)
class TestbedSpec:
    """One testbed: ``servers`` namespaces of ``gpus_per_server`` logical GPUs each, every one
    behind an uplink shaped to ``rate_bps`` in both directions (plus ``delay_ms`` one way)."""

    __test__ = False  # not a pytest test class, despite the name

    name: str
    servers: int
    gpus_per_server: int
    rate_bps: int
    delay_ms: float = 0.0

    @classmethod
    def parse(
        cls,
        name: str,
        servers: str | int,
        gpus_per_server: str | int,
        bandwidth: str,
        delay: str | float | None = None,
    ) -> TestbedSpec:
        """Validate the command line's values (each error names its option)."""
        return cls(
            name=check_name(name),
            servers=parse_count(servers, "--servers", MAX_SERVERS),
            gpus_per_server=parse_count(gpus_per_server, "--gpus-per-server", MAX_GPUS_PER_SERVER),
            rate_bps=parse_rate(bandwidth),
            delay_ms=parse_delay(delay),
        )

    @property
    def rate(self) -> str:
        """The rate as tc takes it (``100mbit``)."""
        return format_rate(self.rate_bps)
