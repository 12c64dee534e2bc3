"""``ring_bytes`` on real rings (issue #30, docs/testbed.md "Rings of more than two workers"):
does a w-worker ring all-reduce cost 2(w−1)/w times a two-worker one, as Wang's Table I says
and ``--set ring_bytes=true`` assumes?

One job at a time (arrivals far apart, fifo) of ``examples/testbed/allreduce_job.py`` — per
iteration ``--compute-s`` of sleep, then a ring all-reduce of M MB — with w = 2 … 8 workers on a
testbed of 4 servers × 2 GPUs (first-fit: w = 2 sits on one server, no uplink; w = 3, 4 on two,
5, 6 on three, 7, 8 on four servers), live, beside ``ddlsched run`` of the same jobs under
Wang's model with the fitted a, b, η, with and without ``ring_bytes``. The table: w, live JCT,
simulated JCT either way, differences.

    python benchmarks/testbed_ring.py --summary results/tb-measure/summary.json --out /tmp/ring

Root (network namespaces); the testbed ``--name`` is brought up and taken down here.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from testbed_study import PY, ddlsched, read_jobs  # noqa: E402

#: (job_id, workers, iterations, compute_s, mb); one at a time, GAP seconds apart
JOBS = [(i, w, 12, 0.3, 4.0) for i, w in enumerate((2, 3, 4, 5, 6, 8))]
GAP = 40.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", default="tbr")
    ap.add_argument("--bandwidth", default="50mbit")
    ap.add_argument("--summary", required=True, help="a `testbed measure` summary.json")
    ap.add_argument("--sim-only", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fit = json.loads(Path(args.summary).read_text())
    gbps = float(args.bandwidth.removesuffix("mbit")) / 1000
    cluster = out / "cluster.toml"
    cluster.write_text(
        f'name = "ring"\n[defaults]\nnetwork_bandwidth_gbps = {gbps}\n'
        "[[servers]]\nnum_gpus = 2\ncount = 4\n"
    )
    lines = ["# benchmarks/testbed_ring.py: one job at a time"]
    with (out / "jobs.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow("job_id,arrival,num_gpus,iterations,model,size_mb,memory_mb,batch_size,"
                   "t_forward,t_backward".split(","))  # fmt: skip
        for jid, g, it, c, mb in JOBS:
            w.writerow([jid, jid * GAP, g, it, f"r{jid}", mb, 9000, 1, c, 0])
            cmd = [PY, "examples/testbed/allreduce_job.py", "--iters", str(it), "--compute-s",
                   str(c), "--mb", str(mb), "--backend", "ring"]  # fmt: skip
            lines += ["[[jobs]]", f"job_id = {jid}", f"arrival = {jid * GAP}", f"gpus = {g}",
                      "command = [" + ", ".join(json.dumps(x) for x in cmd) + "]", ""]  # fmt: skip
    (out / "jobs.toml").write_text("\n".join(lines))
    sets = ["--set", f"a={fit['a']}", "--set", f"b={fit['b']}", "--set", f"eta={fit['eta']}"]
    sims = {}
    for ring in ("false", "true"):
        d = out / f"sim-ring-{ring}"
        ddlsched("run", "--cluster", str(cluster), "--workload", str(out / "jobs.csv"),
                 "--policy", "fifo-ff", *sets, "--set", f"ring_bytes={ring}", "--out", str(d),
                 "--quiet", "--overwrite")  # fmt: skip
        sims[ring] = {j: float(r["jct"]) for j, r in read_jobs(d).items()}
    live: dict[int, float] = {}
    if not args.sim_only:
        ddlsched("testbed", "down", "--name", args.name, check=False, capture_output=True)
        ddlsched("testbed", "up", "--name", args.name, "--servers", "4", "--gpus-per-server",
                 "2", "--bandwidth", args.bandwidth)  # fmt: skip
        try:
            ddlsched("live", "--testbed", args.name, "--workload", str(out / "jobs.toml"),
                     "--policy", "fifo", "--out", str(out / "live"), "--quiet",
                     "--overwrite")  # fmt: skip
        finally:
            ddlsched("testbed", "down", "--name", args.name, check=False)
        live = {j: float(r["jct"]) for j, r in read_jobs(out / "live").items()}
    rows = []
    print("\n| w | live JCT (s) | Wang, M (s) | diff | Wang, ring_bytes (s) | diff |")
    print("|---|---|---|---|---|---|")
    for jid, g, *_ in JOBS:
        plain, ring = sims["false"][jid], sims["true"][jid]
        row = {"job": jid, "workers": g, "sim_m": plain, "sim_ring": ring}
        cells = ["—", "—"]
        if jid in live:
            row["live"] = live[jid]
            cells = [f"{100 * (x - live[jid]) / live[jid]:+.1f} %" for x in (plain, ring)]
        rows.append(row)
        lv = f"{live[jid]:.1f}" if jid in live else "—"
        print(f"| {g} | {lv} | {plain:.1f} | {cells[0]} | {ring:.1f} | {cells[1]} |")
    (out / "ring.json").write_text(json.dumps({"fit": fit, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
