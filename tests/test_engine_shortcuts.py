"""The iteration level's event-saving shortcuts (fused forward+backward, gang and macro tasks,
their splits) must give exactly the schedule of the plain one-event-per-task execution."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched import Cluster, JobSpec, ModelProfile, load_cluster, load_workload, simulate

MODELS = [
    ModelProfile("small", 100.0, 5000.0, 16, 0.020, 0.030),
    ModelProfile("big", 500.0, 7000.0, 16, 0.035, 0.055),
    ModelProfile("mid", 250.0, 3000.0, 64, 0.031, 0.047),
]


def assert_same(a, b) -> None:
    assert len(a.jobs) == len(b.jobs)
    for x, y in zip(a.jobs, b.jobs, strict=True):
        assert x.job_id == y.job_id and x.placement == y.placement
        assert x.start == pytest.approx(y.start, rel=1e-9, abs=1e-9)
        assert x.finish == pytest.approx(y.finish, rel=1e-9, abs=1e-9)
    assert a.summary["gpu_util"] == pytest.approx(b.summary["gpu_util"], rel=1e-9)


jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 40),  # arrival (s/10)
        st.sampled_from([1, 1, 2, 3, 4, 6]),
        st.integers(1, 60),  # iterations
        st.integers(0, len(MODELS) - 1),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=40, deadline=None)
@given(
    jobs=jobs_strategy,
    policy=st.sampled_from(["ada-srsf", "srsf1", "srsf2", "srsf"]),
    placement=st.sampled_from(["lwf", "ff", "ls", "rand"]),
    ipt=st.sampled_from([1, 4]),
)
def test_shortcuts_match_plain_execution(jobs, policy, placement, ipt) -> None:
    cluster = Cluster.homogeneous(3, 2, gpu_memory_mb=16000.0)
    specs = [JobSpec(i, arr / 10, g, it, MODELS[m]) for i, (arr, g, it, m) in enumerate(jobs)]
    common = dict(policy=policy, placement=placement, seed=1)
    fast = simulate(cluster, specs, settings={"iterations_per_task": ipt}, **common)
    plain = simulate(
        cluster, specs, settings={"iterations_per_task": ipt, "shortcuts": "false"}, **common
    )
    assert_same(fast, plain)


@pytest.mark.parametrize("policy", ["ada-srsf", "srsf2"])
def test_shortcuts_match_on_wang20_coarse(policy: str) -> None:
    cluster = load_cluster("wang20")
    jobs = load_workload("wang20", seed=3)
    fast = simulate(cluster, jobs, policy, settings={"iterations_per_task": 1000})
    plain = simulate(
        cluster, jobs, policy, settings={"iterations_per_task": 1000, "shortcuts": "false"}
    )
    assert_same(fast, plain)


def test_fused_forward_backward_on_shared_gpu_and_its_split() -> None:
    """B's forward+backward on a GPU it shares with A runs fused while A is all-reducing; a
    newcomer C landing mid-forward splits it. Same schedule as task-by-task, fewer events."""
    from ddlsched import build_simulator
    from ddlsched.api import Settings

    cluster = Cluster.homogeneous(2, 1, gpu_memory_mb=16000.0)
    comm_heavy = ModelProfile("comm", 2000.0, 4000.0, 16, 0.010, 0.010)  # 2 GB all-reduce
    light = ModelProfile("light", 1.0, 4000.0, 16, 0.030, 0.050)
    jobs = [
        JobSpec(0, 0.0, 2, 3, comm_heavy),  # spans both servers, long all-reduces
        JobSpec(1, 0.05, 1, 40, light),  # shares a GPU with job 0
        JobSpec(2, 1.015, 1, 2, light),  # lands mid-forward of job 1 (smaller service)
    ]
    results, events = [], []
    for shortcuts in (True, False):
        sim = build_simulator(
            cluster, jobs, "srsf1", placement="ff", settings=Settings(shortcuts=shortcuts)
        )
        results.append(sim.run())
        events.append(sim.events_processed)
    assert_same(*results)
    assert events[0] < events[1]
