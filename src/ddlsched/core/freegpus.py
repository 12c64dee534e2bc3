"""Index of the idle GPUs (no resident job), kept up to date by the engine.

Placement queries that used to scan every GPU at each policy call are answered from it in
O(servers touched + log GPUs): what makes a 2,490-GPU cluster (the ``philly`` preset) cheap.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterator

from .cluster import Cluster


class FreeGpus:
    """Idle GPUs by server and by server idle count; optionally ranked by accumulated busy time.

    ``busy(g)``, when given, is read when ``g`` becomes idle (its busy time cannot change while
    it stays idle) and keeps the idle GPUs ordered by (busy time, GPU id).
    """

    def __init__(self, cluster: Cluster, busy: Callable[[int], float] | None = None) -> None:
        self._server = cluster.gpu_server
        n_servers = cluster.num_servers
        top = cluster.max_gpus_per_server
        #: idle GPUs of each server, ascending
        self._per: list[list[int]] = [list(cluster.gpus_of_server(s)) for s in range(n_servers)]
        #: servers by idle count: ``_by_count[c]`` = ascending ids of servers with c idle GPUs
        self._by_count: list[list[int]] = [[] for _ in range(top + 1)]
        for s in range(n_servers):
            self._by_count[len(self._per[s])].append(s)
        self._busy = busy
        self._key: dict[int, tuple[float, int]] = {}
        self._ranked: list[tuple[float, int]] = []
        if busy is not None:
            self._key = {g: (0.0, g) for g in range(cluster.num_gpus)}
            self._ranked = sorted(self._key.values())
        self._count = cluster.num_gpus

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[int]:
        for per in self._per:
            yield from per

    def _move(self, s: int, old: int, new: int) -> None:
        bucket = self._by_count[old]
        del bucket[bisect_left(bucket, s)]
        insort(self._by_count[new], s)

    def take(self, gpu: int) -> None:
        """``gpu`` got its first resident."""
        s = self._server[gpu]
        per = self._per[s]
        del per[bisect_left(per, gpu)]
        self._move(s, len(per) + 1, len(per))
        self._count -= 1
        if self._busy is not None:
            key = self._key.pop(gpu)
            del self._ranked[bisect_left(self._ranked, key)]

    def give(self, gpu: int) -> None:
        """``gpu`` lost its last resident."""
        s = self._server[gpu]
        per = self._per[s]
        insort(per, gpu)
        self._move(s, len(per) - 1, len(per))
        self._count += 1
        if self._busy is not None:
            key = (self._busy(gpu), gpu)
            self._key[gpu] = key
            insort(self._ranked, key)

    def consolidated(self, need: int, avoid: frozenset[int] = frozenset()) -> list[int] | None:
        """``need`` idle GPUs, server with the most idle GPUs first (lowest index on ties),
        lowest GPU ids within a server: the same choice as ``policies.placement.consolidated``
        over the idle set (each server but the last is drained, so it is a walk in
        (idle count desc, server asc) order). ``avoid``: servers not to use (GPU types the job
        cannot run on); None if the others have too few idle GPUs."""
        if need > self._count:
            return None
        if avoid and need > self._count - sum(len(self._per[s]) for s in avoid):
            return None
        out: list[int] = []
        for c in range(len(self._by_count) - 1, 0, -1):
            for s in self._by_count[c]:
                if s in avoid:
                    continue
                take = min(c, need)
                out += self._per[s][:take]
                need -= take
                if need == 0:
                    return out
        raise AssertionError("idle GPU count out of sync")  # pragma: no cover

    def least_busy(self, need: int, avoid: frozenset[int] = frozenset()) -> list[int] | None:
        """The ``need`` idle GPUs with the least busy time (ties: GPU id), in that order;
        none on the servers in ``avoid``."""
        if self._busy is None:
            raise RuntimeError("this index was built without a busy-time source")
        if need > self._count:
            return None
        if not avoid:
            return [g for _, g in self._ranked[:need]]
        out = [g for _, g in self._ranked if self._server[g] not in avoid][:need]
        return out if len(out) == need else None
