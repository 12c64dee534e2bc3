"""``python -m ddlsched …``: the same program as the ``ddlsched`` command."""

import sys

from .cli import main

if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main())
