"""``ddlsched compare`` (issue #13): per-job and average JCT differences of two real runs,
checked against numbers computed here from their jobs.csv."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.report.compare import compare_dirs

TRACE = """arrival,num_gpus,duration
0,8,100
5,4,50
6,4,10
7,4,30
8,8,20
"""


def _jct(d: Path) -> dict[int, float]:
    with open(d / "jobs.csv") as f:
        return {int(r["job_id"]): float(r["jct"]) for r in csv.DictReader(f)}


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "t.csv").write_text(TRACE)
    base = ["run", "--cluster", "tiny", "--workload", str(tmp_path / "t.csv"), "--quiet"]
    for policy in ("fifo", "sjf"):
        assert main([*base, "--policy", policy, "--out", str(tmp_path / policy)]) == 0
    return tmp_path / "fifo", tmp_path / "sjf"


def test_numbers_are_those_of_the_two_jobs_csv(runs, tmp_path, capsys) -> None:
    a, b = runs
    ja, jb = _jct(a), _jct(b)
    assert ja != jb  # the two policies order the queue differently
    out = tmp_path / "diff.csv"
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--json", "--out", str(out)]) == 0
    s = json.loads(capsys.readouterr().out)
    diffs = [jb[i] - ja[i] for i in sorted(ja)]
    assert s["matched_jobs"] == 5 and s["only_in_a"] == [] == s["only_in_b"]
    assert s["avg_jct_a"] == pytest.approx(sum(ja.values()) / 5)
    assert s["avg_jct_b"] == pytest.approx(sum(jb.values()) / 5)
    assert s["mean_abs_diff_s"] == pytest.approx(sum(abs(d) for d in diffs) / 5)
    assert s["max_abs_diff_s"] == pytest.approx(max(abs(d) for d in diffs))
    assert s["label_a"] == "fifo" and s["label_b"] == "sjf"
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert [int(r["job_id"]) for r in rows] == sorted(ja)
    assert [float(r["diff_s"]) for r in rows] == pytest.approx(diffs)
    assert main(["compare", str(a), str(b)]) == 0  # the table
    text = capsys.readouterr().out
    assert "avg JCT  A" in text and "jobs matched 5" in text


def test_identical_runs_differ_by_nothing(runs) -> None:
    c = compare_dirs(runs[0], runs[0])
    s = c.summary()
    assert s["avg_jct_diff_s"] == 0 and s["max_abs_diff_s"] == 0
    assert c.label_a != c.label_b  # still told apart (A …, B …)


def test_partial_overlap_is_listed_not_an_error(runs, tmp_path) -> None:
    a, _ = runs
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ("summary.json", "config.json", "segments.csv"):
        (cut / name).write_bytes((a / name).read_bytes())
    lines = (a / "jobs.csv").read_text().splitlines()
    (cut / "jobs.csv").write_text("\n".join(lines[:3]) + "\n")  # jobs 0 and 1 only
    c = compare_dirs(a, cut)
    assert len(c.jobs) == 2 and c.only_a == (2, 3, 4) and c.only_b == ()


def test_bad_input_is_one_line_exit_2(runs, tmp_path, capsys) -> None:
    a, _ = runs
    assert main(["compare", str(a), str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text("{}")
    (broken / "jobs.csv").write_text("job_id,arrival,start,finish,jct,queueing\n0,0,x,1,1,0\n")
    assert main(["compare", str(a), str(broken)]) == 2
    err = capsys.readouterr().err
    assert "jobs.csv" in err and err.count("\n") == 1
