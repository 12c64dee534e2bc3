"""The compiled task loop (core/taskkernel.py via core/compiledtask.py) against the Python
``TaskExecutor``: the same events in the same order, so every start, finish, segment and the
busy time are equal to the last bit; and ``qround`` is Python's ``round(x, 9)`` exactly."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ddlsched import Cluster, JobSpec, ModelProfile, Settings, build_simulator

K = pytest.importorskip("ddlsched.core.taskkernel")

MODELS = [
    ModelProfile("small", 100.0, 1000.0, 16, 0.020, 0.030),
    ModelProfile("big", 500.0, 3000.0, 16, 0.035, 0.055),
    ModelProfile("mid", 250.0, 2000.0, 64, 0.031, 0.047),
    ModelProfile("comm", 2000.0, 1500.0, 16, 0.010, 0.010),
]


def _run(cluster, specs, policy, placement, compiled, **settings):
    sim = build_simulator(
        cluster,
        specs,
        policy,
        placement=placement,
        seed=1,
        settings=Settings(compiled=compiled, **settings),
    )
    res = sim.run()
    return sim, res


def assert_identical(cluster, specs, policy, placement, **settings) -> int:
    """Run both loops; every number equal (not approximately); return the event count."""
    fast_sim, fast = _run(cluster, specs, policy, placement, True, **settings)
    slow_sim, slow = _run(cluster, specs, policy, placement, False, **settings)
    assert type(fast_sim.executor).__name__ == "CompiledTaskExecutor"
    assert type(slow_sim.executor).__name__ == "TaskExecutor"
    assert fast_sim.events_processed == slow_sim.events_processed
    assert [(j.job_id, j.placement, j.start, j.finish) for j in fast.jobs] == [
        (j.job_id, j.placement, j.start, j.finish) for j in slow.jobs
    ]
    assert fast.segments == slow.segments
    assert fast.summary == slow.summary
    assert fast_sim.executor.comm_starts == slow_sim.executor.comm_starts
    return fast_sim.events_processed


jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 40),  # arrival (s/10)
        st.sampled_from([1, 1, 2, 3, 4, 6]),
        st.integers(1, 40),  # iterations
        st.integers(0, len(MODELS) - 1),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(
    jobs=jobs_strategy,
    servers=st.integers(1, 4),
    per_server=st.sampled_from([1, 2, 4]),
    policy=st.sampled_from(["ada-srsf", "srsf1", "srsf2", "srsf3", "srsf", "fifo-ff"]),
    placement=st.sampled_from(["lwf", "ff", "ls", "rand", None]),
    ipt=st.sampled_from([1, 3]),
    shortcuts=st.booleans(),
)
def test_compiled_loop_gives_the_python_loops_events(
    jobs, servers, per_server, policy, placement, ipt, shortcuts
) -> None:
    if policy == "fifo-ff":
        placement = None  # fifo-ff names its placement
    cluster = Cluster.homogeneous(servers, per_server, gpu_memory_mb=16000.0)
    total = servers * per_server
    specs = [
        JobSpec(i, arr / 10, min(g, total), it, MODELS[m]) for i, (arr, g, it, m) in enumerate(jobs)
    ]
    assert_identical(
        cluster, specs, policy, placement, iterations_per_task=ipt, shortcuts=shortcuts
    )


def test_many_jobs_on_one_gpu_grow_the_kernels_arrays() -> None:
    """Ten jobs resident on one GPU (more than the kernel's first guess of 4 per GPU and per
    server) and a heap that outgrows its first 1,024 rows: the arrays grow, events unchanged."""
    cluster = Cluster.homogeneous(2, 1, gpu_memory_mb=16000.0)
    tiny = ModelProfile("tiny", 50.0, 1000.0, 16, 0.011, 0.013)
    specs = [JobSpec(i, 0.01 * i, 1 + i % 2, 30 + 7 * i, tiny) for i in range(10)]
    events = assert_identical(cluster, specs, "srsf2", "lwf")
    assert events > 1024


def test_ctrl_c_stops_the_compiled_loop() -> None:
    """The kernel hands back to Python at every finished job, so a SIGINT during a long exact
    run raises KeyboardInterrupt long before the run would end. (A SIGINT is sent every
    50 ms until one arrives: Python drops one that lands in an object's finaliser.)"""
    import os
    import signal
    import threading
    import time

    from ddlsched import load_cluster, load_workload
    from ddlsched.core.compiledtask import warm_up

    warm_up()  # compiled before the clock starts: nothing compiles during the run
    sim = build_simulator(
        load_cluster("wang20"), load_workload("wang20", seed=1), "ada-srsf", seed=1
    )
    assert type(sim.executor).__name__ == "CompiledTaskExecutor"
    done = threading.Event()

    def nag() -> None:
        while not done.wait(0.05):
            os.kill(os.getpid(), signal.SIGINT)

    interrupted = False
    # Python's own handler, whatever was inherited (a background job starts with SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    nagger = threading.Thread(target=nag, daemon=True)
    t0 = time.perf_counter()
    nagger.start()
    try:
        sim.run()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a late one must not hit the next test
        done.set()
        nagger.join()
        time.sleep(0.05)
        signal.signal(signal.SIGINT, previous)
    assert interrupted
    assert time.perf_counter() - t0 < 5.0
    assert sim.finished < len(sim.jobs)  # the simulated run was cut short


def test_a_users_gate_runs_in_the_python_loop() -> None:
    """Only the built-in gates are compiled; any other gate keeps the Python executor."""
    from ddlsched.backends.model import _kernel_gate
    from ddlsched.policies.gates import AdaDual, SrsfN

    class MyGate(SrsfN):
        pass

    assert _kernel_gate(None) == ("none", 0)
    assert _kernel_gate(SrsfN(2)) == ("srsf", 2)
    assert _kernel_gate(AdaDual()) == ("adadual", 0)
    assert _kernel_gate(MyGate(2)) is None


def test_runs_that_may_outlast_the_exact_range_use_the_python_loop() -> None:
    """Past 2**23 s the kernel's 1 ns grid no longer mirrors Python's floats: a run that might
    get there (here: a last arrival at 96 days) runs in the Python loop, same answers."""
    from ddlsched.core.compiledtask import EXACT_UNTIL, fits
    from ddlsched.perf.contention import LinearContention

    model = LinearContention()
    one = JobSpec(0, 0.0, 1, 10, MODELS[0])
    late = JobSpec(1, 96 * 86400.0, 1, 10, MODELS[0])
    assert fits([one], model) and not fits([one, late], model)
    assert 96 * 86400.0 < EXACT_UNTIL
    cluster = Cluster.homogeneous(1, 2, gpu_memory_mb=16000.0)
    sim = build_simulator(cluster, [one, late], "srsf1", seed=1)
    assert type(sim.executor).__name__ == "TaskExecutor"
    assert sim.run().jobs[1].finish > 96 * 86400.0


def test_compiled_is_recorded_only_when_turned_off() -> None:
    """The setting changes how a run is computed, not what: config.json (and so the run id)
    records it only when it is not the default."""
    assert "compiled" not in Settings().sectioned()["iteration"]
    assert Settings(compiled=False).sectioned()["iteration"]["compiled"] is False


# ------------------------------------------------------------------ the 1 ns grid
@settings(max_examples=3000, deadline=None)
@given(x=st.floats(0.0, 2.0**23, exclude_max=True))
@example(x=0.0000000005)  # a tie below the grid's first step
@example(x=1.0000000005)
@example(x=2.5e-9)
@example(x=0.1 + 0.2)
@example(x=123456.7890123455)
@example(x=2.0**23 - 2**-29)  # the last float of the exact range
def test_qround_is_pythons_round_to_9_digits(x: float) -> None:
    assert K._sec(K.qround(x)) == round(x, 9)


@settings(max_examples=2000, deadline=None)
@given(n=st.integers(0, 2**23 * 10**9 - 1), d=st.integers(-3, 3))
def test_qround_on_sums_near_grid_points_and_ties(n: int, d: int) -> None:
    """Times the loop computes are grid points plus durations: values within a few ulps of a
    grid point or of a half-way point, where rounding is decided by the float's exact value."""
    for base in (n / 1e9, (n + 0.5) / 1e9):
        x = base
        for _ in range(abs(d)):
            x = math.nextafter(x, math.inf if d > 0 else 0.0)
        assert K._sec(K.qround(x)) == round(x, 9)
