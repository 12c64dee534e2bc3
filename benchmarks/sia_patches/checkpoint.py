"""Instrument a checkout of Sia's artifact so that a simulation survives the end of the process:
every ``$SIA_CHECKPOINT_EVERY`` wall seconds (default 600) the simulator pickles its state to
``$SIA_CHECKPOINT``, and a run started with that file present resumes from it.

Why: the artifact's ``pollux-unaware`` runs take hours of one core (newtrace's 960-job
workloads longer than a working session), and a process that ends with the session would
restart from zero. Nothing of the simulation changes: the loop runs the same ``cluster.step``
calls on the same objects; the saved state is the cluster, the policy and the random
generators' states (the artifact seeds neither, so a resumed run is one more unseeded run).
cloudpickle (which Ray installs beside the artifact) writes it: the Pollux policy keeps pymoo
objects that hold lambdas, which plain pickle refuses.

The artifact has no licence, so ddlsched carries none of its code, not even a patch's context
lines: this script finds the simulation loop in ``multi_simulator.py`` and
``multi_simulator_unaware.py`` by a short anchor and inserts our lines (idempotent; edited in
place)::

    python benchmarks/sia_patches/checkpoint.py ARTIFACT/sia-simulator

1. before ``while not cluster.all_complete():``: load ``$SIA_CHECKPOINT`` if it exists;
2. after the loop's ``cluster.step(args.interval)``: save it (write + rename) when due.

A resumed run's stdout continues where the saved one stopped only if the caller appends to it
(rounds printed after the last save are printed again; readers take the last round).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anchors import indent  # noqa: E402

MARK = "# ddlsched checkpoint"

BEFORE_LOOP = f"""{MARK} (1/2)
import os as _ck_os, pickle as _ck_pk, random as _ck_random, time as _ck_time
import numpy as _ck_np
try:
    import cloudpickle as _ck_dumper  # the policy keeps pymoo objects holding lambdas
except ImportError:
    _ck_dumper = _ck_pk
_ck_path = _ck_os.environ.get('SIA_CHECKPOINT')
_ck_every = float(_ck_os.environ.get('SIA_CHECKPOINT_EVERY', '600'))
_ck_last = _ck_time.monotonic()
if _ck_path and _ck_os.path.exists(_ck_path):
    with open(_ck_path, 'rb') as _ck_f:
        _ck_state = _ck_pk.load(_ck_f)
    cluster, policy = _ck_state['cluster'], _ck_state['policy']
    _ck_random.setstate(_ck_state['random'])
    _ck_np.random.set_state(_ck_state['np_random'])
    print(f"# resumed from {{_ck_path}} at simulated time {{cluster.current_time}}", flush=True)
"""

AFTER_STEP = f"""{MARK} (2/2)
if _ck_path and _ck_time.monotonic() - _ck_last >= _ck_every:
    with open(_ck_path + '.tmp', 'wb') as _ck_f:
        _ck_dumper.dump({{'cluster': cluster, 'policy': policy, 'random': _ck_random.getstate(),
                     'np_random': _ck_np.random.get_state()}}, _ck_f, protocol=4)
        _ck_f.flush()
        _ck_os.fsync(_ck_f.fileno())
    _ck_os.replace(_ck_path + '.tmp', _ck_path)
    _ck_last = _ck_time.monotonic()
    print(f"# checkpoint at simulated time {{cluster.current_time}}", flush=True)
"""


def instrument(text: str) -> str:
    """``text`` (a simulator's main file) with both blocks inserted; unchanged if already there."""
    if MARK in text:
        return text
    lines = text.splitlines()
    loop = next(i for i, s in enumerate(lines) if s.strip() == "while not cluster.all_complete():")
    step = next(
        i for i in range(loop, len(lines)) if lines[i].strip() == "cluster.step(args.interval)"
    )
    lines[step + 1 : step + 1] = indent(AFTER_STEP, lines[step])
    lines[loop:loop] = indent(BEFORE_LOOP, lines[loop])
    return "\n".join(lines) + "\n"


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    for name in ("multi_simulator.py", "multi_simulator_unaware.py"):
        path = folder / name
        path.write_text(instrument(path.read_text()))
        print(f"instrumented {path}")
    print("set SIA_CHECKPOINT=FILE (and SIA_CHECKPOINT_EVERY=SECONDS) when running them")


if __name__ == "__main__":
    main()
