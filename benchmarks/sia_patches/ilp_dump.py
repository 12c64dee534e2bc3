"""Instrument a checkout of Sia's artifact so that its simulator appends every round's ILP to
``$SIA_ILP_DUMP`` (for ``benchmarks/sia_ilp_crosscheck.py``).

The artifact has no licence, so ddlsched carries none of its code, not even a patch's context
lines: this script finds two places in ``sia-simulator/sia.py`` by short anchors and inserts
our lines there (idempotent; the file is edited in place)::

    python benchmarks/sia_patches/ilp_dump.py ARTIFACT/sia-simulator

1. before the ILP's ``problem.solve(`` call in ``__solve_mip_rescaled`` (sia.py:1034 at commit
   aaf7a0de): record which adaptive jobs are pinned by checkpoint-restore and to which
   configuration column;
2. after ``chosen_configs =`` (sia.py:1100): pickle the cost matrix A, the job names, the
   pinned columns, CBC's 0/1 answer, the GPUs per type, λ_n and CBC's objective value.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anchors import indent  # noqa: E402

MARK = "# ddlsched ilp_dump"

BEFORE_SOLVE = f"""{MARK} (1/2)
_dbg_fixed = []
if adaptive_num_jobs > 0:
    for _jn in non_preemptible_jobnames['adaptive']:
        _dbg_fixed.append((adaptive_jobnames.index(_jn),
                           self.prev_allocs_v2['adaptive'].get(_jn)))
"""

AFTER_CHOICE = f"""{MARK} (2/2)
import os as _os, pickle as _pk
with open(_os.environ['SIA_ILP_DUMP'], 'ab') as _f:
    _pk.dump({{'A': np.asarray(adaptive_A), 'names': list(adaptive_jobnames),
              'fixed': _dbg_fixed, 'x': np.asarray(adaptive_output_soln),
              'free': np.asarray(free_gpus), 'lambda_n': opt_lambda_no_alloc,
              'obj': problem.value}}, _f)
"""


def instrument(text: str) -> str:
    """``text`` (sia.py) with both blocks inserted; unchanged if already instrumented."""
    if MARK in text:
        return text
    lines = text.splitlines()
    solve = next(i for i, s in enumerate(lines) if "problem.solve(solver=cp.CBC" in s)
    lines[solve:solve] = indent(BEFORE_SOLVE, lines[solve])
    choice = next(i for i, s in enumerate(lines) if s.strip().startswith("chosen_configs ="))
    lines[choice + 1 : choice + 1] = indent(AFTER_CHOICE, lines[choice])
    return "\n".join(lines) + "\n"


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    path = folder / "sia.py"
    path.write_text(instrument(path.read_text()))
    print(f"instrumented {path}; set SIA_ILP_DUMP=FILE when running multi_simulator.py")


if __name__ == "__main__":
    main()
