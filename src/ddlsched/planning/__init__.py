"""Offline planners (Yu et al.): plans of GPU sets and start order, executed by the engine."""

from .exact import ExactResult, brute_force_makespan, solve_exact
from .execute import PlanPolicy
from .plan import Estimator, Plan, PlannedJob, PlanningError, Timeline
from .planners import PLANNER_DESCRIPTIONS, PLANNER_NAMES, PlannerParams, SjfBco, make_planner

__all__ = [
    "PLANNER_DESCRIPTIONS",
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
