"""Sweeps: the cross product policies × parameter grid × seeds of one base run config.

Each run is a fully resolved config (``RunConfig.record()``); its hash (SHA-256 of the
canonical JSON, which includes the package version, plus the contents of the files it names)
names its result directory ``OUT/runs/<hash>/`` — the files of ``ddlsched run``. A run whose
``summary.json`` exists is not run again, so an interrupted sweep resumes where it stopped.
Runs execute on local processes (the experiments runner's pool) or as one Ray task each; the
driver writes every result, so both give the same files. ``OUT/runs.csv`` has one row per run,
``OUT/summary.csv``/``summary.md`` the mean and 95 % t-interval per (policy, grid point).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path

from .api import Settings
from .config import (
    PATH_SETTINGS,
    RUN_KEYS,
    WORKLOAD_OPTIONS,
    ConfigText,
    RunConfig,
    build_run_config,
    check_keys,
    check_type,
    config_from_record,
    parse_run_values,
    policy_file,
    read_config_file,
    resolve_value,
    simulate_config,
)
from .core.results import SUMMARY_KEYS, SimResult, atomic_write_text, csv_text
from .errors import InputError, suggest
from .paths import path_exists
from .processes import descendants, end_ray_started_since, keep_signals_through_ray_init
from .settings import SECTION_OF, SECTIONS, flatten

SWEEP_KEYS = ("policies", "seeds", "grid", "out", "workers", "ray_address", "max_runs")
#: the most runs a sweep may expand to unless ``max_runs`` / ``--max-runs`` says otherwise
DEFAULT_MAX_RUNS = 10_000
#: run keys a grid may vary (besides every ``[settings]`` key)
GRID_RUN_KEYS = ("cluster", "workload", "placement", *WORKLOAD_OPTIONS)
#: aggregated metrics (``summary.json`` keys)
METRICS = tuple(k for k in SUMMARY_KEYS if k != "num_jobs")
#: metrics in ``summary.md`` (all are in ``summary.csv``)
MD_METRICS = ("avg_jct", "p95_jct", "makespan", "avg_queueing", "gpu_util")
HASH_CHARS = 16


@dataclass(frozen=True)
class Sweep:
    """A validated sweep file: base run values, the swept axes and executor options."""

    run: Mapping[str, object]
    settings: Mapping[str, object]
    policies: tuple[str, ...]
    grid: tuple[tuple[str, tuple[object, ...]], ...]
    seeds: tuple[int, ...]
    source: str = "sweep"
    out: str | None = None
    workers: int | None = None
    ray_address: str | None = None
    quiet: bool = False
    overwrite: bool = False
    #: what each run is (``api.resolve_run``), by ``combo_key``: filled by the pre-flight,
    #: recorded as ``resolved`` in each run's config.json
    resolved: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


def combo_key(record: Mapping[str, object]) -> str:
    """A run's record without its seed, as one string (runs differing only in the seed)."""
    return json.dumps({**record, "seed": 0}, sort_keys=True)


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: its axes values, resolved config, record and hash."""

    policy: str
    point: tuple[tuple[str, object], ...]
    seed: int
    config: RunConfig
    record: Mapping[str, object]
    key: str


@dataclass
class SweepResult:
    """What ``run_sweep`` did: every run, which were executed or found cached, the table."""

    out: Path
    runs: list[SweepRun]
    executed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    table: list[dict] = field(default_factory=list)


# ---------------------------------------------------------------------- reading
def load_sweep(path: str | Path, max_runs: int | None = None) -> Sweep:
    """Read and validate a sweep file: a run config plus a ``[sweep]`` table.

    The number of runs is computed from the axes' lengths before anything is expanded and
    must not exceed ``max_runs`` (argument, else ``[sweep] max_runs``, else
    ``DEFAULT_MAX_RUNS``); every distinct policy, cluster, workload and settings file is
    checked once, so a bad one is named with the file and line before anything is written."""
    data, text = read_config_file(path)
    where = ConfigText(str(path), text)
    base = Path(path).resolve().parent
    run, settings = parse_run_values(data, where, base, extra=("sweep",))
    sw = data.get("sweep", {})
    if not isinstance(sw, dict):
        raise where.error("expected a table [sweep]", "", "sweep")
    check_keys(sw, SWEEP_KEYS, where, "sweep")

    if "policies" in sw:
        if "policy" in run:
            raise where.error("give either `policy` or `sweep.policies`, not both", "", "policy")
        policies = _list(sw["policies"], str, where, "sweep", "policies")
        policies = [resolve_value("policy", p, base) for p in policies]
    elif "policy" in run:
        policies = [str(run["policy"])]
    else:
        raise where.error(
            "missing; give `policies = [...]` (or a top-level `policy`)", "sweep", "policies"
        )
    if any(not p for p in policies):
        raise where.error("policy names must not be empty", "sweep", "policies")

    if "seeds" in sw:
        if "seed" in run:
            raise where.error("give either `seed` or `sweep.seeds`, not both", "", "seed")
        raw = sw["seeds"]
        if isinstance(raw, int) and not isinstance(raw, bool):
            if raw < 1:
                raise where.error("must be ≥ 1 (the number of seeds 0..N-1)", "sweep", "seeds")
            seeds: Sequence[int] = range(raw)  # materialised only once the count is checked
        else:
            seeds = _list(raw, int, where, "sweep", "seeds")
            if any(s < 0 for s in seeds):
                raise where.error("seeds must be ≥ 0", "sweep", "seeds")
    else:
        seeds = [int(run.get("seed", 0))]  # type: ignore[call-overload]

    grid_raw = sw.get("grid", {})
    if not isinstance(grid_raw, dict):
        raise where.error("expected a table [sweep.grid]", "sweep", "grid")
    known_settings = {f.name: type(f.default) for f in fields(Settings)}
    known = {**{k: RUN_KEYS[k].kind for k in GRID_RUN_KEYS}, **known_settings}
    # a setting may be named by its section too (``wang.a``), as in ``[settings.wang]``
    for key in list(grid_raw):
        section, dot, name = key.partition(".")
        if dot and section in SECTIONS:
            if SECTION_OF.get(name) != section:
                raise where.error(f"no setting {name!r} in section [{section}]", "sweep.grid", key)
            if name in grid_raw:
                raise where.error("given twice (flat and with its section)", "sweep.grid", key)
            grid_raw = {(name if k == key else k): v for k, v in grid_raw.items()}
    check_keys(grid_raw, known, where, "sweep.grid")
    grid: list[tuple[str, tuple[object, ...]]] = []
    for key, values in grid_raw.items():
        vals = _list(values, known[key], where, "sweep.grid", key)
        vals = [resolve_value(key, v, base) if isinstance(v, str) else v for v in vals]
        grid.append((key, tuple(vals)))

    limit = max_runs
    if limit is None and "max_runs" in sw:
        limit = check_type(sw["max_runs"], int, where, "sweep", "max_runs")  # type: ignore[assignment]
        if limit < 1:  # type: ignore[operator]
            raise where.error("must be ≥ 1", "sweep", "max_runs")
    limit = DEFAULT_MAX_RUNS if limit is None else limit
    # a range's len() overflows past 2**63 (``seeds = 10^30``): count it without len()
    n_seeds = seeds.stop if isinstance(seeds, range) else len(seeds)
    axes = [("policies", len(policies)), *((k, len(v)) for k, v in grid), ("seeds", n_seeds)]
    total = math.prod(n for _, n in axes)
    if total > limit:
        widest = max(axes, key=lambda a: a[1])[0]
        table, key = (
            ("sweep", widest) if widest in ("policies", "seeds") else ("sweep.grid", widest)
        )
        sizes = " × ".join(f"{n:,} {k}" for k, n in axes)
        raise where.error(
            f"the sweep expands to {total:,} runs ({sizes}), more than the limit of {limit:,}; "
            "raise `max_runs` in [sweep] or give --max-runs N",
            table,
            key,
        )

    out = sw.get("out", run.pop("out", None))
    workers = sw.get("workers")
    if workers is not None:
        workers = check_type(workers, int, where, "sweep", "workers")
        if workers < 1:  # type: ignore[operator]
            raise where.error("must be ≥ 1", "sweep", "workers")
    address = sw.get("ray_address")
    for key, val in (("out", out), ("ray_address", address)):
        if val is not None:
            check_type(val, str, where, "sweep", key)
    quiet = bool(run.pop("quiet", False))
    overwrite = bool(run.pop("overwrite", False))
    run.pop("policy", None)
    run.pop("seed", None)
    sweep = Sweep(
        run=run,
        settings=settings,
        policies=tuple(policies),
        grid=tuple(grid),
        seeds=tuple(seeds),
        source=str(path),
        out=out,  # type: ignore[arg-type]
        workers=workers,  # type: ignore[arg-type]
        ray_address=address,  # type: ignore[arg-type]
        quiet=quiet,
        overwrite=overwrite,
    )
    policy_key = ("sweep", "policies") if "policies" in sw else ("", "policy")
    _check_names(sweep, where, policy_key)
    # every run's config too, before anything runs; what each run is comes back
    return replace(sweep, resolved=_check_runs_apply(sweep, where, policy_key))


def _check_runs_apply(
    sweep: Sweep, where: ConfigText, policy_key: tuple[str, str]
) -> dict[str, dict[str, object]]:
    """Every run of the sweep is one ``run`` would accept: its config is valid, its policy runs
    the workload's jobs and each non-default setting has an effect (``api.check_run_applies``);
    each distinct workload is read once and each distinct combination checked once. An error
    names the sweep file and the line of the key it comes from. Returns what each distinct run
    is (``api.resolve_run``), by ``combo_key``."""
    from .api import check_run_applies, resolve_run
    from .settings_scope import check_workload_scope
    from .workloads.presets import load_workload

    grid_keys = {k for k, _ in sweep.grid}
    workloads: dict[tuple, list] = {}
    seen: dict[str, dict[str, object]] = {}
    for run in iter_runs(sweep):
        cfg = run.config
        combo = combo_key(run.record)
        if combo in seen:
            continue
        trace = cfg.trace_options()
        name = str(cfg.workload)
        seeded = _is_workload_preset(name) or trace.sample is not None
        knobs = cfg.settings.generator_knobs()
        wkey = (name, trace, cfg.settings.philly, repr(sorted(knobs.items())), seeded and cfg.seed)
        point = ", ".join(f"{k} = {v!r}" for k, v in run.point)
        if wkey not in workloads:
            try:
                workloads[wkey] = load_workload(
                    name, cfg.seed, cfg.settings.philly or None, trace, knobs=knobs
                )
            except InputError as e:  # the workload file's own place, and the grid point
                if not point:
                    raise
                raise InputError(
                    f"{e.message} (sweep grid point {point})",
                    source=e.source,
                    line=e.line,
                    field=e.field,
                ) from None
        try:
            check_workload_scope(cfg.settings, name)
            check_run_applies(workloads[wkey], str(cfg.policy), cfg.placement, cfg.settings)
            seen[combo] = resolve_run(workloads[wkey], str(cfg.policy), cfg.placement, cfg.settings)
        except InputError as e:  # the key of the sweep file the offending value comes from
            key = e.field or ""
            if key == "policy":
                table, key = policy_key
            elif key in grid_keys:
                table = "sweep.grid"
            elif key in RUN_KEYS:
                table = ""
            else:
                table = "settings"
            what = f"policy {run.policy}" + (f", {point}" if point else "")
            raise where.error(f"{what}: {e.message}", table, key) from None
    return seen


def _check_names(sweep: Sweep, where: ConfigText, policy_key: tuple[str, str]) -> None:
    """Every distinct policy, cluster, workload and settings file of the sweep exists, checked
    once each; an error names the sweep file and the line of the key."""
    from .core.cluster_io import load_cluster

    def values(key: str, base: object) -> list[tuple[str, str, object]]:
        for k, vals in sweep.grid:
            if k == key:
                return [("sweep.grid", key, v) for v in vals]
        return [("", key, base)] if base not in (None, "") else []

    for policy in sweep.policies:
        reason = _policy_problem(policy)
        if reason:
            raise where.error(reason, *policy_key)
    seen: set[tuple[str, object]] = set()
    for table, key, value in values("cluster", sweep.run.get("cluster")):
        if (key, value) not in seen:
            seen.add((key, value))
            try:
                load_cluster(str(value))
            except InputError as e:
                raise where.error(e.message, table, key) from None
    for table, key, value in values("workload", sweep.run.get("workload")):
        if (key, value) not in seen:
            seen.add((key, value))
            if not _is_workload_preset(str(value)) and not path_exists(str(value)):
                raise where.error(f"no such workload preset or file: {value}", table, key)
    for key in ("gavel_throughputs", *PATH_SETTINGS):
        base = sweep.run.get(key) if key in RUN_KEYS else sweep.settings.get(key)
        table_of = "" if key in RUN_KEYS else "settings"
        for table, k, value in values(key, base):
            table = table or table_of
            if value and not path_exists(str(value)):
                raise where.error(f"no such file or directory: {value}", table, k)


def _is_workload_preset(name: str) -> bool:
    """A workload preset name (as ``workloads.presets`` recognises them)."""
    from .workloads.generators import WORKLOAD_PRESETS

    n = name.lower()
    return n in WORKLOAD_PRESETS or re.match(r"^luo24(-\d+)?$", n) is not None


def _policy_problem(policy: str) -> str | None:
    """Why ``policy`` names no policy (None when it does): built-in names of every kind,
    registered names, and ``FILE.py:FACTORY`` / ``MODULE:FACTORY`` (loaded once)."""
    from .policies.plugins import builtin_policy_names, load_factory, policy_entry

    name = policy.lower()
    builtin = builtin_policy_names()
    if policy_entry(name) is not None:  # the policy registry: built-ins and user policies
        return None
    if ":" in policy:
        try:
            load_factory(policy)
        except InputError as e:
            return f"policy {policy!r}: {e}"
        return None
    return f"unknown policy {policy!r}{suggest(name, sorted(builtin))}; see `ddlsched list`"


def _list(value: object, kind: type, where: ConfigText, table: str, key: str) -> list:
    """A non-empty list of distinct values of type ``kind``."""
    if not isinstance(value, list) or not value:
        raise where.error("expected a non-empty list", table, key)
    vals = [check_type(v, kind, where, table, key) for v in value]
    if len({json.dumps(v) for v in vals}) != len(vals):
        raise where.error("values must be distinct", table, key)
    return vals


# ---------------------------------------------------------------------- expansion
def run_count(sweep: Sweep) -> int:
    """The number of runs of the sweep, from the axes' lengths (nothing expanded)."""
    return len(sweep.policies) * math.prod(len(v) for _, v in sweep.grid) * len(sweep.seeds)


def expand(sweep: Sweep) -> list[SweepRun]:
    """Every run of the sweep in order policy × grid point × seed, each resolved and hashed."""
    return list(iter_runs(sweep))


def iter_runs(sweep: Sweep) -> Iterator[SweepRun]:
    """The runs of :func:`expand`, one at a time (the grid is walked lazily)."""
    digests: dict[str, str] = {}
    keys = [k for k, _ in sweep.grid]
    for policy in sweep.policies:
        for values in itertools.product(*(vals for _, vals in sweep.grid)):
            point = tuple(zip(keys, values, strict=True))
            run = dict(sweep.run)
            settings = dict(sweep.settings)
            for k, v in point:
                (run if k in RUN_KEYS else settings)[k] = v
            for seed in sweep.seeds:
                cfg = build_run_config(
                    {**run, "policy": policy, "seed": seed}, settings, sweep.source
                )
                record = cfg.record()
                resolved = sweep.resolved.get(combo_key(record))
                if resolved is not None:
                    record["resolved"] = dict(resolved)
                yield SweepRun(policy, point, seed, cfg, record, run_hash(record, digests))


def run_hash(record: Mapping[str, object], digests: dict[str, str] | None = None) -> str:
    """Hash of a resolved config: its canonical JSON (with the version) and the contents of the
    files it names, so an edited workload file is not mistaken for a cached one."""
    digests = {} if digests is None else digests
    h = hashlib.sha256(json.dumps(record, sort_keys=True, separators=(",", ":")).encode())
    settings = flatten(record.get("settings", {}), "config.json")  # type: ignore[arg-type]
    named = [record.get("cluster"), record.get("workload"), policy_file(str(record["policy"]))]
    named += [settings.get(k) for k in PATH_SETTINGS]  # type: ignore[union-attr]
    for value in named:
        if isinstance(value, str) and value and path_exists(value):
            if value not in digests:
                digests[value] = _digest(Path(value))
            h.update(f"\0{value}\0{digests[value]}".encode())
    return h.hexdigest()[:HASH_CHARS]


def _digest(path: Path) -> str:
    """SHA-256 of a file, or of a folder's file names and contents (read once per file version:
    ``load_sweep`` and ``run_sweep`` both hash a sweep's runs)."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    names = [str(f.relative_to(path)) if path.is_dir() else "" for f in files]
    stats = tuple((str(f), st.st_mtime_ns, st.st_size) for f in files for st in [f.stat()])
    return _digest_files(tuple(names), stats)


@lru_cache(maxsize=64)
def _digest_files(names: tuple[str, ...], stats: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for name, (f, _, _) in zip(names, stats, strict=True):
        h.update(name.encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------- running
def execute_record(record: Mapping[str, object]) -> SimResult:
    """Simulate one recorded config (the unit of work of both executors)."""
    return simulate_config(config_from_record(record))


def run_sweep(
    sweep: Sweep,
    out: str | Path | None = None,
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
    overwrite: bool = False,
) -> SweepResult:
    """Run the sweep's missing runs (``executor`` ``local`` processes or ``ray`` tasks), then
    write ``runs.csv``, ``summary.csv`` and ``summary.md`` into ``out``.

    ``out`` is locked for the whole sweep; an ``out`` holding another sweep (another
    ``sweep_id``: the base config without the swept axes) or other files is refused unless
    ``overwrite`` (then it is deleted first). Each ``runs/<key>/`` is published in one rename;
    a damaged cached entry is recomputed with a warning on stderr.

    ``ray_address``: ``local`` starts a private Ray instance (``workers`` CPUs), ``auto`` or
    ``HOST:PORT`` (or ``ray://HOST:PORT``) joins a running cluster; an already initialised Ray
    is used as it is. ``on_plan(total, cached)`` is told the counts before anything runs."""
    from .core.rundir import claim

    target = out if out is not None else sweep.out
    if target is None:
        raise InputError("missing; give --out or `out = ...` in [sweep]", field="out")
    if executor not in ("local", "ray"):
        raise InputError("must be 'local' or 'ray'", field="executor")
    sid = sweep_id(sweep)
    with claim(target, may_replace=_sweep_rule(sweep, sid), overwrite=overwrite) as root:
        if overwrite and root.is_dir() and _sweep_rule(sweep, sid)(root) is not None:
            import shutil

            shutil.rmtree(root)
        return _run_sweep_in(
            sweep, root, Path(target), executor, workers, ray_address, progress, on_plan
        )


def _run_sweep_in(
    sweep: Sweep,
    root: Path,
    shown: Path,
    executor: str,
    workers: int | None,
    ray_address: str | None,
    progress: Callable[[int, int], None] | None,
    on_plan: Callable[[int, int], None] | None,
) -> SweepResult:
    """``run_sweep`` once ``root`` is claimed (checked and locked)."""
    from .core.results import write_result_files
    from .core.rundir import remove_stale, staged

    runs = expand(sweep)
    result = SweepResult(shown, runs)
    if (root / "runs").is_dir():
        for entry in (root / "runs").iterdir():  # a killed sweep's staging directories
            if entry.name.startswith(".") and entry.name.endswith(".tmp") and entry.is_dir():
                remove_stale(root / "runs" / entry.name.split(".")[1])
    todo = []
    for r in runs:
        entry = root / "runs" / r.key
        problem = cache_problem(entry, r.record)
        if problem is None:
            result.cached.append(r.key)
        else:
            if problem:
                print(
                    f"ddlsched: warning: {shown / 'runs' / r.key}: {problem}; running it again",
                    file=sys.stderr,
                )
            todo.append(r)
    os.makedirs(root / "runs", exist_ok=True)
    atomic_write_text(root / "sweep.json", _sweep_json(sweep, runs))
    if on_plan:
        on_plan(len(runs), len(result.cached))
    if progress and not todo:
        progress(len(runs), len(runs))

    def save(i: int, res: SimResult) -> None:
        run = todo[i]
        with staged(root / "runs" / run.key, str(shown)) as staging:
            write_result_files(res, staging, config=dict(run.record))
        result.executed.append(run.key)

    def step(done: int, total: int) -> None:
        if progress:
            progress(len(result.cached) + done, len(runs))

    records = [dict(r.record) for r in todo]
    if todo:
        if executor == "ray":
            _ray_map(records, workers, ray_address or "local", step, save)
        else:
            from .parallel import map_in_processes
            from .policies.pollux_compile import compiling_in_background

            pollux = any(r.get("policy") == "pollux" for r in records)
            with compiling_in_background(pollux):  # the Pollux search's kernel, if not cached
                map_in_processes(execute_record, records, workers, step, on_result=save)
    result.table = write_summary(sweep, runs, root)
    return result


def cache_problem(entry: Path, record: Mapping[str, object]) -> str | None:
    """Why the cached run ``entry`` cannot be reused: ``""`` when it is absent, a reason when it
    is damaged (unreadable or truncated summary.json, a missing or altered file, another run's
    id); None when it is complete and belongs to ``record``."""
    from .core.rundir import dumps_json, run_id_of, sha256_hex

    if not entry.exists():
        return ""
    try:
        summary = json.loads((entry / "summary.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "no summary.json"
    except (OSError, ValueError) as e:
        return f"unreadable summary.json ({type(e).__name__})"
    if not isinstance(summary, dict) or not all(
        isinstance(summary.get(m), int | float) for m in (*METRICS, "num_jobs")
    ):
        return "summary.json lacks metrics"
    expected = dumps_json(dict(record), "config.json").encode("utf-8")
    if summary.get("run_id") != run_id_of(expected):
        return "run id differs from this run's config"
    files = summary.get("files")
    if not isinstance(files, dict):
        return "summary.json has no file digests"
    for name in ("config.json", "jobs.csv", "segments.csv"):
        try:
            data = (entry / name).read_bytes()
        except OSError:
            return f"{name} missing or unreadable"
        if files.get(name) != sha256_hex(data):
            return f"{name} does not match its digest in summary.json"
    return None


def sweep_id(sweep: Sweep) -> str:
    """The id of a sweep directory: hash of the base run values and settings (everything but
    the swept axes), so a sweep extended with more policies, seeds or grid values resumes in
    the same directory and a different one is refused."""
    from .core.rundir import run_id_of

    doc = {"run": dict(sweep.run), "settings": dict(sweep.settings)}
    return run_id_of(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def _sweep_rule(sweep: Sweep, sid: str) -> Callable[[Path], str | None]:
    """The replace rule of a sweep directory: empty, or a ``sweep.json`` of the same sweep
    (same ``sweep_id``; one written before ids: the same sweep file)."""
    from .core.rundir import is_empty_dir

    def rule(existing: Path) -> str | None:
        if is_empty_dir(existing):
            return None
        try:
            doc = json.loads((existing / "sweep.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "is not empty and has no readable sweep.json"
        if not isinstance(doc, dict):
            return "has a sweep.json that is not a sweep's"
        if doc.get("sweep_id") == sid:
            return None
        if "sweep_id" not in doc and doc.get("source") == sweep.source:
            return None
        return f"holds another sweep (from {doc.get('source')})"

    return rule


def _ray_map(
    records: Sequence[Mapping[str, object]],
    workers: int | None,
    address: str,
    progress: Callable[[int, int], None],
    on_result: Callable[[int, SimResult], None],
) -> None:
    """One Ray task per record; results handed to ``on_result`` as they finish."""
    try:
        import ray
        from ray.exceptions import RayTaskError
    except ImportError:
        raise InputError(
            "Ray is not installed; pip install 'ddlsched[ray]'", field="--ray-address"
        ) from None
    started = False
    before = set(descendants(os.getpid()))
    if not ray.is_initialized():
        try:
            with keep_signals_through_ray_init():
                if address == "local":
                    ray.init(
                        num_cpus=workers or os.cpu_count() or 1,
                        include_dashboard=False,
                        log_to_driver=False,
                    )
                else:
                    ray.init(address=address, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise InputError(f"cannot start or reach Ray: {e}", field="--ray-address") from None
        started = True
    try:
        task = ray.remote(num_cpus=1)(execute_record)
        index = {task.remote(r): i for i, r in enumerate(records)}
        pending = list(index)
        done = 0
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    try:
                        res = ray.get(ref)
                    except RayTaskError as e:
                        cause = getattr(e, "cause", None)
                        if isinstance(cause, InputError):
                            raise InputError(str(cause)) from None
                        raise
                    on_result(index[ref], res)
                    done += 1
                    progress(done, len(records))
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started:  # Ray's agents may outlive ray.shutdown(): ended by pid and start time
            end_ray_started_since(before)


# ---------------------------------------------------------------------- aggregating
def _cell(value: object) -> object:
    """Grid values in tables: booleans as true/false, the rest as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _sweep_json(sweep: Sweep, runs: Sequence[SweepRun]) -> str:
    from . import __version__

    doc = {
        "version": __version__,
        "sweep_id": sweep_id(sweep),
        "source": sweep.source,
        "policies": list(sweep.policies),
        "grid": {k: list(v) for k, v in sweep.grid},
        "seeds": list(sweep.seeds),
        "runs": [
            {"key": r.key, "policy": r.policy, "seed": r.seed, "grid": dict(r.point)} for r in runs
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def aggregate(sweep: Sweep, runs: Sequence[SweepRun], root: Path) -> list[dict]:
    """Mean and 95 % t-interval of every metric per (policy, grid point), from the runs'
    ``summary.json`` files."""
    from .experiments.runner import mean_ci, metric_range

    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        summary = json.loads((root / "runs" / r.key / "summary.json").read_text())
        groups.setdefault((r.policy, r.point), []).append(summary)
    table = []
    for (policy, point), sums in groups.items():
        row: dict[str, object] = {"policy": policy, **dict(point), "runs": len(sums)}
        for m in METRICS:
            values = [float(s.get(m, float("nan"))) for s in sums]
            mean, lo, hi = mean_ci(values, bounds=metric_range(m))
            row |= {f"{m}_mean": mean, f"{m}_ci_low": lo, f"{m}_ci_high": hi}
        table.append(row)
    return table


def write_summary(sweep: Sweep, runs: Sequence[SweepRun], root: Path) -> list[dict]:
    """Write ``runs.csv``, ``summary.csv`` and ``summary.md``; return the summary rows."""
    keys = [k for k, _ in sweep.grid]
    run_cols = ["key", "policy", *keys, "seed", *METRICS, "num_jobs"]
    rows = []
    for r in runs:
        s = json.loads((root / "runs" / r.key / "summary.json").read_text())
        point = dict(r.point)
        rows.append(
            [r.key, r.policy, *(_cell(point[k]) for k in keys), r.seed]
            + [float(s[m]) for m in METRICS]
            + [s["num_jobs"]]
        )
    atomic_write_text(root / "runs.csv", csv_text(run_cols, rows))
    table = aggregate(sweep, runs, root)
    cols = ["policy", *keys, "runs"] + [
        f"{m}_{part}" for m in METRICS for part in ("mean", "ci_low", "ci_high")
    ]
    atomic_write_text(
        root / "summary.csv", csv_text(cols, [[_cell(t[c]) for c in cols] for t in table])
    )
    atomic_write_text(root / "summary.md", format_markdown(sweep, table))
    return table


def format_markdown(sweep: Sweep, table: Sequence[Mapping[str, object]]) -> str:
    """The summary as a markdown table: ``mean [95 % CI]`` per metric (GPU util in %)."""
    from .experiments.runner import CI_NOTE

    keys = [k for k, _ in sweep.grid]
    head = [
        "policy",
        *keys,
        "runs",
        *(f"{m} ({'%' if m == 'gpu_util' else 's'})" for m in MD_METRICS),
    ]
    lines = [
        f"# Sweep {Path(sweep.source).name}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for t in table:
        cells = [str(t["policy"]), *(str(_cell(t[k])) for k in keys), str(t["runs"])]
        for m in MD_METRICS:
            f = 100.0 if m == "gpu_util" else 1.0
            cells.append(
                f"{t[f'{m}_mean'] * f:.1f} [{t[f'{m}_ci_low'] * f:.1f}, "  # type: ignore[operator]
                f"{t[f'{m}_ci_high'] * f:.1f}]"  # type: ignore[operator]
            )
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Mean over seeds; in brackets the {CI_NOTE}; GPU util in %.", ""]
    return "\n".join(lines)


def __getattr__(name: str) -> object:
    if name == "APPLICATION_POLICIES":  # the policies of application-profile workloads
        from .policies.plugins import PROFILE_JOBS, builtin_policies_for

        return tuple(builtin_policies_for(PROFILE_JOBS))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
