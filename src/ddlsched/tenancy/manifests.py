"""Reading ``--queues``: Kueue's own manifests (multi-document YAML of ResourceFlavor, Cohort,
ClusterQueue, LocalQueue, WorkloadPriorityClass and an optional Kueue ``Configuration``), or
the native TOML equivalent (docs/tenancy.md, "Input files").

Every problem is one :class:`~ddlsched.errors.InputError` naming the file, the document
(index and kind/name) and the field. Field names and defaults follow
``apis/kueue/v1beta1`` and ``apis/kueue/v1beta2`` (``*_types.go``) and
``apis/config/v1beta{1,2}/configuration_types.go`` at kubernetes-sigs/kueue
ff69552e79ad21652c36caa97038382e55625cf7: v1beta1 names a ClusterQueue's cohort ``cohort``,
v1beta2 ``cohortName``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError, quote, suggest
from ..parsing import StrictYamlLoader, check_depth, load_toml, yaml_input_error
from .model import (
    BORROW_POLICIES,
    FS_STRATEGIES,
    FUNGIBILITY_POLICIES,
    PREFERENCES,
    QUEUEING_STRATEGIES,
    RECLAIM_POLICIES,
    WITHIN_CQ_POLICIES,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    Preemption,
    QueuesConfig,
    ResourceGroup,
    ResourceQuota,
)
from .quantity import QuantityError, milli

KUEUE_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
CONFIG_VERSIONS = ("config.kueue.x-k8s.io/v1beta1", "config.kueue.x-k8s.io/v1beta2")
KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass")
#: the kueue API's ``metav1.Time``-free fields this reader skips without a word
_IGNORED_SPEC = {
    "namespaceSelector",
    "admissionChecks",
    "admissionChecksStrategy",
    "stopPolicy",
    "admissionScope",
    "nodeLabels",
    "nodeTaints",
    "tolerations",
    "topologyName",
    "concurrentAdmissionPolicy",
}
#: most documents in one file
MAX_DOCUMENTS = 100_000


def load_yaml_documents(text: str, source: str) -> list[Any]:
    """Every document of a multi-document YAML text, read with the strict loader (duplicate
    keys, alias bombs and deep nesting refused, one ``InputError`` with the line)."""
    docs: list[Any] = []
    try:
        for doc in yaml.load_all(text, Loader=StrictYamlLoader):  # noqa: S506 - SafeLoader subclass
            if doc is None:
                continue
            check_depth(doc, source, "YAML")
            docs.append(doc)
            if len(docs) > MAX_DOCUMENTS:
                raise InputError(f"more than {MAX_DOCUMENTS:,} documents", source=source)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as e:
        raise yaml_input_error(e, source) from None
    return docs


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=str(path)) from None


# ------------------------------------------------------------------------------ TOML
#: TOML array-of-tables name -> (kind, apiVersion)
_TOML_TABLES = {
    "resourceFlavor": ("ResourceFlavor", "kueue.x-k8s.io/v1beta2"),
    "cohort": ("Cohort", "kueue.x-k8s.io/v1beta2"),
    "clusterQueue": ("ClusterQueue", "kueue.x-k8s.io/v1beta2"),
    "localQueue": ("LocalQueue", "kueue.x-k8s.io/v1beta2"),
    "workloadPriorityClass": ("WorkloadPriorityClass", "kueue.x-k8s.io/v1beta2"),
}


def toml_documents(data: Any, source: str) -> list[dict[str, Any]]:
    """The TOML form as the documents the YAML form would have: ``[[clusterQueue]]`` tables
    with ``name`` and the v1beta2 ``spec`` fields at their top level (``value`` for a priority
    class), and an optional ``[configuration]`` table (``fairSharing``)."""
    if not isinstance(data, dict):
        raise InputError("expected tables", source=source)
    docs: list[dict[str, Any]] = []
    for key, value in data.items():
        if key == "configuration":
            if not isinstance(value, dict):
                raise InputError("expected a table", source=source, field=key)
            docs.append({"apiVersion": CONFIG_VERSIONS[1], "kind": "Configuration", **value})
            continue
        if key not in _TOML_TABLES:
            raise InputError(
                f"unknown table {quote(key)}{suggest(key, [*_TOML_TABLES, 'configuration'])}",
                source=source,
                field=key,
            )
        kind, version = _TOML_TABLES[key]
        if not isinstance(value, list):
            raise InputError(f"expected [[{key}]] tables", source=source, field=key)
        for i, table in enumerate(value):
            if not isinstance(table, dict):
                raise InputError("expected a table", source=source, field=f"{key}[{i}]")
            rest = dict(table)
            name = rest.pop("name", None)
            doc: dict[str, Any] = {"apiVersion": version, "kind": kind, "metadata": {"name": name}}
            if kind == "WorkloadPriorityClass":
                doc.update(rest)
            else:
                doc["spec"] = rest
            docs.append(doc)
    return docs


# ------------------------------------------------------------------------------ checks
class _Doc:
    """One document: says where it is in every error."""

    def __init__(self, source: str, index: int, doc: Any) -> None:
        self.source = source
        self.index = index
        self.doc = doc
        self.kind = doc.get("kind") if isinstance(doc, dict) else None
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        self.name = meta.get("name") if isinstance(meta, dict) else None

    def error(self, message: str, field: str | None = None) -> InputError:
        what = f"document {self.index + 1}"
        if isinstance(self.kind, str) and self.kind.isprintable():
            what += f" ({self.kind}"
            if isinstance(self.name, str):
                what += f" {quote(self.name)}"
            what += ")"
        return InputError(f"{what}: {message}", source=self.source, field=field)

    def table(self, value: Any, field: str, *, optional: bool = True) -> dict[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.error("expected a mapping", field)
        return value

    def items(self, value: Any, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error("expected a list", field)
        return value

    def text(self, value: Any, field: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value or not value.isprintable():
            raise self.error("expected a non-empty name", field)
        return value

    def choice(self, value: Any, field: str, choices: tuple[str, ...], default: str) -> str:
        if value is None:
            return default
        if value not in choices:
            shown = quote(value) if isinstance(value, str) else repr(value)
            raise self.error(f"{shown} is not one of {', '.join(choices)}", field)
        return value

    def quantity(self, value: Any, field: str) -> int:
        try:
            amount = milli(value)
        except QuantityError as e:
            raise self.error(str(e), field) from None
        if amount < 0:
            raise self.error("must be ≥ 0 (a quota cannot be negative)", field)
        return amount

    def weight(self, spec: dict[str, Any], field: str) -> float:
        fs = self.table(spec.get("fairSharing"), field)
        if fs.get("weight") is None:
            return 1.0
        return self.quantity(fs["weight"], field + ".weight") / 1000.0

    def only(self, mapping: dict[str, Any], allowed: set[str], field: str) -> None:
        for key in mapping:
            if key not in allowed and key not in _IGNORED_SPEC:
                shown = quote(str(key))
                raise self.error(
                    f"unknown field {shown}{suggest(str(key), allowed)}",
                    f"{field}.{key}" if field else str(key),
                )


def _resource_groups(d: _Doc, spec: dict[str, Any], flavors: set[str]) -> tuple[ResourceGroup, ...]:
    """``spec.resourceGroups``: flavors must exist, list every covered resource once; a
    resource or a flavor belongs to one group (Kueue's validation webhook)."""
    groups = []
    seen_res: set[str] = set()
    seen_flavors: set[str] = set()
    for g, rg in enumerate(d.items(spec.get("resourceGroups"), "spec.resourceGroups")):
        where = f"spec.resourceGroups[{g}]"
        rg = d.table(rg, where, optional=False)
        d.only(rg, {"coveredResources", "flavors"}, where)
        covered = []
        for r, res in enumerate(d.items(rg.get("coveredResources"), where + ".coveredResources")):
            name = d.text(res, f"{where}.coveredResources[{r}]")
            assert name is not None
            if name in seen_res:
                raise d.error(
                    f"resource {quote(name)} is covered twice", f"{where}.coveredResources[{r}]"
                )
            seen_res.add(name)
            covered.append(name)
        if not covered:
            raise d.error("needs at least one resource", where + ".coveredResources")
        flavor_names = []
        quotas: dict[tuple[str, str], ResourceQuota] = {}
        for f, fq in enumerate(d.items(rg.get("flavors"), where + ".flavors")):
            fwhere = f"{where}.flavors[{f}]"
            fq = d.table(fq, fwhere, optional=False)
            d.only(fq, {"name", "resources"}, fwhere)
            fname = d.text(fq.get("name"), fwhere + ".name")
            assert fname is not None
            if fname not in flavors:
                raise d.error(
                    f"unknown ResourceFlavor {quote(fname)}{suggest(fname, flavors)}",
                    fwhere + ".name",
                )
            if fname in seen_flavors:
                raise d.error(f"flavor {quote(fname)} is listed twice", fwhere + ".name")
            seen_flavors.add(fname)
            flavor_names.append(fname)
            listed = set()
            for r, rq in enumerate(d.items(fq.get("resources"), fwhere + ".resources")):
                rwhere = f"{fwhere}.resources[{r}]"
                rq = d.table(rq, rwhere, optional=False)
                d.only(rq, {"name", "nominalQuota", "borrowingLimit", "lendingLimit"}, rwhere)
                rname = d.text(rq.get("name"), rwhere + ".name")
                assert rname is not None
                if rname not in covered:
                    raise d.error(
                        f"resource {quote(rname)} is not in coveredResources", rwhere + ".name"
                    )
                if rname in listed:
                    raise d.error(f"resource {quote(rname)} is listed twice", rwhere + ".name")
                listed.add(rname)
                nominal = d.quantity(rq.get("nominalQuota", 0), rwhere + ".nominalQuota")
                bl = rq.get("borrowingLimit")
                ll = rq.get("lendingLimit")
                quotas[(fname, rname)] = ResourceQuota(
                    nominal,
                    None if bl is None else d.quantity(bl, rwhere + ".borrowingLimit"),
                    None if ll is None else d.quantity(ll, rwhere + ".lendingLimit"),
                )
            missing = [r for r in covered if r not in listed]
            if missing:
                raise d.error(
                    f"flavor {quote(fname)} has no quota for {quote(missing[0])}",
                    fwhere + ".resources",
                )
        if not flavor_names:
            raise d.error("needs at least one flavor", where + ".flavors")
        groups.append(ResourceGroup(tuple(covered), tuple(flavor_names), quotas))
    return tuple(groups)


def _preemption(d: _Doc, spec: dict[str, Any]) -> Preemption:
    p = d.table(spec.get("preemption"), "spec.preemption")
    d.only(
        p, {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"}, "spec.preemption"
    )
    b = d.table(p.get("borrowWithinCohort"), "spec.preemption.borrowWithinCohort")
    d.only(b, {"policy", "maxPriorityThreshold"}, "spec.preemption.borrowWithinCohort")
    threshold = b.get("maxPriorityThreshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int) or abs(threshold) > 2**31
    ):
        raise d.error(
            "expected an integer", "spec.preemption.borrowWithinCohort.maxPriorityThreshold"
        )
    return Preemption(
        d.choice(
            p.get("withinClusterQueue"),
            "spec.preemption.withinClusterQueue",
            WITHIN_CQ_POLICIES,
            "Never",
        ),
        d.choice(
            p.get("reclaimWithinCohort"),
            "spec.preemption.reclaimWithinCohort",
            RECLAIM_POLICIES,
            "Never",
        ),
        d.choice(
            b.get("policy"), "spec.preemption.borrowWithinCohort.policy", BORROW_POLICIES, "Never"
        ),
        threshold,
    )


def _fungibility(d: _Doc, spec: dict[str, Any], v1beta1: bool) -> FlavorFungibility:
    f = d.table(spec.get("flavorFungibility"), "spec.flavorFungibility")
    d.only(f, {"whenCanBorrow", "whenCanPreempt", "preference"}, "spec.flavorFungibility")
    borrow = f.get("whenCanBorrow")
    preempt = f.get("whenCanPreempt")
    if v1beta1:  # v1beta1's Borrow/Preempt: stop at this flavor (MayStopSearch)
        borrow = "MayStopSearch" if borrow == "Borrow" else borrow
        preempt = "MayStopSearch" if preempt == "Preempt" else preempt
    return FlavorFungibility(
        d.choice(
            borrow, "spec.flavorFungibility.whenCanBorrow", FUNGIBILITY_POLICIES, "MayStopSearch"
        ),
        d.choice(
            preempt, "spec.flavorFungibility.whenCanPreempt", FUNGIBILITY_POLICIES, "TryNextFlavor"
        ),
        None
        if f.get("preference") is None
        else d.choice(f.get("preference"), "spec.flavorFungibility.preference", PREFERENCES, ""),
    )


def parse_documents(docs: list[Any], source: str) -> QueuesConfig:
    """The :class:`QueuesConfig` of Kueue documents (see the module docstring)."""
    wrapped = [_Doc(source, i, doc) for i, doc in enumerate(docs)]
    by_kind: dict[str, list[_Doc]] = {k: [] for k in (*KINDS, "Configuration")}
    for d in wrapped:
        if not isinstance(d.doc, dict):
            raise d.error("expected a mapping (a Kueue object)")
        version, kind = d.doc.get("apiVersion"), d.kind
        if kind == "Configuration":
            if version not in CONFIG_VERSIONS:
                raise d.error(
                    f"unsupported apiVersion {quote(str(version))} for a Configuration "
                    f"(use {' or '.join(CONFIG_VERSIONS)})",
                    "apiVersion",
                )
        elif kind in KINDS:
            if version not in KUEUE_VERSIONS:
                raise d.error(
                    f"unsupported apiVersion {quote(str(version))} "
                    f"(use {' or '.join(KUEUE_VERSIONS)})",
                    "apiVersion",
                )
            d.text(d.name, "metadata.name")
        else:
            shown = quote(kind) if isinstance(kind, str) else repr(kind)
            valid = [*KINDS, "Configuration"]
            hint = suggest(kind, valid) if isinstance(kind, str) else ""
            raise d.error(f"unsupported kind {shown}{hint} (use one of {', '.join(valid)})", "kind")
        by_kind[kind].append(d)
    for kind, ds in by_kind.items():
        seen: dict[str, int] = {}
        for d in ds:
            if kind == "Configuration":
                if len(ds) > 1:
                    raise d.error("more than one Configuration")
                continue
            assert isinstance(d.name, str)
            if d.name in seen:
                raise d.error(
                    f"duplicate {kind} name {quote(d.name)} (also document {seen[d.name] + 1})",
                    "metadata.name",
                )
            seen[d.name] = d.index

    flavors = {d.name for d in by_kind["ResourceFlavor"] if isinstance(d.name, str)}
    priorities: dict[str, int] = {}
    for d in by_kind["WorkloadPriorityClass"]:
        value = d.doc.get("value")
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 10**9:
            raise d.error("expected an integer priority (at most 1,000,000,000)", "value")
        priorities[str(d.name)] = value

    cohorts: dict[str, Cohort] = {}
    declared = {str(d.name) for d in by_kind["Cohort"]}
    for d in by_kind["Cohort"]:
        spec = d.table(d.doc.get("spec"), "spec")
        d.only(spec, {"parentName", "resourceGroups", "fairSharing"}, "spec")
        parent = d.text(spec.get("parentName"), "spec.parentName", optional=True)
        if parent is not None and parent not in declared:
            raise d.error(
                f"unknown Cohort {quote(parent)}{suggest(parent, declared)}", "spec.parentName"
            )
        cohorts[str(d.name)] = Cohort(
            str(d.name),
            parent,
            _resource_groups(d, spec, flavors),
            d.weight(spec, "spec.fairSharing"),
        )
    for d in by_kind["Cohort"]:  # a cycle of parents (Kueue: ErrCohortHasCycle)
        path = [str(d.name)]
        node = cohorts[str(d.name)].parent
        while node is not None:
            if node in path:
                raise d.error(
                    f"cohort cycle: {' → '.join([*path[path.index(node) :], node])}",
                    "spec.parentName",
                )
            path.append(node)
            node = cohorts[node].parent

    cqs: dict[str, ClusterQueue] = {}
    for d in by_kind["ClusterQueue"]:
        spec = d.table(d.doc.get("spec"), "spec")
        v1beta1 = d.doc.get("apiVersion") == KUEUE_VERSIONS[0]
        cohort_field = "cohort" if v1beta1 else "cohortName"
        d.only(
            spec,
            {
                "resourceGroups",
                cohort_field,
                "queueingStrategy",
                "preemption",
                "flavorFungibility",
                "fairSharing",
            },
            "spec",
        )
        cohort = d.text(spec.get(cohort_field), "spec." + cohort_field, optional=True)
        if cohort is not None and declared and cohort not in declared:
            raise d.error(
                f"unknown Cohort {quote(cohort)}{suggest(cohort, declared)}", "spec." + cohort_field
            )
        if cohort is not None and cohort not in cohorts:
            cohorts[cohort] = Cohort(cohort)  # implicit, as Kueue creates it
        cqs[str(d.name)] = ClusterQueue(
            str(d.name),
            cohort,
            _resource_groups(d, spec, flavors),
            d.choice(
                spec.get("queueingStrategy"),
                "spec.queueingStrategy",
                QUEUEING_STRATEGIES,
                "BestEffortFIFO",
            ),
            _preemption(d, spec),
            _fungibility(d, spec, v1beta1),
            d.weight(spec, "spec.fairSharing"),
        )

    local: dict[str, str] = {}
    for d in by_kind["LocalQueue"]:
        spec = d.table(d.doc.get("spec"), "spec")
        d.only(spec, {"clusterQueue", "fairSharing"}, "spec")
        target = d.text(spec.get("clusterQueue"), "spec.clusterQueue")
        assert target is not None
        if target not in cqs:
            raise d.error(
                f"unknown ClusterQueue {quote(target)}{suggest(target, cqs)}", "spec.clusterQueue"
            )
        local[str(d.name)] = target

    fair, strategies = False, FS_STRATEGIES
    for d in by_kind["Configuration"]:
        fs = d.doc.get("fairSharing")
        if fs is not None:
            fs = d.table(fs, "fairSharing")
            v1beta1 = d.doc.get("apiVersion") == CONFIG_VERSIONS[0]
            fair = bool(fs.get("enable")) if v1beta1 else True
            listed = fs.get("preemptionStrategies")
            if listed is not None:
                allowed = [
                    ["LessThanOrEqualToFinalShare"],
                    ["LessThanInitialShare"],
                    list(FS_STRATEGIES),
                ]
                if listed not in allowed:
                    raise d.error(
                        "preemptionStrategies must be one of " + "; ".join(str(a) for a in allowed),
                        "fairSharing.preemptionStrategies",
                    )
                strategies = tuple(listed)
    return QueuesConfig(frozenset(flavors), cqs, cohorts, local, priorities, fair, strategies)


def load_queues(path: str | Path) -> QueuesConfig:
    """``--queues FILE``: ``.toml`` is the native form, anything else Kueue's YAML."""
    source = str(path)
    text = read_text(path)
    if source.endswith(".toml"):
        docs: list[Any] = toml_documents(load_toml(text, source), source)
    else:
        docs = load_yaml_documents(text, source)
    if not docs:
        raise InputError("no documents", source=source)
    return parse_documents(docs, source)


def iter_names(config: QueuesConfig) -> Iterator[str]:
    yield from config.cluster_queues
    yield from config.local_queues


__all__ = ["load_queues", "parse_documents", "load_yaml_documents"]
