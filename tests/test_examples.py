"""Every examples/*.py runs as a user would run it, and the tutorial shows the example's code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

#: a line each example must print (regex); a new example needs an entry here
KEY_LINES = {
    "custom_policy.py": r"^hrrn\s+\d+\.\d$",
    "compare_policies.py": r"^ada-srsf\s+lwf\s+\d+\.\ds",
    "own_cluster.py": r"^ada-srsf\s+avg JCT\s+\d+\.\d s",
    "preemptive_policy.py": r"^evict-largest\s+avg JCT .* evictions \d+$",
    "sharing_policy.py": r"^fewest-bsbf\s+avg JCT\s+\d+\.\d s",
}


def test_every_example_has_a_key_line() -> None:
    assert EXAMPLES, "no examples/*.py found"
    assert sorted(p.name for p in EXAMPLES) == sorted(KEY_LINES)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    args = [str(tmp_path / "out")] if path.name == "own_cluster.py" else []
    r = subprocess.run(
        [sys.executable, str(path), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert re.search(KEY_LINES[path.name], r.stdout, re.MULTILINE), r.stdout
    if path.name == "own_cluster.py":
        assert (tmp_path / "out" / "ada-srsf" / "summary.json").is_file()


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", markdown, re.MULTILINE | re.DOTALL)


def test_tutorial_code_is_the_example_file() -> None:
    tutorial = (ROOT / "docs" / "tutorial-policy.md").read_text()
    example = (ROOT / "examples" / "custom_policy.py").read_text()
    assert example in _python_blocks(tutorial)


def test_readme_policy_snippet_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Writing a policy", 1)[1]
    code = _python_blocks(section)[0]
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["policy"].name == "fewest-gpus"
    assert scope["result"].summary["num_jobs"] == 160
