"""Gavel's own numbers for the fidelity check of issue #17 (docs/gavel-reference.md).

For each (cluster, arrival rate, single/multi-GPU) configuration this script

1. generates a trace with **Gavel's own generator** (``utils.generate_job`` with the random
   streams ``Scheduler.simulate`` uses: ``Random(seed+2)`` for jobs, ``Random(seed+3)`` for
   arrivals) run in Gavel's Python, and writes it in Gavel's 10-column trace format;
2. checks that ``ddlsched.workloads.gavel_gen`` writes the byte-identical file (if importable);
3. runs Gavel's ``scripts/drivers/simulate_scheduler_with_trace.py`` on that file for every
   policy (round length 360 s, ECOS, seed 0, one GPU per server, no space sharing) and records
   Gavel's average JCT over all jobs of the trace.

Results go to ``<out>/reference.json``; traces to ``<out>/traces/``. Nothing is written into the
repository. Needs a Python 3.11 venv with cvxpy, ecos, numpy, scipy, psutil (``--gavel-python``)
and Gavel's repository (a bare mirror or a checkout: ``--gavel-repo``); the working copy is
made under ``<out>/gavel`` and edited by ``benchmarks/gavel_patches/simulation_only.py``.

    python benchmarks/gavel_reference.py                     # the default grid
    python benchmarks/gavel_reference.py --policies fifo --configs 4:4:4,18000,0 --num-jobs 50
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PATCH = HERE / "gavel_patches" / "simulation_only.py"

POLICIES = (
    "fifo",
    "fifo_perf",
    "max_min_fairness",
    "max_min_fairness_perf",
    "finish_time_fairness",
    "finish_time_fairness_perf",
    "min_total_duration_perf",
)
# cluster (v100:p100:k80), lam (Gavel's --lam: mean inter-arrival time, s), multi-GPU jobs
CONFIGS = (
    ("4:4:4", 18000.0, False),
    ("4:4:4", 9000.0, False),
    ("4:4:4", 6000.0, False),
    ("4:4:4", 3600.0, False),
    ("8:8:8", 18000.0, True),
    ("8:8:8", 9000.0, True),
    ("8:8:8", 6000.0, True),
    ("8:8:8", 3600.0, True),
)

# Run in Gavel's Python with cwd = <gavel>/scheduler: Gavel's generator, Gavel's streams.
GEN_SNIPPET = r"""
import math, random, sys
sys.path.insert(0, '.')
import utils
n, lam, seed, multi, out, tp = sys.argv[1:7]
n, lam, seed, multi = int(n), float(lam), int(seed), multi == '1'
throughputs = utils.read_all_throughputs_json_v2(tp)
job_gen = random.Random(); job_gen.seed(seed + 2)   # as Scheduler._initialize_seeds
arr_gen = random.Random(); arr_gen.seed(seed + 3)
t = 0.0
with open(out, 'w') as f:
    for _ in range(n):
        job = utils.generate_job(throughputs=throughputs, reference_worker_type='v100',
                                 rng=job_gen, job_id=None, fixed_job_duration=None,
                                 generate_multi_gpu_jobs=multi,
                                 generate_multi_priority_jobs=False, SLO_rng=None)
        f.write('%s\t%f\n' % (str(job), t))     # Scheduler.simulate's output_trace_file line
        t = -math.log(1.0 - arr_gen.random()) / (1.0 / lam) + t   # same expression as Gavel
"""


def sh(cmd: list[str], **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def prepare_gavel(repo: Path, work: Path) -> str:
    """A patched working copy of Gavel's ``scheduler/`` under ``work``; returns the commit."""
    git = ["git", "-C", str(repo)]
    commit = sh([*git, "rev-parse", "HEAD"]).strip()
    sched = work / "scheduler"
    if not (sched / "scheduler.py").exists():
        work.mkdir(parents=True, exist_ok=True)
        files = [
            f
            for f in sh([*git, "ls-tree", "-r", "--name-only", "HEAD", "scheduler"]).split("\n")
            # the mirror lacks some trace blobs; the simulator needs none of them
            if f and not f.startswith("scheduler/traces/")
        ]
        archive = subprocess.run(
            [*git, "archive", "HEAD", *files], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    subprocess.run([sys.executable, str(PATCH), str(sched)], check=True)  # idempotent
    return commit


def gen_trace(py: str, sched: Path, out: Path, n: int, lam: float, seed: int, multi: bool):
    tp = str(sched / "simulation_throughputs.json")
    args = [py, "-c", GEN_SNIPPET, str(n), repr(lam), str(seed), "1" if multi else "0"]
    subprocess.run([*args, str(out), tp], cwd=sched, check=True)


def ours_identical(trace: Path, tp: Path, n: int, lam: float, seed: int, multi: bool):
    """True/False: does ddlsched's generator write the same bytes? None if not importable."""
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from ddlsched.workloads.gavel_gen import generate_gavel_jobs, write_gavel_trace
    except ImportError:
        return None
    mine = trace.with_suffix(".ddlsched.trace")
    write_gavel_trace(generate_gavel_jobs(n, lam, seed, tp, multi_gpu=multi), mine)
    same = mine.read_bytes() == trace.read_bytes()
    mine.unlink()
    return same


_AVG = re.compile(r"^Average job completion time: ([0-9.]+) seconds", re.M)
_UTIL = re.compile(r"^Cluster utilization: ([0-9.]+)", re.M)
_TOTAL = re.compile(r"^Total duration: ([0-9.]+) seconds", re.M)
_JOB = re.compile(r"^Job (\d+): ([0-9.]+)$", re.M)


def run_policy(
    py: str, sched: Path, trace: Path, cluster: str, policy: str, a: argparse.Namespace
) -> dict:
    """Gavel on ``trace`` with ``a.solver``; if that solver fails (cvxpy ``SolverError``) and
    ``a.fallback_solver`` is set, once more with the fallback, recording both."""
    r = _run_policy(py, sched, trace, cluster, policy, a, a.solver)
    if "SolverError" in r.get("error", "") and a.fallback_solver:
        first = r
        r = _run_policy(py, sched, trace, cluster, policy, a, a.fallback_solver)
        r["first_try"] = {"solver": a.solver, "error": first["error"][-400:]}
    return r


def _run_policy(
    py: str, sched: Path, trace: Path, cluster: str, policy: str, a: argparse.Namespace, solver: str
) -> dict:
    cmd = [
        py,
        "scripts/drivers/simulate_scheduler_with_trace.py",
        "-t",
        str(trace),
        "-p",
        policy,
        "-c",
        cluster,
        "--seed",
        str(a.seed),
        "--solver",
        solver,
        "--time_per_iteration",
        str(a.round),
        "--throughputs_file",
        "simulation_throughputs.json",
    ]
    env = dict(os.environ, GAVEL_LOG_LEVEL="WARNING", OPENBLAS_NUM_THREADS="1")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            cmd, cwd=sched, env=env, capture_output=True, text=True, timeout=a.timeout
        )
    except subprocess.TimeoutExpired:
        return {"policy": policy, "error": f"timeout after {a.timeout} s", "command": cmd}
    wall = time.perf_counter() - t0
    m = _AVG.search(p.stdout)
    if p.returncode != 0 or m is None:
        return {"policy": policy, "error": p.stderr[-2000:], "command": cmd, "wall_s": wall}
    jcts = {int(j): float(v) for j, v in _JOB.findall(p.stdout)}
    return {
        "policy": policy,
        "solver": solver,
        "avg_jct_s": float(m.group(1)),
        "num_jobs_measured": len(jcts),
        "makespan_s": float(_TOTAL.search(p.stdout).group(1)),
        "utilization": float(_UTIL.search(p.stdout).group(1)),
        "wall_s": round(wall, 2),
        "command": " ".join(cmd),
        "jct_s": [jcts[k] for k in sorted(jcts)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gavel-repo", default="/work/.mirror/stanford-futuredata+gavel/repo")
    ap.add_argument("--gavel-python", default="/work/gavel-env/bin/python")
    ap.add_argument("--out", type=Path, default=Path("/work/gavel-run"))
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument(
        "--configs",
        nargs="*",
        help="cluster,lam,multi (e.g. 4:4:4,18000,0); default: the grid in CONFIGS",
    )
    ap.add_argument("--num-jobs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--round", type=int, default=360, help="Gavel's time_per_iteration, s")
    ap.add_argument("--solver", default="ECOS")
    ap.add_argument(
        "--fallback-solver", default="SCS", help="rerun with this solver if cvxpy fails ('' : none)"
    )
    ap.add_argument("--timeout", type=float, default=1800.0, help="per Gavel run, s")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="Gavel runs in parallel")
    a = ap.parse_args(argv)

    work = a.out / "gavel"
    commit = prepare_gavel(Path(a.gavel_repo), work)
    sched = work / "scheduler"
    configs = CONFIGS
    if a.configs:
        configs = tuple(
            (c, float(lam), m not in ("0", "false", ""))
            for c, lam, m in (s.split(",") for s in a.configs)
        )
    (a.out / "traces").mkdir(parents=True, exist_ok=True)
    settings = {
        "driver": "scheduler/scripts/drivers/simulate_scheduler_with_trace.py",
        "time_per_iteration_s": a.round,
        "solver": a.solver,
        "seed": a.seed,
        "num_gpus_per_server": "1:1:1",
        "space_sharing": False,
        "measured_jobs": "all jobs of the trace (no window)",
        "patch": str(PATCH.relative_to(ROOT)),
    }
    records: list[dict] = []
    for cluster, lam, multi in configs:
        name = f"gavel_n{a.num_jobs}_lam{lam:g}_s{a.seed}_{'multi' if multi else 'single'}.trace"
        trace = a.out / "traces" / name
        gen_trace(a.gavel_python, sched, trace, a.num_jobs, lam, a.seed, multi)
        same = ours_identical(
            trace, sched / "simulation_throughputs.json", a.num_jobs, lam, a.seed, multi
        )
        digest = hashlib.sha256(trace.read_bytes()).hexdigest()
        print(f"{name}: ddlsched generator identical = {same}", flush=True)
        with cf.ThreadPoolExecutor(a.jobs) as pool:
            futs = [
                pool.submit(run_policy, a.gavel_python, sched, trace, cluster, p, a)
                for p in a.policies.split(",")
            ]
            for f in futs:
                r = f.result()
                rec = {
                    "trace_file": str(trace),
                    "trace_sha256": digest,
                    "cluster": cluster,
                    "lam_s": lam,
                    "jobs_per_hour": 3600.0 / lam,
                    "multi_gpu": multi,
                    "num_jobs": a.num_jobs,
                    "gavel_commit": commit,
                    "settings": settings,
                    "ddlsched_generator_identical": same,
                    **r,
                }
                records.append(rec)
                jct = rec.get("avg_jct_s")
                print(
                    f"  {cluster} lam={lam:g} multi={multi} {rec['policy']:28s} "
                    + (
                        f"avg JCT {jct / 3600:8.2f} h  wall {rec['wall_s']:7.1f} s"
                        if jct
                        else rec["error"][-300:]
                    ),
                    flush=True,
                )
                (a.out / "reference.json").write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
