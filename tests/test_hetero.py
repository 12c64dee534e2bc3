"""Heterogeneous clusters (issue #17): GPU types with speed factors in cluster files, the
``gavel-V:P:K`` presets, per-type durations of trace jobs (a placement runs at its slowest
worker's pace, by hand), and the one-line errors for a type without speed, an unknown type and
a missing throughput."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.api import simulate, simulate_named
from ddlsched.cli import main
from ddlsched.core.cluster import Cluster, Server
from ddlsched.core.cluster_io import load_cluster, read_cluster
from ddlsched.core.durationexec import DurationExecutor
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.simulator import Simulator
from ddlsched.errors import InputError
from ddlsched.workloads.io import validate_fits
from ddlsched.workloads.traces import TraceOptions, read_trace

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def job(i: int, gpus: int, duration: float, arrival: float = 0.0, **kw) -> JobSpec:
    return JobSpec(i, arrival, gpus, 0, TRACE, duration=duration, **kw)


def two_types(fast: int = 2, slow: int = 2, slow_speed: float = 0.5) -> Cluster:
    """Server 0: ``fast`` GPUs of type A (speed 1); server 1: ``slow`` GPUs of type B."""
    return Cluster(
        servers=(
            Server(num_gpus=fast, gpu_type="A", speed=1.0),
            Server(num_gpus=slow, gpu_type="B", speed=slow_speed),
        ),
        typed=True,  # declared types (even when both speeds are 1)
    )


# ---------------------------------------------------------------------- cluster files
def test_cluster_file_declares_types_with_speed_and_memory(tmp_path: Path) -> None:
    f = tmp_path / "het.toml"
    f.write_text(
        "[gpu_types.V100]\nspeed = 1.0\ngpu_memory_mb = 32768\n"
        "[gpu_types.K80]\nspeed = 0.3\ngpu_memory_mb = 12288\n"
        '[[servers]]\nnum_gpus = 4\ngpu_type = "V100"\n'
        '[[servers]]\nnum_gpus = 2\ngpu_type = "K80"\ngpu_memory_mb = 8192\n'
    )
    cl = read_cluster(f)
    assert cl.gpu_types == {"V100": 4, "K80": 2}
    assert [cl.gpu_speed(g) for g in (0, 4)] == [1.0, 0.3]
    # memory from the type unless the server gives its own
    assert [cl.gpu_memory(g) for g in (0, 4)] == [32768.0, 8192.0]
    assert cl.heterogeneous


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (
            "[gpu_types.V100]\ngpu_memory_mb = 1\n[[servers]]\nnum_gpus = 1\ngpu_type = 'V100'\n",
            1,
            "gpu_types.V100.speed",
            "has no speed",
        ),
        (
            "[gpu_types.V100]\nspeed = 1\n[[servers]]\nnum_gpus = 1\ngpu_type = 'V10'\n",
            5,
            "servers[0].gpu_type",
            "unknown GPU type 'V10' (did you mean 'V100'?)",
        ),
        (
            "[gpu_types.V100]\nspeed = 0\n[[servers]]\nnum_gpus = 1\ngpu_type = 'V100'\n",
            2,
            "gpu_types.V100.speed",
            "must be > 0",
        ),
        (
            "[gpu_types.V100]\nsped = 1\n[[servers]]\nnum_gpus = 1\ngpu_type = 'V100'\n",
            2,
            "gpu_types.V100.sped",
            "did you mean 'speed'",
        ),
    ],
)
def test_bad_type_declarations_are_one_line_errors(tmp_path, text, line, field, words) -> None:
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(InputError) as info:
        read_cluster(f)
    e = info.value
    assert (e.source, e.line, e.field) == (str(f), line, field)
    assert words in e.message


def test_cli_type_without_speed_exits_2_with_one_line(tmp_path: Path, capsys) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[gpu_types.K80]\n[[servers]]\nnum_gpus = 4\ngpu_type = 'K80'\n")
    argv = ["run", "--cluster", str(f), "--workload", "tiny", "--policy", "fifo"]
    assert main([*argv, "--quiet", "--out", str(tmp_path / "o")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "c.toml" in lines[0] and "gpu_types.K80.speed" in lines[0]


def test_a_file_without_types_is_as_before(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[[servers]]\nnum_gpus = 4\ngpu_type = "A100"\n')
    cl = read_cluster(f)
    assert cl.gpu_speed(0) == 1.0 and not cl.heterogeneous


# ---------------------------------------------------------------------- gavel presets
def test_gavel_preset_layout() -> None:
    cl = load_cluster("gavel-2:1:3")
    assert cl.name == "gavel-2:1:3" and cl.num_gpus == 6 and cl.num_servers == 6
    assert [cl.gpu_type(g) for g in range(6)] == ["v100"] * 2 + ["p100"] + ["k80"] * 3
    assert [cl.gpu_speed(g) for g in (0, 2, 3)] == [1.0, 0.943, 0.297]
    assert cl.gpu_memory(5) == 12288.0
    with pytest.raises(InputError, match="at least one GPU"):
        load_cluster("gavel-0:0:0")


# ---------------------------------------------------------------------- the slowest worker
def test_speed_factor_scales_a_job_without_a_table() -> None:
    # 100 s at speed 1; on type B (speed 0.5) alone it takes 200 s
    res = simulate(two_types(fast=1, slow=2), [job(0, 2, 100.0)], "fifo")
    # FIFO's placement takes GPUs in cluster order: 1 of A + 1 of B → paced by B
    assert res.jobs[0].placement == "0:0;1:0"
    assert res.jobs[0].finish == 200.0


def test_mixed_placement_runs_at_the_slowest_types_time() -> None:
    # the job's own table: 100 s on A, 300 s on B; 3 GPUs span both → 300 s
    table = (("A", 100.0), ("B", 300.0))
    res = simulate(two_types(), [job(0, 3, 100.0, type_durations=table)], "fifo")
    assert res.jobs[0].finish == 300.0
    # on A only (2 GPUs fit there) it takes its 100 s
    res = simulate(two_types(), [job(0, 2, 100.0, type_durations=table)], "fifo")
    assert (res.jobs[0].placement, res.jobs[0].finish) == ("0:0;0:1", 100.0)


class _Move:
    """Start job 0 on B at 0, move it to A at 60 (a preemption keeps the work done)."""

    name = "move"
    interval = 60.0

    def attach(self, sim) -> None:
        self.n = 0

    def schedule(self, sim) -> None:
        if self.n == 0 and sim.queue:
            sim.start(sim.queue[0], (2,))  # a GPU of type B
            self.n = 1

    def on_round(self, sim) -> None:
        if self.n == 1 and sim.running:
            j = next(iter(sim.running.values()))
            sim.preempt(j)
            sim.start(j, (0,))  # type A
            self.n = 2


def test_preemption_keeps_work_across_types() -> None:
    # 100 s on A, 400 s on B: 60 s on B do 15 % of the work; the 85 % left take 85 s on A
    table = (("A", 100.0), ("B", 400.0))
    sim = Simulator(
        two_types(),
        [job(0, 1, 100.0, type_durations=table)],
        _Move(),
        DurationExecutor(),
        max_jobs_per_gpu=1,
    )
    res = sim.run()
    assert res.jobs[0].finish == pytest.approx(145.0)
    assert [(s.start, s.end, s.placement) for s in res.segments] == [
        (0.0, 60.0, "1:0"),
        (60.0, pytest.approx(145.0), "0:0"),
    ]


@settings(max_examples=60, deadline=None)
@given(
    durations=st.lists(st.floats(1.0, 1e4), min_size=2, max_size=2),
    gpus=st.integers(1, 4),
    speed=st.floats(0.05, 2.0),
)
def test_alone_a_job_takes_the_slowest_of_its_types(durations, gpus, speed) -> None:
    # any placement FIFO picks: the JCT is the largest per-type time among its GPUs' types
    a, b = durations
    cl = two_types(fast=2, slow=2, slow_speed=speed)
    res = simulate(cl, [job(0, gpus, a, type_durations=(("A", a), ("B", b)))], "fifo")
    types = {label.split(":")[0] for label in res.jobs[0].placement.split(";")}
    want = max(a if t == "0" else b for t in types)
    assert res.jobs[0].jct == pytest.approx(want, abs=1e-8)  # times on a 1 ns grid
    # without a table the speed factor decides
    res = simulate(cl, [job(0, gpus, a)], "fifo")
    types = {label.split(":")[0] for label in res.jobs[0].placement.split(";")}
    assert res.jobs[0].jct == pytest.approx(
        max(a if t == "0" else a / speed for t in types), abs=1e-8
    )


# ---------------------------------------------------------------------- tables and errors
def test_a_missing_throughput_names_the_workload_and_field() -> None:
    jobs = [job(0, 1, 100.0, type_durations=(("A", 100.0),))]
    with pytest.raises(InputError) as info:
        validate_fits(jobs, two_types(), "w.csv")
    e = info.value
    assert (e.source, e.field) == ("w.csv", "gpu_type")
    assert "no throughput for GPU type 'B'" in e.message


def test_a_job_no_type_runs_is_refused() -> None:
    inf = float("inf")
    jobs = [job(0, 1, 100.0, type_durations=(("A", inf), ("B", inf)))]
    with pytest.raises(InputError, match="cannot run on any GPU type"):
        validate_fits(jobs, two_types(), "w.csv")


def _gavel_trace(tmp_path: Path, rows: list[tuple[str, int, int, float]]) -> Path:
    """A 7-column Gavel trace of (job type, steps, GPUs, arrival) rows."""
    lines = [f"{t}\tcmd\t--steps\t0\t{steps}\t{arr}\t{g}" for t, steps, g, arr in rows]
    p = tmp_path / "t.trace"
    p.write_text("\n".join(lines) + "\n")
    return p


def _throughputs(tmp_path: Path, table: dict[str, dict[str, float]]) -> Path:
    """A Gavel throughputs file: type → {job type: steps/s on 1 GPU}."""
    data = {
        gpu: {f"('{jt}', 1)": {"null": thr} for jt, thr in per.items()}
        for gpu, per in table.items()
    }
    p = tmp_path / "thr.json"
    p.write_text(json.dumps(data))
    return p


def test_gavel_trace_gets_a_duration_per_type(tmp_path: Path) -> None:
    thr = _throughputs(tmp_path, {"v100": {"X": 10.0}, "p100": {"X": 5.0}, "k80": {"X": 2.0}})
    trace = _gavel_trace(tmp_path, [("X", 1000, 1, 0.0)])
    (j,) = read_trace(trace, "gavel-philly", throughputs=thr)
    assert j.duration == 100.0
    assert dict(j.type_durations) == {"v100": 100.0, "p100": 200.0, "k80": 500.0}
    opts = TraceOptions(gavel_throughputs=str(thr))
    # alone on a K80-only Gavel cluster it takes the K80's time
    res = simulate_named("gavel-0:0:1", str(trace), "fifo", trace=opts)
    assert res.jobs[0].jct == 500.0


def test_cli_missing_type_in_the_throughputs_file(tmp_path: Path, capsys) -> None:
    thr = _throughputs(tmp_path, {"v100": {"X": 10.0}, "k80": {"X": 2.0}})  # no p100
    trace = _gavel_trace(tmp_path, [("X", 1000, 1, 0.0)])
    argv = ["run", "--cluster", "gavel-1:1:1", "--workload", str(trace), "--quiet"]
    argv += ["--gavel-throughputs", str(thr), "--policy", "fifo", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "t.trace" in lines[0] and "gpu_type" in lines[0] and "'p100'" in lines[0]
    assert not (tmp_path / "o").exists()


def test_generic_trace_carries_per_type_durations(tmp_path: Path) -> None:
    f = tmp_path / "w.csv"
    f.write_text("arrival,num_gpus,duration,type_durations\n0,1,100,A=100;B=250.5\n")
    (j,) = read_trace(f)
    assert j.type_durations == (("A", 100.0), ("B", 250.5))
    res = simulate(two_types(fast=1, slow=1), [j], "fifo")
    assert res.jobs[0].jct == 100.0  # FIFO takes GPU 0, type A


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        ("A100", "TYPE=SECONDS"),
        ("A=1;A=2", "given twice"),
        ("A=-1", "must be > 0"),
        ("A=x", "A:"),
    ],
)
def test_bad_type_durations_cells(tmp_path: Path, cell: str, words: str) -> None:
    f = tmp_path / "w.csv"
    f.write_text(f"arrival,num_gpus,duration,type_durations\n0,1,100,{cell}\n")
    with pytest.raises(InputError) as info:
        read_trace(f)
    assert (info.value.line, info.value.field) == (2, "type_durations")
    assert words in info.value.message


def test_fifo_avoids_a_type_the_job_cannot_run_on_and_tiresias_says_so() -> None:
    inf = float("inf")
    cl = Cluster(
        servers=(
            Server(num_gpus=2, gpu_type="B", speed=0.5),  # first in cluster order
            Server(num_gpus=2, gpu_type="A"),
        ),
        typed=True,
    )
    jobs = [job(0, 2, 100.0, type_durations=(("A", 100.0), ("B", inf)))]
    res = simulate(cl, jobs, "fifo")
    assert res.jobs[0].placement == "1:0;1:1" and res.jobs[0].jct == 100.0
    res = simulate(cl, jobs, "sjf")
    assert res.jobs[0].placement == "1:0;1:1"
    # a 4-GPU job needs B too: it can never start there → one clear error, not a traceback
    big = [job(0, 4, 100.0, type_durations=(("A", 100.0), ("B", inf)))]
    with pytest.raises(InputError, match="cannot run"):
        simulate(cl, big, "tiresias")


def test_gavel_zero_throughput_means_cannot_run(tmp_path: Path) -> None:
    data = {
        "v100": {"('X', 2)": {"null": 10.0}, "('X', 1)": {"null": 6.0}},
        "k80": {"('X', 2)": {"null": 0.0}, "('X', 1)": {"null": 2.0}},
    }
    thr = tmp_path / "thr.json"
    thr.write_text(json.dumps(data))
    trace = _gavel_trace(tmp_path, [("X", 1000, 2, 0.0), ("X", 600, 1, 0.0)])
    two, one = read_trace(trace, "gavel-philly", throughputs=thr)
    assert dict(two.type_durations) == {"v100": 100.0, "k80": float("inf")}
    assert dict(one.type_durations) == {"v100": 100.0, "k80": 300.0}


@pytest.mark.parametrize(
    "settings",
    [
        {"granularity": "iteration"},
        {"granularity": "iteration", "compiled": False},
        {"granularity": "job"},
        {"model": "rar"},
    ],
)
def test_model_jobs_compute_at_the_slowest_workers_speed(settings) -> None:
    from ddlsched.workloads.presets import load_workload

    model = load_workload("wang20", 0)[0].model
    slow_first = Cluster(
        servers=(Server(num_gpus=4, gpu_type="K", speed=0.5), Server(num_gpus=4, gpu_type="V")),
        typed=True,
    )
    same = Cluster(servers=(Server(num_gpus=4), Server(num_gpus=4)))
    one = [JobSpec(0, 0.0, 1, 200, model)]
    fast = simulate(same, one, "ada-srsf", placement="ff", settings=settings).jobs[0].jct
    slow = simulate(slow_first, one, "ada-srsf", placement="ff", settings=settings).jobs[0]
    assert slow.placement == "0:0"  # first fit: the slow server
    if "model" not in settings:  # Wang: all compute, so twice as long
        assert slow.jct == pytest.approx(2 * fast, rel=1e-9)
    else:  # Yu's RAR: compute doubles, the per-server overhead does not
        assert fast < slow.jct < 2 * fast


def test_type_aware_fifo_puts_each_job_on_its_fastest_type() -> None:
    # two 1-GPU jobs: job 0 gains 4× on A, job 1 runs the same on both; B comes first in
    # cluster order, so the agnostic FIFO (least-busy, ties by GPU id) puts job 0 on B
    cl = Cluster(
        servers=(Server(num_gpus=1, gpu_type="B", speed=0.5), Server(num_gpus=1, gpu_type="A")),
        typed=True,
    )
    jobs = [
        job(0, 1, 100.0, type_durations=(("A", 100.0), ("B", 400.0))),
        job(1, 1, 100.0, type_durations=(("A", 100.0), ("B", 100.0))),
    ]
    blind = {j.job_id: j for j in simulate(cl, jobs, "fifo").jobs}
    aware = {
        j.job_id: j for j in simulate(cl, jobs, "fifo", settings={"gpu_type_aware": True}).jobs
    }
    assert blind[0].placement == "0:0" and blind[0].jct == 400.0
    assert aware[0].placement == "1:0" and aware[0].jct == 100.0
    assert aware[1].placement == "0:0" and aware[1].jct == 100.0  # A is taken: B, as fast
    # a setting that has no effect elsewhere is an error
    with pytest.raises(InputError, match="gpu_type_aware"):
        simulate(cl, jobs, "tiresias", settings={"gpu_type_aware": True})


@pytest.mark.parametrize("policy", ["fifo", "pollux"])
def test_profile_jobs_compute_at_the_slowest_workers_speed(policy) -> None:
    """Application-profile jobs (Luo, Pollux) on a slow type: the compute of every micro-batch
    takes 1/speed as long, the gradient sync as profiled, so a job alone takes longer but less
    than 1/speed times as long; undeclared types change nothing."""
    from ddlsched.workloads.presets import load_workload

    spec = load_workload("luo24-20", 0)[0]
    spec = JobSpec(
        0, 0.0, 1, 0, spec.model, application=spec.application, batch_size=spec.batch_size
    )
    plain = Cluster(servers=(Server(num_gpus=4),))
    slow = Cluster(servers=(Server(num_gpus=4, gpu_type="K", speed=0.5),), typed=True)
    same = Cluster(servers=(Server(num_gpus=4, gpu_type="K", speed=1.0),), typed=True)
    base = simulate(plain, [spec], policy).jobs[0].jct
    assert simulate(same, [spec], policy).jobs[0].jct == base
    got = simulate(slow, [spec], policy).jobs[0].jct
    assert base < got <= 2 * base + 1e-6


def test_fixed_iteration_profile_jobs_on_a_slow_type() -> None:
    """Luo's physical workload (fixed iteration counts wrap the applications) on a slow type:
    every job slower, none faster (regression: the speed factor must wrap any application)."""
    from ddlsched.workloads.presets import load_workload

    jobs = load_workload("luo24-physical", 0)
    plain = Cluster.homogeneous(4, 4, gpu_memory_mb=11264.0)
    slow = Cluster(
        servers=tuple(Server(num_gpus=4, gpu_memory_mb=11264.0, speed=0.5) for _ in range(4)),
        typed=True,
    )
    a = simulate(plain, jobs, "sjf").summary["avg_jct"]
    b = simulate(slow, jobs, "sjf").summary["avg_jct"]
    assert a < b <= 2 * a + 1e-6
