"""Sia's inputs (issue #29, docs/sia.md): its cluster presets, its profile directories (one
``placements-<type>.csv``/``scalability-<type>.csv`` per GPU type) and its workload CSV, read
as the artifact writes them. The profiles here are tiny ones of our own in the artifact's
format; nothing of the artifact's data is used."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlsched.api import simulate
from ddlsched.cli import main
from ddlsched.core.cluster_io import is_cluster_preset, load_cluster, read_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.profileexec import accumulated_config
from ddlsched.core.protocols import ProfileEstimates
from ddlsched.core.sia_clusters import SIA_MAX_PHYSICAL_NODES
from ddlsched.errors import InputError
from ddlsched.perf.profiles import packed_placement
from ddlsched.perf.typed_profiles import (
    is_typed_profiles,
    load_profiles,
    load_type_profiles,
    profile_types,
)
from ddlsched.workloads.traces import detect_format, read_trace, write_trace


# ---------------------------------------------------------------------- cluster presets
@pytest.mark.parametrize(
    ("name", "types", "servers"),
    [
        # simulator_config.py:11, the paper's Heterogeneous setting
        ("sia-64", {"aws": 24, "dgx-ext": 16, "rtx": 24}, 11),
        # simulator_config.py:12, the Homogeneous setting (Table 4)
        ("sia-homo-64", {"aws": 64}, 16),
        # simulator_config.py:13, the 44-GPU physical testbed
        ("sia-physical-44", {"rtx": 24, "dgx-ext": 16, "quad": 4}, 6),
        # --cluster_scale 8 (workloads/scale/scale_8x)
        ("sia-64x8", {"aws": 192, "dgx-ext": 128, "rtx": 192}, 88),
    ],
)
def test_sia_presets_have_the_artifacts_gpus_per_type(name, types, servers) -> None:
    cl = load_cluster(name)
    assert cl.name == name and cl.gpu_types == types and cl.num_servers == servers
    assert cl.typed and not cl.heterogeneous  # declared types, every one at speed 1
    per_node = {"aws": 4, "dgx-ext": 8, "rtx": 8, "quad": 4}  # simulator_config.py:9
    assert all(s.num_gpus == per_node[s.gpu_type] for s in cl.servers)
    # each type's nodes together, in the artifact's order
    order = [s.gpu_type for s in cl.servers]
    assert order == sorted(order, key=list(types).index)
    assert is_cluster_preset(name.upper())


def test_sia_64_first_nodes_are_aws_t4s() -> None:
    cl = load_cluster("sia-64")
    assert [s.gpu_type for s in cl.servers[:6]] == ["aws"] * 6
    assert {s.gpu_type: s.gpu_memory_mb for s in cl.servers} == {
        "aws": 16384.0,  # T4 16 GB
        "dgx-ext": 40960.0,  # A100 40 GB
        "rtx": 11264.0,  # RTX 2080 Ti 11 GB
    }
    assert load_cluster("sia-64x1").gpu_types == cl.gpu_types
    assert SIA_MAX_PHYSICAL_NODES["rtx"] == 3 and SIA_MAX_PHYSICAL_NODES["aws"] == 16


@pytest.mark.parametrize("name", ["sia-64x0", "sia-64x15626", "sia-64x999999"])
def test_sia_scaled_preset_bounds(name) -> None:
    with pytest.raises(InputError, match=r"field 'cluster': sia-64xN needs 1 ≤ N ≤ 15625"):
        load_cluster(name)


def test_list_shows_the_sia_presets(capsys) -> None:
    assert main(["list"]) == 0
    clusters = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("clusters:"))
    for name in ("sia-64", "sia-homo-64", "sia-physical-44", "sia-64xN"):
        assert name in clusters


# ---------------------------------------------------------------------- tiny profiles of ours
#: (GPUs per node, most nodes of a measured placement, most nodes of a scalability row,
#: step-time factor, local batches measured) per GPU type; like the artifact's, aws's
#: scalability rows reach more nodes than its placements
TYPES: dict[str, tuple[int, int, int, float, tuple[int, ...]]] = {
    "aws": (4, 2, 6, 3.0, (8, 16, 32)),
    "dgx-ext": (8, 2, 2, 1.0, (8, 16, 32)),
    "rtx": (8, 3, 3, 2.0, (8, 16)),
}
SIZES = (32, 64, 128, 256)  # validated total batches
EPOCHS = 3


def step_sync(factor: float, p: tuple[int, ...], a: int) -> tuple[float, float]:
    """Our made-up step and sync times of placement ``p`` at local batch ``a``."""
    sync = 0.001 * (sum(p) - 1) + 0.004 * (len(p) - 1)
    return factor * (0.01 + 0.0005 * a) + sync, sync


def placements_of(per: int, nodes: int) -> list[tuple[int, ...]]:
    """Every canonical placement on up to ``nodes`` (≤ 3) nodes of ``per`` GPUs."""
    out: list[tuple[int, ...]] = [(a,) for a in range(1, per + 1)]
    if nodes >= 2:
        out += [(a, b) for a in range(1, per + 1) for b in range(a, per + 1)]
    if nodes >= 3:
        r = range(1, per + 1)
        out += [(a, b, c) for a in r for b in r for c in r if a <= b <= c]
    return out


def write_sia_profiles(
    root: Path,
    apps=("alpha",),
    types: dict[str, tuple[int, int, int, float, tuple[int, ...]]] | None = None,
    *,
    default: str | None = None,
    shuffled: bool = True,
    epoch_progress: float = 100.0,
) -> Path:
    """Application folders in the Sia artifact's layout: per type T ``placements-T.csv`` and
    ``scalability-T.csv`` (columns in another order than Pollux's when ``shuffled``, as the
    artifact's ``-rtx`` files have them), shared ``validation-<bsz>.csv`` (``EPOCHS`` epochs
    of ``epoch_progress`` each); with ``default`` also the unsuffixed tables, a copy of
    that type's."""
    types = TYPES if types is None else types
    for app in apps:
        d = root / app
        d.mkdir(parents=True)
        for t, (per, nodes, scal_nodes, factor, locals_) in types.items():
            rows = []
            for p in placements_of(per, nodes):
                for a in locals_:
                    step, sync = step_sync(factor, p, a)
                    rows.append((p, a, step, sync))
            if shuffled:
                text = "local_bsz,step_time,sync_time,placement\n" + "".join(
                    f"{a},{s!r},{y!r},{''.join(map(str, p))}\n" for p, a, s, y in rows
                )
            else:
                text = "placement,local_bsz,step_time,sync_time\n" + "".join(
                    f"{''.join(map(str, p))},{a},{s!r},{y!r}\n" for p, a, s, y in rows
                )
            scal = "local_bsz,step_time,sync_time,num_nodes,num_replicas\n" + "".join(
                f"{a},{s!r},{y!r},{n},{r}\n"
                for n in range(1, scal_nodes + 1)
                for r in range(n, n * per + 1)
                for a in locals_
                for s, y in [step_sync(factor, (r // n,) * (n - 1) + (r - r // n * (n - 1),), a)]
            )
            (d / f"placements-{t}.csv").write_text(text)
            (d / f"scalability-{t}.csv").write_text(scal)
            if t == default:
                (d / "placements.csv").write_text(text)
                (d / "scalability.csv").write_text(scal)
        for b in SIZES:
            (d / f"validation-{b}.csv").write_text(
                "progress,iteration,metric,grad_sqr,grad_var\n"
                + "".join(
                    f"{epoch_progress * (e + 1)!r},{100 * (e + 1)},0.5,1.0,2.0\n"
                    for e in range(EPOCHS)
                )
            )
    return root


# ---------------------------------------------------------------------- profile directories
def test_layout_and_per_type_tables_are_read_by_column_name(tmp_path) -> None:
    root = write_sia_profiles(tmp_path / "traces", apps=("alpha", "beta"), default="aws")
    (root / "notes").mkdir()  # a folder without tables is no application
    assert profile_types(root) == {
        "alpha": ("aws", "dgx-ext", "rtx"),
        "beta": ("aws", "dgx-ext", "rtx"),
    }
    assert is_typed_profiles(root)
    rtx = load_type_profiles(root, "rtx", ["alpha"], "sia-64")["alpha"]
    assert (rtx.min_local, rtx.max_local, rtx.max_nodes, rtx.max_epochs) == (8, 16, 3, EPOCHS)
    assert (rtx.init_bsz, rtx.max_bsz) == (32, 256)
    for p, a in [((1,), 8), ((3, 5), 16), ((2, 2, 2), 8)]:
        assert rtx.step_time(p, a) == pytest.approx(step_sync(2.0, p, a), rel=1e-12)
    aws = load_type_profiles(root, "aws", ["alpha"], "sia-64")["alpha"]
    assert aws.step_time((4, 4), 32) == pytest.approx(step_sync(3.0, (4, 4), 32), rel=1e-12)
    # the unsuffixed tables are the default profile, with Sia's constants
    default = load_profiles(root)
    assert sorted(default) == ["alpha", "beta"] and default["alpha"].max_nodes is None
    assert default["alpha"].step_time((2,), 16) == aws.step_time((2,), 16)


def test_a_pollux_layout_directory_reads_as_before(tmp_path) -> None:
    root = tmp_path / "pollux"
    write_sia_profiles(root, types={"x": TYPES["aws"]}, default="x")
    for f in root.glob("alpha/*-x.csv"):
        f.unlink()
    assert not is_typed_profiles(root)
    (app,) = load_profiles(root).values()
    assert app.max_nodes is None and app.step_time((4,), 8) == pytest.approx(
        step_sync(3.0, (4,), 8), rel=1e-12
    )


def test_sias_constants_not_the_pollux_artifacts(tmp_path) -> None:
    """Sia's application table: deepspeech2 on rtx is capped at a local batch of 57
    (applications.py:51-52), yolov3 keeps its measured maximum (the Pollux artifact's cap of 8
    does not apply), max_epochs as Sia's table has them."""
    wide = {"rtx": (8, 1, 1, 1.0, (8, 32, 64)), "aws": (4, 1, 1, 1.0, (8, 32, 64))}
    root = write_sia_profiles(tmp_path / "t", apps=("deepspeech2", "yolov3"), types=wide)
    for b in (512, 1024):  # enough epochs for Sia's max_epochs of 80 and 50
        for app in ("deepspeech2", "yolov3"):
            (root / app / f"validation-{b}.csv").write_text(
                "progress,iteration,metric,grad_sqr,grad_var\n"
                + "".join(f"{e + 1}.0,{e + 1},0.5,1.0,2.0\n" for e in range(80))
            )
    for app in ("deepspeech2", "yolov3"):
        for b in SIZES:
            (root / app / f"validation-{b}.csv").unlink()
    rtx = load_type_profiles(root, "rtx", ["deepspeech2", "yolov3"], "c")
    aws = load_type_profiles(root, "aws", ["deepspeech2", "yolov3"], "c")
    assert rtx["deepspeech2"].max_local == 57 and aws["deepspeech2"].max_local == 64
    assert rtx["yolov3"].max_local == 64
    assert (rtx["deepspeech2"].max_epochs, rtx["yolov3"].max_epochs) == (80, 50)


def test_placements_beyond_the_measured_nodes_are_packed_as_sia_runs_them() -> None:
    """cluster.py:197-209: R GPUs on more nodes than the type's tables measure run on that
    many nodes, ⌈R / nodes⌉ each."""
    assert packed_placement(24, 3) == (8, 8, 8)
    assert packed_placement(10, 3) == (4, 4, 2)
    assert packed_placement(5, 1) == (5,)


def test_packed_lookup_and_per_placement_local_limit(tmp_path) -> None:
    root = write_sia_profiles(tmp_path / "t")
    dgx = load_type_profiles(root, "dgx-ext", ["alpha"], "c")["alpha"]
    assert dgx.max_nodes == 2
    # (1, 1, 1) on a type measured on 2 nodes is looked up as (2, 1) = (1, 2)
    assert dgx.step_time((1, 1, 1), 16) == dgx.step_time((1, 2), 16)
    # Sia's per-placement limit: measured placement → its rows' largest local batch
    bad = root / "alpha" / "placements-dgx-ext.csv"
    rows = [x for x in bad.read_text().splitlines() if not x.endswith(",12")]
    rows += [f"{a},{s!r},{y!r},12" for a in (8, 12) for s, y in [step_sync(1.0, (1, 2), a)]]
    bad.write_text("\n".join(rows) + "\n")
    dgx = load_type_profiles(root, "dgx-ext", ["alpha"], "c")["alpha"]
    assert dgx.max_local == 32 and dgx.max_local_at((2, 1)) == 12
    assert dgx.max_local_at((4, 4)) == 32
    # … and at most the largest measured on a placement of as many GPUs
    assert dgx.max_local_at((1, 1, 1)) == 12  # packed to (1, 2)


# ---------------------------------------------------------------------- the engine's per-type model
MODEL = ModelProfile("app", 0.0, 0.0, 0, 0.0, 0.0)
DELAY = 30.0  # the default rescale_delay


def typed_cluster(tmp_path: Path, servers: list[tuple[str, int]]) -> Path:
    """A cluster file declaring the GPU types of ``servers`` (type, GPUs), each at speed 1."""
    types = dict.fromkeys(t for t, _ in servers)
    text = "".join(f"[gpu_types.{t}]\nspeed = 1.0\n" for t in types)
    text += "".join(f'[[servers]]\nnum_gpus = {n}\ngpu_type = "{t}"\n' for t, n in servers)
    f = tmp_path / "c.toml"
    f.write_text(text)
    return f


def alone_jct(rate, progress_at, epochs: int) -> float:
    """The restart delay plus, per epoch, its progress ÷ the rate."""
    total, progress = DELAY, 0.0
    for e in range(epochs):
        target = progress_at(e + 1)
        total += (target - progress) / rate(e)
        progress = target
    return total


def test_a_job_on_one_type_runs_on_that_types_tables_and_batch_limits(tmp_path) -> None:
    """rtx servers first: the job runs on rtx, whose tables measure local batches up to 16
    only; its configuration is rtx's (k = 1 accumulation step of 16), not the default
    profile's (aws's, up to 32), and its rate is rtx's."""
    root = write_sia_profiles(tmp_path / "t", default="aws")
    cl = read_cluster(typed_cluster(tmp_path, [("rtx", 8), ("aws", 4)]))
    spec = JobSpec(0, 0.0, 4, 0, MODEL, application="alpha", batch_size=128)
    res = simulate(cl, [spec], "fifo", settings={"profiles": str(root)})
    (job,) = res.jobs
    assert job.placement == "0:0;0:1;0:2;0:3"
    rtx = load_type_profiles(root, "rtx", ["alpha"], "c")["alpha"]
    cfg = rtx.batch_config(4, 128)
    assert (cfg.accum, cfg.a) == (1, 16)
    hand = alone_jct(lambda e: rtx.rate((4,), cfg, e), rtx.progress_at, EPOCHS)
    assert job.jct == pytest.approx(hand, rel=1e-12)


def test_a_job_on_sia_64_runs_at_its_types_rate(tmp_path) -> None:
    root = write_sia_profiles(tmp_path / "t")
    spec = JobSpec(0, 0.0, 4, 0, MODEL, application="alpha", batch_size=128)
    res = simulate(load_cluster("sia-64"), [spec], "fifo", settings={"profiles": str(root)})
    (job,) = res.jobs
    assert job.placement == "0:0;0:1;0:2;0:3"  # the first aws node
    aws = load_type_profiles(root, "aws", ["alpha"], "c")["alpha"]
    cfg = aws.batch_config(4, 128)
    hand = alone_jct(lambda e: aws.rate((4,), cfg, e), aws.progress_at, EPOCHS)
    assert job.jct == pytest.approx(hand, rel=1e-12)


def test_a_job_spanning_types_runs_at_its_slowest_parts_pace(tmp_path) -> None:
    """2 aws GPUs + 2 rtx GPUs: Sia's tables measure placements within one type, so each
    part runs at its type's pace on the part, (2,) each; the micro-batch is capped at the
    smaller of the parts' measured maxima (rtx: 16)."""
    root = write_sia_profiles(tmp_path / "t", default="aws")
    cl = read_cluster(typed_cluster(tmp_path, [("aws", 2), ("rtx", 2)]))
    spec = JobSpec(0, 0.0, 4, 0, MODEL, application="alpha", batch_size=128)
    (job,) = simulate(cl, [spec], "fifo", settings={"profiles": str(root)}).jobs
    aws = load_type_profiles(root, "aws", ["alpha"], "c")["alpha"]
    rtx = load_type_profiles(root, "rtx", ["alpha"], "c")["alpha"]
    default = load_profiles(root)["alpha"]
    cfg = accumulated_config(default, 4, 128, 16)
    assert (cfg.accum, cfg.a) == (1, 16)

    def rate(e: int) -> float:
        return min(aws.rate((2,), cfg, e), rtx.rate((2,), cfg, e))

    assert job.jct == pytest.approx(alone_jct(rate, default.progress_at, EPOCHS), rel=1e-12)


def test_application_on_gives_a_policy_each_types_profile(tmp_path) -> None:
    """What a policy asks for per-type throughput (ProfileEstimates.application_on and
    config(gpu_type=...)): the type's own profile at speed 1, its batch limits."""
    root = write_sia_profiles(tmp_path / "t")
    spec = JobSpec(0, 0.0, 4, 0, MODEL, application="alpha", batch_size=128)
    seen = {}

    class Probe:
        name = "probe"

        def attach(self, sim) -> None:
            pass

        def schedule(self, sim) -> None:
            if not sim.queue:
                return
            ex = sim.estimates(ProfileEstimates)
            job = sim.queue[0]
            for t in ("aws", "rtx"):
                app, speed = ex.application_on(job, t)
                seen[t] = (app.max_local, speed, ex.config(job, replicas=4, gpu_type=t).a)
            with pytest.raises(ValueError, match="no GPU type 'v100'"):
                ex.application_on(job, "v100")
            sim.start(job, tuple(range(4)))

    simulate(load_cluster("sia-64"), [spec], Probe(), settings={"profiles": str(root)})
    assert seen == {"aws": (32, 1.0, 32), "rtx": (16, 1.0, 16)}


@pytest.mark.parametrize("policy", ["pollux", "fifo", "sjf", "tiresias"])
def test_existing_profile_policies_run_a_sia_workload_on_sia_64(tmp_path, capsys, policy) -> None:
    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "beta"), epoch_progress=2e4)
    wl = tmp_path / "w.csv"
    wl.write_text(
        "name,time,application,num_replicas,batch_size\n"
        + "".join(
            f"j{i},{30 * i},{('alpha', 'beta')[i % 2]},{g},{b}\n"
            for i, (g, b) in enumerate(
                [(1, 32), (2, 64), (4, 128), (8, 256), (12, 256), (16, 256)] * 2
            )
        )
    )
    out = tmp_path / "o"
    argv = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", policy]
    assert main([*argv, "--set", f"profiles={root}", "--quiet", "--out", str(out)]) == 0
    assert main(["check", str(out)]) == 0
    assert "ok:" in capsys.readouterr().out


def test_an_untyped_cluster_runs_on_the_unsuffixed_tables(tmp_path) -> None:
    """GPU types undeclared (luo24): the default profile, here a copy of rtx's tables."""
    root = write_sia_profiles(tmp_path / "t", default="rtx")
    spec = JobSpec(0, 0.0, 4, 0, MODEL, application="alpha", batch_size=128)
    (job,) = simulate(load_cluster("luo24"), [spec], "fifo", settings={"profiles": str(root)}).jobs
    app = load_profiles(root)["alpha"]
    cfg = app.batch_config(4, 128)
    hand = alone_jct(lambda e: app.rate((4,), cfg, e), app.progress_at, EPOCHS)
    assert job.jct == pytest.approx(hand, rel=1e-12)


# ---------------------------------------------------------------------- errors
def sia_run(tmp_path: Path, capsys, rows: str, *, cluster: str = "sia-64", root=None):
    """``ddlsched run`` of a Sia workload of ``rows``: (exit status, stderr lines)."""
    root = write_sia_profiles(tmp_path / "t") if root is None else root
    wl = tmp_path / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\n" + rows)
    argv = ["run", "--cluster", cluster, "--workload", str(wl), "--policy", "fifo"]
    rc = main([*argv, "--set", f"profiles={root}", "--quiet", "--out", str(tmp_path / "o")])
    return rc, capsys.readouterr().err.strip().splitlines()


def test_an_application_without_a_profile_folder_names_the_workload_line(tmp_path, capsys) -> None:
    rc, lines = sia_run(tmp_path, capsys, "a,0,alpha,1,32\nb,5,gamma,2,64\n")
    assert rc == 2 and len(lines) == 1
    assert f"{tmp_path / 'w.csv'}, line 3, field 'application':" in lines[0]
    assert "job 1 'b': no profile for application 'gamma'" in lines[0]
    assert "profiles found: alpha" in lines[0]


def test_a_gpu_type_without_tables_is_a_one_line_error(tmp_path, capsys) -> None:
    """sia-physical-44 has quad nodes; our profiles measure aws, dgx-ext and rtx only."""
    rc, lines = sia_run(tmp_path, capsys, "a,0,alpha,1,32\n", cluster="sia-physical-44")
    assert rc == 2 and len(lines) == 1
    assert f"{tmp_path / 't' / 'alpha'}, field 'profiles': no placements-quad.csv" in lines[0]
    assert "GPU type 'quad' of cluster 'sia-physical-44'" in lines[0]
    assert "(its GPU types: aws, dgx-ext, rtx)" in lines[0]


def test_only_per_type_tables_on_an_untyped_cluster_is_a_one_line_error(tmp_path, capsys):
    rc, lines = sia_run(tmp_path, capsys, "a,0,alpha,1,32\n", cluster="luo24")
    assert rc == 2 and len(lines) == 1
    assert "line 2, field 'application'" in lines[0]
    assert "only per-GPU-type profiles" in lines[0] and "aws, dgx-ext, rtx" in lines[0]


@pytest.mark.parametrize(
    ("name", "text", "line", "field"),
    [
        (
            "placements-rtx.csv",
            "local_bsz,step_time,sync_time,placement\n8,0.1,0.01,1\n16,fast,0.01,1\n",
            3,
            "step_time",
        ),
        (
            "placements-aws.csv",
            "placement,local_bsz,step_time,sync_time\n1,8,0.1,0.01\n1x,8,0.1,0.01\n",
            3,
            "placement",
        ),
        (
            "scalability-dgx-ext.csv",
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n2,16,8,0.1\n",
            2,
            None,
        ),
        ("scalability-aws.csv", "num_nodes,num_replicas,local_bsz,step_time\n", 1, "sync_time"),
    ],
)
def test_a_malformed_row_names_file_line_and_field(tmp_path, capsys, name, text, line, field):
    root = write_sia_profiles(tmp_path / "t")
    (root / "alpha" / name).write_text(text)
    rc, lines = sia_run(tmp_path, capsys, "a,0,alpha,1,32\n", root=root)
    assert rc == 2 and len(lines) == 1
    where = f"{root / 'alpha' / name}, line {line}"
    assert where in lines[0]
    if field:
        assert f"field '{field}'" in lines[0]


def test_sias_pipeline_parallel_application_is_refused(tmp_path, capsys) -> None:
    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "gpt_pmp"))
    rc, lines = sia_run(tmp_path, capsys, "a,0,gpt_pmp,8,48\n", root=root)
    assert rc == 2 and len(lines) == 1
    assert "'gpt_pmp' is a pipeline-parallel job in Sia" in lines[0]
    assert rc == 2 and sia_run(tmp_path, capsys, "a,0,alpha,1,32\n", root=root)[0] == 0


def test_a_placement_the_tables_do_not_cover_is_a_one_line_error(tmp_path, capsys) -> None:
    """Two 4-GPU nodes of a type whose tables measure one node (as the artifact's quad's):
    8 GPUs pack onto one node (8,), which they never measured, and one node's points span no
    volume to interpolate in (scipy's QhullError, a traceback in Sia's simulator)."""
    small = {"quad": (4, 1, 1, 1.0, (8, 16))}
    root = write_sia_profiles(tmp_path / "t", types=small)
    f = typed_cluster(tmp_path, [("quad", 4), ("quad", 4)])
    rc, lines = sia_run(tmp_path, capsys, "a,0,alpha,8,128\n", cluster=str(f), root=root)
    assert rc == 2 and len(lines) == 1
    assert (
        "field 'profiles': job 0 (alpha) on 8 GPU(s) of type(s) quad, placement (4, 4)" in lines[0]
    )
    assert "the profiles have no step time there (alpha: placement 8 is not measured" in lines[0]


# ---------------------------------------------------------------------- the workload CSV
SIA_HEADER = "name,time,application,num_replicas,batch_size"


def workload(tmp_path: Path, text: str, name: str = "w.csv") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def test_the_workload_csv_field_by_field(tmp_path) -> None:
    """As Sia's cluster.py:49-54 reads each row: ``name`` the job's name, ``time`` its
    submission time in seconds, ``application`` its profile folder, ``num_replicas`` the
    GPUs asked for, ``batch_size`` the total batch; file order gives the job ids."""
    f = workload(
        tmp_path,
        f"{SIA_HEADER}\ncifar10-0,107,cifar10,6,2048\nbert-1,12.5,bert,1,12\n"
        "yolov3-2,401.0,yolov3,12,512\n",
    )
    assert detect_format(f) == "pollux"  # the same header as the Pollux artifact's
    jobs = read_trace(f)
    assert [
        (j.job_id, j.name, j.arrival, j.application, j.num_gpus, j.batch_size) for j in jobs
    ] == [
        (1, "bert-1", 12.5, "bert", 1, 12),
        (0, "cifar10-0", 107.0, "cifar10", 6, 2048),
        (2, "yolov3-2", 401.0, "yolov3", 12, 512),
    ]
    assert all(j.iterations == 0 and j.duration == 0 and j.category == "" for j in jobs)
    assert read_trace(f, "sia") == jobs  # --workload-format sia reads it the same


def test_sias_optional_category_column(tmp_path) -> None:
    f = workload(
        tmp_path,
        f"{SIA_HEADER},category\na,0,alpha,4,128,rigid\nb,1,alpha,2,64,scale-gpus\n"
        "c,2,alpha,1,32,adaptive\nd,3,alpha,1,32,\n",
    )
    assert detect_format(f) == "sia"
    assert [j.category for j in read_trace(f)] == ["rigid", "scale-gpus", "adaptive", ""]
    # the generic schema keeps it (written only when some job has one)
    out = tmp_path / "g.csv"
    write_trace(read_trace(f), out)
    assert out.read_text().splitlines()[0].endswith(",category")
    assert [j.category for j in read_trace(out)] == ["rigid", "scale-gpus", "adaptive", ""]
    write_trace(read_trace(f)[3:], out)
    assert "category" not in out.read_text()


@pytest.mark.parametrize(
    ("rows", "line", "field", "message"),
    [
        ("a,0,alpha,1,32\na,1,alpha,1,32\n", 3, "name", "duplicate job name 'a' (first on line 2)"),
        (",0,alpha,1,32\n", 2, "name", "empty job name"),
        ("a,-1,alpha,1,32\n", 2, "time", "must be ≥ 0"),
        ("a,soon,alpha,1,32\n", 2, "time", "expected a number, got 'soon'"),
        ("a,nan,alpha,1,32\n", 2, "time", "expected a finite number"),
        ("a,0,,1,32\n", 2, "application", "empty application"),
        ("a,0,alpha,2.5,32\n", 2, "num_replicas", "expected an integer"),
        ("a,0,alpha,0,32\n", 2, "num_replicas", "must be ≥ 1"),
        ("a,0,alpha,1,0\n", 2, "batch_size", "must be ≥ 1"),
        ("a,0,alpha,1\n", 2, None, "expected 5 fields"),
    ],
)
def test_a_malformed_workload_row_is_one_line(tmp_path, capsys, rows, line, field, message):
    f = workload(tmp_path, f"{SIA_HEADER}\n" + rows)
    with pytest.raises(InputError) as info:
        read_trace(f)
    e = info.value
    assert (e.source, e.line, e.field) == (str(f), line, field)
    assert message in e.message
    argv = ["run", "--cluster", "sia-64", "--workload", str(f), "--policy", "fifo", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{f}, line {line}" in err[0]


def test_an_unknown_category_is_one_line_with_a_suggestion(tmp_path) -> None:
    f = workload(tmp_path, f"{SIA_HEADER},category\na,0,alpha,1,32,rigd\n")
    with pytest.raises(InputError) as info:
        read_trace(f)
    e = info.value
    assert (e.line, e.field) == (2, "category")
    assert "unknown category 'rigd' (did you mean 'rigid'?)" in e.message


def test_the_list_names_both_formats(capsys) -> None:
    assert main(["list"]) == 0
    formats = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("formats:"))
    assert "pollux" in formats and "sia" in formats


def test_a_sia_workload_with_categories_runs_end_to_end(tmp_path, capsys) -> None:
    rows = "".join(
        f"j{i},{20 * i},alpha,{g},{b},{c}\n"
        for i, (g, b, c) in enumerate([(4, 128, "rigid"), (8, 256, ""), (1, 32, "adaptive")])
    )
    root = write_sia_profiles(tmp_path / "t", epoch_progress=2e3)
    f = workload(tmp_path, f"{SIA_HEADER},category\n" + rows)
    out = tmp_path / "o"
    argv = ["run", "--cluster", "sia-64", "--workload", str(f), "--policy", "pollux"]
    assert main([*argv, "--set", f"profiles={root}", "--quiet", "--out", str(out)]) == 0
    assert main(["check", str(out)]) == 0


# ---------------------------------------------------------------------- the check script
def test_the_check_script_reads_an_artifact_shaped_folder(tmp_path, capsys) -> None:
    """benchmarks/sia_inputs_check.py on a folder laid out as the artifact's sia-simulator,
    with our own tiny profiles (it cross-checks the nodes measured per type against the
    artifact's cluster_max_physical_nnodes, which ours do not match: reported, exit 1)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "sia_inputs_check.py"
    spec = importlib.util.spec_from_file_location("sia_inputs_check", path)
    assert spec is not None and spec.loader is not None
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    sim = tmp_path / "sia-simulator"
    write_sia_profiles(sim / "traces", apps=("alpha", "beta"), default="aws")
    (sim / "workloads" / "philly").mkdir(parents=True)
    workload(sim / "workloads" / "philly", f"{SIA_HEADER}\na,0,alpha,4,128\nb,9,beta,1,32\n")
    assert check.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "workloads: 1 files, 2 jobs, 1 folders" in out
    assert "apps {'alpha': 1, 'beta': 1}" in out
    assert "profiles: 2 applications" in out and "alpha: types aws, dgx-ext, rtx" in out
    assert "local [8, 16]  nodes ≤ 3  max_epochs 3" in out
    assert "nodes measured on rtx: [3] = cluster_max_physical_nnodes 3" in out
    assert "problem: aws: nodes measured [6], artifact's maximum 16" in out
    assert "sia-64           types aws, dgx-ext, rtx: tables for every application yes" in out
    assert "sia-physical-44  types rtx, dgx-ext, quad: tables for every application NO" in out


def test_a_spanning_job_accumulates_within_a_cluster_file_types_smaller_range(tmp_path) -> None:
    """Issue #17's per-type profiles (Pollux layout, a cluster file's ``profiles``) measure
    local batches up to 16 on type K, 32 on the default profiles: a job spanning A and K
    takes micro-batches of 16 (one accumulation step), each type's rate at the whole
    placement (2, 2) — not a micro-batch of 32 K never measured."""

    def pollux_layout(root: Path, locals_: tuple[int, ...], factor: float) -> Path:
        write_sia_profiles(root, types={"x": (4, 2, 2, factor, locals_)}, default="x")
        for f in root.glob("alpha/*-x.csv"):
            f.unlink()
        return root

    default = pollux_layout(tmp_path / "d", (8, 16, 32), 1.0)
    pollux_layout(tmp_path / "k", (8, 16), 2.0)
    f = tmp_path / "c.toml"
    f.write_text(
        '[gpu_types.A]\nspeed = 1.0\n[gpu_types.K]\nspeed = 1.0\nprofiles = "k"\n'
        '[[servers]]\nnum_gpus = 2\ngpu_type = "A"\n[[servers]]\nnum_gpus = 2\ngpu_type = "K"\n'
    )
    spec = JobSpec(0, 0.0, 4, 0, MODEL, application="alpha", batch_size=128)
    (job,) = simulate(read_cluster(f), [spec], "fifo", settings={"profiles": str(default)}).jobs
    a = load_profiles(default)["alpha"]
    k = load_profiles(tmp_path / "k")["alpha"]
    cfg = accumulated_config(a, 4, 128, 16)
    assert (cfg.accum, cfg.a) == (1, 16)

    def rate(e: int) -> float:
        return min(a.rate((2, 2), cfg, e), k.rate((2, 2), cfg, e))

    assert job.jct == pytest.approx(alone_jct(rate, a.progress_at, EPOCHS), rel=1e-12)
