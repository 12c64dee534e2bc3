"""What the anchor-edit scripts beside this file share: a block of our lines indented as the
anchor line they go next to (the artifact's code is never carried, only found)."""

from __future__ import annotations


def indent(block: str, line: str) -> list[str]:
    """``block``'s lines, each indented as ``line`` (blank lines left empty)."""
    pad = line[: len(line) - len(line.lstrip())]
    return [pad + b if b else b for b in block.splitlines()]
