"""The package's layers (docs/design.md "Layers"), checked by reading every module's imports.

Bottom to top::

    0  errors, parsing, paths, progress, parallel, processes, live (the job-side client ``live/__init__``)
    1  perf
    2  core
    2  … and live.launchers (base, cgroup, local, ray, testbed: the cluster layer), live.channel
       (the per-iteration communication gate's socket server), testbed (network
       namespaces behind shaped links; its worker program at 0), tenancy (Kueue's quotas)
    3  policies, planning, workloads, live.jobfile, live.service.store
    4  api, backends, policy, settings, settings_scope, live.executor, live.backend,
       live.profile, live.run, the service's modules (live.service: server, engine, httpapi,
       history, export, remote, page), replay_profile, and the package façade
       ``ddlsched/__init__``
    5  experiments, config, sweep, report, check, replay
    6  cli

The rules, on the imports of every module under ``src/ddlsched`` (parsed with ``ast``, nothing
is imported):

(a) a module imports nothing of a higher layer;
(b) the modules import each other without a cycle;
(c) no module imports a private (``_name``) name of another module.

What counts as an import: every ``import``/``from … import`` statement, at module level or inside
a function (a lazy import still runs, so it counts for (a) and (b) alike). Only imports under
``if TYPE_CHECKING:`` are left out of (a) and (b): they never run, and annotations may name a
type of a higher layer. ``from pkg import name`` is an import of the module ``pkg.name`` when such
a module exists. Importing ``pkg.mod`` counts as an edge to ``pkg.mod`` alone, not to the package
``__init__``s Python runs on the way: those are façades that re-export their own modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "ddlsched"

#: top-level module or subpackage of ddlsched → layer (higher may import lower)
LAYERS: dict[str, int] = {
    "errors": 0,
    "parsing": 0,
    "paths": 0,
    "progress": 0,
    "parallel": 0,
    "processes": 0,
    "live": 0,  # ddlsched/live/__init__.py: the job-side client, standard library only;
    # every other ddlsched.live.NAME module needs its own "live.NAME" row (longest prefix wins)
    "perf": 1,
    "core": 2,
    "tenancy": 2,  # Kueue's quota model and scheduling cycle: errors and parsing only
    "core.admission": 2,  # the engine's quota layer: the one core module importing tenancy
    "policies": 3,
    "planning": 3,
    "workloads": 3,
    "live.jobfile": 3,
    "live.service.endpoints": 0,
    "live.service.store": 3,
    "": 4,  # ddlsched/__init__.py, the façade of the library
    "api": 4,
    "policy": 4,
    "settings": 4,
    "settings_scope": 4,
    "backends": 4,
    "extend": 4,
    "live.channel": 2,  # the per-iteration gate channel: a socket server over a gate it is given
    "live.launchers": 2,  # the cluster layer: processes, local and Ray launchers
    "live.launchers.base": 2,
    "live.launchers.cgroup": 2,
    "live.launchers.local": 2,
    "live.launchers.ray": 2,
    "live.launchers.testbed": 2,  # workers inside a testbed's namespaces (imports testbed)
    "testbed": 2,  # the network testbed (namespaces, shaping, measure): the cluster layer, so
    # that live.launchers may place workers in it
    "testbed.worker": 0,  # the all-reduce worker program: nothing of ddlsched
    "live.executor": 4,
    "live.backend": 4,
    "live.run": 4,
    "live.profile": 4,
    "live.planned": 4,  # model jobs live: an offline planner's plan (backends.planned)
    "replay_profile": 4,  # replay's profile path: a backend and its executor
    "live.service": 4,  # ``ddlsched serve``: server → httpapi, engine → store
    "live.service.server": 4,
    "live.service.engine": 4,
    "live.service.httpapi": 4,
    "live.service.history": 4,
    "live.service.export": 4,
    "live.service.remote": 4,
    "live.service.page": 4,
    "live.service.profiles": 4,  # serve with application-profile jobs (pollux, sia)
    "live.service.tenants": 4,  # serve --queues: the quota layer, tenants' tokens, why pending
    "experiments": 5,
    "config": 5,
    "sweep": 5,
    "report": 5,
    "check": 5,
    "replay": 5,
    "cli": 6,
    "warmup": 6,  # python -m ddlsched.warmup: a set-up entry point, like the CLI
    "__main__": 6,  # python -m ddlsched: the CLI
}


def _modules(package: Path) -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    mods = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def layer_of(module: str) -> int:
    """The layer of a dotted ``ddlsched…`` module name: the entry of its longest dotted prefix
    (``live.jobfile`` before ``live``; KeyError: a module with no layer)."""
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return LAYERS[key]
    return LAYERS[""] if not parts else LAYERS[parts[0]]


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` (its body, not its ``else``)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                ids.update(id(n) for n in ast.walk(stmt))
    return ids


def imports(mods: dict[str, Path]) -> list[tuple[str, str, str, int]]:
    """``(importer, imported module, imported name or "", line)`` for every runtime import of a
    ddlsched module by a ddlsched module."""
    found = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skip = _type_checking_nodes(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "ddlsched":
                        found.append((mod, alias.name, "", node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".")
                    if not is_package:
                        base.pop()
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "ddlsched":
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in mods:
                        found.append((mod, sub, "", node.lineno))
                    else:
                        found.append((mod, target, alias.name, node.lineno))
    return found


def upward_imports(mods: dict[str, Path]) -> list[str]:
    """Rule (a): runtime imports of a higher layer."""
    return [
        f"{a}:{line} imports {b} (layer {layer_of(b)} > {layer_of(a)})"
        for a, b, _, line in imports(mods)
        if layer_of(b) > layer_of(a)
    ]


def private_imports(mods: dict[str, Path]) -> list[str]:
    """Rule (c): ``from X import _name`` across modules (dunders such as __version__ are public)."""
    return [
        f"{a}:{line} imports {name} from {b}"
        for a, b, name, line in imports(mods)
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and a != b
    ]


def import_cycles(mods: dict[str, Path]) -> list[list[str]]:
    """Rule (b): the strongly connected components (more than one module, or a module importing
    itself) of the runtime import graph (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for a, b, _, _ in imports(mods):
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            comp = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                comp.append(top)
                if top == node:
                    break
            if len(comp) > 1 or node in graph.get(node, ()):
                cycles.append(sorted(comp))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


@pytest.fixture(scope="module")
def mods() -> dict[str, Path]:
    return _modules(PACKAGE)


def test_every_module_has_a_layer(mods):
    missing = sorted({m for m in mods if m.split(".")[1:2] and m.split(".")[1] not in LAYERS})
    assert not missing, f"give these a layer in LAYERS and docs/design.md: {missing}"


def test_every_live_module_has_its_own_layer(mods):
    """``live`` spans layers (the client at 0, the scheduler side higher): no module may fall
    back to the client's layer by its prefix alone."""
    missing = sorted(
        m for m in mods if m.startswith("ddlsched.live.") and m.split(".", 1)[1] not in LAYERS
    )
    assert not missing, f"give these a 'live.NAME' row in LAYERS: {missing}"


def test_no_runtime_import_of_a_higher_layer(mods):
    assert upward_imports(mods) == []


def test_no_import_cycles(mods):
    assert import_cycles(mods) == []


def test_no_private_names_across_modules(mods):
    assert private_imports(mods) == []


def test_tenancy_and_the_engine_meet_in_one_module(mods):
    """``tenancy`` imports nothing of the engine (``core``), and of ``core`` only
    ``core.admission`` (the adapter: engine state ↔ snapshot) imports ``tenancy``."""
    edges = {(a, b) for a, b, _, _ in imports(mods)}
    tenancy_to_core = sorted(
        (a, b)
        for a, b in edges
        if a.startswith("ddlsched.tenancy") and b.startswith("ddlsched.core")
    )
    core_to_tenancy = sorted(
        a for a, b in edges if a.startswith("ddlsched.core") and b.startswith("ddlsched.tenancy")
    )
    assert tenancy_to_core == []
    assert set(core_to_tenancy) <= {"ddlsched.core.admission"}


def test_the_checks_see_violations(tmp_path):
    """The checker itself: a made-up package with one violation of each rule."""
    pkg = tmp_path / "ddlsched"
    (pkg / "core").mkdir(parents=True)
    (pkg / "perf").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "perf" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from .b import x\n")
    (pkg / "core" / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..api import Settings\n"
        "def f():\n    from . import a\n"
    )
    (pkg / "perf" / "m.py").write_text("from ..core.a import _hidden\n")
    mods = _modules(pkg)
    assert upward_imports(mods) == ["ddlsched.perf.m:1 imports ddlsched.core.a (layer 2 > 1)"]
    assert import_cycles(mods) == [["ddlsched.core.a", "ddlsched.core.b"]]
    assert private_imports(mods) == ["ddlsched.perf.m:1 imports _hidden from ddlsched.core.a"]
