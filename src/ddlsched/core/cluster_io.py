"""Cluster presets and cluster files (TOML, YAML or JSON); see ``docs/formats.md``."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..errors import InputError, quote, suggest
from ..parsing import (
    NumberError,
    StrictYamlLoader,
    check_float,
    check_int,
    load_json,
    load_toml,
    load_yaml,
)
from ..paths import is_dir, path_exists, read_text
from .cluster import Cluster, Server, TestbedRef, TypeProfiles
from .sia_clusters import SIA_CLUSTERS, SIA_SCALED, sia_preset, sia_scaled


def _wang20() -> Cluster:
    """Wang et al. testbed: 16 servers x 4 V100 (16 GB), 10 Gb/s network."""
    return Cluster.homogeneous(
        16, 4, name="wang20", gpu_memory_mb=16384.0, network_bandwidth_gbps=10.0, gpu_type="V100"
    )


def _tiny() -> Cluster:
    """2 servers x 4 V100 (16 GB), 10 Gb/s network: for quick tries."""
    return Cluster.homogeneous(
        2, 4, name="tiny", gpu_memory_mb=16384.0, network_bandwidth_gbps=10.0, gpu_type="V100"
    )


def _wang20_32gb() -> Cluster:
    """The Wang et al. authors' artifact: as ``wang20`` but 32 GB per GPU (hard-coded there)."""
    return Cluster.homogeneous(
        16,
        4,
        name="wang20-32gb",
        gpu_memory_mb=32768.0,
        network_bandwidth_gbps=10.0,
        gpu_type="V100",
    )


#: Philly's servers (Jeon et al., USENIX ATC '19): the ``cluster_machine_list`` of the public
#: trace (github.com/msr-fiddle/philly-traces) lists 552 machines, 231 with 8 GPUs of 24 GB and
#: 321 with 2 GPUs of 12 GB (tabulated in that repository's issue #8): 2,490 GPUs
PHILLY_SERVERS = ((231, 8, 24576.0), (321, 2, 12288.0))


def _philly() -> Cluster:
    """Philly sized as its public machine list: 231 servers × 8 GPUs (24 GB) then 321 servers ×
    2 GPUs (12 GB), 2,490 GPUs; GPU models are not published (types name the memory only), the
    links keep the defaults (trace jobs have no communication model)."""
    return Cluster(
        servers=tuple(
            Server(num_gpus=per, gpu_memory_mb=mem, gpu_type=f"philly-{int(mem) // 1024}GB")
            for count, per, mem in PHILLY_SERVERS
            for _ in range(count)
        ),
        name="philly",
    )


#: yu22 links (our choice, docs/models.md): network b_e and intra-server b_i in Gb/s
YU22_NETWORK_GBPS = 10.0
YU22_INTRA_GBPS = 100.0
YU22_GPU_CHOICES = (4, 8, 16, 32)


def yu22_cluster(seed: int = 0, num_servers: int = 20) -> Cluster:
    """Yu et al. §7: 20 servers, each with GPUs drawn uniformly from {4, 8, 16, 32} (seeded).
    Fewer servers take the first ``num_servers`` of the same draw, so clusters are nested."""
    rng = np.random.default_rng((22, seed))
    counts = rng.choice(YU22_GPU_CHOICES, size=max(num_servers, 20))[:num_servers]
    return Cluster(
        servers=tuple(
            Server(
                num_gpus=int(c),
                gpu_memory_mb=16384.0,
                intra_bandwidth_gbps=YU22_INTRA_GBPS,
                network_bandwidth_gbps=YU22_NETWORK_GBPS,
            )
            for c in counts
        ),
        name="yu22" if num_servers == 20 else f"yu22-{num_servers}",
    )


#: Named clusters usable wherever a cluster file is accepted (called with the run's seed).
CLUSTER_PRESETS: dict[str, Callable[[int], Cluster]] = {
    "wang20": lambda seed: _wang20(),
    "wang20-32gb": lambda seed: _wang20_32gb(),
    "tiny": lambda seed: _tiny(),
    "philly": lambda seed: _philly(),
    "yu22": yu22_cluster,
    "luo24": lambda seed: Cluster.homogeneous(16, 4, name="luo24", gpu_memory_mb=16384.0),
    # Luo et al.'s physical testbed: 4 servers × 4 GPUs (2080 Ti), 10 Gb/s
    "luo24-physical": lambda seed: Cluster.homogeneous(
        4, 4, name="luo24-physical", gpu_memory_mb=11264.0, gpu_type="2080Ti"
    ),
    # Sia's simulated clusters (core/sia_clusters.py): GPU types named as its profile suffixes
    **{name: (lambda seed, name=name: sia_preset(name)) for name in SIA_CLUSTERS},
}
#: ``yu22-N``: the yu22 draw cut to its first N servers
SIZED_PRESET = re.compile(r"^yu22-([0-9]+)$")
#: ``gavel-V:P:K``: Gavel's simulated clusters (V V100, P P100 and K K80 GPUs)
GAVEL_PRESET = re.compile(r"^gavel-([0-9]{1,7}):([0-9]{1,7}):([0-9]{1,7})$")
#: Gavel's GPU types: (name as in its throughputs file, speed factor, GPU memory in MB). The
#: speed factors are for jobs without a per-type table (a Gavel trace has one): the geometric
#: mean over Gavel's 26 job configurations on 1 GPU of the type's throughput ÷ the V100's
#: (``simulation_throughputs.json``: P100 0.943, K80 0.297). Memory: V100 and P100 16 GB,
#: K80 12 GB per GPU (the cloud instances Gavel measured on)
GAVEL_TYPES = (("v100", 1.0, 16384.0), ("p100", 0.943, 16384.0), ("k80", 0.297, 12288.0))


def gavel_cluster(v100: int, p100: int, k80: int) -> Cluster:
    """Gavel's simulated cluster ``v100:p100:k80``, laid out as its simulator does by default
    (``--num_gpus_per_server 1:1:1``: one GPU per server), V100 servers first."""
    servers = [
        Server(num_gpus=1, gpu_memory_mb=mem, gpu_type=name, speed=speed)
        for (name, speed, mem), count in zip(GAVEL_TYPES, (v100, p100, k80), strict=True)
        for _ in range(count)
    ]
    if not servers:
        raise InputError("gavel-V:P:K needs at least one GPU", field="cluster")
    return Cluster(servers=tuple(servers), name=f"gavel-{v100}:{p100}:{k80}", typed=True)


#: a server's keys in a cluster file (its speed comes from its type's ``[gpu_types]`` entry)
SERVER_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(Server) if f.name != "speed"
)
_TOP_KEYS = ("name", "gpu_types", "defaults", "servers", "testbed")
#: keys of the ``[testbed]`` table (``ddlsched testbed up`` writes it; docs/testbed.md)
_TESTBED_KEYS = ("name", "namespaces", "addresses", "rate", "delay_ms")
#: keys of one ``[gpu_types.NAME]`` entry
_TYPE_KEYS = ("speed", "gpu_memory_mb", "profiles")
#: its numeric keys
_TYPE_NUMBERS = ("speed", "gpu_memory_mb")
_ENTRY_KEYS = SERVER_FIELDS + ("count",)
_POSITIVE_NUMBERS = ("gpu_memory_mb", "intra_bandwidth_gbps", "network_bandwidth_gbps")
#: Guard against typos such as ``count = 1000000000`` that would exhaust memory.
MAX_GPUS = 1_000_000

Path_ = tuple[str | int, ...]


def _field_name(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


# --------------------------------------------------------------------------------------------
# line lookup: where in the raw text a key lives
# --------------------------------------------------------------------------------------------


def _yaml_lines(text: str) -> dict[Path_, int]:
    """Map every key path in a YAML document to its (1-based) line, from the node tree."""
    lines: dict[Path_, int] = {}
    try:
        root = yaml.compose(text, Loader=StrictYamlLoader)  # noqa: S506 - bounded aliases
    except (yaml.YAMLError, RecursionError):
        return lines

    def walk(node: yaml.Node, path: Path_) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value if isinstance(k, yaml.ScalarNode) else str(k.value)
                lines[path + (key,)] = k.start_mark.line + 1
                walk(v, path + (key,))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, path + (i,))

    if root is not None:
        walk(root, ())
    return lines


_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?")


def _toml_line(text: str, path: Path_) -> int | None:
    """Best-effort line of ``path`` in TOML text: the key inside its table, else anywhere."""
    raw = text.splitlines()
    key = next((p for p in reversed(path) if isinstance(p, str)), None)
    fallback = key

    def key_re(k: str) -> re.Pattern[str]:
        return re.compile(rf"^\s*[\"']?{re.escape(k)}[\"']?\s*=")

    # section of the table the path lives in: (header name, occurrence index)
    if len(path) >= 2 and path[0] == "servers" and isinstance(path[1], int):
        section: tuple[str | None, int] = ("servers", path[1])
        key = path[2] if len(path) > 2 and isinstance(path[2], str) else None
    elif len(path) >= 2 and path[0] == "gpu_types" and isinstance(path[1], str):
        section = (f"gpu_types.{path[1]}", 0)
        key = path[2] if len(path) > 2 and isinstance(path[2], str) else None
    elif len(path) >= 2 and path[0] == "defaults":
        section = ("defaults", 0)
    elif len(path) == 1 and path[0] in ("defaults", "servers"):
        section, key = (str(path[0]), 0), None
    else:
        section = (None, 0)

    name, occurrence = section
    seen = -1
    inside = name is None
    header_line: int | None = None
    for i, line in enumerate(raw, start=1):
        m = _TOML_HEADER.match(line)
        if m:
            if name is None or (inside and seen >= occurrence):
                break  # top-level keys come before the first table; or we left the wanted one
            if m.group(1) == name:
                seen += 1
                if seen == occurrence:
                    inside, header_line = True, i
                    if key is None:
                        return i
            continue
        if inside and key is not None and key_re(key).match(line):
            return i
    if header_line is not None:
        return header_line  # key absent from its table: point at the table
    # fallbacks for inline tables and dotted keys: the key anywhere
    if fallback is not None:
        for i, line in enumerate(raw, start=1):
            if re.search(rf"(^|[\s{{,.])[\"']?{re.escape(fallback)}[\"']?\s*=", line):
                return i
    return None


# --------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------


class _Ctx:
    def __init__(self, source: str, text: str, fmt: str) -> None:
        self.source = source
        #: the folder relative paths in the file (a type's ``profiles``) are relative to
        self.folder = Path(source).parent
        self.text = text
        self.fmt = fmt
        self._yaml: dict[Path_, int] | None = None

    def line(self, path: Path_) -> int | None:
        if self.fmt == "yaml":
            if self._yaml is None:
                self._yaml = _yaml_lines(self.text)
            while path:
                if path in self._yaml:
                    return self._yaml[path]
                path = path[:-1]
            return None
        if self.fmt == "json":
            key = next((p for p in reversed(path) if isinstance(p, str)), None)
            if key is None:
                return None
            pos = self.text.find(json.dumps(key))
            return None if pos < 0 else self.text.count("\n", 0, pos) + 1
        return _toml_line(self.text, path)

    def error(self, message: str, path: Path_) -> InputError:
        return InputError(
            message, source=self.source, line=self.line(path), field=_field_name(path) or None
        )


def _type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, str):
        return f"a string ({quote(v)})"
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "a list"
    if v is None:
        return "nothing (null)"
    return type(v).__name__


def _not_a_name(key: Any, allowed: tuple[str, ...]) -> str:
    """Message for a YAML key that is not text (``0.0:``, ``null:``, ``true:``)."""
    return f"key {quote(repr(key))} is not a name; valid keys: {', '.join(allowed)}"


def _number(v: Any, path: Path_, ctx: _Ctx) -> float:
    """A finite number given as a number (``ddlsched.parsing``; a quoted "16384" is text)."""
    try:
        return check_float(v)
    except NumberError as e:
        raise ctx.error(str(e), path) from None


def _integer(v: Any, path: Path_, ctx: _Ctx) -> int:
    try:
        return check_int(v)
    except NumberError as e:
        raise ctx.error(str(e), path) from None


def _server_fields(table: Any, path: Path_, ctx: _Ctx, allowed: tuple[str, ...]) -> dict[str, Any]:
    """Validate one ``[defaults]`` or ``[[servers]]`` table; returns its typed values."""
    if not isinstance(table, dict):
        raise ctx.error(f"expected a table, got {_type_name(table)}", path)
    out: dict[str, Any] = {}
    for key, v in table.items():
        p = path + (key,)
        if not isinstance(key, str):
            raise ctx.error(_not_a_name(key, allowed), path)
        if key not in allowed:
            raise ctx.error(
                f"unknown key {quote(str(key))}{suggest(str(key), allowed)}; "
                f"valid keys: {', '.join(allowed)}",
                p,
            )
        if key in ("num_gpus", "count"):
            n = _integer(v, p, ctx)
            if n < 1:
                raise ctx.error(f"{key} must be >= 1, got {n}", p)
            out[key] = n
        elif key in _POSITIVE_NUMBERS:
            x = _number(v, p, ctx)
            if x <= 0:
                raise ctx.error(f"{key} must be > 0, got {v}", p)
            out[key] = x
        elif key == "gpu_type":
            if not isinstance(v, str) or not v.strip():
                raise ctx.error(f"expected a non-empty string, got {_type_name(v)}", p)
            out[key] = v.strip()
        else:  # pragma: no cover - a Server field this reader does not know how to type
            out[key] = v
    return out


def _type_profiles(name: str, v: Any, path: Path_, ctx: _Ctx) -> TypeProfiles:
    """A type's ``profiles``: a directory of application folders (relative to the cluster
    file's folder), checked to exist here; its tables are read by a run that needs them."""
    if not isinstance(v, str) or not v.strip():
        raise ctx.error(f"expected a directory name (a string), got {_type_name(v)}", path)
    where = Path(v.strip()).expanduser()
    if not where.is_absolute():
        where = ctx.folder / where
    if not is_dir(where):
        what = "not a directory" if path_exists(where) else "no such directory"
        raise ctx.error(
            f"profiles of GPU type {quote(name)} ({quote(str(where))}): {what} (expected "
            "application folders, as the profiles setting's)",
            path,
        )
    return TypeProfiles(name, str(where), source=ctx.source, line=ctx.line(path))


def _gpu_types(table: Any, ctx: _Ctx, profiles: list[TypeProfiles]) -> dict[str, dict[str, float]]:
    """``[gpu_types.NAME]`` entries: ``speed`` (required, > 0: how fast a job without its
    own per-type table runs on this type, relative to speed 1), ``gpu_memory_mb`` and
    ``profiles`` (the type's own measured application profiles, appended to ``profiles``;
    ``speed`` is still required then: application-profile jobs on the type run at its
    profiles' rates, everything else — trace jobs, type-aware placement, Gavel — uses the
    speed)."""
    path: Path_ = ("gpu_types",)
    if not isinstance(table, dict) or not table:
        raise ctx.error(
            f"expected a table of GPU types (e.g. [gpu_types.V100] speed = 1.0), "
            f"got {_type_name(table)}",
            path,
        )
    out: dict[str, dict[str, float]] = {}
    for name, entry in table.items():
        p = path + (name,)
        if not isinstance(name, str) or not name.strip():
            raise ctx.error(_not_a_name(name, ("a GPU type name",)), path)
        if not isinstance(entry, dict):
            raise ctx.error(f"expected a table with 'speed', got {_type_name(entry)}", p)
        for key in entry:
            if key not in _TYPE_KEYS:
                raise ctx.error(
                    f"unknown key {quote(str(key))}{suggest(str(key), _TYPE_KEYS)}; "
                    f"valid keys: {', '.join(_TYPE_KEYS)}",
                    p + (str(key),),
                )
        if "speed" not in entry:
            raise ctx.error(
                f"GPU type {quote(name)} has no speed: add speed = <factor> (1.0: the "
                "reference type)",
                p + ("speed",),
            )
        if "profiles" in entry:
            profiles.append(_type_profiles(name.strip(), entry["profiles"], p + ("profiles",), ctx))
        typed: dict[str, float] = {}
        for key in _TYPE_NUMBERS:
            if key in entry:
                x = _number(entry[key], p + (key,), ctx)
                if x <= 0:
                    raise ctx.error(f"{key} must be > 0, got {entry[key]}", p + (key,))
                typed[key] = x
        out[name.strip()] = typed
    return out


def _typed(
    fields: dict[str, Any],
    types: dict[str, dict[str, float]],
    path: Path_,
    ctx: _Ctx,
    type_from_defaults: bool,
) -> dict[str, Any]:
    """A server's fields completed from its declared type: its speed, and its GPU memory
    unless the server (or ``[defaults]``) gives one."""
    name = fields.get("gpu_type", Server.gpu_type)
    entry = types.get(name)
    if entry is None:
        where = ("defaults", "gpu_type") if type_from_defaults else path + ("gpu_type",)
        raise ctx.error(
            f"unknown GPU type {quote(name)}{suggest(name, tuple(types))}; declared in "
            f"[gpu_types]: {', '.join(types)}",
            where,
        )
    out = {**fields, "gpu_type": name, "speed": entry["speed"]}
    if "gpu_memory_mb" in entry and "gpu_memory_mb" not in fields:
        out["gpu_memory_mb"] = entry["gpu_memory_mb"]
    return out


def _testbed(table: Any, ctx: _Ctx, num_servers: int) -> TestbedRef:
    """The ``[testbed]`` table: the testbed's ``name``, one network namespace and one address
    per server (in server order), its ``rate`` and ``delay_ms``."""
    path: Path_ = ("testbed",)
    if not isinstance(table, dict):
        raise ctx.error(f"expected a table, got {_type_name(table)}", path)
    for key in table:
        if key not in _TESTBED_KEYS:
            raise ctx.error(
                f"unknown key {quote(str(key))}{suggest(str(key), _TESTBED_KEYS)}; "
                f"valid keys: {', '.join(_TESTBED_KEYS)}",
                path + (str(key),),
            )
    for key in ("name", "namespaces", "addresses"):
        if key not in table:
            raise ctx.error(f"missing {quote(key)}", path + (key,))
    name = table["name"]
    if not isinstance(name, str) or not name.strip():
        raise ctx.error(f"expected a non-empty string, got {_type_name(name)}", path + ("name",))
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("namespaces", "addresses"):
        v = table[key]
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise ctx.error(f"expected a list of strings, got {_type_name(v)}", path + (key,))
        if len(v) != num_servers:
            raise ctx.error(
                f"{len(v)} entries for {num_servers} servers (one per server, in order)",
                path + (key,),
            )
        lists[key] = tuple(v)
    rate = table.get("rate", "")
    if not isinstance(rate, str):
        raise ctx.error(
            f"expected a string such as '100mbit', got {_type_name(rate)}", path + ("rate",)
        )
    delay = _number(table.get("delay_ms", 0.0), path + ("delay_ms",), ctx)
    if delay < 0:
        raise ctx.error(f"must be >= 0, got {delay:g}", path + ("delay_ms",))
    return TestbedRef(name.strip(), lists["namespaces"], lists["addresses"], rate, delay)


def _build_cluster(data: Any, ctx: _Ctx, default_name: str) -> Cluster:
    if not isinstance(data, dict):
        raise ctx.error(f"expected a table with 'servers', got {_type_name(data)}", ())
    for key in data:
        if not isinstance(key, str):
            raise ctx.error(_not_a_name(key, _TOP_KEYS), ())
        if key not in _TOP_KEYS:
            raise ctx.error(
                f"unknown key {quote(str(key))}{suggest(str(key), _TOP_KEYS)}; "
                f"valid keys: {', '.join(_TOP_KEYS)}",
                (key,),
            )
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise ctx.error(f"expected a non-empty string, got {_type_name(name)}", ("name",))
    profiles: list[TypeProfiles] = []
    types = _gpu_types(data["gpu_types"], ctx, profiles) if "gpu_types" in data else None
    defaults = _server_fields(data.get("defaults", {}), ("defaults",), ctx, SERVER_FIELDS)

    if "servers" not in data:
        raise InputError(
            "missing 'servers': add at least one [[servers]] entry with num_gpus",
            source=ctx.source,
            field="servers",
        )
    entries = data["servers"]
    if not isinstance(entries, list):
        raise ctx.error(
            f"expected a list of server tables, got {_type_name(entries)}", ("servers",)
        )
    if not entries:
        raise ctx.error("no servers: add at least one [[servers]] entry", ("servers",))

    servers: list[Server] = []
    total_gpus = 0
    for i, entry in enumerate(entries):
        path: Path_ = ("servers", i)
        fields = {**defaults, **_server_fields(entry, path, ctx, _ENTRY_KEYS)}
        count = fields.pop("count", 1)
        if "num_gpus" not in fields:
            raise ctx.error("missing 'num_gpus' (here or in [defaults])", path + ("num_gpus",))
        if types is not None:
            fields = _typed(
                fields, types, path, ctx, "gpu_type" not in entry and "gpu_type" in defaults
            )
        srv = Server(**fields)
        total_gpus += count * srv.num_gpus
        if total_gpus > MAX_GPUS:
            raise ctx.error(f"cluster has more than {MAX_GPUS} GPUs", path + ("count",))
        servers.extend([srv] * count)
    testbed = _testbed(data["testbed"], ctx, len(servers)) if "testbed" in data else None
    return Cluster(
        servers=tuple(servers),
        name=name.strip(),
        typed=types is not None,
        type_profiles=tuple(profiles),
        testbed=testbed,
    )


def _parse(text: str, source: str, fmt: str) -> Any:
    if fmt == "toml":
        return load_toml(text, source)
    if fmt == "yaml":
        return load_yaml(text, source)
    return load_json(text, source)


_FORMATS = {".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json"}


def read_cluster(path: str | Path) -> Cluster:
    """Read and validate a cluster file (``.toml``, ``.yaml``/``.yml`` or ``.json``).

    Raises :class:`InputError` naming the file, line and field of the first problem.
    """
    path = Path(path)
    source = str(path)
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"unknown cluster file type '{path.suffix}'; expected .toml, .yaml, .yml or .json",
            source=source,
        )
    text = read_text(path)
    if not text.strip():
        raise InputError("file is empty; expected a cluster with [[servers]]", source=source)
    ctx = _Ctx(source, text, fmt)
    return _build_cluster(_parse(text, source, fmt), ctx, default_name=path.stem)


def is_cluster_preset(spec: str) -> bool:
    """Whether ``spec`` names a cluster preset (``yu22-N`` included) rather than a file."""
    name = spec.strip().lower()
    return name in CLUSTER_PRESETS or bool(
        SIZED_PRESET.match(name) or GAVEL_PRESET.match(name) or SIA_SCALED.match(name)
    )


def load_cluster(spec: str, seed: int = 0) -> Cluster:
    """A preset by name (``wang20``, ``tiny``, ``yu22``, ``yu22-N``, ``gavel-V:P:K``, Sia's
    ``sia-64``, ``sia-homo-64``, ``sia-physical-44``, ``sia-64xN``; case-insensitive; seeded
    presets use ``seed``) or a cluster file path.

    Preset names win over a file of the same name; write ``./wang20`` to force the file.
    """
    name = spec.strip().lower()
    factory = CLUSTER_PRESETS.get(name)
    if factory is not None:
        return factory(seed)
    sized = SIZED_PRESET.match(name)
    if sized:
        digits = sized.group(1)
        n = int(digits) if len(digits) <= 9 else 0  # 5,000 digits: beyond int()'s limit
        if not 1 <= n <= 1000:
            raise InputError("yu22-N needs 1 ≤ N ≤ 1000 servers", field="cluster")
        return yu22_cluster(seed, n)
    gavel = GAVEL_PRESET.match(name)
    if gavel:
        counts = [int(x) for x in gavel.groups()]
        if sum(counts) > MAX_GPUS:
            raise InputError(f"gavel-V:P:K: more than {MAX_GPUS} GPUs", field="cluster")
        return gavel_cluster(*counts)
    scaled = SIA_SCALED.match(name)
    if scaled:
        factor = int(scaled.group(1))
        if not 1 <= factor <= MAX_GPUS // 64:
            raise InputError(f"sia-64xN needs 1 ≤ N ≤ {MAX_GPUS // 64}", field="cluster")
        return sia_scaled(factor)
    if path_exists(spec):
        return read_cluster(spec)
    presets = ", ".join([*CLUSTER_PRESETS, "yu22-N", "gavel-V:P:K", "sia-64xN"])
    hint = suggest(spec.strip().lower(), tuple(CLUSTER_PRESETS))
    raise InputError(
        f"unknown cluster {quote(spec)}{hint}: not a preset ({presets}) and no such file",
        field="cluster",
    )
