"""The one registry of policies by name, built-in and user alike (``register_policy``), and
``MODULE:FACTORY`` / ``FILE.py:FACTORY`` for the command line and experiment configs (resolved
in every process). The built-in policies register themselves in ``policies/builtin.py``."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import InputError, PolicyError, ScheduleError, suggest
from ..paths import is_file

# the job kinds of a workload (``kinds=`` of ``register_policy``), re-exported from .kinds
from .kinds import JOB_KINDS, MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS  # noqa: F401


@dataclass(frozen=True)
class Registered:
    """A policy registered under a name. A user policy's ``factory()`` builds a fresh policy
    per run; a built-in's ``factory(settings, placement)`` builds it from the run's
    ``Settings`` (and ``--placement``, for policies that take one).

    ``kinds``: the job kinds it runs on; ``places_jobs``: it places jobs itself (planners,
    profile and trace policies), so ``--placement`` does not apply; ``shares_gpus``: it puts
    two jobs on one GPU; ``placement``: the default placement of a composed preset;
    ``settings``: the ``--set`` keys only this policy (and others naming them) reads, so that
    ``settings_scope`` knows where they apply."""

    name: str
    factory: Callable[..., Any]
    description: str = ""
    kinds: tuple[str, ...] = JOB_KINDS
    places_jobs: bool = False
    shares_gpus: bool = False
    placement: str | None = None
    builtin: bool = False
    settings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyOrigin:
    """Where a user policy comes from, so that its failures are one line naming it: ``label``
    is what the message names (the file as given, ``module NAME`` or ``policy 'NAME'``),
    ``path`` the file whose line numbers the message quotes (None: no line)."""

    label: str
    path: str | None = None

    def _innermost(self, exc: BaseException) -> traceback.FrameSummary | None:
        """The innermost frame of ``path`` in ``exc``'s traceback (None if it is not there)."""
        if self.path is None:
            return None
        found = None
        for frame in traceback.extract_tb(exc.__traceback__):
            name = frame.filename
            if name == self.path or (
                not name.startswith("<") and str(Path(name).resolve()) == self.path
            ):
                found = frame
        return found

    def _line(self, exc: BaseException) -> int | None:
        frame = self._innermost(exc)
        return None if frame is None else frame.lineno

    def hook_of(self, exc: BaseException) -> str | None:
        """The function of ``path`` innermost in ``exc``'s traceback (None: no code of the
        policy's file was running, so ``exc`` is not the policy's)."""
        frame = self._innermost(exc)
        return None if frame is None else frame.name

    def error(self, exc: BaseException, during: str) -> InputError:
        """The one-line error for ``exc`` raised by the policy ``during`` a step (``import``,
        ``the factory``, ``schedule``, ``on_round`` …); chain it with ``from exc``."""
        line = self._line(exc)
        if isinstance(exc, ScheduleError):
            return ScheduleError(exc.message, source=self.label, line=line)
        if isinstance(exc, SyntaxError) and during == "import":
            return PolicyError(
                f"syntax error: {exc.msg}", source=self.label, line=exc.lineno or line
            )
        where = "on import" if during == "import" else f"in {during}"
        if isinstance(exc, SystemExit):
            what = f"called sys.exit({exc.code!r}) {where}"
        else:
            text = str(exc).strip().splitlines()
            detail = f": {text[0]}{' …' if len(text) > 1 else ''}" if text else ""
            what = f"raised {type(exc).__name__} {where}{detail}"
        return PolicyError(f"policy {what}", source=self.label, line=line)


def origin_of(spec: str) -> PolicyOrigin:
    """The ``PolicyOrigin`` of a ``--policy`` value naming a user policy."""
    where, _, _ = spec.rpartition(":")
    if where.endswith(".py"):
        return PolicyOrigin(where, str(Path(where).resolve()))
    if where:
        return PolicyOrigin(f"module {where}", _module_file(where))
    reg = _user_entry(spec)
    try:
        path = inspect.getsourcefile(reg.factory) if reg is not None else None
    except TypeError:  # a builtin or a callable object without a source file
        path = None
    return PolicyOrigin(f"policy '{spec}'", str(Path(path).resolve()) if path else None)


_REGISTRY: dict[str, Registered] = {}
_FILE_MODULES: dict[Path, ModuleType] = {}


_BUILTINS_LOADED = False


def _ensure_builtins() -> None:
    """Register the built-in policies on first use (``policies/builtin.py``; importing it is
    cheap: every factory imports its policy's module when it is called)."""
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        from .builtin import register_builtins

        register_builtins(register_policy)


def all_policies() -> dict[str, Registered]:
    """Every registered policy by name, built-ins first in registration order (a copy)."""
    _ensure_builtins()
    return dict(_REGISTRY)


def policy_entry(name: str) -> Registered | None:
    """The registry entry of ``name`` (case-insensitive; None if nothing is registered)."""
    _ensure_builtins()
    return _REGISTRY.get(name.lower())


def _user_entry(name: str) -> Registered | None:
    entry = policy_entry(name)
    return entry if entry is not None and not entry.builtin else None


def builtin_policy_names() -> list[str]:
    """Every built-in ``--policy`` name: presets, planners, application-profile policies."""
    return [n for n, e in all_policies().items() if e.builtin]


def builtin_policies_for(kind: str) -> list[str]:
    """The built-in ``--policy`` names that run jobs of ``kind`` (registration order)."""
    return [n for n, e in all_policies().items() if e.builtin and kind in e.kinds]


def builtin_reads(policy: str | None, setting: str) -> bool:
    """Whether the built-in policy ``policy`` reads ``setting`` (its entry's ``settings``)."""
    entry = policy_entry(policy) if policy else None
    return entry is not None and entry.builtin and setting in entry.settings


def __getattr__(name: str) -> Any:
    if name == "PROFILE_POLICY_NAMES":  # the built-in policies of application-profile jobs
        return tuple(builtin_policies_for(PROFILE_JOBS))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_policy(
    name: str,
    factory: Callable[..., Any],
    *,
    description: str = "",
    replace: bool = False,
    kinds: Sequence[str] = JOB_KINDS,
    places_jobs: bool = False,
    shares_gpus: bool = False,
    placement: str | None = None,
    builtin: bool = False,
    settings: Sequence[str] = (),
) -> Callable[..., Any]:
    """Make ``simulate(..., name)`` build its policy with ``factory()`` (a fresh one per run).

    Names are case-insensitive, may not contain ``:`` and may not shadow a built-in policy;
    registering a taken name again needs ``replace=True``. ``kinds`` (``MODEL_JOBS``,
    ``PROFILE_JOBS``, ``TRACE_JOBS``; default all) are the job kinds the policy runs on: a
    run on another kind is an error naming them; ``description`` is what ``ddlsched list``
    shows. ``builtin=True`` is for ``policies/builtin.py`` (the factory then takes the run's
    settings and placement). Returns ``factory`` (decorator use).
    """
    key = name.lower()
    if not key or ":" in key:
        raise ValueError(f"policy name {name!r} must be non-empty and contain no ':'")
    if not builtin:
        _ensure_builtins()
    old = _REGISTRY.get(key)
    if old is not None and old.builtin:
        raise ValueError(f"policy name {name!r} is a built-in policy")
    if old is not None and not replace:
        raise ValueError(f"policy {name!r} is already registered (pass replace=True)")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {factory!r}")
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in JOB_KINDS]
    if not kinds or unknown:
        raise ValueError(f"kinds must be among {', '.join(JOB_KINDS)}; got {kinds!r}")
    _REGISTRY[key] = Registered(
        key,
        factory,
        description,
        kinds,
        places_jobs,
        shares_gpus,
        placement,
        builtin,
        tuple(settings),
    )
    return factory


def unregister_policy(name: str) -> None:
    """Forget a registered user policy (no error if it is not registered; built-ins stay)."""
    if _user_entry(name) is not None:
        del _REGISTRY[name.lower()]


def registered_policies() -> dict[str, Registered]:
    """The registered user policies by name (a copy)."""
    return {n: e for n, e in all_policies().items() if not e.builtin}


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


def _load_file(shown: Path) -> ModuleType:
    """Execute a Python file once per process and return it as a module (a file that does
    not load is a ``PolicyError`` naming it)."""
    path = shown.resolve()
    mod = _FILE_MODULES.get(path)
    if mod is None:
        name = f"_ddlsched_plugin_{len(_FILE_MODULES)}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses and pickling look the module up here
        try:
            spec.loader.exec_module(mod)
        except (Exception, SystemExit) as e:
            del sys.modules[name]
            raise PolicyOrigin(str(shown), str(path)).error(e, "import") from e
        except BaseException:
            del sys.modules[name]
            raise
        _FILE_MODULES[path] = mod
    return mod


def _module_file(name: str) -> str | None:
    """The resolved source file of module ``name`` (None if it cannot be found)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return str(Path(origin).resolve()) if origin and Path(origin).is_file() else None


def load_factory(spec: str) -> Any:
    """The object named by ``MODULE:NAME`` or ``FILE.py:NAME`` (raises InputError if absent)."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise InputError(f"expected MODULE:NAME or FILE.py:NAME, got {spec!r}", field="policy")
    mod = load_plugin(where)
    if not hasattr(mod, attr):
        public = [n for n in vars(mod) if not n.startswith("_")]
        raise InputError(f"no name {attr!r}{suggest(attr, public)}", source=where, field="policy")
    return getattr(mod, attr)


def load_plugin(where: str) -> ModuleType:
    """Import module ``where`` or execute the Python file ``where`` (once per process), so
    that its ``register_policy`` calls run; a module or file that does not load is an
    ``InputError`` / ``PolicyError`` naming it."""
    if where.endswith(".py"):
        path = Path(where)
        if not is_file(path):
            raise InputError("no such file", source=where, field="policy")
        mod = _load_file(path)
    else:
        try:
            mod = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name is not None and (where == e.name or where.startswith(f"{e.name}.")):
                raise InputError(f"cannot import module {where!r}: {e}", field="policy") from None
            raise PolicyOrigin(f"module {where}", _module_file(where)).error(e, "import") from e
        except (Exception, SystemExit) as e:
            raise PolicyOrigin(f"module {where}", _module_file(where)).error(e, "import") from e
    return mod


def _needs_arguments(factory: Callable[..., Any]) -> list[str]:
    """The parameters ``factory()`` would miss (none for a zero-argument callable)."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _build(factory: Callable[[], Any], name: str, origin: PolicyOrigin) -> Any:
    """``factory()``, its failures one line naming ``origin`` (``KeyboardInterrupt`` passes)."""
    missing = _needs_arguments(factory)
    if missing:
        raise PolicyError(
            f"factory {name} needs arguments ({', '.join(missing)}); it must be callable with "
            "none (a class, or a function returning a policy)",
            source=origin.label,
            field="policy",
        )
    try:
        return factory()
    except InputError:
        raise
    except (Exception, SystemExit) as e:
        raise origin.error(e, f"factory {name}") from e


def resolve_user_policy(policy: Any) -> tuple[Any, PolicyOrigin | None] | None:
    """``resolve_policy`` and the ``PolicyOrigin`` of a policy given by name (None for a
    policy object: a library caller gets its exceptions as they are)."""
    if not isinstance(policy, str):
        return check_policy(policy, type(policy).__name__), None
    if ":" in policy:
        obj = load_factory(policy)
        origin = origin_of(policy)
        attr = policy.rpartition(":")[2]
        built = _build(obj, attr, origin) if callable(obj) else obj
        return check_policy(built, policy), origin
    reg = _user_entry(policy)
    if reg is not None:
        origin = origin_of(policy)
        return check_policy(_build(reg.factory, reg.name, origin), policy), origin
    return None


def resolve_policy(policy: Any) -> Any | None:
    """The user policy ``policy`` stands for, or None for a built-in name.

    ``policy`` is a policy object (used as is), ``MODULE:NAME`` / ``FILE.py:NAME`` (``NAME`` is
    a zero-argument factory or class, called once per run, or a policy object), or a name
    given to ``register_policy``. A file or factory that fails is a one-line ``PolicyError``.
    """
    found = resolve_user_policy(policy)
    return None if found is None else found[0]
