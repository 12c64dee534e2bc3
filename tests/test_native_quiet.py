"""policies/native_quiet.py: a native library's printf() to descriptor 1 stays off the user's
output around Sia's ILP solve, and nothing of Python's own output is lost. Each case runs in a
fresh interpreter whose stdout is a pipe (C's stdout fully buffered, as under `make`, a pipe
to `tee` or a CI log), so what reaches descriptor 1 is exactly what the test reads."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX descriptors and libc")

PRELUDE = """
import ctypes, sys, threading
libc = ctypes.CDLL(None)
def noise():  # what HiGHS does: C's printf, past Python's sys.stdout
    libc.printf(b"HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();\\n")
from ddlsched.policies.native_quiet import native_stdout_silenced
"""


def _run(body: str) -> str:
    code = PRELUDE + textwrap.dedent(body)
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_printf_inside_the_block_is_dropped_and_python_output_kept() -> None:
    out = _run(
        """
        print("before", end="\\n")   # buffered by Python: must come out before the block
        with native_stdout_silenced():
            noise()
        print("after")
        """
    )
    assert out == "before\nafter\n"


def test_without_the_block_the_printf_reaches_stdout() -> None:
    """The control: the stray line is real, so the case above could fail."""
    out = _run(
        """
        print("before")
        sys.stdout.flush()
        noise()
        libc.fflush(None)
        print("after")
        """
    )
    assert out == (
        "before\nHighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();\nafter\n"
    )


def test_a_second_thread_leaves_descriptor_1_alone() -> None:
    """Where another thread could write meanwhile (serve, live), nothing is redirected: its
    output must not vanish, so the native line stays too."""
    out = _run(
        """
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        try:
            with native_stdout_silenced():
                noise()
                libc.fflush(None)
                print("from the block", flush=True)
        finally:
            stop.set()
            t.join()
        """
    )
    assert "tmpSolver.run();" in out and "from the block" in out


def test_sia_ilp_solve_keeps_highs_printf_off_stdout() -> None:
    """``solve_ilp`` (the 2 × 2 instance of test_sia_policy) with SciPy's ``milp`` made to
    printf as HiGHS does: the answer is unchanged and stdout holds only what Python printed."""
    out = _run(
        """
        import numpy as np
        import scipy.optimize
        real = scipy.optimize.milp
        def milp(*a, **k):
            noise()
            return real(*a, **k)
        scipy.optimize.milp = milp
        from ddlsched.policies.sia import solve_ilp
        a = np.array([[1.0, 0.75, 0.58], [1.0, 0.73, 0.91]])
        choice = solve_ilp(a, np.array([1, 2, 1]), np.array([0, 0, 1]), np.array([2, 1]), 1.1, [])
        print(choice)
        """
    )
    assert out == "[2, 1]\n"
