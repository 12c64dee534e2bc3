"""ddlsched.workloads.gavel_gen reproduces Gavel's job generator (issue #17).

The hard-coded jobs below come from Gavel itself (stanford-futuredata/gavel, commit
c4fa40097339e9608ab71fd64c8bdea96a5e4a4c, scheduler/), run in a Python 3.11 venv with cvxpy:

    cd scheduler && python -c "
    import random, math, sys; sys.path.insert(0, '.'); import utils
    tp = utils.read_all_throughputs_json_v2('simulation_throughputs.json')
    g = random.Random(); g.seed(0 + 2)       # Scheduler._initialize_seeds(seed=0)
    for i in range(6):
        j = utils.generate_job(throughputs=tp, reference_worker_type='v100', rng=g,
                               generate_multi_gpu_jobs=MULTI)
        print(j.job_type, j.scale_factor, repr(j.duration), repr(j.total_steps))
    a = random.Random(); a.seed(0 + 3); t = 0.0
    for i in range(6): print(t); t = -math.log(1.0 - a.random()) / (1.0 / 18000.0) + t"

and agree with the trace Gavel's ``simulate_scheduler_with_generated_jobs.py -c 4:4:4 -s 0 -e 50
-p max_min_fairness_perf --seed 0 -l 18000 -m --output_trace_file_name ...`` wrote (its lines
2-201: Gavel writes job 0 twice when the window starts at job 0). The CI test needs no Gavel and
no Gavel data: it uses a throughputs file of ones, so ``total_steps == duration``; with Gavel's
``simulation_throughputs.json`` present (../shared/data/gavel) the steps are checked too.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.workloads import read_trace
from ddlsched.workloads.gavel_gen import (
    GAVEL_SCALE_FACTORS,
    JOB_TABLE,
    generate_gavel_jobs,
    write_gavel_trace,
)

GAVEL_TP = (
    Path(__file__).resolve().parents[1].parent / "shared/data/gavel/simulation_throughputs.json"
)

# seed 0, lam 18000: (job type, duration s) of Gavel's first six jobs; scale factors without
# and with -m; arrivals (s). Durations and arrivals are Gavel's floats, printed with repr.
GAVEL_SEED0 = [
    ("ResNet-18 (batch size 64)", 68344.35010595087),
    ("Transformer (batch size 16)", 31016.60914593223),
    ("Recommendation (batch size 2048)", 2146.6088374387864),
    ("Recommendation (batch size 8192)", 7386.674819745945),
    ("LM (batch size 5)", 6858.69820697011),
    ("Transformer (batch size 64)", 445845.32667457394),
]
GAVEL_SEED0_MULTI_SCALE = [8, 1, 1, 1, 4, 1]
GAVEL_SEED0_ARRIVALS = [
    0.0,
    4891.72145820603,
    19035.496550581913,
    27350.853913127743,
    44021.358889867406,
    61710.8932894801,
]
# total_steps with Gavel's simulation_throughputs.json (V100), without / with -m
GAVEL_SEED0_STEPS = [
    1646636.2758419,
    343170.46864225325,
    16034.37819420177,
    20989.313058424774,
    748740.885162768,
    3842187.572961124,
]
GAVEL_SEED0_STEPS_MULTI = [
    17484476.26110642,
    343170.46864225325,
    16034.37819420177,
    20989.313058424774,
    869104.8688980676,
    3842187.572961124,
]


@pytest.fixture(scope="module")
def ones(tmp_path_factory) -> Path:
    """A throughputs file in Gavel's layout: 1 step/s for every job type and scale factor."""
    table = {f"('{t.model}', {k})": {"null": 1.0} for t in JOB_TABLE for k in GAVEL_SCALE_FACTORS}
    p = tmp_path_factory.mktemp("gavel") / "ones.json"
    p.write_text(json.dumps({"v100": table}))
    return p


@pytest.mark.parametrize("multi", [False, True])
def test_first_jobs_of_seed0_are_gavels(ones, multi):
    jobs = generate_gavel_jobs(6, 18000.0, 0, ones, multi_gpu=multi)
    assert [(j.job_type, j.duration) for j in jobs] == GAVEL_SEED0
    assert [j.total_steps for j in jobs] == [d for _, d in GAVEL_SEED0]
    assert [j.arrival for j in jobs] == GAVEL_SEED0_ARRIVALS
    scales = GAVEL_SEED0_MULTI_SCALE if multi else [1] * 6
    assert [j.scale_factor for j in jobs] == scales


@pytest.mark.skipif(not GAVEL_TP.exists(), reason="Gavel data not found (../shared/data/gavel)")
@pytest.mark.parametrize("multi", [False, True])
def test_first_jobs_steps_with_gavels_throughputs(multi):
    jobs = generate_gavel_jobs(6, 18000.0, 0, GAVEL_TP, multi_gpu=multi)
    want = GAVEL_SEED0_STEPS_MULTI if multi else GAVEL_SEED0_STEPS
    assert [j.total_steps for j in jobs] == want


def test_properties_over_many_jobs(ones):
    n, lam = 20000, 3600.0
    jobs = generate_gavel_jobs(n, lam, 7, ones, multi_gpu=True)
    gaps = [b.arrival - a.arrival for a, b in zip(jobs, jobs[1:], strict=False)]
    assert jobs[0].arrival == 0.0
    assert all(g >= 0 for g in gaps)
    assert statistics.fmean(gaps) == pytest.approx(lam, rel=0.03)
    # durations: 60·10^U(1.5, 3) s (80 %) or 60·10^U(3, 4) s (20 %)
    lo, mid, hi = 60 * 10**1.5, 60 * 10**3, 60 * 10**4
    assert all(lo <= j.duration <= hi for j in jobs)
    long = sum(j.duration > mid for j in jobs) / n
    assert long == pytest.approx(0.2, abs=0.015)
    # scale factors: Philly's 70 / 10 / 15 / 5 %, only on distributed templates
    share = {k: sum(j.scale_factor == k for j in jobs) / n for k in GAVEL_SCALE_FACTORS}
    for k, p in zip(GAVEL_SCALE_FACTORS, (0.7, 0.1, 0.15, 0.05), strict=True):
        assert share[k] == pytest.approx(p, abs=0.015)
    distributed = {t.model for t in JOB_TABLE if t.distributed}
    assert all(j.job_type in distributed for j in jobs if j.scale_factor > 1)
    assert {j.job_type for j in jobs} == {t.model for t in JOB_TABLE}
    # single-GPU mode: all ones (the scale factor is still drawn, as Gavel does, so the first
    # job's duration is the same; later draws differ once -m redraws a template)
    single = generate_gavel_jobs(200, lam, 7, ones)
    assert all(j.scale_factor == 1 for j in single)
    assert single[0].duration == jobs[0].duration


def test_determinism_and_seeds(ones):
    a = generate_gavel_jobs(50, 900.0, 3, ones, multi_gpu=True)
    assert a == generate_gavel_jobs(50, 900.0, 3, ones, multi_gpu=True)
    assert a != generate_gavel_jobs(50, 900.0, 4, ones, multi_gpu=True)
    assert all(j.arrival == 0.0 for j in generate_gavel_jobs(5, 0.0, 3, ones))
    fixed = generate_gavel_jobs(5, 900.0, 3, ones, fixed_job_duration=3600)
    assert all(j.duration == 3600 for j in fixed)
    with pytest.raises(ValueError):
        generate_gavel_jobs(5, -1.0, 0, ones)


@pytest.mark.parametrize("columns", [10, 7])
def test_trace_round_trips_through_our_reader(ones, tmp_path, columns):
    jobs = generate_gavel_jobs(30, 1800.0, 0, ones, multi_gpu=True)
    path = write_gavel_trace(jobs, tmp_path / f"g{columns}.trace", columns=columns)
    lines = path.read_text().splitlines()
    assert len(lines) == 30 and all(len(x.split("\t")) == columns for x in lines)
    if columns == 10:  # Gavel's str(Job) + '\t%f' arrival, SLO -1
        assert lines[0].split("\t")[8] == "-1.000000"
    specs = read_trace(path)
    assert [s.num_gpus for s in specs] == [j.scale_factor for j in jobs]
    assert [s.iterations for s in specs] == [int(j.total_steps) for j in jobs]
    for s, j in zip(specs, jobs, strict=True):
        assert s.arrival == pytest.approx(j.arrival, abs=1e-6)
        assert s.model.name == j.job_type
    assert math.isclose(specs[-1].arrival, round(jobs[-1].arrival, 6))


def test_gavel_preset_equals_reading_the_written_trace(tmp_path, monkeypatch):
    """``gavel-N@RATE`` gives the jobs that writing Gavel's trace and reading it back with the
    throughputs gives: per-type durations included, field for field."""
    from ddlsched.workloads.presets import load_workload
    from ddlsched.workloads.trace_formats import read_gavel

    rates = {"v100": 4.0, "p100": 2.0, "k80": 1.0}
    data = {
        gpu: {
            f"('{t.model}', {k})": {"null": r * k} for t in JOB_TABLE for k in GAVEL_SCALE_FACTORS
        }
        for gpu, r in rates.items()
    }
    (tmp_path / "simulation_throughputs.json").write_text(json.dumps(data))
    monkeypatch.setenv("DDLSCHED_GAVEL_DATA", str(tmp_path))
    jobs = load_workload("gavel-multi-40@3", seed=2)
    raw = generate_gavel_jobs(
        40, 1200.0, 2, tmp_path / "simulation_throughputs.json", multi_gpu=True
    )
    trace = write_gavel_trace(raw, tmp_path / "g.trace")
    want = read_gavel(trace, throughputs=tmp_path / "simulation_throughputs.json")
    assert jobs == want
    assert dict(jobs[0].type_durations)["k80"] == 4 * dict(jobs[0].type_durations)["v100"]
    with pytest.raises(InputError, match="rate > 0"):
        load_workload("gavel-10@0", seed=0)
