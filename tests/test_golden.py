"""Every output file of one small run per built-in policy equals the committed golden copy,
byte for byte (issue #12: the engine redesign must not change behaviour). The runs happen in
one child process with CPU-independent numerical kernels (``golden_cases.PORTABLE_ENV``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_cases import GOLDEN, NEEDS_ECOS, cases, has_ecos, run_portably

CASES = cases()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Path:
    """Every case's normalised files, from one child process."""
    dest = tmp_path_factory.mktemp("golden-runs")
    run_portably(dest)
    return dest


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outputs_equal_the_golden_copy(case, outputs: Path) -> None:
    if case.policy in NEEDS_ECOS and not has_ecos():
        pytest.skip("ecos is not installed")  # their golden copies are Gavel's solver's answers
    want = GOLDEN / case.name
    assert want.is_dir(), f"no golden copy for {case.name}; run python tests/golden_cases.py"
    got = outputs / case.name
    assert sorted(p.name for p in got.iterdir()) == sorted(p.name for p in want.iterdir())
    for f in sorted(got.iterdir()):
        assert f.read_bytes() == (want / f.name).read_bytes(), (
            f"{case.name}/{f.name} differs from the golden copy"
        )


def test_the_golden_set_covers_every_builtin_policy() -> None:
    from ddlsched.policies.plugins import builtin_policy_names

    covered = {c.policy for c in CASES}
    assert set(builtin_policy_names()) <= covered, set(builtin_policy_names()) - covered
