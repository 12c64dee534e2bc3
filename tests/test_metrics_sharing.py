"""GPU utilisation counts a busy GPU once (issue #11 §3): ``gpu_util`` from each executor against
``gpu_held`` (the union of each GPU's segment intervals) and ``gpu_util_jobs`` (every job counts
its GPUs), by hand with GPU sharing, and ``rounds`` segments that end when the job finished."""

from __future__ import annotations

import pytest
from _toys import toy_app, toy_jobs
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.api import build_simulator, simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.profileexec import ProfileExecutor
from ddlsched.core.results import SegmentRecord, gpu_held_seconds, job_gpu_seconds
from ddlsched.core.simulator import Simulator
from ddlsched.policies.luo import Exclusive, Sharing
from ddlsched.policies.plugins import PROFILE_POLICY_NAMES
from ddlsched.workloads.presets import load_workload


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-12, abs=1e-12)


def _profile_run(jobs, policy, *, gpus=2, xi=2.0, semantics="events", delay=0.0, per_gpu=2):
    sim = Simulator(
        Cluster.homogeneous(1, gpus),
        jobs,
        policy,  # type: ignore[arg-type]
        ProfileExecutor(
            {"toy": toy_app()}, rescale_delay=delay, interference=xi, semantics=semantics
        ),
        max_jobs_per_gpu=per_gpu,
        semantics=semantics,
    )
    return sim.run()


def test_union_and_job_seconds_by_hand():
    # GPU a: [0, 10] and [5, 20] overlap → 20; [30, 40] → 10; GPU b: [0, 10] → 10
    segs = [
        SegmentRecord(0, 0.0, 10.0, "0:0;0:1"),
        SegmentRecord(1, 5.0, 20.0, "0:0"),
        SegmentRecord(2, 30.0, 40.0, "0:0"),
    ]
    assert gpu_held_seconds(segs) == 40.0
    assert job_gpu_seconds(segs) == 20.0 + 15.0 + 10.0


def test_profile_executor_counts_a_shared_gpu_once(tmp_path):
    # 2 GPUs. A (2 GPUs, 300 s alone) from 0; B (1 GPU) arrives at 10 and shares GPU 0 (FFS:
    # memory 16/64 + 32/64 fits). ξ = 2 slows both: A has 290 left at 0.5/s → ends 590; B did
    # 290 by then, 10 left alone → 600. GPU 0 held [0, 600], GPU 1 [0, 590]:
    # gpu_util = gpu_held = 1190 / (2 × 600); jobs' GPU-seconds 590·2 + 590 = 1770.
    # (Before: 1770 / 1200 clamped to 1.0.)
    jobs = toy_jobs("a,0,toy,2,32\nb,10,toy,1,32\n", tmp_path)
    res = _profile_run(jobs, Sharing("sjf-ffs", mode="ffs"))
    fin = {j.job_id: j.finish for j in res.jobs}
    assert fin == {0: approx(590.0), 1: approx(600.0)}
    assert res.summary["gpu_util"] == approx(1190.0 / 1200.0)
    assert res.summary["gpu_held"] == approx(1190.0 / 1200.0)
    assert res.summary["gpu_util_jobs"] == approx(1770.0 / 1200.0)


def test_profile_rounds_with_sharing_counts_the_union(tmp_path):
    # the same jobs in rounds semantics (60 s): whatever the times, a shared GPU counts once
    jobs = toy_jobs("a,0,toy,2,32\nb,10,toy,1,32\nc,20,toy,1,32\n", tmp_path)
    res = _profile_run(jobs, Sharing("sjf-ffs", mode="ffs"), semantics="rounds", delay=30.0)
    s = res.summary
    assert s["gpu_util_jobs"] > s["gpu_held"] + 0.1  # they did share
    assert s["gpu_util"] == approx(s["gpu_held"])


def test_rounds_segment_ends_at_finish_gpus_freed_at_the_boundary(tmp_path):
    # 1 GPU, rounds of 60 s, 30 s delay per allocation, FIFO. A and B submitted at 0 are seen
    # at 60; A starts, runs 300 s after its delay → finishes 390; its GPU is freed at the 420
    # boundary, where B starts → finishes 420 + 330 = 750, freed at 780. Segments end at the
    # finishes; the GPU-seconds held after them: 30 + 30 = 60. gpu_util = 660 / 750.
    jobs = toy_jobs("a,0,toy,1,32\nb,0,toy,1,32\n", tmp_path)
    res = _profile_run(
        jobs, Exclusive("fifo", order="fifo"), gpus=1, semantics="rounds", delay=30.0, per_gpu=1
    )
    assert [(j.start, j.finish) for j in res.jobs] == [(60.0, 390.0), (420.0, 750.0)]
    assert [(s.start, s.end) for s in res.segments] == [(60.0, 390.0), (420.0, 750.0)]
    assert res.summary["held_after_finish_gpu_seconds"] == 60.0
    assert res.summary["gpu_util"] == approx(660.0 / 750.0)
    assert res.summary["gpu_held"] == approx(660.0 / 750.0)


def test_events_semantics_has_no_held_after_figure(tmp_path):
    jobs = toy_jobs("a,0,toy,1,32\n", tmp_path)
    res = _profile_run(jobs, Exclusive("fifo", order="fifo"), gpus=1, per_gpu=1)
    assert "held_after_finish_gpu_seconds" not in res.summary
    assert res.summary["gpu_util"] == res.summary["gpu_held"] == 1.0


@pytest.mark.parametrize("semantics", ["events", "rounds"])
@pytest.mark.parametrize("name", PROFILE_POLICY_NAMES)
def test_every_profile_policy_util_equals_held(name, semantics):
    jobs = load_workload("luo24-3", seed=0)
    res = build_simulator(
        load_cluster("luo24"), jobs, name, settings=_settings(semantics=semantics)
    ).run()
    s = res.summary
    assert s["gpu_util"] == pytest.approx(s["gpu_held"], rel=1e-9, abs=1e-9)
    assert s["gpu_held"] <= s["gpu_util_jobs"] + 1e-9


def _settings(**kw):
    from ddlsched.api import Settings

    return Settings(**kw)


# ------------------------------------------------------------------ job level (Wang / Yu)
def _model_job(job_id: int, arrival: float, iterations: int, gpus: int = 1) -> JobSpec:
    return JobSpec(job_id, arrival, gpus, iterations, ModelProfile("m", 0.0, 1000.0, 1, 1.0, 2.0))


def test_job_level_sharing_util_equals_held():
    # 2 GPUs, three 1-GPU jobs at once: one GPU is shared (processor sharing, Wang's job level)
    jobs = [_model_job(0, 0.0, 10), _model_job(1, 0.0, 20), _model_job(2, 0.0, 30)]
    res = simulate(Cluster.homogeneous(1, 2), jobs, "srsf", settings={"granularity": "job"})
    s = res.summary
    assert s["gpu_util_jobs"] > s["gpu_held"]
    assert s["gpu_util"] == approx(s["gpu_held"])


def test_iteration_level_counts_computing_time_only():
    # with an all-reduce to wait for, a GPU is held but not computing: util < held
    jobs = [JobSpec(i, 0.0, 2, 20, ModelProfile("m", 100.0, 1000.0, 1, 1.0, 2.0)) for i in range(3)]
    res = simulate(Cluster.homogeneous(2, 1), jobs, "srsf")
    s = res.summary
    assert s["gpu_util"] < s["gpu_held"] - 1e-6


# ------------------------------------------------------------------ trace (duration) jobs
TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def test_duration_executor_with_preemption_and_restart_delay_util_equals_held():
    # Tiresias with a tiny threshold preempts the long job for the short ones; every restart
    # costs 5 s with the GPU held: held time is busy time
    jobs = [
        JobSpec(0, 0.0, 1, 0, TRACE, duration=100.0),
        JobSpec(1, 10.0, 1, 0, TRACE, duration=30.0),
        JobSpec(2, 20.0, 1, 0, TRACE, duration=20.0),
    ]
    res = simulate(
        Cluster.homogeneous(1, 1),
        jobs,
        "tiresias",
        settings={"tiresias_thresholds": "0.001", "interval": 1.0, "restart_delay": 5.0},
    )
    assert sum(j.preemptions for j in res.jobs) > 0
    s = res.summary
    assert s["gpu_util"] == approx(s["gpu_held"])
    assert s["gpu_util_jobs"] == approx(s["gpu_held"])  # exclusive GPUs


# ------------------------------------------------------------------ random sharing workloads
SHARE_APPS = {"a": toy_app("a", step=1.0, max_local=64), "b": toy_app("b", step=0.5, max_local=48)}


@settings(max_examples=40, deadline=None)
@given(
    raw=st.lists(
        st.tuples(st.integers(0, 600), st.sampled_from([1, 2, 4]), st.sampled_from(["a", "b"])),
        min_size=1,
        max_size=10,
    ),
    mode=st.sampled_from(["ffs", "bsbf"]),
    semantics=st.sampled_from(["events", "rounds"]),
    delay=st.sampled_from([0.0, 30.0]),
)
def test_random_sharing_runs_count_each_gpu_once(raw, mode, semantics, delay):
    jobs = [
        JobSpec(
            i,
            float(t),
            g,
            0,
            ModelProfile(app, 0.0, 0.0, 32, 0.0, 0.0),
            application=app,
            batch_size=32,
            name=f"j{i}",
        )
        for i, (t, g, app) in enumerate(raw)
    ]
    sim = Simulator(
        Cluster.homogeneous(1, 4),
        jobs,
        Sharing(f"sjf-{mode}", mode=mode),  # type: ignore[arg-type]
        ProfileExecutor(SHARE_APPS, rescale_delay=delay, interference=1.5, semantics=semantics),
        max_jobs_per_gpu=2,
        semantics=semantics,
    )
    s = sim.run().summary
    assert s["gpu_util"] == pytest.approx(s["gpu_held"], rel=1e-12, abs=1e-12)
    assert s["gpu_util"] <= s["gpu_held"] + 1e-9 <= 1.0 + 2e-9
    assert s["gpu_held"] <= s["gpu_util_jobs"] + 1e-9


class _PreemptOnce:
    """Starts waiting jobs on the first free GPU; at its first round preempts every job."""

    name = "preempt-once"
    interval = 5.0

    def attach(self, sim):
        self.done = False

    def schedule(self, sim):
        for job in list(sim.queue):
            free = [g for g in range(sim.cluster.num_gpus) if not sim.residents[g]]
            if len(free) >= job.num_gpus:
                sim.start(job, free[: job.num_gpus])

    def on_round(self, sim):
        if not self.done and sim.running:
            self.done = True
            for job in list(sim.running.values()):
                sim.preempt(job)


def test_job_level_restart_delay_is_held_not_busy():
    # 1 GPU, one job of 10 iterations × 3 s. Preempted at 5 (the round after its start at 0)
    # with 1 whole iteration done (the partial one is lost), restarted at 5 with a 4 s delay: it
    # runs again from 9, 9 iterations → ends at 36. The GPU is held [0, 5] and [5, 36] = 36 s,
    # busy (running, not in the delay) 5 + 27 = 32 s: util 32/36 < held 1.
    jobs = [_model_job(0, 0.0, 10)]
    res = simulate(
        Cluster.homogeneous(1, 1),
        jobs,
        _PreemptOnce(),
        settings={"granularity": "job", "restart_delay": 4.0},
    )
    assert res.jobs[0].preemptions == 1 and res.jobs[0].finish == approx(36.0)
    assert res.summary["gpu_held"] == approx(1.0)
    assert res.summary["gpu_util"] == approx(32.0 / 36.0)
