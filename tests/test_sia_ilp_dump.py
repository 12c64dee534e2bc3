"""benchmarks/sia_patches/ilp_dump.py inserts its two blocks at its anchors, once; a text of
our own stands in for the artifact's sia.py (ddlsched carries none of it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "ilp_dump", ROOT / "benchmarks" / "sia_patches" / "ilp_dump.py"
)
ilp_dump = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ilp_dump)

TEXT = """class P:
    def solve(self):
        x = 1
        problem.solve(solver=cp.CBC, verbose=False)
        if x:
            chosen_configs = np.argmax(y, axis=1)
            return chosen_configs
"""


def test_both_blocks_at_their_anchors_once_and_the_file_still_compiles() -> None:
    out = ilp_dump.instrument(TEXT)
    lines = out.splitlines()
    first = lines.index("        # ddlsched ilp_dump (1/2)")
    assert lines[first + 6].strip().startswith("problem.solve(")  # inserted before the solve
    second = lines.index("            # ddlsched ilp_dump (2/2)")
    assert lines[second - 1].strip().startswith("chosen_configs =")  # right after the choice
    assert ilp_dump.instrument(out) == out  # idempotent
    compile(out, "sia.py", "exec")
