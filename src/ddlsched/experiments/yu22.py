"""Yu et al. (SJF-BCO): Fig. 4–7 (SPEC §6). Only figures are published, so rows carry no paper
numbers; docs/reproduction/yu22.md compares our trends with the paper's text.

Every run plans offline (all 160 jobs at time 0) and executes the plan under the RAR model;
``makespan``/``avg_jct`` are the executed values, ``planned_makespan`` the planner's estimate.
"""

from __future__ import annotations

from pathlib import Path

from .plots import bar_chart, line_chart, series_chart
from .runner import Experiment, Row

POLICIES = [("FF", "yu-ff"), ("LS", "yu-ls"), ("RAND", "yu-rand"), ("SJF-BCO", "sjf-bco")]
EXTRA = ["makespan_over_lb", "planned_makespan", "extra_share", "plan_extended"]


def _fig4_plot(exp: Experiment, table: list[dict], out: Path) -> Path:
    bar_chart(exp, table, out, "avg_jct", suffix="avg_jct")
    return bar_chart(exp, table, out, "makespan")


FIG4 = Experiment(
    name="yu22-fig4",
    description="Makespan and average JCT of FF, LS, RAND and SJF-BCO, T = 1200 (Yu et al. Fig. 4).",
    cluster="yu22",
    workload="yu22",
    rows=[Row(name, pol) for name, pol in POLICIES],
    metrics=["makespan", "avg_jct", *EXTRA],
    plot=_fig4_plot,
    default_seeds=10,
)

FIG5 = Experiment(
    name="yu22-fig5",
    description="SJF-BCO with a fixed κ = 1..32, T = 1200 (Yu et al. Fig. 5).",
    cluster="yu22",
    workload="yu22",
    rows=[Row(f"κ={k}", "sjf-bco", settings={"bco_kappa": k}) for k in range(1, 33)],
    metrics=["makespan", "avg_jct", *EXTRA],
    plot=lambda e, t, o: line_chart(e, t, o, "makespan", "κ", tick_every=4),
    default_seeds=10,
)

#: Fig. 6: one variant per cluster size (the first N servers of the seed's yu22 draw)
SERVER_COUNTS = list(range(10, 21))

FIG6 = Experiment(
    name="yu22-fig6",
    description="Makespan as the number of servers grows from 10 to 20, T = 1500 (Yu et al. Fig. 6).",
    cluster="yu22",
    workload="yu22",
    rows=[Row(name, pol, settings={"horizon": 1500.0}) for name, pol in POLICIES],
    metrics=["makespan", "avg_jct", *EXTRA],
    variants={f"servers={n}": {"cluster": f"yu22-{n}"} for n in SERVER_COUNTS},
    plot=lambda e, t, o: series_chart(
        e, t, o, "makespan", "number of servers", [str(n) for n in SERVER_COUNTS]
    ),
    default_seeds=10,
)

FIG7 = Experiment(
    name="yu22-fig7",
    description="SJF-BCO with κ = 1 and λ ∈ {1, 2, 4, 8}, T = 1200 (Yu et al. Fig. 7).",
    cluster="yu22",
    workload="yu22",
    rows=[
        Row(f"λ={lam}", "sjf-bco", settings={"bco_kappa": 1, "lam": float(lam)})
        for lam in (1, 2, 4, 8)
    ],
    metrics=["makespan", "avg_jct", *EXTRA],
    plot=lambda e, t, o: line_chart(e, t, o, "makespan", "λ"),
    default_seeds=10,
)

YU22_EXPERIMENTS = [FIG4, FIG5, FIG6, FIG7]
