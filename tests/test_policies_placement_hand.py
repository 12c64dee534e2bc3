"""Placement rules (FF, LS, RAND, LWF-κ; Wang Alg. 1) on a hand-built cluster state.

Cluster: 3 servers x 4 GPUs, 16384 MB each. Global GPU ids: server 0 = 0..3, server 1 = 4..7,
server 2 = 8..11. Residents (t_f + t_b = 1 s, no network traffic; a GPU's load L_g is the sum of
the remaining service G x iterations x 1 s of its residents):

    job 100 on GPU 0       : 1 GPU x 12 iterations -> L_0 = 12            (4000 MB)
    job 101 on GPU 1       : 1 x 2                 -> L_1 = 2             (4000 MB)
    job 102 on GPUs 4..7   : 4 GPUs x 1 iteration  -> L_4..L_7 = 4 each   (4000 MB)
    job 103 on GPU 8       : 1 x 8                 -> L_8 = 8             (4000 MB)
    job 104 on GPU 9       : 1 x 1                 -> L_9 = 1             (14000 MB)
    GPUs 2, 3, 10, 11 empty (load 0)

Server loads: L_S0 = 12 + 2 = 14, L_S1 = 16, L_S2 = 8 + 1 = 9.
A new job needing 4000 MB per worker fits everywhere except GPU 9 (16384 - 14000 = 2384 MB free).
"""

from __future__ import annotations

import pytest

from ddlsched.api import Settings, build_simulator
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.state import JobState
from ddlsched.policies.placement import (
    FirstFit,
    LeastWorkloadFirst,
    ListScheduling,
    RandomPlacement,
    make_placement,
)

RESIDENTS = {  # job id -> (GPUs, iterations, memory)
    100: ((0,), 12, 4000.0),
    101: ((1,), 2, 4000.0),
    102: ((4, 5, 6, 7), 1, 4000.0),
    103: ((8,), 8, 4000.0),
    104: ((9,), 1, 14000.0),
}


def spec(job_id: int, gpus: int, iterations: int, memory: float, arrival: float = 0.0) -> JobSpec:
    return JobSpec(
        job_id, arrival, gpus, iterations, ModelProfile("m", 10.0, memory, 1, 0.25, 0.75)
    )


def loaded_sim(seed: int = 0, extra: list[JobSpec] = (), policy: str = "ada-srsf"):
    """A simulator with the residents above started on their GPUs (time 0, nothing run yet)."""
    specs = [spec(jid, len(g), it, mem) for jid, (g, it, mem) in RESIDENTS.items()]
    sim = build_simulator(
        Cluster.homogeneous(3, 4), specs + list(extra), policy, seed=seed, settings=Settings()
    )
    for js in sim.jobs:
        if js.job_id in RESIDENTS:
            js.iterations_left = js.spec.iterations
            sim.queue.append(js)
            sim.start(js, RESIDENTS[js.job_id][0])
    return sim


def new_job(gpus: int, memory: float = 4000.0) -> JobState:
    return JobState(spec=spec(1, gpus, 5, memory))


def test_preloaded_state_is_as_described():
    sim = loaded_sim()
    loads = [sim.gpu_load(g) for g in range(12)]
    assert loads == pytest.approx([12, 2, 0, 0, 4, 4, 4, 4, 8, 1, 0, 0])
    assert [sim.fits(new_job(1), g) for g in range(12)] == [True] * 9 + [False] + [True] * 2


@pytest.mark.parametrize(
    "n, expected",
    [
        (1, (0,)),
        (3, (0, 1, 2)),
        # 11 GPUs available (all but 9): the first 10 in cluster order
        (10, (0, 1, 2, 3, 4, 5, 6, 7, 8, 10)),
        (11, (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11)),
        (12, None),
    ],
)
def test_first_fit(n, expected):
    assert FirstFit().select(new_job(n), loaded_sim()) == expected


def test_first_fit_respects_memory():
    # 13000 MB per worker: only the empty GPUs 2, 3, 10, 11 have room.
    sim = loaded_sim()
    assert FirstFit().select(new_job(3, memory=13000.0), sim) == (2, 3, 10)
    assert FirstFit().select(new_job(5, memory=13000.0), sim) is None


@pytest.mark.parametrize(
    "n, expected",
    [
        (1, (2,)),  # load 0, lowest index
        (4, (2, 3, 10, 11)),  # the four empty GPUs, across two servers
        (5, (1, 2, 3, 10, 11)),  # then GPU 1 (load 2); GPU 9 (load 1) does not fit
        (6, (1, 2, 3, 4, 10, 11)),  # then the first GPU with load 4
        (12, None),
    ],
)
def test_list_scheduling(n, expected):
    assert ListScheduling().select(new_job(n), loaded_sim()) == expected


@pytest.mark.parametrize(
    "kappa, n, expected",
    [
        # n <= kappa: exactly LS
        (1, 1, (2,)),
        (4, 4, (2, 3, 10, 11)),
        (8, 5, (1, 2, 3, 10, 11)),
        # n > kappa: servers by load S2 (9) < S0 (14) < S1 (16); each server's available GPUs
        # by load: S2 -> 10, 11, 8 (9 does not fit); S0 -> 2, 3, 1, 0; S1 -> 4, 5, 6, 7
        (1, 2, (10, 11)),
        (1, 3, (8, 10, 11)),
        (1, 4, (2, 8, 10, 11)),  # LS would give (2, 3, 10, 11)
        (4, 5, (2, 3, 8, 10, 11)),
        (1, 8, (0, 1, 2, 3, 4, 8, 10, 11)),
        (1, 11, (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11)),
        (1, 12, None),
        (12, 12, None),
    ],
)
def test_least_workload_first(kappa, n, expected):
    assert LeastWorkloadFirst(kappa).select(new_job(n), loaded_sim()) == expected


def test_make_placement_names():
    assert make_placement("lwf") == LeastWorkloadFirst(1)
    assert make_placement("lwf", kappa=3) == LeastWorkloadFirst(3)
    assert make_placement("LWF-4") == LeastWorkloadFirst(4)
    assert make_placement("ff") == FirstFit()
    assert make_placement("ls") == ListScheduling()
    assert make_placement("rand") == RandomPlacement()
    with pytest.raises(KeyError):
        make_placement("lwf-0")


def test_lwf_counts_jobs_placed_earlier_in_the_same_pass():
    # Alg. 1 line 6: once a job is placed its workload counts on its GPUs. Five queued 1-GPU
    # jobs (service 1 x 5 x 1 = 5 each, equal SRSF keys -> by id) under LWF-1:
    # job 1 -> GPU 2 (0); job 2 -> GPU 3 (0); job 3 -> GPU 10; job 4 -> GPU 11;
    # job 5: loads now 12, 2, 5, 5, 4.., 8, -, 5, 5 -> GPU 1 (load 2).
    extra = [spec(i, 1, 5, 4000.0) for i in range(1, 6)]
    sim = loaded_sim(extra=extra)
    for js in sim.jobs:
        if js.job_id < 100:
            js.iterations_left = js.spec.iterations
            sim.queue.append(js)
    sim.policy.schedule(sim)
    placed = {js.job_id: js.gpus for js in sim.jobs if js.job_id < 100}
    assert placed == {1: (2,), 2: (3,), 3: (10,), 4: (11,), 5: (1,)}
    assert sim.queue == []


def test_random_is_seeded_and_valid():
    picks = []
    for seed in range(20):
        a = RandomPlacement().select(new_job(3), loaded_sim(seed=seed))
        b = RandomPlacement().select(new_job(3), loaded_sim(seed=seed))
        assert a == b  # same seed, same choice
        assert len(a) == 3 and len(set(a)) == 3 and list(a) == sorted(a)
        assert 9 not in a  # GPU 9 has no room
        assert all(0 <= g < 12 for g in a)
        picks.append(a)
    assert len(set(picks)) > 1  # the seed matters
    assert RandomPlacement().select(new_job(12), loaded_sim()) is None


def test_lwf_sees_the_current_remaining_workload():
    # 1 server x 2 GPUs, t_f + t_b = 1 s, no network. Job 0 (10 iterations) at 0 -> GPU 0;
    # job 1 (8 iterations) at 4 -> GPU 1 (load 0 < GPU 0's 6). Job 2 (2 iterations) at 5.5:
    # current loads: GPU 0: 10 - 5.5 = 4.5; GPU 1: 8 - 1.5 = 6.5 -> GPU 0 (the initial
    # services 10 vs 8 would have chosen GPU 1).
    # On GPU 0 job 0 is in iteration 6 [5, 6]; at 6 job 2 (2) beats job 0 (4): job 2 [6, 8],
    # job 0 [8, 12]. Job 1 alone on GPU 1: [4, 12].
    jobs = [spec(0, 1, 10, 1000.0, 0.0), spec(1, 1, 8, 1000.0, 4.0), spec(2, 1, 2, 1000.0, 5.5)]
    res = build_simulator(Cluster.homogeneous(1, 2), jobs, "ada-srsf").run()
    recs = {r.job_id: r for r in res.jobs}
    assert [recs[i].placement for i in range(3)] == ["0:0", "0:1", "0:0"]
    assert recs[2].finish == pytest.approx(8.0)
    assert recs[0].finish == pytest.approx(12.0)
    assert recs[1].finish == pytest.approx(12.0)
