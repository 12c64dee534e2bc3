"""Yu et al.'s planners (Alg. 1–3 and the §7 baselines) on small clusters, worked by hand.

Model for every test (ξ2 = 0: no per-server overhead, so durations are round numbers):

    b_e = 8 Gb/s = 1e9 B/s, b_i = 80 Gb/s = 1e10 B/s, C = 1e10 B/s, ξ1 = 1, α = 0.5

Job profiles (ρ̂ = F · τ, Eq. 8):

    FLAT  m = 0 (no ring traffic), compute 0.1 s       → τ = 0.1 on any GPU set
    ONE   1 GPU, compute 0.1 s                          → τ = 0.1
    TWO   2 GPUs, m = 200 MB → chunk 100e6 B, compute 0.07 s
            one server:  0.07 + 2·1e8/1e10 (0.02) + 1e8/1e10 (0.01)  = 0.10
            two servers: 0.07 + 2·1e8/1e9  (0.2)  + 0.01             = 0.28  (k = 1)
                         0.07 + 0.2·f(2) = 0.2·2.5 (0.5) + 0.01      = 0.58  (k = 2)
    LIGHT 2 GPUs, m = 20 MB → chunk 10e6 B, compute 0.097 s
            one server:  0.097 + 0.002 + 0.001 = 0.100;  two servers: 0.097 + 0.02 + 0.001 = 0.118

so with F = 100 (ONE, FLAT) ρ̂ = 10, and with F = 200 ρ̂(TWO) = 20 on one server, 56 across two,
ρ̂(LIGHT) = 20 on one server, 23.6 across two.
"""

from __future__ import annotations

import numpy as np
import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster, Server
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError
from ddlsched.perf.rar import RarModel
from ddlsched.planning import Estimator, PlannerParams, PlanningError, SjfBco, Timeline
from ddlsched.planning.plan import list_schedule, place_job
from ddlsched.planning.planners import BisectedBaseline, make_planner
from ddlsched.planning.rules import FaFfp, FirstFitRule, Lbsgf, ListSchedulingRule, RandomRule

MODEL = RarModel(xi1=1.0, xi2=0.0, alpha=0.5, reduction_speed=1e10)
SETTINGS = {"xi1": 1.0, "xi2": 0.0, "alpha": 0.5, "reduction_speed": 1e10}
FLAT = ModelProfile("flat", 0.0, 1000.0, 1, 0.05, 0.05)
ONE = ModelProfile("one", 0.0, 1000.0, 1, 0.05, 0.05)
TWO = ModelProfile("two", 200.0, 1000.0, 1, 0.03, 0.04)
LIGHT = ModelProfile("light", 20.0, 1000.0, 1, 0.04, 0.057)
BIG = 1e6  # a θ that excludes nothing


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-9, abs=1e-9)


def cluster(servers: int, gpus: int) -> Cluster:
    return Cluster.homogeneous(servers, gpus, network_bandwidth_gbps=8.0, intra_bandwidth_gbps=80.0)


def spec(job_id: int, gpus: int, iterations: int, profile: ModelProfile) -> JobSpec:
    return JobSpec(job_id, 0.0, gpus, iterations, profile)


def flat(job_id: int, gpus: int) -> JobSpec:
    return spec(job_id, gpus, 100, FLAT)  # ρ̂ = 10 anywhere


def place(
    s: JobSpec, rule, tl: Timeline, theta: float = BIG
) -> tuple[tuple[int, ...], float, float] | None:
    e = place_job(s, rule, tl, Estimator(tl.cluster, MODEL), theta, 1.0)
    return None if e is None else (e.gpus, e.start, e.end)


# --------------------------------------------------------------------------- ρ̂ (Eq. 8 · F)
def test_estimator_by_hand():
    cl = cluster(2, 2)  # GPUs 0, 1 | 2, 3
    est = Estimator(cl, MODEL)
    two = spec(0, 2, 200, TWO)
    assert est.rho(two, np.array([0, 1])) == approx(20.0)  # 200 · 0.10
    assert est.rho(two, np.array([1, 2])) == approx(56.0)  # 200 · 0.28
    # start mode: one cross-server job already planned on server 0 → p = 1 + 1 = 2 → 200·0.58
    assert est.rho(two, np.array([1, 2]), np.array([1, 0])) == approx(116.0)
    # ... but a single-server placement ignores it
    assert est.rho(two, np.array([0, 1]), np.array([1, 0])) == approx(20.0)
    assert est.rho_lower(two) == approx(20.0)
    assert est.rho_by_servers(two, 2) == approx(56.0)
    assert est.rho(spec(1, 1, 100, ONE), np.array([3])) == approx(10.0)
    iso = Estimator(cl, MODEL, "isolated")
    assert iso.rho(two, np.array([1, 2]), np.array([1, 1])) == approx(56.0)  # p = 1 always
    with pytest.raises(ValueError):
        Estimator(cl, MODEL, "bogus")


# --------------------------------------------------------------------------- FA-FFP (Alg. 2)
def test_faffp_packs_onto_the_partly_used_server():
    # 2 × 4 (GPUs 0–3 | 4–7). X holds GPUs 0, 1 for 10 s (U = 10). Idle GPUs all have U = 0;
    # ties in cluster order → (2, 3) on server 0, next to X, at once.
    tl = Timeline(cluster(2, 4))
    tl.commit(flat(0, 2), np.array([0, 1]), 10.0)
    assert place(flat(1, 2), FaFfp(), tl) == ((2, 3), 0.0, approx(10.0))
    # the next pair: server 0 is full now → (4, 5)
    assert place(flat(2, 2), FaFfp(), tl) == ((4, 5), 0.0, approx(10.0))


def test_faffp_least_u_first_and_theta_filter():
    # no job running; U = [5, 0, 3, 0 | 1, 0, 0, 2]
    cl = cluster(2, 4)
    tl = Timeline(cl)
    tl.U[:] = [5, 0, 3, 0, 1, 0, 0, 2]
    rule = FaFfp()
    # least U, ties in cluster order: the zeros 1, 3, 5, 6, then GPU 4 (U = 1)
    assert list(rule.candidates(flat(0, 5), tl, BIG)) == [1, 3, 5, 6, 4, 7, 2, 0]
    assert place(flat(0, 5), rule, tl, theta=100) == ((1, 3, 5, 6, 4), 0.0, approx(10.0))
    # θ = 12, ρ̂ = 10: GPUs with U + 10 > 12 (U = 5, 3) are out; U = 2 is in (12 ≤ 12)
    tl = Timeline(cl)
    tl.U[:] = [5, 0, 3, 0, 1, 0, 0, 2]
    assert place(flat(0, 6), rule, tl, theta=12) == ((1, 3, 5, 6, 4, 7), 0.0, approx(10.0))
    # 7 GPUs within θ = 12 do not exist and nothing runs to wait for → infeasible
    tl = Timeline(cl)
    tl.U[:] = [5, 0, 3, 0, 1, 0, 0, 2]
    assert place(flat(0, 7), rule, tl, theta=12) is None


def test_faffp_waits_for_the_next_planned_exit():
    # 1 × 4. X holds 0, 1, 2 for 10 s. A 2-GPU job finds only GPU 3 → waits; at 10 the GPUs
    # have U = [10, 10, 10, 0] → least U: (3, 0), planned 10..20.
    cl = cluster(1, 4)
    tl = Timeline(cl)
    tl.commit(flat(0, 3), np.array([0, 1, 2]), 10.0)
    assert place(flat(1, 2), FaFfp(), tl) == ((3, 0), approx(10.0), approx(20.0))
    assert tl.now == approx(10.0)
    # same with θ = 15: after the wait GPUs 0–2 have U + 10 = 20 > 15, only GPU 3 qualifies,
    # and no planned job is left to wait for → None (Alg. 2 line 12)
    tl = Timeline(cl)
    tl.commit(flat(0, 3), np.array([0, 1, 2]), 10.0)
    assert place(flat(1, 2), FaFfp(), tl, theta=15) is None
    assert tl.now == approx(10.0)


def test_place_job_rechecks_theta_with_the_chosen_gpus_estimate():
    # 2 × 2, ONE (ρ̂ 10) on GPU 0 for 0..10. TWO at θ = 40: the one-server bound 20 admits
    # GPUs 1, 2, 3, FA-FFP picks (1, 2) – across servers ρ̂ = 56 > 40: rejected, wait.
    # At 10 GPU 0 has U = 10, GPUs 1–3 U = 0 → (1, 2) again → rejected; nothing left → None.
    cl = cluster(2, 2)
    tl = Timeline(cl)
    tl.commit(spec(0, 1, 100, ONE), np.array([0]), 10.0)
    assert place(spec(1, 2, 200, TWO), FaFfp(), tl, theta=40) is None
    # with θ = 56 the cross-server choice is accepted at once, with its own ρ̂ = 56
    tl = Timeline(cl)
    tl.commit(spec(0, 1, 100, ONE), np.array([0]), 10.0)
    assert place(spec(1, 2, 200, TWO), FaFfp(), tl, theta=56) == ((1, 2), 0.0, approx(56.0))
    assert list(tl.cross) == [1, 1]  # a planned cross-server job on both servers


# --------------------------------------------------------------------------- LBSGF (Alg. 3)
def test_lbsgf_opens_the_least_loaded_server():
    # same state as the FA-FFP packing test: X on 0, 1 for 10 s → server loads ΣU/O_s =
    # 20/4 = 5 and 0 → LBSGF (λ = 1, needs 2 GPUs = one server) takes server 1: (4, 5)
    tl = Timeline(cluster(2, 4))
    tl.commit(flat(0, 2), np.array([0, 1]), 10.0)
    assert place(flat(1, 2), Lbsgf(), tl) == ((4, 5), 0.0, approx(10.0))


def test_lbsgf_ranks_by_mean_u_per_gpu():
    # server 0: 4 GPUs with U = 2 (ΣU = 8, ΣU/O = 2); server 1: 2 GPUs with U = 3 (ΣU = 6,
    # ΣU/O = 3). By ΣU/O server 0 is least busy → (0, 1); ranking by ΣU would pick (4, 5).
    cl = Cluster(servers=(Server(num_gpus=4), Server(num_gpus=2)))
    tl = Timeline(cl)
    tl.U[:] = [2, 2, 2, 2, 3, 3]
    assert place(flat(0, 2), Lbsgf(), tl) == ((0, 1), 0.0, approx(10.0))


@pytest.mark.parametrize(
    ("lam", "expected"),
    [
        (1.0, (2, 3)),  # needs 2 → server 1 alone (loads 5, 1, 3): GPUs 2 (U 0), 3 (U 2)
        (1.5, (2, 4)),  # needs 3 → servers 1, 2: least U of 2 (0), 3 (2), 4 (1), 5 (5) → 2, 4
        (2.0, (2, 4)),  # needs 4 → servers 1, 2 (2 + 2 ≥ 4): same
        (3.0, (2, 4)),  # needs 6 → all servers; server 0's GPUs have U = 5
    ],
)
def test_lbsgf_lambda_selects_more_servers(lam, expected):
    # 3 × 2; U = [5, 5 | 0, 2 | 1, 5] → loads ΣU/2 = 5, 1, 3 → order 1, 2, 0
    tl = Timeline(cluster(3, 2))
    tl.U[:] = [5, 5, 0, 2, 1, 5]
    assert place(flat(0, 2), Lbsgf(lam), tl) == (expected, 0.0, approx(10.0))


def test_lbsgf_rejects_lambda_below_one():
    with pytest.raises(ValueError):
        Lbsgf(0.5)


def test_lbsgf_waits_although_other_servers_are_free():
    # 2 × 2. X holds server 0 (GPUs 0, 1) for 4 s → loads 4 and, with U = 5 set on the idle
    # server 1, 5. LBSGF chooses server 0 and waits for X: (0, 1) planned 4..14.
    # FA-FFP on the same state takes the free server 1 at once.
    def state() -> Timeline:
        tl = Timeline(cluster(2, 2))
        tl.commit(flat(0, 2), np.array([0, 1]), 4.0)
        tl.U[2:4] = 5.0
        return tl

    assert place(flat(1, 2), Lbsgf(), state()) == ((0, 1), approx(4.0), approx(14.0))
    assert place(flat(1, 2), FaFfp(), state()) == ((2, 3), 0.0, approx(10.0))


def test_lbsgf_capacity_is_per_cluster():
    # one rule object used on two clusters with the same number of servers but swapped sizes
    # must not keep the first cluster's capacities. Cluster B: server 0 = 2 GPUs with U = 3
    # (load 3), server 1 = 4 GPUs with U = 2 (load 2) → server 1: (2, 3).
    rule = Lbsgf()
    a = Cluster(servers=(Server(num_gpus=4), Server(num_gpus=2)))
    assert place(flat(0, 2), rule, Timeline(a)) == ((0, 1), 0.0, approx(10.0))
    b = Cluster(servers=(Server(num_gpus=2), Server(num_gpus=4)))
    tl = Timeline(b)
    tl.U[:] = [3, 3, 2, 2, 2, 2]
    assert place(flat(0, 2), rule, tl) == ((2, 3), 0.0, approx(10.0))


# --------------------------------------------------------------------------- FF, LS, RAND (§7)
def test_ff_is_first_fit_and_ls_is_least_u():
    # 1 × 4, no job running, U = [3, 0, 2, 0], ρ̂ = 10
    def state() -> Timeline:
        tl = Timeline(cluster(1, 4))
        tl.U[:] = [3, 0, 2, 0]
        return tl

    assert place(flat(0, 2), FirstFitRule(), state()) == ((0, 1), 0.0, approx(10.0))
    assert place(flat(0, 2), ListSchedulingRule(), state()) == ((1, 3), 0.0, approx(10.0))
    # θ = 12.5: GPU 0 (3 + 10 > 12.5) is out, GPU 2 (2 + 10 ≤ 12.5) is in
    assert place(flat(0, 2), FirstFitRule(), state(), theta=12.5) == ((1, 2), 0.0, approx(10.0))
    assert place(flat(0, 2), ListSchedulingRule(), state(), 12.5) == ((1, 3), 0.0, approx(10.0))


def test_ff_crosses_servers_in_gpu_order():
    # 2 × 2, GPU 1 busy: the first two free GPUs are 0 and 2 (servers 0 and 1)
    tl = Timeline(cluster(2, 2))
    tl.commit(flat(0, 1), np.array([1]), 10.0)
    assert place(flat(1, 2), FirstFitRule(), tl) == ((0, 2), 0.0, approx(10.0))


def test_random_rule_draws_only_eligible_gpus():
    tl = Timeline(cluster(2, 4))
    tl.commit(flat(0, 2), np.array([0, 5]), 10.0)  # busy
    tl.U[[1, 2]] = 50.0  # over the bound below
    got = RandomRule(np.random.default_rng(7)).candidates(flat(1, 2), tl, 40.0)
    assert sorted(got.tolist()) == [3, 4, 6, 7]
    again = RandomRule(np.random.default_rng(7)).candidates(flat(1, 2), tl, 40.0)
    assert got.tolist() == again.tolist()  # seeded


def test_list_schedule_uses_a_rule_per_job():
    # 2 × 4: job 0 (2 GPUs) FA-FFP → (0, 1); job 1 (2 GPUs) LBSGF → loads 5, 0 → (4, 5);
    # job 2 (2 GPUs) FA-FFP → the idle GPUs of server 0 first: (2, 3)
    cl = cluster(2, 4)
    jobs = [flat(0, 2), flat(1, 2), flat(2, 2)]
    rules = {0: FaFfp(), 1: Lbsgf(), 2: FaFfp()}
    entries = list_schedule(jobs, rules, cl, Estimator(cl, MODEL), BIG, 1.0)
    assert entries is not None
    assert [e.gpus for e in entries] == [(0, 1), (4, 5), (2, 3)]
    assert [e.start for e in entries] == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- bisection over θ
# Instance B (2 × 2, input order): j0 ONE F=100 (ρ̂ 10), j1 TWO F=200 (20 / 56), j2 ONE F=100.
#
# FF at θ:  j0 → GPU 0, 0..10.  j1: first fit (1, 2) crosses servers, ρ̂ 56:
#   θ ≥ 56: j1 on (1, 2) 0..56, j2 on GPU 3 0..10                              → makespan 56
#   30 ≤ θ < 56: rejected; wait to 10; GPU 0 now has U 10 and 10 + 20 ≤ θ →
#               j1 on (0, 1) 10..30 (one server), j2 on GPU 2 10..20          → makespan 30
#   θ < 30: at 10, U0 + 20 > θ → (1, 2) again, rejected, nothing left       → infeasible
# Bisection, T = 120 (Alg. 1: a smaller makespan moves right, anything else left):
#   θ = 60 → 56 < 120 (right = 59); θ = 30 → 30 < 56 (right = 29); θ = 15, 22, 26, 28, 29
#   infeasible (left → 30) → θ = 30, makespan 30, 7 trials.
# LS picks least-U GPUs, i.e. (1, 2) at 0 and again at 10: feasible only for θ ≥ 56.
#   θ = 60 → 56 (right 59); 30 → ∅ (left 31); 45 → ∅ (46); 52 → ∅ (53); 56 → 56, not smaller
#   (left 57); 58, 59 → 56 (left 60) → θ = 60, makespan 56.
def instance_b() -> tuple[Cluster, list[JobSpec]]:
    return cluster(2, 2), [spec(0, 1, 100, ONE), spec(1, 2, 200, TWO), spec(2, 1, 100, ONE)]


def test_bisection_ff_by_hand():
    cl, jobs = instance_b()
    plan = BisectedBaseline("yu-ff", FirstFitRule(), PlannerParams(horizon=120)).plan(
        cl, jobs, MODEL, 0
    )
    assert plan.params["theta"] == 30.0
    assert plan.params["trials"] == 7.0
    assert plan.params["horizon"] == 120.0 and plan.params["extended"] == 0.0
    assert plan.makespan == approx(30.0)
    got = [(e.job_id, e.gpus, e.start, e.end) for e in plan.entries]
    assert got == [
        (0, (0,), 0.0, approx(10.0)),
        (1, (0, 1), approx(10.0), approx(30.0)),
        (2, (2,), approx(10.0), approx(20.0)),
    ]


def test_bisection_ls_by_hand():
    cl, jobs = instance_b()
    plan = make_planner("yu-ls", PlannerParams(horizon=120)).plan(cl, jobs, MODEL, 0)
    assert plan.params["theta"] == 60.0
    assert plan.makespan == approx(56.0)
    got = [(e.job_id, e.gpus, e.start, e.end) for e in plan.entries]
    assert got == [
        (0, (0,), 0.0, approx(10.0)),
        (1, (1, 2), 0.0, approx(56.0)),
        (2, (3,), 0.0, approx(10.0)),
    ]


def test_rand_uses_theta_t():
    cl, jobs = instance_b()
    plan = make_planner("yu-rand", PlannerParams(horizon=120)).plan(cl, jobs, MODEL, 3)
    assert plan.params["theta"] == 120.0
    assert sorted(e.job_id for e in plan.entries) == [0, 1, 2]
    again = make_planner("yu-rand", PlannerParams(horizon=120)).plan(cl, jobs, MODEL, 3)
    assert again.entries == plan.entries


def test_planned_ff_executes_as_planned():
    # the engine runs instance B's FF plan: j0 on 0:0 for 10 s; j1 starts when GPU 0 frees,
    # alone on server 0 → 20 s → ends 30; j2 (after j1 in the plan) starts at 10 on 1:0 → 20.
    cl, jobs = instance_b()
    res = simulate(cl, jobs, "yu-ff", settings={**SETTINGS, "horizon": 120})
    got = [(r.job_id, r.placement, r.start, r.finish) for r in res.jobs]
    assert got == [
        (0, "0:0", 0.0, approx(10.0)),
        (1, "0:0;0:1", approx(10.0), approx(30.0)),
        (2, "1:0", approx(10.0), approx(20.0)),
    ]
    assert res.summary["makespan"] == approx(30.0)
    assert res.summary["planned_makespan"] == approx(30.0)
    assert res.summary["plan_theta"] == 30.0


# --------------------------------------------------------------------------- κ loop (Alg. 1)
# Instance K1 (2 × 2): a = ONE F=100 (ρ̂ 10), b = TWO F=200. SJF order a, b; a → GPU 0, 0..10.
#   κ = 1: b by LBSGF: loads 10/2 = 5 and 0 → server 1: (2, 3) one server, 0..20 → makespan 20
#   κ = 2: b by FA-FFP: least U (1, 2) crosses, ρ̂ 56: feasible iff θ ≥ 56    → makespan 56
#   κ search, T = 120: θ = 60 → min(20, 56) = 20 with κ = 1 (right 59); every later θ (30,
#   45, 52, 56, 58, 59) gives 20 at best, not smaller → θ = 60, κ = 1, 7 θ × 2 κ = 14 trials.
def instance_k1() -> tuple[Cluster, list[JobSpec]]:
    return cluster(2, 2), [spec(0, 1, 100, ONE), spec(1, 2, 200, TWO)]


def test_sjfbco_kappa_search_picks_lbsgf_for_the_large_job():
    cl, jobs = instance_k1()
    plan = SjfBco(PlannerParams(horizon=120)).plan(cl, jobs, MODEL, 0)
    assert plan.params["kappa"] == 1.0
    assert plan.params["theta"] == 60.0
    assert plan.params["trials"] == 14.0
    assert plan.makespan == approx(20.0)
    assert [(e.job_id, e.gpus) for e in plan.entries] == [(0, (0,)), (1, (2, 3))]


@pytest.mark.parametrize(
    ("kappa", "gpus_b", "makespan"),
    [(1, (2, 3), 20.0), (2, (1, 2), 56.0)],  # κ = 2: G_b = 2 ≤ κ → FA-FFP
)
def test_sjfbco_fixed_kappa_routes_jobs(kappa, gpus_b, makespan):
    cl, jobs = instance_k1()
    plan = SjfBco(PlannerParams(horizon=120, kappa=kappa)).plan(cl, jobs, MODEL, 0)
    assert plan.params["kappa"] == float(kappa)
    assert dict((e.job_id, e.gpus) for e in plan.entries) == {0: (0,), 1: gpus_b}
    assert plan.makespan == approx(makespan)


# Instance K2 (2 × 2): a = ONE F=300 (ρ̂ 30), b, c = LIGHT F=200 (20 on one server, 23.6
# across). SJF order a, b, c; a → GPU 0, 0..30 in both configurations.
#   κ = 1 (b, c by LBSGF): b: loads 15, 0 → server 1 (2, 3) 0..20. c: loads 15, 20 → server 0,
#     whose GPU 0 is busy → wait (to 20: still server 0; to 30) → (1, 0) 30..50 → makespan 50,
#     needs θ ≥ U0 = 30 + 20 = 50.
#   κ = 2 (all FA-FFP): b: least U (1, 2) across, 0..23.6. c: only GPU 3 free → wait to 23.6 →
#     U = [30, 23.6, 23.6, 0] → (3, 1) across, 23.6..47.2 → makespan 47.2, needs θ ≥ 47.2.
#   T = 120: θ = 60 → 47.2 with κ = 2 (right 59); θ = 30, 45 → both infeasible (left 46);
#   θ = 52, 56, 58, 59 → 47.2, not smaller → θ = 60, κ = 2.
def instance_k2() -> tuple[Cluster, list[JobSpec]]:
    return cluster(2, 2), [
        spec(0, 1, 300, ONE),
        spec(1, 2, 200, LIGHT),
        spec(2, 2, 200, LIGHT),
    ]


def test_sjfbco_kappa_search_picks_faffp_when_waiting_costs_more():
    cl, jobs = instance_k2()
    plan = SjfBco(PlannerParams(horizon=120)).plan(cl, jobs, MODEL, 0)
    assert plan.params["kappa"] == 2.0
    assert plan.params["theta"] == 60.0
    assert plan.makespan == approx(47.2)
    got = [(e.job_id, e.gpus, e.start, e.end) for e in plan.entries]
    assert got == [
        (0, (0,), 0.0, approx(30.0)),
        (1, (1, 2), 0.0, approx(23.6)),
        (2, (3, 1), approx(23.6), approx(47.2)),
    ]
    k1 = SjfBco(PlannerParams(horizon=120, kappa=1)).plan(cl, jobs, MODEL, 0)
    assert k1.makespan == approx(50.0)
    assert [(e.job_id, e.gpus, e.start) for e in k1.entries] == [
        (0, (0,), 0.0),
        (1, (2, 3), 0.0),
        (2, (1, 0), approx(30.0)),
    ]


def test_sjfbco_plan_executes_in_the_engine():
    # K2's plan executed: a 0..30 on 0:0; b across servers alone (k = 1) 0..23.6; c starts when
    # b frees GPU 1 at 23.6, across servers alone → 23.6 + 23.6 = 47.2.
    cl, jobs = instance_k2()
    res = simulate(cl, jobs, "sjf-bco", settings={**SETTINGS, "horizon": 120})
    got = [(r.job_id, r.placement, r.start, r.finish) for r in res.jobs]
    assert got == [
        (0, "0:0", 0.0, approx(30.0)),
        (1, "0:1;1:0", 0.0, approx(23.6)),
        (2, "1:1;0:1", approx(23.6), approx(47.2)),
    ]
    assert res.summary["plan_kappa"] == 2.0


# --------------------------------------------------------------------------- horizon too small
def test_planning_error_when_the_horizon_is_too_small():
    cl, jobs = instance_b()  # every plan needs ≥ 20 s (j1 alone on one server)
    for name in ("sjf-bco", "yu-ff", "yu-ls", "yu-rand"):
        with pytest.raises(PlanningError, match="horizon"):
            make_planner(name, PlannerParams(horizon=10, extend_horizon=False)).plan(
                cl, jobs, MODEL, 0
            )


def test_horizon_extension_doubles_t():
    # FF on instance B needs θ ≥ 30 (and a makespan below T): T = 10 and T = 20 fail, T = 40
    # works. Bisection over [1, 40]: θ = 20 ∅ (left 21); θ = 30 → 30 < 40 (right 29);
    # θ = 25, 27, 28, 29 ∅ (left → 30) → θ = 30.
    cl, jobs = instance_b()
    plan = make_planner("yu-ff", PlannerParams(horizon=10)).plan(cl, jobs, MODEL, 0)
    assert plan.params["horizon"] == 40.0
    assert plan.params["extended"] == 1.0
    assert plan.params["theta"] == 30.0
    assert plan.makespan == approx(30.0)


def test_api_maps_planning_error_to_input_error_on_horizon():
    # one ONE job with F = 2000: ρ̂ = 2000 · 0.1 = 200 s, more than the last extended horizon
    # 1 · 2⁶ = 64 s
    cl = cluster(2, 2)
    jobs = [spec(0, 1, 2000, ONE)]
    for name in ("sjf-bco", "yu-rand"):
        with pytest.raises(InputError) as err:
            simulate(cl, jobs, name, settings={**SETTINGS, "horizon": 1})
        assert err.value.field == "horizon"
        assert "horizon" in str(err.value)


def test_make_planner_rejects_unknown_names():
    with pytest.raises(KeyError):
        make_planner("nope")
