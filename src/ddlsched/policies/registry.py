"""Named policy presets (the public names of ``--policy``).

A preset = ordering + default placement + gate. ``--placement`` overrides the placement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .base import Policy
from .gates import AdaDual, CommGate, SrsfN
from .ordering import ORDERINGS, Ordering
from .placement import make_placement


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    ordering: Ordering
    placement: str
    gate: Callable[[], CommGate | None]
    paper: str = ""


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "ada-srsf",
            "SRSF queue + LWF-1 placement + AdaDUAL all-reduce gate",
            ORDERINGS["srsf"],
            "lwf",
            AdaDual,
            "Wang et al. Alg. 3",
        ),
        *(
            Preset(
                f"srsf{n}",
                f"SRSF queue + LWF-1 placement + at most {n} all-reduce(s) per server",
                ORDERINGS["srsf"],
                "lwf",
                (lambda n=n: SrsfN(n)),
                "Wang et al. Sec. V baseline",
            )
            for n in (1, 2, 3)
        ),
        Preset(
            "srsf",
            "SRSF queue + LWF-1 placement, all-reduces start at once (no gate)",
            ORDERINGS["srsf"],
            "lwf",
            lambda: None,
        ),
        Preset(
            "fifo-ff",
            "FIFO queue + first-fit placement, no gate",
            ORDERINGS["fifo"],
            "ff",
            lambda: None,
        ),
    )
}


def make_policy(name: str, placement: str | None = None, kappa: int | None = None) -> Policy:
    """Build a preset by name; raises KeyError naming what was unknown."""
    try:
        preset = PRESETS[name.lower()]
    except KeyError:
        raise KeyError(f"policy '{name}'") from None
    pl_name = placement or preset.placement
    try:
        pl = make_placement(pl_name, kappa)
    except KeyError:
        raise KeyError(f"placement '{pl_name}'") from None
    return Policy(name=preset.name, ordering=preset.ordering, placement=pl, gate=preset.gate())
