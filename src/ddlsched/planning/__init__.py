"""Offline planners (Yu et al.): plans of GPU sets and start order, executed by the engine."""

from .exact import ExactResult, brute_force_makespan, solve_exact
from .execute import PlanPolicy
from .plan import Estimator, Plan, PlannedJob, PlanningError, Timeline
from .planners import PlannerParams, SjfBco, make_planner


def __getattr__(name: str):
    if name == "PLANNER_NAMES":  # the planners of the policy registry
        from . import planners

        return planners.PLANNER_NAMES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PLANNER_NAMES",
    "Estimator",
    "ExactResult",
    "Plan",
    "PlanPolicy",
    "PlannedJob",
    "PlannerParams",
    "PlanningError",
    "SjfBco",
    "Timeline",
    "brute_force_makespan",
    "make_planner",
    "solve_exact",
]
