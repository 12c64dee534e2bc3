"""The live study of issue #30 (docs/testbed.md "The live study"): Wang et al.'s schedulers on a
real network, beside the simulator's prediction for the same jobs.

One workload of synthetic all-reduce jobs (examples/testbed/allreduce_job.py: per iteration a
sleep of ``compute_s`` then a ring all-reduce of ``mb`` MB over the job's workers) runs live on a
testbed of 4 servers × 2 GPUs (``ddlsched live --testbed``) under each policy — SRSF order, LWF-1
or FF placement (benchmarks/testbed_policies.py), gate adadual / srsf1 / srsf2 — and
``ddlsched run`` simulates the same jobs on the testbed's cluster file under the matching preset
(``ada-srsf``, ``srsf1``, ``srsf2``; ``--placement ff``) with Wang's model fitted by ``testbed
measure`` (``--set a/b/eta``). The table: policy, live avg JCT, simulated avg JCT, difference.

    python benchmarks/testbed_study.py --summary results/contention/summary.json --out /tmp/study
    python benchmarks/testbed_study.py --measure --out /tmp/study     # measures first

Root (network namespaces). The testbed ``--name`` is brought up and taken down by the script
(``--keep`` keeps it). Every job spans servers (3–5 GPUs on 2-GPU servers). Simulated jobs
carry ``size_mb`` = M · 2(w−1)/w: the bytes a ring all-reduce of w workers puts on each uplink,
relative to the 2-worker all-reduces the fit measured; the live jobs tell the gate the same
(``--ask-link-bytes``). A simulated job's start-up (``--startup``, seconds without progress at
its start: the live processes' start and rendezvous) is added as its first iteration's extra
compute.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

#: (job_id, arrival s, gpus, iterations, compute_s, mb)
JOBS = [
    (0, 0.0, 3, 25, 0.4, 4.0),
    (1, 0.0, 3, 40, 0.4, 1.0),
    (2, 8.0, 4, 15, 0.3, 4.0),
    (3, 15.0, 3, 30, 0.5, 2.0),
    (4, 25.0, 5, 12, 0.3, 4.0),
    (5, 35.0, 3, 20, 0.35, 2.0),  # not 0.3: job 4's key (18) would tie
]

#: name → (live policy factory, gate, simulated preset, simulated placement)
POLICIES = {
    "Ada-SRSF (LWF-1)": ("srsf_lwf", "adadual", "ada-srsf", "lwf"),
    "SRSF(1) (LWF-1)": ("srsf_lwf", "srsf1", "srsf1", "lwf"),
    "SRSF(2) (LWF-1)": ("srsf_lwf", "srsf2", "srsf2", "lwf"),
    "SRSF(1) (FF)": ("srsf_ff", "srsf1", "srsf1", "ff"),
    "Ada-SRSF (FF)": ("srsf_ff", "adadual", "ada-srsf", "ff"),
    # Yu's offline planners on the same jobs as model jobs (no gate): the plan `ddlsched run`
    # makes under Yu's RAR model with the fit's `yu` block, executed live
    "SJF-BCO (plan)": ("", "", "sjf-bco", ""),
    "Yu FF (plan)": ("", "", "yu-ff", ""),
}


def ddlsched(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([PY, "-m", "ddlsched", *args], env=env, check=check, **kw)


def link_factor(w: int) -> float:
    return 2 * (w - 1) / w if w > 1 else 0.0


def write_live_jobs(path: Path, fit: dict) -> None:
    lines = ["# the testbed study's jobs (benchmarks/testbed_study.py)"]
    for jid, arr, g, it, c, mb in JOBS:
        cmd = [
            PY,
            "examples/testbed/allreduce_job.py",
            "--iters", str(it), "--compute-s", str(c), "--mb", str(mb),
            "--backend", "ring", "--ask-link-bytes",
        ]  # fmt: skip
        # SRSF's queue key is Wang's L_J with E_J = 0 (docs/models.md): compute × GPUs; the
        # live policy orders by `duration`, so that is what it gets
        dur = it * c * g
        lines += [
            "[[jobs]]",
            f"job_id = {jid}",
            f"arrival = {arr}",
            f"gpus = {g}",
            "command = [" + ", ".join(json.dumps(x) for x in cmd) + "]",
            f"duration = {dur:.3f}",
            "",
        ]
    path.write_text("\n".join(lines))


def write_model_jobs(path: Path) -> None:
    """The study's jobs as live model jobs (the planners' input): the same commands, no gate;
    ``size_mb`` the all-reduce's M (Yu's model counts the ring's 2(w−1)/w itself)."""
    lines = ["# the testbed study's jobs as model jobs (benchmarks/testbed_study.py)"]
    for jid, arr, g, it, c, mb in JOBS:
        cmd = [
            PY, "examples/testbed/allreduce_job.py", "--iters", str(it), "--compute-s", str(c),
            "--mb", str(mb), "--backend", "ring",
        ]  # fmt: skip
        lines += [
            "[[jobs]]", f"job_id = {jid}", f"arrival = {arr}", f"gpus = {g}",
            "command = [" + ", ".join(json.dumps(x) for x in cmd) + "]",
            f"iterations = {it}", f"size_mb = {mb}", f"t_forward = {c}", "",
        ]  # fmt: skip
    path.write_text("\n".join(lines))


def write_sim_jobs(path: Path, startup: float, per_link: bool = True) -> None:
    """The jobs for ``ddlsched run``. ``per_link``: ``size_mb`` is the bytes per uplink
    relative to the fit's 2-worker all-reduces, M · 2(w−1)/w (the Wang rows); else M itself
    (the planner rows: Yu's model counts the ring, and ``ring_bytes`` does for Wang's)."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            "job_id,arrival,num_gpus,iterations,model,size_mb,memory_mb,batch_size,"
            "t_forward,t_backward".split(",")
        )
        for jid, arr, g, it, c, mb in JOBS:
            # the start-up is spread over the iterations' compute (Wang's model has no
            # per-job start cost; this keeps the job's solo time right)
            extra = startup / it
            size = mb * link_factor(g) if per_link else mb
            w.writerow([jid, arr, g, it, f"tb{jid}", size, 9000, 1, c + extra, 0])


def read_jobs(d: Path) -> dict[int, dict]:
    with (d / "jobs.csv").open() as f:
        return {int(r["job_id"]): r for r in csv.DictReader(f)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", default="tbs2")
    ap.add_argument("--bandwidth", default="50mbit")
    ap.add_argument("--summary", help="a `testbed measure` summary.json (else --measure)")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--startup", type=float, default=0.0, help="simulated start-up per job, s")
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated names")
    ap.add_argument("--sim-only", action="store_true")
    ap.add_argument("--keep", action="store_true", help="leave the testbed up")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [p.strip() for p in args.policies.split(",") if p.strip()]
    for n in names:
        if n not in POLICIES:
            ap.error(f"--policies: unknown {n!r}; known: {', '.join(POLICIES)}")
    if not args.sim_only:
        ddlsched("testbed", "down", "--name", args.name, check=False, capture_output=True)
        ddlsched(
            "testbed", "up", "--name", args.name, "--servers", "4", "--gpus-per-server", "2",
            "--bandwidth", args.bandwidth,
        )  # fmt: skip
    try:
        if args.summary:
            fit = json.loads(Path(args.summary).read_text())
        else:
            if not args.measure:
                ap.error("give --summary FILE or --measure")
            # measure needs 4 GPUs on each of 2 servers: its own 2-server testbed
            mname = args.name + "m"
            ddlsched("testbed", "down", "--name", mname, check=False, capture_output=True)
            ddlsched(
                "testbed", "up", "--name", mname, "--servers", "2", "--gpus-per-server", "4",
                "--bandwidth", args.bandwidth,
            )  # fmt: skip
            try:
                ddlsched(
                    "testbed", "measure", "--name", mname, "--out", str(out / "measure"),
                    "--backend", "ring", "--reps", "1",
                )  # fmt: skip
            finally:
                ddlsched("testbed", "down", "--name", mname, check=False)
            fit = json.loads((out / "measure" / "summary.json").read_text())
        # a cluster file like the testbed's (the simulator needs no [testbed] table)
        cluster = out / "cluster.toml"
        gbps = float(args.bandwidth.removesuffix("mbit")) / 1000
        cluster.write_text(
            f'name = "study"\n[defaults]\nnetwork_bandwidth_gbps = {gbps}\n'
            "[[servers]]\nnum_gpus = 2\ncount = 4\n"
        )
        write_live_jobs(out / "jobs.toml", fit)
        write_sim_jobs(out / "jobs.csv", args.startup)
        write_model_jobs(out / "jobs-model.toml")
        write_sim_jobs(out / "jobs-model.csv", args.startup, per_link=False)
        sets = ["--set", f"a={fit['a']}", "--set", f"b={fit['b']}", "--set", f"eta={fit['eta']}"]
        yu = fit.get("yu", {})  # a fit without Yu's block: the planners plan with defaults
        yu_sets = [
            x for k in ("xi1", "xi2", "alpha") if k in yu for x in ("--set", f"{k}={yu[k]!r}")
        ]
        rows = []
        for name in names:
            factory, gate, preset, placement = POLICIES[name]
            planner = not factory
            slug = preset if planner else f"{preset}-{placement}"
            sim_dir = out / f"sim-{slug}"
            how = (
                ["--workload", str(out / "jobs-model.csv"), "--policy", preset, *yu_sets]
                if planner
                else ["--workload", str(out / "jobs.csv"), "--policy", preset,
                      "--placement", placement, *sets]
            )  # fmt: skip
            ddlsched(
                "run", "--cluster", str(cluster), *how, "--out", str(sim_dir), "--quiet",
                "--overwrite",
            )  # fmt: skip
            sim = json.loads((sim_dir / "summary.json").read_text())
            row = {"policy": name, "sim_avg_jct": sim["avg_jct"], "sim_makespan": sim["makespan"]}
            if planner:
                row["planned_makespan"] = sim["planned_makespan"]
                # the same plan executed under Wang's iteration-level model with the fitted
                # a, b, η, each w-worker ring moving 2(w−1)/w·M per uplink (`ring_bytes`)
                wang_dir = out / f"sim-{slug}-wang"
                ddlsched(
                    "run", "--cluster", str(cluster), *how, "--set", "model=wang", "--set",
                    "ring_bytes=true", *sets, "--out", str(wang_dir), "--quiet", "--overwrite",
                )  # fmt: skip
                wang = json.loads((wang_dir / "summary.json").read_text())
                row.update(wang_avg_jct=wang["avg_jct"], wang_makespan=wang["makespan"])
            sim_place = {j: r.get("placement", "") for j, r in read_jobs(sim_dir).items()}
            if not args.sim_only:
                live_dir = out / f"live-{slug}"
                load0 = os.getloadavg()[0]
                t0 = time.monotonic()
                how = (
                    ["--workload", str(out / "jobs-model.toml"), "--policy", preset, *yu_sets]
                    if planner
                    else ["--workload", str(out / "jobs.toml"), "--policy",
                          f"benchmarks/testbed_policies.py:{factory}", "--gate", gate, *sets]
                )  # fmt: skip
                ddlsched(
                    "live", "--testbed", args.name, *how, "--out", str(live_dir), "--quiet",
                    "--overwrite", "--grace", "5",
                )  # fmt: skip
                live = json.loads((live_dir / "summary.json").read_text())
                live_jobs = read_jobs(live_dir)
                row.update(
                    live_avg_jct=live["avg_jct"],
                    live_makespan=live["makespan"],
                    diff=(sim["avg_jct"] - live["avg_jct"]) / live["avg_jct"],
                    makespan_diff=(sim["makespan"] - live["makespan"]) / live["makespan"],
                    **(
                        {
                            "wang_diff": (row["wang_avg_jct"] - live["avg_jct"]) / live["avg_jct"],
                            "wang_makespan_diff": (row["wang_makespan"] - live["makespan"])
                            / live["makespan"],
                        }
                        if planner
                        else {}
                    ),
                    wall_s=round(time.monotonic() - t0, 1),
                    load=f"{load0:.2f}→{os.getloadavg()[0]:.2f}",
                    comm_asks=live.get("comm_asks"),
                    comm_waits=live.get("comm_waits"),
                    same_placement=all(
                        live_jobs[j].get("placement", "") == sim_place.get(j) for j in live_jobs
                    ),
                    live_jct={j: round(float(r["jct"]), 2) for j, r in live_jobs.items()},
                )
            row["sim_jct"] = {j: round(float(r["jct"]), 2) for j, r in read_jobs(sim_dir).items()}
            rows.append(row)
            print(json.dumps(row), flush=True)
        (out / "study.json").write_text(json.dumps({"fit": fit, "rows": rows}, indent=1))
        print("\n| policy | live avg JCT (s) | simulated (s) | difference "
              "| live makespan (s) | simulated (s) | difference |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            live_s = f"{r['live_avg_jct']:.1f}" if "live_avg_jct" in r else "—"
            diff = f"{100 * r['diff']:+.1f} %" if "diff" in r else "—"
            live_m = f"{r['live_makespan']:.1f}" if "live_makespan" in r else "—"
            mdiff = f"{100 * r['makespan_diff']:+.1f} %" if "makespan_diff" in r else "—"
            print(f"| {r['policy']} | {live_s} | {r['sim_avg_jct']:.1f} | {diff} | {live_m} "
                  f"| {r['sim_makespan']:.1f} | {mdiff} |")  # fmt: skip
            if "wang_avg_jct" in r:  # the plan executed under Wang's model
                wd = f"{100 * r['wang_diff']:+.1f} %" if "wang_diff" in r else "—"
                wm = f"{100 * r['wang_makespan_diff']:+.1f} %" if "wang_makespan_diff" in r else "—"
                print(f"| {r['policy']}, executed under Wang's model | {live_s} "
                      f"| {r['wang_avg_jct']:.1f} | {wd} | {live_m} | {r['wang_makespan']:.1f} "
                      f"| {wm} |")  # fmt: skip
    finally:
        if not args.sim_only and not args.keep:
            ddlsched("testbed", "down", "--name", args.name, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
