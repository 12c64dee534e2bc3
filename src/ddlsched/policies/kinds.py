"""The kinds of job a policy runs on, as ``register_policy(kinds=...)`` and ``ddlsched list``
name them (``policies.plugins`` re-exports them)."""

MODEL_JOBS = "model jobs (Wang/Yu)"
PROFILE_JOBS = "application-profile jobs"
TRACE_JOBS = "trace (duration) jobs"
JOB_KINDS = (MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS)
