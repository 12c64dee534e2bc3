"""Wang et al.'s linear contention model (Eq. 2, 5; Theorems 1-2) checked against hand arithmetic.

All expected values below are computed by hand in the comments; the engine runs the full
iteration-level DAG. Common parameters (unless a test says otherwise):

    b = 1e-9 s/B  (= 1 ms per MB, i.e. 1000 MB/s alone)
    eta = 0.5e-9 s/B
    per byte: k=1 -> 1.0e-9, k=2 -> 2b+eta = 2.5e-9 (400 MB/s), k=3 -> 3b+2eta = 4.0e-9 (250 MB/s)
    AdaDUAL threshold b / (2(b+eta)) = 1 / 3

The cluster is 2 servers x 1 GPU, every job needs 2 GPUs, so every job spans both servers and
all jobs share the same two links. Compute is zero so only the all-reduces take time.
"""

from __future__ import annotations

import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.perf.contention import MB, LinearContention, RingContention

B = 1e-9
ETA = 0.5e-9
SETTINGS = {"a": 0.0, "b": B, "eta": ETA}


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def comm_job(job_id: int, arrival: float, size_mb: float, iterations: int = 1) -> JobSpec:
    """A 2-GPU job with no compute: each iteration is one all-reduce of ``size_mb``."""
    model = ModelProfile(f"m{job_id}", size_mb, 1000.0, 1, 0.0, 0.0)
    return JobSpec(job_id, arrival, 2, iterations, model)


def finishes(jobs: list[JobSpec], policy: str, settings: dict | None = None) -> dict[int, float]:
    res = simulate(Cluster.homogeneous(2, 1), jobs, policy, settings=settings or SETTINGS)
    for rec in res.jobs:
        assert rec.placement == "0:0;1:0"  # cross-server, as the scenario needs
    return {rec.job_id: rec.finish for rec in res.jobs}


# --------------------------------------------------------------------------- 1. the model itself
def test_per_byte_time_and_threshold_by_hand():
    lc = LinearContention(a=0.001, b=1e-9, eta=0.5e-9)
    assert lc.per_byte(1) == approx(1e-9)
    assert lc.per_byte(2) == approx(2.5e-9)  # 2b + eta
    assert lc.per_byte(3) == approx(4.0e-9)  # 3b + 2 eta
    # Eq. 2: a + b M = 0.001 + 1e-9 * 1e8 = 0.101
    assert lc.time(100 * MB) == approx(0.101)
    assert lc.time(100 * MB, 1) == approx(0.101)
    # Eq. 5 with k = 2: a + 2bM + eta M = 0.001 + 0.2 + 0.05 = 0.251
    assert lc.time(100 * MB, 2) == approx(0.251)
    # k = 3: 0.001 + 0.3 + 0.1 = 0.401
    assert lc.time(100 * MB, 3) == approx(0.401)
    assert lc.time(0.0, 3) == approx(0.001)  # latency only
    assert lc.time(100 * MB, 0) == approx(0.101)  # k < 1 is treated as alone
    # Theorem 2: b / (2 (b + eta)) = 1 / (2 * 1.5) = 1/3
    assert lc.adadual_threshold == approx(1 / 3)


def test_default_parameters_are_the_papers():
    lc = LinearContention()
    assert lc.a == 6.69e-4 and lc.b == 8.53e-10 and lc.eta == 2.35e-10
    assert MB == 1e6
    # 8.53 / (2 * (8.53 + 2.35)) = 8.53 / 21.76 = 0.39200367...
    assert lc.adadual_threshold == approx(8.53 / 21.76)
    # VGG-16, 526.4 MB, alone: 6.69e-4 + 8.53e-10 * 526.4e6 = 6.69e-4 + 0.4490192 = 0.4496882
    assert lc.time(526.4 * MB) == approx(0.4496882)
    # 2-way: 6.69e-4 + 526.4e6 * (1.706e-9 + 0.235e-9) = 6.69e-4 + 1.0217424 = 1.0224114
    assert lc.time(526.4 * MB, 2) == approx(1.0224114)


def test_ring_variant_table_one():
    # ring over N = 4: a = 2(N-1) alpha = 6 alpha; b = 2(N-1)/N beta + (N-1)/N gamma = 1.5 beta + 0.75 gamma
    rc = RingContention.from_ring(alpha=1e-5, beta=2e-10, gamma=4e-11, nodes=4, eta=1e-10)
    assert rc.a == approx(6e-5)
    assert rc.b == approx(1.5 * 2e-10 + 0.75 * 4e-11)  # 3.3e-10
    assert rc.eta == 1e-10
    assert rc.per_byte(2) == approx(2 * 3.3e-10 + 1e-10)


# ------------------------------------------------- 2. Theorem 1: two tasks ready at the same time
def test_theorem1_both_ready_together_srsf1_serialises_smaller_first():
    # M1 = 100 MB, M2 = 400 MB, both ready at t = 0. Job 0 has the smaller remaining service
    # (2 GPUs x 0.1 s < 2 x 0.4 s) so its all-reduce goes first.
    # SRSF(1): T1 = b M1 = 0.1; T2 = b (M1 + M2) = 0.5  (Theorem 1, C1 with t = t1)
    jobs = [comm_job(0, 0.0, 100), comm_job(1, 0.0, 400)]
    fin = finishes(jobs, "srsf1")
    assert fin[0] == approx(0.1)
    assert fin[1] == approx(0.5)


@pytest.mark.parametrize("policy", ["srsf2", "srsf3", "srsf"])
def test_theorem1_both_ready_together_two_way_contention(policy):
    # Both start at 0 with k = 2: 400 MB/s each.
    # Job 0: 100 MB / 400 MB/s = 0.25 -> T1 = 2bM1 + eta M1 = 0.2 + 0.05 = 0.25 (Eq. 10a, t = 0)
    # Job 1: moved 100 MB by 0.25, 300 MB left alone at 1000 MB/s = 0.3 -> T2 = 0.55 (Eq. 10b)
    jobs = [comm_job(0, 0.0, 100), comm_job(1, 0.0, 400)]
    fin = finishes(jobs, policy)
    assert fin[0] == approx(0.25)
    assert fin[1] == approx(0.55)


def test_theorem1_adadual_does_not_start_the_larger_one():
    # AdaDUAL: job 0 starts (nothing running); job 1's M_new / M_old = 400 / 100 = 4 >= 1/3 -> wait.
    # Same as SRSF(1): 0.1 and 0.5.
    jobs = [comm_job(0, 0.0, 100), comm_job(1, 0.0, 400)]
    fin = finishes(jobs, "ada-srsf")
    assert fin[0] == approx(0.1)
    assert fin[1] == approx(0.5)


# ---------------------------------------------- 2. Theorem 2: a new task while one is running
# Job 0: 600 MB, ready at 0, alone at 1000 MB/s -> 100 MB moved by t = 0.1, 500 MB left.
# Job 1 arrives at 0.1 with a smaller message.


def test_theorem2_start_now_branch():
    # M_new = 100 MB, M_old remaining = 500 MB: 100/500 = 0.2 < 1/3 -> AdaDUAL starts it at 0.1.
    # 0.1 .. : k = 2, 400 MB/s each. Job 1: 100 MB / 400 = 0.25 -> finishes 0.35.
    # Job 0 moved 100 MB meanwhile: 400 MB left at 0.35, alone: 0.4 s -> finishes 0.75.
    jobs = [comm_job(0, 0.0, 600), comm_job(1, 0.1, 100)]
    ada = finishes(jobs, "ada-srsf")
    assert ada[1] == approx(0.35)
    assert ada[0] == approx(0.75)
    # Blind 2-way contention does the same here.
    assert finishes(jobs, "srsf2") == {k: approx(v) for k, v in ada.items()}
    # SRSF(1) makes job 1 wait: job 0 ends at 0.6, job 1 at 0.6 + 0.1 = 0.7.
    s1 = finishes(jobs, "srsf1")
    assert s1[0] == approx(0.6)
    assert s1[1] == approx(0.7)
    # Theorem 2: starting now gives the smaller sum of completion times (1.1 < 1.3).
    assert ada[0] + ada[1] < s1[0] + s1[1]


def test_theorem2_wait_branch():
    # M_new = 200 MB, M_old remaining = 500 MB: 200/500 = 0.4 >= 1/3 -> AdaDUAL waits.
    # Job 0 ends alone at 0.6; job 1 then runs alone: 0.6 + 0.2 = 0.8.
    jobs = [comm_job(0, 0.0, 600), comm_job(1, 0.1, 200)]
    ada = finishes(jobs, "ada-srsf")
    assert ada[0] == approx(0.6)
    assert ada[1] == approx(0.8)
    assert finishes(jobs, "srsf1") == {k: approx(v) for k, v in ada.items()}
    # SRSF(2): job 1 starts at 0.1 under k = 2: 200 MB / 400 MB/s = 0.5 -> 0.6.
    # Job 0 moved 200 MB meanwhile: 300 MB left at 0.6, alone 0.3 -> 0.9.
    s2 = finishes(jobs, "srsf2")
    assert s2[1] == approx(0.6)
    assert s2[0] == approx(0.9)
    # Theorem 2: waiting is better here (1.4 < 1.5).
    assert ada[0] + ada[1] < s2[0] + s2[1]


def test_adadual_refuses_a_third_and_reevaluates_when_one_ends():
    # Job 0: 600 MB at 0 (alone until 0.1: 500 MB left).
    # Job 1: 100 MB at 0.1: 100/500 = 0.2 < 1/3 -> starts; k = 2 (400 MB/s each).
    # Job 2: 10 MB at 0.15: two all-reduces running -> AdaDUAL refuses (Alg. 2 lines 19-21).
    # Job 1 ends at 0.1 + 100/400 = 0.35; job 0 moved 100 MB in [0.1, 0.35] -> 400 MB left.
    # At 0.35 job 2 is re-evaluated: 10/400 = 0.025 < 1/3 -> starts, k = 2:
    #   10 MB / 400 MB/s = 0.025 -> job 2 finishes 0.375; job 0: 390 MB left at 0.375,
    #   alone 0.39 s -> finishes 0.765.
    jobs = [comm_job(0, 0.0, 600), comm_job(1, 0.1, 100), comm_job(2, 0.15, 10)]
    fin = finishes(jobs, "ada-srsf")
    assert fin[1] == approx(0.35)
    assert fin[2] == approx(0.375)
    assert fin[0] == approx(0.765)


# ------------------------------------------------------ 3. rates change as a third one starts
def test_three_way_contention_piecewise_no_gate():
    # No gate ("srsf" preset). Job 0: 600 MB at 0; job 1: 100 MB at 0.1; job 2: 100 MB at 0.2.
    # [0, 0.1]    k=1, 1000 MB/s: job 0 moves 100 -> 500 left
    # [0.1, 0.2]  k=2, 400 MB/s:  job 0 460 left, job 1 60 left
    # [0.2, 0.44] k=3, 250 MB/s:  job 1 needs 60/250 = 0.24 -> ends 0.44;
    #                             job 0 460-60 = 400 left, job 2 100-60 = 40 left
    # [0.44, 0.54] k=2, 400 MB/s: job 2 needs 40/400 = 0.1 -> ends 0.54; job 0 360 left
    # [0.54, 0.90] k=1: job 0 needs 0.36 -> ends 0.90
    jobs = [comm_job(0, 0.0, 600), comm_job(1, 0.1, 100), comm_job(2, 0.2, 100)]
    fin = finishes(jobs, "srsf")
    assert fin[1] == approx(0.44)
    assert fin[2] == approx(0.54)
    assert fin[0] == approx(0.90)
    assert finishes(jobs, "srsf3") == {k: approx(v) for k, v in fin.items()}


def test_three_jobs_srsf2_third_waits_for_a_slot():
    # Same jobs under SRSF(2): job 2 (ready at 0.2) waits while two run.
    # [0.1, 0.2] k=2: job 0 460 left, job 1 60 left; job 1 ends at 0.2 + 60/400 = 0.35.
    # Job 0 at 0.35: 460 - 60 = 400 left. Job 2 starts at 0.35, k=2 stays:
    #   job 2: 100/400 = 0.25 -> 0.60; job 0: 300 left at 0.60, alone 0.3 -> 0.90.
    jobs = [comm_job(0, 0.0, 600), comm_job(1, 0.1, 100), comm_job(2, 0.2, 100)]
    fin = finishes(jobs, "srsf2")
    assert fin[1] == approx(0.35)
    assert fin[2] == approx(0.60)
    assert fin[0] == approx(0.90)


# ----------------------------------------------------------------------- 4. the latency term a
def test_single_job_iteration_is_compute_plus_a_plus_bM():
    # t_f = 0.01, t_b = 0.02, M = 100 MB, a = 0.005, b = 1e-9:
    # one iteration = 0.01 + 0.02 + 0.005 + 0.1 = 0.135; 3 iterations = 0.405.
    model = ModelProfile("m", 100.0, 1000.0, 1, 0.01, 0.02)
    job = JobSpec(0, 2.0, 2, 3, model)
    res = simulate(
        Cluster.homogeneous(2, 1), [job], "ada-srsf", settings={"a": 0.005, "b": B, "eta": ETA}
    )
    (rec,) = res.jobs
    assert rec.start == 2.0
    assert rec.jct == approx(0.405)
    assert rec.finish == approx(2.405)


def test_single_job_default_parameters():
    # VGG-16 numbers, 2 iterations, Wang's a and b: per iteration
    # 0.0358 + 0.0537 + 6.69e-4 + 8.53e-10 * 526.4e6 = 0.0895 + 0.4496882 = 0.5391882
    model = ModelProfile("vgg16", 526.4, 4527.0, 16, 35.8e-3, 53.7e-3)
    res = simulate(Cluster.homogeneous(2, 1), [JobSpec(0, 0.0, 2, 2, model)], "ada-srsf")
    assert res.jobs[0].jct == approx(2 * 0.5391882)


def test_single_server_job_has_no_communication():
    # 2 GPUs on one server: no all-reduce over the network; 3 x (0.01 + 0.02) = 0.09.
    model = ModelProfile("m", 100.0, 1000.0, 1, 0.01, 0.02)
    res = simulate(
        Cluster.homogeneous(1, 2), [JobSpec(0, 0.0, 2, 3, model)], "ada-srsf", settings=SETTINGS
    )
    assert res.jobs[0].placement == "0:0;0:1"
    assert res.jobs[0].jct == approx(0.09)


def test_latency_is_not_slowed_by_contention():
    # a = 0.01, both 2-GPU all-reduces (100 MB, 400 MB) ready at 0, no gate.
    # Both pay a = 0.01 first, then share at 400 MB/s:
    # job 0: 0.01 + 100/400 = 0.26  (= Eq. 5: a + 2bM + eta M = 0.01 + 0.2 + 0.05)
    # job 1: moved 100 MB by 0.26, 300 MB alone = 0.3 -> 0.56
    jobs = [comm_job(0, 0.0, 100), comm_job(1, 0.0, 400)]
    fin = finishes(jobs, "srsf", {"a": 0.01, "b": B, "eta": ETA})
    assert fin[0] == approx(0.26)
    assert fin[1] == approx(0.56)


# ------------------------------------------- η < 0: links that share better than additive (#30)
def test_negative_eta_is_allowed_while_b_plus_eta_is_positive():
    # The testbed measures η/b ≈ −0.1 (docs/models.md, "η < 0"). With b = 1e-9, η = −0.2e-9:
    # k = 2 per byte 2b + η = 1.8e-9; both 100 MB all-reduces start at 0 under SRSF(2) and
    # finish together at 100e6 · 1.8e-9 = 0.18 s (not 0.2 s, the additive share).
    jobs = [comm_job(0, 0.0, 100), comm_job(1, 0.0, 100)]
    fin = finishes(jobs, "srsf2", {"a": 0.0, "b": B, "eta": -0.2e-9})
    assert fin[0] == approx(0.18) and fin[1] == approx(0.18)
    # Theorem 2's threshold b / (2(b + η)) = 1 / 1.6 = 0.625
    assert LinearContention(a=0.0, b=B, eta=-0.2e-9).adadual_threshold == approx(0.625)
    # AdaDUAL runs with it (k = 2 both ways: 100/100 = 1 ≥ 0.625, so the second waits)
    fin = finishes(jobs, "ada-srsf", {"a": 0.0, "b": B, "eta": -0.2e-9})
    assert sorted(fin.values()) == [approx(0.1), approx(0.2)]


@pytest.mark.parametrize("eta", ["-1e-9", "-2e-9"])
def test_eta_at_or_below_minus_b_is_refused(eta):
    from ddlsched.errors import InputError
    from ddlsched.settings import Settings

    with pytest.raises(InputError, match=r"must be ≥ 0 or > −b") as info:
        Settings.from_mapping({"b": "1e-9", "eta": eta})
    assert info.value.field == "eta"
