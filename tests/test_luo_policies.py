"""Luo et al.'s policies by hand: Theorem 1, the sub-batch search and memory feasibility, the
interference slowdown as a co-resident starts and stops, FIFO vs SJF order."""

from __future__ import annotations

import pytest
from _toys import toy_app, toy_jobs

from ddlsched.core.cluster import Cluster
from ddlsched.core.profileexec import ProfileExecutor
from ddlsched.core.simulator import Simulator
from ddlsched.policies.luo import Exclusive, Sharing, theorem1


def _run(jobs, policy, apps, *, gpus=1, xi=1.5, share=True):
    sim = Simulator(
        Cluster.homogeneous(1, gpus),
        jobs,
        policy,  # type: ignore[arg-type]
        ProfileExecutor(apps, rescale_delay=0.0, interference=xi),
        max_jobs_per_gpu=2 if share else 1,
    )
    return sim.run()


def test_theorem1_host_ends_first():
    # L_a = 100 (new), L_b = 40 (running), ξ = 1.2: overlapped, B ends at 48, A has done
    # 48/1.2 = 40 → ends at 48 + 60 = 108: mean 78 < sequential (40 + 140)/2 = 90 → share
    assert theorem1(100, 40, 1.2, 1.2) == (True, pytest.approx(78))
    # ξ = 1.5, L_b = 10: overlap (15 + 105)/2 = 60 = sequential (10 + 110)/2 → no gain, no share
    assert theorem1(100, 10, 1.5, 1.5) == (False, pytest.approx(60))


def test_theorem1_new_job_ends_first():
    # L_a = 10, L_b = 100, ξ = 2: A ends at 20, B did 10 → ends 110: mean 65 < 105 → share
    assert theorem1(10, 100, 2.0, 2.0) == (True, pytest.approx(65))
    # L_a = 60, ξ = 3: A ends at 180, B did 60 → ends 220: mean 200 > (100 + 160)/2 = 130
    assert theorem1(60, 100, 3.0, 3.0) == (False, pytest.approx(130))


def test_ffs_shares_and_interference_slows_both_until_one_leaves(tmp_path):
    # 1 GPU; H (300 s alone) from 0; N arrives at 100 and shares at once (a = 32 → memory
    # 32/64 + 32/64 = 1 fits). ξ = 2: both at half speed; H has 200 left → 400 s → ends 500;
    # N did 200 by then, 100 left alone → 600.
    jobs = toy_jobs("h,0,toy,1,32\nn,100,toy,1,32\n", tmp_path)
    res = _run(jobs, Sharing("sjf-ffs", mode="ffs"), {"toy": toy_app()}, xi=2.0)
    fin = {j.job_id: j.finish for j in res.jobs}
    assert fin == {0: pytest.approx(500.0), 1: pytest.approx(600.0)}
    assert res.jobs[1].start == 100.0


def test_memory_forces_a_smaller_micro_batch(tmp_path):
    # max_local 48: H uses 32/48 of the GPU; N fits only with micro-batch 16 (16/48 + 32/48 = 1)
    # → 2 accumulation steps: 2 s per iteration alone (step 1 s, no sync), 4 s shared (ξ = 2).
    # H: 200 left at 0.5/s → ends 500; N did 400/4 = 100 by then, 200 left at 0.5/s → 900.
    jobs = toy_jobs("h,0,toy,1,32\nn,100,toy,1,32\n", tmp_path)
    res = _run(jobs, Sharing("sjf-ffs", mode="ffs"), {"toy": toy_app(max_local=48)}, xi=2.0)
    fin = {j.job_id: j.finish for j in res.jobs}
    assert fin == {0: pytest.approx(500.0), 1: pytest.approx(900.0)}


def test_no_sharing_when_memory_cannot_fit(tmp_path):
    # max_local 32: H fills the GPU (32/32), no micro-batch of N fits beside it → N waits
    jobs = toy_jobs("h,0,toy,1,32\nn,100,toy,1,32\n", tmp_path)
    res = _run(jobs, Sharing("sjf-ffs", mode="ffs"), {"toy": toy_app(max_local=32)}, xi=2.0)
    assert [(j.start, j.finish) for j in res.jobs] == [(0.0, 300.0), (300.0, 600.0)]


def test_bsbf_shares_only_when_theorem1_says_so(tmp_path):
    jobs = toy_jobs("h,0,toy,1,32\nn,100,toy,1,32\n", tmp_path)
    # ξ = 3: L_a = 300, L_b = 200 → overlap mean 650 > sequential 350 → N waits for H
    res = _run(jobs, Sharing("sjf-bsbf", mode="bsbf"), {"toy": toy_app()}, xi=3.0)
    assert [(j.start, j.finish) for j in res.jobs] == [(0.0, 300.0), (300.0, 600.0)]
    # ξ = 1.2: overlap mean 290 < 350 → share at 100; H ends at 100 + 240 = 340, N did 200,
    # ends at 440
    res = _run(jobs, Sharing("sjf-bsbf", mode="bsbf"), {"toy": toy_app()}, xi=1.2)
    fin = {j.job_id: j.finish for j in res.jobs}
    assert fin == {0: pytest.approx(340.0), 1: pytest.approx(440.0)}
    # SJF-FFS shares regardless of ξ
    res = _run(jobs, Sharing("sjf-ffs", mode="ffs"), {"toy": toy_app()}, xi=3.0)
    assert res.jobs[1].start == 100.0


def test_fifo_runs_in_arrival_order_sjf_by_length(tmp_path):
    # 1 GPU; A (slow: 600 s) at 0, B (slow) at 1, C (fast: 300 s) at 2
    apps = {"slow": toy_app("slow", step=2.0), "fast": toy_app("fast")}
    jobs = toy_jobs("a,0,slow,1,32\nb,1,slow,1,32\nc,2,fast,1,32\n", tmp_path)
    fifo = _run(jobs, Exclusive("fifo", order="fifo"), apps, share=False)
    assert [j.start for j in fifo.jobs] == [0.0, 600.0, 1200.0]
    sjf = _run(jobs, Exclusive("sjf", order="sjf"), apps, share=False)
    assert [j.start for j in sjf.jobs] == [0.0, 900.0, 600.0]


def test_fifo_without_backfill_blocks(tmp_path):
    # 2 GPUs: A (1 GPU) runs; B (2 GPUs) cannot start; C (1 GPU) backfills unless blocked
    apps = {"toy": toy_app()}
    jobs = toy_jobs("a,0,toy,1,32\nb,1,toy,2,32\nc,2,toy,1,32\n", tmp_path)
    back = _run(jobs, Exclusive("fifo", order="fifo"), apps, gpus=2, share=False)
    assert back.jobs[2].start == 2.0
    strict = _run(jobs, Exclusive("fifo", order="fifo", backfill=False), apps, gpus=2, share=False)
    # blocked behind B: B takes both GPUs at 300 (A done), C only after B (300 s) at 600
    assert (strict.jobs[1].start, strict.jobs[2].start) == (300.0, 600.0)


def test_per_pair_interference_slows_each_job_by_its_own_ratio(tmp_path):
    # H (app a) from 0, N (app b) shares at 100. ξ(a beside b) = 2, ξ(b beside a) = 1.25:
    # from 100 H runs at 0.5/s (200 left), N at 0.8/s (300 left). N ends first at
    # 100 + 300/0.8 = 475; H did 0.5 × 375 = 187.5 by then, the last 12.5 alone → 487.5
    apps = {"a": toy_app("a"), "b": toy_app("b")}
    jobs = toy_jobs("h,0,a,1,32\nn,100,b,1,32\n", tmp_path)
    sim = Simulator(
        Cluster.homogeneous(1, 1),
        jobs,
        Sharing("sjf-ffs", mode="ffs"),  # type: ignore[arg-type]
        ProfileExecutor(
            apps, rescale_delay=0.0, pair_interference={("a", "b"): 2.0, ("b", "a"): 1.25}
        ),
        max_jobs_per_gpu=2,
    )
    fin = {j.job_id: j.finish for j in sim.run().jobs}
    assert fin == {0: pytest.approx(487.5), 1: pytest.approx(475.0)}


def test_pair_interference_file_errors(tmp_path):
    from ddlsched.api import read_pair_interference
    from ddlsched.errors import InputError

    good = tmp_path / "xi.csv"
    good.write_text("app,other,xi\nbert,cifar10,1.8\n")
    assert read_pair_interference(str(good)) == {("bert", "cifar10"): 1.8}
    bad = tmp_path / "bad.csv"
    bad.write_text("app,other,xi\nbert,cifar10,0.5\n")
    with pytest.raises(InputError) as e:
        read_pair_interference(str(bad))
    assert (e.value.line, e.value.field) == (2, "xi")


def test_fixed_iteration_jobs_run_their_iterations_not_epochs():
    # toy: 1 s per iteration at micro-batch 32 alone; a job of 150 iterations ends at 150 s,
    # regardless of the application's epochs (300 progress); on 2 GPUs with batch 64 the
    # micro-batch is still 32 → also 1 s per iteration
    from ddlsched.core.job import JobSpec, ModelProfile

    jobs = [
        JobSpec(
            0, 0.0, 1, 150, ModelProfile("toy", 0, 0, 32, 0, 0), application="toy", batch_size=32
        ),
        JobSpec(
            1, 10.0, 2, 40, ModelProfile("toy", 0, 0, 64, 0, 0), application="toy", batch_size=64
        ),
    ]
    res = _run(jobs, Exclusive("fifo", order="fifo"), {"toy": toy_app()}, gpus=4, share=False)
    assert [j.finish for j in res.jobs] == [pytest.approx(150.0), pytest.approx(50.0)]


def test_luo24_physical_workload_follows_the_paper():
    from collections import Counter

    from ddlsched.workloads.presets import load_workload

    jobs = load_workload("luo24-physical", seed=3)
    sizes = Counter(j.num_gpus >= 12 for j in jobs)
    assert len(jobs) == 30 and sizes[True] == 10  # 10 jobs with 12 or 16 GPUs
    assert {j.num_gpus for j in jobs if j.num_gpus < 12} <= {1, 2, 4, 8}
    assert all(100 <= j.iterations <= 5000 for j in jobs)
    assert load_workload("luo24-physical", seed=3) == jobs


def test_fifo_least_busy_placement_prefers_idle_gpus(tmp_path):
    # 2 GPUs; A (1 GPU) runs 0–300 on GPU 0; B arrives at 400: least accumulated execution
    # time is GPU 1 (0 s) not GPU 0 (300 s) → B on GPU 1 (consolidated would take GPU 0)
    jobs = toy_jobs("a,0,toy,1,32\nb,400,toy,1,32\n", tmp_path)
    apps = {"toy": toy_app()}
    res = _run(
        jobs, Exclusive("fifo", order="fifo", placement="least-busy"), apps, gpus=2, share=False
    )
    assert [j.placement for j in res.jobs] == ["0:0", "0:1"]
    res = _run(jobs, Exclusive("fifo", order="fifo"), apps, gpus=2, share=False)
    assert [j.placement for j in res.jobs] == ["0:0", "0:0"]


def test_tiresias_thresholds_setting():
    from ddlsched.api import Settings
    from ddlsched.errors import InputError

    assert Settings.from_mapping({"tiresias_thresholds": "1,10"}).tiresias_thresholds_hours == (
        1.0,
        10.0,
    )
    for bad in ("0", "10,1", "x"):
        with pytest.raises(InputError) as e:
            Settings.from_mapping({"tiresias_thresholds": bad})
        assert e.value.field == "tiresias_thresholds"


def test_an_elastic_restart_changes_gpus_and_batch():
    # app with validated batches 32 and 64 (var = sqr = 1): gain at M=64 is 2/1.5 = 4/3.
    # 1 GPU, batch 32 from 0 at 1/s; at 50 (progress 50) restarted on 2 GPUs with batch 64:
    # local 32, 1 s per iteration, 4/3 per second → 250 left in 187.5 s → finish 237.5
    from ddlsched.core.job import JobSpec, ModelProfile
    from ddlsched.perf.profiles import Application

    rows = [(100.0, 1.0, 1.0), (200.0, 1.0, 1.0), (300.0, 1.0, 1.0)]
    app = Application(
        "el",
        [((n,), float(b), 1.0, 0.0) for n in (1, 2) for b in (1, 64)],
        [],
        {32: rows, 64: rows},
        max_epochs=3,
    )

    class Resizer:
        name, gate, interval = "resizer", None, None

        def attach(self, sim):
            self.ex = sim.executor
            sim.at(50.0, self.grow, sim)

        def grow(self, sim):
            job = sim.jobs[0]
            sim.preempt(job)
            self.ex.batch_override[job.job_id] = 64
            sim.start(job, [0, 1], resize=True)

        def schedule(self, sim):
            for job in list(sim.queue):
                if job.start is None:
                    sim.start(job, [0])

        def on_round(self, sim):
            pass

    jobs = [
        JobSpec(0, 0.0, 1, 0, ModelProfile("el", 0, 0, 32, 0, 0), application="el", batch_size=32)
    ]
    sim = Simulator(
        Cluster.homogeneous(1, 2),
        jobs,
        Resizer(),  # type: ignore[arg-type]
        ProfileExecutor({"el": app}, rescale_delay=0.0),
        max_jobs_per_gpu=1,
    )
    res = sim.run()
    assert res.jobs[0].finish == pytest.approx(237.5)
    assert [s.placement for s in res.segments] == ["0:0", "0:0;0:1"]
    # busy GPU-seconds: 50 on one GPU, then 187.5 on two
    assert sim.executor.busy_gpu_seconds() == pytest.approx(50 + 2 * 187.5)
