"""The Pollux workload format: ``name,time,application,num_replicas,batch_size`` (Luo et al.'s
workloads come from the Pollux artifact; the Sia artifact's workloads have the same header).
``read_workload`` recognises it from the header.

Sia's simulator reads one more, optional column, ``category`` (its cluster.py:51-62): a job's
rigidity, ``rigid`` (fixed GPU count and batch), ``scale-gpus`` (fixed batch, any GPU count)
or ``adaptive`` (both tuned; also an empty cell). It is kept in ``JobSpec.category`` for
policies; none of the artifact's workloads has it (docs/sia.md)."""

from __future__ import annotations

from ..core.job import JobSpec, ModelProfile
from ..core.timing import time_problem
from ..errors import InputError, quote, suggest
from ..parsing import NumberError, check_width, csv_rows, parse_float, parse_int

POLLUX_COLUMNS: tuple[str, ...] = ("name", "time", "application", "num_replicas", "batch_size")
#: Sia's optional sixth column and the values its simulator acts on (cluster.py:55-62)
CATEGORY = "category"
SIA_CATEGORIES: tuple[str, ...] = ("adaptive", "rigid", "scale-gpus")


def is_pollux_header(header: list[str]) -> bool:
    """The Pollux/Sia header: the five columns, optionally followed by Sia's ``category``."""
    cells = tuple(c.strip() for c in header)
    return cells in (POLLUX_COLUMNS, (*POLLUX_COLUMNS, CATEGORY))


def has_category(header: list[str]) -> bool:
    """Whether a Pollux/Sia header has Sia's ``category`` column."""
    return is_pollux_header(header) and len(header) == len(POLLUX_COLUMNS) + 1


def read_pollux_csv(text: str, source: str) -> list[JobSpec]:
    """Jobs in file order (job_id = row index: the order Tiresias queues them in); one
    ``InputError`` naming file, line and field for the first bad value."""
    jobs: list[JobSpec] = []
    names: dict[str, int] = {}
    width = 0
    for _start, line, row in csv_rows(text, source):
        if not row or all(not c.strip() for c in row):
            continue
        if not width:
            width = len(row)
            continue
        check_width(row, width, source, line)
        name, time, app, reps, bsz, *rest = (c.strip() for c in row)
        category = rest[0] if rest else ""
        if category and category not in SIA_CATEGORIES:
            raise InputError(
                f"unknown category {quote(category)}{suggest(category, SIA_CATEGORIES)}; "
                f"expected one of {', '.join(SIA_CATEGORIES)} (or empty)",
                source=source,
                line=line,
                field=CATEGORY,
            )
        if not name:
            raise InputError("empty job name", source=source, line=line, field="name")
        if name in names:
            raise InputError(
                f"duplicate job name '{name}' (first on line {names[name]})",
                source=source,
                line=line,
                field="name",
            )
        names[name] = line
        try:
            arrival = parse_float(time)
        except NumberError as e:
            raise InputError(str(e), source=source, line=line, field="time") from None
        if arrival < 0:
            raise InputError("must be ≥ 0", source=source, line=line, field="time")
        if problem := time_problem(arrival):
            raise InputError(problem, source=source, line=line, field="time")
        if not app:
            raise InputError("empty application", source=source, line=line, field="application")
        ints = []
        for field, raw in (("num_replicas", reps), ("batch_size", bsz)):
            try:
                v = parse_int(raw)
            except NumberError as e:
                raise InputError(str(e), source=source, line=line, field=field) from None
            if v < 1:
                raise InputError("must be ≥ 1", source=source, line=line, field=field)
            ints.append(v)
        jobs.append(
            JobSpec(
                job_id=len(jobs),
                arrival=arrival,
                num_gpus=ints[0],
                iterations=0,
                model=ModelProfile(app, 0.0, 0.0, ints[1], 0.0, 0.0),
                application=app,
                batch_size=ints[1],
                name=name,
                category=category,
            )
        )
    if not jobs:
        raise InputError("no jobs: the file has a header but no job rows", source=source)
    return jobs
