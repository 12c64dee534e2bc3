"""Knobs of the luo24 (Pollux-recipe) generator (issue #16): the requested large share, GPU-count
mix, arrival rate and duration scale are met; the defaults give the recipe's jobs unchanged;
bad values are one-line InputErrors naming the field. Built-in trace stand-in (no data needed)
except where marked; small sizes, the whole file runs in a few seconds."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsched.errors import InputError
from ddlsched.workloads.luo24 import (
    LARGE_JOB_MIN_GPUS,
    MAX_GPUS_ANY_APP,
    PAPER_WORKLOAD,
    POLLUX_CONFIGURATIONS,
    POLLUX_MIN_LOCAL,
    generate_paper_workload,
    generate_pollux_workload,
)

PHILLY = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pollux" / "traces"
PHILLY = PHILLY / "philly.csv"
HYP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: GPU counts a test may weight: ≤ 16 fits every application's batch (MAX_GPUS_ANY_APP)
COUNTS = [1, 2, 3, 4, 6, 8, 12, 16]
#: application → GPU-time category of the recipe (< 1, < 10, < 100, ≥ 100 GPU-hours)
CATEGORY = {"cifar10": 0, "ncf": 0, "deepspeech2": 1, "bert": 1, "yolov3": 2, "imagenet": 3}


def fingerprint(jobs) -> str:
    text = "\n".join(
        f"{j.job_id},{j.arrival!r},{j.application},{j.num_gpus},{j.batch_size},{j.name}"
        for j in jobs
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def n_large(jobs) -> int:
    return sum(j.num_gpus >= LARGE_JOB_MIN_GPUS for j in jobs)


def within(count: int, n: int, p: float) -> bool:
    """``count`` of ``n`` draws is within 5 standard deviations of n·p (binomial)."""
    return abs(count - n * p) <= 5 * math.sqrt(n * p * (1 - p)) + 1


# --- defaults unchanged ----------------------------------------------------------------------

#: sha256 prefixes of the jobs the generator gave before the knobs (commit 6ecb677)
BEFORE = [
    (0, {}, "43c08dbe7a045653"),
    (7, {"num_jobs": 240}, "528c5abbabb21ee2"),
    (3, {"num_jobs": 80, "duration_hours": 2.5, "start_hour": 5, "load": 1.5}, "acc2c187134794dc"),
]


@pytest.mark.parametrize(("seed", "kw", "digest"), BEFORE)
def test_defaults_give_the_jobs_of_before(seed, kw, digest):
    assert fingerprint(generate_pollux_workload(seed, **kw)) == digest
    explicit = {"large_share": None, "gpu_weights": None, "duration_scale": 1.0}
    assert fingerprint(generate_pollux_workload(seed, **kw, **explicit)) == digest


def test_defaults_with_the_trace_give_the_jobs_of_before():
    if not PHILLY.is_file():
        pytest.skip(f"Philly trace not found at {PHILLY}")
    jobs = generate_pollux_workload(2, num_jobs=240, philly=PHILLY)
    assert fingerprint(jobs) == "dfebf93ac423f98f"


# --- large share -----------------------------------------------------------------------------


@HYP
@given(seed=st.integers(0, 2**31), n=st.integers(1, 300), share=st.floats(0.0, 1.0))
def test_large_share_is_met_exactly(seed, n, share):
    jobs = generate_pollux_workload(seed, num_jobs=n, large_share=share)
    assert len(jobs) == n
    assert n_large(jobs) == math.floor(share * n + 0.5)  # by construction, rounded half up
    for j in jobs:  # the recipe's applications and batches; counts from the recipe's mix
        assert j.batch_size in {b for _, b in POLLUX_CONFIGURATIONS[j.application]}
        assert j.num_gpus in (1, 4, 6, 8, 12, 16, 24, 32, 48)


@HYP
@given(seed=st.integers(0, 2**31), share=st.floats(0.02, 0.5))
def test_large_jobs_are_those_with_the_most_gpu_time(seed, share):
    """The large class takes the longest trace jobs: its application categories (by GPU time)
    are never below those of a small job."""
    jobs = generate_pollux_workload(seed, num_jobs=200, large_share=share)
    large = [CATEGORY[j.application] for j in jobs if j.num_gpus >= LARGE_JOB_MIN_GPUS]
    small = [CATEGORY[j.application] for j in jobs if j.num_gpus < LARGE_JOB_MIN_GPUS]
    assert not large or not small or min(large) >= max(small)


@HYP
@given(seed=st.integers(0, 2**31), share=st.floats(0.0, 1.0))
def test_large_share_keeps_sample_applications_and_arrivals(seed, share):
    base = generate_pollux_workload(seed, num_jobs=120)
    knob = generate_pollux_workload(seed, num_jobs=120, large_share=share)
    assert [(j.arrival, j.application, j.batch_size) for j in knob] == [
        (j.arrival, j.application, j.batch_size) for j in base
    ]


# --- GPU-count mix ---------------------------------------------------------------------------

weights_st = st.dictionaries(
    st.sampled_from(COUNTS), st.floats(0.0, 10.0), min_size=1, max_size=len(COUNTS)
).filter(lambda w: sum(w.values()) > 0.5 and min(v for v in w.values() if v > 0) > 0.2)


@HYP
@given(seed=st.integers(0, 2**31), weights=weights_st)
def test_gpu_counts_follow_the_weights(seed, weights):
    n = 1500
    jobs = generate_pollux_workload(seed, num_jobs=n, gpu_weights=weights)
    counts = Counter(j.num_gpus for j in jobs)
    total = sum(weights.values())
    assert set(counts) <= {g for g, w in weights.items() if w > 0}
    for g, w in weights.items():
        assert within(counts[g], n, w / total), (g, counts[g], n * w / total)


@HYP
@given(
    seed=st.integers(0, 2**31),
    weights=weights_st.filter(
        lambda w: (
            any(v > 0 and g < 5 for g, v in w.items())
            and any(v > 0 and g >= 5 for g, v in w.items())
        )
    ),
    share=st.floats(0.05, 0.95),
)
def test_gpu_counts_follow_the_weights_within_each_class(seed, weights, share):
    n = 1500
    jobs = generate_pollux_workload(seed, num_jobs=n, gpu_weights=weights, large_share=share)
    k = math.floor(share * n + 0.5)
    assert n_large(jobs) == k
    counts = Counter(j.num_gpus for j in jobs)
    for large, size in ((True, k), (False, n - k)):
        cls = {g: w for g, w in weights.items() if (g >= LARGE_JOB_MIN_GPUS) == large}
        total = sum(cls.values())
        for g, w in cls.items():
            assert within(counts[g], size, w / total), (g, counts[g], size * w / total)


def test_counts_too_many_for_a_batch_are_skipped():
    """deepspeech2 at batch 320 cannot use 48 GPUs (local batch 7 < 10 measured), yolov3 not 32."""
    jobs = generate_pollux_workload(5, num_jobs=600, gpu_weights={1: 1, 16: 1, 32: 1, 48: 1})
    assert {j.num_gpus for j in jobs} == {1, 16, 32, 48}
    for j in jobs:
        assert math.ceil(j.batch_size / j.num_gpus) >= POLLUX_MIN_LOCAL[j.application]


# --- arrival rate and durations --------------------------------------------------------------


@HYP
@given(seed=st.integers(0, 2**31), n=st.integers(1, 300), rate=st.floats(0.5, 500.0))
def test_arrival_rate_stretches_the_window(seed, n, rate):
    base = generate_pollux_workload(seed, num_jobs=n)
    knob = generate_pollux_workload(seed, num_jobs=n, jobs_per_hour=rate)
    span = n / rate * 3600.0  # the window: n jobs at `rate` per hour
    factor = span / (8 * 3600.0)
    assert all(0 <= j.arrival < span and j.arrival == int(j.arrival) for j in knob)
    assert Counter(j.application for j in knob) == Counter(j.application for j in base)
    # same busy-period shape, time scaled (jobs in the same second may swap places)
    for a, b in zip(sorted(j.arrival for j in knob), sorted(j.arrival for j in base), strict=True):
        assert abs(a - b * factor) <= factor + 1


@HYP
@given(seed=st.integers(0, 2**31), scale=st.floats(0.01, 1.0))
def test_shorter_durations_move_jobs_to_shorter_applications(seed, scale):
    base = generate_pollux_workload(seed, num_jobs=150)
    knob = generate_pollux_workload(seed, num_jobs=150, duration_scale=scale)
    assert [j.arrival for j in knob] == [j.arrival for j in base]
    for a, b in zip(knob, base, strict=True):
        assert CATEGORY[a.application] <= CATEGORY[b.application]


def test_longer_durations_move_jobs_to_longer_applications():
    base = Counter(CATEGORY[j.application] for j in generate_pollux_workload(1, num_jobs=300))
    long = generate_pollux_workload(1, num_jobs=300, duration_scale=20.0)
    assert Counter(CATEGORY[j.application] for j in long)[3] > base[3]


# --- the paper's setting ---------------------------------------------------------------------


@pytest.mark.parametrize("n", [240, 480])
def test_paper_workload_mix(n):
    jobs = generate_paper_workload(1, num_jobs=n)
    assert len(jobs) == n
    assert n_large(jobs) == math.floor(PAPER_WORKLOAD["large_share"] * n + 0.5)
    assert 0.12 <= n_large(jobs) / n <= 0.123  # Table III's 11.7–12.4 %
    assert {j.num_gpus for j in jobs} <= set(PAPER_WORKLOAD["gpu_weights"])
    assert max(j.arrival for j in jobs) < 8 * 3600  # 240 (480) jobs in 8 h: 30 (60) per hour
    assert generate_paper_workload(1, num_jobs=n) == jobs


def test_paper_workload_knobs_can_be_overridden():
    jobs = generate_paper_workload(2, num_jobs=100, large_share=0.3, jobs_per_hour=50)
    assert n_large(jobs) == 30
    assert max(j.arrival for j in jobs) < 2 * 3600


# --- bad values ------------------------------------------------------------------------------

BAD = [
    ({"large_share": -0.1}, "large_share"),
    ({"large_share": 1.5}, "large_share"),
    ({"large_share": math.nan}, "large_share"),
    ({"large_share": "many"}, "large_share"),
    ({"duration_scale": 0}, "duration_scale"),
    ({"duration_scale": -2.0}, "duration_scale"),
    ({"duration_scale": math.inf}, "duration_scale"),
    ({"duration_scale": None}, "duration_scale"),
    ({"jobs_per_hour": 0}, "jobs_per_hour"),
    ({"jobs_per_hour": math.nan}, "jobs_per_hour"),
    ({"jobs_per_hour": True}, "jobs_per_hour"),
    ({"gpu_weights": {}}, "gpu_weights"),
    ({"gpu_weights": [1, 2]}, "gpu_weights"),
    ({"gpu_weights": {0: 1.0}}, "gpu_weights"),
    ({"gpu_weights": {2.5: 1.0}}, "gpu_weights"),
    ({"gpu_weights": {True: 1.0}}, "gpu_weights"),
    ({"gpu_weights": {2: -1.0}}, "gpu_weights"),
    ({"gpu_weights": {2: math.nan}}, "gpu_weights"),
    ({"gpu_weights": {2: "x"}}, "gpu_weights"),
    ({"gpu_weights": {2: 0.0}}, "gpu_weights"),
    ({"gpu_weights": {MAX_GPUS_ANY_APP * 2: 1.0}}, "gpu_weights"),
    ({"gpu_weights": {1: 1.0}, "large_share": 0.5}, "gpu_weights"),
    ({"gpu_weights": {8: 1.0}, "large_share": 0.5}, "gpu_weights"),
]


@pytest.mark.parametrize(("kw", "field"), BAD)
def test_bad_values_are_input_errors_naming_the_field(kw, field):
    with pytest.raises(InputError) as err:
        generate_pollux_workload(0, num_jobs=10, **kw)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_one_class_needs_weight_only_on_that_class():
    assert n_large(generate_pollux_workload(0, num_jobs=20, large_share=0, gpu_weights={1: 1})) == 0
    jobs = generate_pollux_workload(0, num_jobs=20, large_share=1, gpu_weights={8: 1})
    assert {j.num_gpus for j in jobs} == {8}
