"""Sia's goodput rows are kept per job while the job's model and gradient statistics stay the
same (policies/sia.py ``Sia.goodput_row``): a kept row must equal the row computed afresh."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ddlsched.api import simulate
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.policies.sia import Sia

sys.path.insert(0, str(Path(__file__).parent))
from test_sia_inputs import write_sia_profiles  # noqa: E402

MODEL = ModelProfile("app", 0.0, 0.0, 0, 0.0, 0.0)


class _Checked(Sia):
    """Sia that recomputes every row and counts the rounds where the kept one was used."""

    def __init__(self) -> None:
        super().__init__()
        self.kept = 0
        self.rows = 0

    def goodput_row(self, job):  # type: ignore[no-untyped-def]
        before = self._rows.get(job.job_id)
        row = super().goodput_row(job)
        fresh = self._goodput_row(job)
        assert row.tobytes() == fresh.tobytes()
        self.rows += 1
        if before is not None and before[0] == self._row_key(job):
            self.kept += 1
        return row


def test_kept_rows_equal_fresh_ones_and_are_used(tmp_path) -> None:
    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "beta"), epoch_progress=2e4)
    specs = [
        JobSpec(i, 40.0 * i, 1, 0, MODEL, application=a, batch_size=b, name=f"{a}-{i}")
        for i, (a, b) in enumerate([("alpha", 128), ("beta", 64), ("alpha", 256), ("beta", 32)])
    ]
    pol = _Checked()
    res = simulate(load_cluster("sia-64"), specs, pol, settings={"profiles": str(root)})
    assert np.isfinite(res.summary["avg_jct"])
    assert pol.rows > 0 and 0 < pol.kept < pol.rows


def test_a_new_observation_changes_the_key() -> None:
    pol = Sia()
    pol._fits, pol._grad = {}, {}

    class _J:
        job_id = 7

    k0 = pol._row_key(_J())  # type: ignore[arg-type]
    pol._grad[7] = (1.0, 2.0)
    k1 = pol._row_key(_J())  # type: ignore[arg-type]
    pol._grad[7] = (1.0, -0.0)
    k2 = pol._row_key(_J())  # type: ignore[arg-type]
    pol._grad[7] = (1.0, 0.0)
    assert len({k0, k1, k2, pol._row_key(_J())}) == 4  # type: ignore[arg-type]
