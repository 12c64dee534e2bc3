"""``--workload PRESET|FILE``: a seeded generator by name, or a workload file."""

from __future__ import annotations

import re
from pathlib import Path

from ..core.job import JobSpec
from ..errors import InputError
from .generators import WORKLOAD_PRESETS
from .io import read_workload


def load_workload(spec: str, seed: int = 0) -> list[JobSpec]:
    """Generate preset ``spec`` with ``seed``, or read ``spec`` as a workload file."""
    gen = WORKLOAD_PRESETS.get(spec.lower())
    if gen is not None and not Path(spec).is_file():
        return gen(seed)
    sized = re.match(r"^luo24-(\d+)$", spec.lower())
    if sized and not Path(spec).is_file():  # luo24-N: the Pollux recipe with N jobs
        from .luo24 import generate_pollux_workload

        return generate_pollux_workload(seed, num_jobs=int(sized.group(1)))
    path = Path(spec)
    if not path.exists():
        raise InputError(
            f"no such workload preset or file; presets: {', '.join(WORKLOAD_PRESETS)}",
            source=spec,
        )
    return read_workload(path)
