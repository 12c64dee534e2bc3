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


def test_generator_knobs_as_settings_reach_the_generator() -> None:
    """``--set large_share=… gpu_weights=… duration_scale=… jobs_per_hour=…`` are the
    generator's keywords; recorded in config.json only when set (run ids of before stay)."""
    import pytest

    from ddlsched.api import Settings, load_named
    from ddlsched.errors import InputError
    from ddlsched.workloads.luo24 import generate_pollux_workload

    s = Settings.from_mapping(
        {
            "large_share": "0.5",
            "gpu_weights": "1:1,8:1",
            "duration_scale": "0.5",
            "jobs_per_hour": "20",
        }
    )
    _, jobs = load_named("luo24", "luo24-60", seed=3, settings=s)
    assert jobs == generate_pollux_workload(
        3, num_jobs=60, large_share=0.5, gpu_weights={1: 1.0, 8: 1.0}, duration_scale=0.5,
        jobs_per_hour=20.0,
    )  # fmt: skip
    assert sum(j.num_gpus == 8 for j in jobs) == 30 and {j.num_gpus for j in jobs} == {1, 8}
    assert Settings().generator_knobs() == {}
    assert "large_share" not in Settings().sectioned()["workload"]
    assert s.sectioned()["workload"]["large_share"] == 0.5
    for bad, field in (
        ({"large_share": "1.5"}, "large_share"),
        ({"gpu_weights": "0:3"}, "gpu_weights"),
        ({"gpu_weights": "1:2,1:3"}, "gpu_weights"),
        ({"duration_scale": "0"}, "duration_scale"),
        ({"jobs_per_hour": "-1"}, "jobs_per_hour"),
    ):
        with pytest.raises(InputError) as e:
            Settings.from_mapping(bad)
        assert e.value.field == field
    with pytest.raises(InputError, match="luo24-paper"):
        load_named("wang20", "wang20", settings=Settings.from_mapping({"large_share": "0.3"}))
