"""All-or-nothing output directories (core/rundir.py): run ids, atomic publishing, the lock,
--overwrite, output-path errors, the umask, full disks (issue #11, section 1)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.core import rundir
from ddlsched.core.results import JobRecord, SegmentRecord, SimResult, write_result
from ddlsched.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "examples" / "tiny-jobs.csv")
RUN = ["run", "--cluster", "tiny", "--workload", TINY, "--policy", "srsf1", "--quiet"]
#: a run whose jobs.csv (160 jobs) is far larger than its config.json, in well under a second
WANG_JOB = ["run", "--cluster", "wang20", "--workload", "wang20", "--policy", "srsf1"]
WANG_JOB += ["--set", "granularity=job", "--quiet"]


def ddl(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def leftovers(parent: Path, keep: set[str]) -> list[str]:
    """Entries of ``parent`` other than ``keep``: staging directories, lock files."""
    return sorted(p.name for p in parent.iterdir() if p.name not in keep)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddlsched: error: "), r.stderr
    return lines[0]


def toy_result() -> SimResult:
    jobs = (JobRecord(1, 0.0, 0.0, 10.0, 1, "0:0", 0), JobRecord(2, 1.0, 2.0, 5.5, 2, "0:1;0:2", 1))
    segs = (SegmentRecord(1, 0.0, 10.0, "0:0"), SegmentRecord(2, 2.0, 5.5, "0:1;0:2"))
    summary = {"avg_jct": 7.25, "num_jobs": 2}
    return SimResult(jobs, segs, summary)


# ---------------------------------------------------------------------- run id and digests
def test_summary_records_run_id_and_file_digests(tmp_path: Path) -> None:
    assert main([*RUN, "--out", str(tmp_path / "o")]) == 0
    out = tmp_path / "o"
    summary = json.loads((out / "summary.json").read_text())
    config = (out / "config.json").read_bytes()
    assert summary["run_id"] == sha(config)[:16]
    names = ("config.json", "fairness.csv", "jobs.csv", "segments.csv")
    assert summary["files"] == {n: sha((out / n).read_bytes()) for n in names}
    assert sorted(p.name for p in out.iterdir()) == [*names, "summary.json"]
    assert leftovers(tmp_path, {"o"}) == []  # no staging directory, no lock file


def test_run_id_without_config_hashes_jobs_and_segments(tmp_path: Path) -> None:
    write_result(toy_result(), tmp_path / "o")
    out = tmp_path / "o"
    jobs, segs = (out / "jobs.csv").read_bytes(), (out / "segments.csv").read_bytes()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run_id"] == sha(jobs + segs)[:16]
    assert summary["files"] == {"jobs.csv": sha(jobs), "segments.csv": sha(segs)}
    assert not (out / "config.json").exists()


def test_non_finite_metric_is_refused_naming_it(tmp_path: Path) -> None:
    res = toy_result()
    bad = SimResult(res.jobs, res.segments, {**res.summary, "avg_jct": float("nan")})
    with pytest.raises(ValueError, match="avg_jct"):
        write_result(bad, tmp_path / "o")
    assert list(tmp_path.iterdir()) == []  # nothing written, not even the directory


# ---------------------------------------------------------------------- atomic publishing
@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "rename-aside"])
def test_interrupted_write_leaves_old_directory_whole(tmp_path, monkeypatch, exchange) -> None:
    if not exchange:
        monkeypatch.setattr(rundir, "_exchange", lambda a, b: False)
    out = tmp_path / "o"
    write_result(toy_result(), out, config={"seed": 1})
    old = snapshot(out)
    calls = []
    real = rundir.write_file

    def fail_third(path: Path, data: bytes) -> None:
        calls.append(path.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(rundir, "write_file", fail_third)
    with pytest.raises(KeyboardInterrupt):
        write_result(toy_result(), out, config={"seed": 2})
    assert snapshot(out) == old  # the old run, all of it
    assert leftovers(tmp_path, {"o"}) == []
    monkeypatch.setattr(rundir, "write_file", real)
    write_result(toy_result(), out, config={"seed": 2})  # and a complete write replaces it
    assert json.loads((out / "config.json").read_text()) == {"seed": 2}
    assert leftovers(tmp_path, {"o"}) == []


def test_interrupted_write_into_fresh_directory_leaves_nothing(tmp_path, monkeypatch) -> None:
    def boom(path: Path, data: bytes) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(rundir, "write_file", boom)
    with pytest.raises(KeyboardInterrupt):
        write_result(toy_result(), tmp_path / "a" / "b" / "o", config={"seed": 1})
    assert list(tmp_path.iterdir()) == []  # the parents it created are gone too


def test_out_symlink_keeps_the_link_and_replaces_its_target(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert main([*RUN, "--out", str(tmp_path / "link")]) == 0
    assert (tmp_path / "link").is_symlink() and (real / "summary.json").is_file()


# ---------------------------------------------------------------------- one writer at a time
HOLD = """
import sys, time
from pathlib import Path
from ddlsched.core.rundir import output_lock
with output_lock(Path(sys.argv[1]), sys.argv[1]):
    print("locked", flush=True)
    time.sleep(60)
"""


def test_second_writer_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "o"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = ddl(*RUN, "--out", str(out))
        line = one_line_error(r)
        assert f"being written by another ddlsched (pid {holder.pid})" in line
        assert not out.exists()
        holder.kill()  # killed while holding it: the kernel drops the lock
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
    assert (tmp_path / ".o.lock").exists()  # the stale lock file is still there …
    assert ddl(*RUN, "--out", str(out)).returncode == 0  # … and blocks nothing
    assert leftovers(tmp_path, {"o"}) == []


def test_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    with rundir.output_lock(tmp_path / "o", "o"):
        with pytest.raises(InputError, match=f"pid {os.getpid()}"):
            with rundir.output_lock(tmp_path / "o", "o"):
                pass
    with rundir.output_lock(tmp_path / "o", "o"):  # released: free again
        pass
    assert list(tmp_path.iterdir()) == []


def test_concurrent_runs_never_mix(tmp_path: Path) -> None:
    out = tmp_path / "o"
    for attempt in range(3):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "ddlsched.cli", *WANG_JOB, "--seed", str(seed)]
                + ["--out", str(out), "--overwrite"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for seed in (1, 2)
        ]
        try:
            results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=30)
        for rc, err in results:
            assert rc == 0 or (rc == 2 and "being written by another ddlsched" in err), err
        summary = json.loads((out / "summary.json").read_text())
        assert summary["run_id"] == sha((out / "config.json").read_bytes())[:16]
        for name, digest in summary["files"].items():
            assert sha((out / name).read_bytes()) == digest, (attempt, name)
        assert leftovers(tmp_path, {"o"}) == []


# ---------------------------------------------------------------------- --overwrite
def test_other_run_is_refused_before_simulating_unless_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert main([*RUN, "--out", str(out)]) == 0
    old = snapshot(out)
    assert main([*RUN, "--out", str(out)]) == 0  # the same configuration may replace it
    assert snapshot(out) == old
    # another seed and a workload that does not exist: the refusal comes first (no loading)
    r = ddl(*RUN, "--seed", "5", "--workload", str(tmp_path / "nope.csv"), "--out", str(out))
    line = one_line_error(r)
    assert "holds another run" in line and "--overwrite" in line
    assert snapshot(out) == old
    assert main([*RUN, "--seed", "5", "--out", str(out), "--overwrite"]) == 0
    assert json.loads((out / "config.json").read_text())["seed"] == 5
    assert leftovers(tmp_path, {"o"}) == []


def test_foreign_directory_is_refused_and_empty_one_accepted(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.tex").write_text("precious")
    line = one_line_error(ddl(*RUN, "--out", str(notes)))
    assert "holds no ddlsched run" in line
    assert (notes / "thesis.tex").read_text() == "precious"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*RUN, "--out", str(empty)]) == 0
    assert (empty / "summary.json").is_file()


def test_overwrite_in_an_experiment_file_is_honoured(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert main([*RUN, "--out", str(out)]) == 0
    exp = tmp_path / "exp.toml"
    exp.write_text(f'cluster = "tiny"\nworkload = "{TINY}"\npolicy = "srsf1"\nseed = 3\n')
    assert main(["run", "--config", str(exp), "--quiet", "--out", str(out)]) == 2
    exp.write_text(exp.read_text() + "overwrite = true\n")
    assert main(["run", "--config", str(exp), "--quiet", "--out", str(out)]) == 0
    record = json.loads((out / "config.json").read_text())
    assert record["seed"] == 3 and "overwrite" not in record  # not part of the run


# ---------------------------------------------------------------------- output-path errors
def test_output_path_errors_are_one_line_before_simulating(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    missing = str(tmp_path / "missing.csv")  # would fail only if the run got that far
    for out, expected in (
        (str(afile), "exists and is not a directory"),
        ("/dev/null", "exists and is not a directory"),
        (str(afile / "sub"), "is not a directory"),
        ("/", "file-system root"),
    ):
        r = ddl(*RUN[:4], missing, *RUN[5:], "--out", out)
        assert expected in one_line_error(r), (out, r.stderr)
    assert afile.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_read_only_directory(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions; the path-under-a-file case is tested")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        line = one_line_error(ddl(*RUN, "--out", str(ro / "o")))
        assert "Permission denied" in line
    finally:
        ro.chmod(0o755)


def _limit_file_size(limit: int):
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return pre


def test_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "o"
    pre = _limit_file_size(4096)  # config.json (≈1 KB) fits, jobs.csv (≈10 KB) does not
    r = ddl(*WANG_JOB, "--out", str(out), preexec_fn=pre)
    line = one_line_error(r)
    assert str(out) in line and "too large" in line.lower()
    assert list(tmp_path.iterdir()) == []
    # a re-run into an existing directory that fails the same way keeps the old run
    assert ddl(*WANG_JOB, "--out", str(out)).returncode == 0
    old = snapshot(out)
    r = ddl(*WANG_JOB, "--out", str(out), preexec_fn=pre)
    one_line_error(r)
    assert snapshot(out) == old and leftovers(tmp_path, {"o"}) == []


def test_trace_convert_checks_out_before_reading(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.csv")
    d = tmp_path / "d"
    d.mkdir()
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, expected in ((d, "is a directory"), (afile / "x.csv", "is not a directory")):
        line = one_line_error(ddl("trace", "convert", missing, "--out", str(out)))
        assert expected in line and "missing.csv" not in line
    r = ddl("trace", "convert", TINY, "--out", str(tmp_path / "new" / "t.csv"))
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------------- umask
@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_files_follow_the_umask(tmp_path: Path, mask: int) -> None:
    out = tmp_path / "a" / "o"
    trace = tmp_path / "t.csv"

    def pre() -> None:
        os.umask(mask)

    assert ddl(*RUN, "--out", str(out), preexec_fn=pre).returncode == 0
    assert ddl("trace", "convert", TINY, "--out", str(trace), preexec_fn=pre).returncode == 0

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    assert mode(out) == 0o777 & ~mask and mode(out.parent) == 0o777 & ~mask
    for f in out.iterdir():
        assert mode(f) == 0o666 & ~mask, f
    assert mode(trace) == 0o666 & ~mask


# ---------------------------------------------------------------------- reproduce
def test_reproduce_writes_whole_folder_refuses_another_and_checks_workers(tmp_path) -> None:
    for bad in ("0", "-5"):
        r = ddl("reproduce", "wang20-table5", "--workers", bad, "--out", str(tmp_path / "x"))
        assert "--workers" in one_line_error(r)
    out = tmp_path / "t5"
    args = ["reproduce", "wang20-table5", "--variant", "coarse", "--seeds", "1"]
    r = ddl(*args, "--workers", "1", "--out", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wang20-table5.png" in r.stdout and "reproduce.json" in r.stdout
    marker = json.loads((out / "reproduce.json").read_text())
    assert marker["experiment"] == "wang20-table5" and marker["seeds"] == 1
    assert marker["files"] == {
        n: sha((out / n).read_bytes()) for n in ("table.csv", "table.md", "wang20-table5.png")
    }
    old = snapshot(out)
    r = ddl(*args[:-1], "3", "--out", str(out))  # another result: refused before computing
    assert "holds another result" in one_line_error(r)
    assert snapshot(out) == old and leftovers(tmp_path, {"t5", "x"}) == []


def test_write_error_message_names_the_out_path() -> None:
    e = rundir.write_error("results/o", OSError(28, "No space left on device"))
    assert str(e) == "results/o: cannot write: No space left on device"


def test_stale_staging_names_never_collide(tmp_path: Path) -> None:
    """Two staging directories for one target are distinct (mkdtemp), so a crashed writer's
    leftover never mixes into a new one."""
    a = rundir.make_staging(tmp_path / "o", "o")
    b = rundir.make_staging(tmp_path / "o", "o")
    assert a != b and a.name.startswith(".o.") and a.parent == tmp_path


def test_staging_left_by_a_killed_writer_is_removed_by_the_next(tmp_path: Path) -> None:
    stale = tmp_path / ".o.k1ll3d.tmp"
    stale.mkdir()
    (stale / "summary.json").write_text("{}")
    aside = tmp_path / ".o.x.old"
    aside.mkdir()
    keep = tmp_path / ".other.y.tmp"
    keep.mkdir()
    assert main([*RUN, "--out", str(tmp_path / "o")]) == 0
    assert leftovers(tmp_path, {"o"}) == [".other.y.tmp"]


def test_renameat2_exchange_swaps_two_directories(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "new").write_text("new")
    (b / "old").write_text("old")
    if not rundir._exchange(a, b):
        pytest.skip("renameat2(RENAME_EXCHANGE) unavailable here; the fallback is tested above")
    assert [p.name for p in b.iterdir()] == ["new"] and [p.name for p in a.iterdir()] == ["old"]


def test_old_run_moved_aside_by_a_killed_writer_is_put_back(tmp_path: Path) -> None:
    """The fallback renames OUT aside before renaming the new one in; killed in between, the
    next writer restores the old run rather than deleting it."""
    write_result(toy_result(), tmp_path / "o", config={"seed": 1})
    old = snapshot(tmp_path / "o")
    aside = tmp_path / ".o.x1.old"
    aside.mkdir()
    (tmp_path / "o").rename(aside / "old")
    r = ddl(*RUN, "--out", str(tmp_path / "o"))  # another run: refused, the old one is back
    assert "holds another run" in one_line_error(r)
    assert snapshot(tmp_path / "o") == old and leftovers(tmp_path, {"o"}) == []
