"""Workloads: reading, validating and writing job traces."""

from .io import read_workload, validate_fits, write_workload_csv

__all__ = ["read_workload", "validate_fits", "write_workload_csv"]
