"""Measured application profiles of the Pollux artifact (ground truth of its simulator).

This is the application model of the Pollux artifact's simulator (applications.py), with the job
configuration rule of its simulator.py; section numbers refer to the project's notes on the
artifact's semantics. A job with target batch B on a placement (GPUs per node, in allocation
order; R = GPUs in all) runs as follows.

- **Batch configuration** (§2, :meth:`Application.batch_config`): local = ⌈B/R − ε⌉, k = ⌈local /
  max_local − ε⌉ − 1 extra accumulation micro-steps (at least 1 if R = 1 and B > init_bsz), a =
  ⌈local/(k+1) − ε⌉ samples per replica per micro-step, capped at ⌊max_bsz/(R(k+1))⌋; the
  effective batch M = R·a·(k+1), not B, drives throughput, gradient statistics and scale.
- **Throughput** (§3, :meth:`Application.step_time`): measured (step_time, sync_time) of the
  placement's ID (the lexicographically smallest rotation of the per-node GPU counts), linear in a
  between that ID's measured rows; placements never measured (≥ 5 nodes) are interpolated in
  (nodes, replicas, a) by a Delaunay ``LinearNDInterpolator`` over the per-(nodes, replicas,
  local_bsz) means of all measured placements followed by the scalability rows. One iteration
  takes T_iter = step + k·(step − sync).
- **Statistical efficiency** (§4, :meth:`Application.gain`): gradient statistics (sqr, var) of
  epoch e, linear in M between the bracketing validated batch sizes; with scale = M/init_bsz,
  gain = (var + sqr)/(var/scale + sqr).
- **Progress** (§2, :meth:`Application.progress_at`, :meth:`Application.rate`): progress is
  counted in init_bsz iterations weighted by efficiency; epoch e ends at P(e) = the smallest
  validated progress after e epochs, and a job advances at g = gain/T_iter per second. Jobs
  finish after ``max_epochs`` epochs.

:func:`load_application` reads one application directory of the artifact's format
(``placements.csv``, ``scalability.csv``, ``validation-<bsz>.csv``); every problem with a file is
an :class:`~ddlsched.errors.InputError` naming the file, line and field.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, quote, suggest
from ..parsing import NumberError, check_width, csv_rows, parse_float
from ..paths import is_dir

#: Per-application ``max_epochs`` of the Pollux artifact (applications.py); an application not
#: listed here runs for as many epochs as its shortest validation file has rows.
DEFAULT_MAX_EPOCHS: dict[str, int] = {
    "bert": 2,
    "cifar10": 100,
    "ncf": 10,
    "imagenet": 90,
    "deepspeech2": 80,
    "yolov3": 50,
}

#: Per-application ``max_local`` overrides of the Pollux artifact (applications.py); others use
#: the largest measured local batch.
DEFAULT_MAX_LOCAL: dict[str, int] = {"yolov3": 8}

#: ε of the fixed-batch rule (§2, sim:77-83).
EPS = 1e-8

#: The artifact's ≥ 5-node queries clamp the node count to this (§3, app:222).
MAX_QUERY_NODES = 16

PLACEMENT_COLUMNS: tuple[str, ...] = ("placement", "local_bsz", "step_time", "sync_time")
SCALABILITY_COLUMNS: tuple[str, ...] = (
    "num_nodes",
    "num_replicas",
    "local_bsz",
    "step_time",
    "sync_time",
)
VALIDATION_COLUMNS: tuple[str, ...] = ("progress", "grad_sqr", "grad_var")

_VALIDATION_NAME = re.compile(r"validation-([0-9]+)\.csv")

#: A measured placement row: (GPUs per node, local_bsz, step_time, sync_time).
PlacementRow = tuple[tuple[int, ...], float, float, float]
#: A scalability row: (num_nodes, num_replicas, local_bsz, step_time, sync_time).
ScalabilityRow = tuple[float, float, float, float, float]
#: A validation row (one per epoch): (progress, grad_sqr, grad_var).
ValidationRow = tuple[float, float, float]


class ProfileRangeError(InputError, ValueError):
    """A step time or gradient statistic asked where the profiles measure none (a placement
    outside the measured hull, a micro-batch outside a placement's range, a batch outside the
    validated ones): a ``ValueError`` for callers that try another configuration, and one line
    (exit status 2) where nothing does."""

    def __init__(self, message: str) -> None:
        super().__init__(message, field="profiles")

    def __reduce__(self) -> tuple:
        return (ProfileRangeError, (self.message,))


@dataclass(frozen=True)
class BatchConfig:
    """A job's batch on R replicas: the §2 fixed-batch rule (sim:77-83, 116)."""

    local: int  # ⌈B/R − ε⌉, samples per replica per iteration before the cap
    accum: int  # k, extra gradient-accumulation micro-steps per iteration
    a: int  # samples per replica per micro-step (after the cap)
    M: int  # effective batch R·a·(k+1)


def canonical_placement(placement: Iterable[int]) -> tuple[int, ...]:
    """Zeros dropped, then the lexicographically smallest rotation (§3, app:207-209)."""
    p = tuple(int(g) for g in placement if g)
    if not p:
        raise ValueError("placement has no GPUs")
    if min(p) < 0:
        raise ValueError(f"placement {p} has a negative GPU count")
    return min(p[i:] + p[:i] for i in range(len(p)))


def packed_placement(replicas: int, max_nodes: int) -> tuple[int, ...]:
    """``replicas`` GPUs on at most ``max_nodes`` nodes, ⌈replicas / max_nodes⌉ per node, the
    rest on the last: how Sia's simulator runs an allocation on more nodes of a GPU type than
    its profiles measure (cluster.py:197-209)."""
    per = -(-replicas // max_nodes)
    out = []
    while replicas > 0:
        out.append(min(per, replicas))
        replicas -= out[-1]
    return tuple(out)


def node_runs(nodes: Iterable[int]) -> tuple[int, ...]:
    """GPUs per node as run lengths of consecutive equal node ids in allocation order (the
    Sia/Pollux artifacts' placement tuple, Sia cluster.py:188-196)."""
    out: list[int] = []
    prev = None
    for s in nodes:
        if s == prev:
            out[-1] += 1
        else:
            out.append(1)
            prev = s
    return tuple(out)


def compact_placement(num_gpus: int, per_server: int) -> tuple[int, ...]:
    """The most consolidated placement tuple of ``num_gpus`` on servers of ``per_server``
    (whole servers first, the rest on one more; Sia's Gavel packs a job so, gavel.py:520-525)."""
    full, rest = divmod(num_gpus, per_server)
    return (per_server,) * full + ((rest,) if rest else ())


def placement_id(placement: Iterable[int]) -> str:
    """The artifact's placement ID: digits of the canonical placement (§3): (3, 2, 1) → '132'."""
    return "".join(map(str, canonical_placement(placement)))


class Application:
    """One application of the Pollux artifact: measured throughput and efficiency (§2–4)."""

    def __init__(
        self,
        name: str,
        placements: Iterable[PlacementRow],
        scalability: Iterable[ScalabilityRow],
        validation: Mapping[int, Sequence[ValidationRow]],
        *,
        max_epochs: int | None = None,
        init_bsz: int | None = None,
        max_bsz: int | None = None,
        min_local: int | None = None,
        max_local: int | None = None,
        max_nodes: int | None = None,
    ) -> None:
        self.name = name
        #: most nodes the tables measure, for per-GPU-type tables (Sia's layout): a placement
        #: on more nodes is looked up as Sia's simulator packs it (``packed_placement``);
        #: None: the Pollux artifact's rule (nodes clamped to 16 in the interpolation)
        self.max_nodes = max_nodes
        rows = list(placements)
        if not rows:
            raise ValueError(f"{name}: no placement measurements")
        if not validation:
            raise ValueError(f"{name}: no validation curves")
        # per placement (as written): local_bsz-sorted (x, step, sync), as interp1d sorts (app:215)
        by_id: dict[tuple[int, ...], list[tuple[float, float, float]]] = {}
        for p, x, step, sync in rows:
            by_id.setdefault(tuple(p), []).append((float(x), float(step), float(sync)))
        self._curves: dict[tuple[int, ...], tuple[list[float], list[float], list[float]]] = {}
        for p, pts in by_id.items():
            pts.sort(key=lambda t: t[0])
            xs = [t[0] for t in pts]
            if any(x0 == x1 for x0, x1 in zip(xs, xs[1:], strict=False)):
                raise ValueError(f"{name}: placement {p} measured twice at one local_bsz")
            self._curves[p] = (xs, [t[1] for t in pts], [t[2] for t in pts])
        # ≥5-node points (§3, app:219-220): grouped means in ascending key order, then scalability
        groups: dict[tuple[float, float, float], list[float]] = {}
        for p, x, step, sync in rows:
            acc = groups.setdefault((float(len(p)), float(sum(p)), float(x)), [0.0, 0.0, 0])
            acc[0] += step
            acc[1] += sync
            acc[2] += 1
        points = [(*key, s / n, y / n) for key, (s, y, n) in sorted(groups.items())]
        scal = [tuple(float(v) for v in row) for row in scalability]
        points += scal
        #: scalability rows (nodes, replicas, local_bsz) and, per replica count, the largest
        #: local batch measured on a placement of that many GPUs (``max_local_at``)
        self._scal_points = [(n, r, x) for n, r, x, _, _ in scal]
        self._max_local_by_replicas: dict[int, float] = {}
        for p, x, _, _ in rows:
            reps = sum(p)
            self._max_local_by_replicas[reps] = max(x, self._max_local_by_replicas.get(reps, x))
        self._nd_points = np.array(points, dtype=float).reshape(-1, 5)
        self._nd: Any = None  # LinearNDInterpolator, built on first use

        self._sizes = sorted(validation)
        self._validation = {b: [tuple(map(float, r)) for r in validation[b]] for b in self._sizes}
        self.epochs = min(len(v) for v in self._validation.values())
        if self.epochs < 1:
            raise ValueError(f"{name}: a validation curve has no rows")
        # P(e) = min over curves of progress at row e−1; P(0) = 0 (§2, app:132-136)
        self._progress = [0.0] + [
            min(v[e][0] for v in self._validation.values()) for e in range(self.epochs)
        ]

        locals_ = [r[1] for r in rows]
        self.init_bsz = int(init_bsz or self._sizes[0])
        self.max_bsz = int(max_bsz or self._sizes[-1])
        self.min_local = int(min_local or min(locals_))
        self.max_local = int(max_local or max(locals_))
        self.max_epochs = int(max_epochs or self.epochs)
        if not 1 <= self.max_epochs <= self.epochs:
            raise ValueError(
                f"{name}: max_epochs {self.max_epochs} needs that many validation rows, "
                f"but the shortest curve has {self.epochs}"
            )
        self._tput: dict[tuple[tuple[int, ...], float], tuple[float, float]] = {}
        self._gain: dict[tuple[int, float], float] = {}

    def __repr__(self) -> str:
        return (
            f"Application({self.name!r}, init_bsz={self.init_bsz}, max_bsz={self.max_bsz}, "
            f"local=[{self.min_local}, {self.max_local}], max_epochs={self.max_epochs})"
        )

    def max_local_at(self, placement: Sequence[int], *, per_replicas: bool = True) -> int:
        """The largest local batch the tables measure on ``placement`` (Sia's batch limit per
        placement, applications.py:310-324 and job.py:375-382): its own rows' largest if the
        placement ID is measured, else the largest of the scalability rows on at least as
        many nodes and replicas (the application's ``max_local`` if none); with
        ``per_replicas``, at most the largest measured on any placement of as many GPUs
        (job.py:375-382; without it, ``get_max_local_bsz`` alone, as Sia's Gavel predicts,
        gavel.py:527). Placements on more than ``max_nodes`` nodes count as packed
        (``packed_placement``)."""
        p = canonical_placement(placement)
        if self.max_nodes is not None and len(p) > self.max_nodes:
            p = canonical_placement(packed_placement(sum(p), self.max_nodes))
        curve = self._curves.get(p)
        if curve is not None:
            cap = curve[0][-1]
        else:
            n, reps = len(p), sum(p)
            xs = [x for sn, sr, x in self._scal_points if sn >= n and sr >= reps]
            cap = max(xs) if xs else float(self.max_local)
        same = self._max_local_by_replicas.get(sum(p)) if per_replicas else None
        if same is not None:
            cap = min(cap, same)
        return int(cap)

    def measured(self, placement: tuple[int, ...]) -> tuple[list[float], list[float]] | None:
        """(local batches ascending, their step times) the tables measure on ``placement`` as
        written, None if they have no row of it."""
        curve = self._curves.get(tuple(placement))
        return None if curve is None else (list(curve[0]), list(curve[1]))

    @property
    def measured_nodes(self) -> int:
        """The most nodes a placement or scalability row of the tables spans."""
        return int(self._nd_points[:, 0].max())

    @property
    def validated_sizes(self) -> tuple[int, ...]:
        """Batch sizes with a validation curve, ascending."""
        return tuple(self._sizes)

    # ---------------------------------------------------------------- configuration (§2)

    def batch_config(self, replicas: int, batch: int) -> BatchConfig:
        """The §2 fixed-batch rule with the cap on a (sim:77-83)."""
        if replicas < 1:
            raise ValueError(f"{self.name}: replicas must be ≥ 1, got {replicas}")
        if batch < 1:
            raise ValueError(f"{self.name}: batch must be ≥ 1, got {batch}")
        local = math.ceil(batch / replicas - EPS)
        k = math.ceil(local / self.max_local - EPS) - 1
        if replicas == 1 and batch > self.init_bsz:
            k = max(1, k)
        a = math.ceil(local / (k + 1) - EPS)
        a = min(a, int(self.max_bsz / (replicas * (k + 1))))
        if a < 1:
            raise ValueError(
                f"{self.name}: batch {batch} on {replicas} replicas leaves no samples per "
                f"replica under max_bsz {self.max_bsz}"
            )
        return BatchConfig(local=local, accum=k, a=a, M=replicas * a * (k + 1))

    # ---------------------------------------------------------------- throughput (§3)

    def step_time(self, placement: Sequence[int], local_bsz: float) -> tuple[float, float]:
        """(step_time, sync_time) of one micro-batch of ``local_bsz`` per replica (§3, app:204-227)."""
        if type(placement) is not tuple:
            placement = tuple(placement)
        key = (placement, local_bsz)
        hit = self._tput.get(key)
        if hit is None:
            hit = self._tput[key] = self._measure(placement, local_bsz)
        return hit

    def _measure(self, placement: tuple[int, ...], a: float) -> tuple[float, float]:
        """Uncached §3 lookup: 1-D in local_bsz for a measured ID, else LinearND."""
        p = canonical_placement(placement)
        if self.max_nodes is not None and len(p) > self.max_nodes:
            p = canonical_placement(packed_placement(sum(p), self.max_nodes))
        curve = self._curves.get(p)
        if curve is not None:
            return self._interp1d(p, curve, a)
        if self._nd is None:
            from scipy.interpolate import LinearNDInterpolator
            from scipy.spatial import QhullError

            try:
                self._nd = LinearNDInterpolator(self._nd_points[:, :3], self._nd_points[:, 3:])
            except QhullError:  # e.g. one GPU type's tables on one node only (Sia's quad)
                raise ProfileRangeError(
                    f"{self.name}: placement {placement_id(p)} is not measured, and the "
                    "measured (nodes, replicas, local_bsz) points span no volume to "
                    "interpolate in"
                ) from None
        query = np.array([[min(len(p), MAX_QUERY_NODES), sum(p), a]], dtype=float)
        step, sync = (float(v) for v in self._nd(query)[0])
        if math.isnan(step) or math.isnan(sync):
            raise ProfileRangeError(
                f"{self.name}: placement {placement_id(p)} with local batch {a} lies outside "
                "the measured (nodes, replicas, local_bsz) hull"
            )
        return step, sync

    def _interp1d(
        self,
        p: tuple[int, ...],
        curve: tuple[list[float], list[float], list[float]],
        a: float,
    ) -> tuple[float, float]:
        """scipy ``interp1d`` (linear, bounds_error) evaluated as it does, for a scalar."""
        xs, steps, syncs = curve
        if not xs[0] <= a <= xs[-1]:  # also rejects NaN
            raise ProfileRangeError(
                f"{self.name}: local batch {a} outside the measured range "
                f"[{xs[0]:g}, {xs[-1]:g}] of placement {placement_id(p)}"
            )
        if len(xs) == 1:
            return steps[0], syncs[0]
        hi = min(max(bisect.bisect_left(xs, a), 1), len(xs) - 1)
        lo = hi - 1
        dx = xs[hi] - xs[lo]
        t = a - xs[lo]
        step = (steps[hi] - steps[lo]) / dx * t + steps[lo]
        sync = (syncs[hi] - syncs[lo]) / dx * t + syncs[lo]
        return step, sync

    def iteration_time(self, placement: Sequence[int], cfg: BatchConfig) -> float:
        """T_iter = step + k·(step − sync) (§2, sim:121, 130)."""
        step, sync = self.step_time(placement, cfg.a)
        return step + (step - sync) * cfg.accum

    # ---------------------------------------------------------------- progress (§2, §4)

    def progress_at(self, epoch: int) -> float:
        """P(e): progress at the end of epoch e; P(0) = 0 (§2, app:132-136)."""
        if not 0 <= epoch < len(self._progress):
            raise ValueError(f"{self.name}: epoch {epoch} outside [0, {self.epochs}]")
        return self._progress[epoch]

    def grad_stats(self, epoch: int, batch: float) -> tuple[float, float]:
        """(grad_sqr, grad_var) in epoch ``epoch`` at batch ``batch`` (§4, app:186-202)."""
        if not 0 <= epoch < self.epochs:
            raise ValueError(f"{self.name}: epoch {epoch} outside [0, {self.epochs - 1}]")
        sizes = self._sizes
        if not sizes[0] <= batch <= sizes[-1]:  # also rejects NaN
            raise ProfileRangeError(
                f"{self.name}: batch {batch} outside the validated range [{sizes[0]}, {sizes[-1]}]"
            )
        i = bisect.bisect_left(sizes, batch)
        upper = sizes[i]
        _, up_sqr, up_var = self._validation[upper][epoch]
        if upper == batch:
            return up_sqr, up_var
        lower = sizes[i - 1]
        _, lo_sqr, lo_var = self._validation[lower][epoch]
        span = upper - lower
        sqr = ((batch - lower) * up_sqr + (upper - batch) * lo_sqr) / span
        var = ((batch - lower) * up_var + (upper - batch) * lo_var) / span
        return sqr, var

    def gain(self, epoch: int, batch: float) -> float:
        """Statistical gain (var + sqr)/(var/scale + sqr), scale = batch/init_bsz (§4, sim:117-125)."""
        key = (epoch, batch)
        g = self._gain.get(key)
        if g is None:
            sqr, var = self.grad_stats(epoch, batch)
            scale = batch / self.init_bsz
            g = self._gain[key] = (var + sqr) / (var / scale + sqr)
        return g

    def rate(self, placement: Sequence[int], cfg: BatchConfig, epoch: int) -> float:
        """Progress per second g = gain(epoch, M)/T_iter (§2, sim:131)."""
        return self.gain(epoch, cfg.M) / self.iteration_time(placement, cfg)


def accumulated_config(
    app: Application, replicas: int, batch: int, limit: int, *, one_replica_accum: bool = False
) -> BatchConfig:
    """Gradient accumulation with micro-batches of at most ``limit`` samples per replica (Luo
    Eq. 7's sub-batch B/s): s = ⌈local/limit⌉ steps; M stays within the validated range.
    ``one_replica_accum``: at least one accumulation step on one replica, as Sia's Gavel
    predicts a one-GPU job (gavel.py:531-532)."""
    local = math.ceil(batch / replicas - EPS)
    k = max(math.ceil(local / limit - EPS) - 1, 0)
    if one_replica_accum and replicas == 1:
        k = max(k, 1)
    a = math.ceil(local / (k + 1) - EPS)
    a = min(a, int(app.max_bsz / (replicas * (k + 1))))
    return BatchConfig(local=local, accum=k, a=a, M=replicas * a * (k + 1))


# -------------------------------------------------------------------------------------------
# loading
# -------------------------------------------------------------------------------------------


def _read_table(path: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV file as (line, {column: text}) for ``columns``; InputError on bad shape."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", source=source) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read file: {e}", source=source) from None
    header: list[str] | None = None
    header_line = 0
    index: dict[str, int] = {}
    rows: list[tuple[int, dict[str, str]]] = []
    for _start, line, row in csv_rows(text, source):
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header, header_line = [c.strip() for c in row], line
            for col in columns:
                if col not in header:
                    raise InputError(
                        f"missing column {quote(col)}{suggest(col, header)}; "
                        f"expected {', '.join(columns)}",
                        source=source,
                        line=header_line,
                        field=col,
                    )
            index = {col: header.index(col) for col in columns}
            continue
        check_width(row, len(header), source, line)
        rows.append((line, {col: row[i].strip() for col, i in index.items()}))
    if header is None:
        raise InputError(f"file is empty; expected a header {','.join(columns)}", source=source)
    return rows


def _number(
    text: str, source: str, line: int, field: str, *, integer: bool = False, signed: bool = False
) -> float:
    """A finite number from one CSV cell: a positive integer if ``integer``, else ≥ 0 unless
    ``signed``."""
    try:
        value = parse_float(text)
    except NumberError as e:
        raise InputError(str(e), source=source, line=line, field=field) from None
    if integer and (value < 1 or not value.is_integer()):
        raise InputError(
            f"expected a positive integer, got {quote(text)}", source=source, line=line, field=field
        )
    if value < 0 and not signed:
        raise InputError(f"must be ≥ 0, got {quote(text)}", source=source, line=line, field=field)
    return value


def _placements(path: Path) -> tuple[PlacementRow, ...]:
    source = str(path)
    out: list[PlacementRow] = []
    seen: dict[tuple[tuple[int, ...], float], int] = {}
    for line, row in _read_table(path, PLACEMENT_COLUMNS):
        text = row["placement"]
        if not text or not all(c in "123456789" for c in text):
            raise InputError(
                f"expected a digit string of GPUs per node (digits 1-9), got {quote(text)}",
                source=source,
                line=line,
                field="placement",
            )
        p = tuple(int(c) for c in text)
        x = _number(row["local_bsz"], source, line, "local_bsz", integer=True)
        if (p, x) in seen:
            raise InputError(
                f"placement {text} at local_bsz {x:g} already measured on line {seen[p, x]}",
                source=source,
                line=line,
                field="local_bsz",
            )
        seen[p, x] = line
        out.append(
            (
                p,
                x,
                _number(row["step_time"], source, line, "step_time"),
                _number(row["sync_time"], source, line, "sync_time"),
            )
        )
    if not out:
        raise InputError("no measurements: the file has a header but no rows", source=source)
    return tuple(out)


def _scalability(path: Path) -> tuple[ScalabilityRow, ...]:
    source = str(path)
    out: list[ScalabilityRow] = []
    for line, row in _read_table(path, SCALABILITY_COLUMNS):
        ints = [
            _number(row[c], source, line, c, integer=True)
            for c in ("num_nodes", "num_replicas", "local_bsz")
        ]
        times = [_number(row[c], source, line, c) for c in ("step_time", "sync_time")]
        out.append((ints[0], ints[1], ints[2], times[0], times[1]))
    return tuple(out)


def _validation(directory: Path) -> dict[int, tuple[ValidationRow, ...]]:
    curves: dict[int, tuple[ValidationRow, ...]] = {}
    names: dict[int, str] = {}
    for path in sorted(directory.glob("validation-*.csv")):
        source = str(path)
        m = _VALIDATION_NAME.fullmatch(path.name)
        if m is None or int(m.group(1)) < 1:
            raise InputError(
                "file name must be validation-<batch size>.csv with a positive integer batch size",
                source=source,
            )
        bsz = int(m.group(1))
        if bsz in curves:
            raise InputError(f"batch size {bsz} also validated in {names[bsz]}", source=source)
        rows = tuple(
            (
                _number(row["progress"], source, line, "progress"),
                _number(row["grad_sqr"], source, line, "grad_sqr", signed=True),
                _number(row["grad_var"], source, line, "grad_var", signed=True),
            )
            for line, row in _read_table(path, VALIDATION_COLUMNS)
        )
        if not rows:
            raise InputError("no epochs: the file has a header but no rows", source=source)
        curves[bsz], names[bsz] = rows, path.name
    if not curves:
        raise InputError("no validation-<batch size>.csv files", source=str(directory))
    return curves


#: Parsed tables by what was parsed and the content of its files (a folder: its validation
#: curves' names and contents): an experiment or a sweep builds one simulator per row, and
#: each parsed the same profiles again (0.7 s for the artifact's six applications). Parsing is
#: pure, so a hit is what a fresh parse would give; keyed by content, not by modification
#: time, which a rewrite within one clock tick may leave unchanged. Bounded.
_PARSED: dict[tuple, Any] = {}
_PARSED_MAX = 512


def _digest(path: Path) -> bytes | None:
    """A digest of ``path``'s bytes; None if it cannot be read (the parser then says why)."""
    try:
        return hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
    except OSError:
        return None


def _parsed(path: Path, parse: Any) -> Any:
    """``parse(path)``, once per content of its files (a folder: its validation curves);
    errors are never kept, so a bad file is reported on every read."""
    if path.is_dir():
        files = [(f.name, _digest(f)) for f in sorted(path.glob("validation-*.csv"))]
        ok = all(d is not None for _, d in files)
        key = (parse.__name__, tuple(files)) if ok else None
    else:
        digest = _digest(path)
        key = None if digest is None else (parse.__name__, digest)
    if key is None:
        return parse(path)
    hit = _PARSED.get(key)
    if hit is None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        hit = _PARSED[key] = parse(path)
    return hit


def load_application(
    path: str | Path,
    name: str | None = None,
    max_epochs: int | None = None,
    *,
    max_local: int | None = None,
    suffix: str = "",
    max_nodes: int | None = None,
) -> Application:
    """One application directory of the Pollux artifact (app:23-47), artifact defaults by name.

    ``suffix``: read one GPU type's tables, ``placements-<suffix>.csv`` and
    ``scalability-<suffix>.csv``, instead (the Sia artifact's layout, ``perf/typed_profiles``);
    the validation curves are the folder's either way. ``max_local=0``: the largest measured
    local batch, whatever the Pollux artifact overrides for the name. ``max_nodes``: see
    :class:`Application`."""
    directory = Path(path)
    if not is_dir(directory):
        raise InputError("not a directory (expected an application's traces)", source=str(path))
    name = name or directory.name
    tag = f"-{suffix}" if suffix else ""
    placements = _parsed(directory / f"placements{tag}.csv", _placements)
    scalability = _parsed(directory / f"scalability{tag}.csv", _scalability)
    validation = _parsed(directory, _validation)
    if max_epochs is None:
        max_epochs = DEFAULT_MAX_EPOCHS.get(name)
    if max_local is None:
        max_local = DEFAULT_MAX_LOCAL.get(name)
    try:
        return Application(
            name,
            placements,
            scalability,
            validation,
            max_epochs=max_epochs,
            max_local=max_local,
            max_nodes=max_nodes,
        )
    except ValueError as e:
        raise InputError(str(e), source=str(directory)) from None


def load_applications(root: str | Path) -> dict[str, Application]:
    """Every subdirectory of ``root`` holding a placements.csv, by directory name."""
    base = Path(root)
    if not is_dir(base):
        raise InputError("not a directory (expected application trace folders)", source=str(root))
    apps = {
        d.name: load_application(d)
        for d in sorted(base.iterdir())
        if d.is_dir() and (d / "placements.csv").is_file()
    }
    if not apps:
        raise InputError("no application folders (with a placements.csv) found", source=str(root))
    return apps


def read_pair_interference(path: str) -> dict[tuple[str, str], float]:
    """Per-pair interference ratios: CSV ``app,other,xi`` (ξ of ``app``'s job when it shares a
    GPU with ``other``'s), header required; errors name file, line and field."""
    try:
        with open(path, encoding="utf-8-sig") as f:  # a byte-order mark is dropped
            text = f.read()
    except UnicodeDecodeError as e:
        raise InputError(f"not a UTF-8 text file ({e.reason})", source=path) from None
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror}", source=path) from None
    rows = [(line, row) for _start, line, row in csv_rows(text, path)]
    if not rows or [c.strip() for c in rows[0][1]] != ["app", "other", "xi"]:
        raise InputError("expected the header app,other,xi", source=path, line=1)
    out: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], int] = {}
    for n, row in rows[1:]:
        if not any(c.strip() for c in row):
            continue
        if len(row) != 3:
            raise InputError(f"expected 3 fields, got {len(row)}", source=path, line=n)
        pair = (row[0].strip(), row[1].strip())
        for field, name in zip(("app", "other"), pair, strict=True):
            if not name:
                raise InputError("empty application name", source=path, line=n, field=field)
        if pair in first:
            raise InputError(
                f"duplicate pair {quote(pair[0])}, {quote(pair[1])} (first on line {first[pair]})",
                source=path,
                line=n,
                field="app",
            )
        first[pair] = n
        try:
            xi = parse_float(row[2])
        except NumberError as e:
            raise InputError(str(e), source=path, line=n, field="xi") from None
        if not xi >= 1:
            raise InputError("must be ≥ 1", source=path, line=n, field="xi")
        out[pair] = xi
    return out
