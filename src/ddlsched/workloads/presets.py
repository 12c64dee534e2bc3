"""``--workload PRESET|FILE``: a seeded generator by name, or a workload file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..core.job import JobSpec
from ..core.timing import check_job_times
from ..errors import InputError
from ..paths import is_file, path_exists
from .generators import WORKLOAD_PRESETS
from .traces import (
    TraceOptions,
    check_format,
    filter_with_options,
    options_or_keywords,
    read_with_options,
)


def load_workload(
    spec: str,
    seed: int = 0,
    philly: str | None = None,
    options: TraceOptions | None = None,
    *,
    knobs: Mapping[str, object] | None = None,
    **keywords: object,
) -> list[JobSpec]:
    """Generate preset ``spec`` with ``seed``, or read ``spec`` as a workload or job-trace file
    (format recognised from the file unless ``options.workload_format`` names it; see
    ``workloads/traces.py``, :func:`~ddlsched.workloads.traces.filter_jobs` for the filters).

    ``philly``: a Philly job-summary trace (``timestamp,duration,num_gpus,gpu_time,cluster``)
    from which ``luo24``/``luo24-N`` sample jobs (the Pollux recipe); built-in stand-in
    distributions when omitted. ``options`` (:class:`TraceOptions`, default: none): the filters
    also apply to a preset's jobs (ids kept); ``sample`` draws with ``seed``;
    ``gavel_throughputs``/``gavel_gpu``: Gavel's throughputs JSON and GPU type that give
    Gavel-trace jobs their durations. ``knobs``: keywords of the luo24 generators
    (``large_share``, ``gpu_weights``, ``duration_scale``, ``jobs_per_hour``;
    ``Settings.generator_knobs``). The options as separate keywords (``max_gpus=2``) still
    work, deprecated, for one release."""
    trace = options_or_keywords(options, keywords, "load_workload")
    check_seed(seed)
    if trace.workload_format is not None:
        check_format(trace.workload_format)
    jobs = _load(spec, seed, philly, trace, dict(knobs or {}))
    if jobs is None:
        jobs = read_with_options(Path(spec), trace, seed)
    note = "(after the filters --trace-start/--load-scale)" if trace.has_filters() else ""
    check_job_times(jobs, spec, note)
    return jobs


def check_seed(seed: object) -> None:
    """``InputError`` unless ``seed`` is an integer ≥ 0 (numpy's generators need that)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"must be an integer ≥ 0, got {seed!r}", field="seed")


def _load(
    spec: str, seed: int, philly: str | None, trace: TraceOptions, knobs: dict[str, object]
) -> list[JobSpec] | None:
    """A preset's jobs (filtered), None for a file; ``InputError`` for neither."""
    jobs = _preset(spec, seed, philly, knobs)
    if jobs is None:
        if not path_exists(spec):
            raise InputError(
                f"no such workload preset or file; presets: {', '.join(WORKLOAD_PRESETS)}",
                source=spec,
            )
        return None
    if trace.workload_format is not None:
        raise InputError(
            f"--workload-format applies to workload files, but {spec!r} is a preset",
            field="workload_format",
        )
    return filter_with_options(jobs, trace, seed) if trace.has_filters() else jobs


def _preset(
    spec: str, seed: int, philly: str | None, knobs: dict[str, object]
) -> list[JobSpec] | None:
    name = spec.lower()
    paper = re.match(r"^luo24-paper(?:-([0-9]+))?$", name)
    if paper and not is_file(spec):  # Luo et al.'s workload as the paper describes it (#16)
        from .luo24 import generate_paper_workload

        n = _luo24_size(paper.group(1)) if paper.group(1) else 240
        return generate_paper_workload(seed, num_jobs=n, philly=philly, **knobs)  # type: ignore[arg-type]
    sized = re.match(r"^luo24-([0-9]+)$", name)
    if (name == "luo24" or sized) and not is_file(spec):
        from .luo24 import generate_pollux_workload

        n = _luo24_size(sized.group(1)) if sized else 240
        return generate_pollux_workload(seed, num_jobs=n, philly=philly, **knobs)  # type: ignore[arg-type]
    gavel = GAVEL_PRESET.match(name)
    if gavel and not is_file(spec):  # Gavel's generator (issue #17)
        return _gavel(gavel, seed)
    gen = WORKLOAD_PRESETS.get(name)
    if gen is not None and not is_file(spec):
        return gen(seed)
    return None


#: ``gavel-N@RATE`` / ``gavel-multi-N@RATE``: N jobs of Gavel's generator (1 GPU, or Gavel's
#: multi-GPU mix) arriving at RATE jobs per hour (Poisson), with the run's seed
GAVEL_PRESET = re.compile(r"^gavel-(multi-)?([0-9]{1,9})@([0-9]+(?:\.[0-9]+)?)$")


def _gavel(m: re.Match[str], seed: int) -> list[JobSpec]:
    from .gavel_gen import gavel_workload
    from .traces import gavel_data_file

    n, rate = int(m.group(2)), float(m.group(3))
    if not 1 <= n <= MAX_LUO24_JOBS:
        raise InputError(f"gavel-N@RATE needs 1 ≤ N ≤ {MAX_LUO24_JOBS:,} jobs", field="workload")
    if not rate > 0:
        raise InputError("gavel-N@RATE needs a rate > 0 jobs per hour", field="workload")
    found = gavel_data_file()
    if found is None:
        raise InputError(
            "gavel-N@RATE needs Gavel's simulation_throughputs.json: set $DDLSCHED_GAVEL_DATA "
            "to its folder or put it in ../shared/data/gavel",
            field="workload",
        )
    return gavel_workload(n, rate, seed, found, multi_gpu=bool(m.group(1)))


#: the most jobs ``luo24-N`` generates (a typo such as ``luo24-100000000`` must not exhaust memory)
MAX_LUO24_JOBS = 1_000_000


def _luo24_size(digits: str) -> int:
    """N of ``luo24-N``: ``InputError`` unless ``1 ≤ N ≤ MAX_LUO24_JOBS``."""
    n = int(digits) if len(digits) <= 9 else MAX_LUO24_JOBS + 1
    if not 1 <= n <= MAX_LUO24_JOBS:
        raise InputError(f"luo24-N needs 1 ≤ N ≤ {MAX_LUO24_JOBS:,} jobs", field="workload")
    return n
