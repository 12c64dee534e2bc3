"""``--contention-fit SUMMARY.json`` (issue #30): ``testbed measure``'s fitted Wang model (a, b,
η) as the settings of ``ddlsched run`` and ``ddlsched live``, an explicit ``--set`` winning;
one-line errors naming the option; and Yu's α < 0 (a measured fit's) accepted above −1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.errors import InputError
from ddlsched.perf.rar import RarModel, linear_degradation
from ddlsched.settings import Settings
from ddlsched.testbed.fit import fit_settings

WORKLOAD = """job_id,arrival,num_gpus,iterations,model
1,0,2,200,resnet50
2,1,4,100,vgg16
3,2.5,1,300,lstm-ptb
4,3,8,50,inception3
"""

# a summary.json as `testbed measure` writes it (the keys --contention-fit reads, and others)
FIT = {"a": 0.0021, "b": 1.7e-8, "eta": 2.0e-9, "eta_over_b": 0.1176, "wang_mre": 0.03}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(WORKLOAD)
    fit = tmp_path / "summary.json"
    fit.write_text(json.dumps(FIT))
    return jobs, fit


def _run(jobs: Path, out: Path, *extra: str) -> dict:
    argv = ["run", "--cluster", "tiny", "--workload", str(jobs), "--policy", "srsf1"]
    assert main([*argv, "--quiet", "--out", str(out), *extra]) == 0
    config = json.loads((out / "config.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    return {"settings": config["settings"], "avg_jct": summary["avg_jct"]}


def _flat(settings: dict) -> dict:
    """config.json's settings, sectioned or flat, as one mapping."""
    out: dict = {}
    for k, v in settings.items():
        out.update(v if isinstance(v, dict) else {k: v})
    return out


def test_run_takes_the_fit_as_if_set(tmp_path: Path, files: tuple[Path, Path]) -> None:
    jobs, fit = files
    by_fit = _run(jobs, tmp_path / "fit", "--contention-fit", str(fit))
    by_set = _run(jobs, tmp_path / "set", *(f"--set={k}={FIT[k]!r}" for k in ("a", "b", "eta")))
    default = _run(jobs, tmp_path / "default")
    s = _flat(by_fit["settings"])
    assert (s["a"], s["b"], s["eta"]) == (FIT["a"], FIT["b"], FIT["eta"])
    assert by_fit == by_set  # the same run, recorded the same way
    assert by_fit["avg_jct"] != default["avg_jct"]  # the fit changed the simulated times


def test_explicit_set_wins_over_the_fit(tmp_path: Path, files: tuple[Path, Path]) -> None:
    jobs, fit = files
    res = _run(jobs, tmp_path / "o", "--contention-fit", str(fit), "--set", "eta=0")
    s = _flat(res["settings"])
    assert (s["a"], s["b"], s["eta"]) == (FIT["a"], FIT["b"], 0.0)


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "No such file"),
        ("{not json", "not JSON"),
        ("[1, 2]", "not a testbed measure"),
        (json.dumps({"a": 0.001, "b": 1e-8}), "'eta'"),
        (json.dumps({"a": 0.001, "b": 1e-8, "eta": "x"}), "'eta'"),
    ],
)
def test_bad_fit_file_is_one_line_naming_the_option(
    tmp_path: Path, files: tuple[Path, Path], capsys, content, words
) -> None:
    jobs, _ = files
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    for cmd in (
        ["run", "--cluster", "tiny", "--workload", str(jobs), "--policy", "srsf1"],
        ["live", "--local", "--cluster", "tiny", "--workload", str(jobs), "--policy", "fifo"],
    ):
        out = tmp_path / "out"
        rc = main([*cmd, "--contention-fit", str(bad), "--out", str(out), "--quiet"])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and "--contention-fit" in err and words in err, err
        assert len(err.splitlines()) == 1
        assert not out.exists()  # refused before anything ran


def test_fit_settings_keep_every_digit(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"a": 0.1 + 0.2, "b": 1 / 3 * 1e-7, "eta": 7}))
    got = fit_settings(str(p))
    assert {k: float(v) for k, v in got.items()} == {"a": 0.1 + 0.2, "b": 1 / 3 * 1e-7, "eta": 7.0}


def test_yu_alpha_below_zero_is_accepted_above_minus_one() -> None:
    # the testbed's Yu fit gives α ≈ −0.26 (docs/models.md): f = k(1+α) − α still grows with k
    s = Settings.from_mapping({"alpha": "-0.26"})
    assert s.rar.alpha == -0.26
    f = [linear_degradation(s.alpha, k) for k in (1, 2, 3, 4)]
    assert f[0] == 1.0 and f == sorted(f) and len(set(f)) == 4
    assert isinstance(s.rar, RarModel)
    for bad in ("-1", "-1.5"):
        with pytest.raises(InputError, match="must be > −1"):
            Settings.from_mapping({"alpha": bad})
