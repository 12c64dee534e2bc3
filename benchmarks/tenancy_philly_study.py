"""Study: per-VC quotas on the Philly trace (issue #28). Each policy without queues (``none``),
with per-VC queues in one cohort (``quota``: ``--queues proportional``, nominal GPUs ∝ the VC's
GPU demand, unlimited borrowing, reclaim) and with the same queues and no borrowing
(``quota-noborrow``: ``borrowingLimit: 0``, each VC its private share) and with every nominal
quota doubled (``quota-x2``: over-committed, more jobs admitted than fit, so the policy
orders the admitted ones); prints each VC's
average JCT (hours) per variant and, for the quota variants, HiveD's sharing anomaly per VC
(its average queueing minus that on a private cluster of its nominal GPUs, same policy; hours).

Two workloads:

* ``--workload trace`` (default): a time window of the Pollux artifact's ``philly.csv`` as
  trace (duration) jobs on ``--scale`` × the ``philly`` servers; fifo and tiresias.
* ``--workload pollux``: the Pollux artifact's recipe sampled from ``philly.csv``
  (``luo24`` generator, ``vc_queues=True``: each job in the VC of its trace row; application
  profiles) at ``--load`` × 160 jobs in 8 h on the ``luo24`` cluster (16 × 4 GPUs); fifo,
  tiresias and pollux (a Pollux-like elastic policy, which needs profile jobs).

A job larger than its VC's nominal quota could never run without borrowing: such jobs are left
out of every variant (their count is printed), so the variants run the same jobs. Not a test:
``python benchmarks/tenancy_philly_study.py [--workload trace|pollux] …``; docs/tenancy.md
holds the measured tables. Skips with a message when the trace is absent.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench_philly import DEFAULT_TRACE, read_philly, scaled_philly  # noqa: E402

from ddlsched.api import load_run_queues, simulate  # noqa: E402
from ddlsched.tenancy.model import QueuesConfig, ResourceQuota  # noqa: E402


def with_quotas(config: QueuesConfig, change) -> QueuesConfig:  # type: ignore[no-untyped-def]
    """``config`` with every quota replaced by ``change(quota)``."""
    cqs = {}
    for name, cq in config.cluster_queues.items():
        groups = tuple(
            replace(rg, quotas={k: change(q) for k, q in rg.quotas.items()})
            for rg in cq.resource_groups
        )
        cqs[name] = replace(cq, resource_groups=groups)
    return replace(config, cluster_queues=cqs)


def no_borrowing(config: QueuesConfig) -> QueuesConfig:
    """``config`` with ``borrowingLimit: 0`` on every quota."""
    return with_quotas(config, lambda q: ResourceQuota(q.nominal, 0, q.lending_limit))


def overcommitted(config: QueuesConfig, factor: int) -> QueuesConfig:
    """``config`` with every nominal quota × ``factor`` (Σ nominal > the cluster's GPUs: more
    jobs admitted than fit, so the policy orders the admitted ones)."""
    return with_quotas(
        config, lambda q: ResourceQuota(q.nominal * factor, q.borrowing_limit, q.lending_limit)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--start", type=float, default=21.0, help="window start, days into the trace")
    ap.add_argument("--days", type=float, default=2.0, help="window length, days")
    ap.add_argument("--scale", type=float, default=0.15, help="server counts × this")
    ap.add_argument("--policies", default=None, help="default: fifo,tiresias[,pollux]")
    ap.add_argument("--workload", choices=("trace", "pollux"), default="trace")
    ap.add_argument("--load", type=float, default=2.0, help="pollux workload: × 160 jobs")
    ap.add_argument("--seed", type=int, default=1, help="pollux workload: generator seed")
    ap.add_argument("--anomaly", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    if not args.trace.is_file():
        print(f"skipped: Philly trace not found at {args.trace} (shared data absent)")
        return
    if args.workload == "pollux":
        from ddlsched.core.cluster_io import load_cluster
        from ddlsched.workloads.luo24 import generate_pollux_workload

        jobs = generate_pollux_workload(
            args.seed, philly=args.trace, load=args.load, vc_queues=True
        )
        cluster = load_cluster("luo24")
        policies = args.policies or "fifo,tiresias,pollux"
        what = f"Pollux recipe, seed {args.seed}, load {args.load:g}"
    else:
        jobs = sorted(read_philly(args.trace), key=lambda j: (j.arrival, j.job_id))
        t0 = jobs[0].arrival
        lo, hi = args.start * 86400, (args.start + args.days) * 86400
        jobs = [replace(j, arrival=j.arrival - t0 - lo) for j in jobs if lo <= j.arrival - t0 < hi]
        cluster = scaled_philly(args.scale)
        policies = args.policies or "fifo,tiresias"
        what = f"days {args.start:g}–{args.start + args.days:g}"
    config = load_run_queues("proportional", cluster, jobs)
    nominal = {
        q: cq.quotas()[("default", "nvidia.com/gpu")].nominal // 1000
        for q, cq in config.cluster_queues.items()
    }
    kept = [j for j in jobs if j.num_gpus <= nominal[j.queue]]
    kept = [replace(j, job_id=k) for k, j in enumerate(kept)]
    print(
        f"{len(kept)} jobs ({what}; {len(jobs) - len(kept)} larger than their VC's quota left "
        f"out); cluster {cluster.name}, {cluster.num_gpus} GPUs"
    )
    variants = {
        "none": None,
        "quota": config,
        "quota-noborrow": no_borrowing(config),
        "quota-x2": overcommitted(config, 2),
    }
    table: dict[tuple[str, str], dict[str, float]] = {}
    anomaly: dict[tuple[str, str], dict[str, float | None]] = {}
    for policy in policies.split(","):
        for vname, cfg in variants.items():
            t = time.perf_counter()
            anomalous = cfg is not None and args.anomaly and vname != "quota-x2"
            settings = {"sharing_anomaly": True} if anomalous else None
            res = simulate(cluster, kept, policy, queues=cfg, settings=settings)
            per: dict[str, list[float]] = {}
            for j, spec in zip(res.jobs, kept, strict=True):
                per.setdefault(spec.queue, []).append(j.finish - j.arrival)
            table[(policy, vname)] = {q: sum(v) / len(v) / 3600 for q, v in per.items()}
            table[(policy, vname)]["all"] = res.summary["avg_jct"] / 3600
            if settings:
                anomaly[(policy, vname)] = {
                    q: None if m["sharing_anomaly"] is None else m["sharing_anomaly"] / 3600
                    for q, m in res.summary["queues"].items()
                }
            print(f"  {policy} {vname}: {time.perf_counter() - t:.1f} s", flush=True)
    cols = list(table)
    vcs = sorted({q for row in table.values() for q in row if q != "all"}) + ["all"]
    print("\naverage JCT (h)")
    print("| VC | nominal GPUs | " + " | ".join(f"{p} {v}" for p, v in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for q in vcs:
        cells = " | ".join(f"{table[c].get(q, float('nan')):.2f}" for c in cols)
        print(f"| {q} | {nominal.get(q, sum(nominal.values()))} | {cells} |")
    if anomaly:
        print("\nsharing anomaly (h): queueing in the shared cluster − on a private cluster "
              "of the VC's nominal GPUs (> 0: the VC waits longer than alone; – : no run)")  # fmt: skip
        acols = list(anomaly)
        print("| VC | nominal GPUs | " + " | ".join(f"{p} {v}" for p, v in acols) + " |")
        print("|---|---|" + "---|" * len(acols))
        for q in vcs[:-1]:
            vals = [anomaly[c].get(q) for c in acols]
            cells = " | ".join("–" if v is None else f"{v:+.2f}" for v in vals)
            print(f"| {q} | {nominal.get(q, 0)} | {cells} |")


if __name__ == "__main__":
    main()
