"""Every extension point of ddlsched in one import (docs/design.md "Recipes"): each kind of
part is added by one registration call in one file of your own.

    from ddlsched.extend import register_policy, register_model, register_trace_format

- ``register_policy`` (and ``register_placement``, ``register_ordering``, ``register_gate``):
  a scheduling policy or a part of one (``ddlsched.policy`` has the policy-authoring API);
- ``register_model``: a job-level performance model, ``--set model=NAME``;
- ``register_trace_format``: a workload/trace file format, detected or ``--workload-format``;
- ``register_backend``: the engine set-up for a new kind of job.
"""

from .backends import Backend, register_backend, unregister_backend
from .core.ratemodels import register_model, unregister_model
from .policies.gates import register_gate
from .policies.ordering import register_ordering
from .policies.placement import register_placement
from .policies.plugins import register_policy, unregister_policy
from .workloads.traces import Sniff, register_trace_format, unregister_trace_format

__all__ = [
    "Backend",
    "Sniff",
    "register_backend",
    "register_gate",
    "register_model",
    "register_ordering",
    "register_placement",
    "register_policy",
    "register_trace_format",
    "unregister_backend",
    "unregister_model",
    "unregister_policy",
    "unregister_trace_format",
]
