"""Settings in typed sections and the record of what ran (issue #12): flat keys, sectioned
tables and ``section.key`` name the same setting; backends declare the sections their runs
read; ``config.json`` and the first line of ``ddlsched run`` say what actually ran."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from ddlsched.api import Settings, resolve_run
from ddlsched.backends import all_backends
from ddlsched.cli import main
from ddlsched.config import load_run_config
from ddlsched.errors import InputError
from ddlsched.settings import SECTION_OF, SECTIONS, WangSettings
from ddlsched.settings_scope import SCOPES
from ddlsched.sweep import expand, load_sweep
from ddlsched.workloads.presets import load_workload

WORKLOAD = """job_id,arrival,num_gpus,iterations,model
1,0,2,200,resnet50
2,1,4,100,vgg16
"""


def test_every_setting_is_in_exactly_one_section_with_one_default() -> None:
    names = [f.name for cls in SECTIONS.values() for f in fields(cls)]
    assert len(names) == len(set(names))  # one section each
    assert set(names) == {f.name for f in fields(Settings)} == set(SCOPES)
    for f in fields(Settings):  # the flat default is the section's default
        section = SECTIONS[SECTION_OF[f.name]]
        assert f.default == next(g.default for g in fields(section) if g.name == f.name)


def test_flat_sectioned_and_dotted_keys_are_the_same_setting() -> None:
    flat = Settings.from_mapping({"a": "0.5", "xi1": "2"})
    nested = Settings.from_mapping({"wang": {"a": 0.5}, "rar": {"xi1": 2.0}})
    dotted = Settings.from_mapping({"wang.a": "0.5", "rar.xi1": "2"})
    assert flat == nested == dotted
    wang = flat.section("wang")
    assert isinstance(wang, WangSettings) and wang.a == 0.5 and wang.granularity == "iteration"
    assert flat.sectioned()["rar"]["xi1"] == 2.0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"wang": {"xi1": 2}}, "xi1 is in section [rar], not [wang]"),
        ({"wnag.a": 1}, "unknown settings section (did you mean 'wang'?)"),
        ({"wang": {"aa": 1}}, "unknown setting of [wang]"),
    ],
)
def test_wrong_sections_are_one_line_errors(values: dict, message: str) -> None:
    with pytest.raises(InputError) as e:
        Settings.from_mapping(values)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_config_file_sections_and_their_errors_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('cluster = "tiny"\n\n[settings.wang]\na = 0.25\n\n[settings.rar]\nxi1 = 3.0\n')
    cfg = load_run_config(p)
    assert cfg.settings.a == 0.25 and cfg.settings.xi1 == 3.0
    p.write_text('cluster = "tiny"\n\n[settings.wang]\na = 0.25\nxi1 = 3.0\n')
    with pytest.raises(InputError) as e:
        load_run_config(p)
    assert e.value.line == 5 and "section [settings.rar]" in str(e.value)
    p.write_text("[settings]\na = 0.25\n\n[settings.wang]\na = 0.5\n")
    with pytest.raises(InputError, match="given twice"):
        load_run_config(p)


def test_sweep_accepts_sections_and_section_keys_in_its_grid(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_text(WORKLOAD)
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        'cluster = "tiny"\nworkload = "jobs.csv"\n\n[settings.iteration]\n'
        'iterations_per_task = 10\n\n[sweep]\npolicies = ["ada-srsf", "sjf-bco"]\n\n'
        '[sweep.grid]\n"wang.a" = [0.001, 0.002]\n'
    )
    with pytest.raises(InputError) as e:  # wang.a does not apply to the planner
        load_sweep(sweep)
    assert "policy sjf-bco" in str(e.value) and "applies only" in str(e.value)
    sweep.write_text(sweep.read_text().replace('"ada-srsf", "sjf-bco"', '"ada-srsf"'))
    runs = expand(load_sweep(sweep))
    assert [r.config.settings.a for r in runs] == [0.001, 0.002]
    assert all(r.config.settings.iterations_per_task == 10 for r in runs)
    # each run's record says what ran, as `ddlsched run` records it
    assert all(r.record["resolved"]["model"] == "wang" for r in runs)


def test_backends_declare_the_sections_of_their_runs() -> None:
    declared = {s for b in all_backends() for secs in b.sections.values() for s in secs}
    assert declared == set(SECTIONS)  # every section is read by some run kind
    by_name = {b.name: b for b in all_backends()}
    assert (
        "rar"
        not in by_name["model-iteration"].sections[next(iter(by_name["model-iteration"].sections))]
    )
    assert "wang" not in by_name["planned"].sections[next(iter(by_name["planned"].sections))]


def test_a_setting_of_a_section_the_backend_does_not_read_is_refused(
    tmp_path: Path, capsys
) -> None:
    (tmp_path / "jobs.csv").write_text(WORKLOAD)
    args = ["run", "--cluster", "tiny", "--workload", str(tmp_path / "jobs.csv"), "--quiet"]
    # Yu's RAR parameter on a Wang iteration-level run
    rc = main([*args, "--policy", "ada-srsf", "--set", "xi1=2", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "'xi1'" in err and "applies only to the RAR model" in err
    assert not (tmp_path / "o").exists()


def test_model_auto_is_recorded_as_the_model_that_ran(tmp_path: Path, capsys) -> None:
    """The issue's example: ada-srsf and sjf-bco on wang20 run different models under
    model=auto; config.json and the first output line say which."""
    (tmp_path / "jobs.csv").write_text(WORKLOAD)
    base = ["run", "--cluster", "tiny", "--workload", str(tmp_path / "jobs.csv"), "--quiet"]
    seen = {}
    for policy in ("ada-srsf", "sjf-bco"):
        out = tmp_path / policy
        assert main([*base, "--policy", policy, "--out", str(out)]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        rec = json.loads((out / "config.json").read_text())
        assert rec["settings"]["model"]["model"] == "auto"  # the config as given
        seen[policy] = (rec["resolved"]["model"], rec["resolved"]["backend"], first)
        # the recorded config re-runs as it is, into the same directory (same run)
        again = ["run", "--config", str(out / "config.json"), "--quiet", "--out", str(out)]
        assert main(again) == 0
        capsys.readouterr()
    assert seen["ada-srsf"][:2] == ("wang", "model-iteration")
    assert seen["sjf-bco"][:2] == ("rar", "planned")
    assert seen["ada-srsf"][2].startswith("ran ada-srsf on backend model-iteration:")
    assert "model rar" in seen["sjf-bco"][2]
    jobs = load_workload("wang20", 0)
    assert resolve_run(jobs, "ada-srsf", None, Settings(model="rar"))["model"] == "rar"
    assert resolve_run(jobs, "ada-srsf", "ff")["placement"] == "ff"
