"""Where each ``--set`` setting has an effect, and the check that a setting given a non-default
value has one in this run (``--placement ff --set kappa=2`` is an error, not a silently ignored
κ). Default values always pass, so a recorded ``config.json`` with every setting re-runs.

Two levels: the run's backend declares, per run kind, the settings sections its runs read
(``Backend.sections``; a setting of another section does not apply); within a section a few
settings apply only to some policies or placements (the predicates of ``SCOPES``). ``SCOPES``
also holds, per setting, where it applies in words, for the error message. ``check_scope`` is
called by ``api.build_simulator`` once the backend and the policy are known;
``check_workload_scope`` by ``api.simulate_named``, which knows the workload.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from .errors import InputError
from .paths import is_file
from .settings import SECTION_OF

if TYPE_CHECKING:  # pragma: no cover
    from .api import Settings

#: the kinds of run ``build_simulator`` composes
ITERATION = "model jobs at iteration level"  # Wang's task DAG (TaskExecutor)
JOB_LEVEL = "model jobs at job level"  # granularity=job (Wang's contention, fluid rates)
RAR = "model jobs under the RAR model"  # model=rar with an online policy
USER_MODEL = "model jobs under a registered model"  # model=NAME of register_model
PLANNER = "model jobs under a planner"  # sjf-bco, yu-ff, yu-ls, yu-rand (RAR model)
#: a planner's plan (made under the RAR model) executed under Wang's iteration level (model=wang)
PLANNER_WANG = "model jobs under a planner, executed under Wang's model"
PROFILE = "application-profile jobs"  # Luo et al. / the Pollux artifact
DURATION = "trace (duration) jobs"  # Philly, Gavel, … traces with measured durations
LIVE = "live jobs"  # real processes (``ddlsched live``)

ONLINE_MODEL = (ITERATION, JOB_LEVEL, RAR, USER_MODEL)


@dataclass(frozen=True)
class RunScope:
    """What one run is: its job kind and, where they matter, policy and placement."""

    kind: str
    #: a built-in policy's name; None for a policy object, plugin or registered policy
    policy: str | None = None
    #: the placement an online model-job policy uses (its preset's or ``--placement``)
    placement: str | None = None
    #: whether the policy may put two jobs on one GPU (sharing policies)
    shares_gpus: bool = False
    #: ``semantics=rounds`` (the Pollux artifact's loop)
    rounds: bool = False
    #: the settings sections this run reads (its backend's declaration); None: every section
    sections: tuple[str, ...] | None = None

    def describe(self) -> str:
        parts = [self.kind]
        if self.policy:
            parts.append(f"policy {self.policy}")
        if self.placement:
            parts.append(f"placement {self.placement}")
        return ", ".join(parts)


Rule = tuple[str, Callable[[RunScope], bool]]


def _reads(key: str) -> Callable[[RunScope], bool]:
    """The run's built-in policy reads ``key`` (its ``settings=`` in the policy registry,
    ``policies/builtin.py``); the message texts below name those policies."""

    def applies(r: RunScope) -> bool:
        from .policies.plugins import builtin_reads

        return builtin_reads(r.policy, key)

    return applies


_WANG = (
    "to model jobs with Wang's model (model=auto|wang, online policies; planners with model=wang)"
)
_RAR = "to the RAR model (planners, or model=rar)"
_PLANNERS = "to planners (sjf-bco, yu-ff, yu-ls, yu-rand)"
_PROFILE = "to application-profile jobs"
_SHARING = "to application-profile jobs under a GPU-sharing policy (sjf-ffs, sjf-bsbf)"
_SHARING_ANY = (
    "to application-profile and trace jobs under a GPU-sharing policy (sjf-ffs, sjf-bsbf)"
)
_GAVEL = (
    "gavel-fifo, gavel-fifo-perf, max-min-fairness, max-min-fairness-perf, "
    "finish-time-fairness, finish-time-fairness-perf, min-total-duration-perf"
)


def _always(r: RunScope) -> bool:
    return True


def _not_trace(r: RunScope) -> bool:
    """Not a trace run: a sharing trace run reads the profile section for ``interference``
    only."""
    return r.kind != DURATION


#: setting → (where it applies, predicate within its section: does it apply to this run?)
_LUO24_GEN = "to the luo24, luo24-N, luo24-paper and luo24-paper-N workload generators"

SCOPES: dict[str, Rule] = {
    "granularity": (_WANG, _always),
    "iterations_per_task": ("to model jobs at iteration level", _always),
    "shortcuts": ("to model jobs at iteration level", _always),
    "compiled": ("to model jobs at iteration level", _always),
    "ring_bytes": (
        "to model jobs at iteration level (Wang's model; planners with model=wang)",
        lambda r: r.kind in (ITERATION, PLANNER_WANG),
    ),
    "kappa": (
        "with the lwf placement",  # κ of LWF-κ; lwf-K names κ itself
        lambda r: (r.placement or "").lower() == "lwf",
    ),
    "a": (_WANG, _always),
    "b": (_WANG, _always),
    "eta": (_WANG, _always),
    "max_jobs_per_gpu": (
        "to online policies on model jobs and to GPU-sharing policies (sjf-ffs, sjf-bsbf)",
        lambda r: r.kind in ONLINE_MODEL or (r.kind in (PROFILE, DURATION) and r.shares_gpus),
    ),
    "restart_delay": (
        "to online policies on model jobs and to trace (duration) jobs "
        "(application-profile jobs use rescale_delay)",
        lambda r: r.kind != PROFILE,
    ),
    "stop_delay": ("to trace (duration) jobs", lambda r: r.kind == DURATION),
    # runs without --queues are refused by api.build_simulator
    "sharing_anomaly": ("to runs with --queues", lambda r: True),
    "poll_interval": ("to trace (duration) jobs", lambda r: r.kind == DURATION),
    "model": ("to model jobs (online policies and planners)", _always),
    **{
        k: (_RAR, _always)
        for k in ("xi1", "xi2", "alpha", "reduction_speed", "rar_f", "time_slots")
    },
    "horizon": (_PLANNERS, _always),
    "u": (_PLANNERS, _always),
    "lam": ("with the sjf-bco planner (λ of its LBSGF)", _reads("lam")),
    "bco_kappa": ("with the sjf-bco planner", _reads("bco_kappa")),
    "estimate": (_PLANNERS, _always),
    "extend_horizon": (_PLANNERS, _always),
    "profiles": (_PROFILE, _not_trace),
    "ground_truth": (_PROFILE, _not_trace),
    "semantics": (_PROFILE, _not_trace),
    "interval": (
        "to the tiresias, pollux, pollux-unaware and sia policies and to semantics=rounds (but not with "
        "gavel-tunedjobs, whose rounds are gavel_round)",
        lambda r: (
            _reads("interval")(r)
            or (r.kind == PROFILE and r.rounds and not _reads("gavel_round")(r))
        ),
    ),
    "rescale_delay": (_PROFILE, _not_trace),
    "calibration": (_PROFILE, _not_trace),
    "interference": (_SHARING_ANY, lambda r: r.shares_gpus),
    "interference_file": (_SHARING, lambda r: r.shares_gpus and _not_trace(r)),
    "backfill": (
        "with the fifo and sjf policies (application-profile and trace jobs)",
        lambda r: r.kind in (PROFILE, DURATION, LIVE) and _reads("backfill")(r),
    ),
    "tiresias_thresholds": ("with the tiresias policy", _reads("tiresias_thresholds")),
    "pollux_ncf_batch": (
        "with the pollux and pollux-unaware policies",
        _reads("pollux_ncf_batch"),
    ),
    "pollux_search": (
        "with the pollux and pollux-unaware policies",
        _reads("pollux_search"),
    ),
    "goodput_fit": (
        "with the pollux, pollux-unaware and sia policies",
        _reads("goodput_fit"),
    ),
    **{k: ("with the sia policy", _reads(k)) for k in ("sia_p", "sia_lambda_n", "sia_lambda_a")},
    "gavel_round": (f"with Gavel's policies ({_GAVEL}) and gavel-tunedjobs", _reads("gavel_round")),
    "gavel_reset_interval": (f"with Gavel's policies ({_GAVEL})", _reads("gavel_reset_interval")),
    "gavel_fifo_quirk": ("with the gavel-fifo policy", _reads("gavel_fifo_quirk")),
    "gpu_type_aware": (
        "with the fifo and sjf policies on trace jobs",
        lambda r: r.kind in (DURATION,) and _reads("gpu_type_aware")(r),
    ),
    # checked by check_workload_scope (the workload, not the run, decides)
    "philly": (_LUO24_GEN, _always),
    "large_share": (_LUO24_GEN, _always),
    "gpu_weights": (_LUO24_GEN, _always),
    "duration_scale": (_LUO24_GEN, _always),
    "jobs_per_hour": (_LUO24_GEN, _always),
    "vc_queues": (_LUO24_GEN, _always),
}


def applies(key: str, run: RunScope) -> bool:
    """Whether setting ``key`` has an effect on ``run``: its section is one the run reads
    and, within it, the setting's own rule holds."""
    if run.sections is not None and SECTION_OF[key] not in run.sections:
        return False
    return SCOPES[key][1](run)


def _non_default(settings: Settings) -> list[str]:
    """The settings whose value differs from the default, in declaration order."""
    return [f.name for f in fields(settings) if getattr(settings, f.name) != f.default]


def check_scope(settings: Settings, run: RunScope) -> None:
    """``InputError`` for the first setting with a non-default value that has no effect on
    ``run``, naming where it applies and what this run is."""
    for key in _non_default(settings):
        where = SCOPES[key][0]
        if not applies(key, run):
            raise InputError(
                f"applies only {where} (this run: {run.describe()})", source="--set", field=key
            )


def is_luo24_generator(workload: str) -> bool:
    """Whether ``workload`` names a luo24 generator (``luo24``, ``luo24-N``, ``luo24-paper``,
    ``luo24-paper-N``: what ``philly`` and the generator knobs feed)."""
    named = re.fullmatch(r"luo24(-paper)?(-\d+)?", workload.lower()) is not None
    return named and not is_file(workload)


def check_workload_scope(settings: Settings, workload: str) -> None:
    """``philly`` and the generator knobs only feed the luo24 generators: an error with any
    other workload."""
    if is_luo24_generator(workload):
        return
    used = ["philly"] if settings.philly else []
    used += list(settings.generator_knobs())
    for key in used:
        raise InputError(
            f"applies only {SCOPES[key][0]} (this run: workload {workload})",
            source="--set",
            field=key,
        )
