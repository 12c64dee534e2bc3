"""Build an online ``Policy`` from parts given by name or as objects (the policy-authoring API)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import InputError, suggest
from .base import Policy
from .gates import GATES, CommGate
from .ordering import ORDERINGS, Ordering
from .placement import PLACEMENT_NAMES, PLACEMENTS, Placement, make_placement


def _part_name(part: Any) -> str:
    """A part's short name: the string itself, a part's ``name`` or a function's ``__name__``."""
    if isinstance(part, str):
        return part.lower()
    if part is None:
        return "none"
    return str(getattr(part, "name", None) or getattr(part, "__name__", type(part).__name__))


def ordering_of(ordering: str | Ordering) -> Ordering:
    """An ordering by name (``fifo``, ``srsf``) or the key function itself."""
    if not isinstance(ordering, str):
        if not callable(ordering):
            raise TypeError(f"an ordering is a function (job, sim) -> tuple, got {ordering!r}")
        return ordering
    try:
        return ORDERINGS[ordering.lower()]
    except KeyError:
        raise InputError(
            f"unknown ordering{suggest(ordering.lower(), ORDERINGS)}; known: {', '.join(ORDERINGS)}",
            field="ordering",
        ) from None


def placement_of(placement: str | Placement, kappa: int | None = None) -> Placement:
    """A placement by name (``ff``, ``ls``, ``rand``, ``lwf``, ``lwf-K``) or the object itself."""
    if not isinstance(placement, str):
        if not callable(getattr(placement, "select", None)):
            raise TypeError(f"a placement has select(job, sim), got {placement!r}")
        return placement
    try:
        return make_placement(placement, kappa)
    except KeyError:
        raise InputError(
            f"unknown placement{suggest(placement.lower(), list(PLACEMENTS))}; "
            f"known: {', '.join(PLACEMENT_NAMES)}",
            field="placement",
        ) from None


def gate_of(gate: str | CommGate | None) -> CommGate | None:
    """A gate by name (``none``, ``srsf1``…``srsf3``, ``adadual``), the object itself, or None."""
    if gate is None or not isinstance(gate, str):
        if gate is not None and not callable(getattr(gate, "blocker", None)):
            raise TypeError(f"a gate has blocker(executor, run), got {gate!r}")
        return gate
    try:
        return GATES[gate.lower()]
    except KeyError:
        raise InputError(
            f"unknown gate{suggest(gate.lower(), GATES)}; known: {', '.join(GATES)}",
            field="gate",
        ) from None


def compose(
    name: str | None = None,
    *,
    ordering: str | Ordering = "fifo",
    placement: str | Placement = "ff",
    gate: str | CommGate | None = None,
    kappa: int | None = None,
    backfill: bool = True,
) -> Policy:
    """An online policy: walk the queue in ``ordering`` order, start every job ``placement`` can
    place (skip the others if ``backfill``, else stop), gate all-reduces with ``gate``.

    Each part is a name (as in ``ddlsched list``) or an object; ``kappa`` is LWF's κ for
    ``placement="lwf"``. ``name`` defaults to ``ordering+placement+gate``.
    """
    order = ordering_of(ordering)
    place = placement_of(placement, kappa)
    g = gate_of(gate)
    if name is None:
        name = "+".join(_part_name(p) for p in (order, place, g))
    return Policy(name=name, ordering=order, placement=place, gate=g, backfill=backfill)


def with_placement(policy: Policy, placement: str, kappa: int | None = None) -> Policy:
    """``policy`` with its placement replaced (``--placement`` on a composed policy)."""
    return replace(policy, placement=placement_of(placement, kappa))
