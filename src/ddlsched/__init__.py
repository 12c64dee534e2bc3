"""ddlsched: simulate and schedule distributed deep-learning jobs on shared GPU clusters.

A user composes a few names::

    from ddlsched import load_cluster, load_workload, simulate
    result = simulate(load_cluster("wang20"), load_workload("wang20", seed=0), "ada-srsf")
    result.summary["avg_jct"]
"""

__version__ = "0.1.0"

import os as _os  # noqa: E402

# The simulator's linear algebra is on tiny matrices (the goodput fits, scipy's interpolation):
# threaded OpenBLAS only adds synchronisation, and on a loaded machine it made a Pollux run 14×
# slower (docs/performance.md). Set before numpy loads; an explicit user setting wins.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .api import Settings, build_simulator, simulate, simulate_named  # noqa: E402
from .core.cluster import Cluster, Server  # noqa: E402
from .core.cluster_io import load_cluster, read_cluster  # noqa: E402
from .core.job import JobSpec, ModelProfile  # noqa: E402
from .core.results import SimResult, write_result  # noqa: E402
from .core.simulator import Simulator  # noqa: E402
from .errors import InputError  # noqa: E402
from .policies.base import Policy  # noqa: E402
from .workloads.io import read_workload, write_workload_csv  # noqa: E402
from .workloads.presets import load_workload  # noqa: E402

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
