"""ddlsched: simulate and schedule distributed deep-learning jobs on shared GPU clusters.

A user composes a few names::

    from ddlsched import load_cluster, load_workload, simulate
    result = simulate(load_cluster("wang20"), load_workload("wang20", seed=0), "ada-srsf")
    result.summary["avg_jct"]
"""

__version__ = "0.1.0"

import os as _os

# The simulator's linear algebra is on tiny matrices (the goodput fits, scipy's interpolation):
# threaded OpenBLAS only adds synchronisation, and on a loaded machine it made a Pollux run 14×
# slower (docs/performance.md). Set before numpy loads; an explicit user setting wins.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from .api import Settings, build_simulator, simulate, simulate_named
    from .core.cluster import Cluster, Server
    from .core.cluster_io import load_cluster, read_cluster
    from .core.job import JobSpec, ModelProfile
    from .core.results import SimResult, write_result
    from .core.simulator import Simulator
    from .errors import InputError
    from .policies.base import Policy
    from .workloads.io import read_workload, write_workload_csv
    from .workloads.presets import load_workload

#: public name → the module that defines it; imported on first use (PEP 562), so that
#: ``import ddlsched.live`` (the job-side client) and ``ddlsched --help`` load no numpy
_LAZY = {
    "Settings": "api",
    "build_simulator": "api",
    "simulate": "api",
    "simulate_named": "api",
    "Cluster": "core.cluster",
    "Server": "core.cluster",
    "load_cluster": "core.cluster_io",
    "read_cluster": "core.cluster_io",
    "JobSpec": "core.job",
    "ModelProfile": "core.job",
    "SimResult": "core.results",
    "write_result": "core.results",
    "Simulator": "core.simulator",
    "InputError": "errors",
    "Policy": "policies.base",
    "read_workload": "workloads.io",
    "write_workload_csv": "workloads.io",
    "load_workload": "workloads.presets",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ddlsched' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Cluster",
    "InputError",
    "JobSpec",
    "ModelProfile",
    "Policy",
    "Server",
    "Settings",
    "SimResult",
    "Simulator",
    "build_simulator",
    "load_cluster",
    "load_workload",
    "read_cluster",
    "read_workload",
    "simulate",
    "simulate_named",
    "write_result",
    "write_workload_csv",
]
