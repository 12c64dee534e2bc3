"""The mix of Luo et al.'s workloads: the Pollux artifact's files against ``PAPER_WORKLOAD``.

Not a test. Needs the Pollux artifact data (``$DDLSCHED_POLLUX_DATA``, else ../shared/data/pollux):
the profiles for the run times, the Philly trace for the generated workloads.

    python benchmarks/luo24_workload_mix.py [--seeds 40]        # the table
    python benchmarks/luo24_workload_mix.py --fit [--seeds 40]  # the grid behind PAPER_WORKLOAD

Per workload set (8 workloads each): share of large jobs (> 4 GPUs, Luo §VI-C), GPU-count
histogram, applications, arrivals per hour, each job's *exclusive run time* on the Pollux
profiles (its GPUs packed 4 per server, its batch, all epochs: what SJF/FIFO's JCT − queueing
measures) averaged over all / small / large jobs, and the offered load (GPU-hours asked per hour
of arrivals / 64 GPUs). docs/reproduction/luo24.md, "A workload that matches the paper", quotes it.

``--fit``: the grid over ``duration_scale`` and the small jobs' 1-GPU share (the rest on 4 GPUs;
large jobs on Pollux's counts; ``large_share`` 0.122) that chose ``PAPER_WORKLOAD``: the squared
relative errors of the small and large jobs' mean run time against Table III's 0.55 / 1.74 h.
"""

from __future__ import annotations

import argparse
import functools
from collections import Counter
from pathlib import Path

from ddlsched.experiments.luo24 import pollux_data
from ddlsched.perf.profiles import load_applications
from ddlsched.workloads.io import read_workload
from ddlsched.workloads.luo24 import (
    LARGE_JOB_MIN_GPUS,
    PAPER_WORKLOAD,
    generate_paper_workload,
)

#: Luo et al. Tables III–IV, JCT − queueing of SJF (= FIFO, Tiresias in Table III), hours
PAPER = {240: (0.69, 0.55, 1.74), 480: (0.68, 0.55, 1.65)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--fit", action="store_true", help="print the grid behind PAPER_WORKLOAD")
    args = ap.parse_args()
    root = pollux_data()
    if root is None:
        raise SystemExit("no Pollux data: set DDLSCHED_POLLUX_DATA or add ../shared/data/pollux")
    apps = load_applications(root / "traces")

    @functools.cache
    def run_hours(app: str, gpus: int, batch: int) -> float:
        a = apps[app]
        placement = (4,) * (gpus // 4) + ((gpus % 4,) if gpus % 4 else ())
        cfg = a.batch_config(gpus, batch)
        seconds = sum(
            (a.progress_at(e + 1) - a.progress_at(e)) / a.rate(placement, cfg, e)
            for e in range(a.max_epochs)
        )
        return seconds / 3600

    seeds = range(1, args.seeds + 1)
    philly = root / "traces" / "philly.csv"
    if args.fit:
        _fit(run_hours, seeds, philly)
        return
    sets = [
        ("workloads-1.5", 240, [read_workload(f) for f in _files(root / "workloads-1.5")]),
        ("paper-workload, 240", 240, [generate_paper_workload(s, philly=philly) for s in seeds]),
        (
            "workloads-3.0-generated",
            480,
            [read_workload(f) for f in _files(root / "workloads-3.0-generated")],
        ),  # noqa: E501
        (
            "paper-workload, 480",
            480,
            [generate_paper_workload(s, num_jobs=480, philly=philly) for s in seeds],
        ),  # noqa: E501
    ]
    print("| workload | large | run time all / small / large (h) | paper | arrivals/h | load |")
    print("|---|---|---|---|---|---|")
    details = []
    for name, n, workloads in sets:
        jobs = [j for w in workloads for j in w]
        runs = [(j.num_gpus, run_hours(j.application, j.num_gpus, j.batch_size)) for j in jobs]
        large = [r for g, r in runs if g >= LARGE_JOB_MIN_GPUS]
        small = [r for g, r in runs if g < LARGE_JOB_MIN_GPUS]
        span_h = [max(j.arrival for j in w) / 3600 for w in workloads]
        window_h = max(8.0, max(span_h))
        rate = len(jobs) / len(workloads) / window_h
        gpu_hours = sum(g * r for g, r in runs) / len(workloads)
        print(
            f"| {name} | {len(large) / len(runs):.1%} | {_mean(r for _, r in runs):.2f} / "
            f"{_mean(small):.2f} / {_mean(large):.2f} | {' / '.join(map(str, PAPER[n]))} | "
            f"{rate:.0f} | {gpu_hours / window_h / 64:.2f} |"
        )
        hist = Counter(g for g, _ in runs)
        apps_mix = Counter(j.application for j in jobs)
        details.append(
            f"{name}: GPUs "
            + ", ".join(f"{g}: {c / len(runs):.1%}" for g, c in sorted(hist.items()))
            + "; apps "
            + ", ".join(f"{a} {c / len(jobs):.1%}" for a, c in sorted(apps_mix.items()))
        )
    print()
    print("\n".join(details))


def _fit(run_hours, seeds: range, philly: Path) -> None:
    large_weights = {g: w for g, w in PAPER_WORKLOAD["gpu_weights"].items() if g > 4}
    target_small, target_large = PAPER[240][1:]
    print("| duration_scale | 1-GPU share of small | all / small / large (h) | error |")
    print("|---|---|---|---|")
    rows = []
    for scale in (0.08, 0.1, 0.12, 0.13, 0.14, 0.15, 0.2):
        for p1 in (0.55, 0.6, 0.65, 0.7, 0.75):
            weights = {1: p1, 4: 1 - p1, **large_weights}
            runs = [
                (j.num_gpus, run_hours(j.application, j.num_gpus, j.batch_size))
                for s in seeds
                for j in generate_paper_workload(
                    s, philly=philly, gpu_weights=weights, duration_scale=scale
                )
            ]
            small = _mean(r for g, r in runs if g <= 4)
            large = _mean(r for g, r in runs if g > 4)
            err = ((small - target_small) / target_small) ** 2 + (
                (large - target_large) / target_large
            ) ** 2
            rows.append((err, scale, p1, _mean(r for _, r in runs), small, large))
    for err, scale, p1, a, s_, la in sorted(rows):
        print(f"| {scale} | {p1:.0%} | {a:.2f} / {s_:.2f} / {la:.2f} | {err:.4f} |")


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("workload-*.csv"), key=lambda p: int(p.stem.split("-")[1]))


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


if __name__ == "__main__":
    main()
