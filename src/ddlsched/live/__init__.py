"""The job-side client of ddlsched's live mode: a training program imports it to report its
progress and to learn when the scheduler wants it to stop (docs/live.md, "The job contract").

A program written against it runs unchanged outside ddlsched: every call is then a cheap no-op
or returns its default. Typical use::

    import ddlsched.live as live

    step = load_checkpoint_or_zero(live.checkpoint_dir())
    while step < steps:
        loss = train_one_step()
        step += 1
        live.report(step=step, samples=step * batch, loss=loss)
        if live.should_stop():
            save_checkpoint()
            raise SystemExit(0)  # any exit after a stop request is a preemption

SIGTERM is the scheduler's stop request (sent together with the stop file). The client takes
it over only once the program has shown that it polls: at its first ``should_stop()`` call (from
the main thread) it installs a handler that records the request and then runs the handler that
was in place (the program's own, installed before or after the import). Until then — and in a
program that never calls ``should_stop()`` — SIGTERM does what it does without the client (by
default the process ends at once, so a job that does not poll is not left running until the
scheduler's grace period ends and it is killed). A handler the program installs after its first
``should_stop()`` replaces the client's and is left alone (the stop file still reaches
``should_stop()``). Importing the module changes no signal handler.

This module imports only the standard library, so importing it costs nothing beyond the
``ddlsched`` package itself and it never pulls a heavy dependency into a training process.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import signal
import threading
import time
from typing import IO, Any

__all__ = [
    "attempt",
    "batch_size",
    "checkpoint_dir",
    "done_communicating",
    "gpu_type",
    "gpus",
    "job_id",
    "load_checkpoint",
    "may_communicate",
    "local_rank",
    "rank",
    "report",
    "save_checkpoint",
    "should_stop",
    "under_ddlsched",
    "world_size",
]

#: Environment variables the scheduler sets for every worker process of a job (docs/live.md).
ENV_JOB_ID = "DDLSCHED_JOB_ID"
ENV_ATTEMPT = "DDLSCHED_ATTEMPT"
ENV_GPUS = "DDLSCHED_GPUS"
ENV_CHECKPOINT_DIR = "DDLSCHED_CHECKPOINT_DIR"
ENV_PROGRESS = "DDLSCHED_PROGRESS"
ENV_STOP = "DDLSCHED_STOP"
ENV_BATCH_SIZE = "DDLSCHED_BATCH_SIZE"
#: the GPU type of the job's GPUs, on a cluster with declared GPU types (``[gpu_types]``)
ENV_GPU_TYPE = "DDLSCHED_GPU_TYPE"
#: the scheduler's communication channel: a Unix socket path (``live/channel.py``)
ENV_COMM = "DDLSCHED_COMM"

#: Least time between two looks at the stop file (seconds): should_stop() stays cheap in a loop.
STOP_CHECK_INTERVAL = 0.2

_lock = threading.Lock()
_stop_requested = False  # set by the SIGTERM handler or once the stop file was seen
_last_stop_check = -math.inf  # time.monotonic() of the last look at the stop file
_handler_installed = False
_previous_handler: Any = None
_progress: tuple[str, IO[str]] | None = None  # (path, open handle) of the progress file


# ---------------------------------------------------------------------------------- environment
def under_ddlsched() -> bool:
    """True when this process was started by ddlsched's live mode (``DDLSCHED_JOB_ID`` set)."""
    return bool(os.environ.get(ENV_JOB_ID))


def _env_int(name: str, default: int) -> int:
    """An integer environment variable, or ``default`` when it is unset, empty or not a number
    (the client never fails a training program over its environment)."""
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def job_id() -> int | None:
    """The job's id in the scheduler's job file, or None outside ddlsched."""
    value = _env_int(ENV_JOB_ID, -1)
    return value if value >= 0 else None


def attempt() -> int:
    """How many times this job was started before: 0 at its first start, +1 per restart."""
    return _env_int(ENV_ATTEMPT, 0)


def rank() -> int:
    """This worker's global rank (``RANK``; 0 outside a multi-process job)."""
    return _env_int("RANK", 0)


def world_size() -> int:
    """The number of worker processes of the job (``WORLD_SIZE``; 1 outside one)."""
    return _env_int("WORLD_SIZE", 1)


def local_rank() -> int:
    """This worker's rank on its node (``LOCAL_RANK``; 0 outside a multi-process job)."""
    return _env_int("LOCAL_RANK", 0)


def gpus() -> list[int]:
    """All the cluster-wide GPU ids the policy gave the job, sorted, the same list in every
    worker (``DDLSCHED_GPUS``; rank R runs on the R-th; empty outside ddlsched). For the devices
    a process may use, read ``CUDA_VISIBLE_DEVICES``."""
    out = []
    for part in os.environ.get(ENV_GPUS, "").split(","):
        part = part.strip()
        if part.isdigit():
            out.append(int(part))
    return out


def gpu_type() -> str | None:
    """The GPU type of the job's GPUs (``DDLSCHED_GPU_TYPE``), or None where the cluster
    declares no GPU types or outside ddlsched. A policy that gives a job GPUs of several
    types (not Sia) makes it the types in the order of the job's GPUs, comma-separated."""
    return os.environ.get(ENV_GPU_TYPE, "").strip() or None


def checkpoint_dir() -> str | None:
    """The job's checkpoint directory (it exists and stays the same across restarts), or None
    outside ddlsched: a program saves its state there and resumes from it at start."""
    return os.environ.get(ENV_CHECKPOINT_DIR) or None


def batch_size(default: int | None = None) -> int | None:
    """The total batch size an elastic policy (pollux) chose for this run, or ``default`` when
    the scheduler chose none. Split it across ``world_size()`` workers yourself."""
    value = _env_int(ENV_BATCH_SIZE, 0)
    return value if value > 0 else default


# ---------------------------------------------------------------------------------- progress
def _json_value(value: Any) -> Any:
    """``value`` as plain JSON: numpy/torch scalars via ``.item()``, NaN and infinity as null
    (the scheduler reads progress files as strict JSON), anything else unknown as its text."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return _json_value(item())
        except (TypeError, ValueError):
            pass
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    try:
        return _json_value(float(value))
    except (TypeError, ValueError):
        return str(value)


def _as_int(value: Any) -> int | None:
    if value is None:
        return None
    value = _json_value(value)
    return None if value is None else int(value)


def _as_float(value: Any) -> float | None:
    if value is None:
        return None
    value = _json_value(value)
    return None if value is None else float(value)


def _progress_handle(path: str) -> IO[str]:
    """The open progress file (kept open between reports; reopened if the path changes)."""
    global _progress
    if _progress is not None and _progress[0] == path and not _progress[1].closed:
        return _progress[1]
    if _progress is not None:
        _progress[1].close()
    handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open across reports
    if _progress is None:
        atexit.register(_close_progress)  # closed at exit, not left to the garbage collector
    _progress = (path, handle)
    return handle


def _close_progress() -> None:
    if _progress is not None:
        _progress[1].close()


def report(
    step: int | None = None,
    samples: int | None = None,
    loss: float | None = None,
    **extra: Any,
) -> None:
    """Tell the scheduler how far the job got: ``step`` (iterations done in total, across
    restarts), ``samples`` (training samples processed in total), ``loss``, and any other
    JSON-able values as keywords. Appends one JSON line to ``$DDLSCHED_PROGRESS`` and flushes
    it; cheap enough to call every step. A no-op outside ddlsched.

    The scheduler measures throughput from the time between reports, so report at least every
    few seconds; a job that never reports is still scheduled, by its GPU count and arrival.
    """
    path = os.environ.get(ENV_PROGRESS)
    if not path:
        return
    record = {
        "time": time.time(),
        "step": _as_int(step),
        "samples": _as_int(samples),
        "loss": _as_float(loss),
    }
    for key, value in extra.items():
        if key not in record:
            record[key] = _json_value(value)
    line = json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n"
    with _lock:
        handle = _progress_handle(path)
        handle.write(line)
        handle.flush()


# ---------------------------------------------------------------------------------- stopping
def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM (once the program polls) only records the request: the program checkpoints and
    exits at its next should_stop(). The handler in place before ours still runs."""
    global _stop_requested
    _stop_requested = True
    if callable(_previous_handler):
        _previous_handler(signum, frame)


def _install_handler() -> None:
    """Install the SIGTERM handler once, at the first should_stop() from the main thread (the
    only thread that may), wrapping the handler in place then; never again, so a handler the
    program installs later is left alone."""
    global _handler_installed, _previous_handler
    if _handler_installed or threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _on_sigterm)
    _previous_handler = previous if previous is not _on_sigterm else None
    _handler_installed = True


def should_stop() -> bool:
    """True once the scheduler asked the job to stop (SIGTERM, or the file ``$DDLSCHED_STOP``
    exists): save a checkpoint and exit. Stays true once true. Cheap enough to call every step
    (the file is looked at no more than every 0.2 s).

    The first call (from the main thread) installs the SIGTERM handler: from then on SIGTERM
    no longer ends the process by itself, it makes this return True (the module docstring).
    """
    global _stop_requested, _last_stop_check
    _install_handler()
    if _stop_requested:
        return True
    path = os.environ.get(ENV_STOP)
    if path:
        now = time.monotonic()
        if now - _last_stop_check >= STOP_CHECK_INTERVAL:
            _last_stop_check = now
            if os.path.exists(path):
                _stop_requested = True
    return _stop_requested


# ---------------------------------------------------------------------------------- checkpoints
def save_checkpoint(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file in the same directory, synced,
    then renamed over ``path``): a process killed mid-write leaves the previous checkpoint."""
    path = os.fspath(path)
    if isinstance(data, str):
        payload = data.encode("utf-8")
    elif isinstance(data, bytes | bytearray | memoryview):
        payload = bytes(data)
    else:
        raise TypeError(f"save_checkpoint: data must be bytes or str, not {type(data).__name__}")
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_checkpoint(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes :func:`save_checkpoint` wrote to ``path``, or None if there is none yet."""
    try:
        with open(os.fspath(path), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


# ------------------------------------------------------------------------ communication gate
#: seconds between two looks at the stop request while an ask waits for the gate's answer
COMM_POLL_S = 0.2
_comm: Any = None  # the open socket to the scheduler's channel (rank 0 only), or False: broken
_comm_buf = b""
_comm_iter = 0


def _comm_socket() -> Any:
    """The connection to ``$DDLSCHED_COMM`` (opened once), None outside a gated run or on a
    rank other than 0, False once it broke (the job then communicates ungated)."""
    global _comm
    if _comm is None:
        path = os.environ.get(ENV_COMM)
        if not path or rank() != 0:
            return None
        import socket

        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
        except OSError as e:
            print(f"ddlsched.live: no communication channel at {path} ({e}); ungated", flush=True)
            _comm = False
            return False
        _comm = sock
    return _comm


def _comm_call(request: dict[str, Any]) -> dict[str, Any] | None:
    """Send one request line and read its answer; None when a stop request arrives while
    waiting (the connection is then closed, which withdraws the ask) or the channel broke."""
    global _comm, _comm_buf
    sock = _comm_socket()
    if not sock:
        return {"go": True}
    try:
        sock.settimeout(None)
        sock.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        sock.settimeout(COMM_POLL_S)
        while b"\n" not in _comm_buf:
            try:
                data = sock.recv(4096)
            except TimeoutError:
                if _stop_requested or (
                    os.environ.get(ENV_STOP) and os.path.exists(os.environ[ENV_STOP])
                ):
                    sock.close()
                    _comm, _comm_buf = None, b""
                    return None
                continue
            if not data:
                raise OSError("the scheduler closed the channel")
            _comm_buf += data
    except OSError as e:
        print(f"ddlsched.live: communication channel broke ({e}); ungated", flush=True)
        _comm, _comm_buf = False, b""
        return {"go": True}
    line, _, _comm_buf = _comm_buf.partition(b"\n")
    try:
        answer = json.loads(line)
    except ValueError:
        answer = {"go": True}
    return answer if isinstance(answer, dict) else {"go": True}


def may_communicate(nbytes: float, iteration: int | None = None, block: bool = True) -> bool:
    """Ask the scheduler's communication gate whether this job's next all-reduce of
    ``nbytes`` bytes may start (Wang Alg. 3 lines 15–21: SRSF(n), AdaDUAL). Call it before
    each all-reduce and :func:`done_communicating` after it.

    ``block`` (default): wait until the gate lets it start, then return True. ``block=False``:
    return at once, False when the gate says not yet (ask again later). Returns False also
    when a stop request arrives while waiting: checkpoint and exit instead of communicating.
    Only rank 0 asks (the all-reduce cannot start before rank 0 joins it); other ranks, and a
    program outside a gated run, get True at once. If the channel cannot be reached the job
    communicates ungated (one line on stdout says so): the client never hangs a job on it."""
    global _comm_iter
    if _comm_socket() is None:
        return True
    it = _comm_iter if iteration is None else int(iteration)
    _comm_iter = it + 1
    job = job_id()
    answer = _comm_call(
        {"op": "ask", "job": -1 if job is None else job, "iter": it, "bytes": float(nbytes),
         "block": bool(block)}
    )  # fmt: skip
    if answer is None:
        return False
    if "error" in answer:
        print(f"ddlsched.live: the channel refused the ask: {answer['error']}", flush=True)
        return True
    return bool(answer.get("go", True))


def done_communicating() -> None:
    """Tell the gate that this job's all-reduce (the one :func:`may_communicate` let start)
    has ended, so waiting jobs may start theirs. A no-op where ``may_communicate`` is."""
    if _comm_socket() is None:
        return
    job = job_id()
    _comm_call({"op": "done", "job": -1 if job is None else job, "iter": _comm_iter - 1})
