"""``ddlsched check``: every policy's output is a valid schedule (light and heavy load), and every
corruption of a run directory the checker knows is reported as exactly its violation."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.api import Settings
from ddlsched.check import Violation, check_paths, check_run
from ddlsched.cli import main
from ddlsched.config import RunConfig, run_config
from ddlsched.core.results import JobRecord, summarize
from ddlsched.errors import InputError

# ---------------------------------------------------------------------- helpers
MODELS = ("resnet50", "vgg16", "lstm-ptb", "inception3")
SIZES = (1, 2, 4, 8, 1, 2)


def model_workload(path: Path, n: int, gap: float) -> Path:
    """``n`` model jobs (Wang's built-in models) arriving ``gap`` s apart on up to 8 GPUs."""
    lines = ["job_id,arrival,num_gpus,iterations,model"]
    for i in range(n):
        lines.append(f"{i},{i * gap:g},{SIZES[i % 6]},{40 + 23 * (i % 5)},{MODELS[i % 4]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def duration_trace(path: Path, n: int, gap: float) -> Path:
    """A generic CSV job trace of ``n`` duration jobs arriving ``gap`` s apart."""
    lines = ["arrival,num_gpus,duration"]
    for i in range(n):
        lines.append(f"{i * gap:g},{SIZES[i % 6]},{30 + 17 * (i % 7)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def run(out: Path, settings: dict | None = None, **options) -> Path:
    """Simulate in-process and write the run directory as ``ddlsched run`` does."""
    cfg = RunConfig(settings=Settings.from_mapping(settings or {}), **options)
    run_config(cfg, out)
    return out


def assert_valid(d: Path, policy: str = "") -> None:
    res = check_run(d)
    found = [v.format(d) for v in res.violations]
    assert found == [], "\n".join(found)
    assert res.num_jobs > 0 and res.num_segments >= res.num_jobs


def rows(d: Path, name: str) -> list[dict[str, str]]:
    return list(csv.DictReader((d / name).open()))


def shared(d: Path) -> bool:
    """Whether two jobs ever hold one GPU at once (the run really shared GPUs)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for r in rows(d, "segments.csv"):
        for g in r["placement"].split(";"):
            spans.setdefault(g, []).append((float(r["start"]), float(r["end"])))
    for s in spans.values():
        s.sort()
        if any(b[0] < a[1] for a, b in zip(s, s[1:], strict=False)):
            return True
    return False


def queued(d: Path) -> bool:
    return any(float(r["queueing"]) > 0 for r in rows(d, "jobs.csv"))


# ---------------------------------------------------------------------- (a) every policy
WANG = ("ada-srsf", "srsf1", "srsf2", "srsf3", "srsf", "fifo-ff")


@pytest.mark.parametrize("policy", WANG)
def test_wang_presets_every_placement_and_granularity(tmp_path: Path, policy: str) -> None:
    light = model_workload(tmp_path / "light.csv", 5, 40.0)
    heavy = model_workload(tmp_path / "heavy.csv", 12, 0.5)
    sharing = waiting = False
    for placement in ("ff", "ls", "rand", "lwf"):
        for granularity in ("iteration", "job"):
            for name, wl in (("light", light), ("heavy", heavy)):
                d = run(
                    tmp_path / f"{placement}-{granularity}-{name}",
                    {"granularity": granularity},
                    cluster="tiny",
                    workload=str(wl),
                    policy=policy,
                    placement=placement,
                    seed=1,
                )
                assert_valid(d)
                if name == "heavy":
                    sharing |= shared(d)
                    waiting |= queued(d)
    assert sharing and waiting  # the heavy load did load the cluster (shared GPUs, a queue)


@pytest.mark.parametrize("policy", ("sjf-bco", "yu-ff", "yu-ls", "yu-rand"))
def test_planners(tmp_path: Path, policy: str) -> None:
    for name, sample in (("light", 4), ("heavy", 16)):
        d = run(
            tmp_path / name,
            cluster="yu22-2",
            workload="yu22",
            sample=sample,
            max_gpus=8,
            policy=policy,
        )
        assert_valid(d)
    assert queued(d)  # 16 jobs at time 0 on the first 2 servers wait


@pytest.mark.parametrize("semantics", ("events", "rounds"))
@pytest.mark.parametrize("policy", ("fifo", "sjf", "tiresias", "sjf-ffs", "sjf-bsbf", "pollux"))
def test_application_profile_policies(tmp_path: Path, policy: str, semantics: str) -> None:
    settings = {"semantics": semantics}
    if policy == "tiresias":
        settings["tiresias_thresholds"] = "0.05"  # a low threshold so that it preempts
    for name, jobs, scale in (("light", 8, 1.0), ("heavy", 24, 20.0)):
        d = run(
            tmp_path / name,
            settings,
            cluster="luo24",
            workload=f"luo24-{jobs}",
            policy=policy,
            load_scale=scale,
            seed=2,
        )
        assert_valid(d, policy)
    summary = json.loads((d / "summary.json").read_text())
    assert summary["elastic"] is (policy == "pollux")
    assert summary["max_jobs_per_gpu"] == (2 if policy in ("sjf-ffs", "sjf-bsbf") else 1)
    if policy in ("sjf-ffs", "sjf-bsbf"):
        assert shared(d)  # the heavy load made them share GPUs
    if policy in ("pollux", "tiresias"):
        assert any(int(r["preemptions"]) for r in rows(d, "jobs.csv"))


@pytest.mark.parametrize("policy", ("fifo", "sjf", "tiresias"))
def test_trace_policies(tmp_path: Path, policy: str) -> None:
    settings = {"restart_delay": "5"}
    if policy == "tiresias":
        settings["tiresias_thresholds"] = "0.01"  # a low threshold so that it preempts
    for name, n, gap in (("light", 6, 200.0), ("heavy", 20, 1.0)):
        trace = duration_trace(tmp_path / f"{name}.csv", n, gap)
        d = run(tmp_path / name, settings, cluster="tiny", workload=str(trace), policy=policy)
        assert_valid(d)
    assert queued(d)
    if policy == "tiresias":
        assert any(int(r["preemptions"]) for r in rows(d, "jobs.csv"))


def test_a_sweep_directory_checks_every_run(tmp_path: Path) -> None:
    from ddlsched.sweep import load_sweep, run_sweep

    model_workload(tmp_path / "w.csv", 4, 1.0)
    (tmp_path / "s.toml").write_text(
        'cluster = "tiny"\nworkload = "w.csv"\n[sweep]\npolicies = ["srsf1", "fifo-ff"]\n'
        "seeds = 1\n"
    )
    run_sweep(load_sweep(tmp_path / "s.toml"), tmp_path / "sw", workers=1)
    (tmp_path / "sw" / "runs" / ".abc.tmp").mkdir()  # a writer's temporary directory: skipped
    checks = check_paths([tmp_path / "sw"])
    assert len(checks) == 2 and all(c.ok for c in checks)


# ---------------------------------------------------------------------- (b) mutations
#: on tiny (2 × 4 GPUs), FIFO: job 0 (4 GPUs, 100 s) at 0; job 1 (4 GPUs, 50 s) at 10 on the
#: other server; job 2 (2 GPUs, 30 s) waits for job 1 (60–90); job 3 (8 GPUs, 10 s) for all
BASE_TRACE = "arrival,num_gpus,duration\n0,4,100\n10,4,50\n20,2,30\n30,8,10\n"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    trace = tmp_path / "trace.csv"
    trace.write_text(BASE_TRACE)
    d = run(tmp_path / "run", cluster="tiny", workload=str(trace), policy="fifo")
    assert [(r["start"], r["finish"]) for r in rows(d, "jobs.csv")] == [
        ("0", "100"),
        ("10", "60"),
        ("60", "90"),
        ("100", "110"),
    ]
    assert check_run(d).ok
    return d


def write_csv(path: Path, table: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(table[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(table)
    path.write_text(buf.getvalue())


def digest(d: Path) -> None:
    """Record run_id and file digests in summary.json (the contract of issue #11 section 1)."""
    s = json.loads((d / "summary.json").read_text())
    s["run_id"] = hashlib.sha256((d / "config.json").read_bytes()).hexdigest()[:16]
    s["files"] = {
        n: hashlib.sha256((d / n).read_bytes()).hexdigest()
        for n in ("config.json", "jobs.csv", "segments.csv", "fairness.csv")
        if (d / n).exists()
    }
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


def rewrite(d: Path, jobs=None, segments=None, util: float | None = None) -> None:
    """Replace jobs.csv / segments.csv and make summary.json agree with the new jobs.csv (the
    engine's own ``summarize``), so that only the rule under test breaks; ``util``: a new
    gpu_util (a mutation that frees GPU time would otherwise also exceed the held time).
    Digests, where recorded, are refreshed likewise."""
    if jobs is not None:
        write_csv(d / "jobs.csv", jobs)
    if segments is not None:
        write_csv(d / "segments.csv", segments)
    s = json.loads((d / "summary.json").read_text())
    recs = [
        JobRecord(
            int(r["job_id"]),
            float(r["arrival"]),
            float(r["start"]),
            float(r["finish"]),
            int(r["gpus"]),
            r["placement"],
            int(r["preemptions"]),
        )
        for r in rows(d, "jobs.csv")
    ]
    fresh = summarize(recs, 0.0, 1)
    fresh["gpu_util"] = s["gpu_util"] if util is None else util
    s.update(fresh)
    s.pop("gpu_held", None)  # recomputed from the new segments by the check when absent
    # fairness.csv follows from jobs.csv (its own rule, tests/test_fairness.py): dropped with
    # its summary keys so only the rule under test breaks
    (d / "fairness.csv").unlink(missing_ok=True)
    for key in ("avg_ftf_rho", "max_ftf_rho", "jain_index"):
        s.pop(key, None)
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")
    if "files" in s:
        digest(d)


def violations(d: Path) -> list[tuple[str, str, int | None]]:
    return sorted((v.rule, v.file, v.line) for v in check_run(d).violations)


def test_start_before_arrival(base: Path) -> None:
    jobs, segs = rows(base, "jobs.csv"), rows(base, "segments.csv")
    jobs[1].update(start="5", queueing="-5")  # its GPUs are free from 0: no other rule breaks
    next(s for s in segs if s["job_id"] == "1")["start"] = "5"
    rewrite(base, jobs, segs)
    assert violations(base) == [("start-after-arrival", "jobs.csv", 3)]


def test_two_jobs_on_one_gpu_beyond_the_limit(base: Path) -> None:
    jobs, segs = rows(base, "jobs.csv"), rows(base, "segments.csv")
    jobs[2]["placement"] = "0:0;0:1"  # job 2 (60–90) onto job 0's GPUs (0–100)
    next(s for s in segs if s["job_id"] == "2")["placement"] = "0:0;0:1"
    rewrite(base, jobs, segs, util=0.5)
    lines = [v.format("D") for v in check_run(base).violations]
    assert len(lines) == 2 and all(": sharing: " in x and "at t=60" in x for x in lines)
    assert "GPU 0:0 holds 2 jobs (0, 2)" in lines[0] and "max_jobs_per_gpu = 1" in lines[0]


def test_a_gpu_dropped_from_a_segment(base: Path) -> None:
    jobs, segs = rows(base, "jobs.csv"), rows(base, "segments.csv")
    jobs[0]["placement"] = segs[0]["placement"] = "0:0;0:1;0:2"
    rewrite(base, jobs, segs, util=0.5)
    assert violations(base) == [("gpu-count", "segments.csv", 2)]
    assert "segment on 3 GPUs, the job asked for 4" in check_run(base).violations[0].message


def test_a_changed_summary_number(base: Path) -> None:
    s = json.loads((base / "summary.json").read_text())
    s["p95_jct"] += 0.01
    (base / "summary.json").write_text(json.dumps(s))
    (v,) = check_run(base).violations
    assert (v.rule, v.file) == ("summary", "summary.json") and v.message.startswith("p95_jct")


def test_jobs_csv_edited_after_the_run(base: Path) -> None:
    digest(base)
    assert check_run(base).ok and not check_run(base).notes
    lines = (base / "jobs.csv").read_text().splitlines(keepends=True)
    (base / "jobs.csv").write_text("".join([lines[0], lines[2], lines[1], *lines[3:]]))
    assert violations(base) == [("files-together", "jobs.csv", None)]


def test_config_of_another_run(base: Path, tmp_path: Path) -> None:
    digest(base)
    cfg = json.loads((base / "config.json").read_text())
    cfg["seed"] = 7
    (base / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    assert violations(base) == [
        ("files-together", "config.json", None),
        ("files-together", "summary.json", None),
    ]


def test_without_digests_it_is_a_note(base: Path) -> None:
    s = json.loads((base / "summary.json").read_text())
    s.pop("run_id", None), s.pop("files", None)  # as an older run wrote it
    (base / "summary.json").write_text(json.dumps(s))
    res = check_run(base)
    assert res.ok and any("not proven to belong together" in n for n in res.notes)


def test_a_job_without_segment(base: Path) -> None:
    segs = [s for s in rows(base, "segments.csv") if s["job_id"] != "3"]
    rewrite(base, segments=segs, util=0.5)
    assert violations(base) == [("no-segment", "jobs.csv", 5)]


def test_a_preemption_count_off_by_one(base: Path) -> None:
    jobs = rows(base, "jobs.csv")
    jobs[0]["preemptions"] = "1"
    rewrite(base, jobs)
    assert violations(base) == [("preemptions", "jobs.csv", 2)]


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda j, s: j[2].update(jct="31"), [("jct", "jobs.csv", 4)]),
        (lambda j, s: j[2].update(queueing="41"), [("queueing", "jobs.csv", 4)]),
        (lambda j, s: j[3].update(finish="109", jct="79"), [("last-segment", "segments.csv", 5)]),
        (lambda j, s: s[3].update(end="115"), [("last-segment", "segments.csv", 5)]),
        (
            lambda j, s: s[0].update(start="-1"),
            [("first-segment", "jobs.csv", 2), ("segment-within", "segments.csv", 2)],
        ),
        (lambda j, s: j[3].update(placement="0:0"), [("placement", "jobs.csv", 5)]),
        (
            lambda j, s: j[1].update(
                placement=s[1].update(placement="1:0;1:1;1:2;1:2") or "1:0;1:1;1:2;1:2"
            ),
            [("gang", "segments.csv", 3)],
        ),
        (
            lambda j, s: j[1].update(
                placement=s[1].update(placement="1:0;1:1;1:2;2:0") or "1:0;1:1;1:2;2:0"
            ),
            [("gang", "segments.csv", 3)],
        ),
        (
            lambda j, s: s.append({**s[3], "job_id": "9", "start": "200", "end": "210"}),
            [("unknown-job", "segments.csv", 6)],
        ),
        (
            lambda j, s: j[1].update(arrival="11", jct="49", queueing="-1"),
            [("start-after-arrival", "jobs.csv", 3), ("workload", "jobs.csv", 3)],
        ),
        (
            lambda j, s: j[0].update(start="101"),
            [
                ("finish-after-start", "jobs.csv", 2),
                ("first-segment", "jobs.csv", 2),
                ("queueing", "jobs.csv", 2),
                ("segment-within", "segments.csv", 2),
            ],
        ),
    ],
)
def test_each_rule(base: Path, edit, expected) -> None:
    jobs, segs = rows(base, "jobs.csv"), rows(base, "segments.csv")
    edit(jobs, segs)
    rewrite(base, jobs, segs, util=0.5)
    assert violations(base) == expected


def test_duplicate_job_and_a_segment_ending_before_it_starts(base: Path) -> None:
    jobs, segs = rows(base, "jobs.csv"), rows(base, "segments.csv")
    segs[3]["end"] = "99"  # job 3 runs 100–110
    rewrite(base, jobs, segs, util=0.5)
    with (base / "jobs.csv").open("a") as f:
        f.write(",".join(jobs[0].values()) + "\n")
    if "files" in json.loads((base / "summary.json").read_text()):
        digest(base)  # where digests are recorded, keep them right
    assert violations(base) == [
        ("duplicate-job", "jobs.csv", 6),
        ("last-segment", "segments.csv", 5),
        ("segment-times", "segments.csv", 5),
    ]


HELD = 740 / 880  # the base run's GPU-seconds held (4·110 + 4·50 + 2·30 + 4·10) / (8 · 110)


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"gpu_held": HELD}, []),
        ({"gpu_held": 0.8}, ["gpu-held"]),
        ({"gpu_util": 1.5}, ["gpu-util", "gpu-util"]),  # outside [0, 1], and above held
        ({"gpu_util": -0.25}, ["gpu-util"]),
        ({"num_jobs": 5}, ["summary"]),
        ({"makespan": "110"}, ["summary"]),
        ({"avg_jct_small": 1e999}, ["finite", "summary"]),
        ({"planned_makespan": -1e999}, ["finite"]),
    ],
)
def test_summary_rules(base: Path, change: dict, expected: list[str]) -> None:
    s = json.loads((base / "summary.json").read_text())
    assert s["gpu_util"] == pytest.approx(HELD)
    s.update(change)
    text = json.dumps(s).replace("Infinity", "1e999")  # JSON has no inf; 1e999 parses as inf
    (base / "summary.json").write_text(text)
    assert [v.rule for v in check_run(base).violations] == expected


@pytest.mark.parametrize(
    "name, line, field",
    [("jobs.csv", 2, "gpus"), ("jobs.csv", 4, "finish"), ("segments.csv", 3, "start")],
)
def test_malformed_rows(base: Path, name: str, line: int, field: str) -> None:
    table = rows(base, name)
    table[line - 2][field] = "1_000" if field == "gpus" else "nan"
    write_csv(base / name, table)
    res = check_run(base)
    bad = [v for v in res.violations if v.rule == "malformed"]
    assert [(v.file, v.line) for v in bad] == [(name, line)]
    assert f"field '{field}'" in bad[0].message
    # the row drops out of the rest of the check, which goes on (its job or segments unmatched)
    # (and the GPU time held drops below gpu_util when a segment goes)
    assert {v.rule for v in res.violations} <= {
        "fairness",  # fairness.csv: a dropped job changes the others' contention
        "files-together",  # where digests are recorded
        "gpu-held",  # where recorded: the dropped row changes makespan or held time
        "malformed",
        "no-segment",
        "unknown-job",
        "workload",
        "summary",
        "gpu-util",
    }


def test_segments_overlapping_within_a_job(base: Path) -> None:
    jobs, segs = rows(base, "jobs.csv"), rows(base, "segments.csv")
    jobs[0]["preemptions"] = "1"
    segs.insert(1, {**segs[0], "start": "50"})  # a second segment 50–100 beside 0–100
    segs[0]["end"] = "60"
    rewrite(base, jobs, segs)
    assert violations(base) == [("segment-overlap", "segments.csv", 3)]


def test_memory_of_co_resident_jobs(tmp_path: Path) -> None:
    # four vgg16 workers (4527 MB each) fit no 16 GB GPU together; three do
    wl = tmp_path / "w.csv"
    wl.write_text(
        "job_id,arrival,num_gpus,iterations,model\n"
        + "".join(f"{i},0,1,50,vgg16\n" for i in range(4))
    )
    d = run(tmp_path / "r", cluster="tiny", workload=str(wl), policy="srsf1")
    assert_valid(d)
    jobs, segs = rows(d, "jobs.csv"), rows(d, "segments.csv")
    for r in jobs + segs:
        r["placement"] = "0:0"
    rewrite(d, jobs, segs, util=0.01)
    (v,) = check_run(d).violations
    assert v.rule == "memory" and "GPU 0:0 holds jobs 0, 1, 2, 3" in v.message


def test_rounds_segments_end_at_the_finish_too(tmp_path: Path) -> None:
    # in rounds semantics the GPUs are held until the next boundary, but a segment is the time
    # the job ran: it ends at the finish (issue #11 section 3); a stretched one is a violation
    d = run(
        tmp_path / "r",
        {"semantics": "rounds"},
        cluster="luo24",
        workload="luo24-6",
        policy="fifo",
    )
    assert_valid(d)
    segs = rows(d, "segments.csv")
    finish = {r["job_id"]: float(r["finish"]) for r in rows(d, "jobs.csv")}
    segs[0]["end"] = str(finish[segs[0]["job_id"]] + 30)
    rewrite(d, segments=segs, util=0.01)
    assert [v.rule for v in check_run(d).violations][:1] == ["last-segment"]


def test_broken_files_are_violations_not_crashes(base: Path) -> None:
    (base / "summary.json").write_text('{"avg_jct": NaN')
    (base / "segments.csv").write_bytes(b"job_id,start\n\xff\n")
    (base / "jobs.csv").write_text("job_id,arrival\n")
    found = violations(base)
    assert found == [
        ("columns", "jobs.csv", 1),
        ("finite", "summary.json", None),
        ("malformed", "segments.csv", None),
    ]


def test_a_missing_file_is_a_violation(base: Path) -> None:
    (base / "segments.csv").unlink()
    expected = [("missing-file", "segments.csv", None)]
    if "files" in json.loads((base / "summary.json").read_text()):  # digests recorded
        expected.insert(0, ("files-together", "segments.csv", None))
    assert violations(base) == expected


def test_summary_nan_is_a_violation(base: Path) -> None:
    s = (base / "summary.json").read_text().replace('"gpu_util": ', '"gpu_util": NaN, "x": ')
    (base / "summary.json").write_text(s)
    assert ("finite", "summary.json", None) in violations(base)


# ---------------------------------------------------------------------- the command
def ddl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_ok_violation_and_unusable_input(base: Path, tmp_path: Path) -> None:
    r = ddl("check", str(base))
    assert r.returncode == 0 and r.stdout == f"ok: {base} (4 jobs, 4 segments)\n", r.stderr
    bad = tmp_path / "bad"
    shutil.copytree(base, bad)
    jobs = rows(bad, "jobs.csv")
    jobs[0]["preemptions"] = "2"
    rewrite(bad, jobs)
    r = ddl("check", str(base), str(bad))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"ok: {base} (4 jobs, 4 segments)",
        f"{bad}/jobs.csv:2: preemptions: job 0: 2 preemptions but 1 segments (0 breaks)",
    ]
    r = ddl("check", str(base), str(tmp_path / "nope"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"ddlsched: error: {tmp_path / 'nope'}: no such directory\n"


def test_cli_unusable_inputs(base: Path, tmp_path: Path, capsys) -> None:
    assert main(["check", str(base / "jobs.csv")]) == 2
    assert main(["check", str(tmp_path / "trace.csv")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["check", str(empty)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(e.startswith("ddlsched: error: ") for e in err)
    assert "not a run directory" in err[2]
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        (base / "jobs.csv").chmod(0)
        assert main(["check", str(base)]) == 2
        assert "cannot read" in capsys.readouterr().err


def test_run_dirs_errors() -> None:
    with pytest.raises(InputError):
        check_paths(["/nonexistent/dir"])
    assert Violation("r", "m", "f", 3).format("D/") == "D/f:3: r: m"


class OneGpuEach:
    """A plugin policy that runs every job on one GPU (a resize it does not declare)."""

    name = "one-gpu-each"

    def attach(self, sim) -> None:
        pass

    def schedule(self, sim) -> None:
        for job in list(sim.queue):
            if sim.idle:
                sim.start(job, [next(iter(sim.idle))], resize=True)


def test_a_resizing_policy_is_recorded_elastic(tmp_path: Path) -> None:
    from ddlsched.api import simulate
    from ddlsched.core.cluster import Cluster
    from ddlsched.core.results import write_result
    from ddlsched.workloads.presets import load_workload

    trace = tmp_path / "t.csv"
    trace.write_text(BASE_TRACE)
    res = simulate(Cluster.homogeneous(2, 4), load_workload(str(trace)), OneGpuEach())
    assert res.summary["elastic"] is True and res.summary["max_jobs_per_gpu"] == 1
    write_result(res, tmp_path / "r")
    assert check_run(tmp_path / "r").ok  # no config.json: GPU counts within 1..size unchecked
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    s["elastic"] = False
    (tmp_path / "r" / "summary.json").write_text(json.dumps(s))
    assert {v.rule for v in check_run(tmp_path / "r").violations} == {"gpu-count"}


def test_random_corruption_never_crashes(base: Path) -> None:
    """Truncated, bit-flipped, shuffled or spliced files: violations, never an exception."""
    import random

    rng = random.Random(11)
    originals = {
        n: (base / n).read_bytes()
        for n in ("config.json", "summary.json", "jobs.csv", "segments.csv")
    }
    digest(base)
    originals["summary.json"] = (base / "summary.json").read_bytes()
    caught = 0
    for _ in range(160):
        name = rng.choice(sorted(originals))
        data = bytearray(originals[name])
        op = rng.randrange(5)
        i = rng.randrange(len(data))
        if op == 0:
            data = data[:i]
        elif op == 1:
            data[i] ^= 1 << rng.randrange(8)
        elif op == 2:
            data[i:i] = bytes([rng.choice(b',;:\n"-.e0129x{}[]\xff')])
        elif op == 3:
            lines = bytes(data).splitlines(keepends=True)
            rng.shuffle(lines)
            data = bytearray(b"".join(lines))
        else:
            data = data[:i] + data[i:] * 2
        (base / name).write_bytes(bytes(data))
        res = check_run(base)
        caught += not res.ok
        (base / name).write_bytes(originals[name])
    assert caught >= 140  # nearly every change is caught (digests); none crashed


@pytest.mark.parametrize("name", ["config.json", "summary.json", "jobs.csv", "segments.csv"])
@pytest.mark.parametrize("content", ["", "null", "[" * 5000 + "]" * 5000])
def test_empty_null_or_deep_files(base: Path, name: str, content: str) -> None:
    (base / name).write_text(content)
    res = check_run(base)
    assert any(v.file == name and v.rule in ("malformed", "columns") for v in res.violations)


# ---------------------------------------------------------------------- interrupted live runs
def _interrupted_live_run(tmp_path: Path) -> Path:
    """A real live run (plain subprocesses) interrupted once one of its two jobs finished, as
    Ctrl-C does: the other job (a sleep that never polls) is stopped; the directory records the
    finished one. Nothing of it is left running."""
    import uuid

    from _processes import cmdlines

    from ddlsched.live.run import LiveConfig, run_live

    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    (tmp_path / "c.toml").write_text('name = "two"\n[[servers]]\nnum_gpus = 2\n')
    quick = json.dumps([sys.executable, "-c", "pass"])
    sleep = json.dumps([sys.executable, "-c", "import time; time.sleep(60)", tag])
    (tmp_path / "j.toml").write_text(
        f"[[jobs]]\njob_id = 0\narrival = 0\ngpus = 1\ncommand = {quick}\n\n"
        f"[[jobs]]\njob_id = 1\narrival = 0\ngpus = 1\ncommand = {sleep}\n"
    )
    out = tmp_path / "live"
    cfg = LiveConfig(
        jobs=str(tmp_path / "j.toml"),
        policy="fifo",
        cluster=str(tmp_path / "c.toml"),
        launcher="local",
        grace=5.0,
        out=str(out),
    )

    def ctrl_c(done: int, total: int) -> None:
        if done >= 1:
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_live(cfg, progress=ctrl_c)
    finally:
        left = [pid for pid, cmd in cmdlines().items() if tag in cmd]
        for pid in left:
            os.kill(pid, 9)
    assert left == []
    return out


def test_an_interrupted_live_run_checks_and_is_called_so(tmp_path: Path) -> None:
    out = _interrupted_live_run(tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["num_jobs"] == 1
    assert summary["max_jobs_per_gpu"] == 1 and summary["elastic"] is False
    res = check_run(out)
    assert [v.format(out) for v in res.violations] == []  # gpu_util was over what segments held
    assert res.notes == [
        "an interrupted run (Ctrl-C or SIGTERM; summary.json 'interrupted'): it records the 1 "
        "job(s) that finished before the interrupt; the others are not checked"
    ]

    # as such a run was written before: no max_jobs_per_gpu/elastic, gpu_util with the GPU
    # time of the job still running at the interrupt
    s = dict(summary)
    del s["max_jobs_per_gpu"], s["elastic"]
    s["gpu_util"] = min(1.0, s["gpu_held"] + 0.25)
    (out / "summary.json").write_text(json.dumps(s))
    res = check_run(out)
    assert [v.format(out) for v in res.violations] == []
    assert not any("older run" in n for n in res.notes), res.notes
    assert "summary.json records no 'elastic' (an interrupted run)" in " ".join(res.notes)
    assert any(n.startswith("gpu_util ") and "not checked" in n for n in res.notes), res.notes
    s["interrupted"] = False  # a completed run's gpu_util above its held share stays wrong
    (out / "summary.json").write_text(json.dumps(s))
    assert "gpu-util" in {v.rule for v in check_run(out).violations}


def test_a_utilisation_one_ulp_above_1_from_the_clocks_rounding_passes(tmp_path: Path) -> None:
    """The engine's clock keeps 9 decimals: a job arriving at 1394.4507352003948 s starts at
    1394.450735200 s, a hair early, so its GPU time over the makespan (measured from the
    arrival given) is 1 + 8.6e-14 on a cluster it fills. That is round-off, within the
    check's float tolerance (before 2026-12-07: "gpu_util outside [0, 1]"); 1 + 1e-6 is not."""
    from ddlsched.api import simulate
    from ddlsched.core.cluster import Cluster
    from ddlsched.core.job import JobSpec
    from ddlsched.core.results import write_result
    from ddlsched.workloads.trace_formats import PLACEHOLDER_MODEL, placeholder_model

    spec = JobSpec(
        0,
        1394.4507352003948,
        2,
        0,
        placeholder_model(PLACEHOLDER_MODEL),
        duration=4577.380487856993,
    )
    res = simulate(Cluster.homogeneous(1, 2), [spec], "fifo")
    assert 1.0 < res.summary["gpu_util"] < 1.0 + 1e-12
    write_result(res, tmp_path / "out")
    assert check_run(tmp_path / "out").ok
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    s["gpu_util"] = 1.0 + 1e-6
    (tmp_path / "out" / "summary.json").write_text(json.dumps(s))  # (its digests: other files)
    assert [v.rule for v in check_run(tmp_path / "out").violations][:1] == ["gpu-util"]
