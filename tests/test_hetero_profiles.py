"""Measured application profiles per GPU type (issue #17): a cluster file's
``[gpu_types.NAME] profiles = "DIR"``. A job on GPUs of such a type runs at that profile's rate
(no speed factor); a placement spanning types at its slowest type's rate; profiles equal to the
default ones change nothing; bad directories and profile sets are one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlsched.api import simulate
from ddlsched.cli import main
from ddlsched.core.cluster_io import read_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError
from ddlsched.perf.builtin_apps import (
    SPECS,
    builtin_applications,
    placement_rows,
    scalability_rows,
    validation_rows,
)
from ddlsched.perf.profiles import load_applications

MODEL = ModelProfile("app", 0.0, 0.0, 0, 0.0, 0.0)
CNN = "synthetic-cnn"
DELAY = 30.0  # the default rescale_delay


def write_profiles(root: Path, step_factor: float = 1.0, names=(CNN,)) -> Path:
    """The built-in applications ``names`` written as a profiles directory (the layout
    ``load_applications`` reads), every step and sync time × ``step_factor``."""
    for spec in SPECS:
        if spec.name not in names:
            continue
        d = root / spec.name
        d.mkdir(parents=True)
        f = step_factor
        (d / "placements.csv").write_text(
            "placement,local_bsz,step_time,sync_time\n"
            + "".join(
                f"{''.join(map(str, p))},{int(a)},{s * f!r},{y * f!r}\n"
                for p, a, s, y in placement_rows(spec)
            )
        )
        (d / "scalability.csv").write_text(
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
            + "".join(
                f"{int(n)},{int(r)},{int(a)},{s * f!r},{y * f!r}\n"
                for n, r, a, s, y in scalability_rows(spec)
            )
        )
        for bsz, rows in validation_rows(spec).items():
            (d / f"validation-{bsz}.csv").write_text(
                "progress,grad_sqr,grad_var\n" + "".join(f"{p!r},{q!r},{v!r}\n" for p, q, v in rows)
            )
    return root


def cluster_file(tmp_path: Path, types: dict[str, str], servers: list[tuple[str, int]]) -> Path:
    """A cluster file: ``types`` (name → the body of its [gpu_types.NAME] table) and servers
    as (type, GPUs)."""
    text = "".join(f"[gpu_types.{t}]\n{body}\n" for t, body in types.items())
    text += "".join(f'[[servers]]\nnum_gpus = {n}\ngpu_type = "{t}"\n' for t, n in servers)
    f = tmp_path / "c.toml"
    f.write_text(text)
    return f


def jobs(*gpus: int, app: str = CNN, batch: int = 256) -> list[JobSpec]:
    return [
        JobSpec(i, 0.0, g, 0, MODEL, application=app, batch_size=batch) for i, g in enumerate(gpus)
    ]


def jcts(cluster, specs, policy="fifo", **settings) -> list[float]:
    res = simulate(cluster, specs, policy, settings=settings or None)
    return [j.jct for j in sorted(res.jobs, key=lambda j: j.job_id)]


# ---------------------------------------------------------------------- the cluster file
def test_profiles_path_is_relative_to_the_cluster_file(tmp_path: Path) -> None:
    write_profiles(tmp_path / "k80")
    f = cluster_file(
        tmp_path, {"K80": 'speed = 0.3\nprofiles = "k80"', "V100": "speed = 1.0"}, [("K80", 2)]
    )
    cl = read_cluster(f)
    (tp,) = cl.type_profiles
    assert (tp.gpu_type, Path(tp.directory), tp.source) == ("K80", tmp_path / "k80", str(f))
    assert tp.line == 3  # the profiles key


# ---------------------------------------------------------------------- rates
def test_a_job_alone_runs_at_its_types_profile_rate_by_hand(tmp_path: Path) -> None:
    """Type K (speed 0.5, ignored for profile jobs) has its own profiles, 3× slower steps than
    the built-in ones: the job's JCT is the restart delay plus, per epoch, the progress ÷ the
    K profile's rate at the job's configuration — as on a cluster whose profiles are K's."""
    own = write_profiles(tmp_path / "k", step_factor=3.0)
    f = cluster_file(tmp_path, {"K": 'speed = 0.5\nprofiles = "k"'}, [("K", 4)])
    (got,) = jcts(read_cluster(f), jobs(2))
    app_k = load_applications(own)[CNN]
    default = builtin_applications()[CNN]
    cfg = default.batch_config(2, 256)
    hand, progress = DELAY, 0.0
    for e in range(default.max_epochs):
        target = default.progress_at(e + 1)
        hand += (target - progress) / app_k.rate((2,), cfg, e)
        progress = target
    assert got == pytest.approx(hand, rel=1e-12)
    plain = tmp_path / "plain.toml"
    plain.write_text("[[servers]]\nnum_gpus = 4\n")
    assert jcts(read_cluster(plain), jobs(2), profiles=str(own)) == [got]
    # the speed factor alone would give another time
    speed_only = cluster_file(tmp_path, {"K": "speed = 0.5"}, [("K", 4)])
    assert jcts(read_cluster(speed_only), jobs(2)) != [got]


@pytest.mark.parametrize(
    ("policy", "semantics"), [("pollux", "events"), ("pollux", "rounds"), ("tiresias", "events")]
)
def test_a_typed_cluster_runs_as_one_measured_with_the_types_profiles(
    tmp_path, policy, semantics
) -> None:
    """Every GPU of type K (own profiles, 3× slower steps): the same run as on an untyped
    cluster whose ``profiles`` are K's — Pollux's agent observes K's step times."""
    own = write_profiles(tmp_path / "k", step_factor=3.0, names=(CNN, "synthetic-rec"))
    specs = [
        JobSpec(i, 60.0 * i, g, 0, MODEL, application=a, batch_size=b)
        for i, (g, a, b) in enumerate([(2, CNN, 256), (1, "synthetic-rec", 2048), (3, CNN, 512)])
    ]
    typed = cluster_file(tmp_path, {"K": 'speed = 0.5\nprofiles = "k"'}, [("K", 4), ("K", 4)])
    plain = tmp_path / "plain.toml"
    plain.write_text("[[servers]]\nnum_gpus = 4\n[[servers]]\nnum_gpus = 4\n")
    got = jcts(read_cluster(typed), specs, policy, semantics=semantics)
    assert got == jcts(read_cluster(plain), specs, policy, semantics=semantics, profiles=str(own))
    assert got != jcts(read_cluster(plain), specs, policy, semantics=semantics)


@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_placement_spanning_types_runs_at_the_slower_types_rate(tmp_path, factor) -> None:
    """Server 0: 2 GPUs of A (default profiles, speed 1); server 1: 2 GPUs of B (own profiles,
    steps × ``factor``). A 4-GPU job spans both, placement (2, 2): it runs as on a cluster
    of B only (B slower) or of A only (B faster)."""
    write_profiles(tmp_path / "b", step_factor=factor)
    types = {"A": "speed = 1.0", "B": 'speed = 1.0\nprofiles = "b"'}
    mixed = read_cluster(cluster_file(tmp_path, types, [("A", 2), ("B", 2)]))
    got = jcts(mixed, jobs(4))
    only_b = read_cluster(cluster_file(tmp_path, types, [("B", 2), ("B", 2)]))
    only_a = read_cluster(cluster_file(tmp_path, types, [("A", 2), ("A", 2)]))
    slower = only_b if factor > 1 else only_a
    faster = only_a if factor > 1 else only_b
    assert got == jcts(slower, jobs(4))
    assert got[0] > jcts(faster, jobs(4))[0]


@pytest.mark.parametrize("policy", ["fifo", "sjf", "pollux"])
def test_profiles_equal_to_the_default_ones_change_nothing(tmp_path, policy) -> None:
    """Types whose own profiles are a copy of the built-in ones run every job as speed 1.0
    (Pollux's agent included: it observes the type's profile)."""
    names = tuple(s.name for s in SPECS)
    write_profiles(tmp_path / "copy", names=names)
    specs = [
        JobSpec(i, 60.0 * i, g, 0, MODEL, application=a, batch_size=b)
        for i, (g, a, b) in enumerate(
            [(2, CNN, 256), (4, "synthetic-resnet", 512), (1, "synthetic-rec", 2048), (3, CNN, 512)]
        )
    ]
    servers = [("A", 4), ("B", 4)]
    plain = read_cluster(cluster_file(tmp_path, {"A": "speed = 1", "B": "speed = 1"}, servers))
    copy = read_cluster(
        cluster_file(tmp_path, {"A": "speed = 1", "B": 'speed = 1\nprofiles = "copy"'}, servers)
    )
    assert copy.type_profiles and not plain.type_profiles
    base = simulate(plain, specs, policy)
    got = simulate(copy, specs, policy)
    assert [j.jct for j in got.jobs] == [j.jct for j in base.jobs]
    assert got.summary["avg_ftf_rho"] == pytest.approx(base.summary["avg_ftf_rho"], rel=1e-12)


def test_alone_time_is_the_count_weighted_mean_rate(tmp_path: Path) -> None:
    """Fairness alone times on a typed cluster: an equal time-share of the types, i.e. the
    count-weighted mean of the per-type rates (here 1 GPU of speed 1 and 3 of a type whose
    own profile is 2× slower: mean rate = (1 + 3/2)/4 of the default)."""
    write_profiles(tmp_path / "slow", step_factor=2.0)
    types = {"A": "speed = 1", "S": 'speed = 1\nprofiles = "slow"'}
    cl = read_cluster(cluster_file(tmp_path, types, [("A", 1), ("S", 3)]))
    res = simulate(cl, jobs(1), "fifo")
    default = builtin_applications()[CNN]
    slow = load_applications(tmp_path / "slow")[CNN]
    cfg = default.batch_config(1, 256)
    hand, progress = 0.0, 0.0
    for e in range(default.max_epochs):
        target = default.progress_at(e + 1)
        g = (default.rate((1,), cfg, e) + 3 * slow.rate((1,), cfg, e)) / 4
        hand += (target - progress) / g
        progress = target
    ((job_id, alone, *_),) = res.fairness
    assert job_id == 0 and alone == pytest.approx(hand, rel=1e-12)


# ---------------------------------------------------------------------- errors
def run_cli(tmp_path: Path, cluster: Path, capsys, app: str = CNN) -> tuple[int, list[str]]:
    wl = tmp_path / "w.csv"
    wl.write_text(f"name,time,application,num_replicas,batch_size\na,0,{app},2,256\n")
    argv = ["run", "--cluster", str(cluster), "--workload", str(wl), "--policy", "fifo"]
    rc = main([*argv, "--quiet", "--out", str(tmp_path / "o")])
    return rc, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("what", ["missing", "file"])
def test_a_profiles_path_that_is_no_directory_is_a_one_line_error(tmp_path, capsys, what):
    if what == "file":
        (tmp_path / "k").write_text("x")
    f = cluster_file(tmp_path, {"K": 'speed = 0.5\nprofiles = "k"'}, [("K", 4)])
    with pytest.raises(InputError) as info:
        read_cluster(f)
    e = info.value
    assert (e.source, e.line, e.field) == (str(f), 3, "gpu_types.K.profiles")
    assert ("no such directory" if what == "missing" else "not a directory") in e.message
    rc, lines = run_cli(tmp_path, f, capsys)
    assert rc == 2 and len(lines) == 1 and "c.toml" in lines[0]
    assert "gpu_types.K.profiles" in lines[0]


def test_a_type_whose_profiles_lack_an_application_is_a_one_line_error(tmp_path, capsys):
    write_profiles(tmp_path / "k", names=("synthetic-rec",))
    f = cluster_file(tmp_path, {"K": 'speed = 0.5\nprofiles = "k"'}, [("K", 4)])
    rc, lines = run_cli(tmp_path, f, capsys)
    assert rc == 2 and len(lines) == 1
    line = lines[0]
    assert "c.toml" in line and "gpu_types.K.profiles" in line
    assert "GPU type 'K'" in line and CNN in line and "synthetic-rec" in line


def test_malformed_type_profiles_are_a_one_line_error_naming_the_type(tmp_path, capsys):
    write_profiles(tmp_path / "k")
    bad = tmp_path / "k" / CNN / "placements.csv"
    bad.write_text("placement,local_bsz,step_time,sync_time\n12,32,fast,0.1\n")
    f = cluster_file(tmp_path, {"K": 'speed = 0.5\nprofiles = "k"'}, [("K", 4)])
    rc, lines = run_cli(tmp_path, f, capsys)
    assert rc == 2 and len(lines) == 1
    line = lines[0]
    assert "c.toml" in line and "gpu_types.K.profiles" in line and "GPU type 'K'" in line
    assert "placements.csv" in line and "step_time" in line


def test_a_non_string_profiles_value_is_an_error(tmp_path: Path) -> None:
    f = cluster_file(tmp_path, {"K": "speed = 0.5\nprofiles = 3"}, [("K", 4)])
    with pytest.raises(InputError, match="expected a directory name") as info:
        read_cluster(f)
    assert info.value.field == "gpu_types.K.profiles"
