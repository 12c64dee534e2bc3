"""``python -m ddlsched.warmup``: the last step of ``make run``'s set-up (issue #15).

Two things every first run would otherwise pay for, done at once on two cores: a child process
imports what ``ddlsched reproduce`` imports, writing their byte-code (the set-up installs
without byte-compiling whole packages, which took longer than the install), and then compiles
one half of the iteration-level kernel into numba's cache, while this process compiles the
other half (``core/compiledtask.warm_up``: about 10 s in one process, 7–8 s split; numba
writes each cache file atomically). Prints nothing; a failure here is not fatal (the runs
compile then). ``--pollux`` compiles the Pollux search's kernel instead
(``policies/pollux_kernel.py``, ≈ 15 s once per checkout), which ``make run`` does after its
tables so that later large Pollux runs find it cached.
"""

from __future__ import annotations

import os
import subprocess
import sys

#: what ``reproduce`` and its worker processes import
MODULES = (
    "ddlsched.cli",
    "ddlsched.api",
    "ddlsched.experiments",
    "ddlsched.experiments.plots",
    "ddlsched.core.compiledtask",
    "ddlsched.core.taskexec",
    "ddlsched.policies.builtin",
    "ddlsched.policies.registry",
    "matplotlib.pyplot",
    "scipy.stats",
    "scipy.optimize",
    "pyarrow.parquet",
    "yaml",
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--pollux"]:  # the Pollux search's kernel (``make run``'s last step)
        from .policies.pollux_search import search_kernel

        kernel = search_kernel()
        if kernel is not None:
            kernel.warm_up()
        return 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["MPLBACKEND"] = "Agg"
    code = (
        f"import importlib\nfor m in {MODULES!r}:\n    importlib.import_module(m)\n"
        "from ddlsched.core.compiledtask import WARM_UP_PARTS, compiled_available, warm_up\n"
        "if compiled_available():\n    warm_up(WARM_UP_PARTS[0])\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        from .core.compiledtask import WARM_UP_PARTS, compiled_available, warm_up

        if compiled_available():
            warm_up(WARM_UP_PARTS[1])
    finally:
        child.wait(timeout=600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
