"""Reading ``--workloads``: the snapshot a cycle decides on (docs/tenancy.md,
"Input files"). A YAML (or ``.toml``) mapping with ``admitted:`` and ``pending:`` lists of
workloads: ``name``, ``queue`` (a ClusterQueue or a LocalQueue), ``priority`` (an integer or a
WorkloadPriorityClass name; default 0), ``created`` (seconds, default 0), ``admitted_at``
(admitted ones), ``podsets: [{name, count, requests: {RESOURCE: quantity}, flavors:
{RESOURCE: FLAVOR}}]`` (flavors for admitted workloads only)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import InputError, quote, suggest
from ..parsing import load_json, load_toml, load_yaml
from .manifests import read_text
from .model import PodSet, QueuesConfig, Snapshot, Workload
from .quantity import QuantityError, milli

_WORKLOAD_KEYS = {"name", "queue", "priority", "created", "admitted_at", "podsets"}
_PODSET_KEYS = {"name", "count", "requests", "flavors"}
MAX_POD_COUNT = 10**9


def _parse_workload(
    raw: Any, where: str, source: str, config: QueuesConfig, admitted: bool
) -> Workload:
    def err(message: str, field: str | None = None) -> InputError:
        return InputError(f"{where}: {message}", source=source, field=field)

    if not isinstance(raw, dict):
        raise err("expected a mapping (a workload)")
    for key in raw:
        if key not in _WORKLOAD_KEYS:
            raise err(
                f"unknown field {quote(str(key))}{suggest(str(key), _WORKLOAD_KEYS)}", str(key)
            )
    name = raw.get("name")
    if not isinstance(name, str) or not name or not name.isprintable():
        raise err("expected a non-empty name", "name")
    where = f"{where} ({quote(name)})"
    queue = raw.get("queue")
    if not isinstance(queue, str):
        raise err("expected the name of a ClusterQueue or LocalQueue", "queue")
    if queue in config.cluster_queues:
        cq_name = queue
    elif queue in config.local_queues:
        cq_name = config.local_queues[queue]
    else:
        known = [*config.cluster_queues, *config.local_queues]
        raise err(f"unknown queue {quote(queue)}{suggest(queue, known)}", "queue")
    cq = config.cluster_queues[cq_name]
    prio = raw.get("priority", 0)
    if isinstance(prio, str):
        if prio not in config.priority_classes:
            raise err(
                f"unknown WorkloadPriorityClass {quote(prio)}"
                f"{suggest(prio, config.priority_classes)}",
                "priority",
            )
        prio = config.priority_classes[prio]
    elif isinstance(prio, bool) or not isinstance(prio, int) or abs(prio) > 2**31:
        raise err("expected an integer or a WorkloadPriorityClass name", "priority")
    times = {}
    for key in ("created", "admitted_at"):
        value = raw.get(key)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise err("expected a number of seconds", key)
        times[key] = float(value)
    if "admitted_at" in times and not admitted:
        raise err("only admitted workloads have admitted_at", "admitted_at")
    podsets = []
    raw_podsets = raw.get("podsets")
    if not isinstance(raw_podsets, list) or not raw_podsets:
        raise err("expected a non-empty list of podsets", "podsets")
    seen = set()
    for i, ps in enumerate(raw_podsets):
        pw = f"podsets[{i}]"
        if not isinstance(ps, dict):
            raise err("expected a mapping (a podset)", pw)
        for key in ps:
            if key not in _PODSET_KEYS:
                raise err(
                    f"unknown field {quote(str(key))}{suggest(str(key), _PODSET_KEYS)}",
                    f"{pw}.{key}",
                )
        ps_name = ps.get("name", "main")
        if not isinstance(ps_name, str) or not ps_name:
            raise err("expected a non-empty name", pw + ".name")
        if ps_name in seen:
            raise err(f"duplicate podset name {quote(ps_name)}", pw + ".name")
        seen.add(ps_name)
        count = ps.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_POD_COUNT:
            raise err(f"expected a pod count from 1 to {MAX_POD_COUNT:,}", pw + ".count")
        requests_raw = ps.get("requests")
        if not isinstance(requests_raw, dict) or not requests_raw:
            raise err("expected a mapping of resource to quantity", pw + ".requests")
        requests = {}
        for res, q in requests_raw.items():
            field = f"{pw}.requests.{res}"
            if not any(rg_covers(c, str(res)) for c in config.cluster_queues.values()):
                raise err(f"no ClusterQueue covers resource {quote(str(res))}", field)
            try:
                amount = milli(q)
            except QuantityError as e:
                raise err(str(e), field) from None
            if amount < 0:
                raise err("must be ≥ 0", field)
            requests[str(res)] = amount
        flavors_raw = ps.get("flavors")
        flavors: dict[str, str] = {}
        if flavors_raw is not None:
            if not admitted:
                raise err("only admitted workloads have flavors", pw + ".flavors")
            if not isinstance(flavors_raw, dict):
                raise err("expected a mapping of resource to flavor", pw + ".flavors")
            for res, flavor in flavors_raw.items():
                field = f"{pw}.flavors.{res}"
                if not isinstance(flavor, str) or flavor not in config.flavors:
                    shown = quote(flavor) if isinstance(flavor, str) else repr(flavor)
                    hint = suggest(flavor, config.flavors) if isinstance(flavor, str) else ""
                    raise err(f"unknown ResourceFlavor {shown}{hint}", field)
                rg = cq.group_of(str(res))
                if rg is None or flavor not in rg.flavors:
                    raise err(
                        f"ClusterQueue {quote(cq_name)} has no flavor {quote(flavor)} "
                        f"for {quote(str(res))}",
                        field,
                    )
                flavors[str(res)] = flavor
        if admitted:
            for res, amount in requests.items():
                if amount > 0 and res not in flavors:
                    raise err(
                        f"an admitted workload needs a flavor for {quote(res)}", f"{pw}.flavors"
                    )
        podsets.append(PodSet(ps_name, count, requests, flavors))
    return Workload(
        name,
        cq_name,
        tuple(podsets),
        prio,
        times.get("created", 0.0),
        times.get("admitted_at") if admitted else None,
    )


def rg_covers(cq: Any, res: str) -> bool:
    return res == "pods" or cq.group_of(res) is not None


def parse_snapshot(data: Any, source: str, config: QueuesConfig) -> Snapshot:
    """The :class:`Snapshot` of a workloads mapping; names are unique across both lists."""
    if not isinstance(data, dict):
        raise InputError("expected a mapping with 'admitted' and 'pending' lists", source=source)
    for key in data:
        if key not in ("admitted", "pending"):
            raise InputError(
                f"unknown key {quote(str(key))} (use 'admitted' and 'pending')",
                source=source,
                field=str(key),
            )
    out: dict[str, list[Workload]] = {"admitted": [], "pending": []}
    seen: dict[str, str] = {}
    for key in ("admitted", "pending"):
        items = data.get(key) or []
        if not isinstance(items, list):
            raise InputError("expected a list of workloads", source=source, field=key)
        for i, raw in enumerate(items):
            wl = _parse_workload(raw, f"{key}[{i}]", source, config, key == "admitted")
            if wl.name in seen:
                raise InputError(
                    f"{key}[{i}]: duplicate workload name {quote(wl.name)} (also {seen[wl.name]})",
                    source=source,
                    field="name",
                )
            seen[wl.name] = f"{key}[{i}]"
            out[key].append(wl)
    return Snapshot(tuple(out["admitted"]), tuple(out["pending"]))


def load_snapshot(path: str | Path, config: QueuesConfig) -> Snapshot:
    """``--workloads FILE``: YAML; TOML for ``.toml``; JSON (a subset of YAML, read ten times
    faster) for ``.json``."""
    source = str(path)
    text = read_text(path)
    if source.endswith(".toml"):
        data = load_toml(text, source)
    elif source.endswith(".json"):
        data = load_json(text, source)
    else:
        data = load_yaml(text, source)
    return parse_snapshot(data, source, config)
