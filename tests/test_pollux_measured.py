"""Pollux's agent given a live job's measured seconds per iteration (``observe_measured``):
under gradient accumulation an iteration is k micro-steps more than the synchronising step
the goodput model's rows hold (T_iter = step + k·(step − sync)), so the measurement is scaled
to a step before it enters the model."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ddlsched.perf.builtin_apps import builtin_applications
from ddlsched.policies.pollux import Pollux


def _run(batch: int):
    app = builtin_applications()["synthetic-cnn"]
    placement = (1,)
    return SimpleNamespace(
        app=app, cfg=app.batch_config(1, batch), placement=placement, job=SimpleNamespace(job_id=0)
    )


@pytest.mark.parametrize("batch", [128, 1024, 4096])
def test_a_measured_iteration_at_the_profiles_pace_records_the_profiles_step(batch: int) -> None:
    run = _run(batch)
    agent = Pollux()
    agent.ex = SimpleNamespace(application=lambda job: run.app)  # the agent's estimates
    p_step, p_sync = run.app.step_time(run.placement, run.cfg.a)
    t_iter = run.app.iteration_time(run.placement, run.cfg)
    step, sync = agent.observe_measured(run, t_iter)
    assert step == pytest.approx(p_step) and sync == pytest.approx(p_sync)
    if run.cfg.accum:  # an iteration is longer than its synchronising step
        assert t_iter > 1.5 * p_step


def test_a_slower_measured_iteration_slows_the_step_by_the_same_factor() -> None:
    run = _run(4096)
    agent = Pollux()
    agent.ex = SimpleNamespace(application=lambda job: run.app)
    p_step, _ = run.app.step_time(run.placement, run.cfg.a)
    t_iter = run.app.iteration_time(run.placement, run.cfg)
    step, _ = agent.observe_measured(run, 2.0 * t_iter)
    assert step == pytest.approx(2.0 * p_step)
