"""Wang et al.'s linear contention model for all-reduce (Eq. 2 and Eq. 5).

Alone, an all-reduce of M bytes takes ``a + b·M`` (Eq. 2). Under k-way contention the fluid
transfer time per byte is ``k·b + (k−1)·η`` (Eq. 5 read per byte), where k is the largest number of
all-reduces running at once on any server the job uses. The latency ``a`` is paid once per
all-reduce, before its bytes, and is not slowed by contention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MB = 1e6  # bytes per MB: Wang's b = 8.53e-10 s/B is 0.853 ms/MB with MB = 10^6 bytes


@dataclass(frozen=True)
class LinearContention:
    """Parameters of Eq. 5. Defaults: a, b from Wang Fig. 2(a); η from the authors' artifact."""

    a: float = 6.69e-4  # s, latency per all-reduce
    b: float = 8.53e-10  # s/B, transfer time per byte alone
    eta: float = 2.35e-10  # s/B, extra per-byte overhead per extra contender

    def per_byte(self, k: int) -> float:
        """Seconds per byte when k all-reduces share the busiest link (k ≥ 1)."""
        return k * self.b + (k - 1) * self.eta

    def time(self, size_bytes: float, k: int = 1) -> float:
        """Eq. 5: duration of one all-reduce of ``size_bytes`` under constant k-way contention."""
        return self.a + size_bytes * self.per_byte(max(k, 1))

    @property
    def adadual_threshold(self) -> float:
        """Theorem 2: start a new task alongside one running task iff M_new/M_old < b/(2(b+η))."""
        return self.b / (2.0 * (self.b + self.eta))


@dataclass(frozen=True)
class RingContention(LinearContention):
    """Table I ring all-reduce over N nodes: a = 2(N−1)α, b = 2(N−1)/N·β + (N−1)/N·γ.

    Kept as an option; ``alpha``, ``beta``, ``gamma`` are the per-message latency, per-byte
    transfer and per-byte reduction costs and ``nodes`` the ring length.
    """

    @classmethod
    def from_ring(
        cls, alpha: float, beta: float, gamma: float, nodes: int, eta: float = 2.35e-10
    ) -> RingContention:
        n = max(nodes, 2)
        return cls(
            a=2 * (n - 1) * alpha,
            b=2 * (n - 1) / n * beta + (n - 1) / n * gamma,
            eta=eta,
        )


def ring_factor(workers: int) -> float:
    """2(w−1)/w: the bytes each link of a ring all-reduce over ``workers`` workers carries, per
    byte of the gradient — Table I's ring ``b`` for N = w over its value for N = 2 (the two-node
    all-reduce Wang's a, b, η are measured on), so ``ring_bytes`` prices a w-worker job's
    all-reduce as one of ``ring_factor(w)·M`` bytes. 0 for one worker (nothing to send)."""
    return 2.0 * (workers - 1) / workers if workers > 1 else 0.0


def advance_allreduce(r: Any, now: float) -> None:
    """Bring a running all-reduce's remaining latency, then bytes, up to ``now`` (the fluid
    model: ``a`` first, then bytes at ``1 / per_byte`` per second). ``r`` has ``comm_last``,
    ``lat_left``, ``bytes_left`` and ``per_byte`` (``core.taskexec.Run``, the live gate's
    ``CommTask``)."""
    dt = now - r.comm_last
    if dt > 0:
        lat = min(dt, r.lat_left)
        r.lat_left -= lat
        dt -= lat
        if dt > 0 and r.per_byte > 0:
            r.bytes_left = max(r.bytes_left - dt / r.per_byte, 0.0)
        r.comm_last = now


def allreduce_bytes_left(r: Any, now: float) -> float:
    """AdaDUAL's M_old: the remaining bytes of a running all-reduce at ``now``, read without
    folding progress into ``r`` (how often a gate looks cannot change the arithmetic)."""
    dt = now - r.comm_last - r.lat_left
    if dt <= 0 or r.per_byte <= 0:
        return r.bytes_left
    return max(r.bytes_left - dt / r.per_byte, 0.0)
