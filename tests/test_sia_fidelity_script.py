"""benchmarks/sia_fidelity.py on a folder laid out as the Sia artifact's, with tiny profiles
and a workload of our own (ddlsched carries none of the artifact): one ddlsched run per
workload beside the artifact's rows, repeated unseeded runs (``NAME#TAG``) pooled."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "sia_fidelity", ROOT / "benchmarks" / "sia_fidelity.py"
)
sia_fidelity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sia_fidelity)

sys.path.insert(0, str(Path(__file__).parent))
from test_sia_inputs import write_sia_profiles  # noqa: E402


def artifact_folder(tmp_path: Path, trace: str, jobs: int, epoch_progress: float) -> Path:
    """A folder in the Sia artifact's layout: small profiles of our own for two applications
    and ``workloads/TRACE/workload-1.csv`` with ``jobs`` jobs, 40 s apart."""
    sia = tmp_path / "sia-simulator"
    write_sia_profiles(sia / "traces", apps=("alpha", "beta"), epoch_progress=epoch_progress)
    wl = sia / "workloads" / trace
    wl.mkdir(parents=True)
    (wl / "workload-1.csv").write_text(
        "name,time,application,num_replicas,batch_size\n"
        + "".join(
            f"{('alpha', 'beta')[i % 2]}-{i},{40 * i},{('alpha', 'beta')[i % 2]},2,64\n"
            for i in range(jobs)
        )
    )
    return sia


def test_repeated_artifact_runs_are_pooled_and_their_range_printed(tmp_path, capsys) -> None:
    sia = artifact_folder(tmp_path, "philly", jobs=6, epoch_progress=3e3)
    results = tmp_path / "results.csv"
    with results.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trace", "workload", "policy", "avg_jct_s"])
        w.writerow(["philly", "workload-1", "pollux-unaware", "1000.0"])
        w.writerow(["philly", "workload-1", "pollux-unaware#r2", "1200.0"])
        w.writerow(["philly", "workload-1", "pollux-unaware#r3", "FAILED"])  # skipped
        w.writerow(["philly", "workload-1", "sia", "5.0"])  # another policy: not asked
        w.writerow(["saturn", "workload-1", "pollux-unaware", "7.0"])  # another trace
    argv = [str(sia), "--results", str(results), "--trace", "philly", "--workloads", "1"]
    assert sia_fidelity.main([*argv, "--policy", "pollux-unaware"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("philly")]
    assert len(rows) == 1
    cells = rows[0].split()
    assert cells[:4] == ["philly", "workload-1", "pollux-unaware", "1100.00"]
    ours = float(cells[4])
    assert cells[5] == f"{(ours - 1100.0) / 1100.0:+.2%}"
    inside = "inside" if 1000.0 <= ours <= 1200.0 else "outside"
    assert rows[0].endswith(f"2: 1000.00 … 1200.00 (+20.0%; ddlsched {inside})")
    assert sia_fidelity.main([*argv, "--workloads", "2"]) == 2  # no such rows
    # --keep: ddlsched's run directory stays, for per-job comparisons
    keep = tmp_path / "kept"
    assert sia_fidelity.main([*argv, "--policy", "pollux-unaware", "--keep", str(keep)]) == 0
    kept = json.loads((keep / "philly_workload-1_pollux-unaware" / "summary.json").read_text())
    assert f"{kept['avg_jct']:.2f}" == cells[4]  # the run whose average was printed
    assert (keep / "philly_workload-1_pollux-unaware" / "jobs.csv").exists()
    assert sia_fidelity.main([*argv, "--policy", "pollux-unaware", "--keep", str(keep)]) == 0


spec2 = importlib.util.spec_from_file_location(
    "sia_unaware_jcts", ROOT / "benchmarks" / "sia_unaware_jcts.py"
)
sia_unaware_jcts = importlib.util.module_from_spec(spec2)
spec2.loader.exec_module(sia_unaware_jcts)


def test_artifact_jcts_reads_the_last_round_of_a_plain_or_gzipped_stdout(tmp_path) -> None:
    text = (
        "Completed jobs:\n{'a-0': 10.5}\nAverage JCT: 10.5\n"
        "# checkpoint at simulated time 120\n"
        "Completed jobs:\n{'a-0': 10.5, 'b-1': 30.0}\nAverage JCT: 20.25\n"
        "Completed jobs:\n{}\nAverage JCT: 0\n"  # a resumed run's first round: no jobs yet
    )
    plain = tmp_path / "stdout.txt"
    plain.write_text(text)
    packed = tmp_path / "stdout.txt.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        assert sia_unaware_jcts.artifact_jcts(path) == {}, path  # the last round is taken
    text = text.rsplit("Completed jobs:", 1)[0]
    packed.write_bytes(gzip.compress(text.encode()))
    assert sia_unaware_jcts.artifact_jcts(packed) == {"a-0": 10.5, "b-1": 30.0}


def test_by_application_groups_the_jobs_both_runs_finished() -> None:
    theirs = {"bert-1": 100.0, "bert-7": 300.0, "cifar10-2": 50.0, "imagenet-3": 9e4}
    ours = {"bert-1": 50.0, "bert-7": 150.0, "cifar10-2": 75.0, "yolov3-4": 10.0}
    got = sia_unaware_jcts.by_application(theirs, ours)
    assert got == {"bert": (2, 0.5, -0.5), "cifar10": (1, 1.5, 0.5)}


spec3 = importlib.util.spec_from_file_location(
    "sia_unaware_nsga", ROOT / "benchmarks" / "sia_unaware_nsga.py"
)
sia_unaware_nsga = importlib.util.module_from_spec(spec3)
spec3.loader.exec_module(sia_unaware_nsga)


@pytest.mark.long
def test_nsga_study_runs_as_the_fidelity_script_and_reuses_kept_runs(tmp_path, capsys) -> None:
    """benchmarks/sia_unaware_nsga.py: its deterministic run is the fidelity script's run (one
    set of run settings, sia_fidelity.run_argv), its seeded runs use NSGA-II, and a kept study
    is reused rather than rerun."""
    pytest.importorskip("pymoo")
    sia = artifact_folder(tmp_path, "saturn", jobs=2, epoch_progress=3e2)
    results = tmp_path / "results.csv"
    results.write_text(
        "trace,workload,policy,avg_jct_s\n"
        "saturn,workload-1,pollux-unaware,900.0\n"
        "saturn,workload-1,pollux-unaware#r2,FAILED\n"
        "saturn,workload-1,sia,5.0\n"
    )
    argv = [str(sia), "--results", str(results), "--trace", "saturn", "--workloads", "1"]
    keep = tmp_path / "study"
    assert sia_unaware_nsga.main([*argv, "--seeds", "1", "--keep", str(keep)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("saturn"))
    assert row.split()[:4] == ["saturn", "workload-1", "900.0", row.split()[3]]
    runs = {p.name: json.loads((p / "summary.json").read_text()) for p in keep.iterdir()}
    assert sorted(runs) == [
        "saturn_workload-1_ddlsched",
        "saturn_workload-1_nsga2-s1",
    ]
    config = {p.name: json.loads((p / "config.json").read_text()) for p in keep.iterdir()}
    c = config["saturn_workload-1_nsga2-s1"]
    assert (c["settings"]["policy"]["pollux_search"], c["seed"]) == ("nsga2", 1)
    assert "pollux_search" not in config["saturn_workload-1_ddlsched"]["settings"]["policy"]
    assert float(row.split()[3]) == round(runs["saturn_workload-1_ddlsched"]["avg_jct"], 1)
    # the fidelity script's run of the same workload is the study's deterministic run
    assert sia_fidelity.main([*argv, "--policy", "pollux-unaware"]) == 0
    fid = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("saturn"))
    assert f"{runs['saturn_workload-1_ddlsched']['avg_jct']:.2f}" == fid.split()[4]
    # a kept study is read back, not rerun: a planted summary is what it reports
    planted = keep / "saturn_workload-1_nsga2-s1" / "summary.json"
    planted.write_text(json.dumps({"avg_jct": 1234.5}))
    assert sia_unaware_nsga.main([*argv, "--seeds", "1", "--keep", str(keep)]) == 0
    assert "nsga2 per seed: 1: 1234.5" in capsys.readouterr().out
