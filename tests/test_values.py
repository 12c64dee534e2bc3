"""Every number is checked (issue #11 §2, §4 "Lenient parsing"): the one strict number parser
(``ddlsched.parsing``), finite settings through one validation path (``--set``, config files,
recorded configs, sweep grids), the engine's time range, and strict JSON/YAML/CSV loading."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddlsched.api import Settings, simulate
from ddlsched.config import config_from_record, load_run_config, with_overrides
from ddlsched.core.cluster_io import load_cluster, read_cluster
from ddlsched.core.job import JobSpec
from ddlsched.core.simulator import TIME_DIGITS
from ddlsched.core.timing import MAX_TIME, MIN_DURATION, RESOLUTION, check_job_times
from ddlsched.errors import InputError
from ddlsched.parsing import (
    MAX_INT,
    NumberError,
    check_float,
    check_int,
    csv_rows,
    load_json,
    load_yaml,
    parse_float,
    parse_int,
)
from ddlsched.perf.models import builtin_model
from ddlsched.sweep import load_sweep
from ddlsched.workloads.io import read_workload
from ddlsched.workloads.presets import load_workload
from ddlsched.workloads.trace_formats import gavel_throughputs
from ddlsched.workloads.traces import TraceOptions, read_trace, write_trace

NON_ASCII_DIGITS = ("١٢", "۳", "４", "१०", "᠑", "𝟗")  # Arabic-Indic, Persian, fullwidth, …


# ---------------------------------------------------------------------- the parser
@pytest.mark.parametrize(
    "text, value",
    [("12", 12.0), (" -3 ", -3.0), ("+0.5", 0.5), (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0)]
    + [("2.5E-4", 2.5e-4), ("-0", -0.0), ("\t7\n", 7.0)],
)
def test_parse_float_accepts_the_documented_grammar(text: str, value: float) -> None:
    assert parse_float(text) == value


@pytest.mark.parametrize(
    "text",
    ["1_000", "1__0", "0x10", "1e", "e3", "--1", "1.2.3", "", " ", "1 0", "½", "true"]
    + ["nan", "NaN", "-nan", "inf", "-inf", "+Infinity", "1e400", "-1e999", *NON_ASCII_DIGITS],
)
def test_parse_float_rejects_everything_else(text: str) -> None:
    with pytest.raises(NumberError) as info:
        parse_float(text)
    assert "expected a" in str(info.value) and "\n" not in str(info.value)
    float_accepts = True
    try:
        float(text)
    except ValueError:
        float_accepts = False
    if text in ("1_000", "nan", "inf", "1e400", *NON_ASCII_DIGITS):
        assert float_accepts  # Python's float() is the lenient one this replaces


@pytest.mark.parametrize(
    "text, value", [("4", 4), ("-2", -2), ("+7", 7), ("4.0", 4), ("1e3", 1000), (" 12 ", 12)]
)
def test_parse_int_accepts_integral_numbers(text: str, value: int) -> None:
    assert parse_int(text) == value


@pytest.mark.parametrize("text", ["2.5", ".5", "1_000", "nan", "inf", "0x1", "4e-1"])
def test_parse_int_rejects_fractions_and_lenient_forms(text: str) -> None:
    with pytest.raises(NumberError, match="expected an integer"):
        parse_int(text)


@pytest.mark.parametrize("text", [*NON_ASCII_DIGITS])
def test_parse_int_rejects_non_ascii_digits_python_takes(text: str) -> None:
    int(text)  # Python accepts these digits ...
    with pytest.raises(NumberError, match="expected an integer"):
        parse_int(text)  # ... the parser does not


def test_integers_beyond_64_bits_are_rejected() -> None:
    assert parse_int(str(MAX_INT)) == MAX_INT
    for text in (str(MAX_INT + 1), "1" * 25, "1e30"):
        with pytest.raises(NumberError, match="too large"):
            parse_int(text)


@pytest.mark.parametrize("value", [True, False, "4", None, [1], math.nan, math.inf, -math.inf])
def test_typed_values_are_numbers_only(value: object) -> None:
    with pytest.raises(NumberError):
        check_float(value)
    with pytest.raises(NumberError):
        check_int(value)


def test_typed_integers_accept_integral_floats_only() -> None:
    assert check_int(4.0) == 4 and check_int(7) == 7 and check_float(3) == 3.0
    with pytest.raises(NumberError, match="expected an integer, got 2.5"):
        check_int(2.5)


def test_quoted_number_message_says_to_drop_the_quotes() -> None:
    with pytest.raises(NumberError) as info:
        check_int("4")
    assert "expected an integer, got '4'" in str(info.value)
    assert "without quotes" in str(info.value)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_finite_float_round_trips(x: float) -> None:
    assert parse_float(repr(x)) == x
    assert parse_float(f"{x:.17e}") == x


@given(st.integers(-MAX_INT, MAX_INT))
def test_every_64_bit_integer_round_trips(n: int) -> None:
    assert parse_int(str(n)) == n
    assert parse_int(f" +{n} " if n >= 0 else f" {n} ") == n


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=12))
def test_accepted_text_is_plain_ascii_and_agrees_with_float(text: str) -> None:
    try:
        x = parse_float(text)
    except NumberError:
        return
    core = text.strip()
    assert core.isascii() and "_" not in core
    assert math.isfinite(x) and x == float(core)


@given(
    st.integers(0, 10**6),
    st.sampled_from(["_", "١", "٣", "０", "e", "x"]),
    st.integers(0, 6),
)
def test_underscores_and_foreign_digits_are_rejected_anywhere(n: int, bad: str, pos: int) -> None:
    digits = str(n)
    text = digits[:pos] + bad + digits[pos:]
    if bad == "e" and 0 < pos < len(digits):
        return  # 12e3 is a valid exponent
    with pytest.raises(NumberError):
        parse_float(text)
    with pytest.raises(NumberError):
        parse_int(text)


# ---------------------------------------------------------------------- settings: one path
NON_FINITE_SETTINGS = [
    ("xi2", "nan"),  # every job JCT 0 before
    ("interference", "nan"),  # silently equal to 1 before
    ("interference", "inf"),  # Pollux traceback before
    ("alpha", "nan"),  # changed results before
    ("rescale_delay", "nan"),
    ("rescale_delay", "inf"),
    ("restart_delay", "nan"),
    ("horizon", "nan"),  # NaN in summary.json before
    ("a", "nan"),
    ("a", "inf"),
    ("b", "inf"),
    ("eta", "nan"),
    ("eta", "-inf"),
    ("xi1", "inf"),
    ("interval", "inf"),
    ("lam", "nan"),
    ("u", "inf"),
    ("reduction_speed", "nan"),
]


@pytest.mark.parametrize("key, text", NON_FINITE_SETTINGS)
def test_set_rejects_nan_and_infinity(key: str, text: str) -> None:
    with pytest.raises(InputError) as info:
        Settings.from_mapping({key: text})
    err = info.value
    assert err.field == key and err.source == "--set"
    assert f"expected a finite number, got '{text}'" in str(err)


@pytest.mark.parametrize("key, text", NON_FINITE_SETTINGS[:6])
def test_typed_nan_and_infinity_are_rejected_too(key: str, text: str) -> None:
    with pytest.raises(InputError, match="finite"):
        Settings.from_mapping({key: float(text)})
    with pytest.raises(InputError, match="finite"):
        Settings(**{key: float(text)}).check()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "key, raw, words",
    [
        ("kappa", "1_000", "expected an integer, got '1_000'"),
        ("kappa", "١", "expected an integer"),
        ("kappa", "2.5", "expected an integer, got '2.5'"),
        ("kappa", True, "expected an integer, got true"),
        ("kappa", 2.5, "expected an integer, got 2.5"),
        ("xi2", "1_0", "expected a number, got '1_0'"),
        ("xi2", False, "expected a number, got false"),
        ("shortcuts", "maybe", "expected true or false"),
    ],
)
def test_set_values_parse_strictly_in_plain_words(key: str, raw: object, words: str) -> None:
    with pytest.raises(InputError) as info:
        Settings.from_mapping({key: raw})
    assert words in str(info.value)
    assert "a int" not in str(info.value) and "a float" not in str(info.value)


def test_integral_text_is_an_integer_setting() -> None:
    assert Settings.from_mapping({"kappa": "2.0", "xi2": " 1e-1 "}) == Settings(kappa=2, xi2=0.1)


@pytest.mark.parametrize("value", ["16,inf", "16,nan", "1_0", "١٦"])
def test_tiresias_thresholds_are_finite_ascii_numbers(value: str) -> None:
    with pytest.raises(InputError) as info:
        Settings.from_mapping({"tiresias_thresholds": value})
    assert info.value.field == "tiresias_thresholds"


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("rescale_delay", "2e9", "≤ 1e9 s"),
        ("restart_delay", "1e300", "≤ 1e9 s"),
        ("interval", "1e-9", "≥ 1e-6 s"),
        ("horizon", "1e12", "≤ 1e9 s"),
    ],
)
def test_setting_times_stay_in_the_engine_range(key: str, value: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        Settings.from_mapping({key: value})
    assert info.value.field == key and words in str(info.value)


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


BASE_TOML = 'cluster = "tiny"\nworkload = "wang20"\npolicy = "ada-srsf"\n'


@pytest.mark.parametrize("literal", ["nan", "inf", "-inf", "+nan"])
def test_toml_settings_reject_nan_and_inf_literals(tmp_path: Path, literal: str) -> None:
    path = write(tmp_path, "c.toml", BASE_TOML + f"[settings]\nxi2 = {literal}\n")
    with pytest.raises(InputError) as info:
        load_run_config(path)
    err = info.value
    assert (err.source, err.line, err.field) == (str(path), 5, "settings.xi2")
    assert "finite" in str(err)


@pytest.mark.parametrize(
    "text, field, line",
    [
        ("seed = -1\n", "seed", 4),
        ("load_scale = 0.0\n", "load_scale", 4),
        ("max_gpus = 0\n", "max_gpus", 4),
        ("trace_start = nan\n", "trace_start", 4),
        ("sample = -3\n", "sample", 4),
    ],
)
def test_toml_run_keys_are_bounded(tmp_path: Path, text: str, field: str, line: int) -> None:
    path = write(tmp_path, "c.toml", BASE_TOML + text)
    with pytest.raises(InputError) as info:
        load_run_config(path)
    assert (info.value.field, info.value.line) == (field, line)


def test_recorded_config_json_with_negative_seed_or_nan(tmp_path: Path) -> None:
    record = {"cluster": "tiny", "workload": "wang20", "policy": "ada-srsf", "seed": -1}
    with pytest.raises(InputError, match="must be ≥ 0") as info:
        load_run_config(write(tmp_path, "config.json", json.dumps(record)))
    assert info.value.field == "seed"
    with pytest.raises(InputError, match="seed"):
        config_from_record(record)
    text = json.dumps({**record, "seed": 0, "settings": {"xi2": 1}}).replace("1}", "NaN}")
    with pytest.raises(InputError, match="NaN is not a finite number") as info:
        load_run_config(write(tmp_path, "config2.json", text))
    assert info.value.field == "xi2"


def test_command_line_seed_is_bounded() -> None:
    cfg = load_run_config_like()
    with pytest.raises(InputError, match="must be ≥ 0"):
        with_overrides(cfg, {"seed": -1})
    with pytest.raises(InputError, match="finite"):
        with_overrides(cfg, {}, {"xi2": "nan"})


def load_run_config_like():
    from ddlsched.config import RunConfig

    return RunConfig(cluster="tiny", workload="wang20", policy="ada-srsf")


SWEEP = (
    BASE_TOML.replace('policy = "ada-srsf"\n', "")
    + '[sweep]\npolicies = ["ada-srsf"]\nseeds = 1\n[sweep.grid]\n'
)


@pytest.mark.parametrize(
    "grid, field",
    [
        ("xi2 = [0.5, nan]\n", "sweep.grid.xi2"),
        ("interference = [1.5, inf]\n", "sweep.grid.interference"),
        ("load_scale = [1.0, 0.0]\n", "load_scale"),
        ("rescale_delay = [30.0, 5e9]\n", "rescale_delay"),
    ],
)
def test_sweep_grid_values_are_checked_before_anything_runs(
    tmp_path: Path, grid: str, field: str
) -> None:
    path = write(tmp_path, "s.toml", SWEEP + grid)
    with pytest.raises(InputError) as info:
        load_sweep(path)
    assert info.value.field == field
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------- the time range
def _job(arrival: float = 0.0, duration: float = 0.0, iterations: int = 0, model=None) -> JobSpec:
    return JobSpec(0, arrival, 1, iterations, model or builtin_model("resnet50"), duration=duration)


def test_time_constants_match_the_engine() -> None:
    assert RESOLUTION == 10.0**-TIME_DIGITS
    assert MIN_DURATION == pytest.approx(1000 * RESOLUTION)
    assert math.ulp(MAX_TIME) < 0.12e-6  # every time in range is exact to 0.12 µs


@pytest.mark.parametrize(
    "job, field, words",
    [
        (_job(1e16, 12.48), "arrival", "1e+16"),  # JCT 12 instead of 12.48 before
        (_job(1e308, 5.0), "arrival", "outside"),  # JCT 0 before
        (_job(MAX_TIME - 1, 5.0), "duration", "arrival + duration"),
        (_job(0.0, 1e-10), "duration", "1e-6"),  # rounds to 0 at 1 ns
        (_job(0.0, 2e9), "duration", "outside"),
        (_job(0.0, iterations=10**12), "iterations", "iterations × compute time"),
    ],
)
def test_unrepresentable_times_name_the_limit(job: JobSpec, field: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        check_job_times([job], "w.csv")
    assert info.value.field == field and words in str(info.value)
    assert "1e9" in str(info.value) or "1e-6" in str(info.value)


def test_times_at_the_limit_are_accepted() -> None:
    check_job_times([_job(MAX_TIME - 10, 10.0), _job(0.0, MIN_DURATION)])


def test_tiny_iteration_time_is_rejected() -> None:
    model = builtin_model("resnet50")
    tiny = type(model)("tiny", 1.0, 1.0, 1, 1e-12, 0.0)
    with pytest.raises(InputError, match="compute time per iteration"):
        check_job_times([_job(0.0, iterations=5, model=tiny)])


def test_workload_file_arrival_beyond_the_range(tmp_path: Path) -> None:
    path = write(tmp_path, "w.csv", "job_id,arrival,num_gpus,iterations,model\n0,1e16,1,5,vgg16\n")
    with pytest.raises(InputError) as info:
        load_workload(str(path))
    assert info.value.source == str(path) and info.value.field == "arrival"


def test_load_scale_that_pushes_arrivals_out_of_range(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_workload("wang20", 0, None, TraceOptions(load_scale=1e-300))
    assert "after the filters" in str(info.value) and info.value.field == "arrival"


def test_simulate_checks_api_jobs_and_seed() -> None:
    cluster = load_cluster("tiny")
    with pytest.raises(InputError, match="arrival"):
        simulate(cluster, [_job(1e16, 5.0)], "fifo")
    with pytest.raises(InputError, match="seed"):
        simulate(cluster, load_workload("wang20")[:2], "ada-srsf", seed=-1)


def test_load_workload_rejects_negative_seed() -> None:
    with pytest.raises(InputError, match="seed") as info:
        load_workload("wang20", seed=-1)
    assert info.value.field == "seed"


# ---------------------------------------------------------------------- strict files
@pytest.mark.parametrize(
    "cell, words",
    [
        ("1_000", "expected a number, got '1_000'"),
        ("١٢", "expected a number"),
        ("nan", "finite"),
        ("inf", "finite"),
        ("1e999", "too large"),
    ],
)
def test_workload_csv_numbers_are_strict(tmp_path: Path, cell: str, words: str) -> None:
    text = f"job_id,arrival,num_gpus,iterations,model\n0,{cell},1,5,vgg16\n"
    with pytest.raises(InputError) as info:
        read_workload(write(tmp_path, "w.csv", text))
    assert (info.value.line, info.value.field) == (2, "arrival") and words in str(info.value)


@pytest.mark.parametrize("cell", ["1_0", "٤"])
def test_workload_csv_integers_are_strict(tmp_path: Path, cell: str) -> None:
    text = f"job_id,arrival,num_gpus,iterations,model\n0,0,{cell},5,vgg16\n"
    with pytest.raises(InputError, match="expected an integer") as info:
        read_workload(write(tmp_path, "w.csv", text))
    assert info.value.field == "num_gpus"


def test_workload_json_quoted_number_is_an_error(tmp_path: Path) -> None:
    job = {"job_id": 0, "arrival": 0, "num_gpus": "4", "iterations": 5, "model": "vgg16"}
    with pytest.raises(InputError, match="without quotes") as info:
        read_workload(write(tmp_path, "w.json", json.dumps([job])))
    assert info.value.field == "num_gpus"


def test_workload_json_duplicate_key_names_key_and_line(tmp_path: Path) -> None:
    text = '[{"job_id": 0, "arrival": 0, "num_gpus": 1,\n "iterations": 5, "model": "vgg16",\n'
    text += ' "num_gpus": 2}]'
    with pytest.raises(InputError, match="duplicate key 'num_gpus'") as info:
        read_workload(write(tmp_path, "w.json", text))
    assert info.value.line == 3


def test_unterminated_quote_names_the_line(tmp_path: Path) -> None:
    text = 'job_id,arrival,num_gpus,iterations,model\n0,0,1,5,vgg16\n1,0,1,5,"vgg16\n'
    with pytest.raises(InputError, match="unterminated quote") as info:
        read_workload(write(tmp_path, "w.csv", text))
    assert info.value.line == 3
    rows = list(csv_rows('a\n"x\ny"\nb\n', "f"))  # a closed multi-line quote is fine
    assert [(s, e) for s, e, _ in rows] == [(1, 1), (2, 3), (4, 4)]


@pytest.mark.parametrize("fmt", ["generic", "tiresias"])
def test_trace_csvs_are_strict(tmp_path: Path, fmt: str) -> None:
    if fmt == "generic":
        text = "arrival,num_gpus,duration\n0,1,5\n1_0,1,5\n"
    else:
        text = "job_id,num_gpu,submit_time,duration\n1,1,0,5\n2,1,١,5\n"
    with pytest.raises(InputError, match="expected a number") as info:
        read_trace(write(tmp_path, "t.csv", text), fmt)
    assert info.value.line == 3


def test_pollux_and_philly_readers_use_the_same_parser(tmp_path: Path) -> None:
    pollux = "name,time,application,num_replicas,batch_size\na,0,bert,1_0,32\n"
    with pytest.raises(InputError, match="expected an integer, got '1_0'"):
        read_workload(write(tmp_path, "p.csv", pollux))
    philly = "timestamp,duration,num_gpus,gpu_time,cluster\n"
    philly += "2017-10-03 00:00:00,1_000,1,10,vc1\n"
    with pytest.raises(InputError, match="expected a number, got '1_000'") as info:
        read_trace(write(tmp_path, "philly.csv", philly), "philly")
    assert (info.value.line, info.value.field) == (2, "duration")


def test_gavel_throughput_infinity_nan_zero_negative_are_named(tmp_path: Path) -> None:
    def thr(value: str) -> Path:
        text = '{"v100": {"(\'A\', 1)": {"null": ' + value + "}}}"
        return write(tmp_path, f"thr{len(list(tmp_path.iterdir()))}.json", text)

    for value in ("Infinity", "NaN"):
        with pytest.raises(InputError, match=f"{value} is not a finite number"):
            gavel_throughputs(thr(value), "v100")
    with pytest.raises(InputError, match="must be ≥ 0, got -2"):
        gavel_throughputs(thr("-2"), "v100")
    trace = write(tmp_path, "g.trace", "A\tcmd\tdir\t--steps\t0\t100\t1\t1\t-1\t0\n")
    with pytest.raises(InputError, match="only zero throughputs"):
        read_trace(trace, "gavel", throughputs=thr("0"))


def test_trace_convert_never_writes_jobs_without_duration(tmp_path: Path) -> None:
    trace = write(tmp_path, "g.trace", "A\tcmd\tdir\t--steps\t0\t100\t1\t1\t-1\t0\n")
    jobs = read_trace(trace, "gavel")  # no throughputs: no durations
    out = tmp_path / "out.csv"
    with pytest.raises(InputError, match="job 0") as info:
        write_trace(jobs, out)
    assert "--gavel-throughputs" in str(info.value)
    assert not out.exists()


def test_cluster_yaml_numbers_follow_yaml_1_2(tmp_path: Path) -> None:
    ok = write(tmp_path, "c.yaml", "servers:\n  - num_gpus: 4\n    gpu_memory_mb: 16e3\n")
    assert read_cluster(ok).gpu_memory(0) == 16000.0
    for value, words in [
        ('"16384"', "without quotes"),
        ("1_000", "expected a number, got '1_000'"),
        (".nan", "finite"),
        (".inf", "finite"),
    ]:
        bad = write(tmp_path, "b.yaml", f"servers:\n  - num_gpus: 4\n    gpu_memory_mb: {value}\n")
        with pytest.raises(InputError) as info:
            read_cluster(bad)
        assert words in str(info.value) and info.value.line == 3


def test_yaml_octal_looking_integer_is_decimal() -> None:
    assert load_yaml("a: 010", "f.yaml") == {"a": 10}


def test_cluster_duplicate_keys_name_key_and_line(tmp_path: Path) -> None:
    y = write(tmp_path, "c.yaml", "servers:\n  - num_gpus: 4\n    num_gpus: 8\n")
    with pytest.raises(InputError, match="duplicate key 'num_gpus'") as info:
        read_cluster(y)
    assert info.value.line == 3
    j = write(tmp_path, "c.json", '{"servers": [{"num_gpus": 4}],\n "servers": []}')
    with pytest.raises(InputError, match="duplicate key 'servers'") as info:
        read_cluster(j)
    assert info.value.line == 2


def test_yaml_merge_keys_may_override() -> None:
    text = "d: &d {x: 1, y: 2}\ne: {<<: *d, x: 3}\n"
    assert load_yaml(text, "f.yaml")["e"] == {"x": 3, "y": 2}


def test_json_loader_rejects_non_finite_and_huge_numbers() -> None:
    for text, words in [
        ('{"a": -Infinity}', "-Infinity is not a finite number"),
        ('{"a": 1e400}', "too large"),
        ('{"a": ' + "9" * 30 + "}", "too large"),
    ]:
        with pytest.raises(InputError, match=words) as info:
            load_json(text, "f.json")
        assert info.value.field == "a"


# ---------------------------------------------------------------------- numbers inside names
def test_numbers_inside_names_are_ascii() -> None:
    from ddlsched.policies.placement import make_placement
    from ddlsched.report.plot import parse_window

    assert len(load_workload("luo24-12")) == 12
    with pytest.raises(InputError, match="no such workload preset"):
        load_workload("luo24-١٢")  # Python's int() reads this as 12
    assert load_cluster("yu22-2").num_gpus > 0
    with pytest.raises(InputError, match="unknown cluster"):
        load_cluster("yu22-٢")
    with pytest.raises(KeyError):
        make_placement("lwf-٢")
    assert parse_window("10:2e1") == (10.0, 20.0)
    for window in ("1_0:20", "nan:5", "0:inf"):
        with pytest.raises(InputError, match="START:END"):
            parse_window(window)


def test_simulate_checks_a_settings_object_made_directly() -> None:
    jobs = load_workload("wang20")[:2]
    with pytest.raises(InputError, match="finite") as info:
        simulate(load_cluster("tiny"), jobs, "ada-srsf", settings=Settings(xi2=math.nan))
    assert info.value.field == "xi2"


def test_numpy_scalars_are_numbers_but_not_bools() -> None:
    import numpy as np

    s = Settings.from_mapping({"kappa": np.int64(2), "xi2": np.float64(0.1)})
    assert s.kappa == 2 and type(s.kappa) is int and s.xi2 == 0.1
    Settings(kappa=np.int64(2)).check()  # type: ignore[arg-type]
    with pytest.raises(InputError, match="expected an integer"):
        Settings.from_mapping({"kappa": np.bool_(True)})


# ---------------------------------------------------------------------- finite model times
@pytest.mark.parametrize("key, value", [("a", "2e9"), ("b", "2"), ("eta", "1e300")])
def test_contention_settings_keep_all_reduce_times_finite(key: str, value: str) -> None:
    with pytest.raises(InputError) as info:  # a=1e308 overflowed to a traceback before
        Settings.from_mapping({key: value})
    assert info.value.field == key


def test_model_size_is_bounded(tmp_path: Path) -> None:
    text = "job_id,arrival,num_gpus,iterations,model,size_mb\n0,0,8,5,vgg16,1e308\n"
    with pytest.raises(InputError, match="size_mb must be <= 1e9") as info:
        read_workload(write(tmp_path, "w.csv", text))
    assert (info.value.line, info.value.field) == (2, "size_mb")


def test_a_run_ending_beyond_the_range_returns_no_result() -> None:
    from ddlsched.core.results import JobRecord
    from ddlsched.core.timing import check_run_end

    def rec(finish: float) -> JobRecord:
        return JobRecord(3, 0.0, 0.0, finish, 1, "0", 0)

    check_run_end([rec(1.0), rec(MAX_TIME)])
    for finish in (2e9, math.inf, math.nan):
        with pytest.raises(InputError, match="job 3 finishes"):
            check_run_end([rec(1.0), rec(finish)])


def test_extreme_rar_settings_give_an_error_not_a_zero_division() -> None:
    for key in ("xi1", "alpha"):  # f(α, k) overflows, the bandwidth underflows to 0
        settings = {"model": "rar", key: 1e308}
        with pytest.raises(InputError, match="beyond the engine's time range"):
            simulate(load_cluster("wang20"), load_workload("wang20"), "ada-srsf", settings=settings)


def test_nesting_through_aliases_counts_in_full() -> None:
    text = "a0: &a0 " + "[" * 40 + "]" * 40 + "\n"
    text += "b: " + "[" * 40 + "*a0" + "]" * 40 + "\n"  # 80 levels deep through the alias
    text += "c: *a0\n"  # a later, shallow use of the same node
    with pytest.raises(InputError, match="nested more than 64 levels"):
        load_yaml(text, "f.yaml")
