"""``ddlsched`` command line: a thin layer over the library (every command is a library call)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

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


def _sets_with_fit(args: argparse.Namespace) -> dict[str, str]:
    """``--set`` pairs on top of ``--contention-fit``'s a, b, eta (an explicit ``--set`` wins)."""
    sets = _parse_sets(args.set or [])
    if not getattr(args, "contention_fit", None):
        return sets
    from .testbed.fit import fit_settings

    return {**fit_settings(args.contention_fit), **sets}


def _run_options(args: argparse.Namespace) -> dict[str, object]:
    """The ``run`` options given on the command line (None = not given), by config key."""
    from .config import RUN_KEYS

    values = {k: getattr(args, k, None) for k in RUN_KEYS if k != "version"}
    values["quiet"] = True if args.quiet else None
    values["overwrite"] = True if args.overwrite else None
    return values


def resolved_line(resolved: dict[str, object]) -> str:
    """The first line of ``ddlsched run``: what ran, as the backend resolved it (the same
    ``resolved`` block config.json records)."""
    rest = {k: v for k, v in resolved.items() if k not in ("policy", "backend", "jobs")}
    detail = ", ".join([str(resolved.get("jobs", "")), *(f"{k} {v}" for k, v in rest.items())])
    return f"ran {resolved.get('policy')} on backend {resolved.get('backend')}: {detail}"


def cmd_run(args: argparse.Namespace) -> int:
    from .config import RunConfig, load_run_config, run_config, with_overrides
    from .progress import ProgressBar

    cfg = load_run_config(args.config) if args.config else RunConfig()
    cfg = with_overrides(cfg, _run_options(args), _sets_with_fit(args))
    cfg.check_complete()
    if not cfg.out:
        raise InputError("missing; give --out or `out = ...` in the --config file", field="out")
    if cfg.version and cfg.version != __version__:
        print(
            f"ddlsched: note: {args.config} was recorded by ddlsched {cfg.version}, "
            f"this is {__version__}",
            file=sys.stderr,
        )
    bar = ProgressBar(f"{cfg.policy}", enabled=False if cfg.quiet else None)
    res = run_config(cfg, cfg.out, progress=bar)
    out = cfg.out
    s = res.summary
    print(resolved_line(res.resolved))
    print(
        f"{len(res.jobs)} jobs  avg JCT {s['avg_jct']:.1f} s  median {s['median_jct']:.1f} s  "
        f"p95 {s['p95_jct']:.1f} s  makespan {s['makespan']:.1f} s  GPU util {100 * s['gpu_util']:.1f} %"
    )
    extra = (", fairness.csv" if res.fairness else "") + (", queues.csv" if res.queues else "")
    print(f"wrote {os.path.join(out, 'config.json')}, summary.json, jobs.csv, segments.csv{extra}")
    if "avg_ftf_rho" in s:
        print(
            f"fairness: finish-time ρ avg {s['avg_ftf_rho']:.2f}, max {s['max_ftf_rho']:.2f}; "
            f"Jain's index {s['jain_index']:.3f}"
        )
    if len(res.jobs) > 1 and all(j.queueing == 0 for j in res.jobs):
        print(
            "ddlsched: note: no job waited for GPUs, so the queue order did not matter "
            "(policies that differ only in it give these same results); --load-scale X packs "
            "arrivals X times closer",
            file=sys.stderr,
        )
    return 0


#: ``main`` runs as the program (its arguments from the command line), not called by a test or
#: a library user with its own argument list
_AS_PROGRAM = False


def _own_the_workers() -> None:
    """``ddlsched live`` / ``serve`` own their jobs' processes: the program becomes their
    child subreaper (what a worker leaves behind stays in its tree; docs/live.md "Security
    model"). Only as the program: a caller's process would inherit all its orphans."""
    if _AS_PROGRAM:
        from .live.launchers.base import become_subreaper

        become_subreaper()


def cmd_live(args: argparse.Namespace) -> int:
    from .live.run import LiveConfig, run_live
    from .progress import ProgressBar
    from .settings import Settings

    _own_the_workers()

    cfg = LiveConfig(
        jobs=args.workload,
        policy=args.policy,
        cluster=args.cluster,
        ray_address=args.ray_address,
        settings=Settings.from_mapping(_sets_with_fit(args)),
        time_scale=args.time_scale,
        grace=args.grace,
        launcher="local" if args.local else "ray",
        testbed=args.testbed,
        gate=args.gate,
        seed=args.seed or 0,
        out=args.out,
        overwrite=args.overwrite,
    )
    _jobs_first_on_path()
    bar = ProgressBar(f"live {cfg.policy}", enabled=False if args.quiet else None)
    res, _ = run_live(cfg, progress=bar)
    s = res.summary
    print(resolved_line(res.resolved))
    print(
        f"{len(res.jobs)} jobs  avg JCT {s['avg_jct']:.1f} s  makespan {s['makespan']:.1f} s  "
        f"failed {s.get('failed_jobs', 0)}  restarts {s.get('attempts_restarted', 0)}"
    )
    print(
        f"wrote {os.path.join(cfg.out, 'config.json')}, summary.json, jobs.csv, segments.csv, events.jsonl"
    )
    return 0


def _jobs_first_on_path() -> None:
    """Jobs find ddlsched's own Python first (``python3`` in a job file = this environment's,
    where numpy and ddlsched.live are installed); a later PATH entry still works."""
    here = os.path.dirname(sys.executable)
    if os.environ.get("PATH", "").split(os.pathsep)[:1] != [here]:
        os.environ["PATH"] = here + os.pathsep + os.environ.get("PATH", "")


def cmd_serve(args: argparse.Namespace) -> int:
    from .live.service.server import ServeConfig, Service
    from .settings import Settings

    cfg = ServeConfig(
        state=args.state,
        policy=args.policy,
        cluster=args.cluster,
        ray_address=args.ray_address,
        launcher="local" if args.local else "ray",
        listen=args.listen,
        token_file=args.token_file,
        queues=args.queues,
        settings=Settings.from_mapping(_parse_sets(args.set or [])),
        grace=args.grace,
        hang_timeout=args.hang_timeout,
        min_free_mb=args.min_free_mb,
        no_token=args.no_token,
        seed=args.seed or 0,
    )
    _jobs_first_on_path()
    _own_the_workers()
    return Service(cfg).run()


def _client(args: argparse.Namespace):  # noqa: ANN202 - a ServiceClient
    from .live.service.remote import ServiceClient
    from .live.service.server import read_token

    token = read_token(args.token_file) if args.token_file else None
    return ServiceClient(args.server, token)


def cmd_submit(args: argparse.Namespace) -> int:
    import shlex

    from .live.jobfile import LiveJob, read_live_jobs

    if (args.jobfile is None) == (args.command is None):
        raise InputError("give a live job file or --command (not both)", field="JOBFILE")
    if args.jobfile is not None:
        if args.gpus is not None or args.duration is not None:
            raise InputError("--gpus and --duration go with --command", field="--gpus")
        if args.app is not None or args.batch_size is not None:
            raise InputError("--app and --batch-size go with --command", field="--app")
        jobs = read_live_jobs(args.jobfile)
    else:
        try:
            argv = tuple(shlex.split(args.command))
        except ValueError as e:
            raise InputError(f"cannot split like a shell: {e}", field="--command") from None
        if not argv:
            raise InputError("the command is empty", field="--command")
        gpus = 1 if args.gpus is None else args.gpus
        if gpus < 1:
            raise InputError("must be ≥ 1", field="--gpus")
        if args.duration is not None and not args.duration > 0:
            raise InputError("must be > 0 seconds", field="--duration")
        restarts = 3 if args.max_restarts is None else args.max_restarts
        if restarts < 0:
            raise InputError("must be ≥ 0", field="--max-restarts")
        if args.batch_size is not None and args.batch_size < 1:
            raise InputError("must be ≥ 1", field="--batch-size")
        if args.app is not None and not args.app.strip():
            raise InputError("the application name is empty", field="--app")
        jobs = [LiveJob(job_id=0, arrival=0.0, gpus=gpus, command=argv,
                        max_restarts=restarts, duration=args.duration, app=args.app,
                        batch_size=args.batch_size)]  # fmt: skip
    jobs = _labelled(jobs, args)
    for job_id in _client(args).submit(jobs):
        print(job_id)
    return 0


def _labelled(jobs: list, args: argparse.Namespace) -> list:
    """``submit --name/--queue/--priority``: set on every job (a job file's own values are
    replaced), checked as a job file's fields are."""
    from dataclasses import replace

    from .live.jobfile import jobs_from_records

    given = {k: getattr(args, k) for k in ("name", "queue", "priority") if getattr(args, k)}
    if not given:
        return jobs
    try:
        probe = jobs_from_records([{"gpus": 1, "command": ["x"], **given}], "command line")[0]
    except InputError as e:
        raise InputError(e.message, field="--" + str(e.field).rsplit(".", 1)[-1]) from None
    return [replace(j, **{k: getattr(probe, k) for k in given}) for j in jobs]


def shown(text: object) -> str:
    """``text`` for a terminal: control characters (escape sequences, carriage returns, line
    feeds a job's command or a reason may hold) shown escaped, so no line can be forged."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if code < 0x20 or 0x7F <= code < 0xA0 or ch in "\u2028\u2029":
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def cmd_status(args: argparse.Namespace) -> int:
    import json

    client = _client(args)
    if args.why is not None:
        lines = client.why(args.why)
        if args.json:
            print(json.dumps({"id": args.why, "why": lines}, indent=2))
            return 0
        for line in lines:
            print(f"job {args.why}: {shown(line)}")
        return 0
    if args.job is not None:
        doc = client.job(args.job)
        if args.json:
            print(json.dumps(doc, indent=2, sort_keys=True))
            return 0
        held = ",".join(str(g) for g in doc["gpus_held"]) or "-"
        print(f"job {doc['id']}: {doc['state']}  gpus {doc['gpus']} (holding {held})  "
              f"attempt {doc['attempt']}  failures {doc['failures']}"
              + (f"  reason: {shown(doc['reason'])}" if doc["reason"] else ""))  # fmt: skip
        if doc.get("name") or doc.get("queue"):
            print("  " + "  ".join(f"{k}: {shown(doc[k])}" for k in ("name", "queue", "priority")
                                   if doc.get(k) is not None))  # fmt: skip
        print(f"  command: {shown(' '.join(doc['command']))}")
        for e in doc["events"]:
            extra = {k: v for k, v in e.items() if k not in ("t", "event")}
            print(f"  {e['t']:.3f}  {shown(e['event'])}  {json.dumps(extra, sort_keys=True)}")
        return 0
    jobs = client.jobs()
    if args.json:
        print(json.dumps({"jobs": jobs}, indent=2, sort_keys=True))
        return 0
    by_state: dict[str, list[dict]] = {}
    for j in jobs:
        by_state.setdefault(j["state"], []).append(j)
    print(f"{len(by_state.get('queued', []))} queued, {len(by_state.get('running', []))} running, "
          f"{len(by_state.get('finished', []))} finished, {len(by_state.get('failed', []))} "
          f"failed, {len(by_state.get('cancelled', []))} cancelled")  # fmt: skip
    for state in ("running", "queued", "finished", "failed", "cancelled"):
        for j in by_state.get(state, []):
            where = ("GPUs " + ",".join(str(g) for g in j["gpus_held"])) if j["gpus_held"] else ""
            took = ""
            if j["finished_at"] is not None:
                took = f"JCT {j['finished_at'] - j['submitted_at'] - j['arrival']:.1f} s"
            label = shown(j.get("name") or "")[:24]
            if j.get("queue"):
                label = f"{label} [{shown(j['queue'])[:20]}]".strip()
            print(f"{j['id']:>6}  {state:<9} {j['gpus']:>3} GPU  {where or took:<16} "
                  + (f"{label}  " if label else "")
                  + f"{shown(' '.join(j['command']))[:60]}")  # fmt: skip
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    doc = _client(args).cancel(args.job)
    print(f"job {doc['id']}: {doc['state']}")
    return 0


def cmd_drain(args: argparse.Namespace) -> int:
    doc = _client(args).drain()
    print(f"draining: no new jobs; {doc['running']} running job(s) finish, then the service exits")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .live.service.export import export_state

    s = export_state(args.state, args.out, overwrite=args.overwrite)
    print(f"{s['num_jobs']} jobs ended on GPUs ({s['failed_jobs']} failed), "
          f"{len(s['cancelled_job_ids'])} cancelled, {len(s['unfinished_job_ids'])} not ended")  # fmt: skip
    print(f"wrote {os.path.join(args.out, 'config.json')}, summary.json, jobs.csv, "
          "segments.csv, submitted.csv")  # fmt: skip
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from .progress import ProgressBar
    from .sweep import format_markdown, load_sweep, run_sweep

    if args.workers is not None and args.workers < 1:
        raise InputError("must be ≥ 1", field="--workers")
    if args.max_runs is not None and args.max_runs < 1:
        raise InputError("must be ≥ 1", field="--max-runs")
    sweep = load_sweep(args.config, max_runs=args.max_runs)
    address = args.ray_address or sweep.ray_address
    quiet = args.quiet or sweep.quiet

    def plan(total: int, cached: int) -> None:
        if not quiet:
            print(f"{total} runs: {cached} cached, {total - cached} to run", file=sys.stderr)

    try:
        result = run_sweep(
            sweep,
            args.out,
            executor="ray" if address else "local",
            workers=args.workers or sweep.workers,
            ray_address=address,
            progress=ProgressBar("sweep", enabled=False if quiet else None),
            on_plan=plan,
            overwrite=args.overwrite or sweep.overwrite,
        )
    except KeyboardInterrupt:
        print("\nddlsched: finished runs are kept; run the same command to resume", file=sys.stderr)
        raise
    print(format_markdown(sweep, result.table))
    print(f"ran {len(result.executed)}, reused {len(result.cached)} cached runs")
    print(f"wrote {result.out}/summary.csv, summary.md, runs.csv, runs/")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from .core.rundir import claim, marker_rule, staged
    from .experiments import EXPERIMENTS
    from .experiments.runner import (
        REPRODUCE_MARKER,
        markdown_head,
        markdown_tail,
        markdown_variant,
        reproduction_id,
        run_experiment,
        write_reproduction,
    )
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
    if args.workers is not None and args.workers < 1:
        raise InputError("must be ≥ 1", field="--workers")
    bar = ProgressBar(exp.name)
    n_seeds = args.seeds or exp.default_seeds
    chosen = variants or exp.default_variants()
    rid = reproduction_id(exp, chosen, n_seeds, args.data)
    with claim(
        args.out, may_replace=marker_rule(REPRODUCE_MARKER, rid), overwrite=args.overwrite
    ) as target:
        # each variant's table is printed as soon as its runs are done, in the variants'
        # order: the same text as format_markdown, the first table long before the last
        done: dict[str, list[dict]] = {}
        shown: list[str] = []

        def show(v: str, rows: list[dict]) -> None:
            done[v] = rows
            while len(shown) < len(chosen) and chosen[len(shown)] in done:
                name = chosen[len(shown)]
                bar.clear()
                if not shown:
                    print(markdown_head(exp, done[name]), end="")
                print(markdown_variant(exp, done[name], name), end="", flush=True)
                shown.append(name)

        with staged(target, args.out) as staging:
            table = run_experiment(
                exp,
                n_seeds,
                None,
                workers=args.workers,
                variants=variants,
                progress=bar,
                on_variant=show if exp.custom is None else None,
                data=args.data,
            )
            names = write_reproduction(exp, table, staging, chosen, n_seeds, args.data)
    if not shown:  # a custom experiment: its table at the end
        print(markdown_head(exp, table), end="")
    for v in dict.fromkeys(t["variant"] for t in table):
        if v not in shown:
            print(markdown_variant(exp, table, v), end="")
    print(markdown_tail(exp, table))
    print(f"wrote {os.path.join(args.out, '')}" + ", ".join(names))
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from .report.plot import parse_kinds, parse_window, plot_runs

    paths = plot_runs(
        args.dirs,
        args.out,
        kinds=parse_kinds(args.kind),
        fmt=args.format,
        window=parse_window(args.window),
        max_gpus=args.max_gpus,
    )
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    out = write_report(args.dirs, args.out, title=args.title)
    print(f"wrote {out}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from .core.results import atomic_write_bytes
    from .report.compare import compare_dirs, comparison_csv, format_comparison

    c = compare_dirs(args.dir_a, args.dir_b)
    if args.out:
        try:
            atomic_write_bytes(args.out, comparison_csv(c))
        except OSError as e:
            raise InputError(f"cannot write: {e.strerror or e}", source=args.out) from None
    if args.json:
        print(json.dumps(c.summary(), indent=2, sort_keys=True, allow_nan=False, default=str))
    else:
        print(format_comparison(c))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from .progress import ProgressBar
    from .replay import REPLAY_FILE, ReplayConfig, replay
    from .replay_profile import PROFILE_REPLAY_FILE

    cfg = ReplayConfig(
        live=args.live,
        policy=args.policy,
        out=args.out,
        settings=_parse_sets(args.set or []),
        seed=args.seed,
        cluster=args.cluster,
        overwrite=args.overwrite,
    )
    bar = ProgressBar(f"replay {cfg.policy}", enabled=False if args.quiet else None)
    res, live = replay(cfg, progress=bar)
    restarts = [x for xs in live.restarts.values() for x in xs]
    stops = [x for xs in live.stops.values() for x in xs]

    def mean(xs: list[float]) -> str:
        return f"{sum(xs) / len(xs):.2f} s" if xs else "none measured"

    print(
        f"calibrated {len(live.jobs)} finished jobs of {live.path} (live {live.policy}): "
        f"restart start-up {mean(restarts)} ({len(live.restarts)} jobs restarted), "
        f"stop {mean(stops)} ({len(live.stops)} jobs stopped)"
    )
    s = res.summary
    print(resolved_line(res.resolved))
    print(
        f"{len(res.jobs)} jobs  avg JCT {s['avg_jct']:.1f} s  median {s['median_jct']:.1f} s  "
        f"makespan {s['makespan']:.1f} s  GPU util {100 * s['gpu_util']:.1f} %  "
        f"preemptions {sum(j.preemptions for j in res.jobs)}"
    )
    print(
        f"wrote {os.path.join(cfg.out, 'config.json')}, summary.json, jobs.csv, segments.csv, "
        f"{REPLAY_FILE if live.profile is None else PROFILE_REPLAY_FILE}"
    )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check_paths

    bad = 0
    for res in check_paths(args.dirs):
        for note in res.notes:
            print(f"ddlsched: note: {res.path}: {' '.join(note.split())}", file=sys.stderr)
        for v in res.violations:
            print(v.format(res.path))
        if res.ok:
            print(f"ok: {res.path} ({res.num_jobs} jobs, {res.num_segments} segments)")
        bad += not res.ok
    return 1 if bad else 0


def cmd_list(args: argparse.Namespace) -> int:
    from .core.cluster_io import CLUSTER_PRESETS
    from .experiments import EXPERIMENTS
    from .policies.gates import GATES
    from .policies.ordering import ORDERINGS
    from .policies.placement import PLACEMENT_NAMES
    from .policies.plugins import (
        MODEL_JOBS,
        PROFILE_JOBS,
        TRACE_JOBS,
        all_policies,
        load_plugin,
    )
    from .workloads.generators import WORKLOAD_PRESETS

    for plugin in args.plugin or ():
        load_plugin(plugin)  # its register_policy calls add to the registry
    short = {MODEL_JOBS: "model", PROFILE_JOBS: "profile", TRACE_JOBS: "trace"}
    entries = all_policies().values()

    def show(entry: object) -> None:
        kinds = ",".join(short[k] for k in entry.kinds)  # type: ignore[attr-defined]
        print(f"  {entry.name:10s} {entry.description}  [{kinds}]")  # type: ignore[attr-defined]

    # the policy registry (policies/builtin.py and plugins), by the jobs each policy runs on;
    # [model,profile,trace]: the job kinds a policy runs on
    print("policies:")
    for e in entries:
        if e.builtin and e.kinds == (MODEL_JOBS,) and not e.places_jobs:
            show(e)
    print(
        "planners (offline; planned under Yu's RAR model, executed under it or, with "
        "model=wang, under Wang's iteration level):"
    )
    for e in entries:
        if e.builtin and e.kinds == (MODEL_JOBS,) and e.places_jobs:
            show(e)
    print("application-profile policies (Pollux-format workloads, --set profiles=DIR):")
    for e in entries:
        if e.builtin and MODEL_JOBS not in e.kinds:
            show(e)
    users = [e for e in entries if not e.builtin]
    if users:
        print("registered policies (register_policy):")
        for e in users:
            show(e)
    print("placements: " + ", ".join(PLACEMENT_NAMES))
    print("orderings:  " + ", ".join(ORDERINGS))
    print("gates:      " + ", ".join(GATES))
    from .core.ratemodels import model_names
    from .workloads.traces import TRACE_FORMATS

    print("models:     " + ", ".join(model_names()) + "  (--set model=NAME)")
    print("formats:    " + ", ".join(TRACE_FORMATS) + "  (--workload-format NAME)")
    print(
        "clusters:   "
        + ", ".join(CLUSTER_PRESETS)
        + ", yu22-N (first N servers of yu22), gavel-V:P:K (Gavel's V100:P100:K80 clusters),"
        + " sia-64xN (sia-64 with N times its nodes)"
    )
    print(
        "workloads:  "
        + ", ".join(WORKLOAD_PRESETS)
        + ", luo24-N (N jobs), luo24-paper[-N] (Luo et al.'s stated mix, 240 or N jobs)"
    )
    print("experiments:")
    for e in EXPERIMENTS.values():
        print(f"  {e.name:15s} {e.description}")
    return 0


def _add_trace_options(p: argparse.ArgumentParser, standalone: bool = False) -> None:
    """The workload-file options (format and filters; docs/formats.md, "Job traces")."""
    from .parsing import float_arg, int_arg
    from .workloads.traces import TRACE_FORMATS

    g = p.add_argument_group("workload file format and filters")
    g.add_argument(
        "--workload-format",
        metavar="NAME",
        help="file format instead of detecting it: " + ", ".join(TRACE_FORMATS),
    )
    g.add_argument(
        "--trace-start",
        type=float_arg,
        metavar="S",
        help="keep arrivals ≥ S seconds (shifted to 0)",
    )
    g.add_argument("--trace-end", type=float_arg, metavar="S", help="keep arrivals < S seconds")
    g.add_argument(
        "--max-gpus", type=int_arg, metavar="N", help="drop jobs wanting more than N GPUs"
    )
    g.add_argument("--sample", type=int_arg, metavar="N", help="keep N jobs at random (by --seed)")
    g.add_argument(
        "--load-scale", type=float_arg, metavar="X", help="X times denser arrivals (arrival / X)"
    )
    if standalone:
        g.add_argument("--seed", type=int_arg, default=0, help="seed for --sample (default 0)")
    g.add_argument(
        "--gavel-throughputs",
        metavar="FILE",
        help="Gavel's simulation_throughputs.json: gives Gavel-trace jobs durations",
    )
    g.add_argument(
        "--gavel-gpu",
        default=None if not standalone else "v100",
        metavar="NAME",
        help="GPU type in it (default v100)",
    )


def _load_trace(args: argparse.Namespace) -> list:
    from .workloads.presets import load_workload
    from .workloads.traces import TraceOptions

    return load_workload(args.file, args.seed, None, TraceOptions.from_values(vars(args)))


def cmd_trace_stats(args: argparse.Namespace) -> int:
    import json

    from .workloads.trace_stats import format_trace_stats, trace_stats

    stats = trace_stats(_load_trace(args))
    if args.json:
        print(json.dumps(stats, indent=2, sort_keys=True))
    else:
        print(format_trace_stats(stats, title=args.file), end="")
    return 0


def cmd_trace_convert(args: argparse.Namespace) -> int:
    from .core.rundir import check_output_file
    from .workloads.traces import write_trace

    check_output_file(args.out)  # before reading the trace
    jobs = _load_trace(args)
    write_trace(jobs, args.out)
    print(f"wrote {args.out} ({len(jobs)} jobs)")
    return 0


def cmd_queues_decide(args: argparse.Namespace) -> int:
    import json

    from .tenancy import decide, load_queues, load_snapshot

    config = load_queues(args.queues)
    snapshot = load_snapshot(args.workloads, config)
    decision = decide(config, snapshot, until_stable=args.until_stable)
    print(json.dumps(decision.to_json(), indent=2, sort_keys=True))
    if not decision.stable:
        print(
            f"ddlsched: note: no stable state: after {decision.cycles} cycles the admissions "
            "repeat (reclaims and re-admissions with nothing finishing; Kueue's requeue "
            "back-off is not modelled): printed is the state where they started to repeat",
            file=sys.stderr,
        )
    return 0


def cmd_testbed_up(args: argparse.Namespace) -> int:
    from .testbed import TestbedSpec, up

    spec = TestbedSpec.parse(
        args.name, args.servers, args.gpus_per_server, args.bandwidth, args.delay
    )
    res = up(spec)
    for note in res.notes:
        print(f"ddlsched: note: {note}", file=sys.stderr)
    st = res.state
    delay = f", +{st.delay_ms:g} ms one way" if st.delay_ms else ""
    print(
        f"testbed {st.name} up in {res.seconds:.2f} s: {st.servers} servers "
        f"({', '.join(f'{ns} {a}' for ns, a in zip(st.server_ns, st.addresses, strict=True))}) "
        f"× {st.gpus_per_server} GPUs, uplinks {spec.rate} each way{delay}, switch {st.switch_ns}"
    )
    print(f"wrote {res.cluster_file}")
    return 0


def cmd_testbed_down(args: argparse.Namespace) -> int:
    from .testbed import down

    res = down(args.name)
    print(
        f"testbed {res.name} down: removed {len(res.namespaces)} namespaces"
        + (f", ended {len(res.processes)} processes" if res.processes else "")
    )
    return 0


def cmd_testbed_list(args: argparse.Namespace) -> int:
    from .testbed import list_testbeds

    rows = list_testbeds()
    if not rows:
        print("no testbeds")
        return 0
    print(
        f"{'name':<12} {'status':<9} {'servers':>7} {'gpus':>4} {'rate':>8} {'subnet':<16} namespaces"
    )
    for r in rows:
        expected = "?" if r.namespaces_expected is None else str(r.namespaces_expected)
        print(
            f"{r.name:<12} {r.status:<9} {r.servers if r.servers is not None else '?':>7} "
            f"{r.gpus_per_server if r.gpus_per_server is not None else '?':>4} {r.rate:>8} "
            f"{r.subnet:<16} {r.namespaces_present}/{expected}"
        )
    return 0


def cmd_testbed_measure(args: argparse.Namespace) -> int:
    from .testbed.measure import MeasureConfig, measure, parse_sizes

    cfg = MeasureConfig(
        name=args.name,
        out=args.out,
        sizes_mb=parse_sizes(args.sizes),
        max_k=args.max_k,
        reps=args.reps,
        placement=args.placement,
        backend=args.backend,
        tcp=args.tcp or "",
        overwrite=args.overwrite,
    )
    quiet = args.quiet

    def progress(msg: str) -> None:
        if not quiet:
            print(f"ddlsched: {msg}", file=sys.stderr)

    res = measure(cfg, progress=progress)
    s = res.summary
    print(
        f"measured {len(res.rows)} points on testbed {s['testbed']} ({s['rate']}, "
        f"{s['backend']}, placement {s['placement']}) in {s['seconds']:.0f} s"
    )
    print(
        f"Wang: a {s['a'] * 1e3:.2f} ms, b {s['b'] * 1e9:.2f} ms/MB, eta {s['eta'] * 1e9:.2f} ms/MB "
        f"(eta/b {s['eta_over_b']:.3f}); MRE on sizes {s['held_out_sizes_mb']} MB: "
        f"{100 * s['wang_mre']:.1f} %"
    )
    yu = s["yu"]
    print(
        f"Yu: xi1 {yu['xi1']:.3f}, alpha {yu['alpha']:.3f}, xi2 {yu['xi2'] * 1e3:.2f} ms; MRE "
        f"{100 * s['yu_mre']:.1f} % (defaults: {100 * s['yu_default_mre']:.1f} %)"
    )
    print(f"wrote {os.path.join(res.out, 'contention.csv')}, summary.json, samples.csv")
    return 0


class UsageError(Exception):
    """A command line argparse refuses (unknown option, malformed value); :func:`main` prints
    it as one ``ddlsched: error:`` line and exits 2, like any other input error."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises :class:`UsageError` (one line, no usage block)
    instead of printing the usage and exiting; subcommand parsers inherit this."""

    def error(self, message: str) -> NoReturn:
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        raise UsageError(f"{text} (see '{self.prog} --help')")


_FIT_HELP = (
    "a summary.json of `ddlsched testbed measure`: its fitted a, b, eta as settings "
    "(an explicit --set wins); docs/testbed.md"
)


def build_parser() -> argparse.ArgumentParser:
    from .parsing import float_arg, int_arg

    p = _Parser(
        prog="ddlsched",
        description="Simulate and reproduce schedulers for distributed deep-learning jobs.",
    )
    p.add_argument("--version", action="version", version=f"ddlsched {__version__}")
    p.add_argument(
        "--debug",
        action="store_true",
        help="on an error, print the traceback (with its cause) before the one-line message",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="simulate one workload on one cluster under one policy")
    r.add_argument(
        "--config",
        help="experiment file (TOML, or a recorded config.json); options given here override it",
    )
    r.add_argument("--cluster", help="cluster preset (see `list`) or TOML/YAML file")
    r.add_argument("--workload", help="workload preset, CSV/JSON file or job trace (any format)")
    r.add_argument(
        "--policy",
        help="policy preset or planner, e.g. ada-srsf, srsf1, sjf-bco; or your own as "
        "FILE.py:FACTORY or MODULE:FACTORY (docs/tutorial-policy.md)",
    )
    r.add_argument("--placement", help="override the preset's placement: ff, ls, rand, lwf, lwf-K")
    r.add_argument(
        "--queues",
        help="multi-tenant quotas: Kueue YAML or native TOML file, or `proportional` (one "
        "ClusterQueue per job queue, quota ∝ GPU demand, one cohort); docs/tenancy.md",
    )
    r.add_argument("--seed", type=int_arg, help="seed for generators and RAND (default 0)")
    r.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="engine/model setting, e.g. iterations_per_task=1000, kappa=2, granularity=job",
    )
    r.add_argument("--contention-fit", metavar="SUMMARY.json", help=_FIT_HELP)
    r.add_argument("--out", help="output directory (or `out` in the --config file)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an --out that holds another run (default: refuse, exit 2)",
    )
    _add_trace_options(r)
    r.set_defaults(func=cmd_run)

    lv = sub.add_parser(
        "live", help="run a policy in real time on real processes (Ray); docs/live.md"
    )
    lv.add_argument("--cluster", help="cluster preset or file (logical GPUs on a local Ray)")
    lv.add_argument(
        "--workload", required=True, help="live job file: TOML [[jobs]] or CSV (docs/formats.md)"
    )
    lv.add_argument("--policy", required=True, help="fifo, sjf, tiresias, or FILE.py:FACTORY")
    lv.add_argument("--set", action="append", metavar="KEY=VALUE", help="policy setting")
    lv.add_argument("--contention-fit", metavar="SUMMARY.json", help=_FIT_HELP)
    lv.add_argument(
        "--time-scale",
        type=float_arg,
        default=1.0,
        metavar="X",
        help="replay the job file's arrivals X times faster (default 1)",
    )
    lv.add_argument(
        "--grace",
        type=float_arg,
        default=10.0,
        metavar="S",
        help="seconds a stopped job has to checkpoint before SIGKILL (default 10)",
    )
    lv.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="join this Ray cluster and use its nodes and GPUs (default: a private local Ray)",
    )
    lv.add_argument(
        "--local",
        action="store_true",
        help="plain subprocesses on this machine instead of Ray",
    )
    lv.add_argument(
        "--testbed",
        metavar="NAME",
        help="run on testbed NAME (ddlsched testbed up): its cluster, each worker inside its "
        "server's network namespace (root; docs/testbed.md)",
    )
    lv.add_argument(
        "--gate",
        metavar="GATE",
        help="serve the per-iteration communication channel with this gate (none, srsf1, "
        "srsf2, adadual): jobs ask live.may_communicate() before each all-reduce",
    )
    lv.add_argument("--seed", type=int_arg, help="seed of the policy's randomness (default 0)")
    lv.add_argument("--out", required=True, help="output directory")
    lv.add_argument("--quiet", action="store_true", help="no progress bar")
    lv.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an --out that holds another run (default: refuse, exit 2)",
    )
    lv.set_defaults(func=cmd_live)

    from .live.service.endpoints import DEFAULT_LISTEN, DEFAULT_SERVER

    sv = sub.add_parser(
        "serve",
        help="the live scheduler as a service: submit/status/cancel over HTTP (docs/live.md)",
    )
    sv.add_argument("--cluster", help="cluster preset or file (logical GPUs)")
    sv.add_argument("--policy", required=True, help="fifo, sjf, tiresias, or FILE.py:FACTORY")
    sv.add_argument("--state", required=True, metavar="DIR",
                    help="state directory: jobs, events and job files survive restarts here")  # fmt: skip
    sv.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                    help=f"address to listen on (default {DEFAULT_LISTEN}; port 0: any free "
                    "port, written to DIR/endpoint.json); not loopback needs --token-file")  # fmt: skip
    sv.add_argument("--token-file", metavar="FILE", help="requests must carry this token "
                    "(default: a token of the service's own in DIR/token, which this user's "
                    "clients find by themselves)")  # fmt: skip
    sv.add_argument("--no-token", action="store_true",
                    help="accept requests without a token (every local user may then submit "
                    "commands that run as you; loopback only)")  # fmt: skip
    sv.add_argument("--queues", metavar="Q.yaml",
                    help="Kueue's manifests: jobs are admitted by their queue's quota first; a "
                    "token per LocalQueue in DIR/tenant-tokens.json (docs/live.md 'Tenants')")  # fmt: skip
    sv.add_argument("--set", action="append", metavar="KEY=VALUE", help="policy setting")
    sv.add_argument("--grace", type=float_arg, default=10.0, metavar="S",
                    help="seconds a stopped job has to checkpoint before SIGKILL (default 10)")  # fmt: skip
    sv.add_argument("--hang-timeout", type=float_arg, default=600.0, metavar="S",
                    help="a job that reported progress and then none for S seconds is hung: "
                    "restarted from its checkpoint (default 600; 0: never)")  # fmt: skip
    sv.add_argument("--min-free-mb", type=float_arg, default=512.0, metavar="MB",
                    help="free disk space the state directory must keep: the service does not "
                    "start below it and starts no job while below it (default 512)")  # fmt: skip
    sv.add_argument("--ray-address", metavar="ADDR", help="use this Ray cluster's GPUs")
    sv.add_argument("--local", action="store_true", help="plain subprocesses instead of Ray")
    sv.add_argument("--seed", type=int_arg, help="seed of the policy's randomness (default 0)")
    sv.set_defaults(func=cmd_serve)

    def client_options(cp: argparse.ArgumentParser) -> None:
        cp.add_argument("--server", metavar="URL",
                        help=f"the service (default $DDLSCHED_SERVER or {DEFAULT_SERVER})")  # fmt: skip
        cp.add_argument("--token-file", metavar="FILE", help="the service's token")

    sb = sub.add_parser("submit", help="submit jobs to a running service; prints their ids")
    sb.add_argument("jobfile", nargs="?", metavar="JOBFILE", help="live job file (TOML or CSV)")
    sb.add_argument("--command", metavar="CMD", help="one job's command line (instead of a file)")
    sb.add_argument("--gpus", type=int_arg, help="GPUs of the --command job (default 1)")
    sb.add_argument("--duration", type=float_arg, metavar="S", help="its run-time estimate")
    sb.add_argument("--max-restarts", type=int_arg, metavar="N", help="its restarts (default 3)")
    sb.add_argument("--app", metavar="APP",
                    help="its application profile (a service of pollux, sia, sjf-ffs, sjf-bsbf)")  # fmt: skip
    sb.add_argument("--batch-size", type=int_arg, metavar="N",
                    help="its total batch (with --app)")  # fmt: skip
    sb.add_argument("--name", help="the jobs' name (shown by status and the status page)")
    sb.add_argument("--queue", help="their LocalQueue (a service with --queues)")
    sb.add_argument("--priority", help="their priority: an integer or a WorkloadPriorityClass")
    client_options(sb)
    sb.set_defaults(func=cmd_submit)
    su = sub.add_parser("status", help="a service's queue, running and ended jobs (or one job)")
    su.add_argument("job", nargs="?", type=int_arg, metavar="JOB", help="one job's id")
    su.add_argument("--why", type=int_arg, metavar="JOB",
                    help="why a job is pending: its quota layer's reasons, one line each")  # fmt: skip
    su.add_argument("--json", action="store_true", help="print the service's JSON")
    client_options(su)
    su.set_defaults(func=cmd_status)
    cc = sub.add_parser("cancel", help="cancel a queued or running job")
    cc.add_argument("job", type=int_arg, metavar="JOB", help="the job's id")
    client_options(cc)
    cc.set_defaults(func=cmd_cancel)
    dr = sub.add_parser(
        "drain", help="the service takes no new jobs, lets running ones finish, exits"
    )
    client_options(dr)
    dr.set_defaults(func=cmd_drain)
    ex = sub.add_parser("export", help="a service's state as a run directory (any time)")
    ex.add_argument("--state", required=True, metavar="DIR", help="the service's state directory")
    ex.add_argument("--out", required=True, help="output run directory")
    ex.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    ex.set_defaults(func=cmd_export)

    sw = sub.add_parser(
        "sweep", help="run policies × parameters × seeds from a sweep file, cached and resumable"
    )
    sw.add_argument("--config", required=True, help="sweep file (TOML; see docs/experiments.md)")
    sw.add_argument("--out", help="output directory (or `out` in [sweep])")
    sw.add_argument(
        "--workers", type=int, help="parallel processes / local Ray CPUs (default: all)"
    )
    sw.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="run on Ray, one task per run: local (start a private instance), auto, HOST:PORT",
    )
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.add_argument(
        "--max-runs",
        type=int,
        metavar="N",
        help="refuse a sweep that expands to more than N runs (default 10000, or max_runs)",
    )
    sw.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an --out that holds another sweep (default: refuse; the same sweep resumes)",
    )
    sw.set_defaults(func=cmd_sweep)

    rp = sub.add_parser(
        "reproduce", help="rerun a paper experiment; our numbers beside the paper's"
    )
    rp.add_argument("experiment", metavar="EXPERIMENT", help="e.g. wang20-table4 (see `list`)")
    rp.add_argument("--seeds", type=int_arg, help="number of seeds (default: the experiment's)")
    rp.add_argument("--variant", help="comma-separated subset of variants, e.g. coarse")
    rp.add_argument("--workers", type=int, help="parallel processes (default: all cores)")
    rp.add_argument(
        "--data",
        metavar="DIR",
        help="the experiment's input folder, e.g. Sia's artifact for sia-table3 or the Pollux "
        "artifact's data for luo24-* (default: the environment variable / ../shared it names)",
    )
    rp.add_argument("--out", required=True, help="output directory")
    rp.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an --out that holds another result (default: refuse, exit 2)",
    )
    rp.set_defaults(func=cmd_reproduce)

    pl = sub.add_parser("plot", help="figures of result directories (CDFs, utilisation, Gantt)")
    pl.add_argument("dirs", nargs="+", metavar="DIR", help="run or sweep result directories")
    pl.add_argument("--out", required=True, help="directory for the figure files")
    pl.add_argument(
        "--kind",
        help="comma-separated subset of jct-cdf,queue-cdf,util,gantt,bars,rho-cdf,queues (default all)",
    )
    pl.add_argument("--format", default="png", help="png (default), svg or pdf")
    pl.add_argument("--window", metavar="START:END", help="Gantt time window in seconds")
    pl.add_argument("--max-gpus", type=int_arg, default=64, help="Gantt rows (default 64)")
    pl.set_defaults(func=cmd_plot)

    rep = sub.add_parser("report", help="one self-contained HTML report of result directories")
    rep.add_argument("dirs", nargs="+", metavar="DIR", help="run or sweep result directories")
    rep.add_argument("--out", required=True, help="HTML file to write, e.g. report.html")
    rep.add_argument("--title", default="ddlsched report", help="report title")
    rep.set_defaults(func=cmd_report)

    cp = sub.add_parser(
        "compare", help="per-job and average JCT differences between two run directories"
    )
    cp.add_argument("dir_a", metavar="DIR_A", help="a run directory (e.g. a live run)")
    cp.add_argument("dir_b", metavar="DIR_B", help="another (e.g. its simulation)")
    cp.add_argument("--out", metavar="FILE.csv", help="write the per-job table (job_id, jct_a, …)")
    cp.add_argument("--json", action="store_true", help="print the summary as JSON")
    cp.set_defaults(func=cmd_compare)

    rpl = sub.add_parser(
        "replay",
        help="simulate a live run's jobs, as it measured them, under any policy (docs/live.md)",
    )
    rpl.add_argument("live", metavar="LIVE_DIR", help="a run directory `ddlsched live` wrote")
    rpl.add_argument("--policy", required=True, help="the policy to predict, e.g. sjf, tiresias")
    rpl.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="setting (over the live run's that apply), e.g. interval=1",
    )
    rpl.add_argument("--seed", type=int_arg, help="seed (default: the live run's)")
    rpl.add_argument("--cluster", help="cluster preset or file (default: the live run's)")
    rpl.add_argument("--out", required=True, help="output run directory")
    rpl.add_argument("--quiet", action="store_true", help="no progress bar")
    rpl.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an --out that holds another run (default: refuse, exit 2)",
    )
    rpl.set_defaults(func=cmd_replay)

    ck = sub.add_parser(
        "check", help="prove result directories are valid schedules (one line per violation)"
    )
    ck.add_argument(
        "dirs", nargs="+", metavar="DIR", help="run directories or sweep outputs (each runs/<key>/)"
    )
    ck.set_defaults(func=cmd_check)

    tr = sub.add_parser("trace", help="job traces: distribution (stats), conversion (convert)")
    trs = tr.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")
    st = trs.add_parser("stats", help="jobs, GPU-size histogram, duration quantiles, arrival rate")
    st.add_argument("file", metavar="FILE", help="trace or workload file (or workload preset)")
    st.add_argument("--json", action="store_true", help="print the numbers as JSON")
    _add_trace_options(st, standalone=True)
    st.set_defaults(func=cmd_trace_stats)
    cv = trs.add_parser("convert", help="write a trace in the generic schema (CSV or Parquet)")
    cv.add_argument("file", metavar="FILE", help="trace or workload file (or workload preset)")
    cv.add_argument("--out", required=True, help="output file: .csv, or .parquet/.pq")
    _add_trace_options(cv, standalone=True)
    cv.set_defaults(func=cmd_trace_convert)

    qu = sub.add_parser("queues", help="multi-tenant quotas: one Kueue scheduling cycle (decide)")
    qus = qu.add_subparsers(dest="queues_command", required=True, metavar="SUBCOMMAND")
    qd = qus.add_parser(
        "decide",
        help="what one Kueue scheduling cycle does to a snapshot (JSON on stdout)",
        description="Print, as JSON, the workloads one Kueue scheduling cycle admits (with "
        "their flavors), preempts (with Kueue's reason) and leaves pending. docs/tenancy.md.",
    )
    qd.add_argument(
        "--queues",
        required=True,
        metavar="FILE",
        help="Kueue manifests (multi-document YAML) or the native .toml form",
    )
    qd.add_argument(
        "--workloads",
        required=True,
        metavar="FILE",
        help="the snapshot: 'admitted' and 'pending' workloads (YAML, JSON or .toml)",
    )
    qd.add_argument(
        "--until-stable",
        action="store_true",
        help="repeat cycles (nothing finishes) until one changes nothing",
    )
    qd.set_defaults(func=cmd_queues_decide)

    tb = sub.add_parser(
        "testbed",
        help="a contention testbed: servers as network namespaces on shaped links (root)",
        description="Servers as network namespaces behind shaped uplinks to one bridge, real "
        "all-reduce traffic between them (docs/testbed.md). Needs root and iproute2.",
    )
    tbs = tb.add_subparsers(dest="testbed_command", required=True, metavar="SUBCOMMAND")
    tu = tbs.add_parser("up", help="make a testbed and its cluster file")
    tu.add_argument("--name", required=True, help="1-12 characters of a-z, 0-9, '-'")
    tu.add_argument("--servers", required=True, metavar="N", help="servers (namespaces), 1-64")
    tu.add_argument("--gpus-per-server", required=True, metavar="G", help="logical GPUs, 1-64")
    tu.add_argument(
        "--bandwidth", required=True, metavar="RATE", help="each uplink's rate (100mbit, 1gbit)"
    )
    tu.add_argument("--delay", metavar="MS", help="one-way delay per uplink (needs netem)")
    tu.set_defaults(func=cmd_testbed_up)
    td = tbs.add_parser("down", help="remove a testbed: processes, namespaces, links, state")
    td.add_argument("--name", required=True)
    td.set_defaults(func=cmd_testbed_down)
    tl = tbs.add_parser("list", help="the testbeds on this machine")
    tl.set_defaults(func=cmd_testbed_list)
    tm = tbs.add_parser(
        "measure",
        help="k = 1..4 concurrent all-reduces; Wang's and Yu's contention models fitted",
    )
    tm.add_argument("--name", required=True)
    tm.add_argument("--out", required=True, metavar="DIR")
    tm.add_argument(
        "--sizes",
        default="1,2,4,8,16",
        metavar="MB,…",
        help="all-reduce sizes (default 1,2,4,8,16)",
    )
    tm.add_argument("--max-k", type=int_arg, default=4, metavar="K", help="most jobs at once (4)")
    tm.add_argument("--reps", type=int_arg, default=2, metavar="N", help="repetitions (2)")
    tm.add_argument(
        "--placement", default="pair", help="pair (default: all jobs on servers 0, 1) or star"
    )
    tm.add_argument(
        "--backend", default="auto", help="gloo (torch), ring (our own over TCP), auto (default)"
    )
    tm.add_argument(
        "--tcp", metavar="CC", help="TCP congestion control of the ring backend (cubic, bbr, reno)"
    )
    tm.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    tm.add_argument("--quiet", action="store_true", help="no progress lines")
    tm.set_defaults(func=cmd_testbed_measure)

    ls = sub.add_parser("list", help="show policies, placements, gates, presets, experiments")
    ls.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE_OR_FILE.py",
        help="import a module or a Python file first, so that the policies it registers "
        "(register_policy) are listed too (repeatable)",
    )
    ls.set_defaults(func=cmd_list)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every cleanup path (staging directories, worker
    pools, Ray) runs; the exit status is 143 instead of 130."""


#: exit statuses: input/output errors, Ctrl-C (SIGINT), SIGTERM
EXIT_INPUT, EXIT_SIGINT, EXIT_SIGTERM = 2, 130, 143
#: the reader of stdout went away (SIGPIPE's conventional status, 128 + 13)
EXIT_PIPE = 141


#: the signal that stopped this command (libraries such as Ray may re-raise a plain
#: KeyboardInterrupt in place of ours, so the status is decided from this)
_received: list[int] = []


def _on_signal(signum: int, frame: object) -> None:
    """First SIGINT/SIGTERM: stop the work by raising; later ones are ignored so the cleanup
    they trigger cannot itself be cut short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _received.append(signum)
    if signum == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt()


def _interrupted_exit(code: int) -> int:
    """The exit status of an interrupted command. As the program, after a run that used Ray
    (its own clean-up done: Ray shut down, its processes ended), the process ends here without
    the interpreter's finalization: Ray's C++ teardown there crashed a SIGTERMed sweep on a
    loaded machine (exit −11 after "ddlsched: terminated", twice in CI)."""
    if _AS_PROGRAM and "ray" in sys.modules:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    global _AS_PROGRAM
    _AS_PROGRAM = argv is None
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as e:
        print(f"ddlsched: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
        signal.signal(signal.SIGINT, _on_signal)
        signal.signal(signal.SIGTERM, _on_signal)
    try:
        return int(args.func(args) or 0)
    except InputError as e:
        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"ddlsched: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # the reader went away (`ddlsched list | head`): stop quietly
        try:  # later writes (and the flush at exit) go nowhere instead of raising again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_PIPE
    except KeyboardInterrupt as e:
        if isinstance(e, Terminated) or _received[:1] == [signal.SIGTERM]:
            print("ddlsched: terminated", file=sys.stderr)
            return _interrupted_exit(EXIT_SIGTERM)
        print("ddlsched: interrupted", file=sys.stderr)
        return _interrupted_exit(EXIT_SIGINT)
    finally:
        _received.clear()
        if previous is not None:  # in-process callers (tests) get their handlers back
            for signum, handler in zip((signal.SIGINT, signal.SIGTERM), previous, strict=True):
                if handler is not None:
                    signal.signal(signum, handler)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
