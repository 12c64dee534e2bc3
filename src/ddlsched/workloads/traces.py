"""Job traces: recognise a trace file's format, import it as jobs, filter it (time window, GPU
cap, sample, load scale) and convert it to the generic schema; see ``docs/formats.md``
("Job traces").

Jobs of the trace formats are sorted by arrival (ties keep file order) and numbered 0..n-1 after
filtering; our own workload files (``ddlsched``, ``pollux``) keep their job ids.
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from ..core.job import JobSpec
from ..core.timing import check_job_times
from ..errors import InputError, quote, suggest
from .io import read_workload
from .philly import is_philly_header
from .pollux import has_category, is_pollux_header
from .trace_formats import (
    GAVEL_COLUMNS,
    GAVEL_PHILLY_COLUMNS,
    is_tiresias_header,
    read_gavel,
    read_philly_jobs,
    read_tiresias,
)
from .trace_generic import is_generic_header, is_parquet, read_generic, write_generic


@dataclass(frozen=True)
class Sniff:
    """What format detection sees of a file: its path, first line (not a comment), and either
    its CSV header cells (``header``) or, for a tab-separated first line, its column count."""

    path: Path
    first_line: str
    header: tuple[str, ...] | None  # None for a tab-separated first line
    tab_columns: int | None  # None for a comma-separated first line


@dataclass(frozen=True)
class TraceFormat:
    """A workload/trace format: ``read(path, options) → jobs`` (``options``: the run's
    ``TraceOptions``), ``detect(sniff) → bool`` (None: only by ``--workload-format``), and
    ``renumber``: trace formats are sorted by arrival and renumbered 0..n-1; our own workload
    files keep their job ids."""

    name: str
    description: str
    read: Callable[[Path, TraceOptions], list[JobSpec]]
    detect: Callable[[Sniff], bool] | None = None
    renumber: bool = True


#: every format, in detection order: user formats first, then the built-ins
_FORMATS: dict[str, TraceFormat] = {}
_BUILTIN: set[str] = set()
#: Format name → what it is (``--workload-format`` takes these names); kept in step with the
#: registry by ``register_trace_format``.
TRACE_FORMATS: dict[str, str] = {}


def register_trace_format(
    name: str,
    read: Callable[[Path, TraceOptions], list[JobSpec]],
    *,
    description: str,
    detect: Callable[[Sniff], bool] | None = None,
    renumber: bool = True,
    builtin: bool = False,
) -> TraceFormat:
    """Add a workload/trace format (docs/design.md "Add a trace format"): ``ddlsched run
    --workload FILE`` detects it with ``detect`` (user formats are tried before the built-ins)
    or takes it by ``--workload-format NAME``. A name is registered once."""
    if name in _FORMATS:
        raise ValueError(f"trace format {name!r} is already registered")
    fmt = TraceFormat(name, description, read, detect, renumber)
    if builtin:
        _FORMATS[name] = fmt
        _BUILTIN.add(name)
    else:  # before the built-ins, after earlier user formats
        items = list(_FORMATS.items())
        at = next((i for i, (k, _) in enumerate(items) if k in _BUILTIN), len(items))
        items.insert(at, (name, fmt))
        _FORMATS.clear()
        _FORMATS.update(items)
    TRACE_FORMATS.clear()
    TRACE_FORMATS.update({k: f.description for k, f in _FORMATS.items()})
    return fmt


def unregister_trace_format(name: str) -> None:
    """Remove the user format ``name`` (tests, notebooks); built-ins stay."""
    if name in _FORMATS and name not in _BUILTIN:
        del _FORMATS[name]
        del TRACE_FORMATS[name]


#: the order the built-in formats are tried in (after every user format): the tab-separated
#: ones by column count, then headers from the most specific to the most general
_DETECT_ORDER = (
    "gavel",
    "gavel-philly",
    "pollux",
    "sia",
    "tiresias",
    "philly",
    "ddlsched",
    "generic",
)


def _detection_order() -> list[TraceFormat]:
    user = [f for k, f in _FORMATS.items() if k not in _BUILTIN]
    return user + [_FORMATS[k] for k in _DETECT_ORDER if k in _FORMATS]


def trace_format(name: str) -> TraceFormat:
    """The registered format ``name`` (``check_format`` first for a user's value)."""
    return _FORMATS[check_format(name)]


#: Columns only our own workload CSV has: a header with one of them is read as ``ddlsched``.
_DDLSCHED_ONLY = frozenset({"job_id", "size_mb", "memory_mb", "t_forward", "t_backward"})


@dataclass(frozen=True)
class TraceOptions:
    """How to import a workload file and which of its jobs to keep (CLI ``--workload-format``,
    ``--trace-start``, ``--trace-end``, ``--max-gpus``, ``--sample``, ``--load-scale``,
    ``--gavel-throughputs``, ``--gavel-gpu``); all default to "as the file is"."""

    workload_format: str | None = None
    trace_start: float | None = None
    trace_end: float | None = None
    max_gpus: int | None = None
    sample: int | None = None
    load_scale: float | None = None
    gavel_throughputs: str | None = None
    gavel_gpu: str = "v100"

    def has_filters(self) -> bool:
        """True when a filter (window, GPU cap, sample, load scale) is set."""
        return any(
            v is not None
            for v in (self.trace_start, self.trace_end, self.max_gpus, self.sample, self.load_scale)
        )

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> TraceOptions:
        """The options among ``values`` by config key (``max_gpus``; a run config, argparse's
        ``vars(args)``); other keys are ignored, None means not given (the default)."""
        return cls(**{k: values[k] for k in TRACE_OPTION_KEYS if values.get(k) is not None})  # type: ignore[arg-type]


#: the options' names: the config keys, and (``_`` → ``-``) the ``ddlsched run`` options
TRACE_OPTION_KEYS: tuple[str, ...] = tuple(f.name for f in fields(TraceOptions))


def options_or_keywords(
    options: TraceOptions | None, keywords: Mapping[str, object], where: str
) -> TraceOptions:
    """``options``, or (deprecated, kept for one release) the same options given as separate
    keywords ``max_gpus=…`` to ``where`` (``load_workload``, ``simulate_named``)."""
    unknown = [k for k in keywords if k not in TRACE_OPTION_KEYS]
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if not keywords:
        return options if options is not None else TraceOptions()
    if options is not None:
        raise TypeError(f"{where}(): give the TraceOptions or separate keywords, not both")
    warnings.warn(
        f"{where}(…, {next(iter(keywords))}=…) is deprecated: pass TraceOptions(...) instead",
        DeprecationWarning,
        stacklevel=3,
    )
    return TraceOptions.from_values(keywords)


def detect_format(path: str | Path) -> str:
    """The format of a workload/trace file, from its first bytes or header line (one of
    :data:`TRACE_FORMATS`); ``InputError`` listing the formats when none matches."""
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", source=str(path))
    if path.is_dir():
        raise InputError("is a directory, expected a file", source=str(path))
    if is_parquet(path) or path.suffix.lower() in (".parquet", ".pq"):
        return "generic"
    first = _first_line(path)
    if first is None:
        return "ddlsched"  # empty: our reader reports it
    if path.suffix.lower() == ".json" or first.lstrip()[:1] in ("[", "{"):
        return "ddlsched"
    if "\t" in first:
        sniff = Sniff(path, first, None, len(first.split("\t")))
    else:
        header = tuple(c.strip() for c in next(csv.reader([first]), []))
        sniff = Sniff(path, first, header, None)
    for fmt in _detection_order():
        if fmt.detect is not None and fmt.detect(sniff):
            return fmt.name
    shown = first if len(first) <= 80 else first[:77] + "..."
    raise InputError(
        f"cannot tell the trace format from the first line {quote(shown)}; known formats: "
        f"{', '.join(TRACE_FORMATS)} (give one with --workload-format; see docs/formats.md)",
        source=str(path),
        line=1,
    )


def _first_line(path: Path) -> str | None:
    """The first non-blank line that is not a ``#`` comment (of the first 64 KiB)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror}", source=str(path)) from None
    text = head.decode("utf-8-sig", errors="replace")
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line
    return None


def check_format(name: str) -> str:
    """``name`` if it is a known format, else an ``InputError`` with a suggestion."""
    if name not in TRACE_FORMATS:
        raise InputError(
            f"unknown workload format {quote(name)}{suggest(name, TRACE_FORMATS)}; "
            f"known formats: {', '.join(TRACE_FORMATS)}",
            field="workload_format",
        )
    return name


def read_trace(
    path: str | Path,
    format: str | None = None,
    *,
    start: float | None = None,
    end: float | None = None,
    max_gpus: int | None = None,
    sample: int | None = None,
    load_scale: float | None = None,
    seed: int = 0,
    throughputs: str | Path | None = None,
    gpu_type: str = "v100",
) -> list[JobSpec]:
    """Read a workload or job trace in ``format`` (detected from the file when None) and filter
    it with :func:`filter_jobs`. ``throughputs``/``gpu_type``: Gavel's throughputs JSON and the
    GPU type whose throughputs turn Gavel's ``total_steps`` into durations (Gavel only)."""
    path = Path(path)
    fmt = trace_format(format if format is not None else detect_format(path))
    if fmt.renumber and not path.is_file():
        detect_format(path)  # the same "not found"/"directory" message
    options = TraceOptions(
        workload_format=fmt.name,
        gavel_throughputs=None if throughputs is None else str(throughputs),
        gavel_gpu=gpu_type,
    )
    jobs = fmt.read(path, options)
    renumber = fmt.renumber
    if renumber:
        jobs = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    return filter_jobs(
        jobs,
        start=start,
        end=end,
        max_gpus=max_gpus,
        sample=sample,
        load_scale=load_scale,
        seed=seed,
        renumber=renumber,
        source=str(path),
    )


def _read_pollux(path: Path) -> list[JobSpec]:
    """A Pollux or Sia workload read by our workload reader (which recognises it by its
    header)."""
    from .pollux import POLLUX_COLUMNS

    jobs = read_workload(path)
    if jobs and not jobs[0].application:  # the header was not Pollux's
        raise InputError(
            f"not a Pollux or Sia workload: the header must be {','.join(POLLUX_COLUMNS)}"
            "[,category]",
            source=str(path),
            line=1,
        )
    return jobs


def filter_jobs(
    jobs: Sequence[JobSpec],
    *,
    start: float | None = None,
    end: float | None = None,
    max_gpus: int | None = None,
    sample: int | None = None,
    load_scale: float | None = None,
    seed: int = 0,
    renumber: bool = False,
    source: str | None = None,
) -> list[JobSpec]:
    """Jobs (in arrival order) that pass the filters, applied in this order:

    1. time window: keep ``start ≤ arrival < end`` (either bound may be None); with ``start``
       the kept arrivals become ``arrival − start`` (the window starts at 0);
    2. ``max_gpus``: drop jobs wanting more GPUs;
    3. ``sample``: keep ``sample`` jobs drawn uniformly without replacement with
       ``numpy.random.default_rng(seed)`` (all of them if there are no more), in arrival order;
    4. ``load_scale``: arrival ÷ ``load_scale`` (2 = twice as many arrivals per second, the same
       jobs; 0.5 = half as many).

    ``renumber``: job ids become 0..n-1 in arrival order. No job left: ``InputError``."""
    _check_filters(start, end, max_gpus, sample, load_scale)
    kept = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    if start is not None or end is not None:
        lo = -math.inf if start is None else start
        hi = math.inf if end is None else end
        kept = [j for j in kept if lo <= j.arrival < hi]
        if start is not None:
            kept = [replace(j, arrival=j.arrival - start) for j in kept]
    if max_gpus is not None:
        kept = [j for j in kept if j.num_gpus <= max_gpus]
    if sample is not None and sample < len(kept):
        pick = np.sort(np.random.default_rng(seed).choice(len(kept), size=sample, replace=False))
        kept = [kept[int(i)] for i in pick]
    if load_scale is not None and load_scale != 1:
        kept = [replace(j, arrival=j.arrival / load_scale) for j in kept]
    if renumber:
        kept = [j if j.job_id == i else replace(j, job_id=i) for i, j in enumerate(kept)]
    if not kept:
        raise InputError("no jobs left after the filters (time window, max GPUs)", source=source)
    if (start is not None and start < 0) or (load_scale is not None and load_scale < 1):
        # only these move arrivals later: the engine's time range must still hold
        check_job_times(kept, source, "(after the filters --trace-start/--load-scale)")
    return kept


def _check_filters(
    start: float | None,
    end: float | None,
    max_gpus: int | None,
    sample: int | None,
    load_scale: float | None,
) -> None:
    for name, v in (("trace_start", start), ("trace_end", end)):
        if v is not None and not math.isfinite(v):
            raise InputError(f"must be a finite number of seconds, got {v}", field=name)
    if start is not None and end is not None and end <= start:
        raise InputError(
            f"the window is empty: trace_end {end:g} ≤ trace_start {start:g}", field="trace_end"
        )
    for name, n in (("max_gpus", max_gpus), ("sample", sample)):
        if n is not None and (isinstance(n, bool) or int(n) != n or n < 1):
            raise InputError(f"must be a whole number ≥ 1, got {n}", field=name)
    if load_scale is not None and not (math.isfinite(load_scale) and load_scale > 0):
        raise InputError(f"must be a finite number > 0, got {load_scale}", field="load_scale")


def gavel_data_file() -> Path | None:
    """Gavel's ``simulation_throughputs.json``: in ``$DDLSCHED_GAVEL_DATA`` (a folder), else in
    ``../shared/data/gavel`` beside the working directory or the repository; None if absent."""
    import os

    env = os.environ.get("DDLSCHED_GAVEL_DATA")
    if env:
        f = Path(env) / "simulation_throughputs.json"
        return f if f.is_file() else None
    for base in (Path.cwd().parent, Path(__file__).resolve().parents[4]):
        f = base / "shared" / "data" / "gavel" / "simulation_throughputs.json"
        if f.is_file():
            return f
    return None


def options_for_cluster(options: TraceOptions | None, cluster_name: str) -> TraceOptions | None:
    """On a Gavel cluster (``gavel-V:P:K``) a Gavel trace without ``--gavel-throughputs`` uses
    Gavel's throughputs file where :func:`gavel_data_file` finds it."""
    if not cluster_name.startswith("gavel-"):
        return options
    options = options if options is not None else TraceOptions()
    if options.gavel_throughputs is None and (found := gavel_data_file()) is not None:
        return replace(options, gavel_throughputs=str(found))
    return options


def read_with_options(path: str | Path, options: TraceOptions, seed: int = 0) -> list[JobSpec]:
    """:func:`read_trace` with :class:`TraceOptions` (the path of ``--workload FILE``)."""
    return read_trace(
        path,
        options.workload_format,
        start=options.trace_start,
        end=options.trace_end,
        max_gpus=options.max_gpus,
        sample=options.sample,
        load_scale=options.load_scale,
        seed=seed,
        throughputs=options.gavel_throughputs,
        gpu_type=options.gavel_gpu,
    )


def filter_with_options(
    jobs: Sequence[JobSpec], options: TraceOptions, seed: int = 0
) -> list[JobSpec]:
    """:func:`filter_jobs` with :class:`TraceOptions` (for generated workloads; ids kept)."""
    return filter_jobs(
        jobs,
        start=options.trace_start,
        end=options.trace_end,
        max_gpus=options.max_gpus,
        sample=options.sample,
        load_scale=options.load_scale,
        seed=seed,
    )


def check_simulable(jobs: Sequence[JobSpec], source: str | None = None) -> None:
    """``InputError`` for the first job the simulator has no way to time: no duration, no
    application profile and a placeholder model (e.g. a Gavel trace read without throughputs)."""
    for j in jobs:
        if j.duration <= 0 and not j.application and j.model.t_compute <= 0:
            raise InputError(
                f"job {j.job_id} (model {quote(j.model.name)}) has neither a duration nor a "
                "performance profile; for a Gavel trace give --gavel-throughputs (Gavel's "
                "simulation_throughputs.json)",
                source=source,
            )


def write_trace(jobs: Sequence[JobSpec], path: str | Path) -> None:
    """Write jobs in the generic schema (Parquet for ``.parquet``/``.pq``, else CSV). A job the
    simulator could not time (no duration, no profile: a Gavel trace read without
    throughputs) is an error naming it, and nothing is written."""
    check_simulable(jobs)
    write_generic(jobs, path)


__all__ = [
    "TRACE_FORMATS",
    "TRACE_OPTION_KEYS",
    "TraceOptions",
    "check_format",
    "check_simulable",
    "detect_format",
    "filter_jobs",
    "gavel_data_file",
    "options_for_cluster",
    "read_trace",
    "read_with_options",
    "write_trace",
]


# ---------------------------------------------------------------- the built-in formats
def _gavel_reader(columns: tuple[str, ...]) -> Callable[[Path, TraceOptions], list[JobSpec]]:
    def read(path: Path, options: TraceOptions) -> list[JobSpec]:
        return read_gavel(
            path, columns, throughputs=options.gavel_throughputs, gpu_type=options.gavel_gpu
        )

    return read


def _has(test: Callable[[list[str]], bool]) -> Callable[[Sniff], bool]:
    return lambda s: s.header is not None and bool(test(list(s.header)))


for _name, _description, _read, _detect, _renumber in (
    (
        "ddlsched",
        "our workload CSV/JSON (job_id,arrival,num_gpus,iterations,model,...)",
        lambda p, o: read_workload(p),
        _has(lambda h: bool(_DDLSCHED_ONLY.intersection(h))),
        False,
    ),
    (
        "pollux",
        "Pollux (and Sia) workload CSV (name,time,application,num_replicas,batch_size)",
        lambda p, o: _read_pollux(p),
        _has(lambda h: is_pollux_header(h) and not has_category(h)),
        False,
    ),
    (
        "sia",
        "Sia workload CSV with job categories (name,time,application,num_replicas,"
        "batch_size,category)",
        lambda p, o: _read_pollux(p),
        _has(has_category),
        False,
    ),
    (
        "generic",
        "generic job trace, CSV or Parquet (arrival,num_gpus,duration|iterations,...)",
        lambda p, o: read_generic(p),
        _has(is_generic_header),
        True,
    ),
    (
        "philly",
        "Philly job summaries (timestamp,duration,num_gpus,gpu_time[,cluster])",
        lambda p, o: read_philly_jobs(p),
        _has(is_philly_header),
        True,
    ),
    (
        "gavel",
        "Gavel trace, 10 tab-separated columns (job_type ... arrival_time)",
        _gavel_reader(GAVEL_COLUMNS),
        lambda s: s.tab_columns == len(GAVEL_COLUMNS),
        True,
    ),
    (
        "gavel-philly",
        "Gavel's Philly VC trace, 7 tab-separated columns (msr-seed0/*.trace)",
        _gavel_reader(GAVEL_PHILLY_COLUMNS),
        lambda s: s.tab_columns == len(GAVEL_PHILLY_COLUMNS),
        True,
    ),
    (
        "tiresias",
        "Tiresias simulator CSV (job_id,num_gpu,submit_time,iterations,...,duration)",
        lambda p, o: read_tiresias(p),
        _has(is_tiresias_header),
        True,
    ),
):
    register_trace_format(
        _name, _read, description=_description, detect=_detect, renumber=_renumber, builtin=True
    )
