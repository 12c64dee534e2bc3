"""Interval analysis of a run's segments: busy GPUs over time, shared GPUs, contended all-reduces.

Definitions (docs/reports.md):

* a GPU is **shared** while ≥ 2 segments that hold it overlap in time;
* a GPU is **all-reduce contended** while it runs a segment of a job spanning ≥ 2 servers and
  its server is used at the same time by ≥ 2 such cross-server segments (two all-reduces share
  that server's network link).

Intervals are half-open ``[start, end)``: segments that only touch do not overlap. Everything is
vectorised (sort + cumulative sum), so 100k-job runs take well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .load import RunData


@dataclass(frozen=True)
class Intervals:
    """Disjoint time intervals per key (a GPU row or a server), sorted by (key, start)."""

    key: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __len__(self) -> int:
        return len(self.key)

    def of(self, key: int) -> list[tuple[float, float]]:
        """The intervals of one key, as ``(start, end)`` pairs."""
        sel = self.key == key
        return [(float(a), float(b)) for a, b in zip(self.start[sel], self.end[sel], strict=True)]


def segment_gpu_pairs(run: RunData) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One entry per (segment, GPU row): segment index, row, start, end."""
    counts = np.diff(run.seg_ptr)
    seg = np.repeat(np.arange(len(counts)), counts)
    return seg, run.seg_rows, run.seg_start[seg], run.seg_end[seg]


def overlap_intervals(
    key: np.ndarray, start: np.ndarray, end: np.ndarray, threshold: int = 2
) -> Intervals:
    """Per key, the times covered by at least ``threshold`` of the given intervals."""
    key = np.asarray(key, dtype=np.int64)
    start = np.asarray(start, dtype=float)
    end = np.asarray(end, dtype=float)
    keep = end > start
    key, start, end = key[keep], start[keep], end[keep]
    if len(key) == 0:
        empty = np.zeros(0)
        return Intervals(np.zeros(0, dtype=np.int64), empty, empty)
    ek = np.concatenate([key, key])
    et = np.concatenate([start, end])
    ed = np.concatenate([np.ones(len(key), np.int64), -np.ones(len(key), np.int64)])
    order = np.lexsort((ed, et, ek))  # by key, time, ends (-1) before starts (+1)
    ek, et, ed = ek[order], et[order], ed[order]
    # every key's deltas sum to 0, so one global running sum is each key's own count
    count = np.cumsum(ed)
    before = count - ed
    opens = np.flatnonzero((before < threshold) & (count >= threshold))
    closes = np.flatnonzero((before >= threshold) & (count < threshold))
    s, e, k = et[opens], et[closes], ek[opens]
    nonempty = e > s
    s, e, k = s[nonempty], e[nonempty], k[nonempty]
    if len(k) == 0:
        return Intervals(k, s, e)
    # join intervals of a key that touch (one closes where the next opens)
    first = np.ones(len(k), dtype=bool)
    first[1:] = (k[1:] != k[:-1]) | (s[1:] != e[:-1])
    last = np.append(first[1:], True)
    return Intervals(k[first], s[first], e[last])


def shared_intervals(run: RunData) -> Intervals:
    """Per GPU row, the times ≥ 2 segments hold it."""
    _, row, start, end = segment_gpu_pairs(run)
    return overlap_intervals(row, start, end, 2)


def cross_server_segments(run: RunData) -> np.ndarray:
    """Boolean mask of the segments whose GPUs span ≥ 2 servers."""
    srv = run.gpus.server[run.seg_rows] if len(run.seg_rows) else np.zeros(0, dtype=np.int64)
    n = len(run.seg_ptr) - 1
    if n <= 0 or len(srv) == 0:
        return np.zeros(max(n, 0), dtype=bool)
    lo = np.minimum.reduceat(srv, run.seg_ptr[:-1].clip(max=len(srv) - 1))
    hi = np.maximum.reduceat(srv, run.seg_ptr[:-1].clip(max=len(srv) - 1))
    return (np.diff(run.seg_ptr) > 0) & (hi > lo)


def contended_server_intervals(run: RunData) -> Intervals:
    """Per server, the times ≥ 2 cross-server segments use it (their all-reduces contend)."""
    seg, row, _, _ = segment_gpu_pairs(run)
    return _contended_servers(run, seg, row, cross_server_segments(run)[seg])


def _contended_servers(
    run: RunData, seg: np.ndarray, row: np.ndarray, cross: np.ndarray
) -> Intervals:
    """``contended_server_intervals`` from the segment–GPU pairs and their cross mask."""
    srv = run.gpus.server[row[cross]]
    s = seg[cross]
    # one entry per (segment, server), not per GPU
    pairs = np.unique(np.stack([s, srv], axis=1), axis=0) if len(s) else np.zeros((0, 2), int)
    return overlap_intervals(
        pairs[:, 1], run.seg_start[pairs[:, 0]], run.seg_end[pairs[:, 0]], threshold=2
    )


def contended_intervals(run: RunData) -> Intervals:
    """Per GPU row, the times it runs a cross-server segment while its server is contended."""
    seg, row, start, end = segment_gpu_pairs(run)
    cross = cross_server_segments(run)[seg]
    servers = _contended_servers(run, seg, row, cross)
    if len(servers) == 0:
        empty = np.zeros(0)
        return Intervals(np.zeros(0, dtype=np.int64), empty, empty)
    row, start, end = row[cross], start[cross], end[cross]
    # each contended server interval, copied to the GPU rows of that server that cross jobs use
    used = np.unique(row)
    used_srv = run.gpus.server[used]
    lo = np.searchsorted(servers.key, used_srv, side="left")
    hi = np.searchsorted(servers.key, used_srv, side="right")
    rep_row = np.repeat(used, hi - lo)
    # indexes lo[i] .. hi[i] - 1 of every used row, concatenated
    offsets = np.repeat(lo - np.concatenate([[0], np.cumsum(hi - lo)[:-1]]), hi - lo)
    cat = np.arange(len(rep_row)) + offsets
    # a GPU row is contended where (its server is contended) and (it runs a cross segment):
    # the server intervals are disjoint, and two cross segments on one GPU imply contention,
    # so "covered ≥ 2 times" by the union of both lists is exactly that intersection
    both = overlap_intervals(
        np.concatenate([rep_row, row]),
        np.concatenate([servers.start[cat], start]),
        np.concatenate([servers.end[cat], end]),
        threshold=2,
    )
    return both


def busy_gpus(run: RunData) -> tuple[np.ndarray, np.ndarray]:
    """Step function ``(t, n)``: from ``t[i]`` on, ``n[i]`` GPUs hold ≥ 1 segment."""
    _, row, start, end = segment_gpu_pairs(run)
    busy = overlap_intervals(row, start, end, threshold=1)
    if len(busy) == 0:
        return np.zeros(1), np.zeros(1, dtype=np.int64)
    t = np.concatenate([busy.start, busy.end])
    d = np.concatenate([np.ones(len(busy), np.int64), -np.ones(len(busy), np.int64)])
    order = np.lexsort((d, t))
    t, d = t[order], d[order]
    n = np.cumsum(d)
    # keep the last value at each distinct time
    last = np.append(t[1:] != t[:-1], True)
    return t[last], n[last]


def utilisation_series(run: RunData, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Busy-GPU fraction over time; beyond ``max_points`` steps, time-weighted bin averages."""
    t, n = busy_gpus(run)
    frac = n / max(run.num_gpus, 1)
    if len(t) <= max_points or t[-1] <= t[0]:
        return t, frac
    edges = np.linspace(t[0], t[-1], max_points + 1)
    # integral of the step function at each step time, then at the bin edges
    area = np.concatenate([[0.0], np.cumsum(frac[:-1] * np.diff(t))])
    at_edges = np.interp(edges, t, area)
    return edges[:-1], np.diff(at_edges) / np.diff(edges)
