"""How direct a run's configuration path is (issue #26, "Let the layout show the parts"): the
ddlsched modules whose functions run from the entry point until the engine's loop starts, and
the calls among them that go back *up* the layers (a lower layer calling a function of a
higher one, through a callback or a protocol), for a simulated run (``api.simulate_named``, the
path of ``ddlsched run``: reading the inputs, ``build_simulator``) and a live one (``live.run.run_live`` on the local launcher).

Not a test: ``python benchmarks/config_path.py``. The layers are tests/test_layers.py's
(``LAYERS``, ``layer_of``); a call is counted once per (caller function → callee function)
pair; calls inside one module are not edges; module bodies run by an import are not calls. The issue measured 19 modules and 12 calls up
for the live path before the live layout changed, and 4 modules / 2 calls up for
``api.build_simulator`` alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layers():
    spec = importlib.util.spec_from_file_location("layers", ROOT / "tests" / "test_layers.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.layer_of


class PathTracer:
    """``sys.setprofile`` over ddlsched's Python functions until a frame of ``stop_at``
    (a function name of the engine's loop) is entered."""

    def __init__(self, stop_at: set[str]) -> None:
        self.stop_at = stop_at
        self.modules: set[str] = set()
        self.edges: set[tuple[str, str, str, str]] = set()
        self.stopped = False

    def __call__(self, frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
        if event != "call" or self.stopped:
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith("ddlsched"):
            return
        name = frame.f_code.co_name
        if name == "<module>":  # a module's import, not a call of the path
            return
        qual = getattr(frame.f_code, "co_qualname", name)
        if qual in self.stop_at:
            self.stopped = True
            sys.setprofile(None)
            return
        self.modules.add(callee)
        back = frame.f_back
        caller = back.f_globals.get("__name__", "") if back is not None else ""
        if caller.startswith("ddlsched") and caller != callee:
            cq = getattr(back.f_code, "co_qualname", back.f_code.co_name)
            self.edges.add((caller, cq, callee, qual))


def trace(fn, stop_at: set[str]) -> PathTracer:
    t = PathTracer(stop_at)
    sys.setprofile(t)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return t


def report(label: str, t: PathTracer, layer_of) -> None:  # noqa: ANN001
    up = sorted(e for e in t.edges if layer_of(e[2]) > layer_of(e[0]))
    print(f"{label}: {len(t.modules)} modules, {len(up)} calls up the layers")
    for caller, cq, callee, qual in up:
        print(f"    {caller}.{cq} (layer {layer_of(caller)}) -> {callee}.{qual} "
              f"(layer {layer_of(callee)})")  # fmt: skip
    print("    modules: " + ", ".join(sorted(m.removeprefix("ddlsched.") for m in t.modules)))


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    layer_of = _layers()
    from ddlsched import api
    from ddlsched.live.run import LiveConfig, run_live

    work = Path(tempfile.mkdtemp(prefix="ddlsched-path-"))
    (work / "cluster.toml").write_text('name = "one"\n[[servers]]\nnum_gpus = 2\n')
    (work / "jobs.csv").write_text("arrival,gpus,command\n0,1,true\n")
    (work / "trace.csv").write_text("arrival,num_gpus,duration\n0,1,10\n")
    stop = {"Simulator.run", "RealtimeSimulator.run", "Simulator.step"}

    def sim_run() -> None:
        api.simulate_named(str(work / "cluster.toml"), str(work / "trace.csv"), "fifo")

    def live_run() -> None:
        run_live(LiveConfig(jobs=str(work / "jobs.csv"), cluster=str(work / "cluster.toml"),
                            policy="fifo", out=str(work / "out"), launcher="local"))  # fmt: skip

    report("simulated (api.simulate_named → engine loop)", trace(sim_run, stop), layer_of)
    report("live (live.run.run_live → engine loop)", trace(live_run, stop), layer_of)


if __name__ == "__main__":
    main()
