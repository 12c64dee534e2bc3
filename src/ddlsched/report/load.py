"""Read result directories (``ddlsched run --out DIR``, or sweeps holding many) into arrays.

A *run directory* holds ``summary.json`` and ``jobs.csv`` (plus ``segments.csv`` and, from
``ddlsched run``, ``config.json``). Any other directory is searched recursively for run
directories, so a sweep's ``DIR/runs/<hash>/`` layout works as is.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError

_LABEL = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")
# config keys that never distinguish one group of runs from another
_NOT_GROUPING = {"seed", "version", "mode"}


@dataclass(frozen=True)
class GpuTable:
    """GPU labels (``server:gpu``) of one run, sorted by (server, gpu): row ``i`` is ``labels[i]``."""

    labels: tuple[str, ...]
    server: np.ndarray  # server index per row


@dataclass
class RunData:
    """One run: config, summary, per-job arrays and segments (GPUs as CSR rows into ``gpus``)."""

    path: Path
    config: dict
    summary: dict
    arrival: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    jct: np.ndarray
    queueing: np.ndarray
    seg_job: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_ptr: np.ndarray  # segment i uses rows seg_rows[seg_ptr[i]:seg_ptr[i + 1]]
    seg_rows: np.ndarray
    gpus: GpuTable
    num_gpus: int  # cluster size (denominator of utilisation)
    label: str = field(default="")
    #: job ids of the rows of ``arrival`` … ``queueing`` (jobs.csv order)
    job_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: finish-time fairness ρ per job (``fairness.csv``; empty when the run has none)
    rho: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def seed(self) -> int | None:
        seed = self.config.get("seed")
        return seed if isinstance(seed, int) else None


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Run directories named by ``paths`` (each a run directory or a folder holding some)."""
    if not paths:
        raise InputError("no result directory given", field="DIR")
    found: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise InputError("no such directory", source=str(given))
        if not p.is_dir():
            raise InputError("not a directory (expected a result directory)", source=str(given))
        if _is_run_dir(p):
            runs = [p]
        else:
            runs = sorted(
                (s.parent for s in p.rglob("summary.json") if _is_run_dir(s.parent)),
                key=lambda q: q.as_posix(),
            )
        if not runs:
            raise InputError(
                "not a result directory: no summary.json + jobs.csv in it or below it",
                source=str(given),
            )
        for r in runs:
            if r not in found:
                found.append(r)
    return found


def load_runs(paths: Sequence[str | Path]) -> list[RunData]:
    """Every run under ``paths``, labelled by the config values that differ between runs.

    Runs keep the order of the arguments; those found under one argument (a sweep) are sorted
    by label, then seed, then path.
    """
    if not paths:
        find_runs(paths)  # raises: no directory given
    origin: dict[Path, int] = {}
    for i, given in enumerate(paths):
        for r in find_runs([given]):
            origin.setdefault(r, i)
    runs = [load_run(p) for p in origin]
    for run, label in zip(runs, group_labels([r.config for r in runs]), strict=True):
        run.label = label
    runs.sort(
        key=lambda r: (
            origin[r.path],
            r.label,
            r.seed if r.seed is not None else -1,
            r.path.as_posix(),
        )
    )
    return runs


def load_run(path: str | Path) -> RunData:
    """One run directory; bad or missing files raise ``InputError`` naming file, line, field."""
    d = Path(path)
    summary = _read_json(d / "summary.json")
    config = _read_json(d / "config.json") if (d / "config.json").exists() else {}
    jobs = _read_csv(
        d / "jobs.csv", ("job_id", "arrival", "start", "finish", "jct", "queueing"), required=True
    )
    seg_path = d / "segments.csv"
    seg_cols = _read_csv(seg_path, ("job_id", "start", "end"), required=False, text=("placement",))
    labels = seg_cols.pop("placement", [])
    gpus, ptr, rows = _gpu_rows(labels, seg_path, _load_cluster(config))
    return RunData(
        path=d,
        config=config,
        summary=summary,
        arrival=jobs["arrival"],
        start=jobs["start"],
        finish=jobs["finish"],
        jct=jobs["jct"],
        queueing=jobs["queueing"],
        seg_job=seg_cols["job_id"].astype(np.int64),
        seg_start=seg_cols["start"],
        seg_end=seg_cols["end"],
        seg_ptr=ptr,
        seg_rows=rows,
        gpus=gpus,
        num_gpus=len(gpus.labels),
        label=config.get("policy") or d.name,
        job_id=jobs["job_id"].astype(np.int64),
        rho=_read_csv(d / "fairness.csv", ("rho",), required=False)["rho"],
    )


def group_labels(configs: Sequence[dict]) -> list[str]:
    """A label per run from the config values that vary across runs (the seed never does).

    The policy is shown bare, other keys as ``key=value``; when nothing varies, the policy.
    """
    flat = [_flatten(c) for c in configs]
    # keys every run has (a live run's config and a simulated run's differ in their keys:
    # those are told apart by "live" / "sim" below, not by every key one of them lacks)
    common = set.intersection(*(set(f) for f in flat)) if flat else set()
    keys = sorted(
        {k for k in common if not k.startswith("resolved.")} - _NOT_GROUPING,
        key=lambda k: (k != "policy", k),
    )
    varying = [k for k in keys if len({repr(f.get(k)) for f in flat}) > 1]
    modes = {f.get("mode") or "sim" for f in flat}
    out = []
    for f in flat:
        parts = [
            str(f.get(k)) if k == "policy" else f"{_setting_name(k)}={f.get(k)}" for k in varying
        ]
        if len(modes) > 1:
            if "policy" not in varying:
                parts.insert(0, str(f.get("policy")))
            parts.append(str(f.get("mode") or "sim"))  # live, replay or sim
        out.append(" ".join(parts) or str(f.get("policy") or "run"))
    return out


def parse_gpu_label(label: str) -> tuple[int, int]:
    """``"3:1"`` → ``(3, 1)``: (server, GPU on that server), as written by ``Cluster.gpu_label``."""
    m = _LABEL.match(label)
    if not m:
        raise ValueError(f"GPU label {label!r} is not SERVER:GPU")
    return int(m.group(1)), int(m.group(2))


# ---------------------------------------------------------------------- helpers
def _is_run_dir(p: Path) -> bool:
    return (p / "summary.json").is_file() and (p / "jobs.csv").is_file()


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError("missing file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", source=str(path)) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", source=str(path), line=e.lineno) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", source=str(path))
    return data


def _read_csv(
    path: Path, numeric: Sequence[str], *, required: bool, text: Sequence[str] = ()
) -> dict:
    """Named columns of a CSV file: ``numeric`` ones as float arrays, ``text`` ones as lists."""
    if not path.exists():
        if required:
            raise InputError("missing file", source=str(path))
        return {c: np.zeros(0) for c in numeric} | {c: [] for c in text}
    cols: dict[str, list] = {c: [] for c in (*numeric, *text)}
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise InputError("empty file (expected a header row)", source=str(path), line=1)
        header = [h.strip() for h in header]
        index = {}
        for c in cols:
            if c not in header:
                raise InputError("missing column", source=str(path), line=1, field=c)
            index[c] = header.index(c)
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            for c in numeric:
                try:
                    cols[c].append(float(row[index[c]]))
                except (ValueError, IndexError):
                    value = row[index[c]] if index[c] < len(row) else ""
                    raise InputError(
                        f"expected a number, got {value!r}", source=str(path), line=lineno, field=c
                    ) from None
            for c in text:
                if index[c] >= len(row):
                    raise InputError("missing value", source=str(path), line=lineno, field=c)
                cols[c].append((row[index[c]], lineno))
    return {c: np.asarray(cols[c], dtype=float) for c in numeric} | {c: cols[c] for c in text}


def _seen_labels(labels: list[tuple[str, int]]) -> list[str]:
    """Distinct GPU labels in the placements, sorted by (server, gpu)."""
    seen = {g.strip() for text, _ in labels for g in text.split(";") if g.strip()}
    return sorted(seen, key=parse_gpu_label)


def _gpu_rows(
    labels: list[tuple[str, int]], path: Path, cluster
) -> tuple[GpuTable, np.ndarray, np.ndarray]:
    """GPU table (every GPU of ``cluster`` when the labels fit it, else the labels seen) and
    each segment's rows in CSR form."""
    for text, lineno in labels:
        for g in text.split(";"):
            if g.strip() and not _LABEL.match(g):
                raise InputError(
                    f"GPU label {g!r} is not SERVER:GPU (e.g. 0:3)",
                    source=str(path),
                    line=lineno,
                    field="placement",
                )
    names = _seen_labels(labels)
    if cluster is not None:
        every = [cluster.gpu_label(g) for g in range(cluster.num_gpus)]
        if set(names) <= set(every):
            names = sorted(every, key=parse_gpu_label)
    index = {lab: i for i, lab in enumerate(names)}
    ptr = [0]
    rows: list[int] = []
    for text, _ in labels:
        mine = sorted({index[g.strip()] for g in text.split(";") if g.strip()})
        rows.extend(mine)
        ptr.append(len(rows))
    server = np.array([parse_gpu_label(n)[0] for n in names], dtype=np.int64)
    return (
        GpuTable(tuple(names), server),
        np.asarray(ptr, dtype=np.int64),
        np.asarray(rows, dtype=np.int64),
    )


def _load_cluster(config: dict):
    """The run's cluster from its config, or ``None`` when it cannot be rebuilt here."""
    spec = config.get("cluster")
    if not isinstance(spec, str) or not spec:
        return None
    from ..core.cluster_io import load_cluster

    seed = config.get("seed") if isinstance(config.get("seed"), int) else 0
    try:
        return load_cluster(spec, seed)
    except (InputError, OSError, ValueError):
        return None


def _setting_name(key: str) -> str:
    """``settings.wang.a`` (sectioned) and ``settings.a`` (older records) → ``a``."""
    return key.rsplit(".", 1)[-1] if key.startswith("settings.") else key


def _flatten(config: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in config.items():
        if isinstance(v, dict):
            out |= _flatten(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v
    return out
