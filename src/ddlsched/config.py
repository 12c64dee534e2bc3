"""Experiment files: one validated TOML/JSON file holds everything ``ddlsched run`` takes.

Every top-level key is a ``run`` option (``--max-gpus`` → ``max_gpus``), the ``[settings]``
table holds every ``--set`` key. ``RunConfig.record()`` is the fully resolved config that
``ddlsched run`` writes as ``config.json``; that file is itself a valid config, so any result
can be re-run exactly with ``ddlsched run --config OUT/config.json --out NEW``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from . import __version__
from .api import Settings
from .core.results import SimResult
from .errors import InputError, suggest
from .parsing import (
    NumberError,
    check_depth,
    check_float,
    check_int,
    describe,
    load_json,
    toml_value_error,
    too_deep,
)
from .paths import path_exists
from .settings import SECTION_OF, SECTIONS
from .tenancy.presets import QUEUE_PRESETS
from .workloads.traces import TRACE_OPTION_KEYS, TraceOptions


@dataclass(frozen=True)
class Key:
    """One config key: its type, default, CLI option and meaning (the docs table is built
    from these)."""

    name: str
    kind: type
    default: object
    option: str
    help: str
    optional: bool = False  # may be absent/null (None = not given)
    recorded: bool = True  # part of the resolved config (False: output-only, e.g. ``out``)


#: the top-level keys of a run config, in the order of ``ddlsched run --help``
RUN_KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key("cluster", str, None, "--cluster", "cluster preset or TOML/YAML file"),
        Key("workload", str, None, "--workload", "workload preset or CSV/JSON file"),
        Key("policy", str, None, "--policy", "policy preset or planner"),
        Key("placement", str, None, "--placement", "override the preset's placement", True),
        Key("seed", int, 0, "--seed", "seed for generators and RAND"),
        Key("workload_format", str, None, "--workload-format", "workload file format", True),
        Key("trace_start", float, None, "--trace-start", "first arrival time kept (s)", True),
        Key("trace_end", float, None, "--trace-end", "last arrival time kept (s)", True),
        Key("max_gpus", int, None, "--max-gpus", "drop jobs wanting more GPUs", True),
        Key("sample", int, None, "--sample", "keep this many jobs (seeded sample)", True),
        Key("load_scale", float, None, "--load-scale", "scale the arrival rate", True),
        Key(
            "gavel_throughputs",
            str,
            None,
            "--gavel-throughputs",
            "Gavel's simulation_throughputs.json (durations for Gavel traces)",
            True,
        ),
        Key("gavel_gpu", str, None, "--gavel-gpu", "GPU type in the throughputs file (v100)", True),
        Key(
            "queues",
            str,
            None,
            "--queues",
            "Kueue queues (YAML/TOML file, or `proportional`): quota admits, the policy orders",
            True,
        ),
        Key("out", str, None, "--out", "output directory (not recorded)", True, False),
        Key("quiet", bool, False, "--quiet", "no progress bar (not recorded)", False, False),
        Key(
            "overwrite",
            bool,
            False,
            "--overwrite",
            "replace an --out holding another run (not recorded)",
            False,
            False,
        ),
        Key("version", str, None, "", "ddlsched version that wrote the record (informational)"),
    )
}
#: the workload-file options (a ``TraceOptions`` each; the names are its fields)
WORKLOAD_OPTIONS = TRACE_OPTION_KEYS
#: ``[settings]`` keys that name files (resolved relative to the config file)
PATH_SETTINGS = ("profiles", "interference_file", "philly")
REQUIRED = ("cluster", "workload", "policy")
#: keys recorded only when given: configs of runs without them stay byte for byte as before
OMITTED_WHEN_UNSET = ("queues",)
TABLES = ("settings",)
#: config.json's record of what ran (``core.results.RESOLVED``): read back, not used (the
#: config re-resolves the same way), so a recorded config.json re-runs as it is
INFORMATIONAL = ("resolved",)


@dataclass(frozen=True)
class RunConfig:
    """A resolved run: what ``ddlsched run`` needs, after file + CLI options are merged."""

    cluster: str | None = None
    workload: str | None = None
    policy: str | None = None
    placement: str | None = None
    seed: int = 0
    settings: Settings = field(default_factory=Settings)
    workload_format: str | None = None
    trace_start: float | None = None
    trace_end: float | None = None
    max_gpus: int | None = None
    sample: int | None = None
    load_scale: float | None = None
    gavel_throughputs: str | None = None
    gavel_gpu: str | None = None
    queues: str | None = None
    out: str | None = None
    quiet: bool = False
    overwrite: bool = False
    version: str | None = None  # the version recorded in the file it came from, if any
    source: str = "command line"

    def check_complete(self) -> None:
        """Raise unless cluster, workload and policy are given (by file or option)."""
        for name in REQUIRED:
            if not getattr(self, name):
                raise InputError(
                    f"missing; give {RUN_KEYS[name].option} or `{name} = ...` in a --config file",
                    source=self.source,
                    field=name,
                )

    def trace_options(self) -> TraceOptions:
        """The workload file's format and filters, as ``load_workload`` takes them."""
        return TraceOptions.from_values({k: getattr(self, k) for k in WORKLOAD_OPTIONS})

    def record(self) -> dict[str, object]:
        """The fully resolved config (JSON-able), written as ``config.json``."""
        self.check_complete()
        out: dict[str, object] = {
            k.name: getattr(self, k.name)
            for k in RUN_KEYS.values()
            if k.recorded and not (k.name in OMITTED_WHEN_UNSET and getattr(self, k.name) is None)
        }
        out["version"] = __version__
        out["settings"] = self.settings.sectioned()  # [settings.SECTION] tables
        return out


# ---------------------------------------------------------------------- reading files
def read_config_file(path: str | Path) -> tuple[dict, str]:
    """Parse a TOML (or, for recorded configs, JSON) file; return (mapping, text)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such config file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read config file: {e}", source=str(path)) from None
    if p.suffix.lower() == ".json":
        data = load_json(text, str(path))
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            m = re.search(r"\(at line (\d+)", str(e))
            raise InputError(
                f"invalid TOML: {str(e).split(' (at')[0]}",
                source=str(path),
                line=int(m.group(1)) if m else None,
            ) from None
        except ValueError as e:  # not a TOMLDecodeError: a 5,000-digit integer
            raise toml_value_error(e, text, str(path)) from None
        except RecursionError:
            raise too_deep(str(path), "TOML") from None
        check_depth(data, str(path), "TOML")
    if not isinstance(data, dict):
        raise InputError("expected a table of keys at the top", source=str(path))
    return data, text


def line_of(text: str, table: str, key: str) -> int | None:
    """Line number of ``key = ...`` (TOML, inside ``[table]`` or at the top if table is "")
    or of ``"key":`` (JSON); None when not found."""
    current = ""
    full = f"{table}.{key}" if table else key
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        head = re.match(r"^\[\s*([^\]]+?)\s*\]", s)
        if head:
            current = head.group(1)
            if current == full:  # the key is a table: ``[key]``
                return i
            continue
        if current == table and re.match(rf"^\"?{re.escape(key)}\"?\s*=", s):
            return i
        if re.match(rf"^\"{re.escape(key)}\"\s*:", s):  # JSON: first occurrence
            return i
    return None


@dataclass(frozen=True)
class ConfigText:
    """Where values come from, for error messages that name file, line and key."""

    source: str
    text: str = ""

    def error(self, message: str, table: str, key: str) -> InputError:
        name = f"{table}.{key}" if table else key
        return InputError(
            message, source=self.source, line=line_of(self.text, table, key), field=name
        )


def check_type(value: object, kind: type, where: ConfigText, table: str, key: str) -> object:
    """``value`` if it has type ``kind``: numbers through the one strict checker
    (``ddlsched.parsing``: finite, an int is a float, an integral float is an int, a bool or
    text is not a number)."""
    try:
        if kind is float:
            return check_float(value)
        if kind is int:
            return check_int(value)
    except NumberError as e:
        raise where.error(str(e), table, key) from None
    if not isinstance(value, kind):
        names = {str: "a string", bool: "true or false"}
        raise where.error(f"expected {names[kind]}, got {describe(value)}", table, key)
    return value


#: lower bounds of numeric run keys (``trace_start``/``trace_end`` are only finite)
RUN_BOUNDS: dict[str, tuple[str, float]] = {
    "seed": ("≥", 0),
    "max_gpus": ("≥", 1),
    "sample": ("≥", 1),
    "load_scale": (">", 0),
}


def check_run_value(key: str, value: object) -> str | None:
    """What is wrong with a typed run-key value (``seed`` ≥ 0, …), or None."""
    bound = RUN_BOUNDS.get(key)
    if bound is None or not isinstance(value, int | float):
        return None
    op, low = bound
    if value < low or (op == ">" and value == low):
        return f"must be {op} {low:g}, got {value:g}"
    return None


def check_keys(data: Mapping[str, object], known, where: ConfigText, table: str) -> None:
    """Every key of ``data`` is known; otherwise an error naming it and the closest one."""
    for key in data:
        if key not in known:
            raise where.error(f"unknown key{suggest(key, known)}", table, key)


def _resolve_path(value: str, base: Path | None) -> str:
    """An existing file named relative to the config file's folder (``base``) or else to the
    current folder, made absolute, so the recorded config works from anywhere; other values
    (presets) unchanged."""
    if not value:
        return value
    p = Path(value).expanduser()
    if p.is_absolute():
        return str(p)
    for candidate in ([base / p] if base is not None else []) + [p]:
        if path_exists(candidate):
            return str(candidate.resolve())
    return value


def resolve_value(key: str, value: str, base: Path | None) -> str:
    """Make the file a run key names absolute (cluster presets win over files, as in
    ``load_cluster``; a ``FILE.py:FACTORY`` policy has its file part resolved)."""
    if key == "cluster" and _is_cluster_preset(value):
        return value
    if key == "policy":
        path = policy_file(value)
        return value if path is None else f"{_resolve_path(path, base)}:{value.rpartition(':')[2]}"
    if key == "queues" and value in QUEUE_PRESETS:
        return value
    if key in ("cluster", "workload", "gavel_throughputs", "queues") or key in PATH_SETTINGS:
        return _resolve_path(value, base)
    return value


def policy_file(policy: str) -> str | None:
    """The file of a ``FILE.py:FACTORY`` policy, else None."""
    path, sep, _ = policy.rpartition(":")
    return path if sep and path.endswith(".py") else None


def _is_cluster_preset(name: str) -> bool:
    """Cluster preset names win over files of the same name (as in ``load_cluster``)."""
    from .core.cluster_io import is_cluster_preset

    return is_cluster_preset(name)


def parse_settings(values: object, where: ConfigText, base: Path | None) -> dict[str, object]:
    """The ``[settings]`` table, type-checked (values stay typed for ``Settings``): flat keys
    and sectioned ``[settings.SECTION]`` tables (``ddlsched.settings.SECTIONS``) alike."""
    if not isinstance(values, dict):
        raise where.error("expected a table", "", "settings")
    known = {f.name: f for f in fields(Settings)}
    out: dict[str, object] = {}
    for key, raw in values.items():
        if key in SECTIONS and isinstance(raw, dict):
            table = f"settings.{key}"
            mine = {f.name for f in fields(SECTIONS[key])}
            for name in raw:
                home = SECTION_OF.get(name)
                if home is not None and home != key:
                    raise where.error(f"{name} is in section [settings.{home}]", table, name)
                if name not in mine:
                    raise where.error(f"unknown key{suggest(name, mine)}", table, name)
            items = raw
        else:
            check_keys({key: raw}, known, where, "settings")
            items, table = {key: raw}, "settings"
        for name, value in items.items():
            if name in out:
                raise where.error("given twice (flat and in its section)", table, name)
            val = check_type(value, type(known[name].default), where, table, name)
            if isinstance(val, str):
                val = resolve_value(name, val, base)
            out[name] = val
    return out


def parse_run_values(
    data: Mapping[str, object], where: ConfigText, base: Path | None, extra: tuple[str, ...] = ()
) -> tuple[dict[str, object], dict[str, object]]:
    """Top-level run keys and ``[settings]`` of a config mapping, validated; keys in
    ``extra`` (e.g. ``sweep``) are left to the caller. Returns (run values, settings)."""
    known = {
        **RUN_KEYS,
        **{t: None for t in (*TABLES, *INFORMATIONAL)},
        **{e: None for e in extra},
    }
    check_keys(data, known, where, "")
    for key in INFORMATIONAL:
        if key in data and not isinstance(data[key], dict):
            raise where.error("expected a table (what ran, as recorded)", "", key)
    run: dict[str, object] = {}
    for key, raw in data.items():
        if key in TABLES or key in extra or key in INFORMATIONAL:
            continue
        spec = RUN_KEYS[key]
        if raw is None and spec.optional:
            continue
        val = check_type(raw, spec.kind, where, "", key)
        problem = check_run_value(key, val)
        if problem:
            raise where.error(problem, "", key)
        if isinstance(val, str):
            val = resolve_value(key, val, base)
        run[key] = val
    settings = parse_settings(data.get("settings", {}), where, base)
    return run, settings


def build_run_config(
    run: Mapping[str, object], settings: Mapping[str, object], source: str
) -> RunConfig:
    """A ``RunConfig`` from validated values (``Settings`` checks ranges and choices; run
    keys their bounds, also when a sweep grid sets them)."""
    for key, value in run.items():
        problem = check_run_value(key, value)
        if problem:
            raise InputError(problem, source=source, field=key)
    s = Settings.from_mapping(settings, source=f"{source} [settings]")
    return RunConfig(settings=s, source=source, **run)  # type: ignore[arg-type]


def load_run_config(path: str | Path) -> RunConfig:
    """Read and validate a run config file (TOML, or a recorded ``config.json``)."""
    data, text = read_config_file(path)
    where = ConfigText(str(path), text)
    if "sweep" in data:
        raise where.error("this is a sweep file; run it with `ddlsched sweep`", "", "sweep")
    run, settings = parse_run_values(data, where, Path(path).resolve().parent)
    return build_run_config(run, settings, str(path))


def with_overrides(
    cfg: RunConfig, options: Mapping[str, object], sets: Mapping[str, str] | None = None
) -> RunConfig:
    """``cfg`` with the options given on the command line (None = not given) and ``--set``
    values on top: the command line wins over the file."""
    unknown = [k for k in options if k not in RUN_KEYS]
    if unknown:
        raise InputError(f"unknown option{suggest(unknown[0], RUN_KEYS)}", field=unknown[0])
    changes = {
        k: resolve_value(k, v, None) if isinstance(v, str) else v
        for k, v in options.items()
        if v is not None
    }
    for key, value in changes.items():
        problem = check_run_value(key, value)
        if problem:
            raise InputError(problem, source=RUN_KEYS[key].option, field=key)
    if sets:
        merged = {f.name: getattr(cfg.settings, f.name) for f in fields(Settings)}
        override = Settings.from_mapping(sets)  # validates keys and parses strings
        for key in sets:
            value = getattr(override, key)
            merged[key] = resolve_value(key, value, None) if isinstance(value, str) else value
        changes["settings"] = Settings.from_mapping(merged, source="--set")
    return replace(cfg, **changes)


# ---------------------------------------------------------------------- running
def simulate_config(
    cfg: RunConfig, progress: Callable[[int, int], None] | None = None
) -> SimResult:
    """Simulate one resolved config (the path of ``ddlsched run`` and of every sweep run)."""
    from .api import simulate_named

    cfg.check_complete()
    return simulate_named(
        cfg.cluster,  # type: ignore[arg-type]
        cfg.workload,  # type: ignore[arg-type]
        cfg.policy,  # type: ignore[arg-type]
        placement=cfg.placement,
        seed=cfg.seed,
        settings=cfg.settings,
        progress=progress,
        trace=cfg.trace_options(),
        queues=cfg.queues,
    )


def run_config(
    cfg: RunConfig, out: str | Path, progress: Callable[[int, int], None] | None = None
) -> SimResult:
    """Simulate ``cfg`` and write its result directory, with the resolved config recorded.

    The directory is written all-or-nothing (``core/rundir.py``). Before simulating: ``out``
    is checked and locked, and an ``out`` holding another run (another run id) is refused
    unless ``cfg.overwrite``."""
    from .api import load_named, naming_workload, resolve_run, simulate
    from .core.results import write_result_files
    from .core.rundir import output_dir, same_config_rule

    record = cfg.record()
    if cfg.policy and ":" in cfg.policy:  # a plugin that cannot load is the error to report
        from .policies.plugins import load_factory

        load_factory(cfg.policy)
    rule = same_config_rule(record)  # decided before the workload is read
    with output_dir(out, may_replace=rule, overwrite=cfg.overwrite) as staging:
        cl, jobs = load_named(
            cfg.cluster,  # type: ignore[arg-type]
            cfg.workload,  # type: ignore[arg-type]
            seed=cfg.seed,
            settings=cfg.settings,
            trace=cfg.trace_options(),
        )
        with naming_workload(str(cfg.workload)):
            record["resolved"] = resolve_run(jobs, cfg.policy, cfg.placement, cfg.settings)  # type: ignore[arg-type]
            res = simulate(
                cl,
                jobs,
                cfg.policy,  # type: ignore[arg-type]
                placement=cfg.placement,
                seed=cfg.seed,
                settings=cfg.settings,
                progress=progress,
                queues=cfg.queues,
            )
        write_result_files(res, staging, config=record)
    return res


def config_from_record(record: Mapping[str, object], source: str = "record") -> RunConfig:
    """A ``RunConfig`` back from ``RunConfig.record()`` output (validated like a file)."""
    where = ConfigText(source)
    run, settings = parse_run_values(record, where, None)
    return build_run_config(run, settings, source)
