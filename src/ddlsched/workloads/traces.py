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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from ..core.job import JobSpec
from ..core.timing import check_job_times
from ..errors import InputError, quote, suggest
from .io import read_workload
from .philly import is_philly_header
from .pollux import is_pollux_header
from .trace_formats import (
    GAVEL_COLUMNS,
    GAVEL_PHILLY_COLUMNS,
    is_tiresias_header,
    read_gavel,
    read_philly_jobs,
    read_tiresias,
)
from .trace_generic import is_generic_header, is_parquet, read_generic, write_generic

#: Format name → what it is. ``--workload-format`` takes these names.
TRACE_FORMATS: dict[str, str] = {
    "ddlsched": "our workload CSV/JSON (job_id,arrival,num_gpus,iterations,model,...)",
    "pollux": "Pollux workload CSV (name,time,application,num_replicas,batch_size)",
    "generic": "generic job trace, CSV or Parquet (arrival,num_gpus,duration|iterations,...)",
    "philly": "Philly job summaries (timestamp,duration,num_gpus,gpu_time[,cluster])",
    "gavel": "Gavel trace, 10 tab-separated columns (job_type ... arrival_time)",
    "gavel-philly": "Gavel's Philly VC trace, 7 tab-separated columns (msr-seed0/*.trace)",
    "tiresias": "Tiresias simulator CSV (job_id,num_gpu,submit_time,iterations,...,duration)",
}
#: Formats whose reader is our own workload reader (job ids kept from the file).
WORKLOAD_FORMATS = frozenset({"ddlsched", "pollux"})
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
        n = len(first.split("\t"))
        if n == len(GAVEL_COLUMNS):
            return "gavel"
        if n == len(GAVEL_PHILLY_COLUMNS):
            return "gavel-philly"
    else:
        header = [c.strip() for c in next(csv.reader([first]), [])]
        if is_pollux_header(header):
            return "pollux"
        if is_tiresias_header(header):
            return "tiresias"
        if is_philly_header(header):
            return "philly"
        if _DDLSCHED_ONLY.intersection(header):
            return "ddlsched"
        if is_generic_header(header):
            return "generic"
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
    fmt = check_format(format) if format is not None else detect_format(path)
    if fmt in WORKLOAD_FORMATS:
        jobs = read_workload(path) if fmt == "ddlsched" else _read_pollux(path)
        renumber = False
    else:
        if not path.is_file():
            detect_format(path)  # the same "not found"/"directory" message
        if fmt == "generic":
            jobs = read_generic(path)
        elif fmt == "philly":
            jobs = read_philly_jobs(path)
        elif fmt == "tiresias":
            jobs = read_tiresias(path)
        else:
            columns = GAVEL_COLUMNS if fmt == "gavel" else GAVEL_PHILLY_COLUMNS
            jobs = read_gavel(path, columns, throughputs=throughputs, gpu_type=gpu_type)
        jobs = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
        renumber = True
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
    """A Pollux workload read by our workload reader (which recognises it by its header)."""
    from .pollux import POLLUX_COLUMNS

    jobs = read_workload(path)
    if jobs and not jobs[0].application:  # the header was not Pollux's
        raise InputError(
            f"not a Pollux workload: the header must be {','.join(POLLUX_COLUMNS)}",
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
    "read_trace",
    "read_with_options",
    "write_trace",
]
