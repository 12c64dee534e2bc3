"""``--workload PRESET|FILE``: a seeded generator by name, or a workload file."""

from __future__ import annotations

import re
from pathlib import Path

from ..core.job import JobSpec
from ..errors import InputError
from .generators import WORKLOAD_PRESETS
from .io import read_workload


def load_workload(spec: str, seed: int = 0, philly: str | None = None) -> list[JobSpec]:
    """Generate preset ``spec`` with ``seed``, or read ``spec`` as a workload file.

    ``philly``: a Philly job-summary trace (``timestamp,duration,num_gpus,gpu_time,cluster``)
    from which ``luo24``/``luo24-N`` sample jobs (the Pollux recipe); built-in stand-in
    distributions when omitted."""
    name = spec.lower()
    sized = re.match(r"^luo24-(\d+)$", name)
    if (name == "luo24" or sized) and not Path(spec).is_file():
        from .luo24 import generate_pollux_workload

        n = int(sized.group(1)) if sized else 240
        return generate_pollux_workload(seed, num_jobs=n, philly=philly)
    gen = WORKLOAD_PRESETS.get(name)
    if gen is not None and not Path(spec).is_file():
        return gen(seed)
    path = Path(spec)
    if not path.exists():
        raise InputError(
            f"no such workload preset or file; presets: {', '.join(WORKLOAD_PRESETS)}",
            source=spec,
        )
    return read_workload(path)
