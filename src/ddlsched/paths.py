"""File-system checks that never raise on a user-given name.

``Path.exists()``/``is_file()`` raise ``OSError`` for a name the system refuses (longer than
255 bytes: "File name too long") and ``ValueError`` for a NUL byte; a reader that asks "is
this a file?" about a preset name or a typo must get ``False`` and say "no such file".
"""

from __future__ import annotations

from pathlib import Path


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
