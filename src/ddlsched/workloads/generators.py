"""Seeded workload generators following the papers' published workload descriptions (SPEC §6)."""

from __future__ import annotations

import numpy as np

from ..core.job import JobSpec
from ..perf.models import WANG20_MODELS

#: Wang et al. Sec. V-A / Yu et al. Sec. 7: GPUs per job → number of jobs (160 in all).
WANG20_GPU_MIX: dict[int, int] = {1: 80, 2: 14, 4: 26, 8: 30, 16: 8, 32: 2}


def wang20(
    seed: int = 0,
    *,
    num_jobs: int = 160,
    arrival_window: float = 1200.0,
    min_iterations: int = 1000,
    max_iterations: int = 6000,
    iteration_quantum: int = 1000,
) -> list[JobSpec]:
    """Wang et al.'s workload: the GPU mix above, iterations in [1000, 6000], arrivals uniform
    over 1200 s at whole seconds, models uniform over Table III.

    ``iteration_quantum`` = 1000 draws iterations from {1000, …, 6000} as the authors' artifact
    does (its 1..6 simulated iterations); 1 draws any integer in the range.
    """
    rng = np.random.default_rng(seed)
    sizes: list[int] = []
    for g, n in WANG20_GPU_MIX.items():
        sizes += [g] * n
    if num_jobs != len(sizes):  # keep the mix's proportions for other sizes
        idx = np.linspace(0, len(sizes) - 1, num_jobs).round().astype(int)
        sizes = [sizes[i] for i in idx]
    sizes_arr = rng.permutation(np.array(sizes))
    q = max(int(iteration_quantum), 1)
    lo, hi = -(-min_iterations // q), max_iterations // q
    iters = rng.integers(lo, hi + 1, size=num_jobs) * q
    arrivals = np.sort(rng.integers(0, int(arrival_window), size=num_jobs)).astype(float)
    names = list(WANG20_MODELS)
    models = rng.integers(0, len(names), size=num_jobs)
    return [
        JobSpec(
            job_id=i,
            arrival=float(arrivals[i]),
            num_gpus=int(sizes_arr[i]),
            iterations=int(iters[i]),
            model=WANG20_MODELS[names[models[i]]],
        )
        for i in range(num_jobs)
    ]


WORKLOAD_PRESETS = {"wang20": wang20}
