"""``ddlsched live``: run a policy in real time on real processes and write the same run
directory as ``ddlsched run`` (config.json, summary.json, jobs.csv, segments.csv) plus
``events.jsonl`` and each job's logs under ``jobs/ID/attempt-N/`` (docs/live.md).

Nothing starts before the inputs are checked (job file, commands, GPUs asked vs the cluster,
settings, policy, output path). The directory is written all-or-nothing; on Ctrl-C / SIGTERM
the running jobs are stopped (they checkpoint), the directory records the jobs that finished,
and the interrupt is re-raised (exit 130 / 143).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import __version__
from ..core.cluster import Cluster
from ..core.job import JobSpec
from ..core.results import SimResult, build_result
from ..errors import InputError
from ..settings import Settings
from .jobfile import LiveJob, check_commands, read_live_jobs


@dataclass
class LiveConfig:
    """One live run, as ``ddlsched live`` takes it (and records it in config.json)."""

    jobs: str
    policy: str
    cluster: str | None = None
    ray_address: str | None = None
    settings: Settings = field(default_factory=Settings)
    time_scale: float = 1.0
    grace: float = 10.0
    poll_interval: float = 0.2
    launcher: str = "ray"  # ray | local (plain subprocesses on this machine) | testbed
    testbed: str | None = None  # a testbed's name: its cluster file, workers in its namespaces
    gate: str | None = None  # a communication gate (policies.gates): serve the channel
    seed: int = 0
    out: str = ""
    overwrite: bool = False

    def record(self) -> dict[str, object]:
        """config.json of a live run (``mode = "live"``; paths absolute)."""
        return {
            "mode": "live",
            "version": __version__,
            "jobs": str(Path(self.jobs).resolve()),
            "cluster": _abs_if_file(self.cluster),
            "ray_address": self.ray_address,
            "policy": self.policy,
            "seed": self.seed,
            "time_scale": self.time_scale,
            "grace": self.grace,
            "poll_interval": self.poll_interval,
            "launcher": self.launcher,
            "testbed": self.testbed,
            "gate": self.gate,
            "settings": self.settings.sectioned(),
        }


def _abs_if_file(value: str | None) -> str | None:
    if value and os.path.exists(value):
        return str(Path(value).resolve())
    return value


def to_specs(jobs: list[LiveJob], time_scale: float) -> list[JobSpec]:
    """The engine's view of live jobs: arrival (÷ ``time_scale``), GPU count, and a
    ``duration`` (the estimate, 0 without one) that makes them trace-kind jobs."""
    from ..workloads.trace_formats import placeholder_model

    model = placeholder_model("live")
    return [
        JobSpec(
            job_id=j.job_id,
            arrival=j.arrival / time_scale,
            num_gpus=j.gpus,
            iterations=0,
            model=model,
            duration=j.duration or 0.0,
            name=" ".join(j.command)[:80],
            queue=j.queue,
            priority=j.priority,
        )
        for j in jobs
    ]


def check_fits(jobs: list[LiveJob], cluster: Cluster, source: str) -> None:
    """A job asking more GPUs than the cluster has can never start: refuse before anything."""
    for j in jobs:
        if j.gpus > cluster.num_gpus:
            raise InputError(
                f"job {j.job_id} asks for {j.gpus} GPUs, the cluster has {cluster.num_gpus}",
                source=source,
                field="gpus",
            )


def run_live(
    cfg: LiveConfig, progress: Callable[[int, int], None] | None = None
) -> tuple[SimResult, bool]:
    """Run ``cfg``; return the result and whether it was interrupted (the run directory is
    written either way, with the jobs that finished)."""
    from ..api import build_simulator
    from ..core.cluster_io import load_cluster
    from ..core.results import write_result_files
    from ..core.rundir import output_dir, same_config_rule
    from .backend import LiveBackend
    from .executor import EventLog, LiveExecutor
    from .planned import LivePlannedBackend, to_model_specs
    from .profile import LiveProfileBackend, to_profile_specs

    if cfg.time_scale <= 0:
        raise InputError("must be > 0", field="time_scale")
    jobs = read_live_jobs(cfg.jobs)
    check_commands(jobs, cfg.jobs)
    if cfg.testbed is not None:
        if cfg.cluster or cfg.ray_address:
            raise InputError(
                "the testbed is the cluster: give --testbed or --cluster/--ray-address, not both",
                field="--testbed",
            )
        cfg = replace(cfg, cluster=testbed_cluster_file(cfg.testbed), launcher="testbed")
    gate = resolve_gate(cfg.gate)
    # Wang's a, b, η (``--set``; e.g. ``testbed measure``'s fit) price the gate's all-reduces
    # (the channel's contention model); the live jobs' own times are measured, not modelled,
    # so the engine gets the defaults and only a run without a gate refuses them (scope)
    sim_settings = cfg.settings
    if cfg.gate is not None:
        sim_settings = replace(cfg.settings, a=Settings.a, b=Settings.b, eta=Settings.eta)
    cluster = None
    if cfg.ray_address is None:
        if not cfg.cluster:
            raise InputError("give --cluster (or --ray-address to use a Ray cluster's GPUs)")
        cluster = load_cluster(cfg.cluster)
        check_fits(jobs, cluster, cfg.jobs)
    cfg = replace(cfg, launcher=resolve_launcher(cfg.launcher, cfg.ray_address))
    profiled = any(j.app for j in jobs)  # application-profile jobs (every job, then)
    modelled = any(j.iterations is not None for j in jobs)  # model jobs (every job, then)
    if profiled:
        specs = to_profile_specs(jobs, cfg.time_scale)
    elif modelled:
        specs = to_model_specs(jobs, cfg.time_scale)
    else:
        specs = to_specs(jobs, cfg.time_scale)
    record = cfg.record()
    interrupted: BaseException | None = None
    with output_dir(cfg.out, may_replace=same_config_rule(record), overwrite=cfg.overwrite) as d:
        launcher = make_launcher(cfg.launcher, cfg.ray_address, cluster)
        channel = None
        try:
            cluster = launcher.cluster()
            if cfg.gate is not None:
                from .channel import CommChannel

                channel = CommChannel(
                    d / "comm.sock", gate, cluster.num_servers, cfg.settings.contention
                ).open()
            check_fits(jobs, cluster, cfg.jobs)
            log = EventLog(d / "events.jsonl")
            executor = LiveExecutor(
                launcher,
                {j.job_id: j for j in jobs},
                d,
                grace=cfg.grace,
                cwd=os.getcwd(),
                log=log,
                channel=channel,
            )
            kind = (
                LiveProfileBackend if profiled else LivePlannedBackend if modelled else LiveBackend
            )
            backend = kind(
                executor,
                poll_interval=cfg.poll_interval,
                launcher_name=cfg.launcher if cfg.ray_address is None else "ray-cluster",
            )
            sim = build_simulator(
                cluster,
                specs,
                cfg.policy,
                seed=cfg.seed,
                settings=sim_settings,
                progress=progress,
                backend=backend,
            )
            record["resolved"] = dict(sim.resolved)
            try:
                res = sim.run()
            except KeyboardInterrupt as e:  # Ctrl-C / SIGTERM: stop (checkpoint), record
                interrupted = e
                stopped = executor.stop_all()
                log.write(sim.now, "interrupted", stopped=stopped)
                res = interrupted_result(sim)
            res = finished_only(res, cluster, sim, executor, interrupted is not None)
            res.summary.update(executor.summary())
            res.summary["interrupted"] = interrupted is not None
            if channel is not None:
                res.summary["comm_asks"] = channel.asks
                res.summary["comm_waits"] = channel.waits
                m = cfg.settings.contention
                res.summary["comm_model"] = {"a": m.a, "b": m.b, "eta": m.eta}
            log.close()
            write_measured(executor.measured(), d / "measured.csv")
            write_result_files(res, d, config=record)
        finally:
            launcher.shutdown()
            if channel is not None:
                channel.close()
    if interrupted is not None:
        raise interrupted
    return res, False


def finished_only(
    res: SimResult, cluster: Cluster, sim: object, executor: object, interrupted: bool = False
) -> SimResult:
    """The run's result over the jobs that finished: a failed job's JCT is no JCT, so it is
    left out of jobs.csv, segments.csv and the averages (``failed_job_ids`` names it; the GPU
    time it held still counts in ``gpu_util``; of an interrupted run only the finished jobs'
    segments count, see ``interrupted_result``). The engine's own summary keys are kept."""
    from dataclasses import replace

    from ..core.protocols import AloneTimes
    from ..core.results import gpu_held_seconds

    runs = executor.runs  # type: ignore[attr-defined]
    done = [j for j in sim.jobs if j.finish is not None and runs[j.job_id].finished]  # type: ignore[attr-defined]
    engine_ex = sim.executor  # type: ignore[attr-defined]
    alone = engine_ex.alone_time if isinstance(engine_ex, AloneTimes) and done else None
    busy = engine_ex.busy_gpu_seconds()  # the engine's executor: a shared GPU counts once
    if interrupted:
        busy = gpu_held_seconds(build_result(cluster, done, 0.0).segments)
    try:
        out = build_result(cluster, done, busy, alone)
    except NotImplementedError:
        out = build_result(cluster, done, busy)
    fairness = {"avg_ftf_rho", "max_ftf_rho", "jain_index"}
    for key, value in res.summary.items():
        if key not in fairness or out.fairness:
            out.summary.setdefault(key, value)
    return replace(out, resolved=dict(res.resolved))


def interrupted_result(sim) -> SimResult:  # noqa: ANN001 - the run's RealtimeSimulator
    """The result of an interrupted run: the jobs that finished, what the run allowed
    (``max_jobs_per_gpu``, ``elastic``, as a completed run records them for ``ddlsched
    check``), and as busy time the GPU time their segments held: the jobs still running at the
    interrupt are in neither jobs.csv nor segments.csv, so their GPU time is not in
    ``gpu_util`` either (it was, and the run then failed ``check``)."""
    from ..core.protocols import Elastic
    from ..core.results import gpu_held_seconds

    done = [j for j in sim.jobs if j.finish is not None]
    segments = build_result(sim.cluster, done, 0.0).segments
    res = build_result(sim.cluster, done, gpu_held_seconds(segments))
    res.summary["max_jobs_per_gpu"] = int(sim.max_jobs_per_gpu or 0)
    elastic = isinstance(sim.policy, Elastic) and sim.policy.elastic
    resized = any(len(s.gpus) != j.num_gpus for j in done for s in j.segments)
    res.summary["elastic"] = bool(elastic or resized)
    return res


def write_measured(rows: list[dict[str, object]], path: Path) -> None:
    """``measured.csv``: the finished jobs as a generic trace (docs/formats.md): arrival,
    num_gpus, duration = the seconds the job held its GPUs over all attempts, name — so that
    ``ddlsched run --workload OUT/measured.csv`` simulates the workload the live run measured
    (``ddlsched compare`` then shows the gap)."""
    import csv
    import io

    from ..core.rundir import write_file

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["arrival", "num_gpus", "duration", "name"])
    for r in rows:
        w.writerow(
            [repr(float(r["arrival"])), r["num_gpus"], repr(float(r["duration"])), r["name"]]
        )  # type: ignore[arg-type]
    write_file(path, buf.getvalue().encode("utf-8"))


def testbed_cluster_file(name: str) -> str:
    """The cluster file ``ddlsched testbed up --name NAME`` wrote; an InputError naming
    ``--testbed`` when there is none."""
    from ..testbed import state
    from ..testbed.spec import check_name

    path = state.testbed_dir(check_name(name, "--testbed")) / state.CLUSTER_FILE
    if not path.is_file():
        raise InputError(
            f"no testbed {name!r} is up (no {path}; ddlsched testbed up --name {name} …)",
            field="--testbed",
        )
    return str(path)


def resolve_gate(name: str | None) -> object:
    """The communication gate named ``name`` (``policies.gates.GATES``: ``none``, ``srsf1``,
    ``srsf2``, ``srsf3``, ``adadual`` or a registered one); None for no name or ``none``."""
    if name is None:
        return None
    from ..policies.gates import GATES

    if name not in GATES:
        raise InputError(
            f"unknown gate {name!r}; gates: {', '.join(sorted(GATES))}", field="--gate"
        )
    return GATES[name]


def ray_missing() -> str | None:
    """Why Ray cannot be used in this environment (``Ray is not installed``, the default
    install has no Ray), or None when it imports."""
    try:
        import ray  # noqa: F401
    except ImportError as e:
        if e.name == "ray":
            return "Ray is not installed"
        return f"Ray cannot be imported ({e})"
    return None


def _note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def resolve_launcher(kind: str, ray_address: str | None, say: Callable[[str], None] = _note) -> str:
    """The launcher a live run or service will use: ``kind``, except that a private Ray
    (``--cluster``, the default) falls back to ``local`` subprocesses when Ray cannot be
    imported, saying so in one note line; ``--ray-address`` without Ray is an ``InputError``."""
    if kind != "ray":
        return kind
    why = ray_missing()
    if why is None:
        return kind
    if ray_address:
        raise InputError(f"--ray-address needs Ray: {why} (pip install 'ddlsched[ray]')")
    say(
        f"ddlsched: note: {why}; running the jobs as local subprocesses "
        "(pip install 'ddlsched[ray]' for Ray)"
    )
    return "local"


def make_launcher(kind: str, ray_address: str | None, cluster: Cluster | None):  # noqa: ANN201
    """The launcher of a live run or service: ``local`` subprocesses on ``cluster``, else Ray
    (joined at ``ray_address``, or a private instance with ``cluster``'s logical GPUs; without
    Ray: local subprocesses, see ``resolve_launcher``)."""
    kind = resolve_launcher(kind, ray_address)
    if kind == "testbed":
        from .launchers.testbed import TestbedLauncher

        assert cluster is not None
        return TestbedLauncher(cluster)
    if kind == "local":
        from .launchers.local import LocalLauncher

        assert cluster is not None
        return LocalLauncher(cluster)
    from .launchers.ray import RayLauncher

    if ray_address:
        return RayLauncher.connect(ray_address)
    assert cluster is not None
    return RayLauncher.local(cluster)
