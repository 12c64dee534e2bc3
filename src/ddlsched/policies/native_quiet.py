"""Keep a native solver's stray ``printf`` lines off the user's terminal.

HiGHS's MIP solver (inside ``scipy.optimize.milp``) writes debug lines such as
``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();`` with C's
``printf``, straight to file descriptor 1, whatever ``output_flag`` or ``disp`` say; a
``ddlsched run --policy sia`` on a newTrace workload printed a dozen of them between its own
lines. :func:`native_stdout_silenced` points descriptor 1 at ``/dev/null`` around a call.

It does so only where nothing else can be writing to descriptor 1 meanwhile: in the main
thread of a process with no other Python thread (``run``, ``reproduce`` and its workers). In
``serve`` or ``live`` (threads) it does nothing, and the lines stay as they were.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library, for ``fflush(NULL)`` (C's stdout buffer holds printf's bytes when
    descriptor 1 is a pipe or file); None where there is none to load. Looked up once."""
    try:
        lib = ctypes.CDLL(None)
        lib.fflush.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError, TypeError):
        return None
    return lib


def _flush_c() -> None:
    lib = _libc()
    if lib is not None:
        lib.fflush(None)


def _alone() -> bool:
    """Only this thread can write: the main thread, and no other Python thread alive."""
    return threading.current_thread() is threading.main_thread() and threading.active_count() == 1


@contextmanager
def native_stdout_silenced() -> Iterator[None]:
    """Descriptor 1 goes to ``/dev/null`` for the block (what Python or C had buffered before
    is written first, what C buffered during it is dropped), then back; a no-op where another
    thread could write meanwhile or descriptor 1 cannot be duplicated."""
    if not _alone():
        yield
        return
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        pass
    _flush_c()
    try:
        saved = os.dup(1)
    except OSError:  # descriptor 1 closed: nothing to protect
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
        finally:
            os.close(null)
        yield
    finally:
        _flush_c()  # C's buffered bytes from the block go to /dev/null, not to the terminal
        os.dup2(saved, 1)
        os.close(saved)
