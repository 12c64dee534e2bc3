"""Throughput fits shared by the worker processes of one ``reproduce`` or ``sweep`` (issue #15).

``fit_observations`` is a pure function of its arguments and memoises its results in each
process. Pollux runs on different workloads repeat many fits (jobs of one application that ran
the same configurations from the same start), also across the worker processes of one
experiment: on fig6a's Pollux runs, one memo for all runs needs ≈ 15 % fewer fits than one
per worker. While :func:`shared_fits` is active, every fit a worker computes is also written
to a private temporary directory, one small file per fit, and a worker that misses its own
memo looks there first. The directory lives as long as the experiment; the file holds the
exact arguments beside the parameters, so a hit is the very fit a fresh computation would give.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

#: the directory of the shared fits (inherited by forked workers); unset: nothing shared
ENV = "DDLSCHED_FIT_STORE"
_PARAMS = struct.Struct("<7d")


def _path(root: str, key_text: bytes) -> str:
    h = hashlib.blake2b(key_text, digest_size=16).hexdigest()
    return os.path.join(root, h[:2], h)


def load(key: tuple) -> tuple[float, ...] | None:
    """The parameters stored for ``key`` (``fit_observations``' exact arguments), or None."""
    root = os.environ.get(ENV)
    if not root:
        return None
    text = repr(key).encode()
    try:
        with open(_path(root, text), "rb") as f:
            data = f.read()
    except OSError:
        return None
    stored, _, packed = data.rpartition(b"\n")
    if stored != text or len(packed) != _PARAMS.size:  # another key (a hash collision)
        return None
    return _PARAMS.unpack(packed)


def store(key: tuple, params: tuple[float, ...]) -> None:
    """Share ``params`` for ``key``: written whole under a temporary name, then renamed."""
    root = os.environ.get(ENV)
    if not root:
        return
    text = repr(key).encode()
    path = _path(root, text)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(text + b"\n" + _PARAMS.pack(*params))
        os.replace(tmp, path)
    except OSError:  # the directory is gone (the experiment ended) or full: not shared
        try:
            os.unlink(tmp)
        except OSError:
            pass


@contextmanager
def shared_fits(needed: bool) -> Iterator[str | None]:
    """While the body runs, fits are shared through a new temporary directory (where
    ``needed``: Pollux runs on several worker processes); removed at the end, whatever
    happens. Yields the directory, or None."""
    if not needed:
        yield None
        return
    root = tempfile.mkdtemp(prefix="ddlsched-fits-")
    before = os.environ.get(ENV)
    try:
        for i in range(256):
            os.mkdir(os.path.join(root, f"{i:02x}"))
        os.environ[ENV] = root
        yield root
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before
        shutil.rmtree(root, ignore_errors=True)
