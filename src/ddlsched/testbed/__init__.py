"""A contention testbed on one machine (issue #30): servers as network namespaces behind
shaped uplinks to one bridge, real all-reduce traffic between them, and the measured fit of
the papers' contention models (docs/testbed.md).

``up``/``down``/``list_testbeds`` (:mod:`.lifecycle`) make, remove and show testbeds;
``measure`` (:mod:`.measure`) runs concurrent all-reduces on one and fits Wang's and Yu's
models to what it measured. Needs root and iproute2; the all-reduce workers need numpy, and
torch for the gloo backend (``pip install 'ddlsched[testbed]'``)."""

from .lifecycle import DownResult, TestbedRow, UpResult, down, list_testbeds, up
from .spec import TestbedSpec

__all__ = ["DownResult", "TestbedRow", "TestbedSpec", "UpResult", "down", "list_testbeds", "up"]
