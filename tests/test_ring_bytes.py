"""``ring_bytes`` (Wang's Table I ring for w workers, priced from a 2-node fit) and a planner's
plan executed under Wang's iteration-level model (``model=wang``), by hand.

Hand numbers: b = 1 ms/MB, a = η = 0, compute 0.1 s per iteration. A 4-GPU job on 2 servers ×
2 GPUs spans both servers; its ring moves 2(4−1)/4 = 1.5 × M per uplink, so 10 iterations of
M = 100 MB take 10 × (0.1 + 1.5 × 0.1) = 2.5 s with ``ring_bytes`` and 10 × (0.1 + 0.1) = 2.0 s
without (Wang's M as given)."""

from __future__ import annotations

import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError
from ddlsched.perf.contention import ring_factor

WANG = {"a": 0.0, "b": 1e-9, "eta": 0.0}


def job(jid: int, gpus: int, iters: int = 10, mb: float = 100.0, arrival: float = 0.0) -> JobSpec:
    return JobSpec(jid, arrival, gpus, iters, ModelProfile(f"m{jid}", mb, 100.0, 1, 0.1, 0.0))


def test_ring_factor_is_table_ones_ring_over_two_nodes() -> None:
    assert ring_factor(1) == 0.0 and ring_factor(2) == 1.0
    assert ring_factor(3) == pytest.approx(4 / 3) and ring_factor(4) == 1.5


@pytest.mark.parametrize(("ring", "compiled", "jct"), [
    (False, True, 2.0), (False, False, 2.0), (True, True, 2.5), (True, False, 2.5),
])  # fmt: skip
def test_a_four_worker_all_reduce_moves_one_and_a_half_m(ring, compiled, jct) -> None:
    settings = {**WANG, "ring_bytes": ring, "compiled": compiled}
    res = simulate(Cluster.homogeneous(2, 2), [job(0, 4)], "fifo-ff", settings=settings)
    assert res.summary["avg_jct"] == pytest.approx(jct, rel=1e-9)


def test_ring_bytes_is_refused_where_nothing_reads_it() -> None:
    with pytest.raises(InputError, match="iteration level"):
        simulate(Cluster.homogeneous(2, 2), [job(0, 4)], "fifo-ff",
                 settings={"ring_bytes": True, "granularity": "job"})  # fmt: skip


def _plan_and_result(model: str) -> tuple[list, dict, dict]:
    from ddlsched.api import build_simulator
    from ddlsched.settings import Settings

    jobs = [job(0, 4, 40, 200.0), job(1, 2, 30, 50.0), job(2, 3, 20, 100.0), job(3, 1, 60, 0.0)]
    extra = {**WANG, "ring_bytes": True} if model == "wang" else {}
    settings = Settings.from_mapping({"model": model, **extra})
    sim = build_simulator(Cluster.homogeneous(2, 4), jobs, "sjf-bco", settings=settings)
    entries = [(e.job_id, tuple(e.gpus), e.start) for e in sim.policy.plan.entries]  # type: ignore[attr-defined]
    res = sim.run()
    jcts = {r.job_id: r.finish - r.arrival for r in res.jobs}
    return entries, jcts, dict(res.resolved)


def test_a_plan_executed_under_wangs_model_is_the_same_plan_timed_by_wang() -> None:
    plan_rar, jct_rar, resolved_rar = _plan_and_result("rar")
    plan_wang, jct_wang, resolved_wang = _plan_and_result("wang")
    assert plan_wang == plan_rar  # the plan is Yu's either way
    assert (resolved_rar["model"], resolved_rar["granularity"]) == ("rar", "job")
    assert (resolved_wang["model"], resolved_wang["granularity"]) == ("wang", "iteration")
    # job 3 (1 GPU, no all-reduce) computes 60 × 0.1 s either way, less Yu's overhead ξ2
    assert jct_wang[3] == pytest.approx(6.0, rel=1e-9)
    assert jct_rar[3] == pytest.approx(60 * (0.1 + 0.001), rel=1e-9)
    assert jct_wang != jct_rar


def test_wangs_parameters_need_model_wang_with_a_planner() -> None:
    with pytest.raises(InputError, match="model=wang"):
        simulate(Cluster.homogeneous(2, 4), [job(0, 4)], "sjf-bco", settings={"b": 2e-9})
    res = simulate(Cluster.homogeneous(2, 4), [job(0, 4)], "sjf-bco",
                   settings={"model": "wang", "b": 2e-9})  # fmt: skip
    assert res.summary["num_jobs"] == 1
    with pytest.raises(InputError, match="iteration level only"):
        simulate(Cluster.homogeneous(2, 4), [job(0, 4)], "sjf-bco",
                 settings={"model": "wang", "granularity": "job"})  # fmt: skip


def test_yus_time_slots_are_refused_when_wang_times_the_plan() -> None:
    with pytest.raises(InputError) as e:
        simulate(Cluster.homogeneous(2, 4), [job(0, 4)], "sjf-bco",
                 settings={"model": "wang", "time_slots": True})  # fmt: skip
    assert e.value.field == "time_slots"
