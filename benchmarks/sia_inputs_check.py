"""Check (issue #29): read every workload and profile of the Sia artifact as ddlsched reads them.

Not a test: ``python benchmarks/sia_inputs_check.py SIA_DIR [--run POLICY ...]``, where
``SIA_DIR`` is the artifact's ``sia-simulator`` folder extracted somewhere (or a folder holding
it), e.g. ``git -C ARTIFACT archive HEAD sia-simulator | tar -x -C /tmp/sia`` then
``/tmp/sia``. The artifact has no licence, so nothing of it is in this repository: the check
runs on a copy you have. It prints

- per workload folder: files, jobs, the formats detected, jobs per application, GPU counts
  and batch sizes asked for, arrival span;
- per application: the GPU types it has tables for, and per type its rows (placements,
  scalability), measured local batches, nodes measured, ``max_epochs``; the default
  (unsuffixed) tables; that the nodes measured per type are the artifact's
  ``cluster_max_physical_nnodes``;
- per ``sia-*`` cluster preset: whether every application of the workloads has tables for
  all its types, and how many jobs ask for a batch some type's tables cannot run at their GPU
  count (the type-blind ``fifo``/``sjf``/``tiresias`` refuse such workloads; ``pollux`` picks
  batches itself);
- with ``--run POLICY``: ``ddlsched run`` of ``workloads/philly/workload-1.csv`` on ``sia-64``
  with the artifact's profiles under each policy, its summary line and wall time.

Exit status 0 when everything reads, 1 otherwise (each problem printed on one line).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ddlsched.backends.profile import batch_problem
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.sia_clusters import SIA_CLUSTERS, SIA_MAX_PHYSICAL_NODES
from ddlsched.errors import InputError
from ddlsched.perf.typed_profiles import (
    SIA_PIPELINE_APPS,
    load_profiles,
    load_sia_application,
    profile_types,
)
from ddlsched.workloads.traces import detect_format, read_trace


def simulator_dir(path: Path) -> Path:
    """``path`` itself when it holds ``traces/`` and ``workloads/``, else its ``sia-simulator``."""
    if (path / "traces").is_dir() and (path / "workloads").is_dir():
        return path
    return path / "sia-simulator"


def span(values: list[float]) -> str:
    return f"{min(values):g}–{max(values):g}" if values else "-"


def check_workloads(root: Path, problems: list[str]) -> dict[str, list]:
    """Every workload CSV under ``root/workloads``, by folder; prints counts per folder."""
    by_folder: dict[str, list] = {}
    files = sorted(root.glob("workloads/**/*.csv"))
    for f in files:
        folder = str(f.parent.relative_to(root / "workloads"))
        try:
            fmt = detect_format(f)
            jobs = read_trace(f)
        except InputError as e:
            problems.append(str(e))
            continue
        by_folder.setdefault(folder, []).append((f, fmt, jobs))
    total_files = sum(len(v) for v in by_folder.values())
    total_jobs = sum(len(j) for v in by_folder.values() for _, _, j in v)
    print(f"workloads: {total_files} files, {total_jobs} jobs, {len(by_folder)} folders")
    for folder, entries in sorted(by_folder.items()):
        jobs = [j for _, _, js in entries for j in js]
        formats = Counter(fmt for _, fmt, _ in entries)
        apps = Counter(j.application for j in jobs)
        cats = Counter(j.category for j in jobs if j.category)
        print(
            f"  {folder:16s} {len(entries):3d} files {len(jobs):6d} jobs  formats "
            f"{dict(formats)}  GPUs {span([j.num_gpus for j in jobs])}  batch "
            f"{span([j.batch_size for j in jobs])}  arrivals {span([j.arrival for j in jobs])} s"
        )
        print(
            f"  {'':16s} apps {dict(sorted(apps.items()))}"
            + (f"  categories {dict(cats)}" if cats else "")
        )
    return by_folder


def check_profiles(root: Path, problems: list[str]) -> dict[str, dict[str, object]]:
    """Every application's tables on every GPU type; prints one line per (app, type)."""
    traces = root / "traces"
    layout = profile_types(traces)
    print(f"profiles: {len(layout)} applications in {traces}")
    loaded: dict[str, dict[str, object]] = {}
    nodes: dict[str, set[int]] = {}
    for app, types in layout.items():
        loaded[app] = {}
        note = (
            "  (pipeline-parallel in Sia: read, not runnable)" if app in SIA_PIPELINE_APPS else ""
        )
        print(f"  {app}: types {', '.join(types)}{note}")
        for t in types:
            try:
                a = load_sia_application(traces / app, t)
            except InputError as e:
                problems.append(str(e))
                continue
            loaded[app][t] = a
            if app not in SIA_PIPELINE_APPS:
                nodes.setdefault(t, set()).add(a.max_nodes)  # type: ignore[arg-type]
            rows = sum(1 for _ in open(traces / app / f"placements-{t}.csv")) - 1
            scal = sum(1 for _ in open(traces / app / f"scalability-{t}.csv")) - 1
            print(
                f"    {t:8s} {rows:5d} placement rows {scal:5d} scalability rows  local "
                f"[{a.min_local}, {a.max_local}]  nodes ≤ {a.max_nodes}  "
                f"max_epochs {a.max_epochs}  batches {a.init_bsz}–{a.max_bsz}"
            )
    try:
        default = load_profiles(traces)
        print(f"  default (unsuffixed) tables: {', '.join(sorted(default)) or 'none'}")
    except InputError as e:
        problems.append(str(e))
    for t, seen in sorted(nodes.items()):
        want = SIA_MAX_PHYSICAL_NODES.get(t)
        same = "=" if seen == {want} else "≠"
        print(f"  nodes measured on {t}: {sorted(seen)} {same} cluster_max_physical_nnodes {want}")
        if seen != {want}:
            problems.append(f"{t}: nodes measured {sorted(seen)}, artifact's maximum {want}")
    return loaded


def check_presets(
    workloads: dict[str, list], loaded: dict[str, dict[str, object]], problems: list[str]
) -> None:
    """Per sia-* preset: tables for every type, and jobs whose batch a type cannot run."""
    jobs = [j for entries in workloads.values() for _, _, js in entries for j in js]
    apps = sorted({j.application for j in jobs})
    for name in SIA_CLUSTERS:
        types = list(load_cluster(name).gpu_types)
        missing = [f"{a}/{t}" for a in apps for t in types if t not in loaded.get(a, {})]
        if missing:
            problems.append(f"{name}: no tables for {', '.join(missing)}")
        bad = Counter()
        for j in jobs:
            for t in types:
                app = loaded.get(j.application, {}).get(t)
                if app is not None and batch_problem(app, j.num_gpus, j.batch_size, t):
                    bad[t] += 1
        print(
            f"  {name:16s} types {', '.join(types)}: tables for every application "
            f"{'yes' if not missing else 'NO'}; jobs whose batch a type cannot run at their GPU "
            f"count: {dict(bad) or 0}"
        )


def run_policies(root: Path, policies: list[str]) -> None:
    wl = root / "workloads" / "philly" / "workload-1.csv"
    for policy in policies:
        with tempfile.TemporaryDirectory() as tmp:
            argv = [sys.executable, "-m", "ddlsched.cli", "run", "--cluster", "sia-64"]
            argv += ["--workload", str(wl), "--set", f"profiles={root / 'traces'}"]
            argv += ["--policy", policy, "--quiet", "--out", str(Path(tmp) / "out")]
            t0 = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
            wall = time.perf_counter() - t0
        line = next((x for x in proc.stdout.splitlines() if "avg JCT" in x), proc.stderr.strip())
        print(f"  run {policy:10s} {wall:6.1f} s  exit {proc.returncode}  {line}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sia_dir", type=Path, help="the extracted sia-simulator folder (or its parent)")
    ap.add_argument("--run", action="append", default=[], metavar="POLICY")
    args = ap.parse_args(argv)
    root = simulator_dir(args.sia_dir)
    if not (root / "traces").is_dir():
        print(f"{args.sia_dir}: no sia-simulator/traces here", file=sys.stderr)
        return 1
    problems: list[str] = []
    workloads = check_workloads(root, problems)
    loaded = check_profiles(root, problems)
    print("presets:")
    check_presets(workloads, loaded, problems)
    if args.run:
        run_policies(root, args.run)
    for p in problems:
        print(f"problem: {p}")
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
