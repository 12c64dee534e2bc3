"""Luo et al.'s stated workload as presets (``luo24-paper``, ``luo24-paper-N``) and as the
``paper-workload`` variant of luo24-table3/-table4, which runs only when asked for: the
experiments' default tables stay as they were (issue #16)."""

from __future__ import annotations

from ddlsched import load_workload
from ddlsched.experiments.luo24 import TABLE3, TABLE4
from ddlsched.experiments.runner import Experiment, Row, run_experiment
from ddlsched.workloads.luo24 import LARGE_JOB_MIN_GPUS, generate_paper_workload


def test_paper_presets_are_the_paper_workload() -> None:
    jobs = load_workload("luo24-paper", seed=2)
    assert jobs == generate_paper_workload(2, num_jobs=240)
    sized = load_workload("luo24-paper-480", seed=2)
    assert len(sized) == 480
    large = sum(j.num_gpus >= LARGE_JOB_MIN_GPUS for j in sized)
    assert large == round(0.122 * 480)  # the paper's large-job share, exactly


def test_paper_workload_variant_is_optional() -> None:
    for exp, n in ((TABLE3, 240), (TABLE4, 480)):
        assert exp.default_variants() == ["default"]
        assert exp.variants["paper-workload"] == {"workload": f"luo24-paper-{n}"}


def test_optional_variants_run_only_when_named() -> None:
    exp = Experiment(
        name="t",
        description="",
        cluster="wang20",
        workload="wang20",
        rows=[Row("SRSF(1)", "srsf1")],
        metrics=["avg_jct"],
        variants={"default": {"iterations_per_task": 1000}, "extra": {"iterations_per_task": 500}},
        optional_variants=frozenset({"extra"}),
    )
    plain = run_experiment(exp, 1, None, workers=1)
    assert {t["variant"] for t in plain} == {"default"}
    named = run_experiment(exp, 1, None, workers=1, variants=["extra"])
    assert {t["variant"] for t in named} == {"extra"}
    assert named[0]["ours_mean"] != plain[0]["ours_mean"]
