"""Seeded workload generators following the papers' published workload descriptions (SPEC §6)."""

from __future__ import annotations

import numpy as np

from ..core.job import JobSpec, ModelProfile
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
    sizes = _gpu_mix(num_jobs)
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


#: Yu et al. §7 ranges
YU22_ITERATIONS = (1000, 6000)  # F_j
YU22_TAU = (0.01, 0.05)  # τ_j, s per iteration
YU22_RHO = (50.0, 300.0)  # ρ̂_j = F_j·τ_j, s
YU22_GRADIENT_MB = (1.0, 5.0)  # m_j: our choice, see docs/models.md


def yu22(seed: int = 0, *, num_jobs: int = 160) -> list[JobSpec]:
    """Yu et al.'s offline workload (§7): the GPU mix above, all jobs present at time 0,
    F_j ∈ [1000, 6000] and a base iteration time τ_j ∈ [0.01, 0.05] s drawn so that
    ρ̂_j = F_j·τ_j ∈ [50, 300] s. τ_j is the time of the job alone on one server under the
    default RAR model (compute + intra-server ring + one server's overhead); the gradient size
    m_j ∈ [1, 5] MB sets how much slower it gets across servers and under contention.
    """
    from ..core.cluster_io import YU22_INTRA_GBPS
    from ..perf.rar import RarModel, gbps_to_bytes

    rng = np.random.default_rng(seed)
    sizes = _gpu_mix(num_jobs)
    sizes_arr = rng.permutation(np.array(sizes))
    lo_f, hi_f = YU22_ITERATIONS
    iters = rng.integers(lo_f, hi_f + 1, size=num_jobs)
    lo_t = np.maximum(YU22_TAU[0], YU22_RHO[0] / iters)
    hi_t = np.minimum(YU22_TAU[1], YU22_RHO[1] / iters)
    tau = lo_t + (hi_t - lo_t) * rng.random(num_jobs)
    grad = rng.uniform(*YU22_GRADIENT_MB, size=num_jobs)
    model = RarModel()
    b_i = gbps_to_bytes(YU22_INTRA_GBPS)
    jobs = []
    for i in range(num_jobs):
        probe = JobSpec(
            i,
            0.0,
            int(sizes_arr[i]),
            int(iters[i]),
            ModelProfile(f"yu22-{i}", float(grad[i]), 1000.0, 32, 0.0, 0.0),
        )
        comm = model.iteration_time(probe, 1, 1, b_i, b_i)  # everything but compute
        compute = float(tau[i]) - comm
        prof = ModelProfile(
            name=f"yu22-{i}",
            size_mb=round(float(grad[i]), 6),
            memory_mb=1000.0,
            batch_size=32,
            t_forward=compute / 3.0,
            t_backward=compute * 2.0 / 3.0,
        )
        jobs.append(JobSpec(i, 0.0, int(sizes_arr[i]), int(iters[i]), prof))
    return jobs


def _gpu_mix(num_jobs: int) -> list[int]:
    sizes: list[int] = []
    for g, n in WANG20_GPU_MIX.items():
        sizes += [g] * n
    if num_jobs != len(sizes):  # keep the mix's proportions for other sizes
        idx = np.linspace(0, len(sizes) - 1, num_jobs).round().astype(int)
        sizes = [sizes[i] for i in idx]
    return sizes


def luo24(seed: int = 0) -> list[JobSpec]:
    """Luo et al.'s 240-job simulation workload: the Pollux artifact's recipe at load 1.5 over
    8 hours, from built-in stand-ins for the Philly trace (``workloads/luo24.py``)."""
    from .luo24 import generate_pollux_workload

    return generate_pollux_workload(seed, num_jobs=240)


def luo24_physical(seed: int = 0) -> list[JobSpec]:
    """Luo et al.'s 30-job physical-cluster workload (Table II), our reading of §VI-A."""
    from .luo24 import generate_physical_workload

    return generate_physical_workload(seed)


WORKLOAD_PRESETS = {
    "wang20": wang20,
    "yu22": yu22,
    "luo24": luo24,
    "luo24-physical": luo24_physical,
}
