"""A ``--set`` value that has no effect on the run is an error naming where it applies; every
setting where it does apply, every default, and every experiment preset stays accepted."""

from __future__ import annotations

import collections
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from _toys import toy_app, toy_jobs

import ddlsched.api as api
import ddlsched.core.simulator as simulator_module
import ddlsched.perf.builtin_apps as builtin_apps
from ddlsched.api import Settings, build_simulator
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError
from ddlsched.experiments import EXPERIMENTS, runner
from ddlsched.settings_scope import SCOPES, check_workload_scope
from ddlsched.workloads.generators import WORKLOAD_PRESETS
from ddlsched.workloads.traces import gavel_data_file

ROOT = Path(__file__).resolve().parent.parent
TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def cluster() -> Cluster:
    return Cluster.homogeneous(2, 4)


def model_jobs() -> list[JobSpec]:
    return WORKLOAD_PRESETS["wang20"](0)[:6]


def duration_jobs() -> list[JobSpec]:
    return [JobSpec(i, float(i), 1, 0, TRACE, duration=10.0) for i in range(3)]


@pytest.fixture
def profile_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[JobSpec]:
    monkeypatch.setattr(builtin_apps, "builtin_profiles", lambda: {"toy": toy_app()})
    return toy_jobs("a,0,toy,1,32\nb,5,toy,2,32\n", tmp_path)


def error(jobs, policy, placement=None, **settings) -> InputError:
    with pytest.raises(InputError) as info:
        build_simulator(cluster(), jobs, policy, placement=placement, settings=Settings(**settings))
    return info.value


def builds(jobs, policy, placement=None, **settings) -> None:
    build_simulator(cluster(), jobs, policy, placement=placement, settings=Settings(**settings))


def test_every_setting_has_a_scope() -> None:
    assert set(SCOPES) == {f.name for f in fields(Settings)}


def test_kappa_with_a_placement_other_than_lwf_names_the_placement() -> None:
    e = error(model_jobs(), "srsf1", "ff", kappa=2)
    assert e.field == "kappa" and e.source == "--set"
    assert "applies only with the lwf placement" in str(e)
    assert "this run: model jobs at iteration level, policy srsf1, placement ff" in str(e)
    # lwf-K names κ itself: the setting would be ignored
    assert error(model_jobs(), "ada-srsf", "lwf-2", kappa=2).field == "kappa"
    assert error(model_jobs(), "fifo-ff", kappa=2).field == "kappa"  # fifo-ff's own placement
    builds(model_jobs(), "srsf1", "lwf", kappa=2)
    builds(model_jobs(), "ada-srsf", kappa=2)  # the preset's own placement is lwf


@pytest.mark.parametrize(
    "policy, placement, settings, field",
    [
        # model jobs, online, Wang's model
        ("srsf1", None, {"xi1": 2.0}, "xi1"),
        ("srsf1", None, {"horizon": 100.0}, "horizon"),
        ("srsf1", None, {"interference": 2.0}, "interference"),
        ("srsf1", None, {"profiles": "x"}, "profiles"),
        ("srsf1", None, {"semantics": "rounds"}, "semantics"),
        ("srsf1", None, {"interval": 30.0}, "interval"),
        ("srsf1", None, {"tiresias_thresholds": "1,10"}, "tiresias_thresholds"),
        ("srsf1", None, {"pollux_ncf_batch": 0}, "pollux_ncf_batch"),
        ("srsf1", None, {"granularity": "job", "iterations_per_task": 10}, "iterations_per_task"),
        ("srsf1", None, {"granularity": "job", "shortcuts": False}, "shortcuts"),
        # model=rar: Wang's parameters and the granularity do nothing
        ("srsf1", None, {"model": "rar", "a": 1e-3}, "a"),
        ("srsf1", None, {"model": "rar", "granularity": "job"}, "granularity"),
        ("srsf1", None, {"model": "rar", "lam": 2.0}, "lam"),
        # planners
        ("sjf-bco", None, {"iterations_per_task": 10}, "iterations_per_task"),
        ("sjf-bco", None, {"restart_delay": 5.0}, "restart_delay"),
        ("sjf-bco", None, {"max_jobs_per_gpu": 2}, "max_jobs_per_gpu"),
        ("sjf-bco", None, {"kappa": 2}, "kappa"),
        ("yu-ff", None, {"eta": 1e-9}, "eta"),
        ("yu-ff", None, {"lam": 2.0}, "lam"),  # LBSGF's λ: SJF-BCO's only
        ("yu-rand", None, {"bco_kappa": 2}, "bco_kappa"),
    ],
)
def test_model_job_settings_without_effect_are_errors(policy, placement, settings, field) -> None:
    e = error(model_jobs(), policy, placement, **settings)
    assert e.field == field and "applies only" in str(e) and "this run:" in str(e)


@pytest.mark.parametrize(
    "policy, placement, settings",
    [
        ("srsf1", None, {"iterations_per_task": 10, "shortcuts": False, "a": 1e-3}),
        ("srsf1", None, {"max_jobs_per_gpu": 2, "restart_delay": 5.0, "model": "wang"}),
        ("srsf1", None, {"granularity": "job", "eta": 1e-9}),
        ("srsf1", "lwf", {"kappa": 3}),
        ("srsf1", None, {"model": "rar", "xi1": 2.0, "time_slots": True, "rar_f": "fair"}),
        ("srsf1", None, {"model": "rar", "alpha": 0.1, "reduction_speed": 1e10, "xi2": 0.0}),
        ("yu-ff", None, {"horizon": 100.0, "u": 2.0, "estimate": "isolated", "xi2": 0.0}),
        ("sjf-bco", None, {"bco_kappa": 1, "lam": 2.0, "extend_horizon": False, "horizon": 1e6}),
        ("yu-ls", None, {"model": "rar"}),
    ],
)
def test_model_job_settings_with_effect_are_accepted(policy, placement, settings) -> None:
    builds(model_jobs(), policy, placement, **settings)


def test_profile_job_settings(profile_jobs) -> None:
    builds(profile_jobs, "sjf", rescale_delay=5.0, ground_truth="fitted", semantics="rounds")
    builds(profile_jobs, "fifo", semantics="rounds", interval=30.0)  # the rounds loop
    builds(profile_jobs, "tiresias", interval=30.0, tiresias_thresholds="1,10")
    builds(profile_jobs, "pollux", interval=30.0, pollux_ncf_batch=0)
    builds(profile_jobs, "sjf-bsbf", interference=2.0, max_jobs_per_gpu=2)
    for policy, settings, field in [
        ("sjf", {"interval": 30.0}, "interval"),  # events semantics: sjf has no rounds
        ("sjf", {"interference": 2.0}, "interference"),  # no GPU is ever shared
        ("fifo", {"interference_file": "x.csv"}, "interference_file"),
        ("sjf", {"max_jobs_per_gpu": 2}, "max_jobs_per_gpu"),
        ("sjf", {"tiresias_thresholds": "1"}, "tiresias_thresholds"),
        ("tiresias", {"pollux_ncf_batch": 0}, "pollux_ncf_batch"),
        ("sjf-ffs", {"restart_delay": 5.0}, "restart_delay"),  # rescale_delay is theirs
        ("sjf", {"kappa": 2}, "kappa"),
        ("sjf", {"model": "rar"}, "model"),
        ("sjf", {"iterations_per_task": 10}, "iterations_per_task"),
    ]:
        e = error(profile_jobs, policy, **settings)
        assert e.field == field, (policy, settings, str(e))
        assert "application-profile jobs" in str(e)


def test_duration_job_settings() -> None:
    builds(duration_jobs(), "tiresias", restart_delay=3.0, interval=30.0, tiresias_thresholds="2")
    builds(duration_jobs(), "fifo", restart_delay=3.0)
    for policy, settings, field in [
        ("fifo", {"interval": 30.0}, "interval"),
        ("sjf", {"rescale_delay": 1.0}, "rescale_delay"),
        ("fifo", {"profiles": "x"}, "profiles"),
        ("sjf", {"max_jobs_per_gpu": 2}, "max_jobs_per_gpu"),
    ]:
        assert error(duration_jobs(), policy, **settings).field == field


def test_placement_with_a_policy_that_places_jobs_itself(profile_jobs) -> None:
    for jobs, policy in [(profile_jobs, "sjf"), (duration_jobs(), "fifo"), (model_jobs(), "yu-ff")]:
        e = error(jobs, policy, "ff")
        assert e.field == "placement" and "places jobs itself" in str(e)
    # an unknown policy is named as such first
    assert error(profile_jobs, "sjff", "ff").field == "policy"
    assert error(duration_jobs(), "pollux", "ff").field == "policy"


def test_defaults_are_always_accepted(profile_jobs) -> None:
    """Every setting at its default, given explicitly (a recorded config.json), runs anywhere."""
    every = {f.name: f.default for f in fields(Settings)}
    for jobs, policy in [
        (model_jobs(), "srsf1"),
        (model_jobs(), "sjf-bco"),
        (profile_jobs, "sjf"),
        (profile_jobs, "pollux"),
        (duration_jobs(), "fifo"),
    ]:
        builds(jobs, policy, **every)


def test_philly_feeds_only_the_luo24_generators(tmp_path: Path) -> None:
    check_workload_scope(Settings(philly="trace.csv"), "luo24")
    check_workload_scope(Settings(philly="trace.csv"), "LUO24-80")
    check_workload_scope(Settings(), "wang20")
    for workload in ("wang20", "luo24-physical", str(tmp_path / "jobs.csv")):
        with pytest.raises(InputError) as info:
            check_workload_scope(Settings(philly="trace.csv"), workload)
        assert info.value.field == "philly" and "luo24" in str(info.value)


class _Built:
    """Stands in for the engine: the simulator was composed, nothing is simulated."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def run(self):
        summary = collections.defaultdict(lambda: 1.0)
        return type("R", (), {"summary": summary, "jobs": ()})()


@pytest.mark.parametrize("name", [n for n, e in EXPERIMENTS.items() if e.custom is None])
def test_every_experiment_row_and_variant_is_accepted(name, monkeypatch) -> None:
    """Every row × variant of every experiment composes its simulator (settings all apply)."""
    exp = EXPERIMENTS[name]
    try:
        if exp.resolve is not None:
            exp.resolve()
    except InputError:
        pytest.skip(f"{name} needs data that is absent")
    if name == "gavel-fig8" and gavel_data_file() is None:  # its workload preset needs it
        pytest.skip("gavel-fig8 needs Gavel's throughputs, absent")
    built = []

    def fake_task(task):
        res = api.simulate_named(
            task.cluster,
            task.workload,
            task.policy,
            placement=task.placement,
            seed=task.seed,
            settings=dict(task.settings),
        )
        built.append(task)
        return res.summary

    monkeypatch.setattr(simulator_module, "Simulator", _Built)  # the backends build it
    monkeypatch.setattr(runner, "run_task", fake_task)
    # every variant, the optional ones (run only when named) included
    table = runner.run_experiment(exp, seeds=1, workers=1, variants=list(exp.variants))
    assert len(built) == sum(len(exp.rows_of(v)) for v in exp.variants)
    assert len(table) == len(built) * len(exp.metrics)


def test_cli_names_the_ignored_setting(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "run", "--cluster", "tiny", "--workload"]
        + [str(ROOT / "examples" / "tiny-jobs.csv"), "--policy", "srsf1", "--placement", "ff"]
        + ["--set", "kappa=2", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("ddlsched: error: --set, field 'kappa': applies only with the lwf")
    assert r.stderr.count("\n") == 1 and not (tmp_path / "o").exists()


def test_readme_and_example_do_not_set_an_ignored_kappa() -> None:
    readme = (ROOT / "README.md").read_text().replace("\\\n", " ")
    runs = [line for line in readme.splitlines() if line.startswith("ddlsched run ")]
    assert any("--set kappa=" in r for r in runs)
    for r in runs:
        if "--set kappa=" in r:
            assert "--placement lwf " in r, r
    exp = (ROOT / "examples" / "exp.toml").read_text()
    assert "kappa = 2" in exp and 'placement = "lwf"' in exp


def test_readme_settings_table_says_where_each_applies() -> None:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| key | default | applies to | meaning |") :].split("\n\n")[0]
    keys: set[str] = set()
    for row in table.splitlines()[2:]:
        cells = row.strip("|").split(" | ")
        assert len(cells) == 4 and cells[2].strip(), row
        keys |= {k.strip("` ") for k in cells[0].split(",")}
    assert keys == {f.name for f in fields(Settings)}
