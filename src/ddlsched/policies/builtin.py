"""The built-in policies, registered by the same ``register_policy`` call a user plugin makes.

This is the one list of built-in ``--policy`` names: ``api.build_simulator`` (for the
backends), the sweep check, ``ddlsched list`` and the settings scope look a name up here. Each
factory takes the run's ``Settings`` and ``--placement`` and imports its policy's module only
when called (so that ``ddlsched list`` stays fast). Adding a built-in policy = one
``register_policy`` call here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .kinds import MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS
from .planner_names import PLANNER_DESCRIPTIONS
from .registry import PRESETS

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings


# --- job-level policies of application-profile and trace jobs (Luo et al., Pollux) -------
def _tiresias(settings: Settings, placement: str | None) -> Any:
    from .tiresias import Tiresias

    return Tiresias(
        thresholds=tuple(h * 3600.0 for h in settings.tiresias_thresholds_hours),
        interval=settings.interval,
    )


def _fifo(settings: Settings, placement: str | None) -> Any:
    from .luo import Exclusive

    return Exclusive(
        "fifo",
        order="fifo",
        placement="least-busy",
        backfill=settings.backfill,
        type_aware=settings.gpu_type_aware,
    )


def _sjf(settings: Settings, placement: str | None) -> Any:
    from .luo import Exclusive

    return Exclusive(
        "sjf", order="sjf", backfill=settings.backfill, type_aware=settings.gpu_type_aware
    )


def _sjf_ffs(settings: Settings, placement: str | None) -> Any:
    from .luo import Sharing

    return Sharing("sjf-ffs", mode="ffs")


def _sjf_bsbf(settings: Settings, placement: str | None) -> Any:
    from .luo import Sharing

    return Sharing("sjf-bsbf", mode="bsbf")


def _search(settings: Settings) -> str:
    """``pollux_search``, refused in one line where NSGA-II's pymoo is missing."""
    if settings.pollux_search == "nsga2":
        from .pollux_nsga import require_pymoo

        require_pymoo()
    return settings.pollux_search


def _pollux(settings: Settings, placement: str | None) -> Any:
    from .pollux import Pollux

    return Pollux(
        interval=settings.interval,
        restart_penalty=settings.rescale_delay,
        ncf_batch=settings.pollux_ncf_batch,
        search=_search(settings),
        fit=settings.goodput_fit,
    )


def _pollux_unaware(settings: Settings, placement: str | None) -> Any:
    from ..perf.typed_profiles import calibration
    from .pollux_unaware import PolluxUnaware

    delays = calibration(settings.calibration).get("app_delays", {})
    return PolluxUnaware(
        interval=settings.interval,
        restart_penalty=settings.rescale_delay,
        ncf_batch=settings.pollux_ncf_batch,
        search=_search(settings),
        restart_delays=dict(delays),
        default_delay=settings.rescale_delay,
        fit=settings.goodput_fit,
    )


def _sia(settings: Settings, placement: str | None) -> Any:
    from ..perf.typed_profiles import calibration
    from .sia import Sia

    delays = calibration(settings.calibration).get("app_delays", {})
    return Sia(
        interval=settings.interval,
        p=settings.sia_p,
        lambda_n=settings.sia_lambda_n,
        lambda_a=settings.sia_lambda_a,
        restart_delays=dict(delays),
        default_delay=settings.rescale_delay,
        fit=settings.goodput_fit,
    )


def _gavel_tunedjobs(settings: Settings, placement: str | None) -> Any:
    from ..perf.typed_profiles import calibration
    from .sia_gavel import GavelTunedJobs

    slow = calibration(settings.calibration).get("slowdowns", {})
    return GavelTunedJobs(round_length=settings.gavel_round, slowdowns=dict(slow))


# --- Gavel's round-based policies of trace jobs (heterogeneous clusters, issue #17) ---------
def _gavel(settings: Settings, placement: str | None, name: str = "") -> Any:
    from .gavel import make_gavel

    return make_gavel(
        name,
        round_length=settings.gavel_round,
        reset_interval=settings.gavel_reset_interval,
        fifo_quirk=settings.gavel_fifo_quirk,
    )


#: ``--policy`` name → what ``ddlsched list`` says (policies/gavel.py: Gavel's policy)
GAVEL_DESCRIPTIONS = {
    "gavel-fifo": "Gavel's FIFO: arrival order on a random GPU type, in 360 s rounds",
    "gavel-fifo-perf": "Gavel's FIFO on each job's fastest GPU type with room (360 s rounds)",
    "max-min-fairness": "Gavel's LAS: max-min fair time shares, blind to GPU type (rounds)",
    "max-min-fairness-perf": "Gavel's heterogeneity-aware max-min fairness (LP, 360 s rounds)",
    "finish-time-fairness": "Gavel's finish-time fairness, blind to GPU type (rounds)",
    "finish-time-fairness-perf": "Gavel's heterogeneity-aware finish-time fairness (rounds)",
    "min-total-duration-perf": "Gavel's minimum makespan allocation (LP, 360 s rounds)",
}


def register_builtins(register_policy: Callable[..., Any]) -> None:
    """Register every built-in policy with ``register_policy`` (``policies.plugins`` passes its
    own, on the registry's first use: this module imports nothing of the registry)."""
    # --- online presets on model jobs (Wang et al.): ordering + placement + gate -------------
    for _preset in PRESETS.values():

        def _composed(settings: Settings, placement: str | None, name: str = _preset.name) -> Any:
            from .registry import make_policy

            return make_policy(name, placement, settings.kappa)

        register_policy(
            _preset.name,
            _composed,
            description=_preset.description,
            kinds=(MODEL_JOBS,),
            placement=_preset.placement,
            builtin=True,
        )

    # --- offline planners (Yu et al.): a plan executed under Yu's RAR model ------------------
    for _name, _text in PLANNER_DESCRIPTIONS.items():

        def _planned(settings: Settings, placement: str | None, name: str = _name) -> Any:
            from ..planning import PlanPolicy, make_planner

            return PlanPolicy(make_planner(name, settings.planner), settings.rar)

        register_policy(
            _name,
            _planned,
            description=_text,
            kinds=(MODEL_JOBS,),
            places_jobs=True,
            builtin=True,
            settings=("lam", "bco_kappa") if _name == "sjf-bco" else (),
        )

    for _name, _text in GAVEL_DESCRIPTIONS.items():

        def _gavel_policy(settings: Settings, placement: str | None, name: str = _name) -> Any:
            return _gavel(settings, placement, name)

        _reads = ("gavel_round", "gavel_reset_interval")
        register_policy(
            _name,
            _gavel_policy,
            description=_text,
            kinds=(TRACE_JOBS,),
            places_jobs=True,
            builtin=True,
            settings=(*_reads, "gavel_fifo_quirk") if _name == "gavel-fifo" else _reads,
        )

    _JOB_LEVEL = (PROFILE_JOBS, TRACE_JOBS)
    for _name, _factory, _kinds, _shares, _reads, _text in (
        (
            "tiresias",
            _tiresias,
            _JOB_LEVEL,
            False,
            ("interval", "tiresias_thresholds"),
            "2D-LAS, 2 queues, 16 GPU-hour threshold (the Pollux artifact's Tiresias)",
        ),
        (
            "fifo",
            _fifo,
            _JOB_LEVEL,
            False,
            ("backfill", "gpu_type_aware"),
            "arrival order, exclusive GPUs, least-busy free GPUs (Luo baseline)",
        ),
        (
            "sjf",
            _sjf,
            _JOB_LEVEL,
            False,
            ("backfill", "gpu_type_aware"),
            "shortest remaining time alone first, exclusive GPUs (Luo baseline)",
        ),
        (
            "sjf-ffs",
            _sjf_ffs,
            _JOB_LEVEL,
            True,
            (),
            "SJF, shares GPUs holding one job first-fit when free GPUs run out",
        ),
        (
            "sjf-bsbf",
            _sjf_bsbf,
            _JOB_LEVEL,
            True,
            (),
            "SJF, shares only where Theorem 1 says it pays (Luo Alg. 1–2)",
        ),
        (
            "pollux",
            _pollux,
            (PROFILE_JOBS,),
            False,
            ("interval", "pollux_ncf_batch", "pollux_search", "goodput_fit"),
            "elastic: GPUs per server and batch per job every round (goodput, p = -1)",
        ),
        (
            "pollux-unaware",
            _pollux_unaware,
            (PROFILE_JOBS,),
            False,
            ("interval", "pollux_ncf_batch", "pollux_search", "goodput_fit"),
            "Pollux seeing one GPU type: 4-GPU virtual nodes, one model per job (Sia's baseline)",
        ),
        (
            "sia",
            _sia,
            (PROFILE_JOBS,),
            False,
            ("interval", "sia_p", "sia_lambda_n", "sia_lambda_a", "goodput_fit"),
            "Sia: ILP over (GPU type, GPU count) per job every round (goodput, p = -0.5)",
        ),
        (
            "gavel-tunedjobs",
            _gavel_tunedjobs,
            (PROFILE_JOBS,),
            False,
            ("gavel_round",),
            "Gavel as Sia runs it: max summed throughput LP, fixed GPUs/batch, 360 s rounds",
        ),
    ):
        register_policy(
            _name,
            _factory,
            description=_text,
            kinds=_kinds,
            places_jobs=True,
            shares_gpus=_shares,
            builtin=True,
            settings=_reads,
        )
