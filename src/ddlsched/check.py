"""``ddlsched check``: prove that a run directory holds a valid schedule.

Reads ``config.json``, ``summary.json``, ``jobs.csv`` and ``segments.csv`` as written by
``ddlsched run`` (or a sweep's ``runs/<key>/``) and re-derives every fact they state from the
others: the files belong together, each job's times and segments agree, every segment is a gang
on existing GPUs of the right count, no GPU holds more jobs (or memory) than the run allowed, and
``summary.json`` is what ``jobs.csv``/``segments.csv`` give. Every rule is in
docs/reliability.md ("ddlsched check"). A broken file is a violation naming its file and line, never a crash;
only an unusable input (no such directory, an unreadable file) is an ``InputError``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .core.results import JOB_COLUMNS, SEGMENT_COLUMNS, SUMMARY_KEYS
from .errors import InputError, quote
from .parsing import NumberError, parse_float, parse_int

#: relative and absolute tolerance of every float comparison (the files hold repr floats, but
#: derived numbers such as means are summed in another order)
REL = ABS = 1e-9
RUN_FILES = ("config.json", "summary.json", "jobs.csv", "segments.csv")
#: files a run writes only sometimes (``fairness.csv``: when the executor knows the jobs'
#: alone times, core/fairness.py)
OPTIONAL_FILES = ("fairness.csv", "queues.csv")
#: files whose SHA-256 ``summary.json`` lists under ``files`` (``run_id``: of config.json)
DIGESTED = ("config.json", "jobs.csv", "segments.csv")
#: summary keys recomputed from jobs.csv (besides ``num_jobs`` and ``gpu_util``)
RECOMPUTED = (
    *(k for k in SUMMARY_KEYS if k not in ("gpu_util", "num_jobs")),
    "avg_jct_large",
    "avg_jct_small",
)
_LABEL = re.compile(r"(\d+):(\d+)")


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (file name in the run directory, 1-based line; both optional),
    which rule (a short name from docs/reliability.md ("ddlsched check")) and what, naming job/GPU/time."""

    rule: str
    message: str
    file: str = ""
    line: int | None = None

    def format(self, run_dir: str | Path) -> str:
        """``DIR/FILE:LINE: RULE: message`` (compiler style, one line)."""
        where = str(run_dir)
        if self.file:
            where = f"{where.rstrip('/')}/{self.file}"
            if self.line is not None:
                where += f":{self.line}"
        return f"{where}: {self.rule}: {' '.join(self.message.split())}"


@dataclass
class RunCheck:
    """The outcome of checking one run directory."""

    path: Path
    violations: list[Violation] = field(default_factory=list)
    #: what could not be checked and why (not violations), e.g. an older run without digests
    notes: list[str] = field(default_factory=list)
    num_jobs: int = 0
    num_segments: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass
class _Job:
    job_id: int
    arrival: float
    start: float
    finish: float
    jct: float
    queueing: float
    gpus: int
    placement: str
    preemptions: int
    line: int


@dataclass
class _Seg:
    job_id: int
    start: float
    end: float
    placement: str
    gpus: tuple[tuple[int, int], ...]  # (server, gpu) labels, parsed
    line: int


@dataclass
class _Context:
    """What the run allowed, from summary.json and config.json (None = unknown)."""

    cluster: object | None = None  # core.cluster.Cluster
    specs: dict[int, object] | None = None  # job id → JobSpec, reloaded from config.json
    elastic: bool = False
    max_jobs_per_gpu: int | None = None
    #: an interrupted live run records only the jobs that finished
    partial: bool = False
    #: ... written before such runs recorded max_jobs_per_gpu: its gpu_util also counted the
    #: GPU time of the jobs still running at the interrupt
    old_partial: bool = False
    #: jobs a live service's export may lack: cancelled, or failed before they ran
    absent_ok: frozenset[int] = frozenset()


# ---------------------------------------------------------------------- helpers
def close(a: float, b: float) -> bool:
    """Equal to float tolerance: ``|a − b| ≤ 1e-9·max(|a|, |b|) + 1e-9``."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    return abs(a - b) <= REL * max(abs(a), abs(b)) + ABS


def _num(x: float) -> str:
    """A time or value in messages: integral floats without ``.0``, else repr."""
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def _label(gpu: tuple[int, int]) -> str:
    return f"{gpu[0]}:{gpu[1]}"


def is_sweep_dir(path: Path) -> bool:
    """A sweep's output: ``runs/`` holding run directories, and no run files of its own."""
    return (path / "runs").is_dir() and not any((path / f).exists() for f in RUN_FILES)


def run_dirs(path: str | Path) -> list[Path]:
    """The run directories ``path`` names: itself, or every ``runs/<key>/`` of a sweep.
    ``InputError`` when it is neither, does not exist or cannot be read."""
    try:
        return _run_dirs(Path(path))
    except OSError as e:  # e.g. a directory without permission
        raise InputError(f"cannot read: {e.strerror or e}", source=str(path)) from None


def _run_dirs(p: Path) -> list[Path]:
    path = str(p)
    if not p.exists():
        raise InputError("no such directory", source=path)
    if not p.is_dir():
        raise InputError("not a directory (give a run or sweep output directory)", source=path)
    if is_sweep_dir(p):
        try:
            # hidden entries are writers' temporary directories, not results
            runs = sorted(
                d for d in (p / "runs").iterdir() if d.is_dir() and not d.name.startswith(".")
            )
        except OSError as e:
            raise InputError(f"cannot list: {e.strerror}", source=str(p / "runs")) from None
        if not runs:
            raise InputError("sweep directory without runs (runs/ is empty)", source=path)
        return runs
    if not any((p / f).exists() for f in RUN_FILES):
        raise InputError(
            "not a run directory (no config.json, summary.json, jobs.csv or segments.csv) "
            "and not a sweep directory (no runs/)",
            source=path,
        )
    return [p]


def _read(path: Path) -> bytes | None:
    """The file's bytes; None when absent; ``InputError`` when it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", source=str(path)) from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


#: what ``_json`` returns for a file that does not parse (reported already)
BROKEN = object()


def _json(data: bytes, name: str, out: list[Violation]) -> object:
    """The parsed JSON value, or ``BROKEN`` after reporting why it does not parse."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as e:
        out.append(Violation("malformed", f"not UTF-8 text ({e.reason})", name))
    except json.JSONDecodeError as e:
        out.append(Violation("malformed", f"invalid JSON: {e.msg}", name, e.lineno))
    except ValueError as e:  # NaN / Infinity
        out.append(Violation("finite", str(e), name))
    except RecursionError:
        out.append(Violation("malformed", "JSON nested too deeply", name))
    return BROKEN


def _object(value: object, name: str, out: list[Violation]) -> dict | None:
    """``value`` if it is a JSON object; else None (reported unless it did not parse)."""
    if isinstance(value, dict):
        return value
    if value is not BROKEN:
        out.append(Violation("malformed", f"not a JSON object but {type(value).__name__}", name))
    return None


def _rows(
    data: bytes, name: str, columns: Sequence[str], out: list[Violation]
) -> list[tuple[int, dict[str, str]]] | None:
    """(line, row by column) of a CSV; None if its header lacks a documented column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        out.append(Violation("malformed", f"not UTF-8 text ({e.reason})", name))
        return None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            out.append(Violation("columns", "empty file (no header)", name, 1))
            return None
        missing = [c for c in columns if c not in header]
        if missing or len(set(header)) != len(header):
            what = f"missing {', '.join(missing)}" if missing else "a column appears twice"
            out.append(
                Violation(
                    "columns",
                    f"header {','.join(header)}: {what}; expected {','.join(columns)}",
                    name,
                    1,
                )
            )
            return None
        rows = []
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != len(header):
                out.append(
                    Violation(
                        "malformed", f"{len(row)} fields, header has {len(header)}", name, line
                    )
                )
                continue
            rows.append((line, dict(zip(header, row, strict=True))))
        return rows
    except csv.Error as e:
        out.append(Violation("malformed", f"CSV: {e}", name, reader.line_num))
        return None


class _Bad(ValueError):
    """A field of a row does not parse (the message names the field)."""


def _int(row: Mapping[str, str], key: str, low: int) -> int:
    text = row[key]
    try:
        value = parse_int(text)
    except NumberError:
        value = None
    if value is None or value < low:
        raise _Bad(f"field '{key}': expected an integer ≥ {low}, got {text!r}")
    return value


def _float(row: Mapping[str, str], key: str) -> float:
    text = row[key]
    try:
        return parse_float(text)
    except NumberError:
        raise _Bad(f"field '{key}': expected a finite number, got {text!r}") from None


def parse_placement(text: str) -> tuple[tuple[int, int], ...]:
    """``server:gpu`` labels joined by ``;`` → (server, gpu) pairs; ``_Bad`` if malformed."""
    out = []
    for part in text.split(";"):
        m = _LABEL.fullmatch(part)
        if m is None:
            raise _Bad(f"field 'placement': {part!r} is not server:gpu (in {text!r})")
        out.append((int(m.group(1)), int(m.group(2))))
    return tuple(out)


# ---------------------------------------------------------------------- reading the run
def _parse_jobs(rows, out: list[Violation]) -> dict[int, _Job]:
    jobs: dict[int, _Job] = {}
    for line, r in rows:
        try:
            j = _Job(
                job_id=_int(r, "job_id", 0),
                arrival=_float(r, "arrival"),
                start=_float(r, "start"),
                finish=_float(r, "finish"),
                jct=_float(r, "jct"),
                queueing=_float(r, "queueing"),
                gpus=_int(r, "gpus", 1),
                placement=r["placement"],
                preemptions=_int(r, "preemptions", 0),
                line=line,
            )
        except _Bad as e:
            out.append(Violation("malformed", str(e), "jobs.csv", line))
            continue
        if j.job_id in jobs:
            out.append(
                Violation(
                    "duplicate-job",
                    f"job {j.job_id} also on line {jobs[j.job_id].line}",
                    "jobs.csv",
                    line,
                )
            )
            continue
        jobs[j.job_id] = j
    return jobs


def _parse_segments(rows, out: list[Violation]) -> list[_Seg]:
    segs = []
    for line, r in rows:
        try:
            job_id = _int(r, "job_id", 0)
            start, end = _float(r, "start"), _float(r, "end")
            gpus = parse_placement(r["placement"])
        except _Bad as e:
            out.append(Violation("malformed", str(e), "segments.csv", line))
            continue
        segs.append(_Seg(job_id, start, end, r["placement"], gpus, line))
    return segs


def _digests(raw: Mapping[str, bytes | None], summary: Mapping, res: RunCheck) -> None:
    """Files belong together: every digest ``summary.json`` lists matches, and ``run_id`` is
    config.json's."""
    files, run_id = summary.get("files"), summary.get("run_id")
    if files is None and run_id is None:
        res.notes.append(
            "summary.json records no run_id/files (an older run): the files are not proven "
            "to belong together"
        )
        return
    v = res.violations
    if not isinstance(files, dict):
        v.append(
            Violation("files-together", "'files' is not a table of SHA-256 digests", "summary.json")
        )
        files = {}
    for name in DIGESTED:  # config.json only where there is one (library output has none)
        if name not in files and (name != "config.json" or raw.get(name) is not None):
            v.append(
                Violation("files-together", f"'files' lists no digest of {name}", "summary.json")
            )
    for name in OPTIONAL_FILES:
        if raw.get(name) is not None and name not in files:
            v.append(
                Violation("files-together", f"'files' lists no digest of {name}", "summary.json")
            )
    for name, digest in sorted(files.items()):
        if name not in DIGESTED and name not in OPTIONAL_FILES:
            v.append(Violation("files-together", f"'files' lists {quote(name)}", "summary.json"))
            continue
        data = raw.get(name)
        if data is None:
            v.append(
                Violation("files-together", f"{name} is listed in summary.json but absent", name)
            )
        elif hashlib.sha256(data).hexdigest() != digest:
            v.append(
                Violation(
                    "files-together",
                    "SHA-256 differs from summary.json's: the file changed after the "
                    "run or belongs to another run",
                    name,
                )
            )
    config = raw.get("config.json")
    if run_id is None and config is not None:
        v.append(Violation("files-together", "'files' without 'run_id'", "summary.json"))
    elif config is not None and hashlib.sha256(config).hexdigest()[:16] != run_id:
        v.append(
            Violation(
                "files-together",
                f"run_id {run_id!r} is not config.json's "
                f"({hashlib.sha256(config).hexdigest()[:16]}): another run's summary",
                "summary.json",
            )
        )


def _context(
    config: object, summary: Mapping | None, res: RunCheck, directory: Path | None = None
) -> _Context:
    """The cluster, workload and limits of the run, as far as they can be recovered."""
    ctx = _Context()
    cfg = config if isinstance(config, dict) else {}
    known = summary is not None  # no summary: reported as missing, no notes about it
    summary = summary or {}
    ctx.partial = summary.get("interrupted") is True
    if ctx.partial and known:
        res.notes.append(_interrupted_note(cfg, summary))
    # what a summary without a key is: an interrupted live run's (before they were recorded
    # there too) or a run written before ddlsched recorded it
    older = "an interrupted run" if ctx.partial else "an older run"
    elastic = summary.get("elastic")
    if isinstance(elastic, bool):
        ctx.elastic = elastic
    else:
        ctx.elastic = cfg.get("policy") == "pollux"
    if elastic is not None and not isinstance(elastic, bool):
        res.violations.append(
            Violation("malformed", f"'elastic' is {elastic!r}, not true/false", "summary.json")
        )
    elif elastic is None and known:
        res.notes.append(
            f"summary.json records no 'elastic' ({older}): taken as {ctx.elastic} "
            "from the policy name"
        )
    limit = summary.get("max_jobs_per_gpu")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        ctx.max_jobs_per_gpu = limit
    elif limit is None:
        if known:
            res.notes.append(
                f"summary.json records no 'max_jobs_per_gpu' ({older}): jobs per GPU not checked"
            )
    else:
        res.violations.append(
            Violation(
                "malformed", f"'max_jobs_per_gpu' is {limit!r}, not an integer ≥ 0", "summary.json"
            )
        )
    ctx.old_partial = ctx.partial and limit is None
    excused = [summary.get(k) for k in ("cancelled_job_ids", "failed_job_ids")]
    ctx.absent_ok = frozenset(
        i for ids in excused if isinstance(ids, list) for i in ids if isinstance(i, int)
    )
    if cfg.get("mode") == "live":
        _load_live_context(cfg, ctx, res, directory)
    elif cfg.get("mode") == "replay":
        _load_replay_context(cfg, ctx, res, directory)
    elif cfg:  # (absent or broken: noted or reported already)
        _load_context(cfg, ctx, res)
    return ctx


def _interrupted_note(cfg: Mapping, summary: Mapping) -> str:
    """What an interrupted run records, in plain words."""
    n = summary.get("num_jobs")
    finished = f"the {n} job(s) that" if isinstance(n, int) and not isinstance(n, bool) else "jobs"
    if cfg.get("service"):
        return (
            f"an export of a live service while jobs had not ended: it records {finished} "
            "ended; the others are not checked"
        )
    return (
        f"an interrupted run (Ctrl-C or SIGTERM; summary.json 'interrupted'): it records "
        f"{finished} finished before the interrupt; the others are not checked"
    )


def _load_live_context(
    cfg: dict, ctx: _Context, res: RunCheck, directory: Path | None = None
) -> None:
    """A live run's cluster and jobs (its job file, relative to the run directory when it is
    a relative path, as ``ddlsched export`` writes it; arrivals ÷ the time scale)."""
    from .core.cluster_io import load_cluster
    from .live.jobfile import read_live_jobs
    from .live.run import to_specs

    if cfg.get("cluster"):
        try:
            ctx.cluster = load_cluster(str(cfg["cluster"]))
        except Exception as e:  # noqa: BLE001 - a note, not a crash
            res.notes.append(f"cluster not loadable ({e}): GPU ids and counts not checked")
    else:
        res.notes.append("a Ray cluster's GPUs (no cluster file): GPU ids not checked")
    try:
        scale = float(cfg.get("time_scale", 1.0))  # type: ignore[arg-type]
        jobs = Path(str(cfg["jobs"]))
        if not jobs.is_absolute() and directory is not None:
            jobs = directory / jobs
        specs = to_specs(read_live_jobs(jobs), scale)
        ctx.specs = {s.job_id: s for s in specs}
    except Exception as e:  # noqa: BLE001
        res.notes.append(f"job file not loadable ({e}): arrivals and GPU counts not checked")


def _load_replay_context(
    cfg: dict, ctx: _Context, res: RunCheck, directory: Path | None = None
) -> None:
    """A replay's cluster and jobs: its calibrated trace (``replay.csv`` in the run directory,
    with the live run's job ids; ``replay-jobs.csv`` for application-profile jobs)."""
    from .core.cluster_io import load_cluster
    from .replay import REPLAY_FILE, read_replay_jobs
    from .replay_profile import PROFILE_REPLAY_FILE, read_profile_jobs

    try:
        ctx.cluster = load_cluster(str(cfg.get("cluster")))
    except Exception as e:  # noqa: BLE001 - a note, not a crash
        res.notes.append(f"cluster not loadable ({e}): GPU ids and counts not checked")
    try:
        if directory is None:
            raise InputError("no run directory")
        workload = str(cfg.get("workload") or REPLAY_FILE)
        if workload == PROFILE_REPLAY_FILE:  # a replay of application-profile jobs
            specs = [j.spec() for j in read_profile_jobs(directory / workload)]
        else:
            specs = read_replay_jobs(directory / workload)
        ctx.specs = {s.job_id: s for s in specs}
    except Exception as e:  # noqa: BLE001
        res.notes.append(f"replay trace not loadable ({e}): arrivals and GPU counts not checked")


def _load_context(cfg: dict, ctx: _Context, res: RunCheck) -> None:
    from .config import config_from_record
    from .core.cluster_io import load_cluster
    from .workloads.presets import load_workload
    from .workloads.traces import options_for_cluster

    try:
        rc = config_from_record(cfg, source="config.json")
    except Exception as e:  # noqa: BLE001 - any reason it cannot load is a note, not a crash
        res.notes.append(
            f"config.json is not a loadable config ({e}): GPUs, memory and the workload not checked"
        )
        return
    try:
        ctx.cluster = load_cluster(rc.cluster, rc.seed)  # type: ignore[arg-type]
    except Exception as e:  # noqa: BLE001
        res.notes.append(
            f"cluster {rc.cluster!r} not loadable ({e}): GPU ids, GPU counts and memory not checked"
        )
    try:
        specs = load_workload(
            rc.workload,  # type: ignore[arg-type]
            rc.seed,
            rc.settings.philly or None,
            options_for_cluster(rc.trace_options(), ctx.cluster.name if ctx.cluster else ""),
            knobs=rc.settings.generator_knobs(),
        )
        ctx.specs = {s.job_id: s for s in specs}
    except Exception as e:  # noqa: BLE001
        res.notes.append(
            f"workload {rc.workload!r} not loadable ({e}): the jobs' arrivals, "
            "GPU counts and memory not checked"
        )


# ---------------------------------------------------------------------- the rules
def _check_workload(jobs: Mapping[int, _Job], ctx: _Context, out: list[Violation]) -> None:
    """jobs.csv holds exactly the workload's jobs, with their arrivals and GPU counts."""
    if ctx.specs is None:
        return
    for jid in sorted(set(ctx.specs) - set(jobs) - ctx.absent_ok) if not ctx.partial else ():
        out.append(Violation("workload", f"job {jid} of the workload is missing", "jobs.csv"))
    for jid, j in sorted(jobs.items()):
        spec = ctx.specs.get(jid)
        if spec is None:
            out.append(
                Violation("workload", f"job {jid} is not in the workload", "jobs.csv", j.line)
            )
            continue
        if not close(j.arrival, spec.arrival):  # type: ignore[attr-defined]
            out.append(
                Violation(
                    "workload",
                    f"job {jid}: arrival {_num(j.arrival)}, the workload says {_num(spec.arrival)}",
                    "jobs.csv",
                    j.line,
                )
            )  # type: ignore[attr-defined]
        if j.gpus != spec.num_gpus:  # type: ignore[attr-defined]
            out.append(
                Violation(
                    "workload",
                    f"job {jid}: gpus {j.gpus}, the workload asks {spec.num_gpus}",
                    "jobs.csv",
                    j.line,
                )
            )  # type: ignore[attr-defined]


def _check_job(j: _Job, segs: list[_Seg], ctx: _Context, out: list[Violation]) -> None:
    """Times of one job and its segments (sorted by start)."""
    v = out.append
    jid, at = j.job_id, ("jobs.csv", j.line)
    if j.start < j.arrival and not close(j.start, j.arrival):
        v(
            Violation(
                "start-after-arrival",
                f"job {jid} starts at {_num(j.start)} before its arrival {_num(j.arrival)}",
                *at,
            )
        )
    if j.finish < j.start and not close(j.finish, j.start):
        v(
            Violation(
                "finish-after-start",
                f"job {jid} finishes at {_num(j.finish)} before its start {_num(j.start)}",
                *at,
            )
        )
    if not close(j.jct, j.finish - j.arrival):
        v(
            Violation(
                "jct",
                f"job {jid}: jct {_num(j.jct)} ≠ finish − arrival = {_num(j.finish - j.arrival)}",
                *at,
            )
        )
    if not close(j.queueing, j.start - j.arrival):
        v(
            Violation(
                "queueing",
                f"job {jid}: queueing {_num(j.queueing)} ≠ start − arrival = "
                f"{_num(j.start - j.arrival)}",
                *at,
            )
        )
    if not segs:
        v(Violation("no-segment", f"job {jid} has no row in segments.csv", *at))
        return
    if not close(segs[0].start, j.start):
        v(
            Violation(
                "first-segment",
                f"job {jid} starts at {_num(j.start)} but its first "
                f"segment at {_num(segs[0].start)}",
                *at,
            )
        )
    last = segs[-1]
    if not close(last.end, j.finish):  # also in rounds semantics: segments are run times
        rule = "= finish"
        v(
            Violation(
                "last-segment",
                f"job {jid} finishes at {_num(j.finish)} but its last "
                f"segment ends at {_num(last.end)} (must be {rule})",
                "segments.csv",
                last.line,
            )
        )
    if j.placement != last.placement:
        v(
            Violation(
                "placement",
                f"job {jid}: placement {j.placement!r} is not its last "
                f"segment's {last.placement!r}",
                *at,
            )
        )
    if j.preemptions != len(segs) - 1:
        v(
            Violation(
                "preemptions",
                f"job {jid}: {j.preemptions} preemptions but {len(segs)} "
                f"segments ({len(segs) - 1} breaks)",
                *at,
            )
        )
    for s in segs:
        where = ("segments.csv", s.line)
        if s.end < s.start:
            v(
                Violation(
                    "segment-times",
                    f"job {jid}: segment ends at {_num(s.end)} before it starts at {_num(s.start)}",
                    *where,
                )
            )
        # the last segment's end is the rule "last-segment"
        lo, hi = j.start, (j.finish if s is not last else math.inf)
        if (s.start < lo and not close(s.start, lo)) or (s.end > hi and not close(s.end, hi)):
            v(
                Violation(
                    "segment-within",
                    f"job {jid}: segment [{_num(s.start)}, {_num(s.end)}] "
                    f"outside the job's [start, finish] = [{_num(j.start)}, "
                    f"{_num(j.finish)}]",
                    *where,
                )
            )
        _check_gang(j, s, ctx, out)
    for a, b in zip(segs, segs[1:], strict=False):
        if b.start < a.end and not close(b.start, a.end):
            v(
                Violation(
                    "segment-overlap",
                    f"job {jid}: segment [{_num(b.start)}, {_num(b.end)}] "
                    f"begins before its previous one ends at {_num(a.end)}",
                    "segments.csv",
                    b.line,
                )
            )


def _check_gang(j: _Job, s: _Seg, ctx: _Context, out: list[Violation]) -> None:
    """A segment is a gang of distinct, existing GPUs, as many as the job asked (elastic: 1 to
    the cluster's size)."""
    where = ("segments.csv", s.line)
    seen: set[tuple[int, int]] = set()
    for g in s.gpus:
        if g in seen:
            out.append(
                Violation(
                    "gang",
                    f"job {j.job_id}: GPU {_label(g)} appears twice in {s.placement!r}",
                    *where,
                )
            )
        seen.add(g)
        cl = ctx.cluster
        if cl is not None and not (
            g[0] < cl.num_servers and g[1] < cl.servers[g[0]].num_gpus  # type: ignore[attr-defined]
        ):
            out.append(
                Violation("gang", f"job {j.job_id}: GPU {_label(g)} is not in the cluster", *where)
            )
    n = len(s.gpus)
    if ctx.elastic:
        total = ctx.cluster.num_gpus if ctx.cluster is not None else None  # type: ignore[attr-defined]
        if total is not None and n > total:
            out.append(
                Violation(
                    "gpu-count",
                    f"job {j.job_id}: {n} GPUs, more than the cluster's {total}",
                    *where,
                )
            )
    elif n != j.gpus:
        out.append(
            Violation(
                "gpu-count",
                f"job {j.job_id}: segment on {n} GPUs, the job asked "
                f"for {j.gpus} (policy not elastic)",
                *where,
            )
        )


def _check_sharing(segs: list[_Seg], ctx: _Context, out: list[Violation]) -> None:
    """At no instant does a GPU hold more jobs than ``max_jobs_per_gpu`` (0 = no limit) or
    more memory than it has. Sweep line per GPU over segment starts/ends; an end comes before
    a start at the same instant (a GPU freed at t can be taken at t)."""
    events: dict[tuple[int, int], list[tuple[float, int, int, int]]] = {}
    for s in segs:
        if not s.end > s.start:
            continue  # holds nothing (a negative one is reported per job)
        for g in set(s.gpus):
            ev = events.setdefault(g, [])
            ev.append((s.start, 1, s.job_id, s.line))
            ev.append((s.end, 0, s.job_id, s.line))
    limit = ctx.max_jobs_per_gpu or 0
    cl, specs = ctx.cluster, ctx.specs
    for g in sorted(events):
        active: dict[int, int] = {}
        mem_cap = None
        if cl is not None and specs is not None and g[0] < cl.num_servers:  # type: ignore[attr-defined]
            mem_cap = cl.servers[g[0]].gpu_memory_mb  # type: ignore[attr-defined]
        for t, kind, jid, line in sorted(events[g]):
            if kind == 0:
                active[jid] -= 1
                if not active[jid]:
                    del active[jid]
                continue
            active[jid] = active.get(jid, 0) + 1
            ids = ", ".join(str(i) for i in sorted(active))
            if limit and len(active) > limit:
                out.append(
                    Violation(
                        "sharing",
                        f"GPU {_label(g)} holds {len(active)} jobs "
                        f"({ids}) at t={_num(t)}, more than max_jobs_per_gpu = "
                        f"{limit}",
                        "segments.csv",
                        line,
                    )
                )
            if mem_cap is not None:
                used = sum(specs[i].memory_mb for i in active if i in specs)  # type: ignore[index,attr-defined]
                if used > mem_cap * (1 + REL):
                    out.append(
                        Violation(
                            "memory",
                            f"GPU {_label(g)} holds jobs {ids} at "
                            f"t={_num(t)} needing {used:g} MB, it has "
                            f"{mem_cap:g} MB",
                            "segments.csv",
                            line,
                        )
                    )


def held_fraction(segs: Sequence[_Seg], num_gpus: int, makespan: float) -> float:
    """Σ over GPUs of the length of the union of its segments / (GPUs × makespan)."""
    per: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for s in segs:
        if s.end > s.start:
            for g in set(s.gpus):
                per.setdefault(g, []).append((s.start, s.end))
    total = 0.0
    for spans in per.values():
        spans.sort()
        cur_s, cur_e = spans[0]
        for a, b in spans[1:]:
            if a > cur_e:
                total += cur_e - cur_s
                cur_s, cur_e = a, b
            else:
                cur_e = max(cur_e, b)
        total += cur_e - cur_s
    return total / (num_gpus * makespan) if makespan > 0 and num_gpus > 0 else 0.0


def recompute_summary(jobs: Sequence[_Job]) -> dict[str, float]:
    """The jobs.csv part of ``summary.json``, computed as ``core.results.summarize`` does."""
    # from finish/start − arrival, as the engine does (a wrong jct column is its own rule)
    jct = np.array([j.finish - j.arrival for j in jobs])
    queue = np.array([j.start - j.arrival for j in jobs])
    large = [j.finish - j.arrival for j in jobs if j.gpus > 4]
    small = [j.finish - j.arrival for j in jobs if j.gpus <= 4]
    return {
        "avg_jct": float(jct.mean()),
        "median_jct": float(np.median(jct)),
        "p95_jct": float(np.percentile(jct, 95)),
        "p99_jct": float(np.percentile(jct, 99)),
        "makespan": float(max(j.finish for j in jobs) - min(j.arrival for j in jobs)),
        "avg_queueing": float(queue.mean()),
        "avg_jct_large": float(np.mean(large)) if large else 0.0,
        "avg_jct_small": float(np.mean(small)) if small else 0.0,
    }


def _check_summary(
    summary: Mapping,
    jobs: Sequence[_Job],
    segs: Sequence[_Seg] | None,
    ctx: _Context,
    res: RunCheck,
) -> None:
    v = res.violations.append
    name = "summary.json"

    def number(key: str) -> float | None:
        x = summary.get(key)
        if isinstance(x, bool) or not isinstance(x, int | float):
            v(
                Violation(
                    "summary",
                    f"'{key}' is {'missing' if x is None else repr(x)}, expected a number",
                    name,
                )
            )
            return None
        return float(x)

    for key, x in sorted(summary.items()):
        if isinstance(x, float) and not math.isfinite(x):
            v(Violation("finite", f"'{key}' is {x!r}", name))
    n = summary.get("num_jobs")
    if n != len(jobs) or isinstance(n, bool):
        v(Violation("summary", f"num_jobs is {n!r}, jobs.csv has {len(jobs)} jobs", name))
    if not jobs:
        return
    want = recompute_summary(jobs)
    for key in RECOMPUTED:
        got = number(key)
        if got is not None and not close(got, want[key]):
            v(Violation("summary", f"{key} is {_num(got)}, jobs.csv gives {_num(want[key])}", name))
    util = number("gpu_util")
    # within float tolerance: the 1-ns clock may start a job up to 0.5 ns before the arrival
    # given with more decimals, and its GPU time over the makespan then ends a hair above 1
    if util is not None and not 0.0 <= util <= 1.0 + REL:
        v(Violation("gpu-util", f"gpu_util {_num(util)} outside [0, 1]", name))
    held = None
    if ctx.cluster is not None and segs is not None:
        held = held_fraction(segs, ctx.cluster.num_gpus, want["makespan"])  # type: ignore[attr-defined]
    recorded = summary.get("gpu_held")
    if recorded is not None:
        got = number("gpu_held")
        if got is not None and held is not None and not close(got, held):
            v(
                Violation(
                    "gpu-held", f"gpu_held is {_num(got)}, segments.csv gives {_num(held)}", name
                )
            )
        held = got if held is None else held
    if util is not None and held is not None and util > held + 1e-9 and ctx.old_partial:
        res.notes.append(
            f"gpu_util {_num(util)} exceeds the share of GPU time held by segments "
            f"({_num(held)}): an interrupted run written before ddlsched left the GPU time of "
            "the jobs still running at the interrupt out of it; not checked"
        )
    elif util is not None and held is not None and util > held + 1e-9:
        v(
            Violation(
                "gpu-util",
                f"gpu_util {_num(util)} exceeds the share of GPU time held by "
                f"segments ({_num(held)}): a busy GPU counts once",
                name,
            )
        )


# ---------------------------------------------------------------------- entry points
def check_run(path: str | Path) -> RunCheck:
    """Check one run directory; every broken rule is a ``Violation`` (never an exception).
    ``InputError`` only when ``path`` is not a directory or a file in it cannot be read."""
    p = Path(path)
    if not p.is_dir():
        raise InputError(
            "no such directory" if not p.exists() else "not a directory", source=str(path)
        )
    res = RunCheck(p)
    v = res.violations
    raw = {name: _read(p / name) for name in (*RUN_FILES, *OPTIONAL_FILES)}
    for name in ("summary.json", "jobs.csv", "segments.csv"):
        if raw[name] is None:
            v.append(Violation("missing-file", "absent: an incomplete or interrupted run", name))
    config = summary = None
    if raw["config.json"] is None:
        res.notes.append("no config.json (library output?): GPUs, memory and workload not checked")
    else:
        config = _object(_json(raw["config.json"], "config.json", v), "config.json", v)
    if raw["summary.json"] is not None:
        summary = _object(_json(raw["summary.json"], "summary.json", v), "summary.json", v)
    if summary is not None:
        _digests(raw, summary, res)
    ctx = _context(config, summary, res, Path(path))

    job_rows = seg_rows = None
    if raw["jobs.csv"] is not None:
        job_rows = _rows(raw["jobs.csv"], "jobs.csv", JOB_COLUMNS, v)
    if raw["segments.csv"] is not None:
        seg_rows = _rows(raw["segments.csv"], "segments.csv", SEGMENT_COLUMNS, v)
    jobs = _parse_jobs(job_rows, v) if job_rows is not None else None
    segs = _parse_segments(seg_rows, v) if seg_rows is not None else None
    res.num_jobs = len(jobs or {})
    res.num_segments = len(segs or [])
    if jobs is not None:
        _check_workload(jobs, ctx, v)
    if jobs is not None and segs is not None:
        by_job: dict[int, list[_Seg]] = {}
        for s in segs:
            if s.job_id not in jobs:
                v.append(
                    Violation(
                        "unknown-job",
                        f"segment of job {s.job_id}, which jobs.csv does not have",
                        "segments.csv",
                        s.line,
                    )
                )
            else:
                by_job.setdefault(s.job_id, []).append(s)
        for jid, j in sorted(jobs.items()):
            _check_job(j, sorted(by_job.get(jid, []), key=lambda s: (s.start, s.end)), ctx, v)
    if segs is not None:
        _check_sharing(segs, ctx, v)
        if ctx.specs is None or ctx.cluster is None:
            res.notes.append("memory per GPU not checked (cluster or workload not loadable)")
    if summary is not None and jobs is not None:
        _check_summary(summary, list(jobs.values()), segs, ctx, res)
        _check_fairness(raw.get("fairness.csv"), summary, jobs, ctx, res)
    return res


def _check_fairness(
    data: bytes | None, summary: Mapping, jobs: Mapping[int, _Job], ctx: _Context, res: RunCheck
) -> None:
    """``fairness.csv`` (when written) is what jobs.csv, its ``alone`` column and the cluster
    give (core/fairness.py), and the summary's fairness keys are its aggregate."""
    from .core.fairness import FAIRNESS_COLUMNS, FAIRNESS_KEYS, fairness

    v = res.violations.append
    name = "fairness.csv"
    if data is None:
        for key in FAIRNESS_KEYS:
            if key in summary:
                v(Violation("summary", f"{key!r} without {name}", "summary.json"))
        return
    rows = _rows(data, name, FAIRNESS_COLUMNS, res.violations)
    if rows is None:
        return
    alone: dict[int, float] = {}
    got: dict[int, tuple[int, dict[str, float]]] = {}
    for line, row in rows:
        try:
            vals = {c: float(row[c]) for c in FAIRNESS_COLUMNS[1:]}
            jid = int(row["job_id"])
        except ValueError:
            v(Violation("malformed", "a value is not a number", name, line))
            continue
        if jid not in jobs:
            v(Violation("unknown-job", f"job {jid}, which jobs.csv does not have", name, line))
            continue
        if not (math.isfinite(vals["alone"]) and vals["alone"] >= 0):
            v(Violation("fairness", f"job {jid}: alone {vals['alone']!r} is not ≥ 0", name, line))
            continue
        alone[jid] = vals["alone"]
        got[jid] = (line, vals)
    missing = sorted(set(jobs) - set(alone))
    if missing or ctx.cluster is None or not got:
        if missing:
            v(Violation("fairness", f"no row for job {missing[0]}", name))
        return
    ordered = [jobs[k] for k in sorted(jobs)]
    want_rows, want_keys = fairness(ordered, alone, ctx.cluster.num_gpus)  # type: ignore[attr-defined]
    for jid, _alone, n, fair, rho in want_rows:
        line, vals = got[jid]
        for col, x in (("contention", n), ("fair_jct", fair), ("rho", rho)):
            if not close(vals[col], x):
                v(
                    Violation(
                        "fairness",
                        f"job {jid}: {col} {_num(vals[col])}, jobs.csv gives {_num(x)}",
                        name,
                        line,
                    )
                )
    for key, x in want_keys.items():
        rec = summary.get(key)
        if not isinstance(rec, int | float) or isinstance(rec, bool) or not close(rec, x):
            v(
                Violation(
                    "summary", f"{key} is {rec!r}, fairness.csv gives {_num(x)}", "summary.json"
                )
            )


def check_paths(paths: Sequence[str | Path]) -> list[RunCheck]:
    """Check every run directory that ``paths`` name (a sweep: each ``runs/<key>/``). All
    paths are validated first, so an unusable one fails before any check is printed."""
    dirs = [d for p in paths for d in run_dirs(p)]
    return [check_run(d) for d in dirs]
