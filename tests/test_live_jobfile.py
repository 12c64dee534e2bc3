"""Live job files (``ddlsched.live.jobfile``): both spellings read to the same jobs, and every
bad input is one line naming the file, the line and the field."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.live.jobfile import LiveJob, check_commands, read_live_jobs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "live"

GOOD_TOML = """\
# two jobs, the second first in time
[[jobs]]
arrival = 5
gpus = 2
command = ["python3", "train.py", "--steps", "10"]
app = " cifar10 "

[[jobs]]
job_id = 9
arrival = 1.5
gpus = 1
command = ["python3", "-c", "print('a b')"]
max_restarts = 0
checkpoint_dir = "ckpt/9"
duration = 30
batch_size = 64
"""

GOOD_CSV = (
    "job_id,arrival,gpus,command,app,max_restarts,checkpoint_dir,duration,batch_size\n"
    "# comment lines and blank lines are skipped\n"
    "\n"
    ",5,2,python3 train.py --steps 10,cifar10,,,,\n"
    '9,1.5,1,"python3 -c ""print(\'a b\')""",,0,ckpt/9,30,64\n'
)

EXPECTED = [
    LiveJob(
        job_id=9,
        arrival=1.5,
        gpus=1,
        command=("python3", "-c", "print('a b')"),
        max_restarts=0,
        checkpoint_dir="ckpt/9",
        duration=30.0,
        batch_size=64,
    ),
    LiveJob(
        job_id=0,
        arrival=5.0,
        gpus=2,
        command=("python3", "train.py", "--steps", "10"),
        app="cifar10",
    ),
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "text"), [("jobs.toml", GOOD_TOML), ("jobs.csv", GOOD_CSV)])
def test_both_spellings_read_the_same_jobs_sorted_by_arrival(tmp_path, name, text):
    jobs = read_live_jobs(write(tmp_path, name, text))
    assert jobs == EXPECTED
    assert jobs[1].max_restarts == 3 and jobs[1].checkpoint_dir is None  # defaults
    assert jobs[0].line == (8 if name == "jobs.toml" else 5)


def test_ties_in_arrival_go_by_job_id(tmp_path):
    text = "job_id,arrival,gpus,command\n3,0,1,a\n1,0,1,b\n2,0,1,c\n"
    assert [j.job_id for j in read_live_jobs(write(tmp_path, "j.csv", text))] == [1, 2, 3]


def test_the_shipped_examples_agree_and_their_commands_exist():
    toml = read_live_jobs(EXAMPLES / "jobs.toml")
    csv = read_live_jobs(EXAMPLES / "jobs.csv")
    assert toml == csv
    assert len(toml) >= 6
    assert len({j.gpus for j in toml}) >= 3 and len({j.arrival for j in toml}) == len(toml)
    check_commands(toml, str(EXAMPLES / "jobs.toml"), cwd=str(ROOT))
    for job in toml:
        assert job.command[:2] == ("python3", "examples/live/train.py")


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as info:
        read_live_jobs(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    return message


def toml_job(body: str) -> str:
    return f"# a comment\n[[jobs]]\n{body}\n"


OK = 'arrival = 0\ngpus = 1\ncommand = ["true"]'

#: (TOML text, line, field, words of the message)
BAD_TOML = [
    ("[[jobs]]\narrival = 0\ngpus = 1\n", 1, "jobs[0].command", "missing command"),
    (toml_job("arrival = 0\ngpus = 1\ncommand = []"), 5, "jobs[0].command", "the command is empty"),
    (toml_job('arrival = 0\ngpus = 1\ncommand = ""'), 5, "jobs[0].command", "the command is empty"),
    (toml_job('arrival = 0\ngpus = 1\ncommand = [""]'), 5, "jobs[0].command", "program name"),
    (toml_job('arrival = 0\ngpus = 1\ncommand = "python3 x.py"'), 5, "jobs[0].command", "list"),
    (toml_job('arrival = 0\ngpus = 1\ncommand = ["a", 1]'), 5, "jobs[0].command", "argument 1"),
    (toml_job('gpus = 1\ncommand = ["a"]'), 2, "jobs[0].arrival", "missing arrival"),
    (toml_job('arrival = 0\ncommand = ["a"]'), 2, "jobs[0].gpus", "missing gpus"),
    (
        toml_job('arrival = ""\ngpus = 1\ncommand = ["a"]'),
        3,
        "jobs[0].arrival",
        "expected a number",
    ),
    (toml_job('arrival = 0\ngpus = 0\ncommand = ["a"]'), 4, "jobs[0].gpus", "gpus must be >= 1"),
    (toml_job('arrival = 0\ngpus = -2\ncommand = ["a"]'), 4, "jobs[0].gpus", ">= 1, got -2"),
    (
        toml_job('arrival = 0\ngpus = 1.5\ncommand = ["a"]'),
        4,
        "jobs[0].gpus",
        "expected an integer",
    ),
    (toml_job('arrival = 0\ngpus = "2"\ncommand = ["a"]'), 4, "jobs[0].gpus", "without quotes"),
    (toml_job('arrival = 0\ngpus = true\ncommand = ["a"]'), 4, "jobs[0].gpus", "got true"),
    (toml_job('arrival = -1\ngpus = 1\ncommand = ["a"]'), 3, "jobs[0].arrival", ">= 0"),
    (toml_job('arrival = nan\ngpus = 1\ncommand = ["a"]'), 3, "jobs[0].arrival", "finite"),
    (toml_job('arrival = inf\ngpus = 1\ncommand = ["a"]'), 3, "jobs[0].arrival", "finite"),
    (toml_job('arrival = 1e12\ngpus = 1\ncommand = ["a"]'), 3, "jobs[0].arrival", "time range"),
    (toml_job(OK + "\nmax_restarts = -1"), 6, "jobs[0].max_restarts", ">= 0"),
    (toml_job(OK + "\nduration = 0"), 6, "jobs[0].duration", "> 0"),
    (toml_job(OK + "\nbatch_size = 0"), 6, "jobs[0].batch_size", ">= 1"),
    (toml_job(OK + '\napp = ""'), 6, "jobs[0].app", "empty"),
    (toml_job(OK + "\napp = 3"), 6, "jobs[0].app", "expected text"),
    (toml_job(OK + "\ngpu = 2"), 6, "jobs[0].gpu", "did you mean 'gpus'"),
    (toml_job(OK + "\njob_id = -1"), 6, "jobs[0].job_id", ">= 0"),
    (
        toml_job(OK + "\njob_id = 4") + "\n[[jobs]]\n" + OK + "\njob_id = 4\n",
        12,
        "jobs[1].job_id",
        "duplicate job_id 4 (also at line 2)",
    ),
    (
        toml_job(OK) + "\n[[jobs]]\njob_id = 0\narrival = 0\ngpus = 1\ncommand = ['b']\n",
        8,
        "jobs[1].job_id",
        "duplicate job_id 0",
    ),
    (toml_job(OK) + "\n[[jobs]]\n" + OK.replace("gpus = 1", "gpus = 0"), 9, "jobs[1].gpus", ">= 1"),
]


@pytest.mark.parametrize(("text", "line", "field", "words"), BAD_TOML)
def test_bad_toml_names_file_line_and_field(tmp_path, text, line, field, words):
    message = error_of(write(tmp_path, "jobs.toml", text))
    assert f"line {line}," in message and f"field '{field}'" in message, message
    assert words in message, message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "file is empty"),
        ("title = 'x'\n", "unknown top-level key 'title'"),
        ("job = 1\n", "did you mean 'jobs'"),
        ("jobs = 3\n", "list of tables"),
        ("jobs = []\n", "no jobs"),
        ("[[jobs]\n", "invalid TOML"),
    ],
)
def test_bad_toml_files(tmp_path, text, words):
    assert words in error_of(write(tmp_path, "jobs.toml", text))


HEADER = "job_id,arrival,gpus,command\n"

#: (CSV text, line, field, words of the message)
BAD_CSV = [
    ("job_id,arrival,gpus\n0,0,1\n", 1, "command", "missing required column 'command'"),
    ("job_id,arrival,gpu,command\n0,0,1,a\n", 1, "gpu", "did you mean 'gpus'"),
    ("arrival,gpus,command,command\n0,1,a,b\n", 1, "command", "duplicate column"),
    (HEADER + "0,0,1,\n", 2, "command", "the command is empty"),
    (HEADER + "0,0,1,'   '\n", 2, "command", "program name"),
    (HEADER + "0,0,1,python3 'unclosed\n", 2, "command", "cannot split"),
    (HEADER + "0,0,0,a\n", 2, "gpus", "gpus must be >= 1"),
    (HEADER + "0,0,two,a\n", 2, "gpus", "expected an integer"),
    (HEADER + "0,0,1.5,a\n", 2, "gpus", "expected an integer"),
    (HEADER + "0,0,,a\n", 2, "gpus", "missing gpus"),
    (HEADER + "0,-1,1,a\n", 2, "arrival", ">= 0"),
    (HEADER + "0,nan,1,a\n", 2, "arrival", "finite"),
    (HEADER + "0,inf,1,a\n", 2, "arrival", "finite"),
    (HEADER + "0,0,1,a\n\n0,1,1,b\n", 4, "job_id", "duplicate job_id 0 (also at line 2)"),
    (HEADER + ",0,1,a\n0,1,1,b\n", 3, "job_id", "duplicate job_id 0"),
    (HEADER + "x,0,1,a\n", 2, "job_id", "expected an integer"),
    ("arrival,gpus,command,max_restarts\n0,1,a,-1\n", 2, "max_restarts", ">= 0"),
    ("arrival,gpus,command,duration\n0,1,a,-5\n", 2, "duration", "> 0"),
]


@pytest.mark.parametrize(("text", "line", "field", "words"), BAD_CSV)
def test_bad_csv_names_file_line_and_field(tmp_path, text, line, field, words):
    message = error_of(write(tmp_path, "jobs.csv", text))
    assert f"line {line}," in message and f"field '{field}'" in message, message
    assert words in message, message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "file is empty"),
        (HEADER, "no jobs"),
        (HEADER + "0,0,1\n", "expected 4 fields"),
        (HEADER + '0,0,1,"a\n', "unterminated quote"),
    ],
)
def test_bad_csv_files(tmp_path, text, words):
    assert words in error_of(write(tmp_path, "jobs.csv", text))


def test_unknown_file_types_and_missing_files(tmp_path):
    assert "expected .toml or .csv" in error_of(write(tmp_path, "jobs.yaml", "jobs: []"))
    assert "file not found" in error_of(tmp_path / "nope.toml")


# ---------------------------------------------------------------------------------- commands
def job(*command: str, job_id: int = 0, line: int | None = 4) -> LiveJob:
    return LiveJob(job_id=job_id, arrival=0.0, gpus=1, command=command, line=line)


def command_error(jobs: list[LiveJob], cwd: Path) -> str:
    with pytest.raises(InputError) as info:
        check_commands(jobs, "jobs.toml", cwd=str(cwd))
    message = str(info.value)
    assert "\n" not in message and message.startswith("jobs.toml, line 4, field 'command': job ")
    return message


def test_check_commands_accepts_programs_on_path_and_existing_files(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "train.py").write_text("")
    check_commands(
        [job("python3", "train.py"), job("sh", "-c", "true"), job("./run.sh"), job(str(script))],
        "jobs.toml",
        cwd=str(tmp_path),
    )


def test_check_commands_refuses_what_cannot_start(tmp_path):
    (tmp_path / "plain.sh").write_text("#!/bin/sh\n")
    (tmp_path / "adir").mkdir()
    cases = [
        (
            job("no-such-program-ddlsched", job_id=3),
            "job 3: program 'no-such-program-ddlsched' not found on PATH",
        ),
        (job("./missing.sh"), "program './missing.sh' does not exist"),
        (job("./plain.sh"), "is not executable"),
        (job("./adir"), "is a directory"),
        (job("python3", "examples/nope.py"), "script 'examples/nope.py' does not exist"),
    ]
    for bad, words in cases:
        assert words in command_error([job("true", job_id=1), bad], tmp_path)


def test_check_commands_takes_relative_paths_from_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("")
    monkeypatch.chdir(tmp_path)
    check_commands([job("python3", "train.py")])
    monkeypatch.chdir(os.path.dirname(tmp_path))
    with pytest.raises(InputError, match="script 'train.py' does not exist"):
        check_commands([job("python3", "train.py")])
