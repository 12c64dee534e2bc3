"""Compiling the Pollux search's kernel beside the runs that need it (issue #15).

Compiling ``pollux_kernel`` takes ≈ 10–12 s of one core, once per checkout (numba caches it).
A run that compiles it in-process waits that long; on two workers that both start with large
Pollux runs, both wait and both compile. Instead, ``reproduce`` and ``sweep`` (local worker
processes) wrap their runs in :func:`compiling_in_background`: one child process compiles the
kernel into numba's cache while the runs start with the Python search (the same allocations,
tests/test_pollux_search.py), and each Pollux run switches to the kernel once it is cached
(:func:`compile_pending` tells it to wait for the cache instead of compiling itself).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .pollux_search import compiled_search_ready, search_kernel

#: set (inherited by forked workers) while a child process compiles the kernel
PENDING_ENV = "DDLSCHED_POLLUX_KERNEL_PENDING"
#: how long the end of the runs waits for an unfinished compile before stopping it
FINISH_WAIT_S = 60.0


def compile_pending() -> bool:
    """Whether a child process is compiling the kernel for this process's runs."""
    return bool(os.environ.get(PENDING_ENV))


def _compile_command() -> list[str]:
    return [sys.executable, "-m", "ddlsched.warmup", "--pollux"]


@contextmanager
def compiling_in_background(needed: bool) -> Iterator[subprocess.Popen | None]:
    """While the body runs, a child process compiles the kernel into numba's cache, where
    ``needed`` (Pollux runs ahead) and the kernel is neither cached nor uncompilable; yields the
    child (None where nothing was started). The child is waited for at the end (up to
    ``FINISH_WAIT_S``, so the cache is complete for later runs) or, if the body fails or is
    interrupted, stopped at once: ended by its id, never left running."""
    if not needed or search_kernel() is None or compiled_search_ready():
        yield None
        return
    # its own session: a terminal's Ctrl-C reaches this process, which ends the child; its
    # output is dropped (a failed compile only means the runs keep the Python search)
    child = subprocess.Popen(
        _compile_command(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    before = os.environ.get(PENDING_ENV)
    os.environ[PENDING_ENV] = str(child.pid)
    ok = False
    try:
        yield child
        ok = True
    finally:
        if before is None:
            os.environ.pop(PENDING_ENV, None)
        else:
            os.environ[PENDING_ENV] = before
        _finish(child, FINISH_WAIT_S if ok else 0.0)


def _finish(child: subprocess.Popen, wait_s: float) -> None:
    """Let ``child`` end within ``wait_s`` seconds, else terminate it (then kill it) by pid.
    A compile that failed is said in one line on stderr: the runs were right, only slower."""
    try:
        code = child.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        pass
    else:
        if code != 0:
            print(
                f"ddlsched: note: compiling the Pollux search's kernel failed (exit {code}); "
                "the runs used the Python search (the same allocations, slower)",
                file=sys.stderr,
            )
        return
    child.terminate()  # numba writes each cache file atomically: nothing half-written stays
    try:
        child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
