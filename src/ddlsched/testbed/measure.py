"""``ddlsched testbed measure``: k = 1 … 4 concurrent cross-server all-reduces on a testbed,
timed, and both papers' contention models fitted to them (docs/testbed.md).

**Placement.** Job j (j = 0 … K−1) has 2 workers, rank 0 and rank 1, on two servers:

- ``pair`` (default): every job on servers 0 and 1 — Wang et al.'s Fig. 2(b) experiment
  ("multiple all-reduce operations on two nodes"). k running jobs put k flows on server 0's
  uplink and k on server 1's, in each direction; Wang's k (the most all-reduces running on a
  server the job uses) and Yu's p (the most cross-server jobs on a server it uses) are both k.
- ``star``: job j on servers 0 and j + 1: the k jobs share only server 0's uplink, the other
  end of each is alone on its own. Both models still say k (they take the busiest server);
  this checks that only the busiest link matters.

**One measurement** (k, M): the coordinator tells the workers of jobs 0 … k−1 at once to
all-reduce M bytes; each job's workers meet (a barrier), then all-reduce; the job's time is
from its first worker leaving the barrier to its last finishing (one monotonic clock for the
whole machine). The point's time is the mean over the k jobs (Wang: "the average time"), the
median of that over ``reps`` repetitions. Workers start once (one process per worker, in its
server's namespace: ``ip netns exec NAME-i python worker.py``), warm up with one all-reduce
per job, and stay for every measurement; their pids are recorded in the testbed's state
directory, so ``testbed down`` ends them even if this command is killed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.rundir import dumps_json, is_empty_dir, output_dir
from ..errors import InputError, quote
from ..perf.contention import MB, LinearContention
from ..perf.rar import RarModel
from ..processes import process_start_time
from . import commands, state, topology
from .fit import Point, fit_and_score, mre, split_sizes, wang_time, yu_time
from .lifecycle import end_processes
from .spec import format_rate

WORKER = Path(__file__).with_name("worker.py")
PLACEMENTS = ("pair", "star")
BACKENDS = ("auto", "gloo", "ring")
#: first port of job j's group: BASE_PORT + 10·j (+ rank for the ring backend); ports are
#: per namespace, so these never meet the host's
BASE_PORT = 29500
#: seconds the workers get to start (importing torch on a loaded 2-core machine takes 10–40 s)
START_TIMEOUT_S = 180.0
#: Wang et al.'s own numbers (Sec. III-B, Fig. 2: ring all-reduce between 2 nodes on 10 GbE)
PAPER_WANG = {"a": 6.69e-4, "b": 8.53e-10, "eta": 2.35e-10, "eta_over_b": 2.35e-10 / 8.53e-10}


@dataclass(frozen=True)
class MeasureConfig:
    name: str
    out: str
    sizes_mb: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)
    max_k: int = 4
    reps: int = 2
    placement: str = "pair"
    backend: str = "auto"
    #: TCP congestion control of the ring backend's sockets ("" = the namespace's default)
    tcp: str = ""
    overwrite: bool = False


@dataclass
class Worker:
    job: int
    rank: int
    netns: str
    proc: subprocess.Popen[str]
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def send(self, doc: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(doc) + "\n")
        self.proc.stdin.flush()

    def reply(self, deadline: float) -> dict[str, object]:
        """The worker's next JSON line, by ``deadline`` (monotonic), else InputError."""
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise InputError(
                f"worker {self.job}.{self.rank} in {self.netns} did not answer in time",
                field="testbed",
            ) from None
        if line is None:
            raise InputError(
                f"worker {self.job}.{self.rank} in {self.netns} exited (status {self.proc.wait()})",
                field="testbed",
            )
        doc = json.loads(line)
        if "error" in doc:
            raise InputError(
                f"worker {self.job}.{self.rank} in {self.netns}: {doc['error']}", field="testbed"
            )
        return doc


def torch_available() -> bool:
    """Whether this interpreter has torch with gloo (the ``testbed`` extra), without importing
    it (an import takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def placement_servers(placement: str, job: int) -> tuple[int, int]:
    """The servers of job ``job``'s rank 0 and rank 1 (module docstring)."""
    return (0, 1) if placement == "pair" else (0, job + 1)


def check_config(cfg: MeasureConfig, st: state.TestbedState) -> None:
    """One-line errors for a measurement this testbed cannot run."""
    if cfg.placement not in PLACEMENTS:
        raise InputError(
            f"unknown placement {quote(cfg.placement)}; one of {', '.join(PLACEMENTS)}",
            field="--placement",
        )
    if cfg.backend not in BACKENDS:
        raise InputError(
            f"unknown backend {quote(cfg.backend)}; one of {', '.join(BACKENDS)}",
            field="--backend",
        )
    if cfg.backend == "gloo" and not torch_available():
        raise InputError(
            "the gloo backend needs torch: pip install 'ddlsched[testbed]' (or --backend ring)",
            field="--backend",
        )
    if cfg.tcp:
        if cfg.backend != "ring":
            raise InputError(
                "needs --backend ring (gloo opens its own sockets with the default congestion "
                "control)",
                field="--tcp",
            )
        available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
        names = available.read_text().split() if available.exists() else []
        if cfg.tcp not in names:
            raise InputError(
                f"unknown TCP congestion control {quote(cfg.tcp)}; this kernel has "
                f"{', '.join(names) or 'none listed'}",
                field="--tcp",
            )
    if not 2 <= cfg.max_k <= 16:
        raise InputError(f"must be between 2 and 16, got {cfg.max_k}", field="--max-k")
    if not 1 <= cfg.reps <= 20:
        raise InputError(f"must be between 1 and 20, got {cfg.reps}", field="--reps")
    if len(set(cfg.sizes_mb)) < 3 or any(not 0 < s <= 1024 for s in cfg.sizes_mb):
        raise InputError(
            "give at least 3 distinct sizes in MB, each in (0, 1024] (3 or more: the fit "
            "needs 2 and 1 is held out)",
            field="--sizes",
        )
    need = 2 if cfg.placement == "pair" else cfg.max_k + 1
    if st.servers < need:
        raise InputError(
            f"placement {cfg.placement} with --max-k {cfg.max_k} needs {need} servers; testbed "
            f"{st.name} has {st.servers}",
            field="--placement",
        )
    if st.gpus_per_server < cfg.max_k:  # both placements put a worker of every job on server 0
        raise InputError(
            f"{cfg.max_k} jobs put {cfg.max_k} workers on {st.server_ns[0]}, which has "
            f"{st.gpus_per_server} GPUs (up the testbed with --gpus-per-server {cfg.max_k})",
            field="--max-k",
        )


def parse_sizes(text: str) -> tuple[float, ...]:
    """``--sizes 1,2,4,8,16`` (MB)."""
    from ..parsing import NumberError, parse_float

    try:
        return tuple(parse_float(x) for x in text.split(",") if x.strip())
    except NumberError as e:
        raise InputError(str(e), field="--sizes") from None


def estimated_seconds(cfg: MeasureConfig, rate_bps: int) -> float:
    """The transfers' time alone: Σ over points and repetitions of k·M at the link's rate."""
    ks = range(1, cfg.max_k + 1)
    return cfg.reps * sum(k * s * MB * 8 / rate_bps for k in ks for s in cfg.sizes_mb)


# ------------------------------------------------------------------------------ workers
def _reader(w: Worker) -> None:
    assert w.proc.stdout is not None
    for line in w.proc.stdout:
        if line.strip().startswith("{"):
            w.lines.put(line)
    w.lines.put(None)


def start_workers(
    cfg: MeasureConfig, st: state.TestbedState, backend: str, logs: Path
) -> list[Worker]:
    """One worker process per (job, rank), each in its server's namespace."""
    max_bytes = int(max(cfg.sizes_mb) * MB) + 16
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    workers: list[Worker] = []
    logs.mkdir(parents=True, exist_ok=True)
    for job in range(cfg.max_k):
        servers = placement_servers(cfg.placement, job)
        addrs = ",".join(st.addresses[s] for s in servers)
        for rank, server in enumerate(servers):
            ns = st.server_ns[server]
            cmd = [
                "ip", "netns", "exec", ns, sys.executable, str(WORKER),
                "--backend", backend, "--rank", str(rank), "--world", "2",
                "--addrs", addrs, "--port", str(BASE_PORT + 10 * job),
                "--max-bytes", str(max_bytes), "--timeout", "120",
                "--ifname", topology.SERVER_DEV, "--tcp", cfg.tcp,
            ]  # fmt: skip
            with open(logs / f"job{job}-rank{rank}.log", "w", encoding="utf-8") as log:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    env=env,
                    start_new_session=True,  # Ctrl-C reaches us; we end them by pid
                )
            w = Worker(job=job, rank=rank, netns=ns, proc=proc)
            threading.Thread(target=_reader, args=(w,), daemon=True).start()
            workers.append(w)
    return workers


def stop_workers(workers: Sequence[Worker]) -> None:
    """Ask every worker to quit; end by pid (SIGTERM, then SIGKILL) those still there."""
    for w in workers:
        try:
            w.send({"op": "quit"})
            assert w.proc.stdin is not None
            w.proc.stdin.close()
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + 5.0
    for w in workers:
        try:
            w.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    end_processes(
        [(w.proc.pid, process_start_time(w.proc.pid)) for w in workers if w.proc.poll() is None]
    )
    for w in workers:
        try:
            w.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            pass
        for stream in (w.proc.stdin, w.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except (OSError, ValueError):
                pass


def run_point(
    workers: Sequence[Worker], k: int, size_bytes: int, rate_bps: int, tag: str
) -> list[float]:
    """All-reduce ``size_bytes`` in jobs 0 … k−1 at once; each job's seconds."""
    active = [w for w in workers if w.job < k]
    for w in active:
        w.send({"op": "run", "bytes": size_bytes, "id": tag})
    deadline = time.monotonic() + 30.0 + 5.0 * k * size_bytes * 8 / rate_bps
    replies = [(w, w.reply(deadline)) for w in active]
    out = []
    for job in range(k):
        mine = [r for w, r in replies if w.job == job]
        out.append(max(float(r["t1"]) for r in mine) - min(float(r["t0"]) for r in mine))
    return out


# ------------------------------------------------------------------------------ the network
def qdisc_drops(st: state.TestbedState) -> int:
    """Packets every shaped queue of the testbed has dropped so far (``tc -s``)."""
    total = 0
    for ns in st.namespaces:
        words = commands.run(["tc", "-n", ns, "-s", "qdisc", "show"], check=False).split()
        total += sum(
            int(words[i + 1].rstrip(","))
            for i, w in enumerate(words[:-1])
            if w == "(dropped" and words[i + 1].rstrip(",").isdigit()
        )
    return total


def tcp_congestion_control(netns: str) -> str:
    """The TCP congestion control a namespace's sockets use (a new namespace inherits the
    host's default: bbr, cubic …)."""
    out = commands.run(
        ["ip", "netns", "exec", netns, "cat", "/proc/sys/net/ipv4/tcp_congestion_control"],
        check=False,
    )
    return out.strip() or "unknown"


# ------------------------------------------------------------------------------ the command
@dataclass
class MeasureResult:
    out: str
    summary: dict[str, object]
    rows: list[dict[str, object]]


def measure(cfg: MeasureConfig, progress: Callable[[str], None] | None = None) -> MeasureResult:
    """Run the measurement (module docstring) and write ``contention.csv``, ``samples.csv``
    and ``summary.json`` (docs/testbed.md) to ``cfg.out``."""
    commands.require_privileges()
    st = state.load_state(cfg.name)
    present = commands.netns_list()
    if st is None or st.status != "up" or not all(ns in present for ns in st.namespaces):
        raise InputError(
            f"no testbed {quote(cfg.name)} is up (`ddlsched testbed list`; "
            f"`ddlsched testbed up --name {cfg.name} …`)",
            field="--name",
        )
    check_config(cfg, st)
    backend = cfg.backend
    if backend == "auto":
        backend = "gloo" if torch_available() else "ring"
    say = progress or (lambda msg: None)
    t_start = time.monotonic()
    say(
        f"{cfg.max_k} jobs × {len(cfg.sizes_mb)} sizes × {cfg.reps} repetitions on "
        f"{format_rate(st.rate_bps)} uplinks ({backend}, placement {cfg.placement}): about "
        f"{estimated_seconds(cfg, st.rate_bps):.0f} s of transfers"
    )

    def may_replace(p: Path) -> str | None:
        return None if is_empty_dir(p) else "exists and is not empty"

    with output_dir(cfg.out, may_replace=may_replace, overwrite=cfg.overwrite) as staging:
        tag = f"measure-{os.getpid()}"
        drops_before = qdisc_drops(st)
        workers = start_workers(cfg, st, backend, staging / "workers")
        try:
            state.record_pids(cfg.name, tag, [w.proc.pid for w in workers])
            deadline = time.monotonic() + START_TIMEOUT_S
            for w in workers:
                w.reply(deadline)
            started_s = time.monotonic() - t_start
            say(f"{len(workers)} {backend} workers ready in {started_s:.1f} s")
            run_point(workers, cfg.max_k, int(min(cfg.sizes_mb) * MB), st.rate_bps, "warm-up")
            samples: list[tuple[int, int, float, int, float]] = []
            for rep in range(cfg.reps):
                for k in range(1, cfg.max_k + 1):
                    for size in cfg.sizes_mb:
                        times = run_point(workers, k, int(size * MB), st.rate_bps, f"{rep}")
                        samples += [(rep, k, size, j, t) for j, t in enumerate(times)]
                        time.sleep(0.05)  # queues drain: the next point starts from idle links
                say(f"repetition {rep + 1}/{cfg.reps} done")
        finally:
            stop_workers(workers)
            state.forget_pids(cfg.name, tag)
        summary, rows = analyse(cfg, st, backend, samples)
        summary["qdisc_drops"] = qdisc_drops(st) - drops_before
        summary["tcp_congestion_control"] = cfg.tcp or tcp_congestion_control(st.server_ns[0])
        summary["kernel"] = os.uname().release
        summary["workers_start_s"] = round(started_s, 3)
        summary["seconds"] = round(time.monotonic() - t_start, 3)
        _write(staging, summary, rows, samples)
    return MeasureResult(out=cfg.out, summary=summary, rows=rows)


def analyse(
    cfg: MeasureConfig,
    st: state.TestbedState,
    backend: str,
    samples: Sequence[tuple[int, int, float, int, float]],
) -> tuple[dict[str, object], list[dict[str, object]]]:
    """The points (median over repetitions of the mean over the k jobs), both fits and their
    errors on held-out sizes and on held-out k (summary.json), and the table's rows."""
    points = []
    for k in range(1, cfg.max_k + 1):
        for size in cfg.sizes_mb:
            per_rep = [
                statistics.fmean(t for r2, k2, s2, _, t in samples if (r2, k2, s2) == (r, k, size))
                for r in range(cfg.reps)
            ]
            points.append(Point(k, size, statistics.median(per_rep)))
    b_e = st.rate_bps / 8.0
    fit_sizes, held_sizes = split_sizes(cfg.sizes_mb)
    by_size = fit_and_score(points, lambda p: p.size_mb in fit_sizes, b_e)
    by_k = fit_and_score(points, lambda p: p.k <= 2, b_e) if cfg.max_k >= 3 else None
    default_yu = RarModel()
    wang: LinearContention = by_size.wang
    yu: RarModel = by_size.yu
    rows = [
        {
            "k": p.k,
            "size_mb": p.size_mb,
            "measured_s": p.measured_s,
            "wang_s": wang_time(wang, p.k, p.size_mb),
            "yu_s": yu_time(yu, p.k, p.size_mb, b_e),
        }
        for p in points
    ]
    summary: dict[str, object] = {
        "testbed": st.name,
        "rate": format_rate(st.rate_bps),
        "rate_bps": st.rate_bps,
        "delay_ms": st.delay_ms,
        "backend": backend,
        "placement": cfg.placement,
        "sizes_mb": list(cfg.sizes_mb),
        "ks": list(range(1, cfg.max_k + 1)),
        "reps": cfg.reps,
        "fit_sizes_mb": fit_sizes,
        "held_out_sizes_mb": held_sizes,
        "a": wang.a,
        "b": wang.b,
        "eta": wang.eta,
        "eta_over_b": wang.eta / wang.b,
        "b_effective_bps": 8.0 / wang.b,
        "yu": {
            "xi1": yu.xi1,
            "xi2": yu.xi2,
            "alpha": yu.alpha,
            "b_e_bytes_per_s": b_e,
            "reduction_speed": yu.reduction_speed,
        },
        "wang_mre": by_size.wang_mre,
        "yu_mre": by_size.yu_mre,
        "yu_default_mre": mre(points, lambda k, s: yu_time(default_yu, k, s, b_e)),
        "paper_wang": PAPER_WANG,
    }
    if by_k is not None:
        summary["k_holdout"] = {
            "fit_ks": [1, 2],
            "held_out_ks": list(range(3, cfg.max_k + 1)),
            "wang_mre": by_k.wang_mre,
            "yu_mre": by_k.yu_mre,
            "eta": by_k.wang.eta,
            "yu_xi1": by_k.yu.xi1,
            "yu_alpha": by_k.yu.alpha,
        }
    return summary, rows


def _write(
    out: Path,
    summary: dict[str, object],
    rows: Sequence[dict[str, object]],
    samples: Sequence[tuple[int, int, float, int, float]],
) -> None:
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(["k", "size_mb", "measured_s", "wang_s", "yu_s"])
    for r in rows:
        wr.writerow(
            [r["k"], f"{r['size_mb']:g}"]
            + [f"{float(r[c]):.6f}" for c in ("measured_s", "wang_s", "yu_s")]  # type: ignore[arg-type]
        )
    (out / "contention.csv").write_text(buf.getvalue(), encoding="utf-8")
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(["rep", "k", "size_mb", "job", "seconds"])
    for rep, k, size, job, t in samples:
        wr.writerow([rep, k, f"{size:g}", job, f"{t:.6f}"])
    (out / "samples.csv").write_text(buf.getvalue(), encoding="utf-8")
    (out / "summary.json").write_text(dumps_json(summary), encoding="utf-8")
