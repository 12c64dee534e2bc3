"""Yu et al.'s RAR model (Eq. 6–9) checked against hand arithmetic: the formula itself, then the
job-level engine re-timing cross-server jobs as co-located cross-server jobs start and finish.

Common numbers (unless a test says otherwise):

    b_e = 8 Gb/s = 1e9 B/s (network), b_i = 80 Gb/s = 1e10 B/s (intra-server)
    C = 5e10 B/s, ξ1 = 1, ξ2 = 0.01 s per server, α = 0.5 → f(k) = k + 0.5 (k − 1)
    a 2-GPU job with m = 100 MB: each of its chunks (w − 1)·m/w = 50e6 B
        reduction 50e6 / 5e10 = 0.001 s; compute Δf·M + Δb = 0.01 + 0.019 = 0.029 s

    one server:        0.01·1 + 0.029 + 2·50e6/1e10 (0.01) + 0.001          = 0.05
    two servers, k=1:  0.01·2 + 0.029 + 2·50e6/1e9  (0.1)  + 0.001          = 0.15
    two servers, k=2:  f = 2.5 → 2·50e6·2.5/1e9 = 0.25 → 0.02 + 0.029 + 0.25 + 0.001 = 0.30
    two servers, k=3:  f = 4   → 0.4                   → 0.02 + 0.029 + 0.4  + 0.001 = 0.45
    one GPU:           0.01·1 + 0.029 (no ring: w − 1 = 0)                     = 0.039
"""

from __future__ import annotations

import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster, Server
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.jobexec import JobExecutor
from ddlsched.core.simulator import Simulator
from ddlsched.perf.rar import (
    DEGRADATIONS,
    RarModel,
    RarRate,
    fair_share,
    gbps_to_bytes,
    linear_degradation,
    slotted,
)

B_E, B_I = 1e9, 1e10
MODEL = RarModel(xi1=1.0, xi2=0.01, alpha=0.5, reduction_speed=5e10)
PROFILE = ModelProfile("m", 100.0, 1000.0, 1, 0.01, 0.019)
SETTINGS = {"xi1": 1.0, "xi2": 0.01, "alpha": 0.5, "reduction_speed": 5e10}


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-9, abs=1e-9)


def job(job_id: int, gpus: int, iterations: int, profile: ModelProfile = PROFILE) -> JobSpec:
    return JobSpec(job_id, 0.0, gpus, iterations, profile)


def cluster(servers: int = 2, gpus: int = 3) -> Cluster:
    return Cluster.homogeneous(servers, gpus, network_bandwidth_gbps=8.0, intra_bandwidth_gbps=80.0)


# --------------------------------------------------------------------------- 1. Eq. 8 itself
def test_bandwidth_units():
    assert gbps_to_bytes(8.0) == 1e9
    assert gbps_to_bytes(80.0) == 1e10


def test_eq8_single_server_job():
    # 0.01 (ξ2 · 1 server) + 0.029 + 2·50e6/1e10 + 50e6/5e10 = 0.01 + 0.029 + 0.01 + 0.001
    assert MODEL.iteration_time(job(0, 2, 1), 1, 0, B_E, B_I) == approx(0.05)
    # a single-server job never sees contention, whatever p is passed
    assert MODEL.iteration_time(job(0, 2, 1), 1, 5, B_E, B_I) == approx(0.05)


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (1, 0.15),  # f(1) = 1: 0.02 + 0.029 + 0.1 + 0.001
        (2, 0.30),  # f(2) = 2 + 0.5 = 2.5: 2·50e6·2.5/1e9 = 0.25
        (3, 0.45),  # f(3) = 3 + 0.5·2 = 4: 0.4
        (5, 0.75),  # f(5) = 5 + 0.5·4 = 7: 0.7 → 0.02 + 0.029 + 0.7 + 0.001
    ],
)
def test_eq8_cross_server_job_with_p_contenders(p, expected):
    assert MODEL.iteration_time(job(0, 2, 1), 2, p, B_E, B_I) == approx(expected)


def test_eq8_overhead_is_xi2_per_server():
    # a 3-GPU job on three servers, alone: γ = 0.03; chunk = 100e6·2/3 B;
    # 2·chunk/1e9 = 0.13333…, chunk/5e10 = 0.00133…, together 0.404/3
    # → τ = 0.03 + 0.029 + 0.404/3 = 0.19366…
    assert MODEL.iteration_time(job(0, 3, 1), 3, 1, B_E, B_I) == approx(0.059 + 0.404 / 3)
    # the same 3-GPU job on two servers pays one server less: 0.01 less
    assert MODEL.iteration_time(job(0, 3, 1), 2, 1, B_E, B_I) == approx(0.049 + 0.404 / 3)
    # and with ξ2 = 0 the 2-GPU, 2-server, k = 1 time drops by exactly 0.02: 0.15 → 0.13
    no_overhead = RarModel(xi1=1.0, xi2=0.0, alpha=0.5, reduction_speed=5e10)
    assert no_overhead.iteration_time(job(0, 2, 1), 2, 1, B_E, B_I) == approx(0.13)


def test_eq8_ring_terms_scale_with_w():
    # w = 4, m = 100 MB: chunk = 100e6·3/4 = 75e6 B; 2·75e6/1e9 = 0.15; 75e6/5e10 = 0.0015
    # τ = 0.02 + 0.029 + 0.15 + 0.0015 = 0.2005
    assert MODEL.iteration_time(job(0, 4, 1), 2, 1, B_E, B_I) == approx(0.2005)


def test_eq8_reduction_term():
    # C = 1e9 instead of 5e10: reduction 50e6/1e9 = 0.05 instead of 0.001 → 0.15 + 0.049
    slow_c = RarModel(xi1=1.0, xi2=0.01, alpha=0.5, reduction_speed=1e9)
    assert slow_c.iteration_time(job(0, 2, 1), 2, 1, B_E, B_I) == approx(0.199)
    # one server: 0.01 + 0.029 + 0.01 + 0.05 = 0.099
    assert slow_c.iteration_time(job(0, 2, 1), 1, 1, B_E, B_I) == approx(0.099)


def test_eq8_one_gpu_job_has_no_communication():
    # w = 1: no ring, whatever the gradient size; τ = ξ2 + compute = 0.01 + 0.029
    big = ModelProfile("big", 10_000.0, 1000.0, 1, 0.01, 0.019)
    assert MODEL.iteration_time(job(0, 1, 1, big), 1, 0, B_E, B_I) == approx(0.039)
    assert MODEL.iteration_time(job(0, 1, 1, big), 1, 4, 1.0, 1.0) == approx(0.039)


def test_eq7_clamp_k_at_least_one():
    half = RarModel(xi1=0.5, xi2=0.01, alpha=0.5, reduction_speed=5e10)
    assert half.contenders(1) == 1.0  # 0.5 → clamped to 1
    assert half.contenders(2) == 1.0  # 1.0
    assert half.contenders(3) == 1.5
    assert half.contenders(4) == 2.0
    assert MODEL.contenders(0) == 1.0
    # p = 2, k = 1: no contention → 0.15 (unclamped k = 0.5 would give f = 0.25 → 0.4+ faster)
    assert half.iteration_time(job(0, 2, 1), 2, 2, B_E, B_I) == approx(0.15)
    # p = 3, k = 1.5: f = 1.5 + 0.5·0.5 = 1.75 → 2·50e6·1.75/1e9 = 0.175 → 0.225
    assert half.iteration_time(job(0, 2, 1), 2, 3, B_E, B_I) == approx(0.225)


def test_degradation_functions():
    assert linear_degradation(0.5, 1.0) == 1.0  # f(α, 1) = 1
    assert linear_degradation(0.5, 3.0) == 4.0  # 3 + 0.5·2
    assert linear_degradation(0.0, 3.0) == 3.0
    assert fair_share(0.5, 3.0) == 3.0
    assert set(DEGRADATIONS) == {"linear", "fair"}
    fair = RarModel(xi1=1.0, xi2=0.01, alpha=0.5, reduction_speed=5e10, f=fair_share)
    # f(2) = 2: 2·50e6·2/1e9 = 0.2 → 0.02 + 0.029 + 0.2 + 0.001 = 0.25
    assert fair.iteration_time(job(0, 2, 1), 2, 2, B_E, B_I) == approx(0.25)
    # p = 1: identical to linear (f(1) = 1 for both)
    assert fair.iteration_time(job(0, 2, 1), 2, 1, B_E, B_I) == approx(0.15)


def test_time_for_uses_slowest_links_and_ideal_time():
    slow = Server(num_gpus=2, network_bandwidth_gbps=8.0, intra_bandwidth_gbps=80.0)
    fast = Server(num_gpus=2, network_bandwidth_gbps=16.0, intra_bandwidth_gbps=160.0)
    cl = Cluster(servers=(slow, fast))
    spec = job(0, 2, 1)
    assert MODEL.bandwidths(cl, (0, 1)) == (1e9, 1e10)
    assert MODEL.time_for(cl, spec, (0, 1), 2) == approx(0.30)  # the slow server's b_e
    # on the fast server alone: b_i = 2e10 → 2·50e6/2e10 = 0.005 → 0.01 + 0.029 + 0.005 + 0.001
    assert MODEL.time_for(cl, spec, (1,), 1) == approx(0.045)
    # ideal: k = 1 and no γ → 0.15 − 0.02 = 0.13
    assert MODEL.ideal_time(cl, spec, (0, 1)) == approx(0.13)


def test_slotted_iterations_per_slot():
    assert slotted(0.15) == approx(1 / 6)  # ⌊6.67⌋ = 6 per slot
    assert slotted(0.039) == approx(1 / 25)  # ⌊25.6⌋ = 25
    assert slotted(0.25) == approx(1 / 4)  # exactly 4: no float round-down to 3
    assert slotted(0.1) == approx(1 / 10)
    assert slotted(1.5) == 1.5  # longer than a slot: keeps its fluid rate


# --------------------------------------------------------------------------- 2. the engine
class Fixed:
    """Starts each queued job on its given GPUs as soon as it fits on all of them (with
    ``max_jobs_per_gpu`` = 1: as soon as they are all free)."""

    name = "fixed"
    gate = None
    interval = None

    def __init__(self, placement: dict[int, tuple[int, ...]]) -> None:
        self.placement = placement

    def attach(self, sim: Simulator) -> None:
        pass

    def schedule(self, sim: Simulator) -> None:
        for j in sorted(sim.queue, key=lambda j: j.job_id):
            gpus = self.placement[j.job_id]
            if all(sim.fits(j, g) for g in gpus):
                sim.start(j, gpus)


def run_fixed(
    jobs: list[JobSpec],
    placement: dict[int, tuple[int, ...]],
    cl: Cluster | None = None,
    model: RarModel = MODEL,
    time_slots: bool = False,
) -> dict[int, tuple[float, float]]:
    sim = Simulator(
        cl or cluster(),
        jobs,
        Fixed(placement),
        JobExecutor(RarRate(model, time_slots)),
        max_jobs_per_gpu=1,
    )
    res = sim.run()
    return {r.job_id: (r.start, r.finish) for r in res.jobs}


# cluster(): 2 servers × 3 GPUs → server 0 = GPUs 0, 1, 2; server 1 = GPUs 3, 4, 5


def test_engine_two_cross_jobs_k2_then_k1():
    # A (100 it.) on (0, 3), B (300 it.) on (1, 4): both span servers 0 and 1 → p = 2, τ = 0.3.
    # A ends at 100·0.3 = 30. B has done 30/0.3 = 100 by then, 200 left alone at τ = 0.15
    # → 30 s more → 60.
    out = run_fixed([job(0, 2, 100), job(1, 2, 300)], {0: (0, 3), 1: (1, 4)})
    assert out[0] == (0.0, approx(30.0))
    assert out[1] == (0.0, approx(60.0))


def test_engine_three_cross_jobs_k3_k2_k1():
    # A 100 on (0,3), B 200 on (1,4), C 300 on (2,5): p = 3, τ = 0.45 until A ends at 45
    # (B, C at 100 each); then p = 2, τ = 0.3: B's 100 left take 30 → 75 (C at 200);
    # then C alone, τ = 0.15: 100 left take 15 → 90.
    out = run_fixed(
        [job(0, 2, 100), job(1, 2, 200), job(2, 2, 300)],
        {0: (0, 3), 1: (1, 4), 2: (2, 5)},
    )
    assert out[0][1] == approx(45.0)
    assert out[1][1] == approx(75.0)
    assert out[2][1] == approx(90.0)


def test_engine_late_cross_job_slows_the_running_one():
    # X (job 0, 1 GPU, 100 it.) holds GPU 0 for 100·0.039 = 3.9 s (single server: not counted).
    # B (job 1, 300 it.) on (1,4) runs alone from 0 at τ = 0.15; A (job 2, 100 it.) on (0,3)
    # waits for GPU 0. At 3.9 B has done 3.9/0.15 = 26; A starts: p = 2, τ = 0.3 for both.
    # A ends at 3.9 + 30 = 33.9; B meanwhile did 100 → 126, 174 left at 0.15 → 26.1 → 60.0.
    jobs = [job(0, 1, 100), job(1, 2, 300), job(2, 2, 100)]
    out = run_fixed(jobs, {0: (0,), 1: (1, 4), 2: (0, 3)})
    assert out[0] == (0.0, approx(3.9))
    assert out[2] == (approx(3.9), approx(33.9))
    assert out[1] == (0.0, approx(60.0))


def test_engine_fair_degradation():
    # f = fair: τ(k=2) = 0.25. A ends at 25 (B at 100), B's 200 left at 0.15 → 30 → 55.
    fair = RarModel(xi1=1.0, xi2=0.01, alpha=0.5, reduction_speed=5e10, f=fair_share)
    out = run_fixed([job(0, 2, 100), job(1, 2, 300)], {0: (0, 3), 1: (1, 4)}, model=fair)
    assert out[0][1] == approx(25.0)
    assert out[1][1] == approx(55.0)


def test_engine_xi1_below_one_clamps_contention():
    # ξ1 = 0.5, p = 2 → k = 1: no contention, both at 0.15 → 15 and 45
    half = RarModel(xi1=0.5, xi2=0.01, alpha=0.5, reduction_speed=5e10)
    out = run_fixed([job(0, 2, 100), job(1, 2, 300)], {0: (0, 3), 1: (1, 4)}, model=half)
    assert out[0][1] == approx(15.0)
    assert out[1][1] == approx(45.0)


def test_engine_single_server_jobs_do_not_count_in_p():
    # A (100 it.) on (0,3) crosses servers; D (2 GPUs, 100 it.) on (1,2) sits on server 0 only,
    # E (1 GPU, 100 it.) on GPU 4 on server 1 only. Eq. 6 counts only 0 < y_js < G_j, so A is
    # alone: τ = 0.15 → 15 (with D, E counted it would be p = 2 → 30).
    # D: one server, τ = 0.05 → 5; E: τ = 0.039 → 3.9.
    out = run_fixed(
        [job(0, 2, 100), job(1, 2, 100), job(2, 1, 100)],
        {0: (0, 3), 1: (1, 2), 2: (4,)},
    )
    assert out[0][1] == approx(15.0)
    assert out[1][1] == approx(5.0)
    assert out[2][1] == approx(3.9)


def test_engine_disjoint_servers_do_not_contend():
    # 4 servers × 1 GPU: A on servers 0,1 and B on servers 2,3 share no server → p = 1 each:
    # 100 it. · 0.15 = 15 for both.
    cl = cluster(4, 1)
    out = run_fixed([job(0, 2, 100), job(1, 2, 100)], {0: (0, 1), 1: (2, 3)}, cl=cl)
    assert out[0][1] == approx(15.0)
    assert out[1][1] == approx(15.0)


def test_engine_p_is_the_max_over_the_jobs_servers():
    # 3 servers × 2 GPUs: A on servers 0,1 (GPUs 0,2); B on servers 1,2 (GPUs 3,4); C on server
    # 2 and 0 (GPUs 5,1). Every server carries two cross jobs → p = 2 for all, τ = 0.3:
    # 100 it. → 30 each. (Eq. 6's max over servers, not the sum: the sum would give 4.)
    cl = cluster(3, 2)
    out = run_fixed(
        [job(0, 2, 100), job(1, 2, 100), job(2, 2, 100)],
        {0: (0, 2), 1: (3, 4), 2: (5, 1)},
        cl=cl,
    )
    assert [out[i][1] for i in range(3)] == [approx(30.0)] * 3


def test_engine_time_slots_floor_and_whole_seconds():
    # Slots of 1 s: τ = 0.3 → ⌊3.33⌋ = 3 it./slot while A and B run together.
    # A (100): ⌈100/3⌉ = 34 slots → 34.0 (fluid: 30). B has 34·3 = 102 done then;
    # alone τ = 0.15 → 6 it./slot: ⌈198/6⌉ = 33 → 67.0 (fluid: 60).
    out = run_fixed([job(0, 2, 100), job(1, 2, 300)], {0: (0, 3), 1: (1, 4)}, time_slots=True)
    assert out[0][1] == 34.0
    assert out[1][1] == 67.0


def test_engine_time_slots_single_jobs():
    # 1 GPU: τ = 0.039 → 25 it./slot → 100 it. in exactly 4 slots (fluid 3.9);
    # one server, 2 GPUs: τ = 0.05 → 20 it./slot → ⌈110/20⌉ = 6 (fluid 5.5).
    out = run_fixed(
        [job(0, 1, 100), job(1, 2, 110)],
        {0: (0,), 1: (3, 4)},
        time_slots=True,
    )
    assert out[0][1] == 4.0
    assert out[1][1] == 6.0


def test_api_model_rar_cross_server_job():
    # 2 servers × 1 GPU: a 2-GPU job must cross, alone → 100·0.15 = 15; a second one waits for
    # the GPUs (one job per GPU) and runs 15..30. With time slots: ⌈100/6⌉ = 17 → 17 and 34.
    cl = cluster(2, 1)
    jobs = [job(0, 2, 100), job(1, 2, 100)]
    base = {**SETTINGS, "model": "rar", "max_jobs_per_gpu": 1}
    res = simulate(cl, jobs, "srsf1", placement="ff", settings=base)
    assert [(r.start, r.finish) for r in res.jobs] == [
        (0.0, approx(15.0)),
        (approx(15.0), approx(30.0)),
    ]
    assert all(r.placement == "0:0;1:0" for r in res.jobs)
    res = simulate(cl, jobs, "srsf1", placement="ff", settings={**base, "time_slots": True})
    assert [r.finish for r in res.jobs] == [17.0, 34.0]


def test_api_model_rar_settings_reach_the_model():
    # same job with rar_f = fair and ξ2 = 0: 100·(0.029 + 0.1 + 0.001) = 13 alone
    cl = cluster(2, 1)
    res = simulate(
        cl,
        [job(0, 2, 100)],
        "srsf1",
        placement="ff",
        settings={**SETTINGS, "xi2": 0.0, "rar_f": "fair", "model": "rar"},
    )
    assert res.jobs[0].finish == approx(13.0)


def test_api_model_rar_gpu_sharing_is_not_free():
    # With GPU sharing allowed (max_jobs_per_gpu = 0: memory only), two 1-GPU jobs of 100 it.
    # both land on the single GPU. Its compute is processor-shared (as in Wang's job level):
    # τ = ξ2 + 2·0.029 = 0.068 → both end at 6.8 — not at 3.9 as if each had the GPU alone,
    # and never before the GPU's compute work 2·100·0.029 = 5.8.
    cl = cluster(1, 1)
    res = simulate(
        cl,
        [job(0, 1, 100), job(1, 1, 100)],
        "srsf1",
        placement="ff",
        settings={**SETTINGS, "model": "rar"},
    )
    assert [r.placement for r in res.jobs] == ["0:0", "0:0"]
    assert [r.finish for r in res.jobs] == [approx(6.8), approx(6.8)]


def test_engine_shared_gpu_speeds_up_when_the_other_leaves():
    # one GPU, sharing allowed: X (50 it.) and Y (100 it.) start together at τ = 0.068.
    # X ends at 50·0.068 = 3.4 (Y at 50); Y alone, τ = 0.039: 50·0.039 = 1.95 → 5.35.
    sim = Simulator(
        cluster(1, 1),
        [job(0, 1, 50), job(1, 1, 100)],
        Fixed({0: (0,), 1: (0,)}),
        JobExecutor(RarRate(MODEL)),
        max_jobs_per_gpu=2,
    )
    out = {r.job_id: r.finish for r in sim.run().jobs}
    assert out == {0: approx(3.4), 1: approx(5.35)}
