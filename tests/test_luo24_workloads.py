"""Pollux-artifact workload generator (Luo et al.'s simulation workloads): determinism, the
artifact's configurations, arrival window, write/read round trip, the recipe on a hand-made trace,
and, where the shared data is present, the artifact's own workload files and application mix."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.workloads.io import read_workload
from ddlsched.workloads.luo24 import (
    POLLUX_CONFIGURATIONS,
    generate_pollux_workload,
    write_pollux_csv,
)

POLLUX_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pollux"
PHILLY = POLLUX_DATA / "traces" / "philly.csv"
WORKLOADS = POLLUX_DATA / "workloads"
APPS = tuple(sorted(POLLUX_CONFIGURATIONS))


def need_philly() -> Path:
    if not PHILLY.is_file():
        pytest.skip(f"Philly trace not found at {PHILLY} (shared data absent)")
    return PHILLY


def real_workloads() -> list[list]:
    files = sorted(WORKLOADS.glob("workload-*.csv"))
    if len(files) != 8:
        pytest.skip(f"the artifact's 8 workload files not found in {WORKLOADS}")
    return [read_workload(f) for f in files]


def check_artifact_shape(jobs, n: int, window_s: float) -> None:
    assert len(jobs) == n
    assert [j.job_id for j in jobs] == list(range(n))
    arrivals = [j.arrival for j in jobs]
    assert arrivals == sorted(arrivals)
    assert all(0 <= a < window_s and a == int(a) for a in arrivals)
    for j in jobs:
        assert (j.num_gpus, j.batch_size) in POLLUX_CONFIGURATIONS[j.application]
        assert j.name == f"{j.application}-{j.job_id}"
        assert j.iterations == 0
        assert j.model.name == j.application and j.model.batch_size == j.batch_size


# --- built-in distributions (no data needed) -------------------------------------------------


def test_deterministic_per_seed_and_seeds_differ():
    a = generate_pollux_workload(3)
    assert a == generate_pollux_workload(3)
    b = generate_pollux_workload(4)
    assert [(j.arrival, j.application, j.num_gpus) for j in a] != [
        (j.arrival, j.application, j.num_gpus) for j in b
    ]


@pytest.mark.parametrize("seed", range(5))
def test_shape_configurations_and_window(seed):
    check_artifact_shape(generate_pollux_workload(seed), 160, 8 * 3600)
    check_artifact_shape(
        generate_pollux_workload(seed, num_jobs=37, duration_hours=2.5), 37, 2.5 * 3600
    )


def test_load_scales_the_job_count_in_the_same_window():
    # Luo et al. Fig. 6a: 0.5×–2× of the baseline, more jobs in the same period.
    assert len(generate_pollux_workload(0, load=0.5)) == 80
    assert len(generate_pollux_workload(0, num_jobs=240, load=2.0)) == 480
    assert generate_pollux_workload(7, load=1.5) == generate_pollux_workload(7, num_jobs=240)
    assert max(j.arrival for j in generate_pollux_workload(0, load=2.0)) < 8 * 3600


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"num_jobs": 0}, "num_jobs"),
        ({"load": 0.0}, "load"),
        ({"load": math.nan}, "load"),
        ({"num_jobs": 1, "load": 0.2}, "load"),
        ({"duration_hours": 0.0}, "duration_hours"),
        ({"duration_hours": math.inf}, "duration_hours"),
    ],
)
def test_bad_arguments(kwargs, field):
    with pytest.raises(InputError) as info:
        generate_pollux_workload(0, **kwargs)
    assert info.value.field == field


def test_write_read_round_trip(tmp_path):
    jobs = generate_pollux_workload(11, num_jobs=50)
    path = tmp_path / "sub" / "w.csv"
    write_pollux_csv(jobs, path)
    text = path.read_text()
    assert text.splitlines()[0] == "name,time,application,num_replicas,batch_size"
    assert text.splitlines()[1] == (
        f"{jobs[0].name},{int(jobs[0].arrival)},{jobs[0].application},"
        f"{jobs[0].num_gpus},{jobs[0].batch_size}"
    )
    assert read_workload(path) == jobs
    assert [p.name for p in path.parent.iterdir()] == ["w.csv"]  # no temporary file left


def test_write_rejects_what_the_format_cannot_hold(tmp_path):
    jobs = generate_pollux_workload(0, num_jobs=3)
    with pytest.raises(ValueError):
        write_pollux_csv([], tmp_path / "a.csv")
    with pytest.raises(ValueError):
        write_pollux_csv([jobs[0], jobs[0]], tmp_path / "b.csv")
    from dataclasses import replace

    with pytest.raises(ValueError):
        write_pollux_csv([replace(jobs[0], application="")], tmp_path / "c.csv")
    assert not any(tmp_path.iterdir())


# --- the recipe on a hand-made trace ---------------------------------------------------------

TOY_TRACE = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 02:00:05,100.0,1,100.0,a
2017-10-09 01:59:59,100.0,1,100.0,a
2017-10-09 10:00:00,100.0,1,100.0,a
2017-10-09 09:59:59,7200.0,1,7200.0,a
2017-10-09 05:00:00,59.0,1,59.0,a
2017-10-09 05:00:00,450000.0,8,3600000.0,a
2017-10-10 03:00:00,3600.0,20,72000.0,b
2017-10-11 04:00:00,36000.0,16,576000.0,c

"""


def test_filter_window_and_gpu_time_categories(tmp_path):
    trace = tmp_path / "philly.csv"
    trace.write_text(TOY_TRACE)
    # Kept: 02:00:05 (small), 09:59:59 (2 GPU-h), 03:00 next day (20 GPU-h), 04:00 (160 GPU-h).
    # Dropped: before the window (01:59:59 → 23:59:59 shifted), at its end (10:00 → 8 h),
    # under 60 s, and 1000 GPU-hours.
    for seed in range(6):
        jobs = generate_pollux_workload(seed, num_jobs=4, philly=trace)
        assert [j.arrival for j in jobs] == [5.0, 3600.0, 7200.0, 28799.0]
        apps = [j.application for j in jobs]
        assert apps[0] in ("cifar10", "ncf")
        assert apps[1:3] == ["yolov3", "imagenet"]
        assert apps[3] in ("deepspeech2", "bert")
        check_artifact_shape(jobs, 4, 8 * 3600)
    # A later start shifts the window to 03:00–11:00: 02:00:05 leaves, 10:00 enters.
    jobs = generate_pollux_workload(0, num_jobs=4, philly=trace, start_hour=3)
    assert [j.arrival for j in jobs] == [0.0, 3600.0, 25199.0, 25200.0]
    with pytest.raises(InputError, match="only 4 trace jobs"):
        generate_pollux_workload(0, num_jobs=5, philly=trace)


def test_bad_trace_files(tmp_path):
    with pytest.raises(InputError):
        generate_pollux_workload(0, philly=tmp_path / "missing.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,duration,num_gpus\n2017-10-09 02:00:05,1,1\n")
    with pytest.raises(InputError, match="gpu_time"):
        generate_pollux_workload(0, philly=bad)
    bad.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 02:00:05,x,1,1,a\n")
    with pytest.raises(InputError) as info:
        generate_pollux_workload(0, num_jobs=1, philly=bad)
    assert (info.value.line, info.value.field) == (2, "duration")


# --- the real trace and the artifact's workloads ---------------------------------------------


@pytest.mark.parametrize(
    "folder, load",
    [("workloads", 1.0), ("workloads-0.5", 0.5), ("workloads-1.5", 1.5), ("workloads-2.0", 2.0)],
)
def test_real_trace_regenerates_the_artifact_workloads(folder, load):
    philly = need_philly()
    files = sorted((POLLUX_DATA / folder).glob("workload-*.csv"))
    if not files:
        pytest.skip(f"no workload files in {POLLUX_DATA / folder}")
    for f in files:
        k = int(f.stem.split("-")[1])
        assert generate_pollux_workload(k, philly=philly, load=load) == read_workload(f), f


def mix(workloads) -> tuple[Counter, int]:
    c = Counter(j.application for w in workloads for j in w)
    return c, sum(c.values())


def assert_mix_close(generated, real) -> None:
    """Per application, |p_gen − p_real| ≤ 4 standard errors of a difference of two independent
    binomial fractions, p(1−p)(1/n_gen + 1/n_real) with the pooled p: both are draws of the same
    process (the real files are 1280 jobs of it), so a miss this large has probability < 1e-4
    per application; the seeds are fixed, so the test is deterministic."""
    cg, ng = mix(generated)
    cr, nr = mix(real)
    assert set(cg) <= set(APPS) and set(cr) <= set(APPS)
    for app in APPS:
        p = (cg[app] + cr[app]) / (ng + nr)
        tol = 4 * math.sqrt(p * (1 - p) * (1 / ng + 1 / nr))
        assert abs(cg[app] / ng - cr[app] / nr) <= tol, (app, cg[app] / ng, cr[app] / nr, tol)


def test_real_trace_application_mix_matches_the_artifact_workloads():
    philly = need_philly()
    real = real_workloads()
    # Seeds other than the artifact's 1–8: a fresh sample of the same process.
    generated = [generate_pollux_workload(s, philly=philly) for s in range(101, 106)]
    assert_mix_close(generated, real)


def test_builtin_application_mix_matches_the_artifact_workloads():
    real = real_workloads()
    generated = [generate_pollux_workload(s) for s in range(101, 121)]
    assert_mix_close(generated, real)


def test_physical_workload_runs_on_the_builtin_profiles():
    """Regression: YOLOv3's 4 samples per GPU lay outside its built-in stand-in's range."""
    from ddlsched.api import simulate_named

    res = simulate_named("luo24-physical", "luo24-physical", "sjf", seed=0)
    assert res.summary["num_jobs"] == 30 and res.summary["avg_jct"] > 0


def test_a_batch_outside_the_measured_range_is_a_clear_error(tmp_path):
    from ddlsched.cli import main

    w = tmp_path / "w.csv"
    w.write_text("name,time,application,num_replicas,batch_size\nj0,0,yolov3,4,8\n")
    with pytest.raises(
        InputError, match=r"job 0 'j0' \(yolov3\): batch 8 on 4 GPU\(s\) gives a local batch of 2"
    ):
        from ddlsched.api import simulate_named

        simulate_named("luo24", str(w), "sjf")
    assert (
        main(
            [
                "run",
                "--cluster",
                "luo24",
                "--workload",
                str(w),
                "--policy",
                "fifo",
                "--out",
                str(tmp_path / "o"),
                "--quiet",
            ]
        )
        == 2
    )


@pytest.mark.parametrize("n", ["0", "1000001", "9" * 5000])
def test_luo24_n_is_bounded(n: str) -> None:
    """``luo24-N`` generates at most MAX_LUO24_JOBS jobs; beyond (or 0) is one line."""
    from ddlsched.workloads.presets import MAX_LUO24_JOBS, load_workload

    assert MAX_LUO24_JOBS == 1_000_000
    with pytest.raises(InputError, match=r"luo24-N needs 1 ≤ N ≤ 1,000,000 jobs"):
        load_workload(f"luo24-{n}")


def test_vc_queues_takes_each_jobs_queue_from_its_trace_row(tmp_path: Path) -> None:
    # issue #28: the Pollux-artifact workload with each job in its Philly VC's queue
    trace = tmp_path / "philly.csv"
    rows = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    rows += [f"2017-10-09 0{2 + k % 6}:0{k % 10}:00,{100 + 60 * k},1,{100 + 60 * k},vc{k % 3}"
             for k in range(30)]  # fmt: skip
    trace.write_text("\n".join(rows) + "\n")
    plain = generate_pollux_workload(4, num_jobs=12, philly=trace)
    vc = generate_pollux_workload(4, num_jobs=12, philly=trace, vc_queues=True)
    assert [replace(j, queue="") for j in vc] == plain  # nothing else changes
    by_time = {}
    for line in rows[1:]:
        t, d, *_rest, c = line.split(",")
        by_time.setdefault((int(t[11:13]) - 2) * 3600 + int(t[14:16]) * 60, set()).add(c)
    assert all(j.queue in by_time[int(j.arrival)] for j in vc) and {j.queue for j in vc} > {"vc0"}
    with pytest.raises(InputError, match="needs the Philly trace"):
        generate_pollux_workload(4, num_jobs=12, vc_queues=True)
    # through the command line: one ClusterQueue per VC
    from ddlsched.cli import main

    out = tmp_path / "run"
    argv = ["run", "--cluster", "luo24", "--workload", "luo24-12", "--quiet", "--set",
            f"philly={trace}", "--set", "vc_queues=true", "--queues", "proportional",
            "--policy", "fifo", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    summary = __import__("json").loads((out / "summary.json").read_text())
    assert set(summary["queues"]) == {j.queue for j in vc}
