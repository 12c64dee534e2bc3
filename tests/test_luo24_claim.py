"""``luo24-claim`` (issue #16): its table has a row per policy and setting it claims, one
figure per knob, and a verdict that follows from the numbers (fake runs with known JCTs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlsched.experiments import EXPERIMENTS, runner
from ddlsched.experiments.luo24_claim import CLAIM, KNOBS, SHARING, verdict_rows

#: average JCT (s) per policy; SJF-BSBF best only when the load is × 4
BASE_JCT = {"sjf-bsbf": 5000.0, "sjf-ffs": 5400.0, "tiresias": 6000.0, "pollux": 3000.0}


def fake_run(task: runner.Task) -> dict[str, float]:
    settings = dict(task.settings)
    jct = BASE_JCT[task.policy] + 10.0 * task.seed  # a little spread over seeds
    if settings.get("jobs_per_hour") == 120.0:
        jct = {"sjf-bsbf": 4000.0, "pollux": 9000.0}.get(task.policy, 7000.0) + 10 * task.seed
    if task.policy == "sjf-bsbf" and "interference" in settings:
        jct += 1000.0 * settings["interference"]
    return {"avg_jct": jct, "avg_jct_large": 2 * jct, "avg_jct_small": jct / 2, "avg_queueing": 0.0}


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    monkeypatch.setattr(runner, "run_task", fake_run)
    return runner.run_experiment(CLAIM, seeds=3, workers=1)


def test_registered_with_three_knobs_and_the_four_policies() -> None:
    assert EXPERIMENTS["luo24-claim"] is CLAIM
    assert [r.name for r in CLAIM.rows] == ["SJF-BSBF", "SJF-FFS", "Tiresias", "Pollux"]
    assert set(KNOBS) == {"large", "load", "xi"}
    assert CLAIM.default_seeds == 3


def test_table_has_every_setting_row_and_metric(table: list[dict]) -> None:
    for v in CLAIM.variants:
        rows = {t["row"] for t in table if t["variant"] == v}
        expected = set(SHARING) if v.startswith("ξ") else {r.name for r in CLAIM.rows}
        assert rows == expected, v
        for row in expected:
            metrics = {t["metric"] for t in table if t["variant"] == v and t["row"] == row}
            assert metrics == set(CLAIM.metrics)
    assert all(t["seeds"] == 3 for t in table)
    assert len(table) == sum(len(CLAIM.rows_of(v)) for v in CLAIM.variants) * len(CLAIM.metrics)


def test_verdict_follows_the_numbers(table: list[dict]) -> None:
    rows = {r["variant"]: r for r in verdict_rows(table)}
    assert rows["paper-workload"]["best"] == "Pollux"
    assert rows["paper-workload"]["against"] == {
        "SJF-FFS": "wins",
        "Tiresias": "wins",
        "Pollux": "loses",
    }
    assert rows["load ×4"]["best"] == "SJF-BSBF"
    assert set(rows["load ×4"]["against"].values()) == {"wins"}
    # ξ settings: Tiresias and Pollux from the base (exclusive GPUs), SJF-BSBF slows with ξ
    assert rows["ξ=3"]["against"]["Pollux"] == "loses"
    assert rows["ξ=1"]["bsbf"] < rows["ξ=3"]["bsbf"]
    text = runner.format_markdown(CLAIM, table)
    assert "## Verdict" in text
    assert "beats every other policy (intervals apart) in: load ×4;" in text
    assert "(paper 1.0)" in text  # the paper's Table III beside ours


def test_one_figure_per_knob(table: list[dict], tmp_path: Path) -> None:
    written = runner.write_table(CLAIM, table, tmp_path)
    names = sorted(p.name for p in written if p.suffix == ".png")
    assert names == ["luo24-claim-large.png", "luo24-claim-load.png", "luo24-claim-xi.png"]
    assert all((tmp_path / n).stat().st_size > 1000 for n in names)


def test_each_variant_is_handed_over_when_its_runs_are_done(monkeypatch, capsys, tmp_path) -> None:
    """``on_variant`` sees each variant's rows once, equal to the final table's; ``reproduce``
    prints them as they come, and its whole output is ``format_markdown``'s text."""
    monkeypatch.setattr(runner, "run_task", fake_run)
    seen: list[tuple[str, list[dict]]] = []
    table = runner.run_experiment(
        CLAIM, seeds=2, workers=1, on_variant=lambda v, rows: seen.append((v, rows))
    )
    assert [v for v, _ in seen] == list(CLAIM.variants)  # one worker: in input order
    for v, rows in seen:
        assert rows == [t for t in table if t["variant"] == v]
    from ddlsched.cli import main

    out = tmp_path / "claim"
    assert (
        main(["reproduce", "luo24-claim", "--seeds", "2", "--workers", "1", "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    want = runner.format_markdown(CLAIM, table)
    assert printed.startswith(want + "\n") and printed.count("## variant:") == len(CLAIM.variants)
