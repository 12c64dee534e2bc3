"""Workloads: reading, validating and writing job traces."""

from .io import read_workload, validate_fits, write_workload_csv
from .traces import TRACE_FORMATS, detect_format, read_trace, write_trace

__all__ = [
    "TRACE_FORMATS",
    "detect_format",
    "read_trace",
    "read_workload",
    "validate_fits",
    "write_trace",
    "write_workload_csv",
]
