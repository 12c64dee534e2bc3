"""All-or-nothing output directories: check, lock, stage, publish.

Every output directory (``run``, ``reproduce``, each sweep cache entry) is written into a hidden
staging directory beside it (``.NAME.<random>.tmp`` in the same parent) and published with one
rename, so a reader sees either the old directory or the complete new one, never a mix:

- OUT absent: ``rename(staging, OUT)``.
- OUT present: Linux ``renameat2(RENAME_EXCHANGE)`` swaps the two in one step (OUT is never
  missing), then the old copy is deleted. Where that call is unavailable (not Linux, old kernel
  or libc, a file system without it) the fallback is rename OUT aside → rename staging in →
  delete the old copy; OUT is then missing for the instant between the two renames.

One writer at a time: :func:`output_lock` takes ``fcntl.flock`` on ``.NAME.lock`` beside OUT and
fails at once (:class:`~ddlsched.errors.InputError`, exit 2) when another process holds it; the
kernel drops the lock of a killed process, so a stale lock file never blocks. Files and
directories get the user's umask (``0o666``/``0o777`` minus it), as ``open``/``mkdir`` do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import glob
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError

#: errors of the output's file system that are the user's environment, not a bug: one line, exit 2
WRITE_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EFBIG,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EEXIST,
    errno.ENAMETOOLONG,
    errno.ELOOP,
    errno.EIO,
}
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def sha256_hex(data: bytes) -> str:
    """Full hex SHA-256 digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def run_id_of(data: bytes) -> str:
    """A run id: the first 16 hex digits of the SHA-256 of ``data`` (e.g. config.json's bytes)."""
    return sha256_hex(data)[:16]


def current_umask() -> int:
    """The process umask, read without changing it where Linux tells it (/proc), else by the
    set-and-restore dance."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """Mode of new files: ``0o666`` minus the umask (what ``open`` would give)."""
    return 0o666 & ~current_umask()


def dir_mode() -> int:
    """Mode of new directories: ``0o777`` minus the umask (what ``mkdir`` would give)."""
    return 0o777 & ~current_umask()


def write_error(path: str | Path, e: OSError) -> InputError:
    """A one-line error for an OSError while writing ``path`` (disk full, permission, ...)."""
    return InputError(f"cannot write: {e.strerror or e}", source=str(path))


def dumps_json(doc: object, what: str = "summary.json") -> str:
    """Canonical JSON text (sorted keys, indent 2, newline); NaN/inf are refused with an error
    naming the key (a non-finite metric is a bug elsewhere, never written)."""
    try:
        return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"
    except ValueError:
        bad = _non_finite_keys(doc)
        raise ValueError(
            f"{what}: non-finite value for {', '.join(bad) or 'a value'}; refusing to write it"
        ) from None


def _non_finite_keys(doc: object, prefix: str = "") -> list[str]:
    out: list[str] = []
    if isinstance(doc, Mapping):
        for k, v in doc.items():
            out += _non_finite_keys(v, f"{prefix}{k}.")
    elif isinstance(doc, list | tuple):
        for i, v in enumerate(doc):
            out += _non_finite_keys(v, f"{prefix}{i}.")
    elif isinstance(doc, float) and not math.isfinite(doc):
        out.append(prefix.rstrip("."))
    return out


# ---------------------------------------------------------------------- checking the target
def target_path(out: str | Path) -> Path:
    """The directory really written: ``out``, or what it links to when it is a symbolic link
    (the link stays; its target is replaced)."""
    p = Path(out)
    try:
        link = p.is_symlink()
    except OSError:  # a name the system refuses (too long): check_target says so
        link = False
    return Path(os.path.realpath(p)) if link else Path(os.path.abspath(p))


def check_target(out: str | Path) -> None:
    """One-line errors, before any work, for an ``--out`` that cannot become a directory: an
    existing file (``/dev/null``), a parent that is a file, the file-system root or the
    current directory (or a folder holding it)."""
    shown = str(out)
    try:
        _check_target(target_path(out), shown)
    except OSError as e:  # a name longer than the system allows
        raise InputError(
            f"cannot be a directory: {e.strerror}", source=shown, field="--out"
        ) from None


def _check_target(p: Path, shown: str) -> None:
    if p.exists() and not p.is_dir():
        raise InputError("exists and is not a directory", source=shown, field="--out")
    if p.parent == p:
        raise InputError("is the file-system root; name a directory to write", source=shown)
    cwd = Path(os.path.abspath(os.getcwd()))
    if p == cwd or p in cwd.parents:
        raise InputError(
            "is the current directory or holds it; name a directory to write", source=shown
        )
    for anc in p.parents:
        if anc.exists():
            if not anc.is_dir():
                raise InputError(f"{anc} is not a directory", source=shown, field="--out")
            break


def check_output_file(out: str | Path) -> None:
    """One-line errors, before any work, for an output *file* path that cannot be written: an
    existing directory, a parent that is a file, a folder without write permission."""
    shown = str(out)
    p = Path(os.path.abspath(out))
    if p.is_dir():
        raise InputError("is a directory; name a file to write", source=shown, field="--out")
    for anc in p.parents:
        if anc.exists():
            if not anc.is_dir():
                raise InputError(f"{anc} is not a directory", source=shown, field="--out")
            if not os.access(anc, os.W_OK | os.X_OK):
                raise InputError(f"no permission to write in {anc}", source=shown, field="--out")
            break


def make_parents(out: Path, shown: str) -> list[Path]:
    """Create the missing parents of ``out``; returns those created (deepest last) so a failed
    run can remove them again."""
    missing = []
    for anc in out.parents:
        if anc.exists():
            break
        missing.append(anc)
    created = []
    for d in reversed(missing):
        try:
            os.mkdir(d)  # the umask applies
        except FileExistsError:
            continue
        except OSError as e:
            remove_empty(created)
            raise write_error(shown, e) from None
        created.append(d)
    return created


def remove_empty(dirs: list[Path]) -> None:
    """Remove the directories in ``dirs`` (deepest last) that are empty; ignore the rest."""
    for d in reversed(dirs):
        try:
            os.rmdir(d)
        except OSError:
            pass


# ---------------------------------------------------------------------- locking
def lock_path(out: Path) -> Path:
    """The lock file of output directory ``out``: ``.NAME.lock`` in its parent."""
    return out.parent / f".{out.name}.lock"


@contextmanager
def output_lock(out: Path, shown: str) -> Iterator[None]:
    """Hold the exclusive lock of ``out`` (fail fast if another process holds it); the lock file
    is removed on release while still locked, and a lock taken on a file that was removed
    meanwhile is retaken on the new one, so two holders can never coexist."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (staging and publishing still apply)
        yield
        return
    path = lock_path(out)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, file_mode())
        except OSError as e:
            raise write_error(shown, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _read_pid(fd)
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise InputError(
                    f"is being written by another ddlsched (pid {holder or 'unknown'}); "
                    "wait for it to finish",
                    source=shown,
                ) from None
            raise write_error(shown, e) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed the file as we opened it: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:
        pass  # the pid is only for the message
    try:
        yield
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


# ---------------------------------------------------------------------- staging and publishing
def make_staging(out: Path, shown: str) -> Path:
    """A fresh hidden directory beside ``out`` (same file system, so publishing is a rename),
    with the umask's mode."""
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        os.chmod(tmp, dir_mode())
    except OSError as e:
        raise write_error(shown, e) from None
    return tmp


def write_file(path: Path, data: bytes) -> None:
    """Write a new file in a staging directory (umask mode) and flush it to disk; an OSError
    (disk full ...) propagates to :func:`output_dir`, which names the output directory."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


_renameat2: Callable[..., int] | None | bool = False  # False: not looked up yet


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` atomically with Linux ``renameat2(RENAME_EXCHANGE)``; False where
    the call is unavailable or the file system does not support it."""
    global _renameat2
    if _renameat2 is False:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fn = libc.renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
            fn.argtypes += [ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = None
    if _renameat2 is None:
        return False
    rc = _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)  # type: ignore[operator]
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def publish(staging: Path, out: Path, shown: str) -> None:
    """Make ``staging`` the directory ``out`` in one step (see the module docstring); the old
    ``out``, if any, is deleted afterwards."""
    try:
        _fsync_dir(staging)
        if not os.path.lexists(out):
            os.rename(staging, out)
        elif _exchange(staging, out):
            shutil.rmtree(staging, ignore_errors=True)  # now holds the old directory
        else:
            aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
            os.rename(out, aside / "old")
            try:
                os.rename(staging, out)
            except BaseException:
                os.rename(aside / "old", out)
                raise
            shutil.rmtree(aside, ignore_errors=True)
        _fsync_dir(out.parent)
    except OSError as e:
        raise write_error(shown, e) from None


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- the whole protocol
@contextmanager
def claim(
    out: str | Path,
    *,
    may_replace: Callable[[Path], str | None] | None = None,
    overwrite: bool = False,
) -> Iterator[Path]:
    """Check ``out``, create its parents and hold its lock; yields the real target path.

    ``may_replace(existing)`` returns None when the existing directory ``out`` may be replaced
    (it holds the same run) or a reason why not; without ``overwrite`` that reason is a one-line
    error raised here, before any simulation. Parents created here are removed again when the
    block fails."""
    shown = str(out)
    target = target_path(out)
    check_target(out)
    created = make_parents(target, shown)
    ok = False
    try:
        with output_lock(target, shown):
            remove_stale(target)
            if target.is_dir() and not overwrite and may_replace is not None:
                reason = may_replace(target)
                if reason is not None:
                    raise InputError(
                        f"{reason}; give --overwrite to replace it, or another --out",
                        source=shown,
                    )
            yield target
            ok = True
    finally:
        if not ok:
            remove_empty(created)


@contextmanager
def staged(target: Path, shown: str) -> Iterator[Path]:
    """Yield a staging directory beside ``target`` that replaces it in one rename when the
    block ends normally; on any exception (Ctrl-C and SIGTERM too) it is removed and
    ``target`` is untouched. The caller holds the lock (:func:`claim`)."""
    staging = make_staging(target, shown)
    ok = False
    try:
        try:
            yield staging
        except OSError as e:
            if e.errno in WRITE_ERRNOS:
                raise write_error(shown, e) from None
            raise
        publish(staging, target, shown)
        ok = True
    finally:
        if not ok:
            shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def output_dir(
    out: str | Path,
    *,
    may_replace: Callable[[Path], str | None] | None = None,
    overwrite: bool = False,
) -> Iterator[Path]:
    """Write an output directory all-or-nothing: :func:`claim` ``out`` (checks, lock, the
    replace rule) and yield a :func:`staged` directory that becomes ``out`` at the end."""
    with claim(out, may_replace=may_replace, overwrite=overwrite) as target:
        with staged(target, str(out)) as staging:
            yield staging


def remove_stale(target: Path) -> None:
    """Remove staging directories a killed writer left beside ``target`` (``.NAME.*.tmp``,
    ``.NAME.*.old``); called with the lock held, so no live writer owns them."""
    for p in sorted(target.parent.glob(f".{glob.escape(target.name)}.*")):
        if p.suffix not in (".tmp", ".old") or not p.is_dir() or p.is_symlink():
            continue
        if p.suffix == ".old" and (p / "old").is_dir() and not os.path.lexists(target):
            os.rename(p / "old", target)  # killed between the two renames: put it back
        shutil.rmtree(p, ignore_errors=True)


def is_empty_dir(path: Path) -> bool:
    """True for a directory with nothing in it."""
    try:
        return not any(path.iterdir())
    except OSError:
        return False


def run_dir_rule(run_id: str) -> Callable[[Path], str | None]:
    """The replace rule of a ``run`` directory: an empty directory, or one holding the run with
    this ``run_id`` (from summary.json, or the hash of its config.json), may be replaced."""

    def other(existing: Path, found: str) -> str | None:
        if found != run_id:
            return f"holds another run (run id {found}; this run is {run_id})"
        return None

    return _run_rule(other)


def _run_rule(other: Callable[[Path, str], str | None]) -> Callable[[Path], str | None]:
    """A replace rule: an empty directory may be replaced, one holding no ddlsched run may
    not, and for one holding a run (its run id ``found``) ``other(existing, found)`` says."""

    def rule(existing: Path) -> str | None:
        if is_empty_dir(existing):
            return None
        found = recorded_run_id(existing)
        if found is None:
            return "is not empty and holds no ddlsched run"
        return other(existing, found)

    return rule


def same_config_rule(
    record: Mapping[str, object], derived: tuple[str, ...] = ("resolved",)
) -> Callable[[Path], str | None]:
    """The replace rule of a ``run`` directory decided before the run is resolved: an empty
    directory, or one whose config.json equals ``record`` but for the ``derived`` keys (what a
    run records about itself, a function of the rest), may be replaced."""

    def canonical(doc: Mapping[str, object]) -> str:
        return dumps_json({k: v for k, v in doc.items() if k not in derived}, "config.json")

    mine = canonical(record)

    def other(existing: Path, found: str) -> str | None:
        try:
            doc = json.loads((existing / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = None
        if not isinstance(doc, dict) or canonical(doc) != mine:
            return f"holds another run (run id {found})"
        return None

    return _run_rule(other)


def recorded_run_id(directory: Path) -> str | None:
    """The run id of a result directory: ``summary.json``'s ``run_id``, else the hash of its
    ``config.json`` (directories written before run ids); None if neither can be read."""
    try:
        summary = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
        if isinstance(summary, dict) and isinstance(summary.get("run_id"), str):
            return summary["run_id"]
    except (OSError, ValueError):
        pass
    try:
        return run_id_of((directory / "config.json").read_bytes())
    except OSError:
        return None


def marker_rule(marker: str, run_id: str) -> Callable[[Path], str | None]:
    """The replace rule of a directory whose JSON file ``marker`` records its ``run_id`` (e.g.
    ``reproduce.json``): empty, or the same ``run_id``, may be replaced."""

    def rule(existing: Path) -> str | None:
        if is_empty_dir(existing):
            return None
        try:
            doc = json.loads((existing / marker).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return f"is not empty and has no readable {marker}"
        found = doc.get("run_id") if isinstance(doc, dict) else None
        if found != run_id:
            return f"holds another result (run id {found}; this one is {run_id})"
        return None

    return rule
