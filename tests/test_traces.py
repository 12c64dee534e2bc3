"""Job-trace import (issue #6): format detection, each importer on tiny hand-written files, the
filters, errors naming file/line/field, stats by hand, generic CSV/Parquet round trips, the
``trace`` CLI, and, where the shared data is present, the real Philly/Gavel/Tiresias files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.core.job import JobSpec
from ddlsched.errors import InputError
from ddlsched.perf.models import builtin_model
from ddlsched.workloads.presets import load_workload
from ddlsched.workloads.trace_formats import placeholder_model
from ddlsched.workloads.trace_stats import format_trace_stats, trace_stats
from ddlsched.workloads.traces import (
    TRACE_FORMATS,
    TraceOptions,
    detect_format,
    filter_jobs,
    read_trace,
    write_trace,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PHILLY = DATA / "pollux" / "traces" / "philly.csv"
GAVEL = DATA / "gavel"

PHILLY_TEXT = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:00:10,100.0,1,100.0,aa
2017-10-09 07:00:00,50.0,4,200.0,bb
2017-10-10 07:00:00,3600.0,2,7200.0,aa
"""
# 10 tab-separated columns: job_type, command, working_directory, num_steps_arg,
# needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time
GAVEL_TEXT = (
    "ResNet-50 (batch size 32)\tpython main.py\t/w\t--steps\t1\t1000\t1\t1.0\t-1\t0.0\n"
    "LM (batch size 20)\tpython lm.py\t/w\t--steps\t0\t3000\t16\t1.0\t-1\t30.5\n"
    "A3C\tpython a3c.py\t/w\t--steps\t0\t500\t2\t1.0\t-1\t10\n"
)
# 7 columns: job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time,
# scale_factor
GAVEL_PHILLY_TEXT = (
    "Transformer (batch size 64)\tcd x && python3 train.py\t-step\t1\t2000\t0.000000\t1\n"
    "CycleGAN\tcd y && python3 main.py\t--n_steps\t1\t700\t12.000000\t4\n"
)
TIRESIAS_TEXT = """job_id,num_gpu,submit_time,iterations,model_name,duration,interval
7,1,0,20000,Transformer (batch size 128),3600,10
8,2,10,500,CycleGAN,120,0
"""
THROUGHPUTS = {
    "v100": {
        "('ResNet-50 (batch size 32)', 1)": {"null": 10.0},
        "('LM (batch size 20)', 1)": {"null": 2.0},
        "('LM (batch size 20)', 8)": {"null": 12.0},
        "('A3C', 1)": {"null": 5.0, "('A3C', 1)": [2.5, 2.5]},
    },
    "k80": {"('A3C', 1)": {"null": 1.0}},
}
GENERIC_TEXT = """# a small trace in the generic schema
arrival,num_gpus,duration,iterations,model,application,batch_size,name,user,queue
30,2,,1000,resnet50,,,r,alice,q1
0,1,600.5,,bert-large,,8,b,bob,
10,4,,,,cifar10,2048,c,,q2
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def throughputs(tmp_path: Path) -> Path:
    return write(tmp_path, "thr.json", json.dumps(THROUGHPUTS))


def job(i: int, arrival: float, gpus: int = 1, duration: float = 100.0) -> JobSpec:
    return JobSpec(i, arrival, gpus, 0, placeholder_model("trace"), duration=duration)


# --- detection -------------------------------------------------------------------------------


def test_detects_every_format_from_the_file(tmp_path):
    parquet = tmp_path / "x.parquet"
    write_trace([job(0, 0.0)], parquet)
    no_suffix = tmp_path / "x.bin"
    no_suffix.write_bytes(parquet.read_bytes())  # recognised by its magic bytes
    expected = [
        (write(tmp_path, "p.csv", PHILLY_TEXT), "philly"),
        (write(tmp_path, "g.trace", GAVEL_TEXT), "gavel"),
        (write(tmp_path, "gp.trace", GAVEL_PHILLY_TEXT), "gavel-philly"),
        (write(tmp_path, "t.csv", TIRESIAS_TEXT), "tiresias"),
        (write(tmp_path, "gen.txt", GENERIC_TEXT), "generic"),
        (no_suffix, "generic"),
        (write(tmp_path, "w.csv", "name,time,application,num_replicas,batch_size\n"), "pollux"),
        (
            write(tmp_path, "s.csv", "name,time,application,num_replicas,batch_size,category\n"),
            "sia",
        ),
        (write(tmp_path, "d.csv", "job_id,arrival,num_gpus,iterations,model\n"), "ddlsched"),
        (write(tmp_path, "d.dat", '[{"job_id": 1}]'), "ddlsched"),
    ]
    assert [detect_format(path) for path, _ in expected] == [fmt for _, fmt in expected]
    assert set(TRACE_FORMATS) == {fmt for _, fmt in expected}


def test_undetectable_file_lists_the_formats(tmp_path):
    bad = write(tmp_path, "bad.csv", "foo,bar\n1,2\n")
    with pytest.raises(InputError) as info:
        detect_format(bad)
    msg = str(info.value)
    assert "bad.csv" in msg and "line 1" in msg
    for fmt in TRACE_FORMATS:
        assert fmt in msg
    with pytest.raises(InputError, match="--workload-format"):
        load_workload(str(bad))
    three_tabs = write(tmp_path, "t.trace", "a\tb\tc\n")
    with pytest.raises(InputError, match="known formats"):
        read_trace(three_tabs)


def test_unknown_format_name_suggests(tmp_path):
    p = write(tmp_path, "g.trace", GAVEL_TEXT)
    with pytest.raises(InputError, match="did you mean 'gavel'"):
        read_trace(p, "gavell")
    with pytest.raises(InputError, match="preset"):
        load_workload("wang20", 0, None, TraceOptions(workload_format="generic"))


def test_format_override_reads_a_file_as_named(tmp_path):
    # A Gavel trace read as the 7-column format fails on its column count, naming the line.
    p = write(tmp_path, "g.trace", GAVEL_TEXT)
    with pytest.raises(InputError) as info:
        read_trace(p, "gavel-philly")
    assert info.value.line == 1 and "expected 7 tab-separated fields" in str(info.value)
    assert len(load_workload(str(p), options=TraceOptions(workload_format="gavel"))) == 3


# --- importers -------------------------------------------------------------------------------


def test_philly_import(tmp_path):
    jobs = read_trace(write(tmp_path, "p.csv", PHILLY_TEXT))
    # sorted by submission; arrivals relative to the first; ids 0..n-1 in arrival order
    assert [(j.job_id, j.arrival, j.num_gpus, j.duration) for j in jobs] == [
        (0, 0.0, 4, 50.0),
        (1, 10.0, 1, 100.0),
        (2, 86400.0, 2, 3600.0),
    ]
    assert all(j.iterations == 0 and j.model == placeholder_model("trace") for j in jobs)


def test_philly_time_zones_keep_the_wall_clock(tmp_path):
    # A time zone sends the parser down its row-by-row path; the clock time as written counts.
    zoned = PHILLY_TEXT.replace("07:00:10", "07:00:10+02:00")
    assert read_trace(write(tmp_path, "z.csv", zoned)) == read_trace(
        write(tmp_path, "p.csv", PHILLY_TEXT)
    )


def test_philly_errors_name_line_and_field(tmp_path):
    bad = write(tmp_path, "p.csv", PHILLY_TEXT.replace("3600.0,2,", "3600.0,two,"))
    with pytest.raises(InputError) as info:
        read_trace(bad)
    assert (info.value.source, info.value.line, info.value.field) == (str(bad), 4, "num_gpus")
    zero = write(tmp_path, "z.csv", PHILLY_TEXT.replace("100.0,1,100.0", "0,1,0"))
    with pytest.raises(InputError) as info:
        read_trace(zero)
    assert (info.value.line, info.value.field) == (2, "duration")


def test_gavel_import_without_and_with_throughputs(tmp_path):
    path = write(tmp_path, "g.trace", GAVEL_TEXT)
    jobs = read_trace(path)
    assert [(j.arrival, j.num_gpus, j.iterations, j.duration) for j in jobs] == [
        (0.0, 1, 1000, 0.0),
        (10.0, 2, 500, 0.0),
        (30.5, 16, 3000, 0.0),
    ]
    assert [j.model.name for j in jobs] == [
        "ResNet-50 (batch size 32)",
        "A3C",
        "LM (batch size 20)",
    ]
    assert [j.model.batch_size for j in jobs] == [32, 0, 20]
    timed = read_trace(path, throughputs=throughputs(tmp_path))
    # 1000 steps / 10 steps/s; A3C on 2 GPUs extrapolated from 1 GPU: 500 / (5 · 2);
    # LM on 16 GPUs extrapolated from the nearest measured (8): 3000 / (12 · 16 / 8)
    assert [j.duration for j in timed] == [100.0, 50.0, 125.0]
    assert [j.iterations for j in timed] == [1000, 500, 3000]
    k80 = read_trace(write(tmp_path, "a.trace", GAVEL_TEXT.splitlines()[2] + "\n"), "gavel",
                     throughputs=throughputs(tmp_path), gpu_type="k80")  # fmt: skip
    assert k80[0].duration == 250.0


def test_gavel_errors(tmp_path):
    thr = throughputs(tmp_path)
    unknown = write(tmp_path, "u.trace", GAVEL_TEXT + GAVEL_TEXT.splitlines()[0].replace(
        "ResNet-50", "ResNet-51") + "\n")  # fmt: skip
    with pytest.raises(InputError) as info:
        read_trace(unknown, throughputs=thr)
    assert (info.value.line, info.value.field) == (4, "job_type")
    assert "ResNet-51" in str(info.value) and "did you mean" in str(info.value)
    with pytest.raises(InputError, match="did you mean 'v100'") as info:
        read_trace(write(tmp_path, "g.trace", GAVEL_TEXT), throughputs=thr, gpu_type="v10")
    assert info.value.source == str(thr)
    bad = write(tmp_path, "b.trace", GAVEL_TEXT.replace("\t3000\t", "\t3000.5\t"))
    with pytest.raises(InputError) as info:
        read_trace(bad)
    assert (info.value.source, info.value.line, info.value.field) == (str(bad), 2, "total_steps")
    neg = write(tmp_path, "n.trace", GAVEL_PHILLY_TEXT.replace("12.000000", "-1"))
    with pytest.raises(InputError) as info:
        read_trace(neg)
    assert (info.value.line, info.value.field) == (2, "arrival_time")


def test_gavel_philly_import(tmp_path):
    jobs = read_trace(write(tmp_path, "vc.trace", GAVEL_PHILLY_TEXT))
    assert [(j.arrival, j.num_gpus, j.iterations, j.model.name) for j in jobs] == [
        (0.0, 1, 2000, "Transformer (batch size 64)"),
        (12.0, 4, 700, "CycleGAN"),
    ]


def test_tiresias_import(tmp_path):
    jobs = read_trace(write(tmp_path, "t.csv", TIRESIAS_TEXT))
    assert [(j.job_id, j.name, j.arrival, j.num_gpus, j.iterations, j.duration) for j in jobs] == [
        (0, "7", 0.0, 1, 20000, 3600.0),
        (1, "8", 10.0, 2, 500, 120.0),
    ]
    assert jobs[0].model.batch_size == 128
    bad = write(tmp_path, "b.csv", TIRESIAS_TEXT.replace(",120,", ",0,"))
    with pytest.raises(InputError) as info:
        read_trace(bad)
    assert (info.value.line, info.value.field) == (3, "duration")


def test_generic_csv_import(tmp_path):
    jobs = read_trace(write(tmp_path, "g.csv", GENERIC_TEXT))
    assert [(j.job_id, j.arrival, j.num_gpus, j.name) for j in jobs] == [
        (0, 0.0, 1, "b"),
        (1, 10.0, 4, "c"),
        (2, 30.0, 2, "r"),
    ]
    b, c, r = jobs
    assert b.duration == 600.5 and b.model == placeholder_model("bert-large", 8)
    assert (c.application, c.batch_size, c.duration, c.iterations) == ("cifar10", 2048, 0.0, 0)
    # an iterations job naming a built-in model gets its performance profile
    assert r.iterations == 1000 and r.model == builtin_model("resnet50")


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("arrival,num_gpus,duraton\n0,1,5\n", 1, "duraton", "did you mean 'duration'"),
        ("arrival,duration\n0,5\n", 1, "num_gpus", "missing required column"),
        ("arrival,num_gpus,duration\n0,1,5\n\n3,1.5,5\n", 4, "num_gpus", "whole number"),
        ("arrival,num_gpus,duration\n0,1,5\n-2,1,5\n", 3, "arrival", "≥ 0"),
        ("arrival,num_gpus,duration\n0,1,nan\n", 2, "duration", "finite"),
        ("arrival,num_gpus,model\n0,1,vgg16\n", 2, "duration", "duration, iterations or"),
        ("arrival,num_gpus,duration\n0,1\n", 2, None, "expected 3 fields"),
    ],
)
def test_generic_errors_name_file_line_field(tmp_path, text, line, field, words):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(InputError) as info:
        read_trace(path, "generic")
    e = info.value
    assert (e.source, e.line, e.field) == (str(path), line, field)
    assert words in str(e)


def test_parquet_errors_name_row_and_field(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"arrival": [0.0, 1.0], "num_gpus": [1, 0], "duration": [5.0, 5.0]}),
                   path)  # fmt: skip
    with pytest.raises(InputError) as info:
        read_trace(path)
    assert info.value.field == "num_gpus" and "row 2" in str(info.value)


# --- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_generic_round_trip(tmp_path, suffix):
    sources = [
        write(tmp_path, "g.csv", GENERIC_TEXT),
        write(tmp_path, "p.csv", PHILLY_TEXT),
        write(tmp_path, "gv.trace", GAVEL_TEXT),
        write(tmp_path, "t.csv", TIRESIAS_TEXT),
    ]
    for src in sources:
        jobs = read_trace(src, throughputs=throughputs(tmp_path))
        out = tmp_path / f"out{suffix}"
        write_trace(jobs, out)
        assert detect_format(out) == "generic"
        assert read_trace(out) == jobs, src
    # byte-identical on a second write (deterministic output)
    first = out.read_bytes()
    write_trace(read_trace(out), out)
    assert out.read_bytes() == first


# --- filters ---------------------------------------------------------------------------------


def test_time_window_max_gpus_and_renumbering(tmp_path):
    jobs = [job(i, float(10 * i), gpus=1 + i % 3) for i in range(10)]  # arrivals 0..90
    kept = filter_jobs(jobs, start=20, end=60, renumber=True)
    # [20, 60): 20, 30, 40, 50, shifted so the window starts at 0
    assert [(j.job_id, j.arrival) for j in kept] == [(0, 0.0), (1, 10.0), (2, 20.0), (3, 30.0)]
    assert [j.arrival for j in filter_jobs(jobs, end=25)] == [0.0, 10.0, 20.0]
    capped = filter_jobs(jobs, max_gpus=2)
    assert all(j.num_gpus <= 2 for j in capped) and len(capped) == 7
    assert [j.job_id for j in capped] == [0, 1, 3, 4, 6, 7, 9]  # ids kept without renumber


def test_sample_and_load_scale(tmp_path):
    jobs = [job(i, float(10 * i)) for i in range(50)]
    a = filter_jobs(jobs, sample=7, seed=3)
    assert len(a) == 7 and a == filter_jobs(jobs, sample=7, seed=3)
    assert a != filter_jobs(jobs, sample=7, seed=4)
    assert [j.arrival for j in a] == sorted(j.arrival for j in a)
    assert set(a) <= set(jobs)
    assert filter_jobs(jobs, sample=500) == jobs  # more than there are: all of them
    dense = filter_jobs(jobs, load_scale=2.0)
    assert [j.arrival for j in dense] == [5.0 * i for i in range(50)]
    # order: window (shift), then GPUs, then sample, then load scale
    both = filter_jobs(jobs, start=100, sample=3, load_scale=0.5, seed=1)
    assert all(j.arrival % 20 == 0 and j.arrival <= 2 * 390 for j in both)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"start": 50, "end": 50}, "trace_end"),
        ({"sample": 0}, "sample"),
        ({"max_gpus": 0}, "max_gpus"),
        ({"load_scale": 0.0}, "load_scale"),
        ({"start": float("nan")}, "trace_start"),
    ],
)
def test_bad_filter_values(kwargs, field):
    with pytest.raises(InputError) as info:
        filter_jobs([job(0, 0.0)], **kwargs)
    assert info.value.field == field


def test_no_job_left_is_an_error(tmp_path):
    path = write(tmp_path, "p.csv", PHILLY_TEXT)
    with pytest.raises(InputError, match="no jobs left") as info:
        read_trace(path, max_gpus=0 + 1, start=200000)
    assert info.value.source == str(path)


def test_filters_through_load_workload_for_files_and_presets(tmp_path):
    path = write(tmp_path, "p.csv", PHILLY_TEXT)
    jobs = load_workload(str(path), 0, None, TraceOptions(max_gpus=2, load_scale=4.0))
    assert [(j.job_id, j.arrival) for j in jobs] == [(0, 2.5), (1, 21600.0)]
    wang = load_workload("wang20", seed=1)
    capped = load_workload("wang20", seed=1, options=TraceOptions(max_gpus=2))
    assert capped == [j for j in sorted(wang, key=lambda j: (j.arrival, j.job_id)) if
                      j.num_gpus <= 2]  # fmt: skip
    assert load_workload(str(path)) == read_trace(path)  # same path without options


def test_trace_options_as_separate_keywords_still_work_deprecated(tmp_path):
    """The per-option keywords of ``load_workload``/``simulate_named`` (before TraceOptions was
    passed whole) still work for one release, with a DeprecationWarning, and mean the same."""
    from ddlsched.api import simulate_named

    path = write(tmp_path, "p.csv", PHILLY_TEXT)
    options = TraceOptions(max_gpus=2, load_scale=4.0)
    with pytest.warns(DeprecationWarning, match="TraceOptions"):
        old = load_workload(str(path), max_gpus=2, load_scale=4.0)
    assert old == load_workload(str(path), 0, None, options)
    with pytest.warns(DeprecationWarning):
        a = simulate_named("tiny", str(path), "fifo", max_gpus=2, load_scale=4.0)
    b = simulate_named("tiny", str(path), "fifo", trace=options)
    assert a.summary == b.summary and b.summary["num_jobs"] == 2
    with pytest.raises(TypeError, match="not both"):
        load_workload(str(path), 0, None, options, max_gpus=2)
    with pytest.raises(TypeError, match="max_gpu"):
        load_workload(str(path), max_gpu=2)


def test_trace_options_from_config_keys():
    """``TraceOptions.from_values``: the config keys it knows, None = not given."""
    values = {"max_gpus": 4, "gavel_gpu": None, "policy": "fifo", "sample": None}
    assert TraceOptions.from_values(values) == TraceOptions(max_gpus=4)
    assert TraceOptions.from_values({"gavel_gpu": "k80"}).gavel_gpu == "k80"


# --- stats -----------------------------------------------------------------------------------


def test_stats_by_hand():
    jobs = [
        job(0, 0.0, gpus=1, duration=100.0),
        job(1, 600.0, gpus=4, duration=200.0),
        job(2, 1800.0, gpus=1, duration=300.0),
        job(3, 3600.0, gpus=2, duration=400.0),
    ]
    s = trace_stats(jobs)
    assert s["jobs"] == 4 and s["span_s"] == 3600.0
    assert s["arrival_rate_per_hour"] == 3.0  # 3 gaps in one hour
    assert s["interarrival_s"]["mean"] == 1200.0 and s["interarrival_s"]["p50"] == 1200.0
    assert s["gpus"]["histogram"] == {1: 2, 2: 1, 4: 1}
    assert s["gpus"]["total"] == 8 and s["gpus"]["mean"] == 2.0
    d = s["duration_s"]
    # linear quantiles of 100, 200, 300, 400
    assert (d["min"], d["p25"], d["p50"], d["p75"], d["max"]) == (100, 175, 250, 325, 400)
    assert d["mean"] == 250.0
    assert s["gpu_hours"] == pytest.approx((100 + 800 + 300 + 800) / 3600)
    assert s["iterations"] is None and s["models"] == {"trace": 4}
    text = format_trace_stats(s)
    assert "jobs          4" in text and "3 jobs/h" in text and "p50 250" in text
    assert "  4 GPUs              1   25.0 %" in text


# --- CLI -------------------------------------------------------------------------------------


def test_cli_trace_stats_and_convert(tmp_path, capsys):
    path = write(tmp_path, "p.csv", PHILLY_TEXT)
    assert main(["trace", "stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert "jobs          3" in out and "duration (s)" in out
    assert main(["trace", "stats", str(path), "--max-gpus", "2", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["jobs"] == 2 and stats["gpus"]["histogram"] == {"1": 1, "2": 1}
    gavel = write(tmp_path, "g.trace", GAVEL_TEXT)
    thr = throughputs(tmp_path)
    out_file = tmp_path / "conv.parquet"
    argv = ["trace", "convert", str(gavel), "--gavel-throughputs", str(thr), "--out"]
    assert main([*argv, str(out_file)]) == 0
    assert "3 jobs" in capsys.readouterr().out
    assert [j.duration for j in read_trace(out_file)] == [100.0, 50.0, 125.0]


def test_cli_errors_are_one_line(tmp_path, capsys):
    path = write(tmp_path, "p.csv", PHILLY_TEXT)
    assert main(["trace", "stats", str(path), "--workload-format", "phily"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'philly'" in err and len(err.strip().splitlines()) == 1
    bad = write(tmp_path, "bad.trace", GAVEL_TEXT.replace("\t1000\t", "\tx\t"))
    assert main(["trace", "stats", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.trace, line 1, field 'total_steps'" in err


def test_cli_run_takes_the_trace_options(tmp_path, capsys):
    # 16 GPUs do not fit the tiny cluster: --max-gpus drops that job.
    trace = write(
        tmp_path,
        "w.csv",
        "arrival,num_gpus,iterations,model\n0,2,50,resnet50\n5,16,50,vgg16\n9,1,50,vgg16\n",
    )
    base = ["run", "--cluster", "tiny", "--policy", "srsf1", "--quiet", "--workload", str(trace)]
    assert main([*base, "--out", str(tmp_path / "a")]) == 2
    assert "16 GPUs" in capsys.readouterr().err
    argv = [*base, "--max-gpus", "8", "--load-scale", "2", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    rows = (tmp_path / "o" / "jobs.csv").read_text().splitlines()
    assert len(rows) == 3  # header + 2 jobs
    assert rows[1].split(",")[:2] == ["0", "0"] and rows[2].split(",")[:2] == ["1", "4.5"]


def test_run_refuses_jobs_without_duration_or_profile(tmp_path, capsys):
    gavel = write(tmp_path, "g.trace", GAVEL_TEXT)
    argv = ["run", "--cluster", "luo24", "--policy", "srsf1", "--quiet", "--workload", str(gavel)]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "neither a duration nor a performance profile" in err and "g.trace" in err
    assert not (tmp_path / "o").exists()


# --- the real traces (shared data) ----------------------------------------------------------


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    return path


def test_real_philly_trace():
    jobs = read_trace(need(PHILLY))
    assert len(jobs) == 82247
    assert jobs[0].arrival == 0.0 and all(j.duration >= 1 for j in jobs)
    assert [j.job_id for j in jobs[:3]] == [0, 1, 2]


def test_real_gavel_philly_traces():
    files = sorted(need(GAVEL / "msr-seed0").glob("*.trace"))
    assert len(files) == 15
    total = 0
    for f in files:
        assert detect_format(f) == "gavel-philly"
        n = sum(1 for line in f.read_text().splitlines() if line.strip())
        jobs = read_trace(f)
        assert len(jobs) == n
        total += n
    assert total == 15264


def test_real_tiresias_conversions_match_gavel_durations():
    conv = need(GAVEL / "converted")
    thr = need(GAVEL / "simulation_throughputs.json")
    for vc, n in (("6214e9", 1985), ("0e4a51", 984), ("ed69ec", 951)):
        converted = read_trace(conv / f"{vc}.tiresias.csv")
        assert detect_format(conv / f"{vc}.tiresias.csv") == "tiresias"
        assert len(converted) == n
        # The conversion kept the jobs whose (type, GPUs) Gavel measured, with durations
        # total_steps / V100 throughput rounded to seconds: ours agree within 0.5 s.
        ours = read_trace(GAVEL / "msr-seed0" / f"{vc}.trace", throughputs=thr)
        measured = json.loads(thr.read_text())["v100"]
        kept = [j for j in ours if str((j.model.name, j.num_gpus)) in measured]
        assert len(kept) == n
        for a, b in zip(kept, converted, strict=True):
            assert (a.model.name, a.iterations, a.arrival) == (
                b.model.name,
                b.iterations,
                b.arrival,
            )
            assert abs(a.duration - b.duration) <= 0.5


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_user_and_queue_are_kept_and_written_back(tmp_path, suffix):
    jobs = read_trace(write(tmp_path, "g.csv", GENERIC_TEXT))
    # arrival order: b (bob, no queue), c (no user, q2), r (alice, q1)
    assert [(j.name, j.user, j.queue) for j in jobs] == [
        ("b", "bob", ""),
        ("c", "", "q2"),
        ("r", "alice", "q1"),
    ]
    out = tmp_path / f"back{suffix}"
    write_trace(jobs, out)
    assert [(j.user, j.queue) for j in read_trace(out)] == [
        ("bob", ""),
        ("", "q2"),
        ("alice", "q1"),
    ]


def test_philly_virtual_cluster_becomes_the_queue(tmp_path):
    jobs = read_trace(write(tmp_path, "p.csv", PHILLY_TEXT))
    # arrival order: 07:00:00 (bb), 07:00:10 (aa), next day (aa)
    assert [(j.arrival, j.queue) for j in jobs] == [(0.0, "bb"), (10.0, "aa"), (86400.0, "aa")]
