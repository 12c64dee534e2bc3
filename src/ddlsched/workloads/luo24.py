"""Pollux-style workloads, as Luo et al. use them in their simulations (SPEC §6).

Luo et al. "mainly follow the settings of Pollux": jobs sampled from the busiest period of the
Microsoft Philly trace and annotated with Pollux's six applications. The recipe is the one of the
Pollux artifact's workload generator (petuum/adaptdl, branch ``osdi21-artifact``,
``simulator/workload.py``, Apache-2.0), re-implemented here without pandas:

1. Keep the Philly jobs that ran at least 60 s and used less than 1000 GPU-hours, shift their
   submission times back by ``start_hour`` (2 h) and keep those whose shifted time of day falls
   in the first ``duration_hours`` (8 h) of a day — of any day of the trace.
2. Sample ``num_jobs`` of them without replacement; a job arrives at its shifted time of day.
3. Name the application by the job's GPU time: < 1 GPU-hour cifar10 or ncf (even odds);
   < 10 deepspeech2, half of which become bert (a second random stream); < 100 yolov3;
   otherwise imagenet. The job's (replicas, total batch) is drawn uniformly from the
   application's configurations (:data:`POLLUX_CONFIGURATIONS`: those the artifact's
   ``get_configurations(0.5, 0.8)`` yields, i.e. the replica counts at which the job runs within
   12 h at 50–80 % scaling efficiency; the trace's own GPU count is not used).
4. Sort by arrival; the i-th job is named ``<application>-<i>``.

With the trace, the random streams are those of the artifact (Python's ``random`` seeded with
``seed`` and ``seed + 3``, NumPy's legacy ``RandomState`` for the sample), so ``seed`` k with
160 jobs gives the artifact's ``workloads/workload-k.csv`` row for row (and 80 / 240 / 320 jobs
its ``workloads-0.5|1.5|2.0`` files). Without the trace, built-in distributions stand in for the
filtered trace (arrival hour, GPU count, duration; see :func:`generate_pollux_workload`); they were
fitted to the trace's jobs in the default window and reproduce its GPU-time categories within
half a percentage point.

``load`` scales the number of jobs in the same window, i.e. the submission rate: Luo et al.'s
load sensitivity (Fig. 6a) scales their baseline of 240 jobs by 0.5×–2× (120–480 jobs), as the
Pollux artifact's ``workloads-0.5 … 2.0`` scale its 160.

Knobs beyond the artifact (issue #16; all default to the recipe above, bit for bit):
``large_share`` (share of jobs on more than 4 GPUs, Luo §VI-C's "large"), ``gpu_weights``
(the GPU-count mix), ``duration_scale`` (job lengths, via the application choice) and
``jobs_per_hour`` (arrival rate). :data:`PAPER_WORKLOAD` is the setting derived from Luo et al.'s
text and Tables III–IV (docs/reproduction/luo24.md, "A workload that matches the paper");
:func:`generate_paper_workload` generates it.
"""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.job import JobSpec, ModelProfile
from ..core.results import atomic_write_text, csv_text
from ..errors import InputError
from .philly import read_philly
from .pollux import POLLUX_COLUMNS

#: (num_replicas, total batch size) per application: the artifact's
#: ``APPLICATIONS[app].get_configurations(0.5, 0.8)``, in its order (ascending replicas).
POLLUX_CONFIGURATIONS: dict[str, tuple[tuple[int, int], ...]] = {
    "bert": ((6, 384), (8, 384), (12, 384), (16, 384)),
    "cifar10": ((6, 2048), (8, 2048), (12, 4096), (16, 4096)),
    "deepspeech2": ((6, 320), (8, 320), (12, 640)),
    "imagenet": ((24, 3200), (32, 6400), (48, 6400)),
    "ncf": ((1, 32768),),
    "yolov3": ((4, 64),),
}

#: The artifact's trace filter: jobs of at least 60 s and under 1000 GPU-hours.
MIN_DURATION_S = 60.0
MAX_GPU_TIME_S = 1000.0 * 3600.0
#: GPU-time category bounds (GPU-hours → seconds): small / medium / large / extra large.
CATEGORY_BOUNDS_S = (1.0 * 3600.0, 10.0 * 3600.0, 100.0 * 3600.0)
#: The artifact's command-line defaults: the window starts 2 h into the day and lasts 8 h.
DEFAULT_START_HOUR = 2
#: Luo et al. §VI-C: "those requiring more than 4 GPUs considered large, and others small".
LARGE_JOB_MIN_GPUS = 5
#: The recipe's own GPU-count mix (percent of jobs): the trace window's GPU-time categories
#: (78.3 / 15.3 / 4.6 / 1.9 %) spread over each application's :data:`POLLUX_CONFIGURATIONS`
#: (cifar10 / ncf even odds; deepspeech2 / bert even odds; configurations uniform). 56.2 % of
#: jobs are large. ``large_share`` without ``gpu_weights`` uses it within each class.
POLLUX_GPU_WEIGHTS: dict[int, float] = {
    1: 39.2, 4: 4.6, 6: 14.3, 8: 14.3, 12: 14.3, 16: 11.7, 24: 0.6, 32: 0.6, 48: 0.6,
}  # fmt: skip

#: Smallest local batch per GPU that the Pollux artifact's profiles measure (placements.csv).
POLLUX_MIN_LOCAL: dict[str, int] = {
    "bert": 4, "cifar10": 32, "deepspeech2": 10, "imagenet": 20, "ncf": 32, "yolov3": 4,
}  # fmt: skip
#: Every application's Pollux batch fits this many GPUs (yolov3: 64 samples, ≥ 4 per GPU).
MAX_GPUS_ANY_APP = 16
#: Seed offset of the knobs' own stream (the recipe's streams use seed, seed + 3).
KNOB_STREAM = 16

# --- built-in stand-in for the trace -------------------------------------------------------
# Estimated from the 31,293 jobs of traces/philly.csv that pass the filter and fall in the
# default window (original hours of day 2–9), except the hourly profile (all 74,428 filtered
# jobs, by hour of day). Summary statistics only; see generate_pollux_workload.

#: Number of jobs per GPU count in the default window.
PHILLY_GPU_COUNTS: dict[int, int] = {
    1: 29643,
    2: 166,
    4: 758,
    8: 627,
    12: 2,
    16: 71,
    24: 2,
    32: 22,
    64: 2,
}
#: ln(duration / s) of 1-GPU jobs: a mixture of normals, (weight, mean, sd) per component.
PHILLY_LOG_DURATION_1GPU: tuple[tuple[float, float, float], ...] = (
    (0.124, 4.239, 0.094),
    (0.717, 7.074, 1.180),
    (0.085, 7.853, 0.065),
    (0.074, 10.322, 1.532),
)
#: ln(duration / s) of multi-GPU jobs: (weight, mean, sd) per component.
PHILLY_LOG_DURATION_MULTI: tuple[tuple[float, float, float], ...] = (
    (0.348, 5.620, 0.971),
    (0.652, 10.755, 1.377),
)
#: Filtered jobs submitted in each hour of the day (0–23), all days.
PHILLY_HOURLY_SUBMISSIONS: tuple[int, ...] = (
    4086, 3204, 3550, 3368, 2240, 3728, 5169, 6585, 3499, 3154, 2933, 2603,
    2061, 2185, 2058, 2098, 2890, 2101, 2534, 2202, 2968, 2637, 3551, 3024,
)  # fmt: skip


def generate_pollux_workload(
    seed: int,
    *,
    num_jobs: int = 160,
    duration_hours: float = 8.0,
    philly: str | Path | None = None,
    load: float = 1.0,
    start_hour: int = DEFAULT_START_HOUR,
    large_share: float | None = None,
    gpu_weights: Mapping[int, float] | None = None,
    duration_scale: float = 1.0,
    jobs_per_hour: float | None = None,
    vc_queues: bool = False,
) -> list[JobSpec]:
    """A Pollux-artifact workload: ``num_jobs · load`` jobs (rounded half up) arriving over
    ``duration_hours`` (whole seconds from 0) from the trace's ``start_hour`` o'clock on; recipe
    in the module docstring.

    ``philly`` is the artifact's ``traces/philly.csv`` (``timestamp,duration,num_gpus,gpu_time,
    cluster``). With it, seed k reproduces the artifact's k-th workload file. Luo et al.'s
    baseline is ``num_jobs=240`` (= ``load=1.5`` of the default), their Fig. 6a 120–480 jobs.

    Without it, each job's submission and GPU time are drawn from distributions estimated on the
    trace's 31,293 filtered jobs in the default window (02:00–10:00 of each day):

    * hour of day ∝ :data:`PHILLY_HOURLY_SUBMISSIONS` (the filtered trace's submissions per
      hour of day), second within the hour uniform;
    * GPU count ∝ :data:`PHILLY_GPU_COUNTS` (its histogram: 94.7 % 1 GPU, 2.4 % 4, 2.0 % 8,
      0.5 % 2, 0.3 % 12–64);
    * ln(duration) a mixture of normals, fitted by maximum likelihood (EM, 2000 iterations) to
      the log durations: for 1-GPU jobs four components (:data:`PHILLY_LOG_DURATION_1GPU`: a
      spike just above the 60-s cut, the bulk with median ≈ 20 min, a spike at ≈ 43 min, a tail
      with median ≈ 8.4 h; the data's median is 1412 s), for multi-GPU jobs two
      (:data:`PHILLY_LOG_DURATION_MULTI`: ≈ 5 min and ≈ 13 h; data median 14,886 s);
      a single lognormal per group does not fit: it puts 24 % instead of 15 % of the jobs
      between 1 and 10 GPU-hours;
    * draws outside the artifact's filter (duration < 60 s, GPU time ≥ 1000 h) are redrawn.

    Resulting GPU-time categories (< 1, < 10, < 100, < 1000 GPU-hours): 77.8 / 15.7 / 4.8 /
    1.7 % against the trace window's 78.3 / 15.3 / 4.6 / 1.9 %. The application and
    configuration choices are then the artifact's, with the same random streams.

    Knobs (issue #16); at their defaults the jobs are the recipe's, bit for bit. Their own
    draws come from a separate stream, so changing one knob leaves the trace sample, the
    applications and the batch sizes as they were.

    * ``large_share`` (0–1; default: whatever the recipe gives, ≈ 56 %): exactly
      ``round(large_share · jobs)`` jobs are *large* (more than 4 GPUs, Luo §VI-C), namely
      those with the largest trace GPU time (ties: earlier in the sample); the others are
      small (1–4 GPUs). Each job's GPU count is drawn from ``gpu_weights`` restricted to its
      class (default :data:`POLLUX_GPU_WEIGHTS`, the recipe's own mix).
    * ``gpu_weights`` ({GPU count: weight}; default: the application's configuration): each
      job's GPU count is drawn ∝ the weights (within its class if ``large_share`` is set).
      The total batch stays the application's; a job on fewer GPUs than its configuration
      accumulates gradients, as Luo et al.'s jobs do; counts that would leave a GPU a smaller
      local batch than the Pollux profiles measure (:data:`POLLUX_MIN_LOCAL`; only
      deepspeech2 above 32 and yolov3 above 16 GPUs) are skipped for that job.
    * ``duration_scale`` (> 0; default 1): multiplies each trace job's GPU time before the
      application is chosen by it, so < 1 moves jobs to the shorter applications (a job's
      length is its application's epochs). Which jobs are large does not change.
    * ``jobs_per_hour`` (> 0; default: jobs / ``duration_hours``): arrival rate; the sampled
      submission times are stretched from the window to ``jobs / jobs_per_hour`` hours (the
      busy period's hourly profile is kept), whole seconds.
    * ``vc_queues`` (needs ``philly``; issue #28): each job's ``queue`` is the virtual cluster
      of the trace row it was sampled from (``--queues proportional`` then gives one
      ClusterQueue per VC); nothing else changes.
    """
    seed = operator.index(seed)
    total = _job_count(num_jobs, load)
    window_s = _window_seconds(duration_hours)
    start = operator.index(start_hour)
    share = _check_share(large_share)
    weights = _check_gpu_weights(gpu_weights, share)
    scale = _positive(duration_scale, "duration_scale")
    rate = None if jobs_per_hour is None else _positive(jobs_per_hour, "jobs_per_hour")
    rng = random.Random(seed)
    rng2 = random.Random(seed + 3)
    # The artifact seeds pandas' sample (a legacy RandomState) from the first stream.
    sample_seed = rng.randint(0, 1 << 32) % (1 << 32)
    vcs: Sequence[str] = ("",) * total
    if philly is not None:
        times, gpu_times, vcs = _sample_trace(Path(philly), total, window_s, start, sample_seed)
        if not vc_queues:
            vcs = ("",) * total
    elif vc_queues:
        raise InputError("needs the Philly trace (philly=…): the VCs come from its rows",
                         field="vc_queues")  # fmt: skip
    else:
        times, gpu_times = _sample_builtin(total, window_s, start, sample_seed)
    if scale != 1.0:
        gpu_times = gpu_times * scale
    if rate is not None:  # stretch the window to total / rate hours
        times = times * (total / rate * 3600.0 / window_s)
    records = []
    for t, gt, vc in zip(times, gpu_times, vcs, strict=True):
        if gt < CATEGORY_BOUNDS_S[0]:
            app = rng.choice(["cifar10", "ncf"])
        elif gt < CATEGORY_BOUNDS_S[1]:
            app = "deepspeech2"
        elif gt < CATEGORY_BOUNDS_S[2]:
            app = "yolov3"
        else:
            app = "imagenet"
        reps, bsz = rng.choice(POLLUX_CONFIGURATIONS[app])
        if app == "deepspeech2" and rng2.randint(0, 1):
            app = "bert"
            reps, bsz = rng2.choice(POLLUX_CONFIGURATIONS[app])
        records.append((int(t), app, reps, bsz, vc))
    if weights is not None:  # also set when only large_share is
        gpus = _knob_gpu_counts(seed, gpu_times, records, share, weights)
        records = [
            (t, app, g, bsz, vc) for (t, app, _, bsz, vc), g in zip(records, gpus, strict=True)
        ]
    records.sort(key=lambda r: r[0])  # stable, as the artifact's list.sort
    return [
        JobSpec(
            job_id=i,
            arrival=float(t),
            num_gpus=reps,
            iterations=0,
            model=ModelProfile(app, 0.0, 0.0, bsz, 0.0, 0.0),
            application=app,
            batch_size=bsz,
            name=f"{app}-{i}",
            queue=vc,
        )
        for i, (t, app, reps, bsz, vc) in enumerate(records)
    ]


#: Luo et al.'s simulation workload as their text and Tables III–IV describe it (issue #16;
#: derivation in docs/reproduction/luo24.md, "A workload that matches the paper"):
#:
#: * ``large_share`` 0.122: all = f·large + (1 − f)·small on Table III's average-JCT rows gives
#:   f = 11.7–12.4 % (mean 12.2 %; SJF-BSBF's row 12.2 %);
#: * ``gpu_weights``: large jobs on Pollux's counts in Pollux's proportions (§VI-A: "the
#:   settings of GPU numbers … follow those of Pollux"); small jobs 65 % on 1, 35 % on 4 GPUs
#:   and ``duration_scale`` 0.13, fitted together so that the jobs' exclusive run times on the
#:   Pollux profiles match Tables III–IV's JCT − queueing of SJF, FIFO and Tiresias (small
#:   0.55 h, large 1.74 h, all 0.69 h);
#: * the arrival rate stays the recipe's (240 jobs in 8 h = 30 per hour; Table IV's 480: 60),
#:   as the paper "mainly follow[s] the settings of Pollux" and scales the load by the number
#:   of jobs (Fig. 6a).
#:
#: Within a class the weights are normalised, so the two classes' weights need not add up.
PAPER_WORKLOAD: dict[str, Any] = {
    "large_share": 0.122,
    "gpu_weights": {
        1: 65.0,
        4: 35.0,
        **{g: w for g, w in POLLUX_GPU_WEIGHTS.items() if g >= LARGE_JOB_MIN_GPUS},
    },
    "duration_scale": 0.13,
}


def generate_paper_workload(
    seed: int, *, num_jobs: int = 240, philly: str | Path | None = None, **knobs: Any
) -> list[JobSpec]:
    """Luo et al.'s workload as their paper describes it: :func:`generate_pollux_workload`
    with :data:`PAPER_WORKLOAD` (240 jobs: Table III; 480: Table IV). ``knobs`` override
    single settings (any keyword of :func:`generate_pollux_workload`)."""
    return generate_pollux_workload(
        seed, num_jobs=num_jobs, philly=philly, **{**PAPER_WORKLOAD, **knobs}
    )


def write_pollux_csv(jobs: list[JobSpec], path: str | Path) -> None:
    """Write jobs in the Pollux format (``name,time,application,num_replicas,batch_size``),
    in ``(arrival, job_id)`` order, atomically. Round-trips through ``read_workload``.

    Raises ``ValueError`` for jobs the format cannot hold (no application or batch size,
    duplicate names, no jobs). A job without a name is written as ``<application>-<job_id>``.
    """
    ordered = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    if not ordered:
        raise ValueError("no jobs to write: a Pollux workload needs at least one")
    rows = []
    seen: set[str] = set()
    for j in ordered:
        if not j.application or j.batch_size < 1:
            raise ValueError(f"job {j.job_id} has no application/batch size (not a Pollux job)")
        name = j.name or f"{j.application}-{j.job_id}"
        if name in seen:
            raise ValueError(f"duplicate job name '{name}'")
        seen.add(name)
        rows.append([name, float(j.arrival), j.application, j.num_gpus, j.batch_size])
    atomic_write_text(path, csv_text(POLLUX_COLUMNS, rows))


# --------------------------------------------------------------------------------------------


def _job_count(num_jobs: int, load: float) -> int:
    n = operator.index(num_jobs)
    if n < 1:
        raise InputError(f"must be ≥ 1, got {n}", field="num_jobs")
    load = float(load)
    if not math.isfinite(load) or load <= 0:
        raise InputError(f"must be a finite number > 0, got {load}", field="load")
    total = math.floor(n * load + 0.5)
    if total < 1:
        raise InputError(f"num_jobs × load = {n * load:g} rounds to no jobs", field="load")
    return total


def _as_float(value: Any, field: str) -> float:
    """``value`` as a float; ``InputError`` naming ``field`` if it is not a number."""
    if isinstance(value, bool):
        raise InputError(f"must be a number, got {value!r}", field=field)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"must be a number, got {value!r}", field=field) from None


def _check_share(large_share: float | None) -> float | None:
    if large_share is None:
        return None
    x = _as_float(large_share, "large_share")
    if not 0.0 <= x <= 1.0:  # also rejects NaN
        raise InputError(f"must be a fraction in [0, 1], got {x}", field="large_share")
    return x


def _positive(value: float, field: str) -> float:
    x = _as_float(value, field)
    if not math.isfinite(x) or x <= 0:
        raise InputError(f"must be a finite number > 0, got {x}", field=field)
    return x


def _check_gpu_weights(
    gpu_weights: Mapping[int, float] | None, share: float | None
) -> dict[int, float] | None:
    """The weights as a dict (``POLLUX_GPU_WEIGHTS`` if only ``large_share`` is set); each
    class that ``share`` asks jobs of needs a positive weight."""
    if gpu_weights is None:
        return None if share is None else dict(POLLUX_GPU_WEIGHTS)
    if not isinstance(gpu_weights, Mapping) or not gpu_weights:
        raise InputError("must map GPU counts to weights, e.g. {1: 3, 8: 1}", field="gpu_weights")
    out: dict[int, float] = {}
    for g, w in gpu_weights.items():
        if isinstance(g, bool) or not isinstance(g, int | np.integer) or g < 1:
            raise InputError(f"GPU counts must be integers ≥ 1, got {g!r}", field="gpu_weights")
        wf = _as_float(w, "gpu_weights")
        if not math.isfinite(wf) or wf < 0:
            raise InputError(f"weight of {g} GPUs must be ≥ 0, got {w!r}", field="gpu_weights")
        out[int(g)] = wf
    # every job must find a count: one of ≤ 16 GPUs fits any application's batch
    large = sum(w for g, w in out.items() if LARGE_JOB_MIN_GPUS <= g <= MAX_GPUS_ANY_APP)
    small = sum(w for g, w in out.items() if g < LARGE_JOB_MIN_GPUS)
    if share is None and large + small <= 0:
        raise InputError(
            f"needs a weight > 0 on at most {MAX_GPUS_ANY_APP} GPUs", field="gpu_weights"
        )
    if share is not None and share > 0 and large <= 0:
        raise InputError(
            f"large_share {share:g} needs a weight > 0 on 5–{MAX_GPUS_ANY_APP} GPUs",
            field="gpu_weights",
        )
    if share is not None and share < 1 and small <= 0:
        raise InputError(
            f"large_share {share:g} needs a weight > 0 on 1–4 GPUs", field="gpu_weights"
        )
    return out


def _knob_gpu_counts(
    seed: int,
    gpu_times: np.ndarray,
    records: list[tuple[int, str, int, int, str]],
    share: float | None,
    weights: dict[int, float],
) -> list[int]:
    """GPU count per sampled job (sample order): the class by GPU-time rank, the count ∝ the
    weights of the class among the counts the job's batch allows (:func:`_fits`)."""
    n = len(records)
    large = np.ones(n, bool)
    if share is not None:
        k = math.floor(share * n + 0.5)
        large[:] = False
        large[np.lexsort((np.arange(n), -np.asarray(gpu_times)))[:k]] = True
    gen = np.random.default_rng([seed, KNOB_STREAM])
    out = []
    for (_, app, _, bsz, _), is_large in zip(records, large, strict=True):
        pool = [
            (g, w)
            for g, w in sorted(weights.items())
            if w > 0
            and (share is None or (g >= LARGE_JOB_MIN_GPUS) == is_large)
            and _fits(app, bsz, g)
        ]
        w = np.array([w for _, w in pool])
        out.append(pool[int(gen.choice(len(pool), p=w / w.sum()))][0])
    return out


def _fits(app: str, batch: int, gpus: int) -> bool:
    """Whether ``batch`` on ``gpus`` GPUs leaves each GPU a local batch the profiles measure."""
    return math.ceil(batch / gpus) >= POLLUX_MIN_LOCAL.get(app, 1)


def _window_seconds(duration_hours: float) -> float:
    d = float(duration_hours)
    if not math.isfinite(d) or d <= 0:
        raise InputError(f"must be a finite number > 0, got {d}", field="duration_hours")
    # A time of day is below 24 h: a longer window keeps every job, as in the artifact.
    return min(d, 24.0) * 3600.0


def _sample_trace(
    path: Path, n: int, window_s: float, start: int, sample_seed: int
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The artifact's filter, window and sample (pandas ``DataFrame.sample`` = the first ``n``
    of a legacy ``RandomState`` permutation of the filtered rows in file order)."""
    trace = read_philly(path)
    tod, duration, gpu_time = trace.time_of_day, trace.duration, trace.gpu_time
    shifted = (tod - start * 3600) % 86400
    keep = (duration >= MIN_DURATION_S) & (gpu_time < MAX_GPU_TIME_S) & (shifted < window_s)
    pool = np.flatnonzero(keep)
    if n > len(pool):
        raise InputError(
            f"asked for {n} jobs but only {len(pool)} trace jobs pass the filter and window",
            source=str(path),
        )
    pick = pool[np.random.RandomState(sample_seed).permutation(len(pool))[:n]]
    return shifted[pick], gpu_time[pick], tuple(trace.cluster[k] for k in pick)


def _sample_builtin(
    n: int, window_s: float, start: int, sample_seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Submission times and GPU times from the built-in stand-in for the filtered trace."""
    gen = np.random.default_rng(sample_seed)
    end = math.ceil(window_s)  # arrivals are whole seconds t < window_s
    lo = np.arange(0, end, 3600)
    hi = np.minimum(lo + 3600, end)
    hours = (start + lo // 3600) % 24
    weight = np.array([PHILLY_HOURLY_SUBMISSIONS[h] for h in hours], float) * (hi - lo) / 3600
    k = gen.choice(len(lo), size=n, p=weight / weight.sum())
    times = gen.integers(lo[k], hi[k])
    counts = np.array(list(PHILLY_GPU_COUNTS))
    freq = np.array(list(PHILLY_GPU_COUNTS.values()), float)
    gpus = gen.choice(counts, size=n, p=freq / freq.sum()).astype(float)
    duration = np.zeros(n)
    todo = np.arange(n)
    while len(todo):
        g = gpus[todo]
        d = np.where(
            g == 1,
            _draw_mixture(gen, PHILLY_LOG_DURATION_1GPU, len(todo)),
            _draw_mixture(gen, PHILLY_LOG_DURATION_MULTI, len(todo)),
        )
        duration[todo] = d
        todo = todo[(d < MIN_DURATION_S) | (d * g >= MAX_GPU_TIME_S)]
    return times, duration * gpus


def _draw_mixture(
    gen: np.random.Generator, comps: tuple[tuple[float, float, float], ...], n: int
) -> np.ndarray:
    w = np.array([c[0] for c in comps])
    mu = np.array([c[1] for c in comps])
    sd = np.array([c[2] for c in comps])
    k = gen.choice(len(comps), size=n, p=w / w.sum())
    return np.exp(gen.normal(mu[k], sd[k]))


#: Luo et al.'s physical-cluster workload (§VI-A): per-GPU batch we give each application (our
#: choice: about half its largest measured local batch, so two workers can share a GPU)
PHYSICAL_LOCAL_BATCH = {
    "bert": 6,
    "cifar10": 128,
    "deepspeech2": 20,
    "imagenet": 50,
    "ncf": 1024,
    "yolov3": 4,
}


def generate_physical_workload(
    seed: int, *, num_jobs: int = 30, window: float = 1200.0
) -> list[JobSpec]:
    """Luo et al.'s 30-job physical workload as the paper describes it: 2/3 of the jobs use at
    most 8 GPUs ({1, 2, 4, 8}), 1/3 use 12 or 16; 100–5000 training iterations; applications
    uniform over the six Pollux ones. Not published, so our choices: arrivals uniform over
    ``window`` seconds (whole seconds), batch = ``PHYSICAL_LOCAL_BATCH`` × GPUs."""
    if num_jobs < 1:
        raise InputError(f"must be ≥ 1, got {num_jobs}", field="num_jobs")
    rng = np.random.default_rng(seed)
    n_large = num_jobs // 3
    sizes = np.concatenate(
        [rng.choice([1, 2, 4, 8], size=num_jobs - n_large), rng.choice([12, 16], size=n_large)]
    )
    sizes = rng.permutation(sizes)
    apps = sorted(PHYSICAL_LOCAL_BATCH)
    app_idx = rng.integers(0, len(apps), size=num_jobs)
    iters = rng.integers(100, 5001, size=num_jobs)
    arrivals = np.sort(rng.integers(0, int(window), size=num_jobs)).astype(float)
    jobs = []
    for i in range(num_jobs):
        app = apps[int(app_idx[i])]
        g = int(sizes[i])
        batch = PHYSICAL_LOCAL_BATCH[app] * g
        jobs.append(
            JobSpec(
                job_id=i,
                arrival=float(arrivals[i]),
                num_gpus=g,
                iterations=int(iters[i]),
                model=ModelProfile(app, 0.0, 0.0, batch, 0.0, 0.0),
                application=app,
                batch_size=batch,
                name=f"{app}-{i}",
            )
        )
    return jobs
