"""User policies by name: ``register_policy`` for library code, ``MODULE:FACTORY`` or
``FILE.py:FACTORY`` for the command line and experiment configs (resolved in every process)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import InputError, suggest

#: names the built-in ``--policy`` values take besides the presets and planners
PROFILE_POLICY_NAMES = ("tiresias", "fifo", "sjf", "sjf-ffs", "sjf-bsbf", "pollux")


@dataclass(frozen=True)
class Registered:
    """A user policy registered under a name: ``factory()`` builds a fresh policy per run."""

    name: str
    factory: Callable[[], Any]
    description: str = ""


_REGISTRY: dict[str, Registered] = {}
_FILE_MODULES: dict[Path, ModuleType] = {}


def builtin_policy_names() -> list[str]:
    """Every built-in ``--policy`` name: presets, planners, application-profile policies."""
    from ..planning import PLANNER_NAMES
    from .registry import PRESETS

    return [*PRESETS, *PLANNER_NAMES, *PROFILE_POLICY_NAMES]


def register_policy(
    name: str, factory: Callable[[], Any], *, description: str = "", replace: bool = False
) -> Callable[[], Any]:
    """Make ``simulate(..., name)`` build its policy with ``factory()`` (a fresh one per run).

    Names are case-insensitive, may not contain ``:`` and may not shadow a built-in policy;
    registering a taken name again needs ``replace=True``. Returns ``factory`` (decorator use).
    """
    key = name.lower()
    if not key or ":" in key:
        raise ValueError(f"policy name {name!r} must be non-empty and contain no ':'")
    if key in builtin_policy_names():
        raise ValueError(f"policy name {name!r} is a built-in policy")
    if key in _REGISTRY and not replace:
        raise ValueError(f"policy {name!r} is already registered (pass replace=True)")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {factory!r}")
    _REGISTRY[key] = Registered(key, factory, description)
    return factory


def unregister_policy(name: str) -> None:
    """Forget a registered policy (no error if it is not registered)."""
    _REGISTRY.pop(name.lower(), None)


def registered_policies() -> dict[str, Registered]:
    """The registered user policies by name (a copy)."""
    return dict(_REGISTRY)


def check_policy(obj: Any, where: str) -> Any:
    """``obj`` if it has what the engine calls (``name``, ``attach``, ``schedule``)."""
    if isinstance(obj, type):
        raise InputError(
            f"{obj.__name__} is a class: pass a policy object", source=where, field="policy"
        )
    missing = [a for a in ("name", "attach", "schedule") if not hasattr(obj, a)]
    if getattr(obj, "interval", None) and not hasattr(obj, "on_round"):
        missing.append("on_round (it sets interval)")
    if missing:
        raise InputError(
            f"{type(obj).__name__} object is not a policy: missing {', '.join(missing)}",
            source=where,
            field="policy",
        )
    return obj


def _load_file(path: Path) -> ModuleType:
    """Execute a Python file once per process and return it as a module."""
    path = path.resolve()
    mod = _FILE_MODULES.get(path)
    if mod is None:
        name = f"_ddlsched_plugin_{len(_FILE_MODULES)}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses and pickling look the module up here
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        _FILE_MODULES[path] = mod
    return mod


def load_factory(spec: str) -> Any:
    """The object named by ``MODULE:NAME`` or ``FILE.py:NAME`` (raises InputError if absent)."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise InputError(f"expected MODULE:NAME or FILE.py:NAME, got {spec!r}", field="policy")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise InputError("no such file", source=where, field="policy")
        mod = _load_file(path)
    else:
        try:
            mod = importlib.import_module(where)
        except ModuleNotFoundError as e:
            raise InputError(f"cannot import module {where!r}: {e}", field="policy") from None
    if not hasattr(mod, attr):
        public = [n for n in vars(mod) if not n.startswith("_")]
        raise InputError(f"no name {attr!r}{suggest(attr, public)}", source=where, field="policy")
    return getattr(mod, attr)


def resolve_policy(policy: Any) -> Any | None:
    """The user policy ``policy`` stands for, or None for a built-in name.

    ``policy`` is a policy object (used as is), ``MODULE:NAME`` / ``FILE.py:NAME`` (``NAME`` is
    a zero-argument factory or class, called once per run, or a policy object), or a name
    given to ``register_policy``.
    """
    if not isinstance(policy, str):
        return check_policy(policy, type(policy).__name__)
    if ":" in policy:
        obj = load_factory(policy)
        return check_policy(obj() if callable(obj) else obj, policy)
    reg = _REGISTRY.get(policy.lower())
    if reg is not None:
        return check_policy(reg.factory(), policy)
    return None
