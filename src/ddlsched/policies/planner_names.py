"""The offline planners' ``--policy`` names and descriptions: one table, read by
``policies/builtin.py`` (which registers them) and ``planning/planners.py`` (``PLANNER_NAMES``).

A module of its own that imports nothing, so that neither side imports the other: the registry
stays fast to load, and ``planning`` does not read the policy registry.
"""

from __future__ import annotations

#: planner name → description (``ddlsched list``); ``planning.make_planner`` builds each
PLANNER_DESCRIPTIONS: dict[str, str] = {
    "sjf-bco": "SJF-BCO: jobs by size, FA-FFP (G ≤ κ) / LBSGF(λ), bisection over θ_u and κ",
    "yu-ff": "Yu §7 FF: first-fit GPUs within θ_u, own bisection over θ_u",
    "yu-ls": "Yu §7 LS: least-busy GPUs within θ_u, own bisection over θ_u",
    "yu-rand": "Yu §7 RAND: random GPUs, θ_u = T",
}
