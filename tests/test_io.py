"""Input boundary: workload CSV/JSON and cluster TOML/YAML reading, validation and errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ddlsched.core.cluster import Cluster, Server
from ddlsched.core.cluster_io import CLUSTER_PRESETS, load_cluster, read_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError
from ddlsched.perf.models import WANG20_MODELS
from ddlsched.workloads import read_workload, validate_fits, write_workload_csv

HEADER = "job_id,arrival,num_gpus,iterations,model"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def expect_error(path: Path, reader, line: int | None, field: str | None) -> InputError:
    """Call ``reader(path)``; the error names the file, the line and the field."""
    with pytest.raises(InputError) as info:
        reader(path)
    err = info.value
    msg = str(err)
    assert path.name in msg
    assert "\n" not in msg
    if line is not None:
        assert f"line {line}" in msg
        assert err.line == line
    if field is not None:
        assert field in msg
        assert err.field is not None and field in err.field
    return err


# --------------------------------------------------------------------------------------------
# workload CSV
# --------------------------------------------------------------------------------------------


def test_csv_builtin_models_sorted(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "w.csv",
        f"{HEADER}\n2,5.0,4,100,resnet50\n1,5.0,2,10,VGG16\n0,0,1,1,lstm-ptb\n",
    )
    jobs = read_workload(p)
    assert [j.job_id for j in jobs] == [0, 1, 2]
    assert jobs[1].model == WANG20_MODELS["vgg16"]
    assert jobs[2] == JobSpec(2, 5.0, 4, 100, WANG20_MODELS["resnet50"])


def test_csv_override_and_custom_model(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "w.csv",
        f"{HEADER},size_mb,memory_mb,batch_size,t_forward,t_backward\n"
        "1,0,2,10,resnet50,,8000,,,\n"
        "2,1,1,5,bert,1300,9000,8,0.1,0.2\n",
    )
    a, b = read_workload(p)
    assert a.model == ModelProfile("resnet50", 99.2, 8000.0, 16, 25.0e-3, 37.4e-3)
    assert b.model == ModelProfile("bert", 1300.0, 9000.0, 8, 0.1, 0.2)


def test_csv_blank_and_comment_lines_keep_physical_line_numbers(tmp_path: Path) -> None:
    p = write(tmp_path, "w.csv", f"# a comment\n{HEADER}\n\n1,0,1,1,resnet50\n\n2,0,0,1,vgg16\n")
    expect_error(p, read_workload, 6, "num_gpus")


def test_round_trip(tmp_path: Path) -> None:
    jobs = [
        JobSpec(3, 0.1 + 0.2, 2, 7, WANG20_MODELS["vgg16"]),
        JobSpec(1, 0.0, 1, 1, ModelProfile("my,model", 1e-7, 1234.5, 3, 1 / 3, 2 / 7)),
        JobSpec(2, 1e6, 64, 10**9, WANG20_MODELS["lstm-ptb"]),
    ]
    p = tmp_path / "sub" / "out.csv"
    write_workload_csv(jobs, p)
    back = read_workload(p)
    assert back == sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    assert p.read_text().splitlines()[0] == (
        "job_id,arrival,num_gpus,iterations,model,size_mb,memory_mb,batch_size,t_forward,t_backward"
    )
    assert [f for f in os.listdir(p.parent)] == ["out.csv"]  # no temp files left behind
    # writing again replaces the file
    write_workload_csv(jobs[:1], p)
    assert len(read_workload(p)) == 1


@pytest.mark.parametrize(
    ("body", "line", "field", "words"),
    [
        ("1,0,1,1,resnet50\n2,abc,1,1,resnet50\n", 3, "arrival", "number"),
        ("1,-1,1,1,resnet50\n", 2, "arrival", ">= 0"),
        ("1,0,0,1,resnet50\n", 2, "num_gpus", ">= 1"),
        ("1,0,1,0,resnet50\n", 2, "iterations", ">= 1"),
        ("1,0,1.5,1,resnet50\n", 2, "num_gpus", "integer"),
        ("1,0,1,2.5,resnet50\n", 2, "iterations", "integer"),
        ("x,0,1,1,resnet50\n", 2, "job_id", "integer"),
        ("1,0,1,1,resnet50\n1,2,1,1,vgg16\n", 3, "job_id", "duplicate"),
        ("1,nan,1,1,resnet50\n", 2, "arrival", "finite"),
        ("1,inf,1,1,resnet50\n", 2, "arrival", "finite"),
        ("1,0,1,1,\n", 2, "model", "missing"),
        ("1,0,1,,resnet50\n", 2, "iterations", "missing"),
        ("1,0,1,1,resnet-50\n", 2, "size_mb", "resnet50"),
        ("1,0,1,1,resnet50,extra\n", 2, None, "expected 5 fields"),
    ],
)
def test_csv_row_errors(
    tmp_path: Path, body: str, line: int, field: str | None, words: str
) -> None:
    p = write(tmp_path, "bad.csv", f"{HEADER}\n{body}")
    err = expect_error(p, read_workload, line, field)
    assert words in str(err)


def test_csv_duplicate_names_first_line(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.csv", f"{HEADER}\n7,0,1,1,resnet50\n8,0,1,1,resnet50\n7,1,1,1,vgg16\n")
    err = expect_error(p, read_workload, 4, "job_id")
    assert "line 2" in str(err)


def test_csv_unknown_model_names_missing_profile_field(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.csv", f"{HEADER},size_mb,memory_mb\n1,0,1,1,bert,100,2000\n")
    err = expect_error(p, read_workload, 2, "batch_size")
    assert "bert" in str(err) and "t_forward" in str(err)


def test_csv_bad_profile_values(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.csv", f"{HEADER},memory_mb\n1,0,1,1,vgg16,-5\n")
    expect_error(p, read_workload, 2, "memory_mb")
    p = write(tmp_path, "bad2.csv", f"{HEADER},batch_size\n1,0,1,1,vgg16,0.5\n")
    expect_error(p, read_workload, 2, "batch_size")


def test_csv_unknown_column_suggests(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.csv", "job_id,arival,num_gpus,iterations,model\n1,0,1,1,vgg16\n")
    err = expect_error(p, read_workload, 1, "arival")
    assert "did you mean 'arrival'" in str(err)


def test_csv_missing_column(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.csv", "job_id,arrival,num_gpus,model\n1,0,1,vgg16\n")
    expect_error(p, read_workload, 1, "iterations")


def test_csv_header_after_comment_is_its_line(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.csv", "# trace\njob_id,arrival,gpus,iterations,model\n")
    err = expect_error(p, read_workload, 2, "gpus")
    assert "num_gpus" in str(err)


def test_csv_empty_file(tmp_path: Path) -> None:
    p = write(tmp_path, "empty.csv", "")
    err = expect_error(p, read_workload, None, None)
    assert "empty" in str(err)
    p = write(tmp_path, "header_only.csv", HEADER + "\n")
    assert "no jobs" in str(expect_error(p, read_workload, None, None))


def test_missing_file(tmp_path: Path) -> None:
    err = expect_error(tmp_path / "nope.csv", read_workload, None, None)
    assert "not found" in str(err)


# --------------------------------------------------------------------------------------------
# workload JSON
# --------------------------------------------------------------------------------------------


def test_json_list_and_jobs_object(tmp_path: Path) -> None:
    jobs = [
        {"job_id": 2, "arrival": 1.5, "num_gpus": 2, "iterations": 50, "model": "vgg16"},
        {
            "job_id": 1,
            "arrival": 3,
            "num_gpus": 1,
            "iterations": 5,
            "model": "bert",
            "size_mb": 1300,
            "memory_mb": 9000,
            "batch_size": 8,
            "t_forward": 0.1,
            "t_backward": 0.2,
        },
    ]
    a = read_workload(write(tmp_path, "a.json", json.dumps(jobs, indent=2)))
    b = read_workload(write(tmp_path, "b.json", json.dumps({"jobs": jobs})))
    assert a == b
    assert [j.job_id for j in a] == [2, 1]
    assert a[0].model == WANG20_MODELS["vgg16"]
    assert a[1].model == ModelProfile("bert", 1300, 9000, 8, 0.1, 0.2)
    # content sniffing for other extensions
    assert read_workload(write(tmp_path, "c.trace", json.dumps(jobs))) == a


def test_json_error_names_line_of_field(tmp_path: Path) -> None:
    text = (
        '{"jobs": [\n'
        '  {"job_id": 1, "arrival": 0, "num_gpus": 1, "iterations": 3, "model": "vgg16"},\n'
        "  {\n"
        '    "job_id": 2,\n'
        '    "arrival": 0,\n'
        '    "num_gpus": 0,\n'
        '    "iterations": 3,\n'
        '    "model": "vgg16"\n'
        "  }\n"
        "]}\n"
    )
    err = expect_error(write(tmp_path, "bad.json", text), read_workload, 6, "num_gpus")
    assert "job 2" in str(err)


@pytest.mark.parametrize(
    ("job", "field", "words"),
    [
        ({"arrival": 0, "num_gpus": 1, "iterations": 1, "model": "vgg16"}, "job_id", "missing"),
        ({"job_id": 1, "arrival": "soon", "num_gpus": 1, "iterations": 1, "model": "vgg16"}, "arrival", "number"),
        ({"job_id": 1, "arrival": 0, "num_gpus": True, "iterations": 1, "model": "vgg16"}, "num_gpus", "integer"),
        ({"job_id": 1, "arrival": 0, "num_gpus": 1, "iterations": 1.5, "model": "vgg16"}, "iterations", "integer"),
        ({"job_id": 1, "arrival": 0, "num_gpus": 1, "iterations": 1, "model": 7}, "model", "model name"),
        ({"job_id": 1, "arrival": 0, "num_gpus": 1, "iterations": 1, "model": "x"}, "size_mb", "not built-in"),
        ({"job_id": 1, "arrival": 0, "num_gpus": 1, "iterations": 1, "model": "vgg16", "gpus": 2}, "gpus", "did you mean 'num_gpus'"),
    ],
)  # fmt: skip
def test_json_field_errors(tmp_path: Path, job: dict, field: str, words: str) -> None:
    ok = {"job_id": 0, "arrival": 0, "num_gpus": 1, "iterations": 1, "model": "vgg16"}
    text = "[\n" + json.dumps(ok) + ",\n" + json.dumps(job) + "\n]\n"
    err = expect_error(write(tmp_path, "bad.json", text), read_workload, 3, field)
    assert words in str(err) and "job 2" in str(err)


def test_json_nan_and_duplicates(tmp_path: Path) -> None:
    text = '[{"job_id": 1, "arrival": NaN, "num_gpus": 1, "iterations": 1, "model": "vgg16"}]'
    expect_error(write(tmp_path, "nan.json", text), read_workload, 1, "arrival")
    one = {"job_id": 1, "arrival": 0, "num_gpus": 1, "iterations": 1, "model": "vgg16"}
    text = json.dumps([one, one], indent=1)
    expect_error(write(tmp_path, "dup.json", text), read_workload, 10, "job_id")


def test_json_structure_errors(tmp_path: Path) -> None:
    expect_error(write(tmp_path, "syn.json", '[\n{"job_id": 1,,}\n]'), read_workload, 2, None)
    err = expect_error(write(tmp_path, "top.json", '{\n"job": []}'), read_workload, 2, "job")
    assert "did you mean 'jobs'" in str(err)
    assert "empty" in str(expect_error(write(tmp_path, "e.json", ""), read_workload, None, None))
    assert "no jobs" in str(
        expect_error(write(tmp_path, "n.json", "[]"), read_workload, None, None)
    )
    err = expect_error(write(tmp_path, "s.json", "[1]"), read_workload, None, None)
    assert "job 1" in str(err) and "object" in str(err)


# --------------------------------------------------------------------------------------------
# validate_fits
# --------------------------------------------------------------------------------------------


def test_validate_fits() -> None:
    cluster = CLUSTER_PRESETS["tiny"](0)
    ok = [JobSpec(1, 0, 8, 1, WANG20_MODELS["vgg16"])]
    validate_fits(ok, cluster, "w.csv")

    with pytest.raises(InputError) as info:
        validate_fits([JobSpec(5, 0, 9, 1, WANG20_MODELS["vgg16"])], cluster, "w.csv")
    msg = str(info.value)
    assert "w.csv" in msg and "num_gpus" in msg and "job 5" in msg

    huge = ModelProfile("huge", 1, 20000, 1, 0.1, 0.1)
    with pytest.raises(InputError) as info:
        validate_fits([JobSpec(6, 0, 1, 1, huge)], cluster, "w.csv")
    msg = str(info.value)
    assert "w.csv" in msg and "memory_mb" in msg and "job 6" in msg


def test_validate_fits_heterogeneous_memory() -> None:
    cluster = Cluster(
        servers=(Server(num_gpus=2, gpu_memory_mb=32768), Server(num_gpus=4, gpu_memory_mb=8192))
    )
    big = ModelProfile("big", 1, 20000, 1, 0.1, 0.1)
    validate_fits([JobSpec(1, 0, 2, 1, big)], cluster, "w.csv")
    with pytest.raises(InputError, match="memory_mb"):
        validate_fits([JobSpec(2, 0, 3, 1, big)], cluster, "w.csv")


# --------------------------------------------------------------------------------------------
# clusters
# --------------------------------------------------------------------------------------------

TOML = """\
name = "mixed"

[defaults]
gpu_memory_mb = 16384
network_bandwidth_gbps = 10

[[servers]]
num_gpus = 4
count = 3
gpu_type = "V100"

[[servers]]
num_gpus = 8
gpu_memory_mb = 40960
network_bandwidth_gbps = 25.0
gpu_type = "A100"
"""

YAML = """\
name: mixed
defaults:
  gpu_memory_mb: 16384
  network_bandwidth_gbps: 10
servers:
  - num_gpus: 4
    count: 3
    gpu_type: V100
  - num_gpus: 8
    gpu_memory_mb: 40960
    network_bandwidth_gbps: 25.0
    gpu_type: A100
"""


def test_presets() -> None:
    w = CLUSTER_PRESETS["wang20"](0)
    assert w == Cluster.homogeneous(
        16, 4, name="wang20", gpu_memory_mb=16384.0, network_bandwidth_gbps=10.0, gpu_type="V100"
    )
    assert w.num_gpus == 64 and w.num_servers == 16
    t = CLUSTER_PRESETS["tiny"](0)
    assert t.num_gpus == 8 and t.name == "tiny" and t.servers[0].gpu_memory_mb == 16384.0
    assert load_cluster("wang20") == w
    assert load_cluster("TINY") == t


@pytest.mark.parametrize(("name", "text"), [("c.toml", TOML), ("c.yaml", YAML), ("c.yml", YAML)])
def test_read_cluster(tmp_path: Path, name: str, text: str) -> None:
    c = read_cluster(write(tmp_path, name, text))
    assert c.name == "mixed"
    assert c.num_servers == 4 and c.num_gpus == 20
    v100 = Server(num_gpus=4, gpu_memory_mb=16384.0, network_bandwidth_gbps=10.0)
    assert c.servers[:3] == (v100,) * 3
    assert c.servers[3] == Server(8, 40960.0, 100.0, 25.0, "A100")
    assert load_cluster(str(tmp_path / name)) == c


def test_cluster_json_and_default_name(tmp_path: Path) -> None:
    c = read_cluster(write(tmp_path, "lab.json", '{"servers": [{"num_gpus": 2}]}'))
    assert c.name == "lab" and c.servers == (Server(num_gpus=2),)


@pytest.mark.parametrize(
    ("toml", "line", "field", "words"),
    [
        (TOML.replace("count = 3", "cuont = 3"), 9, "cuont", "did you mean 'count'"),
        (TOML.replace("num_gpus = 8", "num_gpus = 0"), 13, "servers[1].num_gpus", ">= 1"),
        (TOML.replace("num_gpus = 8", "num_gpus = 2.5"), 13, "num_gpus", "integer"),
        (TOML.replace("num_gpus = 8", 'num_gpus = "8"'), 13, "num_gpus", "integer"),
        (TOML.replace("gpu_memory_mb = 16384", "gpu_memory_mb = -1"), 4, "defaults.gpu_memory_mb", "> 0"),
        (TOML.replace("network_bandwidth_gbps = 25.0", "network_bandwidth_gbps = 0"), 15, "network_bandwidth_gbps", "> 0"),
        (TOML.replace("gpu_type = \"A100\"", "gpu_type = 100"), 16, "gpu_type", "string"),
        (TOML.replace('name = "mixed"', 'nmae = "mixed"'), 1, "nmae", "did you mean 'name'"),
        (TOML.replace("[defaults]", "[defaults]\nnum_gpu = 4"), 4, "defaults.num_gpu", "num_gpus"),
        (TOML.replace("num_gpus = 8\n", ""), 12, "servers[1].num_gpus", "missing"),
        (TOML.replace("gpu_memory_mb = 40960", "gpu_memory_mb = inf"), 14, "gpu_memory_mb", "finite"),
    ],
)  # fmt: skip
def test_cluster_toml_errors(tmp_path: Path, toml: str, line: int, field: str, words: str) -> None:
    err = expect_error(write(tmp_path, "bad.toml", toml), read_cluster, line, field)
    assert words in str(err)


@pytest.mark.parametrize(
    ("yaml_text", "line", "field", "words"),
    [
        (YAML.replace("count: 3", "cuont: 3"), 7, "cuont", "did you mean 'count'"),
        (YAML.replace("num_gpus: 8", "num_gpus: -8"), 9, "servers[1].num_gpus", ">= 1"),
        (YAML.replace("gpu_memory_mb: 16384", "gpu_memory_mb: lots"), 3, "gpu_memory_mb", "number"),
        (YAML.replace("network_bandwidth_gbps: 25.0", "network_bandwidth_gbps: 0"), 11, "network_bandwidth_gbps", "> 0"),
        (YAML.replace("servers:", "server:"), 5, "server", "did you mean 'servers'"),
    ],
)  # fmt: skip
def test_cluster_yaml_errors(
    tmp_path: Path, yaml_text: str, line: int, field: str, words: str
) -> None:
    err = expect_error(write(tmp_path, "bad.yaml", yaml_text), read_cluster, line, field)
    assert words in str(err)


def test_cluster_yaml_numeric_string_accepted(tmp_path: Path) -> None:
    c = read_cluster(
        write(tmp_path, "c.yaml", "servers:\n  - num_gpus: 2\n    gpu_memory_mb: 16e3\n")
    )
    assert c.servers[0].gpu_memory_mb == 16000.0


def test_cluster_syntax_errors(tmp_path: Path) -> None:
    err = expect_error(write(tmp_path, "s.toml", "a = 1\nb = = 2\n"), read_cluster, 2, None)
    assert "invalid TOML" in str(err)
    err = expect_error(
        write(tmp_path, "s.yaml", "servers:\n  - num_gpus: 4\n   bad: [\n"),
        read_cluster,
        None,
        None,
    )
    assert "invalid YAML" in str(err) and err.line is not None


def test_cluster_missing_servers(tmp_path: Path) -> None:
    expect_error(write(tmp_path, "m.toml", 'name = "x"\n'), read_cluster, None, "servers")
    expect_error(write(tmp_path, "m.yaml", "servers: []\n"), read_cluster, 1, "servers")
    expect_error(write(tmp_path, "m2.yaml", "servers: 4\n"), read_cluster, 1, "servers")
    assert "empty" in str(expect_error(write(tmp_path, "e.toml", ""), read_cluster, None, None))


def test_load_cluster_unknown(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_cluster("wang2O")
    msg = str(info.value)
    assert "wang20" in msg and "tiny" in msg
    with pytest.raises(InputError, match="unknown cluster file type"):
        load_cluster(str(write(tmp_path, "c.txt", "x")))


@pytest.mark.parametrize("brk", ["\n", "\r", "\x0b", "\x85", "\u2028"])
def test_input_error_is_one_line_whatever_the_names(brk: str) -> None:
    """A source, field or message holding a line break is shown escaped, on one line."""
    e = InputError(f"unknown key 'a{brk}b'", source=f"dir{brk}/c.toml", line=2, field=f"a{brk}b")
    assert len(str(e).splitlines()) == 1
    assert str(InputError("bad", source="c.toml", line=2, field="arrival")) == (
        "c.toml, line 2, field 'arrival': bad"
    )
