"""README's command examples can be followed as written: every file they name exists (in the
repository or as the data under ../shared they document), and output paths print cleanly."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ddlsched.cli import main
from ddlsched.core.cluster_io import load_cluster

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[list[str]]:
    """The ``ddlsched …`` command lines of README's shell blocks (continuations joined)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line.split("#")[0]) for line in lines if line.startswith("ddlsched ")]


def test_every_repository_file_a_readme_command_names_exists() -> None:
    named = [
        a
        for cmd in readme_commands()
        for a in cmd
        if a.startswith("examples/") or re.search(r"\.(toml|csv|yaml|json)$", a)
    ]
    assert "examples/my-cluster.toml" in named
    for a in named:
        if a.startswith("../shared/") or a.startswith("results/"):
            continue  # the shared data folder; an earlier command's output
        assert (ROOT / a).exists(), a


def test_report_inputs_are_written_by_an_earlier_command() -> None:
    written: set[str] = set()
    for cmd in readme_commands():
        if cmd[1] in ("report", "plot"):
            dirs = [a for a in cmd[2:] if a.startswith("results/")]
            assert dirs and all(d.rstrip("/") in written for d in dirs), cmd
        if "--out" in cmd:
            written.add(cmd[cmd.index("--out") + 1].rstrip("/"))


def test_example_cluster_file_loads() -> None:
    cl = load_cluster(str(ROOT / "examples" / "my-cluster.toml"))
    assert cl.num_servers == 3 and cl.num_gpus == 16


def test_out_with_a_trailing_slash_prints_one_slash(tmp_path: Path, capsys) -> None:
    out = f"{tmp_path}/o/"
    args = ["run", "--cluster", "tiny", "--workload", str(ROOT / "examples" / "tiny-jobs.csv")]
    assert main([*args, "--policy", "srsf1", "--quiet", "--out", out]) == 0
    assert f"wrote {tmp_path}/o/config.json, summary.json" in capsys.readouterr().out
