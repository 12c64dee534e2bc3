"""``ddlsched`` command line: a thin layer over the library (every command is a library call)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .errors import InputError


def _parse_sets(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {item!r}", source="--set")
        out[key.strip()] = value.strip()
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from .api import Settings, simulate_named
    from .core.results import write_result
    from .progress import ProgressBar

    settings = Settings.from_mapping(_parse_sets(args.set or []))
    bar = ProgressBar(f"{args.policy}", enabled=None if not args.quiet else False)
    res = simulate_named(
        args.cluster,
        args.workload,
        args.policy,
        placement=args.placement,
        seed=args.seed,
        settings=settings,
        progress=bar,
    )
    out = Path(args.out)
    config = {
        "version": __version__,
        "cluster": args.cluster,
        "workload": args.workload,
        "policy": args.policy,
        "placement": args.placement,
        "seed": args.seed,
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
    }
    write_result(res, out, config=config)
    s = res.summary
    print(
        f"{len(res.jobs)} jobs  avg JCT {s['avg_jct']:.1f} s  median {s['median_jct']:.1f} s  "
        f"p95 {s['p95_jct']:.1f} s  makespan {s['makespan']:.1f} s  GPU util {100 * s['gpu_util']:.1f} %"
    )
    print(f"wrote {out}/summary.json, jobs.csv, segments.csv")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from .experiments import EXPERIMENTS
    from .experiments.runner import format_markdown, run_experiment
    from .progress import ProgressBar

    exp = EXPERIMENTS.get(args.experiment)
    if exp is None:
        raise InputError(
            f"unknown experiment; available: {', '.join(EXPERIMENTS)}", field="EXPERIMENT"
        )
    variants = args.variant.split(",") if args.variant else None
    for v in variants or []:
        if v not in exp.variants:
            raise InputError(
                f"unknown variant {v!r}; available: {', '.join(exp.variants)}", field="--variant"
            )
    if args.seeds is not None and args.seeds < 1:
        raise InputError("must be ≥ 1", field="--seeds")
    bar = ProgressBar(exp.name)
    table = run_experiment(
        exp, args.seeds, args.out, workers=args.workers, variants=variants, progress=bar
    )
    print(format_markdown(exp, table))
    print(f"wrote {args.out}/table.csv, table.md")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from .core.cluster_io import CLUSTER_PRESETS
    from .experiments import EXPERIMENTS
    from .planning.planners import PLANNER_DESCRIPTIONS
    from .policies.gates import GATES
    from .policies.ordering import ORDERINGS
    from .policies.placement import PLACEMENT_NAMES
    from .policies.registry import PRESETS
    from .workloads.generators import WORKLOAD_PRESETS

    print("policies:")
    for p in PRESETS.values():
        print(f"  {p.name:10s} {p.description}")
    print("planners (offline; plan executed under Yu's RAR model):")
    for name, text in PLANNER_DESCRIPTIONS.items():
        print(f"  {name:10s} {text}")
    print("application-profile policies (Pollux-format workloads, --set profiles=DIR):")
    print("  tiresias   2D-LAS, 2 queues, 16 GPU-hour threshold (the Pollux artifact's Tiresias)")
    print("  fifo       arrival order, exclusive GPUs, least-busy free GPUs (Luo baseline)")
    print("  sjf        shortest remaining time alone first, exclusive GPUs (Luo baseline)")
    print("  sjf-ffs    SJF, shares GPUs holding one job first-fit when free GPUs run out")
    print("  sjf-bsbf   SJF, shares only where Theorem 1 says it pays (Luo Alg. 1–2)")
    print("  pollux     goodput-driven elastic re-allocation every round (first version)")
    print("placements: " + ", ".join(PLACEMENT_NAMES))
    print("orderings:  " + ", ".join(ORDERINGS))
    print("gates:      " + ", ".join(GATES))
    print("clusters:   " + ", ".join(CLUSTER_PRESETS) + ", yu22-N (first N servers of yu22)")
    print("workloads:  " + ", ".join(WORKLOAD_PRESETS))
    print("experiments:")
    for e in EXPERIMENTS.values():
        print(f"  {e.name:15s} {e.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ddlsched",
        description="Simulate and reproduce schedulers for distributed deep-learning jobs.",
    )
    p.add_argument("--version", action="version", version=f"ddlsched {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="simulate one workload on one cluster under one policy")
    r.add_argument("--cluster", required=True, help="cluster preset (see `list`) or TOML/YAML file")
    r.add_argument("--workload", required=True, help="workload preset or CSV/JSON file")
    r.add_argument(
        "--policy", required=True, help="policy preset or planner, e.g. ada-srsf, srsf1, sjf-bco"
    )
    r.add_argument("--placement", help="override the preset's placement: ff, ls, rand, lwf, lwf-K")
    r.add_argument("--seed", type=int, default=0, help="seed for generators and RAND (default 0)")
    r.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="engine/model setting, e.g. iterations_per_task=1000, kappa=2, granularity=job",
    )
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_run)

    rp = sub.add_parser(
        "reproduce", help="rerun a paper experiment; our numbers beside the paper's"
    )
    rp.add_argument("experiment", metavar="EXPERIMENT", help="e.g. wang20-table4 (see `list`)")
    rp.add_argument("--seeds", type=int, help="number of seeds (default: the experiment's)")
    rp.add_argument("--variant", help="comma-separated subset of variants, e.g. coarse")
    rp.add_argument("--workers", type=int, help="parallel processes (default: all cores)")
    rp.add_argument("--out", required=True, help="output directory")
    rp.set_defaults(func=cmd_reproduce)

    ls = sub.add_parser("list", help="show policies, placements, gates, presets, experiments")
    ls.set_defaults(func=cmd_list)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as e:
        print(f"ddlsched: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ddlsched: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
