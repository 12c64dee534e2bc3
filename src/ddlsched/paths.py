"""File-system checks that never raise on a user-given name.

``Path.exists()``/``is_file()`` raise ``OSError`` for a name the system refuses (longer than
255 bytes: "File name too long") and ``ValueError`` for a NUL byte; a reader that asks "is
this a file?" about a preset name or a typo must get ``False`` and say "no such file".
"""

from __future__ import annotations

from pathlib import Path

from .errors import InputError


def path_exists(path: str | Path) -> bool:
    """``Path(path).exists()``, ``False`` where the name cannot be a file name."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def is_file(path: str | Path) -> bool:
    """``Path(path).is_file()``, ``False`` where the name cannot be a file name."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: str | Path) -> bool:
    """``Path(path).is_dir()``, ``False`` where the name cannot be a directory name."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def read_text(path: Path) -> str:
    """A text input file (UTF-8, BOM dropped): workloads, traces, clusters, live job files;
    ``InputError`` naming the file when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=str(path)) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not a UTF-8 text file ({e.reason})", source=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror}", source=str(path)) from None
