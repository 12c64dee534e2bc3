"""Where the live service listens and its clients look by default, and where a service tells
the local clients its token (standard library only: the CLI reads these while it builds its
parser)."""

import json
import os
from pathlib import Path

#: ``ddlsched serve``'s default ``--listen``
DEFAULT_LISTEN = "127.0.0.1:8470"
#: the clients' default ``--server`` (or $DDLSCHED_SERVER)
DEFAULT_SERVER = "http://127.0.0.1:8470"
#: the token a service makes for itself when given none (in its state directory, mode 0600)
TOKEN_FILE = "token"


def runtime_dir() -> Path:
    """Where running services leave, for the same user's clients, their URL and token
    (``$DDLSCHED_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/ddlsched``, else
    ``~/.local/share/ddlsched/runtime``); the directory is the user's alone (0700)."""
    explicit = os.environ.get("DDLSCHED_RUNTIME_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "ddlsched"
    return Path.home() / ".local" / "share" / "ddlsched" / "runtime"


def runtime_file(url: str) -> Path:
    """The runtime file of the service at ``url`` (``http://HOST:PORT``)."""
    hostport = url.split("://", 1)[-1].rstrip("/").replace(":", "-").replace("/", "_")
    return runtime_dir() / f"{hostport}.json"


def token_for(url: str) -> str | None:
    """The token a service running as this user left for ``url``'s clients, or None."""
    path = runtime_file(url)
    try:
        if path.stat().st_mode & 0o077:
            return None  # not ours alone: not to be trusted
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    token = doc.get("token") if isinstance(doc, dict) else None
    return token if isinstance(token, str) and token else None
