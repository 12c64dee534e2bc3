"""The registry of job-level performance models (``--set model=NAME``): how fast a model job
progresses in the current running set (a ``RateModel`` of ``core/jobexec.py``), built from the
run's settings. The built-ins ``wang`` (Wang's contention as fluid rates) and ``rar`` (Yu's
RAR model, Eq. 6–8) register with the same ``register_model`` call a user makes
(docs/design.md "Add a performance model")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .jobexec import RateModel, WangJobLevel

if TYPE_CHECKING:  # pragma: no cover
    from ..settings import Settings


@dataclass(frozen=True)
class RegisteredModel:
    """A performance model: its name, what it is, its factory (settings → ``RateModel``) and
    the settings sections it reads (``ddlsched.settings.SECTIONS``)."""

    name: str
    description: str
    factory: Callable[[Settings], RateModel]
    sections: tuple[str, ...] = ()
    builtin: bool = False


_MODELS: dict[str, RegisteredModel] = {}


def register_model(
    name: str,
    factory: Callable[[Settings], RateModel],
    *,
    description: str = "",
    sections: tuple[str, ...] = (),
    builtin: bool = False,
) -> RegisteredModel:
    """Make ``--set model=NAME`` run model jobs at job level with ``factory(settings)``;
    ``sections``: the settings sections the model reads (their settings then apply to its
    runs). ``auto`` is reserved (the policy's paper's model). A name is registered once."""
    key = name.lower()
    if key == "auto" or key in _MODELS:
        raise ValueError(f"performance model {name!r} is already registered")
    entry = RegisteredModel(key, description, factory, tuple(sections), builtin)
    _MODELS[key] = entry
    return entry


def unregister_model(name: str) -> None:
    """Remove the user model ``name`` (tests, notebooks); built-ins stay."""
    entry = _MODELS.get(name.lower())
    if entry is not None and not entry.builtin:
        del _MODELS[entry.name]


def model_entry(name: str) -> RegisteredModel | None:
    """The registered model ``name`` (None: unknown, or ``auto``)."""
    return _MODELS.get(name.lower())


def model_names() -> list[str]:
    """``auto`` and every registered model, built-ins first."""
    return ["auto", *sorted(_MODELS, key=lambda k: (not _MODELS[k].builtin, k))]


def all_models() -> list[RegisteredModel]:
    """Every registered model (``ddlsched list``)."""
    return list(_MODELS.values())


def _rar(settings: Settings) -> RateModel:
    from ..perf.rar import RarRate

    return RarRate(settings.rar, settings.time_slots)


register_model(
    "wang",
    lambda s: WangJobLevel(s.contention),
    description="Wang et al.'s contention a + k·b·M + (k−1)·η·M (iteration level by default; "
    "fluid rates with granularity=job)",
    sections=("wang",),
    builtin=True,
)
register_model(
    "rar",
    _rar,
    description="Yu et al.'s RAR model (Eq. 6–8), job level; the planners' model",
    sections=("rar",),
    builtin=True,
)
