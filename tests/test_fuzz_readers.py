"""Property-based fuzzing of every input reader (issue #11 §6).

The contract: ANY input gives either a valid result or one :class:`InputError` whose message is
a single line: never another exception (RecursionError, ValueError, KeyError, UnicodeError,
MemoryError, ...); through the CLI, exit status 2, one ``ddlsched: error:`` line on stderr, no
traceback and no (partial) output directory. Valid results must satisfy basic invariants (finite
numbers, ``num_gpus ≥ 1``, ``arrival ≥ 0``, times below 2**53 s, ...).

Each reader is fuzzed two ways: (a) random edits of a small valid file (field replaced by a
hostile token such as ``nan``, ``1e400``, ``1_000``, ``٣``, a NUL byte or a very long string;
characters deleted, duplicated, swapped; lines duplicated; extra or missing columns; a BOM,
CRLF, invalid UTF-8) and (b) structured random documents with the reader's keys and random
values. Examples are deterministic (``derandomize=True``); set ``DDLSCHED_FUZZ_EXAMPLES=N`` to
run N examples per reader, and ``DDLSCHED_FUZZ_LOG=FILE`` to record every contract violation as
a JSON line instead of stopping at the first (for bulk runs; see docs/reliability.md ("Fuzzing every reader")).
Then come the issue's hostile inputs as fixed cases, the bounded ones (YAML billion laughs, a
sweep of 10^8 seeds) in a subprocess with a timeout and a memory limit, and a small CLI fuzz.
"""

from __future__ import annotations

import atexit
import csv
import io
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ddlsched.api import Settings
from ddlsched.cli import _parse_sets, main
from ddlsched.config import RunConfig, load_run_config, with_overrides
from ddlsched.core.cluster import Cluster
from ddlsched.core.cluster_io import MAX_GPUS, load_cluster, read_cluster
from ddlsched.core.job import JobSpec
from ddlsched.errors import InputError
from ddlsched.perf.profiles import (
    Application,
    load_application,
    load_applications,
    read_pair_interference,
)
from ddlsched.sweep import Sweep, load_sweep
from ddlsched.workloads.io import ALL_COLUMNS, read_workload
from ddlsched.workloads.presets import load_workload
from ddlsched.workloads.trace_formats import GAVEL_COLUMNS, GAVEL_PHILLY_COLUMNS, gavel_throughputs
from ddlsched.workloads.trace_generic import GENERIC_COLUMNS
from ddlsched.workloads.traces import filter_jobs, read_trace, write_trace

# --------------------------------------------------------------------------------------------
# budget: deterministic, sized so the whole file runs in about a minute on a busy 2-core machine
# --------------------------------------------------------------------------------------------

#: ``DDLSCHED_FUZZ_EXAMPLES=N``: N examples per fuzz test instead of the CI default
_SCALE = int(os.environ.get("DDLSCHED_FUZZ_EXAMPLES", "0") or 0)
#: ``DDLSCHED_FUZZ_LOG=FILE``: append every violation to FILE (JSON lines) and go on
_LOG = os.environ.get("DDLSCHED_FUZZ_LOG")
#: Seconds an engine time may reach: beyond 2**53 a float cannot hold a fraction of a second
#: (the issue's arrival 1e16 gives JCT 12 for 12.48); the readers' own limit may be lower
TIME_LIMIT = 2.0**53
ROOT = Path(__file__).resolve().parent.parent


def fuzz(examples: int) -> settings:
    """Deterministic hypothesis settings: ``examples`` per test (``DDLSCHED_FUZZ_EXAMPLES``
    overrides), no deadline, no example database."""
    return settings(
        max_examples=_SCALE or examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------------------------
# the contract
# --------------------------------------------------------------------------------------------


class _Files:
    """Writes each example's input under a fresh name: readers cache parsed files by
    (path, mtime, size), so reusing a name could return a stale result."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ddlsched-fuzz-"))
        self._n = itertools.count()

    def dir(self) -> Path:
        d = self.root / f"d{next(self._n)}"
        d.mkdir()
        return d

    def write(self, name: str, data: str | bytes, where: Path | None = None) -> Path:
        d = where if where is not None else self.dir()
        p = d / name
        if isinstance(data, str):
            p.write_bytes(data.encode("utf-8", "surrogatepass"))
        else:
            p.write_bytes(data)
        return p


FILES = _Files()
atexit.register(shutil.rmtree, FILES.root, ignore_errors=True)


def _origin(exc: BaseException) -> str:
    """``file:line`` of the innermost frame in ddlsched's sources (the failure class)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/ddlsched/" in f.filename and "/tests/" not in f.filename]
    f = (ours or frames or [None])[-1]
    if f is None:
        return "?"
    return f"{f.filename.rpartition('/src/')[2] or f.filename}:{f.lineno}"


def _record(reader: str, kind: str, detail: str, where: str, inputs: Mapping[str, Any]) -> None:
    shown = {k: (v if isinstance(v, str) else repr(v))[:3000] for k, v in inputs.items()}
    size = sum(len(v) if isinstance(v, (str, bytes)) else len(repr(v)) for v in inputs.values())
    with open(_LOG, "a", encoding="utf-8") as f:  # type: ignore[arg-type]
        f.write(
            json.dumps(
                {
                    "reader": reader,
                    "kind": kind,
                    "detail": detail[:500],
                    "where": where,
                    "size": size,
                    "input": shown,
                },
                ensure_ascii=True,
            )
            + "\n"
        )


def contract(
    reader: str,
    call: Callable[[], Any],
    check: Callable[[Any], None] | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> Any:
    """Run ``call``: an :class:`InputError` must be one line; any other exception is a
    violation; a result must pass ``check``. Returns the result (None after an InputError)."""
    try:
        result = call()
    except InputError as e:
        msg = str(e)
        if "\n" in msg or "\r" in msg:
            if _LOG:
                _record(reader, "multi-line InputError", msg, _origin(e), inputs or {})
                return None
            raise AssertionError(f"{reader}: InputError message is not one line: {msg!r}") from e
        event(f"{reader}: refused (InputError)")
        return None
    except Exception as e:  # the violation: anything but InputError
        if _LOG:
            _record(reader, type(e).__name__, str(e), _origin(e), inputs or {})
            return None
        raise
    if check is not None:
        try:
            check(result)
        except AssertionError as e:
            if _LOG:
                what = str(e).split(" = ")[0].split("\n")[0]
                _record(reader, "invariant", str(e), f"invariant {what}", inputs or {})
                return None
            raise
    event(f"{reader}: valid result")
    return result


# --------------------------------------------------------------------------------------------
# invariants of valid results
# --------------------------------------------------------------------------------------------


def _finite(x: Any, what: str, lo: float = 0.0, hi: float = math.inf) -> None:
    assert isinstance(x, (int, float)) and not isinstance(x, bool), f"{what} = {x!r} not a number"
    assert math.isfinite(x), f"{what} = {x!r} is not finite"
    assert lo <= x <= hi, f"{what} = {x!r} outside [{lo}, {hi}]"


def _whole(x: Any, what: str, lo: int) -> None:
    assert isinstance(x, int) and not isinstance(x, bool), f"{what} = {x!r} not an integer"
    assert x >= lo, f"{what} = {x!r} < {lo}"


def check_jobs(jobs: Any) -> None:
    """A non-empty list of JobSpecs, in arrival order, unique ids, every number finite and in
    range, every job timeable (a duration, iterations or an application)."""
    assert isinstance(jobs, list) and jobs, "no jobs"
    ids = set()
    for j in jobs:
        assert isinstance(j, JobSpec)
        _whole(j.job_id, "job_id", 0)
        assert j.job_id not in ids, f"duplicate job_id {j.job_id}"
        ids.add(j.job_id)
        _finite(j.arrival, "arrival", 0.0, TIME_LIMIT)
        _whole(j.num_gpus, "num_gpus", 1)
        _whole(j.iterations, "iterations", 0)
        _finite(j.duration, "duration", 0.0, TIME_LIMIT)
        _whole(j.batch_size, "batch_size", 0)
        m = j.model
        for name in ("size_mb", "memory_mb", "t_forward", "t_backward"):
            _finite(getattr(m, name), f"model.{name}")
        _whole(m.batch_size, "model.batch_size", 0)
        assert j.duration > 0 or j.iterations >= 1 or j.application, f"job {j.job_id} untimed"
        for name in ("application", "name", "user", "queue"):
            assert isinstance(getattr(j, name), str)
    arrivals = [j.arrival for j in jobs]
    assert arrivals == sorted(arrivals), "jobs not in arrival order"


def check_workload(jobs: Any) -> None:
    """Our own workload files: iterations ≥ 1 and a model that takes time, or an application."""
    check_jobs(jobs)
    for j in jobs:
        if not j.application:
            _whole(j.iterations, "iterations", 1)
            assert j.model.t_compute > 0, f"job {j.job_id}: t_forward + t_backward = 0"


def check_cluster(c: Any) -> None:
    assert isinstance(c, Cluster) and c.servers, "no servers"
    assert isinstance(c.name, str) and c.name.strip(), "empty cluster name"
    assert 1 <= c.num_gpus <= MAX_GPUS
    for s in c.servers:
        _whole(s.num_gpus, "num_gpus", 1)
        for name in ("gpu_memory_mb", "intra_bandwidth_gbps", "network_bandwidth_gbps"):
            _finite(getattr(s, name), name, math.ulp(0.0))
        assert isinstance(s.gpu_type, str) and s.gpu_type.strip()


def check_settings(s: Any) -> None:
    assert isinstance(s, Settings)
    for f in fields(Settings):
        v = getattr(s, f.name)
        if isinstance(f.default, float):
            _finite(v, f"settings.{f.name}", -math.inf)
        elif isinstance(f.default, bool):
            assert isinstance(v, bool), f"settings.{f.name} = {v!r}"
        elif isinstance(f.default, int):
            assert isinstance(v, int) and not isinstance(v, bool), f"settings.{f.name} = {v!r}"
        else:
            assert isinstance(v, str), f"settings.{f.name} = {v!r}"


def check_run_config(cfg: Any) -> None:
    assert isinstance(cfg, RunConfig)
    _whole(cfg.seed, "seed", 0)
    for name in ("trace_start", "trace_end", "load_scale"):
        v = getattr(cfg, name)
        if v is not None:
            _finite(v, name, -math.inf)
    for name in ("max_gpus", "sample"):
        v = getattr(cfg, name)
        assert v is None or (isinstance(v, int) and not isinstance(v, bool)), f"{name} = {v!r}"
    check_settings(cfg.settings)


def check_sweep(sw: Any) -> None:
    assert isinstance(sw, Sweep)
    assert sw.policies and all(isinstance(p, str) and p for p in sw.policies)
    assert sw.seeds
    for s in sw.seeds:
        _whole(s, "seed", 0)
    for key, values in sw.grid:
        assert values, f"grid {key} empty"
        for v in values:
            if isinstance(v, float):
                _finite(v, f"grid.{key}", -math.inf)
    for key, v in sw.settings.items():
        if isinstance(v, float):
            _finite(v, f"settings.{key}", -math.inf)


def check_application(app: Any) -> None:
    assert isinstance(app, Application)
    assert app.epochs >= 1 and 1 <= app.max_epochs <= app.epochs
    for name in ("init_bsz", "max_bsz", "min_local", "max_local"):
        _whole(getattr(app, name), name, 1)
    for e in range(app.epochs + 1):
        _finite(app.progress_at(e), f"progress[{e}]")
    for row in app._nd_points.tolist():
        for v in row:
            _finite(v, "throughput point", -math.inf)
    for curve in app._validation.values():
        for row in curve:
            for v in row:
                _finite(v, "validation value", -math.inf)


def check_interference(table: Any) -> None:
    assert isinstance(table, dict)
    for key, xi in table.items():
        _finite(xi, f"xi{key}", 1.0)


# --------------------------------------------------------------------------------------------
# strategies: hostile tokens and edits of a valid file
# --------------------------------------------------------------------------------------------

#: Values every strict reader must handle (most must be rejected where a number is meant)
HOSTILE: tuple[str, ...] = (
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "1e16",
    "1e308",
    "1e-300",
    "5e-324",
    "-1",
    "0",
    "-0",
    "-0.0",
    "4.5",
    "1_000",
    "1_0",
    "٣",  # ARABIC-INDIC DIGIT THREE
    "١٢",
    "۴",  # EXTENDED ARABIC-INDIC DIGIT FOUR
    "４",  # FULLWIDTH DIGIT FOUR
    "²",
    "0x10",
    "0b1",
    "+1",
    " 7 ",
    "",
    " ",
    '"4"',
    "'4'",
    '"',
    "'",
    '"unterminated',
    "abc",
    "true",
    "null",
    "None",
    "[]",
    "{}",
    "[",
    "{",
    "}",
    "]",
    ",",
    ";",
    ":",
    "=",
    "#",
    "\\",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\x00",
    "1\x002",
    "\ufeff",
    "\u2028",
    "\x85",
    "\x1b[31m",
    "🙂",
    "ÿ",
    "*a",
    "&a",
    "&a [*a]",
    "<<: *a",
    "!!binary",
    "!!python/object:os.system",
    "2**63",
    "9223372036854775808",
    "-9223372036854775809",
    "9" * 400,
    "9" * 5000,
    "x" * 10000,
    "1" + "0" * 30,
    "2017-10-09 07:00:00",
    "9999-12-31T23:59:59",
    "0001-01-01",
    "2017-13-45 99:99:99",
)
#: Integers small enough not to blow up a sweep's expansion (a count of seeds)
SWEEP_SAFE = tuple(t for t in HOSTILE if not re.fullmatch(r"\s*[0-9_]{4,}\s*", t)) + ("3", "12")

_FIELD = re.compile(r"[^,\t\n\r=:\[\]{}\"' ]+")
_CHARS = st.one_of(
    st.sampled_from(list(",\t\n\r\"'=:[]{}#&*\\\x00\ufeff")),
    st.characters(codec="utf-8"),
)


def tokens(pool: tuple[str, ...] = HOSTILE, big_numbers: bool = True) -> st.SearchStrategy[str]:
    """A hostile token, a random number as text, or random short text."""
    ints = st.integers(-(10**20), 10**20) if big_numbers else st.integers(-5, 50)
    return st.one_of(
        st.sampled_from(pool),
        st.sampled_from(pool),
        ints.map(str),
        st.floats().map(repr),
        st.text(max_size=6),
    )


def _pos(draw: Any, text: str) -> int:
    return draw(st.integers(0, len(text)))


def _replace_field(draw: Any, text: str, tok: st.SearchStrategy[str]) -> str:
    spans = [m.span() for m in _FIELD.finditer(text)]
    if not spans:
        return text + draw(tok)
    s, e = draw(st.sampled_from(spans))
    return text[:s] + draw(tok) + text[e:]


def _delete(draw: Any, text: str, tok: Any) -> str:
    i = _pos(draw, text)
    j = draw(st.integers(i, min(len(text), i + 12)))
    return text[:i] + text[j:]


def _duplicate(draw: Any, text: str, tok: Any) -> str:
    i = _pos(draw, text)
    j = draw(st.integers(i, min(len(text), i + 40)))
    return text[:j] + text[i:j] + text[j:]


def _swap(draw: Any, text: str, tok: Any) -> str:
    if len(text) < 2:
        return text
    i, j = sorted((draw(st.integers(0, len(text) - 1)), draw(st.integers(0, len(text) - 1))))
    return text[:i] + text[j] + text[i + 1 : j] + text[i] + text[j + 1 :] if i < j else text


def _insert(draw: Any, text: str, tok: Any) -> str:
    i = _pos(draw, text)
    return text[:i] + draw(_CHARS) + text[i:]


def _truncate(draw: Any, text: str, tok: Any) -> str:
    return text[: _pos(draw, text)]


def _lines_edit(draw: Any, text: str, tok: st.SearchStrategy[str]) -> str:
    lines = text.split("\n")
    k = draw(st.integers(0, len(lines) - 1))
    op = draw(st.sampled_from(["dup", "del", "swap", "extra", "drop", "blank", "comment"]))
    if op == "dup":
        lines.insert(k, lines[k])
    elif op == "del":
        del lines[k]
    elif op == "swap":
        m = draw(st.integers(0, len(lines) - 1))
        lines[k], lines[m] = lines[m], lines[k]
    elif op == "extra":
        lines[k] += draw(st.sampled_from([",", "\t", " ", ", "])) + draw(tok)
    elif op == "drop":
        cut = max(lines[k].rfind(","), lines[k].rfind("\t"))
        lines[k] = lines[k][:cut] if cut >= 0 else ""
    elif op == "blank":
        lines.insert(k, draw(st.sampled_from(["", " ", "\t", ",,,,"])))
    else:
        lines.insert(k, "# " + draw(tok))
    return "\n".join(lines)


def _whole_text(draw: Any, text: str, tok: Any) -> str:
    op = draw(st.sampled_from(["bom", "crlf", "cr", "strip", "twice", "upper"]))
    if op == "bom":
        return "\ufeff" + text
    if op == "crlf":
        return text.replace("\n", "\r\n")
    if op == "cr":
        return text.replace("\n", "\r")
    if op == "strip":
        return text.strip()
    if op == "twice":
        return text + text
    return text.upper()


_EDITS = (_replace_field, _replace_field, _replace_field, _delete, _duplicate, _swap, _insert)
_EDITS += (_truncate, _lines_edit, _lines_edit, _whole_text)


@st.composite
def mutated(draw: Any, base: str, tok: st.SearchStrategy[str] | None = None) -> str:
    """``base`` after 1–3 random edits (fields replaced by hostile tokens, characters and lines
    deleted, duplicated, swapped, columns added or removed, BOM, CRLF, ...)."""
    tok = tok if tok is not None else tokens()
    text = base
    for _ in range(draw(st.integers(1, 3))):
        text = draw(st.sampled_from(_EDITS))(draw, text, tok)
    return text


@st.composite
def encoded(draw: Any, text: str) -> bytes:
    """Mostly UTF-8; sometimes an invalid byte inserted, or UTF-16/Latin-1."""
    raw = text.encode("utf-8", "surrogatepass")
    op = draw(st.sampled_from(["utf8"] * 6 + ["badbyte", "utf16", "latin1"]))
    if op == "badbyte":
        i = draw(st.integers(0, len(raw)))
        return (
            raw[:i] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"])) + raw[i:]
        )
    if op == "utf16":
        return text.encode("utf-16", "surrogatepass")
    if op == "latin1":
        return text.encode("latin-1", "replace")
    return raw


def file_bytes(base: str, tok: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[bytes]:
    return mutated(base, tok).flatmap(encoded)


# --------------------------------------------------------------------------------------------
# strategies: structured random documents
# --------------------------------------------------------------------------------------------

_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(HOSTILE),
    st.sampled_from([[], {}]),
)
#: a random JSON-like tree (the leaves above in lists and string-keyed tables)
TREE = st.recursive(
    _LEAF,
    lambda c: (
        st.lists(c, min_size=1, max_size=3)
        | st.dictionaries(st.text(max_size=6), c, min_size=1, max_size=3)
    ),
    max_leaves=6,
)


def document(
    plausible: Mapping[str, st.SearchStrategy[Any]],
    extra: bool = True,
    required: tuple[str, ...] = (),
) -> st.SearchStrategy[dict[str, Any]]:
    """A dict with the ``required`` keys (mostly) and any subset of the other known keys
    (mostly plausible values, sometimes an edge value or a random tree), now and then an
    unknown key."""
    values = {k: mostly(v, TREE) for k, v in plausible.items()}
    base = st.fixed_dictionaries({}, optional=values)
    if required:
        fixed = {k: v for k, v in values.items() if k in required}
        rest = {k: v for k, v in values.items() if k not in required}
        base = mostly(st.fixed_dictionaries(fixed, optional=rest), base)
    if not extra:
        return base
    unknown = mostly(st.just({}), st.dictionaries(st.text(max_size=6), TREE, max_size=1))
    return st.tuples(base, unknown).map(lambda t: {**t[1], **t[0]})


def mostly(usual: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` about 7 times in 8, else ``rare``."""
    return st.one_of(*[usual] * 7, rare)


def _edge_floats(lo: float = 0.0, hi: float = 1e4) -> st.SearchStrategy[float]:
    edge = st.one_of(st.floats(), st.sampled_from([1e16, 1e308, 1e-300, 5e-324, -1.0, 0.0]))
    return mostly(st.floats(lo, hi), edge)


def _edge_ints(lo: int = 0, hi: int = 10) -> st.SearchStrategy[int]:
    return mostly(st.integers(lo, hi), st.integers(-2, 2**70))


def as_text(values: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """A value as a CSV cell would hold it (or, now and then, a hostile token)."""
    return mostly(values.map(lambda v: v if isinstance(v, str) else repr(v)), tokens())


def toml_key(k: Any) -> str:
    """A quoted TOML key (a basic string: JSON's escapes without ASCII-only surrogate pairs)."""
    return json.dumps(str(k), ensure_ascii=False)


def toml_value(v: Any) -> str | None:
    """A TOML literal (None: not representable, the key is left out)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        items = [toml_value(x) for x in v]
        return "[" + ", ".join(x for x in items if x is not None) + "]"
    if isinstance(v, dict):
        pairs = [(toml_key(k), toml_value(x)) for k, x in v.items()]
        return "{" + ", ".join(f"{k} = {x}" for k, x in pairs if x is not None) + "}"
    return json.dumps(str(v))


def toml_text(doc: Mapping[str, Any]) -> str:
    """A document as TOML: top-level values first, then one ``[table]`` per dict value."""
    lines: list[str] = []
    tables: list[tuple[str, dict]] = []
    for k, v in doc.items():
        if isinstance(v, dict):
            tables.append((k, v))
            continue
        lit = toml_value(v)
        if lit is not None:
            lines.append(f"{toml_key(k)} = {lit}")
    for name, table in tables:
        lines.append(f"[{toml_key(name)}]")
        sub: list[tuple[str, dict]] = []
        for k, v in table.items():
            if isinstance(v, dict) and name == "sweep":
                sub.append((k, v))
                continue
            lit = toml_value(v)
            if lit is not None:
                lines.append(f"{toml_key(k)} = {lit}")
        for k, v in sub:
            lines.append(f"[{toml_key(name)}.{toml_key(k)}]")
            for kk, vv in v.items():
                lit = toml_value(vv)
                if lit is not None:
                    lines.append(f"{toml_key(kk)} = {lit}")
    return "\n".join(lines) + "\n"


def json_text(doc: Any) -> str:
    return json.dumps(doc, allow_nan=True, ensure_ascii=False)


def yaml_text(doc: Any) -> str:
    import yaml

    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


def csv_text(header: list[str], rows: list[list[str]], delimiter: str = ",") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# valid example files (small versions of those in test_io, test_traces, test_profiles, ...)
# --------------------------------------------------------------------------------------------

WORKLOAD_CSV = (
    "job_id,arrival,num_gpus,iterations,model,size_mb,memory_mb,batch_size,t_forward,t_backward\n"
    "1,0,2,200,resnet50,,,,,\n"
    "2,1.5,4,100,vgg16,,8000,,,\n"
    "3,2.5,1,300,bert,1300,9000,8,0.1,0.2\n"
)
WORKLOAD_SHORT = "job_id,arrival,num_gpus,iterations,model\n1,0,2,200,resnet50\n2,1,4,100,vgg16\n"
WORKLOAD_JSON = (
    '{"jobs": [\n'
    '  {"job_id": 1, "arrival": 0, "num_gpus": 2, "iterations": 200, "model": "resnet50"},\n'
    '  {"job_id": 2, "arrival": 1.5, "num_gpus": 4, "iterations": 100, "model": "vgg16",'
    ' "memory_mb": 8000},\n'
    '  {"job_id": 3, "arrival": 2.5, "num_gpus": 1, "iterations": 300, "model": "bert",'
    ' "size_mb": 1300, "memory_mb": 9000, "batch_size": 8, "t_forward": 0.1, "t_backward": 0.2}\n'
    "]}\n"
)
WORKLOAD_JSON_LIST = (
    '[{"job_id": 0, "arrival": 3, "num_gpus": 1, "iterations": 10, "model": "lstm-ptb"},\n'
    ' {"job_id": 1, "arrival": 0, "num_gpus": 8, "iterations": 5, "model": "inception3"}]\n'
)
POLLUX_CSV = (
    "name,time,application,num_replicas,batch_size\n"
    "cifar10-0,0,cifar10,1,128\n"
    "bert-1,30.5,bert,4,12\n"
    "ncf-2,60,ncf,2,1024\n"
)
CLUSTER_TOML = """name = "mine"

[defaults]
gpu_memory_mb = 16384
network_bandwidth_gbps = 10.0

[[servers]]
num_gpus = 4
count = 2

[[servers]]
num_gpus = 8
gpu_type = "A100"
gpu_memory_mb = 40960.0
intra_bandwidth_gbps = 300
"""
CLUSTER_YAML = """name: mine
defaults: {gpu_memory_mb: 16384, network_bandwidth_gbps: 10}
servers:
  - &big
    num_gpus: 8
    gpu_type: A100
    gpu_memory_mb: 40960
  - num_gpus: 4
    count: 2
  - *big
"""
CLUSTER_JSON = (
    '{"name": "mine", "defaults": {"gpu_memory_mb": 16384},\n'
    ' "servers": [{"num_gpus": 4, "count": 2},\n'
    '             {"num_gpus": 8, "gpu_type": "A100", "network_bandwidth_gbps": 25.0}]}\n'
)
PHILLY_TEXT = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:00:10,100.0,1,100.0,aa
2017-10-09 07:00:00,50.0,4,200.0,bb
2017-10-10 07:00:00+02:00,3600.0,2,7200.0,aa
"""
GAVEL_TEXT = (
    "ResNet-50 (batch size 32)\tpython main.py\t/w\t--steps\t1\t1000\t1\t1.0\t-1\t0.0\n"
    "LM (batch size 20)\tpython lm.py\t/w\t--steps\t0\t3000\t16\t1.0\t-1\t30.5\n"
    "A3C\tpython a3c.py\t/w\t--steps\t0\t500\t2\t1.0\t-1\t10\n"
)
GAVEL_PHILLY_TEXT = (
    "Transformer (batch size 64)\tcd x && python3 train.py\t-step\t1\t2000\t0.000000\t1\n"
    "CycleGAN\tcd y && python3 main.py\t--n_steps\t1\t700\t12.000000\t4\n"
)
TIRESIAS_TEXT = """job_id,num_gpu,submit_time,iterations,model_name,duration,interval
7,1,0,20000,Transformer (batch size 128),3600,10
8,2,10,500,CycleGAN,120,0
"""
GENERIC_TEXT = """# a small trace in the generic schema
arrival,num_gpus,duration,iterations,model,application,batch_size,name,user,queue
30,2,,1000,resnet50,,,r,alice,q1
0,1,600.5,,bert-large,,8,b,bob,
10,4,,,,cifar10,2048,c,,q2
"""
THROUGHPUTS_JSON = json.dumps(
    {
        "v100": {
            "('ResNet-50 (batch size 32)', 1)": {"null": 10.0},
            "('LM (batch size 20)', 1)": {"null": 2.0},
            "('LM (batch size 20)', 8)": {"null": 12.0},
            "('A3C', 1)": {"null": 5.0, "('A3C', 1)": [2.5, 2.5]},
        },
        "k80": {"('A3C', 1)": {"null": 1.0}},
    },
    indent=1,
)
PROFILE_FILES = {
    "placements.csv": "placement,local_bsz,step_time,sync_time\n"
    "1,4,1.0,0.0\n1,8,2.0,0.0\n2,4,1.5,0.5\n2,8,2.5,0.5\n11,4,2.0,1.0\n11,8,3.0,1.0\n",
    "scalability.csv": "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
    "6,6,4,4.0,3.0\n6,6,8,5.0,3.0\n6,12,4,5.0,4.0\n6,12,8,6.0,4.0\n",
    "validation-8.csv": "progress,iteration,metric,grad_sqr,grad_var\n"
    "10,10,0,1.0,3.0\n20,20,0,1.0,3.0\n30,30,0,1.0,3.0\n",
    "validation-32.csv": "progress,iteration,metric,grad_sqr,grad_var\n"
    "11,3,0,3.0,7.0\n19,6,0,3.0,7.0\n33,9,0,3.0,7.0\n",
}
PAIR_INTERFERENCE = "app,other,xi\ncifar10,bert,1.5\nbert,cifar10,2\n"
CONFIG_TOML = """# a small experiment
cluster = "tiny"
workload = "jobs.csv"
policy = "ada-srsf"
placement = "ff"
seed = 1
trace_start = 0.0
load_scale = 2.0
max_gpus = 8

[settings]
granularity = "iteration"
iterations_per_task = 10
restart_delay = 0.5
shortcuts = true
"""
SWEEP_TOML = """cluster = "tiny"
workload = "jobs.csv"

[settings]
iterations_per_task = 10

[sweep]
policies = ["ada-srsf", "srsf1"]
seeds = 2

[sweep.grid]
placement = ["ff", "rand"]
iterations_per_task = [10, 20]
"""


def _config_record() -> str:
    """A recorded ``config.json`` as ``ddlsched run`` writes it (every setting, resolved)."""
    cfg = RunConfig(
        cluster="tiny",
        workload="jobs.csv",
        policy="ada-srsf",
        placement="ff",
        seed=1,
        trace_start=0.0,
        load_scale=2.0,
        max_gpus=8,
    )
    return json.dumps(cfg.record(), indent=2, sort_keys=True) + "\n"


CONFIG_JSON = _config_record()

# --------------------------------------------------------------------------------------------
# (a) edits of valid files, and (b) structured documents, reader by reader
# --------------------------------------------------------------------------------------------


def _read(reader: str, name: str, data: bytes | str, call: Callable[[Path], Any], check) -> None:
    path = FILES.write(name, data)
    contract(reader, lambda: call(path), check, {name: data})


# ---- workload CSV / JSON / Pollux CSV (src/ddlsched/workloads/io.py, pollux.py)

_JOB_PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "job_id": _edge_ints(0, 5),
    "arrival": _edge_floats(0.0, 100.0),
    "num_gpus": _edge_ints(1, 8),
    "iterations": _edge_ints(1, 1000),
    "model": st.sampled_from(["resnet50", "vgg16", "bert", "lstm-ptb", "mine", ""]),
    "size_mb": _edge_floats(),
    "memory_mb": _edge_floats(),
    "batch_size": _edge_ints(1, 64),
    "t_forward": _edge_floats(0.0, 1.0),
    "t_backward": _edge_floats(0.0, 1.0),
}


@fuzz(150)
@given(
    data=st.one_of(file_bytes(WORKLOAD_CSV), file_bytes(WORKLOAD_SHORT)),
    suffix=st.sampled_from([".csv", ".txt"]),
)
def test_workload_csv_edits(data: bytes, suffix: str) -> None:
    _read("workload-csv", "w" + suffix, data, read_workload, check_workload)


@fuzz(100)
@given(data=st.data(), nrows=st.integers(0, 4))
def test_workload_csv_documents(data: st.DataObject, nrows: int) -> None:
    k = data.draw(mostly(st.integers(5, len(ALL_COLUMNS)), st.integers(1, len(ALL_COLUMNS))))
    header = data.draw(st.permutations(ALL_COLUMNS[:k]))
    header += data.draw(mostly(st.just([]), st.lists(st.text(max_size=4), max_size=1)))
    cell = {c: as_text(_JOB_PLAUSIBLE.get(c, TREE)) for c in header}
    rows = [[data.draw(cell[c]) for c in header] for _ in range(nrows)]
    _read("workload-csv", "w.csv", csv_text(header, rows), read_workload, check_workload)


@fuzz(150)
@given(data=st.one_of(file_bytes(WORKLOAD_JSON), file_bytes(WORKLOAD_JSON_LIST)))
def test_workload_json_edits(data: bytes) -> None:
    _read("workload-json", "w.json", data, read_workload, check_workload)


@fuzz(100)
@given(
    jobs=st.lists(document(_JOB_PLAUSIBLE, required=ALL_COLUMNS[:5]), min_size=0, max_size=4),
    wrap=st.sampled_from(["list", "object", "tree"]),
    tree=TREE,
)
def test_workload_json_documents(jobs: list[dict], wrap: str, tree: Any) -> None:
    doc = jobs if wrap == "list" else {"jobs": jobs} if wrap == "object" else tree
    _read("workload-json", "w.json", json_text(doc), read_workload, check_workload)


@fuzz(100)
@given(data=file_bytes(POLLUX_CSV))
def test_pollux_workload_edits(data: bytes) -> None:
    _read("workload-pollux", "w.csv", data, read_workload, check_workload)


# ---- cluster TOML / YAML / JSON (src/ddlsched/core/cluster_io.py)

_SERVER: dict[str, st.SearchStrategy[Any]] = {
    "num_gpus": _edge_ints(1, 8),
    "count": _edge_ints(1, 4),
    "gpu_memory_mb": _edge_floats(1.0, 1e5),
    "intra_bandwidth_gbps": _edge_floats(1.0, 1e3),
    "network_bandwidth_gbps": _edge_floats(1.0, 1e3),
    "gpu_type": mostly(st.sampled_from(["V100", "A100"]), st.sampled_from(["", " ", "\x00"])),
}
_CLUSTER = document(
    {
        "name": mostly(st.sampled_from(["mine", "a b"]), st.sampled_from(["", " ", "\x00"])),
        "defaults": document({k: v for k, v in _SERVER.items() if k != "count"}),
        "servers": mostly(
            st.lists(document(_SERVER, required=("num_gpus",)), min_size=1, max_size=3),
            st.lists(TREE, max_size=2),
        ),
    },
    required=("servers",),
)


@fuzz(100)
@given(data=file_bytes(CLUSTER_TOML))
def test_cluster_toml_edits(data: bytes) -> None:
    _read("cluster-toml", "c.toml", data, read_cluster, check_cluster)


@fuzz(100)
@given(data=file_bytes(CLUSTER_YAML))
def test_cluster_yaml_edits(data: bytes) -> None:
    _read("cluster-yaml", "c.yaml", data, read_cluster, check_cluster)


@fuzz(100)
@given(data=file_bytes(CLUSTER_JSON))
def test_cluster_json_edits(data: bytes) -> None:
    _read("cluster-json", "c.json", data, read_cluster, check_cluster)


@fuzz(120)
@given(doc=_CLUSTER, fmt=st.sampled_from(["toml", "yaml", "json"]))
def test_cluster_documents(doc: dict, fmt: str) -> None:
    text = {"toml": toml_cluster, "yaml": yaml_text, "json": json_text}[fmt](doc)
    _read(f"cluster-{fmt}", f"c.{fmt}", text, read_cluster, check_cluster)


def toml_cluster(doc: Mapping[str, Any]) -> str:
    """TOML with ``[[servers]]`` arrays of tables where ``servers`` is a list of tables."""
    servers = doc.get("servers")
    if isinstance(servers, list) and all(isinstance(s, dict) for s in servers) and servers:
        head = toml_text({k: v for k, v in doc.items() if k != "servers"})
        body = "".join("\n[[servers]]\n" + toml_text(s) for s in servers)
        return head + body
    return toml_text(doc)


# ---- job traces (traces.py, trace_generic.py, trace_formats.py, philly.py)

_TRACES: dict[str, tuple[str, str, str]] = {
    # reader: (format, file name, valid text)
    "trace-generic-csv": ("generic", "t.csv", GENERIC_TEXT),
    "trace-philly": ("philly", "p.csv", PHILLY_TEXT),
    "trace-gavel": ("gavel", "g.trace", GAVEL_TEXT),
    "trace-gavel-philly": ("gavel-philly", "vc.trace", GAVEL_PHILLY_TEXT),
    "trace-tiresias": ("tiresias", "t.csv", TIRESIAS_TEXT),
    "trace-pollux": ("pollux", "w.csv", POLLUX_CSV),
}


@fuzz(150)
@given(data=st.data(), reader=st.sampled_from(sorted(_TRACES)))
def test_trace_edits(data: st.DataObject, reader: str) -> None:
    fmt, name, text = _TRACES[reader]
    raw = data.draw(file_bytes(text))
    _read(reader, name, raw, lambda p: read_trace(p, fmt), check_jobs)


@fuzz(120)
@given(data=st.data(), reader=st.sampled_from(sorted(_TRACES)))
def test_trace_detected_edits(data: st.DataObject, reader: str) -> None:
    """The format detected from the edited file (``--workload FILE`` without a format)."""
    _, name, text = _TRACES[reader]
    raw = data.draw(file_bytes(text))
    _read("trace-detect", name, raw, read_trace, check_jobs)


#: format → (required columns first, then optional ones)
_TRACE_COLUMNS: dict[str, tuple[str, ...]] = {
    "generic": GENERIC_COLUMNS,
    "philly": ("timestamp", "duration", "num_gpus", "gpu_time", "cluster"),
    "tiresias": ("num_gpu", "submit_time", "duration", "job_id", "iterations", "model_name"),
    "gavel": GAVEL_COLUMNS,
    "gavel-philly": GAVEL_PHILLY_COLUMNS,
}
_TRACE_REQUIRED = {"generic": 3, "philly": 4, "tiresias": 3}
_COUNT = as_text(st.integers(1, 16))
_SECONDS = as_text(st.one_of(st.integers(1, 10**5), st.floats(0.5, 1e5)))
_NAME = as_text(st.sampled_from(["resnet50", "cifar10", "A3C", "LM (batch size 20)", "x"]))
#: column → cell strategy (others: a name)
_TRACE_CELL = {
    **dict.fromkeys(("num_gpus", "num_gpu", "iterations", "batch_size"), _COUNT),
    **dict.fromkeys(("total_steps", "scale_factor", "priority_weight"), _COUNT),
    **dict.fromkeys(("arrival", "duration", "gpu_time", "submit_time", "arrival_time"), _SECONDS),
    "timestamp": as_text(st.datetimes().map(str) | st.sampled_from(["2017-10-09T07:00:00Z"])),
}


@fuzz(150)
@given(
    data=st.data(),
    fmt=st.sampled_from(["generic", "philly", "tiresias", "gavel", "gavel-philly"]),
    nrows=st.integers(0, 4),
)
def test_trace_documents(data: st.DataObject, fmt: str, nrows: int) -> None:
    cols = list(_TRACE_COLUMNS[fmt])
    if fmt.startswith("gavel"):
        header = cols
    else:  # the required columns and some optional ones, in any order (now and then fewer)
        k = data.draw(mostly(st.just(_TRACE_REQUIRED[fmt]), st.integers(1, len(cols))))
        k = data.draw(st.integers(k, len(cols)))
        header = data.draw(st.permutations(cols[:k]))
    rows = [[data.draw(_TRACE_CELL.get(c, _NAME)) for c in header] for _ in range(nrows)]
    if fmt.startswith("gavel"):
        text = "".join("\t".join(r) + "\n" for r in rows)
    else:
        text = csv_text(header, rows)
    _read(
        f"trace-{fmt}",
        "t.trace" if fmt.startswith("gavel") else "t.csv",
        text,
        lambda p: read_trace(p, fmt),
        check_jobs,
    )


@fuzz(60)
@given(trace=file_bytes(GAVEL_TEXT), thr=file_bytes(THROUGHPUTS_JSON))
def test_gavel_with_throughputs_edits(trace: bytes, thr: bytes) -> None:
    d = FILES.dir()
    t = FILES.write("thr.json", thr, d)
    p = FILES.write("g.trace", trace, d)
    contract(
        "gavel-throughputs",
        lambda: read_trace(p, "gavel", throughputs=t),
        check_jobs,
        {"g.trace": trace, "thr.json": thr},
    )


@fuzz(60)
@given(
    doc=mostly(
        st.dictionaries(
            mostly(st.sampled_from(["v100", "k80"]), st.just("")),
            mostly(
                st.dictionaries(
                    mostly(
                        st.integers(1, 4).map(lambda k: f"('A3C', {k})"),
                        st.sampled_from(["('A3C', 0)", "('A3C', -1)", "('A3C', 1e3)", "x"]),
                    ),
                    mostly(st.fixed_dictionaries({"null": _edge_floats(0.5, 100.0)}), TREE),
                    min_size=1,
                    max_size=3,
                ),
                TREE,
            ),
            min_size=1,
            max_size=2,
        ),
        TREE,
    ),
    gpu=st.sampled_from(["v100", "k80"]),
)
def test_gavel_throughputs_documents(doc: Any, gpu: str) -> None:
    d = FILES.dir()
    t = FILES.write("thr.json", json_text(doc), d)
    p = FILES.write("g.trace", "A3C\tpython a3c.py\t/w\t--steps\t0\t500\t2\t1.0\t-1\t10\n", d)

    def call() -> Any:
        gavel_throughputs(t, gpu)
        return read_trace(p, "gavel", throughputs=t, gpu_type=gpu)

    contract("gavel-throughputs", call, check_jobs, {"thr.json": json_text(doc)})


# ---- generic Parquet

_PARQUET_BASE: bytes | None = None


def _parquet_base() -> bytes:
    global _PARQUET_BASE
    if _PARQUET_BASE is None:
        p = FILES.dir() / "base.parquet"
        write_trace(read_trace(FILES.write("g.csv", GENERIC_TEXT)), p)
        _PARQUET_BASE = p.read_bytes()
    return _PARQUET_BASE


@fuzz(60)
@given(data=st.data())
def test_parquet_byte_edits(data: st.DataObject) -> None:
    raw = bytearray(_parquet_base())
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "dup", "zero"]))
        i = data.draw(st.integers(0, len(raw) - 1))
        if op == "flip":
            raw[i] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "cut":
            del raw[i : i + data.draw(st.integers(1, 64))]
        elif op == "dup":
            raw[i:i] = raw[i : i + data.draw(st.integers(1, 64))]
        else:
            raw[i : i + 8] = b"\xff" * 8
        if not raw:
            raw = bytearray(b"PAR1")
    _read("trace-generic-parquet", "t.parquet", bytes(raw), lambda p: read_trace(p), check_jobs)


def test_parquet_column_name_not_utf8_is_one_line() -> None:
    """A byte flip that the fuzzing above found in CI (2026-11-25): a column name in the file's
    schema that is not UTF-8 made pyarrow raise UnicodeDecodeError from ``column_names``."""
    raw = _parquet_base()
    assert raw.count(b"queue") >= 1
    path = FILES.write("badname.parquet", raw.replace(b"queue", b"q\xf2eue"))
    with pytest.raises(InputError, match="cannot read Parquet file") as e:
        read_trace(path)
    assert "\n" not in str(e.value)


_ARROW_KINDS = ("int", "float", "str", "bool", "null", "bytes", "list", "time", "big")


@st.composite
def arrow_table(draw: Any) -> tuple[list[str], list[str], list[list[Any]]]:
    """(columns, kinds, values) of a random table with the generic schema's columns."""
    extra = mostly(st.sampled_from(GENERIC_COLUMNS[3:]), st.just("extra"))
    optional = draw(st.lists(extra, unique=True, max_size=4))
    cols = draw(
        st.permutations(
            draw(
                mostly(
                    st.just(["arrival", "num_gpus", "duration"]),
                    st.lists(st.sampled_from(GENERIC_COLUMNS)),
                )
            )
            + optional
        )
    )
    cols = list(dict.fromkeys(cols))
    if not cols:
        cols = ["arrival"]
    n = draw(st.integers(0, 3))
    kinds, values = [], []
    for col in cols:
        numeric = ("batch_size", "restart_delay", "stop_delay")
        usual = "str" if col in GENERIC_COLUMNS[4:] and col not in numeric else "num"
        kind = draw(mostly(st.just(usual), st.sampled_from(_ARROW_KINDS)))
        elem = {
            "num": mostly(st.integers(1, 1000), st.floats(0.5, 1e4)),
            "int": st.integers(-(2**63), 2**63 - 1),
            "float": st.floats(),
            "str": mostly(st.sampled_from(["resnet50", "cifar10", "x"]), tokens()),
            "bool": st.booleans(),
            "null": st.none(),
            "bytes": st.binary(max_size=6),
            "list": st.lists(st.integers(0, 9), max_size=2),
            "time": st.datetimes(),
            "big": st.integers(-(2**63), 2**63 - 1),
        }[kind]
        kinds.append(kind)
        values.append(
            draw(
                st.lists(
                    mostly(elem, st.none()) if kind != "null" else elem, min_size=n, max_size=n
                )
            )
        )
    return cols, kinds, values


@fuzz(60)
@given(table=arrow_table())
def test_parquet_documents(table: tuple[list[str], list[str], list[list[Any]]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols, kinds, values = table
    types = {"big": pa.decimal128(38, 0), "time": pa.timestamp("us")}
    arrays = []
    for kind, vals in zip(kinds, values, strict=True):
        if kind == "num":
            kind = "float" if any(isinstance(v, float) for v in vals) else "int"
            vals = [float(v) if kind == "float" and v is not None else v for v in vals]
        if kind == "big":
            import decimal

            vals = [None if v is None else decimal.Decimal(v) for v in vals]
        arrays.append(pa.array(vals, type=types.get(kind)))
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=cols), buf)
    data = buf.getvalue()
    _read("trace-generic-parquet", "t.parquet", data, lambda p: read_trace(p), check_jobs)


# ---- trace filters (--trace-start/--trace-end/--max-gpus/--sample/--load-scale)

_FILTER_JOBS = read_trace(FILES.write("t.csv", TIRESIAS_TEXT), "tiresias")


@fuzz(100)
@given(
    start=st.one_of(st.none(), st.floats()),
    end=st.one_of(st.none(), st.floats()),
    max_gpus=st.one_of(st.none(), st.integers(-2, 10)),
    sample=st.one_of(st.none(), st.integers(-2, 10)),
    load_scale=st.one_of(st.none(), st.floats(), st.sampled_from([1e-300, 5e-324, 1e-17, 1e300])),
)
def test_trace_filters(start, end, max_gpus, sample, load_scale) -> None:
    contract(
        "trace-filters",
        lambda: filter_jobs(
            _FILTER_JOBS,
            start=start,
            end=end,
            max_gpus=max_gpus,
            sample=sample,
            load_scale=load_scale,
        ),
        check_jobs,
        {"options": f"{start=} {end=} {max_gpus=} {sample=} {load_scale=}"},
    )


# ---- application profiles (src/ddlsched/perf/profiles.py)


@fuzz(100)
@given(data=st.data(), which=st.sampled_from(sorted(PROFILE_FILES)))
def test_profile_edits(data: st.DataObject, which: str) -> None:
    raw = data.draw(file_bytes(PROFILE_FILES[which]))
    d = FILES.dir() / "toy"
    d.mkdir()
    for name, text in PROFILE_FILES.items():
        FILES.write(name, raw if name == which else text, d)
    contract("profiles", lambda: load_application(d), check_application, {which: raw})


@fuzz(60)
@given(data=file_bytes(PAIR_INTERFERENCE))
def test_pair_interference_edits(data: bytes) -> None:
    _read(
        "pair-interference",
        "xi.csv",
        data,
        lambda p: read_pair_interference(str(p)),
        check_interference,
    )


# ---- config files and recorded config.json (src/ddlsched/config.py)


def _setting_strategy(f: Any) -> st.SearchStrategy[Any]:
    d = f.default
    if isinstance(d, bool):
        return st.booleans()
    if isinstance(d, int):
        return st.one_of(st.integers(-2, 100), st.integers())
    if isinstance(d, float):
        return st.one_of(st.floats(0.0, 1e4), st.floats(), st.just(d))
    return st.one_of(st.just(d), st.sampled_from(["job", "rar", "rounds", "1,10", "x"]))


_SETTINGS_DOC = document({f.name: _setting_strategy(f) for f in fields(Settings)})
_RUN_PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "cluster": st.sampled_from(["tiny", "wang20", "nope"]),
    "workload": st.sampled_from(["jobs.csv", "missing.csv"]),
    "policy": st.sampled_from(["ada-srsf", "srsf1", "fifo"]),
    "placement": st.sampled_from(["ff", "rand", None]),
    "seed": _edge_ints(-2, 5),
    "trace_start": st.one_of(st.none(), _edge_floats()),
    "trace_end": st.one_of(st.none(), _edge_floats()),
    "max_gpus": st.one_of(st.none(), _edge_ints(-1, 8)),
    "sample": st.one_of(st.none(), _edge_ints(-1, 8)),
    "load_scale": st.one_of(st.none(), _edge_floats(0.0, 10.0)),
    "quiet": st.booleans(),
    "version": st.sampled_from(["0.1.0", "9"]),
}
_CONFIG_DOC = st.tuples(document(_RUN_PLAUSIBLE), st.one_of(st.none(), _SETTINGS_DOC)).map(
    lambda t: {**t[0], **({} if t[1] is None else {"settings": t[1]})}
)


def _config_dir() -> Path:
    d = FILES.dir()
    (d / "jobs.csv").write_text(WORKLOAD_SHORT)
    return d


@fuzz(120)
@given(data=st.data(), fmt=st.sampled_from(["toml", "json"]))
def test_config_edits(data: st.DataObject, fmt: str) -> None:
    raw = data.draw(file_bytes(CONFIG_TOML if fmt == "toml" else CONFIG_JSON))
    p = FILES.write(f"c.{fmt}", raw, _config_dir())
    contract(f"config-{fmt}", lambda: load_run_config(p), check_run_config, {p.name: raw})


@fuzz(120)
@given(doc=_CONFIG_DOC, fmt=st.sampled_from(["toml", "json"]))
def test_config_documents(doc: dict, fmt: str) -> None:
    text = toml_text(doc) if fmt == "toml" else json_text(doc)
    p = FILES.write(f"c.{fmt}", text, _config_dir())
    contract(f"config-{fmt}", lambda: load_run_config(p), check_run_config, {p.name: text})


# ---- sweep files (src/ddlsched/sweep.py load_sweep); no big integers: a count of seeds that
# large is the bounded subprocess case below (test_hostile_input_is_bounded)

_SWEEP_TOKENS = tokens(SWEEP_SAFE, big_numbers=False)
_SWEEP_GRID = {
    "placement": st.sampled_from(["ff", "rand", "ls"]),
    "xi2": _edge_floats(0.0, 1.0),
    "kappa": _edge_ints(1, 4),
    "horizon": _edge_floats(1.0, 1e4),
    "load_scale": _edge_floats(0.1, 10.0),
    "cluster": st.sampled_from(["tiny", "wang20"]),
}
_SWEEP_TABLE = document(
    {
        "policies": mostly(
            st.lists(st.sampled_from(["ada-srsf", "srsf1"]), min_size=1, max_size=2, unique=True),
            st.lists(st.sampled_from(["ada-srsf", "fifo", "", "x"]), max_size=3),
        ),
        "seeds": mostly(
            st.one_of(st.integers(1, 3), st.lists(st.integers(0, 10), min_size=1, max_size=3)),
            st.one_of(st.integers(-2, 0), st.lists(st.integers(-2, 10), max_size=3)),
        ),
        "grid": st.dictionaries(
            st.sampled_from(list(_SWEEP_GRID)),
            st.sampled_from(list(_SWEEP_GRID)).flatmap(
                lambda k: mostly(
                    st.lists(_SWEEP_GRID[k], min_size=1, max_size=3, unique=True),
                    st.lists(st.one_of(st.floats(), st.integers(-1, 5), st.just("ff")), max_size=3),
                )
            ),
            max_size=2,
        ),
        "out": st.sampled_from(["out", ""]),
        "workers": mostly(st.integers(1, 4), st.integers(-1, 0)),
        "ray_address": st.sampled_from(["local", "auto"]),
    },
    required=("policies",),
)
_SWEEP_DOC = st.tuples(
    document(
        {k: v for k, v in _RUN_PLAUSIBLE.items() if k not in ("seed", "policy")},
        required=("cluster", "workload"),
    ),
    _SWEEP_TABLE,
).map(lambda t: {**t[0], "sweep": t[1]})


@fuzz(100)
@given(data=file_bytes(SWEEP_TOML, _SWEEP_TOKENS))
def test_sweep_edits(data: bytes) -> None:
    p = FILES.write("s.toml", data, _config_dir())
    contract("sweep", lambda: load_sweep(p), check_sweep, {"s.toml": data})


@fuzz(100)
@given(doc=_SWEEP_DOC)
def test_sweep_documents(doc: dict) -> None:
    text = toml_text(doc)
    p = FILES.write("s.toml", text, _config_dir())
    contract("sweep", lambda: load_sweep(p), check_sweep, {"s.toml": text})


# ---- preset names (--cluster NAME, --workload NAME): yu22-N, luo24-N and the others

_PRESET_NAMES = ("tiny", "wang20", "wang20-32gb", "philly", "yu22", "luo24", "luo24-physical")


def _too_big_to_generate(spec: str) -> bool:
    """``luo24-N`` with N beyond a few thousand jobs takes minutes in-process (the bounded
    subprocess case covers it)."""
    m = re.match(r"^luo24-(\d+)$", spec.lower())
    return m is not None and 4 <= len(m.group(1)) < 255


@fuzz(150)
@given(
    spec=st.one_of(
        st.sampled_from(_PRESET_NAMES),
        st.tuples(st.sampled_from(["yu22-", "luo24-", "YU22-", "tiny"]), tokens()).map("".join),
        st.sampled_from(_PRESET_NAMES).flatmap(mutated),
        tokens(),
    ),
    which=st.sampled_from(["cluster", "workload"]),
)
def test_preset_names(spec: str, which: str) -> None:
    from hypothesis import assume

    assume(not _too_big_to_generate(spec))
    call = (lambda: load_cluster(spec)) if which == "cluster" else (lambda: load_workload(spec))
    check = check_cluster if which == "cluster" else check_jobs
    cwd = os.getcwd()
    os.chdir(FILES.dir())  # an empty folder: names are presets, not files of the repository
    try:
        contract(f"preset-{which}", call, check, {which: spec})
    finally:
        os.chdir(cwd)


# ---- strictness: text that is never a number is refused in every numeric cell of every
# text reader (one number parser for all readers; issue #11 §4 "Lenient parsing")

#: never a valid number, in any numeric field of any reader (``1_000`` and other digits than
#: 0-9 included: Python's ``float``/``int`` accept them, a careful user's tools do not)
NEVER_A_NUMBER = (
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1e400",
    "-1e400",
    "1_000",
    "1_0.5",
    "1e1_0",
    "٣",
    "١٢",
    "١.٥",
    "۴",
    "４",
    "²",
    "0x10",
    "abc",
    "1\x002",
    "\x00",
    "1 2",
    "--1",
    "1e",
    ".",
)


def _profile_reader(which: str) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        for name, text in PROFILE_FILES.items():
            if name != which:
                (path.parent / name).write_text(text)
        return load_application(path.parent)

    return call


#: reader → (file name, valid text, delimiter, columns of a headerless file, numeric columns,
#: call)
TEXT_READERS: dict[str, tuple[str, str, str, tuple[str, ...] | None, tuple[str, ...], Any]] = {
    "workload-csv": (
        "w.csv",
        WORKLOAD_CSV,
        ",",
        None,
        ALL_COLUMNS[:4] + ALL_COLUMNS[5:],
        read_workload,
    ),
    "workload-pollux": (
        "w.csv",
        POLLUX_CSV,
        ",",
        None,
        ("time", "num_replicas", "batch_size"),
        read_workload,
    ),
    "trace-generic-csv": (
        "t.csv",
        GENERIC_TEXT,
        ",",
        None,
        ("arrival", "num_gpus", "duration", "iterations", "batch_size"),
        lambda p: read_trace(p, "generic"),
    ),
    "trace-philly": (
        "p.csv",
        PHILLY_TEXT,
        ",",
        None,
        ("duration", "num_gpus", "gpu_time"),
        lambda p: read_trace(p, "philly"),
    ),
    "trace-tiresias": (
        "t.csv",
        TIRESIAS_TEXT,
        ",",
        None,
        ("num_gpu", "submit_time", "iterations", "duration"),
        lambda p: read_trace(p, "tiresias"),
    ),
    "trace-gavel": (
        "g.trace",
        GAVEL_TEXT,
        "\t",
        GAVEL_COLUMNS,
        ("total_steps", "scale_factor", "arrival_time"),
        lambda p: read_trace(p, "gavel"),
    ),
    "trace-gavel-philly": (
        "vc.trace",
        GAVEL_PHILLY_TEXT,
        "\t",
        GAVEL_PHILLY_COLUMNS,
        ("total_steps", "scale_factor", "arrival_time"),
        lambda p: read_trace(p, "gavel-philly"),
    ),
    "profiles-placements": (
        "placements.csv",
        PROFILE_FILES["placements.csv"],
        ",",
        None,
        ("local_bsz", "step_time", "sync_time"),
        _profile_reader("placements.csv"),
    ),
    "profiles-scalability": (
        "scalability.csv",
        PROFILE_FILES["scalability.csv"],
        ",",
        None,
        ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"),
        _profile_reader("scalability.csv"),
    ),
    "profiles-validation": (
        "validation-8.csv",
        PROFILE_FILES["validation-8.csv"],
        ",",
        None,
        ("progress", "grad_sqr", "grad_var"),
        _profile_reader("validation-8.csv"),
    ),
    "pair-interference": (
        "xi.csv",
        PAIR_INTERFERENCE,
        ",",
        None,
        ("xi",),
        lambda p: read_pair_interference(str(p)),
    ),
}
_NUMERIC_SETTINGS = tuple(f.name for f in fields(Settings) if type(f.default) in (int, float)) + (
    "tiresias_thresholds",
)


def must_refuse(reader: str, call: Callable[[], Any], inputs: Mapping[str, Any], what: str) -> None:
    """``call`` must raise a one-line InputError (the value is never valid)."""
    try:
        result = contract(reader, call, None, inputs)
    except Exception:
        raise
    if result is None:
        return
    if _LOG:
        _record(reader, "accepted", f"{what} accepted", f"lenient {what.split('=')[0]}", inputs)
        return
    raise AssertionError(f"{reader}: {what!r} accepted: {result!r}"[:400])


@fuzz(300)
@given(
    data=st.data(),
    reader=st.sampled_from(sorted(TEXT_READERS) + ["--set"]),
    token=st.sampled_from(NEVER_A_NUMBER),
)
def test_never_a_number_is_refused(data: st.DataObject, reader: str, token: str) -> None:
    if reader == "--set":
        key = data.draw(st.sampled_from(_NUMERIC_SETTINGS))
        must_refuse(
            "--set",
            lambda: Settings.from_mapping({key: token}),
            {"--set": f"{key}={token}"},
            f"{key}={token!r}",
        )
        return
    name, text, sep, columns, numeric, call = TEXT_READERS[reader]
    lines = text.split("\n")
    first = 0 if columns else next(i for i, ln in enumerate(lines) if not ln.startswith("#"))
    header = list(columns) if columns else lines[first].split(sep)
    rows = [i for i in range(len(lines)) if (columns or i > first) and lines[i].strip()]
    row = data.draw(st.sampled_from(rows))
    col = data.draw(st.sampled_from(numeric))
    cells = lines[row].split(sep)
    cells[header.index(col)] = token
    lines[row] = sep.join(cells)
    edited = "\n".join(lines)
    path = FILES.write(name, edited)
    must_refuse(reader, lambda: call(path), {name: edited}, f"{col}={token!r}")


# ---- --set KEY=VALUE (api.Settings.from_mapping via config.with_overrides and cli._parse_sets)

_SETTING_NAMES = tuple(f.name for f in fields(Settings))


@fuzz(200)
@given(
    items=st.lists(
        st.tuples(
            st.one_of(
                st.sampled_from(_SETTING_NAMES),
                st.sampled_from(_SETTING_NAMES),
                st.text(max_size=6),
            ),
            st.one_of(tokens(), st.sampled_from(["job", "rar", "true", "off", "1,10", "2"])),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_set_values(items: list[tuple[str, str]]) -> None:
    argv = [f"{k}={v}" for k, v in items]

    def call() -> Settings:
        return with_overrides(RunConfig(), {}, _parse_sets(argv)).settings

    contract("--set", call, check_settings, {"--set": repr(argv)})


# --------------------------------------------------------------------------------------------
# fixed cases from the issue: through the CLI in-process (exit 2, one line, nothing written)
# --------------------------------------------------------------------------------------------

TINY_WORKLOAD = "job_id,arrival,num_gpus,iterations,model\n1,0,2,20,resnet50\n2,1,1,10,vgg16\n"


def _cli_rejects(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ddlsched ARGV`` exits 2 with one ``ddlsched: error:`` line and writes nothing."""
    out.parent.mkdir(parents=True, exist_ok=True)
    before = sorted(out.parent.iterdir())
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, f"exit status {rc} (stderr {err!r})"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddlsched: error:"), err
    assert not out.exists(), f"{out} was created"
    assert sorted(out.parent.iterdir()) == before, "files left beside --out"


def _run_argv(d: Path, *, workload: str = "jobs.csv", cluster: str = "tiny", extra=()) -> list:
    """``run`` of ``d/workload`` on ``cluster`` into ``d/outs/out``."""
    out = str(d / "outs" / "out")
    return [
        "run",
        "--cluster",
        cluster,
        "--workload",
        str(d / workload),
        "--policy",
        "ada-srsf",
        "--quiet",
        "--out",
        out,
        *extra,
    ]


def refused(call: Callable[[], Any]) -> InputError:
    """The InputError ``call`` raises (one line); another exception propagates."""
    try:
        result = call()
    except InputError as e:
        assert "\n" not in str(e) and "\r" not in str(e), f"not one line: {str(e)!r}"
        return e
    raise AssertionError(f"accepted: {result!r}"[:300])


NESTED_2000 = "[" * 2000 + "]" * 2000
BIG_INT = "9" * 5000

#: (case id, file name, text) of workload files the issue lists as hostile
WORKLOAD_CASES = [
    ("csv-1_000", "w.csv", TINY_WORKLOAD.replace(",20,", ",1_000,")),
    ("csv-arabic-indic-num_gpus", "w.csv", TINY_WORKLOAD.replace("1,0,2,", "1,0,٢,")),
    ("csv-arabic-indic-arrival", "w.csv", TINY_WORKLOAD.replace("2,1,1,", "2,١,1,")),
    (
        "csv-unterminated-quote",
        "w.csv",
        TINY_WORKLOAD.replace("2,1,1,10,vgg16", '2,1,1,10,"vgg16'),
    ),
    (
        "csv-unterminated-quote-mid",
        "w.csv",
        TINY_WORKLOAD.replace("2,1,1,10,vgg16", '2,1,1,"10,vgg16'),
    ),
    ("csv-nan-arrival", "w.csv", TINY_WORKLOAD.replace("2,1,1,", "2,nan,1,")),
    ("csv-arrival-1e16", "w.csv", TINY_WORKLOAD.replace("2,1,1,", "2,1e16,1,")),
    ("csv-arrival-1e308", "w.csv", TINY_WORKLOAD.replace("2,1,1,", "2,1e308,1,")),
    ("csv-nul-byte", "w.csv", TINY_WORKLOAD.replace("vgg16", "vgg\x0016")),
    (
        "json-num_gpus-string",
        "w.json",
        '[{"job_id": 1, "arrival": 0, "num_gpus": "4", "iterations": 20, "model": "resnet50"}]',
    ),
    (
        "json-duplicate-key",
        "w.json",
        '[{"job_id": 1, "arrival": 0, "num_gpus": 2, "num_gpus": 4, "iterations": 20,'
        ' "model": "resnet50"}]',
    ),
    (
        "json-nan-token",
        "w.json",
        '[{"job_id": 1, "arrival": NaN, "num_gpus": 2, "iterations": 20, "model": "resnet50"}]',
    ),
    (
        "json-arrival-1e308",
        "w.json",
        '[{"job_id": 1, "arrival": 1e308, "num_gpus": 2, "iterations": 20, "model": "resnet50"}]',
    ),
    (
        "json-5000-digit-int",
        "w.json",
        f'[{{"job_id": 1, "arrival": 0, "num_gpus": 2, "iterations": {BIG_INT}, "model": "x"}}]',
    ),
    ("json-nested-2000", "w.json", NESTED_2000),
    ("json-nested-2000-object", "w.json", '{"jobs": ' + NESTED_2000 + "}"),
    (
        "json-arrival-string",
        "w.json",
        '[{"job_id": 1, "arrival": "0", "num_gpus": 2, "iterations": 20, "model": "resnet50"}]',
    ),
    ("csv-iterations-1e40", "w.csv", TINY_WORKLOAD.replace(",20,", ",1" + "0" * 40 + ",")),
    ("csv-iterations-400-digits", "w.csv", TINY_WORKLOAD.replace(",20,", ",9" + "9" * 400 + ",")),
]


@pytest.mark.parametrize(
    ("name", "text"), [c[1:] for c in WORKLOAD_CASES], ids=[c[0] for c in WORKLOAD_CASES]
)
def test_hostile_workload_is_one_line(tmp_path: Path, name: str, text: str, capsys) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    _cli_rejects(_run_argv(tmp_path, workload=name), tmp_path / "outs" / "out", capsys)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--load-scale", "1e-300"),
        ("--seed", "-1"),
        ("--load-scale", "nan"),
        ("--trace-start", "inf"),
    ],
)
def test_hostile_run_option_is_one_line(tmp_path: Path, option: str, value: str, capsys) -> None:
    (tmp_path / "jobs.csv").write_text(TINY_WORKLOAD)
    _cli_rejects(_run_argv(tmp_path, extra=[option, value]), tmp_path / "outs" / "out", capsys)


CLUSTER_CASES = [
    ("yaml-duplicate-key", "c.yaml", "servers:\n  - num_gpus: 4\n    num_gpus: 8\n"),
    ("yaml-duplicate-top-key", "c.yaml", "name: a\nname: b\nservers:\n  - num_gpus: 4\n"),
    ("yaml-self-reference", "c.yaml", "a: &a [*a]\n"),
    ("yaml-self-reference-servers", "c.yaml", "servers: &a [*a]\n"),
    ("yaml-self-reference-map", "c.yaml", "servers:\n  - &s {num_gpus: 4, x: *s}\n"),
    ("yaml-arabic-indic", "c.yaml", "servers:\n  - num_gpus: ٤\n"),
    ("yaml-nan", "c.yaml", "servers:\n  - num_gpus: 4\n    gpu_memory_mb: .nan\n"),
    ("toml-nan", "c.toml", "[[servers]]\nnum_gpus = 4\ngpu_memory_mb = nan\n"),
    ("toml-inf", "c.toml", "[[servers]]\nnum_gpus = 4\nnetwork_bandwidth_gbps = inf\n"),
    ("toml-unterminated-quote", "c.toml", '[[servers]]\nnum_gpus = 4\ngpu_type = "V100\n'),
    ("json-num_gpus-string", "c.json", '{"servers": [{"num_gpus": "4"}]}'),
    ("json-duplicate-key", "c.json", '{"servers": [{"num_gpus": 4, "num_gpus": 8}]}'),
    ("json-nested-2000", "c.json", NESTED_2000),
    ("json-nested-2000-servers", "c.json", '{"servers": ' + NESTED_2000 + "}"),
    ("json-5000-digit-int", "c.json", f'{{"servers": [{{"num_gpus": {BIG_INT}}}]}}'),
    ("yaml-num_gpus-string", "c.yaml", 'servers:\n  - num_gpus: "4"\n'),
    ("yaml-memory-string", "c.yaml", 'servers:\n  - num_gpus: 4\n    gpu_memory_mb: "16384"\n'),
    ("toml-num_gpus-string", "c.toml", '[[servers]]\nnum_gpus = "4"\n'),
    ("toml-memory-string", "c.toml", '[[servers]]\nnum_gpus = 4\ngpu_memory_mb = "16384"\n'),
]


@pytest.mark.parametrize(
    ("name", "text"), [c[1:] for c in CLUSTER_CASES], ids=[c[0] for c in CLUSTER_CASES]
)
def test_hostile_cluster_is_one_line(tmp_path: Path, name: str, text: str, capsys) -> None:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    refused(lambda: read_cluster(p))
    (tmp_path / "jobs.csv").write_text(TINY_WORKLOAD)
    _cli_rejects(_run_argv(tmp_path, cluster=str(p)), tmp_path / "outs" / "out", capsys)


#: the --set keys the issue names, each with NaN and ±inf
NAN_KEYS = (
    "xi2",
    "interference",
    "alpha",
    "rescale_delay",
    "restart_delay",
    "horizon",
    "a",
    "b",
    "eta",
)
SET_CASES = [(k, v) for k in NAN_KEYS for v in ("nan", "inf", "-inf", "NaN", "Infinity")]
SET_CASES += [
    ("kappa", "1_000"),
    ("kappa", "٣"),
    ("iterations_per_task", "１"),
    ("xi2", "1_0"),
    ("interval", "nan"),
    ("u", "inf"),
    ("lam", "inf"),
    ("xi1", "nan"),
    ("reduction_speed", "inf"),
    ("tiresias_thresholds", "nan"),
    ("tiresias_thresholds", "1,inf"),
    ("tiresias_thresholds", "1_0"),
]


@pytest.mark.parametrize(("key", "value"), SET_CASES, ids=[f"{k}={v}" for k, v in SET_CASES])
def test_hostile_set_value_is_refused(key: str, value: str) -> None:
    err = refused(lambda: Settings.from_mapping({key: value}))
    assert key in str(err)


@pytest.mark.parametrize(
    "item", ["xi2=nan", "interference=inf", "horizon=nan", "a=inf", "kappa=1_000"]
)
def test_hostile_set_through_the_cli(tmp_path: Path, item: str, capsys) -> None:
    (tmp_path / "jobs.csv").write_text(TINY_WORKLOAD)
    _cli_rejects(_run_argv(tmp_path, extra=["--set", item]), tmp_path / "outs" / "out", capsys)


CONFIG_CASES = [
    (
        "toml-seed-minus-1",
        "c.toml",
        'cluster = "tiny"\nworkload = "jobs.csv"\npolicy = "ada-srsf"\nseed = -1\n',
    ),
    ("json-seed-minus-1", "config.json", None),  # the recorded config with seed -1
    (
        "toml-settings-nan",
        "c.toml",
        'cluster = "tiny"\nworkload = "jobs.csv"\npolicy = "ada-srsf"\n[settings]\nxi2 = nan\n',
    ),
    (
        "toml-settings-inf",
        "c.toml",
        'cluster = "tiny"\nworkload = "jobs.csv"\n'
        'policy = "ada-srsf"\n[settings]\ninterference = inf\n',
    ),
    (
        "toml-load-scale-tiny",
        "c.toml",
        'cluster = "tiny"\nworkload = "jobs.csv"\npolicy = "ada-srsf"\nload_scale = 1e-300\n',
    ),
    (
        "toml-trace-start-nan",
        "c.toml",
        'cluster = "tiny"\nworkload = "jobs.csv"\npolicy = "ada-srsf"\ntrace_start = nan\n',
    ),
    (
        "toml-seed-string",
        "c.toml",
        'cluster = "tiny"\nworkload = "jobs.csv"\npolicy = "ada-srsf"\nseed = "1"\n',
    ),
    (
        "toml-settings-string",
        "c.toml",
        'cluster = "tiny"\nworkload = "jobs.csv"\npolicy = "ada-srsf"\n[settings]\nkappa = "2"\n',
    ),
    ("json-settings-NaN", "config.json", "NaN"),  # "xi2": NaN in the recorded config
    ("json-nested-2000", "config.json", NESTED_2000),
    ("json-duplicate-key", "config.json", "dup"),
    ("json-5000-digit-int", "config.json", "big"),
]


def _recorded(kind: str) -> str:
    rec = json.loads(CONFIG_JSON)
    rec["workload"] = "jobs.csv"
    if kind == "NaN":
        return json.dumps(rec).replace('"xi2": 0.001', '"xi2": NaN')
    if kind == "dup":
        return json.dumps(rec).replace('"seed": 1', '"seed": 1, "seed": 2')
    if kind == "big":
        return json.dumps(rec).replace('"seed": 1', f'"seed": {BIG_INT}')
    rec["seed"] = -1
    return json.dumps(rec)


@pytest.mark.parametrize(
    ("name", "text"), [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES]
)
def test_hostile_config_is_one_line(tmp_path: Path, name: str, text: str | None, capsys) -> None:
    if text is None or text in ("NaN", "dup", "big"):
        text = _recorded(text or "seed")
    (tmp_path / "jobs.csv").write_text(TINY_WORKLOAD)
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    argv = ["run", "--config", str(p), "--quiet", "--out", str(tmp_path / "outs" / "out")]
    _cli_rejects(argv, tmp_path / "outs" / "out", capsys)


SWEEP_CASES = [
    ("grid-nan", '[sweep]\npolicies = ["ada-srsf"]\n[sweep.grid]\nxi2 = [nan, 0.001]\n'),
    ("grid-inf", '[sweep]\npolicies = ["ada-srsf"]\n[sweep.grid]\nhorizon = [inf]\n'),
    ("grid-alpha-nan", '[sweep]\npolicies = ["ada-srsf"]\n[sweep.grid]\nalpha = [nan]\n'),
    ("settings-nan", '[settings]\nrescale_delay = nan\n[sweep]\npolicies = ["ada-srsf"]\n'),
    ("seed-minus-1", 'seed = -1\n[sweep]\npolicies = ["ada-srsf"]\n'),
    ("seeds-minus-1", '[sweep]\npolicies = ["ada-srsf"]\nseeds = [-1]\n'),
    ("seeds-huge-digits", '[sweep]\npolicies = ["ada-srsf"]\nseeds = ' + "9" * 30 + "\n"),
    ("seeds-string", '[sweep]\npolicies = ["ada-srsf"]\nseeds = "2"\n'),
    (
        "grid-load-scale-tiny",
        '[sweep]\npolicies = ["ada-srsf"]\n[sweep.grid]\nload_scale = [1e-300]\n',
    ),
]


@pytest.mark.parametrize("text", [c[1] for c in SWEEP_CASES], ids=[c[0] for c in SWEEP_CASES])
def test_hostile_sweep_is_one_line(tmp_path: Path, text: str, capsys) -> None:
    (tmp_path / "jobs.csv").write_text(TINY_WORKLOAD)
    p = tmp_path / "s.toml"
    p.write_text('cluster = "tiny"\nworkload = "jobs.csv"\n' + text, encoding="utf-8")
    argv = [
        "sweep",
        "--config",
        str(p),
        "--quiet",
        "--workers",
        "1",
        "--out",
        str(tmp_path / "outs" / "out"),
    ]
    _cli_rejects(argv, tmp_path / "outs" / "out", capsys)


# --------------------------------------------------------------------------------------------
# the failure classes the bulk runs found, one minimal input each (docs/reliability.md ("Fuzzing every reader")):
# each must be a one-line InputError from the reader itself
# --------------------------------------------------------------------------------------------

_ONE_JOB = {"job_id": 1, "arrival": 0, "num_gpus": 1, "iterations": 5, "model": "resnet50"}
_GAVEL_A3C = "A3C\tpython a3c.py\t/w\t--steps\t0\t500\t2\t1.0\t-1\t10\n"
LONG_NAME = "9" * 300  # longer than a file name may be (255 bytes)


def _in_empty_dir(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` run from an empty folder (a name is then a preset, not a repository file)."""

    def run() -> Any:
        cwd = os.getcwd()
        os.chdir(FILES.dir())
        try:
            return call()
        finally:
            os.chdir(cwd)

    return run


def _file(name: str, data: str | bytes, reader: Callable[[Path], Any]) -> Callable[[], Any]:
    return lambda: reader(FILES.write(name, data))


def _gavel_with(throughputs: str) -> Callable[[], Any]:
    def call() -> Any:
        d = FILES.dir()
        thr = FILES.write("thr.json", throughputs, d)
        return read_trace(FILES.write("g.trace", _GAVEL_A3C, d), "gavel", throughputs=thr)

    return call


def _parquet_cut() -> bytes:
    raw = bytearray(_parquet_base())
    del raw[4:20]  # pyarrow's message for this file has newlines
    return bytes(raw)


def _loaded_config(text: str) -> Callable[[], Any]:
    return lambda: load_run_config(FILES.write("c.toml", text, _config_dir()))


FOUND_CASES: dict[str, Callable[[], Any]] = {
    # M1: a key or column holding a newline is named in the message
    "M1-workload-json-field": _file("w.json", json.dumps([{**_ONE_JOB, "a\nb": 1}]), read_workload),
    "M1-workload-json-top-key": _file("w.json", '{"\\r": 1}', read_workload),
    "M1-workload-csv-column": _file(
        "w.csv", '"a\nb",' + TINY_WORKLOAD.replace("\n", ",x\n", 1), read_workload
    ),
    "M1-cluster-yaml-key": _file("c.yaml", 'defaults:\n  "a\\rb": true\n', read_cluster),
    "M1-cluster-toml-key": _file("c.toml", '"\\n" = false\n', read_cluster),
    "M1-cluster-json-key": _file("c.json", '{"a\\nb": 1}', read_cluster),
    "M1-config-key": _loaded_config('"a\\nb" = 1\n'),
    "M1-set-key": lambda: with_overrides(RunConfig(), {}, _parse_sets(["a\nb=1"])),
    "M1-gavel-throughputs-key": _gavel_with('{"v100": {"a\\nb": {"null": 1}}}'),
    # M2: a preset name holding a newline
    "M2-cluster-name": _in_empty_dir(lambda: load_cluster("x\n")),
    "M2-workload-name": _in_empty_dir(lambda: load_workload("x\n")),
    # M3: a corrupt Parquet file
    "M3-parquet-message": lambda: read_trace(FILES.write("t.parquet", _parquet_cut())),
    # E7: integers beyond Python's 4,300-digit limit
    "E7-cluster-toml-int": _file("c.toml", f"[[servers]]\nnum_gpus = {BIG_INT}\n", read_cluster),
    "E7-config-toml-int": _loaded_config(f"seed = {BIG_INT}\n"),
    "E7-throughputs-int": _gavel_with(f'{{"v100": {{"(\'A3C\', 1)": {{"null": {BIG_INT}}}}}}}'),
    "E7-yu22-N": _in_empty_dir(lambda: load_cluster("yu22-" + BIG_INT)),
    # E8: names longer than a file name may be
    "E8-cluster-name": _in_empty_dir(lambda: load_cluster(LONG_NAME)),
    "E8-workload-name": _in_empty_dir(lambda: load_workload(LONG_NAME)),
    "E8-luo24-name": _in_empty_dir(lambda: load_workload("luo24-" + LONG_NAME)),
    # (a config may name a missing file: refused when the run loads it, as here)
    "E8-config-cluster": lambda: load_cluster(
        _loaded_config(f'cluster = "{LONG_NAME}"\n')().cluster
    ),
    "E8-set-profiles": lambda: load_applications(
        with_overrides(RunConfig(), {}, {"profiles": LONG_NAME}).settings.profiles
    ),
    # E9: a cluster YAML key that is not a string
    "E9-yaml-float-key": _file("c.yaml", "0.0: 1\nservers:\n  - num_gpus: 4\n", read_cluster),
    "E9-yaml-null-key": _file("c.yaml", "null: 1\nservers:\n  - num_gpus: 4\n", read_cluster),
    # E10: a pair-interference file that is not UTF-8
    "E10-interference-not-utf8": _file("xi.csv", b"\xb2", lambda p: read_pair_interference(str(p))),
    # E12-E14: Philly and Gavel numbers
    "E12-philly-num_gpus-8e83": _file(
        "p.csv",
        PHILLY_TEXT.replace("100.0,1,100.0", "100.0,8e83,100.0"),
        lambda p: read_trace(p, "philly"),
    ),
    "E13-throughput-400-digits": _gavel_with(
        '{"v100": {"(\'A3C\', 1)": {"null": 1' + "0" * 400 + "}}}"
    ),
    "E14-throughput-scale-0": _gavel_with('{"v100": {"(\'A3C\', 0)": {"null": 0.5}}}'),
    # A1: NaN/inf that the readers keep
    "A1-interference-inf": _file(
        "xi.csv", "app,other,xi\ncifar10,bert,inf\n", lambda p: read_pair_interference(str(p))
    ),
    "A1-config-load-scale-inf": _loaded_config("load_scale = inf\n"),
    "A1-config-trace-start-nan": _loaded_config("trace_start = nan\n"),
    # A2: times beyond 2**53 s
    "A2-tiresias-duration-1e300": _file(
        "t.csv", TIRESIAS_TEXT.replace(",3600,", ",1e300,"), lambda p: read_trace(p, "tiresias")
    ),
    "A2-philly-duration-1e197": _file(
        "p.csv", PHILLY_TEXT.replace("3600.0,2,", "1e197,2,"), lambda p: read_trace(p, "philly")
    ),
    "A2-load-scale-1e-17": lambda: filter_jobs(_FILTER_JOBS, load_scale=1e-17),
    "A2-pollux-time-1e20": _file("w.csv", POLLUX_CSV.replace(",30.5,", ",1e20,"), read_workload),
    # A4: other digits than 0-9 in preset names
    "A4-yu22-arabic-indic": _in_empty_dir(lambda: load_cluster("yu22-٣")),
    "A4-luo24-arabic-indic": _in_empty_dir(lambda: load_workload("luo24-٣")),
    # A5/A6: a quoted number in a YAML cluster; duplicate JSON keys
    "A5-yaml-quoted-memory": _file(
        "c.yaml", 'servers:\n  - num_gpus: 4\n    gpu_memory_mb: "16384"\n', read_cluster
    ),
    "A6-json-duplicate-job-field": _file(
        "w.json",
        '[{"job_id": 1, "job_id": 2, "arrival": 0, "num_gpus": 1, "iterations": 5,'
        ' "model": "resnet50"}]',
        read_workload,
    ),
}


@pytest.mark.parametrize("case", sorted(FOUND_CASES))
def test_found_by_fuzzing_is_one_line(case: str) -> None:
    refused(FOUND_CASES[case])


# --------------------------------------------------------------------------------------------
# bounded cases: a regression must neither hang nor exhaust the machine
# --------------------------------------------------------------------------------------------

#: 10 levels of 10 aliases: 10^10 leaves if expanded
BILLION_LAUGHS = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{n}: &{n} [{','.join(['*' + p] * 10)}]\n"
        for p, n in zip("abcdefghi", "bcdefghij", strict=True)
    )
    + "servers: *j\n"
)
MEMORY_LIMIT = 2 << 30  # bytes of address space for the child
BOUNDED_TIMEOUT = 60  # seconds


def _limited() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _ddlsched(
    args: list[str], cwd: Path, limit_memory: bool = False
) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    try:
        return subprocess.run(
            [sys.executable, "-m", "ddlsched.cli", *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=BOUNDED_TIMEOUT,
            preexec_fn=_limited if limit_memory else None,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"ddlsched {' '.join(args)} ran past {BOUNDED_TIMEOUT} s") from None


def _assert_one_line_exit_2(r: subprocess.CompletedProcess, out: Path) -> None:
    assert "Traceback" not in r.stderr + r.stdout, r.stderr[-2000:]
    assert r.returncode == 2, f"exit status {r.returncode}: {r.stderr[-2000:]!r}"
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddlsched: error:"), r.stderr[-2000:]
    assert not out.exists(), f"{out} was created"
    assert not any(out.parent.iterdir()), f"files left beside {out}"


@pytest.mark.parametrize("case", ["yaml-billion-laughs", "sweep-10^8-seeds", "luo24-10^8-jobs"])
def test_hostile_input_is_bounded(tmp_path: Path, case: str) -> None:
    """Run in a child with a timeout and a 2 GiB address-space limit."""
    (tmp_path / "jobs.csv").write_text(TINY_WORKLOAD)
    out = tmp_path / "outs" / "out"
    out.parent.mkdir()
    if case == "yaml-billion-laughs":
        (tmp_path / "bomb.yaml").write_text(BILLION_LAUGHS)
        args = _run_argv(tmp_path, cluster=str(tmp_path / "bomb.yaml"))
    elif case == "luo24-10^8-jobs":
        args = _run_argv(tmp_path)
        args[args.index("--workload") + 1] = "luo24-100000000"
    else:
        (tmp_path / "s.toml").write_text(
            'cluster = "tiny"\nworkload = "jobs.csv"\n[sweep]\npolicies = ["ada-srsf"]\n'
            "seeds = 100000000\n"
        )
        args = ["sweep", "--config", str(tmp_path / "s.toml"), "--quiet", "--out", str(out)]
    _assert_one_line_exit_2(_ddlsched(args, tmp_path, limit_memory=True), out)


# --------------------------------------------------------------------------------------------
# CLI fuzz: random bad workload files through `ddlsched run` in a subprocess
# --------------------------------------------------------------------------------------------

#: tokens that no numeric workload field may accept
NEVER_A_COUNT = (
    "nan",
    "inf",
    "-inf",
    "1e400",
    "-1",
    "0",
    "4.5",
    "1_000",
    "٣",
    "",
    "abc",
    "\x00",
    "1e16",
    "9" * 5000,
    "0x10",
    "１",
)


@st.composite
def bad_workload(draw: Any) -> tuple[str, bytes]:
    """A workload file that every strict reader must refuse: a count field replaced by a token
    that is not a count, or a broken file (unterminated quote, missing column, bad UTF-8,
    bad JSON)."""
    kind = draw(st.sampled_from(["field", "field", "quote", "columns", "utf8", "json"]))
    lines = TINY_WORKLOAD.splitlines()
    row = draw(st.integers(1, len(lines) - 1))
    cells = lines[row].split(",")
    if kind == "field":
        col = draw(st.sampled_from([2, 3]))  # num_gpus or iterations
        cells[col] = draw(st.sampled_from(NEVER_A_COUNT))
        lines[row] = ",".join(cells)
    elif kind == "quote":
        lines[row] = lines[row].replace(",", ',"', 1)
    elif kind == "columns":
        lines[row] = ",".join(cells[: draw(st.integers(1, len(cells) - 1))])
    elif kind == "json":
        text = draw(mutated(WORKLOAD_JSON_LIST, st.sampled_from(NEVER_A_COUNT)))
        text = text.replace('"num_gpus": 1', '"num_gpus": "1"')  # a string is never a count
        return "w.json", text.encode("utf-8", "surrogatepass")
    raw = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    if kind == "utf8":
        i = draw(st.integers(0, len(raw)))
        raw = raw[:i] + b"\xff" + raw[i:]
    return "w.csv", raw


@settings(
    max_examples=int(os.environ.get("DDLSCHED_FUZZ_CLI_EXAMPLES", "6")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=bad_workload())
def test_cli_bad_workload_is_one_line_and_writes_nothing(case: tuple[str, bytes]) -> None:
    name, raw = case
    d = FILES.dir()
    FILES.write(name, raw, d)
    out = d / "outs" / "out"
    out.parent.mkdir()
    args = _run_argv(d, workload=name)
    _assert_one_line_exit_2(_ddlsched(args, d), out)
