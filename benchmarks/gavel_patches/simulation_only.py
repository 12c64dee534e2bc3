"""Make a copy of Gavel's ``scheduler/`` run its simulator without Gavel's optional parts
(for ``benchmarks/gavel_reference.py``): ``matrix_completion`` (only for
``--profiling_percentage < 1``) and the gRPC runtime (unused when simulating) become optional
imports, and ``GAVEL_LOG_LEVEL`` may quiet the per-round log (speed only).

ddlsched carries none of Gavel's code, not even a patch's context lines: each edit names one
line of Gavel's by its text and replaces it with ours (idempotent; files edited in place)::

    python benchmarks/gavel_patches/simulation_only.py GAVEL/scheduler
"""

from __future__ import annotations

import sys
from pathlib import Path

MARK = "ddlsched patch"

_OPTIONAL_MC = f"""try:  # {MARK}: only needed for --profiling_percentage < 1
    import matrix_completion
except ImportError:
    matrix_completion = None"""

#: file (under ``scheduler/``) → [(the line as Gavel has it, stripped; our lines)]
EDITS: dict[str, list[tuple[str, str]]] = {
    "scheduler.py": [
        ("import matrix_completion", _OPTIONAL_MC),
        (
            "from runtime.rpc import scheduler_server, scheduler_client",
            f"""try:  # {MARK}: gRPC runtime is unused when simulate=True
    from runtime.rpc import scheduler_server, scheduler_client
except ImportError:
    scheduler_server = scheduler_client = None""",
        ),
        (
            "logger.setLevel(logging.DEBUG)",
            f"""# {MARK}: GAVEL_LOG_LEVEL=WARNING silences the per-round log (speed only)
logger.setLevel(os.environ.get('GAVEL_LOG_LEVEL', 'DEBUG'))""",
        ),
    ],
    "throughput_estimator.py": [("import matrix_completion", _OPTIONAL_MC)],
}


def edit(text: str, edits: list[tuple[str, str]], name: str = "file") -> str:
    """``text`` with each anchor line replaced by its block (at the anchor's indentation);
    unchanged if already edited. A missing anchor is a ``ValueError`` naming it."""
    if MARK in text:
        return text
    lines = text.splitlines()
    for anchor, block in edits:
        at = next((i for i, s in enumerate(lines) if s.strip() == anchor), None)
        if at is None:
            raise ValueError(f"{name}: no line {anchor!r} (another Gavel commit?)")
        pad = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines[at : at + 1] = [pad + b if b else b for b in block.splitlines()]
    return "\n".join(lines) + "\n"


def apply(scheduler: Path) -> None:
    """Edit Gavel's ``scheduler/`` folder in place."""
    for rel, edits in EDITS.items():
        path = scheduler / rel
        path.write_text(edit(path.read_text(), edits, str(path)))


if __name__ == "__main__":
    apply(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
