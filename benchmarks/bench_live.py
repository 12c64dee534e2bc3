"""Benchmark: what live mode's launchers cost per launch and per stop, and the makespan of
many short jobs (issue #26).

Not a test: run ``python benchmarks/bench_live.py [--launcher ray|local|both] [--jobs 50]
[--out FILE.json]`` and record the numbers in docs/performance.md ("Live mode"). On a cluster
of 2 servers × 4 logical GPUs (``RayLauncher.local`` or ``LocalLauncher``):

1. launch overhead: from the ``launch`` call to the worker's first line of Python (the command
   is ``python -S -I -c`` writing ``time.time()`` to a file first thing), for a 1-worker job and
   a 4-worker gang (the latest rank counts), median and p90 over ``--launches`` launches; also
   how long the ``launch`` call itself blocks, and, for reference, the same command started
   with a bare ``subprocess.Popen`` (the interpreter's own start-up, in every number above);
2. stop overhead: from ``request_stop`` to ``poll`` seeing every worker exited, for a job that
   exits at once on SIGTERM (polled every 5 ms), median and p90 over ``--stops`` stops; also
   how long ``request_stop`` itself blocks;
3. makespan: ``--jobs`` jobs of 1 GPU running ``sleep 1``, all arriving at t = 0, against the
   ideal ceil(jobs / 8) × 1 s: through ``ddlsched live --policy fifo`` (its engine and
   executor, whatever they are at the time) and through a greedy FIFO loop in this script
   (``poll_many`` every 10 ms, a job launched as soon as a GPU is free: the launcher alone).

Issue #26's targets: per-launch and per-stop overhead ≤ 0.2 s median on local Ray on 2 cores;
makespan within 15 % of ideal.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
# Ray's worker processes (the launcher's hosts) import ddlsched too
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
)

from ddlsched.core.cluster import Cluster  # noqa: E402
from ddlsched.live.launchers.base import WorkerSpec  # noqa: E402

SERVERS, GPUS = 2, 4
CLUSTER_TOML = f'name = "bench-live"\n[[servers]]\nnum_gpus = {GPUS}\ncount = {SERVERS}\n'
# first thing: the wall clock into argv[1] + "." + RANK
STAMP = "import os, time; open(__import__('sys').argv[1] + '.' + os.environ['RANK'], 'w').write(repr(time.time()))"
# ready file, then exit 0 at once on SIGTERM. SIGTERM is blocked before the file is written
# and taken by ``sigtimedwait``: a Python handler (``sys.exit`` in it) loses a SIGTERM that
# lands between the interpreter's last look at its pending signals and the ``sleep`` syscall
# (the handler runs only after the sleep: about 1 stop in 2,000 hung for 120 s, and CI's run
# of this script failed)
ON_TERM = (
    "import os, signal, sys\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
    "with open(sys.argv[1] + '.' + os.environ['RANK'], 'w') as f:\n"
    "    f.write('ready')\n"
    "signal.sigtimedwait({signal.SIGTERM}, 120)\n"
    "sys.exit(0)\n"
)


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def stats(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"n": 0, "median_s": 0.0, "p90_s": 0.0, "max_s": 0.0}
    return {
        "n": len(xs),
        "median_s": statistics.median(xs),
        "p90_s": quantile(xs, 0.9),
        "max_s": max(xs),
    }


def gang(tmp: Path, job_id: int, code: str, arg: str, width: int, server: int = 0):
    run = tmp / f"j{job_id}"
    return [
        WorkerSpec(
            job_id=job_id,
            rank=r,
            world_size=width,
            local_rank=r,
            server=server,
            gpus=(server * GPUS + r,),
            command=(sys.executable, "-S", "-I", "-c", code, arg),
            env={"DDLSCHED_ATTEMPT": "0"},
            cwd=str(tmp),
            log_path=str(run / f"rank{r}.log"),
            run_dir=str(run),
        )
        for r in range(width)
    ]


def wait_files(paths: list[Path], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() and p.stat().st_size > 0 for p in paths):
        if time.monotonic() > deadline:
            raise RuntimeError(f"workers never wrote {paths}")
        time.sleep(0.002)


def wait_exit(lau, job_id: int, interval: float, timeout: float = 30.0) -> float:
    """Poll until all exited; the time it was seen."""
    deadline = time.monotonic() + timeout
    while not lau.poll(job_id).all_exited:
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} did not exit: {lau.poll(job_id)}")
        time.sleep(interval)
    return time.time()


def bench_launch(lau, tmp: Path, n: int, width: int, first_id: int) -> dict[str, object]:
    execs, calls = [], []
    for i in range(n):
        j = first_id + i
        stamp = tmp / f"launch{j}"
        t0 = time.time()
        lau.launch(j, gang(tmp, j, STAMP, str(stamp), width))
        calls.append(time.time() - t0)
        files = [Path(f"{stamp}.{r}") for r in range(width)]
        wait_files(files)
        execs.append(max(float(f.read_text()) for f in files) - t0)
        wait_exit(lau, j, 0.005)
    return {"width": width, "to_exec": stats(execs), "launch_call": stats(calls)}


def bench_popen(tmp: Path, n: int) -> dict[str, object]:
    """The same command by a bare Popen: the interpreter's start-up alone."""
    execs = []
    for i in range(n):
        stamp = tmp / f"popen{i}"
        t0 = time.time()
        p = subprocess.Popen(
            [sys.executable, "-S", "-I", "-c", STAMP, str(stamp)],
            env={**os.environ, "RANK": "0"},
            start_new_session=True,
        )
        p.wait()
        execs.append(float(Path(f"{stamp}.0").read_text()) - t0)
    return {"to_exec": stats(execs)}


def bench_stop(lau, tmp: Path, n: int, width: int, first_id: int) -> dict[str, object]:
    seen, calls = [], []
    for i in range(n):
        j = first_id + i
        ready = tmp / f"ready{j}"
        lau.launch(j, gang(tmp, j, ON_TERM, str(ready), width))
        wait_files([Path(f"{ready}.{r}") for r in range(width)])
        t0 = time.time()
        lau.request_stop(j)
        calls.append(time.time() - t0)
        seen.append(wait_exit(lau, j, 0.005) - t0)
        codes = lau.poll(j).exit_codes
        if any(c != 0 for c in codes):
            raise RuntimeError(f"job {j} exited {codes}, not 0 on SIGTERM")
    return {"width": width, "to_all_exited": stats(seen), "request_stop_call": stats(calls)}


def bench_loop(lau, tmp: Path, jobs: int, first_id: int) -> dict[str, object]:
    """Greedy FIFO through the launcher alone: 1-GPU ``sleep 1`` jobs, all queued at t = 0."""
    free = list(range(SERVERS * GPUS))
    queue = list(range(first_id, first_id + jobs))
    running: dict[int, int] = {}  # job -> GPU
    t0 = time.time()
    last = t0
    while queue or running:
        for j, p in lau.poll_many(list(running)).items():
            if p.all_exited:
                if p.exit_codes != (0,):
                    raise RuntimeError(f"job {j} exited {p.exit_codes}")
                free.append(running.pop(j))
                last = time.time()
        while queue and free:
            g = free.pop(0)
            j = queue.pop(0)
            spec = WorkerSpec(
                job_id=j,
                rank=0,
                world_size=1,
                local_rank=0,
                server=g // GPUS,
                gpus=(g,),
                command=("sleep", "1"),
                cwd=str(tmp),
                log_path=str(tmp / f"j{j}" / "rank0.log"),
            )
            lau.launch(j, [spec])
            running[j] = g
        time.sleep(0.01)
    return makespan_doc(last - t0, jobs)


def makespan_doc(makespan: float, jobs: int) -> dict[str, object]:
    ideal = math.ceil(jobs / (SERVERS * GPUS)) * 1.0
    return {"jobs": jobs, "makespan_s": makespan, "ideal_s": ideal, "ratio": makespan / ideal}


def bench_live_cli(kind: str, tmp: Path, jobs: int) -> dict[str, object]:
    """``ddlsched live --policy fifo`` on the same jobs; makespan from its summary.json."""
    (tmp / "cluster.toml").write_text(CLUSTER_TOML)
    lines = ["job_id,command,gpus,arrival"] + [f'{j},"sleep 1",1,0' for j in range(jobs)]
    (tmp / "jobs.csv").write_text("\n".join(lines) + "\n")
    out = tmp / "live-out"
    cmd = [sys.executable, "-m", "ddlsched.cli", "live", "--cluster", "cluster.toml",
           "--workload", "jobs.csv", "--policy", "fifo", "--quiet", "--out", str(out)]  # fmt: skip
    if kind == "local":
        cmd.append("--local")
    env = dict(os.environ)
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError(f"ddlsched live failed: {r.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    doc = makespan_doc(float(summary["makespan"]), jobs)
    doc["command_wall_s"] = wall
    doc["avg_queueing_s"] = summary.get("avg_queueing")
    doc["idle_while_waiting"] = stats(idle_gaps(out))
    # a job's processes end 1 s after their launch (``sleep 1``): what its GPUs were held
    # beyond that is the GPU idle until the engine saw the exit and launched the next job
    doc["held_beyond_work"] = stats(held_beyond(out, 1.0))
    return doc


def held_beyond(run_dir: Path, work: float) -> list[float]:
    """Per segment, the seconds its GPUs were held beyond the job's own ``work`` seconds."""
    import csv

    with open(run_dir / "segments.csv", newline="") as f:
        return [float(r["end"]) - float(r["start"]) - work for r in csv.DictReader(f)]


def idle_gaps(run_dir: Path) -> list[float]:
    """Seconds each GPU stood idle between two jobs while a job was waiting (every job
    arrives at t = 0 here, so every gap before the last start is one): per decision, from the
    previous job's segment end on that GPU to the next one's start (segments.csv)."""
    import csv

    with open(run_dir / "segments.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    by_gpu: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        for g in r["placement"].split(";"):
            by_gpu.setdefault(g, []).append((float(r["start"]), float(r["end"])))
    gaps = []
    for spans in by_gpu.values():
        spans.sort()
        gaps += [b[0] - a[1] for a, b in zip(spans, spans[1:], strict=False)]
    return gaps


def make_launcher(kind: str):
    cluster = Cluster.homogeneous(SERVERS, GPUS)
    if kind == "ray":
        from ddlsched.live.launchers.ray import RayLauncher

        return RayLauncher.local(cluster)
    from ddlsched.live.launchers.local import LocalLauncher

    return LocalLauncher(cluster)


def run(kind: str, args: argparse.Namespace) -> dict[str, object]:
    doc: dict[str, object] = {"launcher": kind}
    with tempfile.TemporaryDirectory(prefix=f"ddl-bench-live-{kind}-") as name:
        tmp = Path(name)
        t0 = time.monotonic()
        lau = make_launcher(kind)
        doc["launcher_start_s"] = time.monotonic() - t0
        try:
            doc["launch"] = [
                bench_launch(lau, tmp, args.launches, 1, 1000),
                bench_launch(lau, tmp, args.launches, GPUS, 2000),
            ]
            doc["stop"] = [
                bench_stop(lau, tmp, args.stops, 1, 3000),
                bench_stop(lau, tmp, args.stops, GPUS, 4000),
            ]
            if args.makespan in ("loop", "both"):
                doc["makespan_loop"] = bench_loop(lau, tmp, args.jobs, 5000)
        finally:
            lau.shutdown()
        doc["popen_reference"] = bench_popen(tmp, args.launches)
        if args.makespan in ("live", "both"):
            doc["makespan_live"] = bench_live_cli(kind, tmp, args.jobs)
    return doc


def ms(x: float) -> str:
    return f"{1000 * x:7.1f}"


def print_table(doc: dict) -> None:
    kind = doc["launcher"]
    print(f"\n{kind}: launcher start {doc['launcher_start_s']:.2f} s")
    print(f"{'what':44s} {'median ms':>9s} {'p90 ms':>8s} {'max ms':>8s}")
    rows = []
    for d in doc["launch"]:
        rows.append((f"launch → exec, {d['width']} worker(s)", d["to_exec"]))
        rows.append((f"  launch() blocks, {d['width']} worker(s)", d["launch_call"]))
    rows.append(("  (bare Popen → exec, for reference)", doc["popen_reference"]["to_exec"]))
    for d in doc["stop"]:
        rows.append((f"request_stop → poll sees all exited, {d['width']}", d["to_all_exited"]))
        rows.append((f"  request_stop() blocks, {d['width']} worker(s)", d["request_stop_call"]))
    for name, s in rows:
        print(f"{name:44s} {ms(s['median_s']):>9s} {ms(s['p90_s']):>8s} {ms(s['max_s']):>8s}")
    for key, label in (("makespan_loop", "greedy loop"), ("makespan_live", "ddlsched live fifo")):
        if key in doc:
            m = doc[key]
            print(
                f"makespan, {m['jobs']} × sleep 1 on {SERVERS}×{GPUS}, {label}: "
                f"{m['makespan_s']:.2f} s vs ideal {m['ideal_s']:.0f} s = ×{m['ratio']:.3f}"
            )
            if "idle_while_waiting" in m:
                g = m["idle_while_waiting"]
                print(f"  gap between two jobs' segments on a GPU: median {ms(g['median_s'])}"
                      f" ms, p90 {ms(g['p90_s'])} ms, max {ms(g['max_s'])} ms")  # fmt: skip
                h = m["held_beyond_work"]
                print(f"  held beyond the job's 1 s (exit → seen → next launch): median "
                      f"{ms(h['median_s'])} ms, p90 {ms(h['p90_s'])} ms, max {ms(h['max_s'])} ms")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launcher", choices=["ray", "local", "both"], default="both")
    ap.add_argument("--launches", type=int, default=20, help="launches per gang width")
    ap.add_argument("--stops", type=int, default=20, help="stops per gang width")
    ap.add_argument("--jobs", type=int, default=50, help="jobs of the makespan run")
    ap.add_argument("--makespan", choices=["live", "loop", "both", "none"], default="both")
    ap.add_argument("--out", help="write the numbers as JSON here")
    args = ap.parse_args()
    kinds = ["ray", "local"] if args.launcher == "both" else [args.launcher]
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_at_start": os.getloadavg(),
        },
        "cluster": f"{SERVERS} servers × {GPUS} logical GPUs",
        "runs": [],
    }
    for kind in kinds:
        doc = run(kind, args)
        report["runs"].append(doc)
        print_table(doc)
    report["machine"]["load_avg_at_end"] = os.getloadavg()
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
