"""Offline planners (Yu et al.): plans of GPU sets and start order, executed by the engine."""

from .execute import PlanPolicy
from .plan import Estimator, Plan, PlannedJob, PlanningError, Timeline
from .planners import PLANNER_NAMES, PlannerParams, SjfBco, make_planner

__all__ = [
    "PLANNER_NAMES",
    "Estimator",
    "Plan",
    "PlanPolicy",
    "PlannedJob",
    "PlannerParams",
    "PlanningError",
    "SjfBco",
    "Timeline",
    "make_planner",
]
