"""The artifacts' NSGA-II as Pollux's search (policies/pollux_nsga.py, ``pollux_search=nsga2``):
the warm start's rank pairing, seeded determinism, feasibility, and the run-level setting."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
from test_pollux_search import crowded_problem, toy

from ddlsched.api import Settings, build_simulator
from ddlsched.core.cluster_io import load_cluster
from ddlsched.errors import InputError
from ddlsched.policies import pollux_nsga
from ddlsched.policies.pollux import Pollux
from ddlsched.policies.pollux_nsga import NSGA2Search, adapt_by_rank
from ddlsched.policies.pollux_search import objective, search, violations
from ddlsched.workloads.presets import load_workload


def test_the_warm_start_pairs_common_jobs_by_rank_as_the_artifact() -> None:
    # last round's order 3, 5, 7 (rows A, B, C); this round's order 5, 3, 9: the common jobs
    # are 3, 5 there and 5, 3 here, so job 5 gets job 3's rows and job 3 job 5's (the
    # artifact's _adapt_prev_states pairs ranks, not ids); 7 is gone, 9 is new (no GPUs)
    prev = np.array([[[1, 0], [0, 2], [3, 3]], [[2, 0], [0, 1], [1, 1]]])  # 2 states
    got = adapt_by_rank((3, 5, 7), prev, (5, 3, 9))
    assert got.shape == (2, 3, 2)
    assert (got[:, 0] == prev[:, 0]).all()  # job 5 (rank 0 here) ← job 3 (rank 0 there)
    assert (got[:, 1] == prev[:, 1]).all()  # job 3 ← job 5
    assert (got[:, 2] == 0).all()  # job 9 starts with nothing
    # the same order in both rounds: each job keeps its own rows
    same = adapt_by_rank((3, 5, 7), prev, (3, 5, 7))
    assert (same == prev).all()


def test_the_same_seed_gives_the_same_allocations_and_every_one_is_feasible() -> None:
    problems = [crowded_problem(s) for s in range(3)]

    def chain(seed: int) -> list[np.ndarray]:
        nsga = NSGA2Search(seed, pop_size=16, generations=6)
        return [nsga(p) for p in problems]

    first, again, other = chain(5), chain(5), chain(6)
    for p, a, b in zip(problems, first, again, strict=True):
        assert violations(p, a) == []
        assert (a == b).all()
    assert any((a != c).any() for a, c in zip(first, other, strict=True))


def test_nsga2_reaches_the_optimum_of_a_small_round() -> None:
    p = toy()
    best = objective(p, search(p))
    got = NSGA2Search(1)(p)
    assert violations(p, got) == []
    assert objective(p, got) == pytest.approx(best, rel=1e-12)


def _two_jobs():
    jobs = load_workload("luo24-30", seed=4)
    return [dataclasses.replace(jobs[i], arrival=0.0) for i in (0, 4)]


def test_pollux_runs_with_a_given_search_and_realises_its_allocations() -> None:
    chosen: list[tuple] = []
    nsga = NSGA2Search(3, pop_size=12, generations=4)

    def recording(p):
        alloc = nsga(p)
        chosen.append((p, alloc))
        return alloc

    sim = build_simulator(load_cluster("luo24"), _two_jobs(), Pollux(search=recording), seed=3)
    res = sim.run()
    assert len(res.jobs) == 2 and len(chosen) >= 3
    for p, alloc in chosen:
        assert violations(p, alloc) == []
    # each round starts from what the last one chose (the engine realised it exactly)
    for (p0, a0), (p1, _) in zip(chosen, chosen[1:], strict=False):
        row = {jid: a0[i] for i, jid in enumerate(p0.job_ids)}
        for i, jid in enumerate(p1.job_ids):
            if jid in row:
                assert (p1.current[i] == row[jid]).all()


def test_the_setting_selects_nsga2_seeded_by_the_run(monkeypatch) -> None:
    made: list[int] = []

    class Small(NSGA2Search):
        def __init__(self, seed: int) -> None:
            made.append(seed)
            super().__init__(seed, pop_size=12, generations=4)

    monkeypatch.setattr(pollux_nsga, "NSGA2Search", Small)

    def run(seed: int) -> list[tuple[int, float]]:
        sim = build_simulator(
            load_cluster("luo24"),
            _two_jobs(),
            "pollux",
            seed=seed,
            settings=Settings(pollux_search="nsga2"),
        )
        return [(j.job_id, j.finish) for j in sim.run().jobs]

    assert run(7) == run(7)
    assert made == [7, 7]
    with pytest.raises(InputError, match="pollux_search"):
        Settings.from_mapping({"pollux_search": "genetic"})


def test_without_pymoo_nsga2_is_refused_in_one_line(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pymoo" else real(name, *a)
    )
    with pytest.raises(InputError, match=r"pip install 'ddlsched\[nsga\]'"):
        build_simulator(
            load_cluster("luo24"), _two_jobs(), "pollux", settings=Settings(pollux_search="nsga2")
        )


def test_the_id_warm_start_gives_each_job_its_own_rows() -> None:
    from ddlsched.policies.pollux_nsga import adapt_by_id

    prev = np.array([[[1, 0], [0, 2], [3, 3]]])
    got = adapt_by_id((3, 5, 7), prev, (5, 3, 9))
    assert (got[0, 0] == prev[0, 1]).all() and (got[0, 1] == prev[0, 0]).all()
    assert (got[0, 2] == 0).all()
    with pytest.raises(ValueError, match="warm_start"):
        NSGA2Search(0, warm_start="best")


def test_the_repair_keeps_the_artifacts_limits() -> None:
    from ddlsched.policies.pollux_nsga import MAX_NODES, _classes
    from ddlsched.policies.pollux_search import RoundProblem

    Round, _, _, JobRepair = _classes()
    n = 20  # nodes of one GPU; job 0 may take all of them, job 1 at most 2 GPUs
    r = np.arange(n + 1)
    p = RoundProblem(
        num_nodes=n,
        gpus_per_node=1,
        job_ids=(0, 1),
        current=np.zeros((2, n), dtype=np.int64),
        max_replicas=np.array([n, 2]),
        single=np.where(r == 1, 1.0, 0.0)[None].repeat(2, 0),
        multi=np.where(r >= 2, r**0.8, 0.0)[None].repeat(2, 0),
        restart=np.ones(2),
        scale=1.0,
    )
    prob = Round(p, np.arange(2))
    X = np.ones((3, 2 * n), dtype=np.int64)  # both jobs one GPU on every node
    got = prob.states(JobRepair()._do(prob, X, random_state=np.random.default_rng(0)))
    for s in got:
        assert np.count_nonzero(s[0]) <= MAX_NODES  # at most 16 nodes a job
        assert s[1].sum() == 0  # job 1 is multi-node where job 0 already is: dropped
        assert (s.sum(axis=0) <= 1).all()  # node capacity
