"""Every output file of one small run per built-in policy equals the committed golden copy,
byte for byte (issue #12: the engine redesign must not change behaviour)."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_cases import GOLDEN, cases, read_run, run_case

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outputs_equal_the_golden_copy(case, tmp_path: Path) -> None:
    if case.policy in ("min-total-duration-perf", "max-min-fairness", "max-min-fairness-perf"):
        pytest.importorskip("ecos")  # their golden copies are Gavel's solver's answers (gavel_lp)
    out = tmp_path / "out"
    run_case(case, out, tmp_path)
    want = GOLDEN / case.name
    assert want.is_dir(), f"no golden copy for {case.name}; run python tests/golden_cases.py"
    got = read_run(out, tmp_path)
    assert sorted(got) == sorted(p.name for p in want.iterdir())
    for name, data in got.items():
        assert data == (want / name).read_bytes(), (
            f"{case.name}/{name} differs from the golden copy"
        )


def test_the_golden_set_covers_every_builtin_policy() -> None:
    from ddlsched.policies.plugins import builtin_policy_names

    covered = {c.policy for c in CASES}
    assert set(builtin_policy_names()) <= covered, set(builtin_policy_names()) - covered
