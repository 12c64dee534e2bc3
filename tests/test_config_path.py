"""The live run's configuration path stays as direct as the simulator's (issue #26): from
``run_live`` to the engine's loop, the only calls back up the layers are the engine attaching
its plug-ins (executor, policy) — measured by benchmarks/config_path.py's tracer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "config_path", ROOT / "benchmarks" / "config_path.py"
    )
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_the_live_path_calls_up_only_to_attach_the_engines_plug_ins(tmp_path: Path) -> None:
    from ddlsched.live.run import LiveConfig, run_live

    bench = _bench()
    layer_of = bench._layers()
    (tmp_path / "cluster.toml").write_text('name = "one"\n[[servers]]\nnum_gpus = 2\n')
    (tmp_path / "jobs.csv").write_text("arrival,gpus,command\n0,1,true\n")
    cfg = LiveConfig(jobs=str(tmp_path / "jobs.csv"), cluster=str(tmp_path / "cluster.toml"),
                     policy="fifo", out=str(tmp_path / "out"), launcher="local")  # fmt: skip
    t = bench.trace(lambda: run_live(cfg), {"Simulator.run", "RealtimeSimulator.run"})
    assert t.stopped, "the engine's loop was never reached"
    up = {(c, cq, e, q) for c, cq, e, q in t.edges if layer_of(e) > layer_of(c)}
    assert up and {(c, cq, q.rsplit(".", 1)[-1]) for c, cq, _, q in up} <= {
        ("ddlsched.core.simulator", "Simulator.__init__", "attach")
    }, up
    assert "ddlsched.live.run" in t.modules and "ddlsched.core.simulator" in t.modules
