"""A small real training job for ``ddlsched live``: a two-layer neural network (numpy only)
learns a generated classification data set by mini-batch gradient descent.

It follows the job contract of docs/live.md: it reports its progress every step
(``ddlsched.live.report``), saves a checkpoint (step, weights, random state) every
``--checkpoint-every`` steps and when the scheduler asks it to stop, resumes from that
checkpoint when started again, and exits 0 once it reached ``--steps``.

With ``--pace APP`` (an application profile ddlsched ships, e.g. ``cifar10``) the job runs at
that application's speed for the allocation the scheduler gave it: each step lasts
``--pace-scale`` × the profile's iteration time for its GPUs (``WORLD_SIZE``; the placement from
``DDLSCHED_GPUS`` with ``--gpus-per-server`` GPUs per server) and total batch
(``DDLSCHED_BATCH_SIZE``), the numpy work included; with ``--samples`` it trains until it has seen
that many samples, so a larger batch means fewer, longer steps — Pollux's and SJF-BSBF's choices
change how long the job runs. Sharing a (logical) GPU does not slow it: the steps are timed, the
numpy work is small. Without ``--pace`` nothing changes.

With ``--pace-profiles DIR`` APP's profile comes from that profiles directory (as
``--set profiles=DIR`` reads it) instead of the built-ins; in Sia's layout (per GPU type T a
``placements-T.csv``) it is the table of the GPU type the job runs on (``DDLSCHED_GPU_TYPE``,
set on a cluster with declared GPU types), so on logical GPUs a job runs slower on a slower type
exactly as the type's profile says — the speed Sia's scheduler then measures (docs/live.md
"Sia live").

Run it by hand (no scheduler; add --checkpoint-dir to try resuming)::

    python3 examples/live/train.py --steps 200 --step-time 0.01

With ``WORLD_SIZE`` > 1 every rank trains on its own shard of each batch without exchanging
gradients (it stands in for data parallelism; see ddp_train.py for the real thing); rank 0
alone reports and checkpoints, and every rank resumes from rank 0's checkpoint.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import time
from pathlib import Path

# Many small jobs share the machine's cores: one BLAS thread each (set before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    import ddlsched.live as live
except ImportError:  # run from a source checkout without installing ddlsched
    for _name in [m for m in sys.modules if m == "ddlsched" or m.startswith("ddlsched.")]:
        del sys.modules[_name]  # an older installed ddlsched without the live client
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    import ddlsched.live as live

CHECKPOINT_NAME = "train.npz"


def make_data(seed: int, n: int = 4096, dim: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """A deterministic data set: points in ``dim`` dimensions labelled by a fixed random
    nonlinear rule (a teacher network), so that a hidden layer helps."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim))
    w, v = rng.standard_normal(dim), rng.standard_normal(dim)
    y = ((x @ w) + 2.0 * np.sin(x @ v) > 0).astype(np.float64)
    return x, y


def init_weights(seed: int, dim: int, hidden: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    return {
        "w1": rng.standard_normal((dim, hidden)) / np.sqrt(dim),
        "b1": np.zeros(hidden),
        "w2": rng.standard_normal(hidden) / np.sqrt(hidden),
        "b2": np.zeros(1),
    }


def loss_and_grads(
    p: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[float, dict[str, np.ndarray]]:
    """Binary cross-entropy of the network ``sigmoid(tanh(x w1 + b1) w2 + b2)`` and its
    gradients (backpropagation by hand)."""
    h = np.tanh(x @ p["w1"] + p["b1"])
    z = h @ p["w2"] + p["b2"][0]
    prob = 1.0 / (1.0 + np.exp(-z))
    eps = 1e-12
    loss = float(-np.mean(y * np.log(prob + eps) + (1 - y) * np.log(1 - prob + eps)))
    dz = (prob - y) / len(y)
    dh = np.outer(dz, p["w2"]) * (1 - h**2)
    grads = {
        "w1": x.T @ dh,
        "b1": dh.sum(axis=0),
        "w2": h.T @ dz,
        "b2": np.array([dz.sum()]),
    }
    return loss, grads


def save(path: Path, step: int, samples: int, p: dict[str, np.ndarray], rng) -> None:
    """One checkpoint file, written atomically (``ddlsched.live.save_checkpoint``)."""
    buf = io.BytesIO()
    np.savez(
        buf,
        step=np.array(step),
        samples=np.array(samples),
        rng=np.array(json.dumps(rng.bit_generator.state)),
        **p,
    )
    live.save_checkpoint(path, buf.getvalue())


def load(path: Path) -> tuple[int, int, dict[str, np.ndarray], dict] | None:
    """(step, samples, weights, random state) of the checkpoint, or None if there is none."""
    data = live.load_checkpoint(path)
    if data is None:
        return None
    with np.load(io.BytesIO(data)) as f:
        weights = {k: f[k].copy() for k in ("w1", "b1", "w2", "b2")}
        return int(f["step"]), int(f["samples"]), weights, json.loads(str(f["rng"]))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="total steps to train (default 200)")
    ap.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="total batch size over all ranks (default: the scheduler's choice, else 32)",
    )
    ap.add_argument(
        "--step-time",
        type=float,
        default=0.0,
        help="extra seconds to sleep per step, to make the job last (default 0)",
    )
    ap.add_argument(
        "--pace",
        default=None,
        metavar="APP",
        help="time each step as APP's profile says for the job's GPUs and batch (module doc)",
    )
    ap.add_argument(
        "--pace-scale", type=float, default=1.0, help="× the profile's step time (default 1)"
    )
    ap.add_argument(
        "--pace-profiles",
        default=None,
        metavar="DIR",
        help="take APP's profile from DIR (Sia's layout: the table of $DDLSCHED_GPU_TYPE)",
    )
    ap.add_argument(
        "--gpus-per-server",
        type=int,
        default=2,
        help="GPUs per server of the cluster, for the placement --pace looks up (default 2)",
    )
    ap.add_argument(
        "--samples",
        type=int,
        default=None,
        help="train until this many samples were seen instead of --steps (with --pace)",
    )
    ap.add_argument("--checkpoint-every", type=int, default=50, help="steps between checkpoints")
    ap.add_argument(
        "--checkpoint-dir",
        default=None,
        help="where to checkpoint (default: $DDLSCHED_CHECKPOINT_DIR; none: no checkpoints)",
    )
    ap.add_argument("--lr", type=float, default=0.5, help="learning rate (default 0.5)")
    ap.add_argument("--hidden", type=int, default=32, help="hidden units (default 32)")
    ap.add_argument("--seed", type=int, default=0, help="seed of data and weights (default 0)")
    args = ap.parse_args(argv)
    if args.steps < 0 or args.checkpoint_every < 1 or args.step_time < 0:
        ap.error("--steps must be >= 0, --checkpoint-every >= 1, --step-time >= 0")
    if args.pace_scale <= 0 or args.gpus_per_server < 1 or (args.samples or 1) < 1:
        ap.error("--pace-scale must be > 0, --gpus-per-server >= 1, --samples >= 1")
    return args


def pace_application(app_name: str, profiles: str | None, gpu_type: str | None):
    """APP's profile for ``--pace``: the built-in one, or from the ``profiles`` directory —
    in Sia's layout the table of ``gpu_type`` (of several types, comma-separated: the first
    type's; ddlsched's own type-blind tables where no type is given)."""
    if profiles is None:
        from ddlsched.perf.builtin_apps import builtin_profiles

        return builtin_profiles()[app_name]
    from ddlsched.perf.typed_profiles import (
        is_typed_profiles,
        load_profiles,
        load_sia_application,
    )

    if gpu_type and is_typed_profiles(profiles):
        return load_sia_application(Path(profiles) / app_name, gpu_type.split(",")[0])
    return load_profiles(profiles)[app_name]


def pace_step_time(
    app_name: str,
    scale: float,
    gpus: list[int],
    per_server: int,
    batch: int,
    profiles: str | None = None,
    gpu_type: str | None = None,
):
    """Seconds per step of ``--pace``: ``scale`` × the profile's iteration time of the
    configuration ``batch_config(R, batch)`` on the placement of ``gpus`` (GPUs per server, in
    the order of their servers), as ddlsched's profile executor computes it (a micro-batch
    above the placement's measured limit accumulates, as the executor runs Sia's profiles)."""
    app = pace_application(app_name, profiles, gpu_type)
    placement: list[int] = []
    last = None
    for g in sorted(gpus):
        server = g // per_server
        if server == last:
            placement[-1] += 1
        else:
            placement.append(1)
            last = server
    cfg = app.batch_config(len(gpus), batch)
    if app.max_nodes is not None and cfg.a > app.max_local_at(placement):
        from ddlsched.core.profileexec import accumulated_config

        cfg = accumulated_config(app, len(gpus), batch, app.max_local_at(placement))
    return scale * app.iteration_time(tuple(placement), cfg)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world = live.rank(), max(1, live.world_size())
    batch = args.batch_size or live.batch_size(32) or 32
    local_batch = max(1, batch // world)
    ckpt_dir = args.checkpoint_dir or live.checkpoint_dir()
    ckpt = Path(ckpt_dir) / CHECKPOINT_NAME if ckpt_dir else None
    if ckpt is not None:
        ckpt.parent.mkdir(parents=True, exist_ok=True)

    x, y = make_data(args.seed)
    params = init_weights(args.seed, x.shape[1], args.hidden)
    rng = np.random.default_rng(args.seed + 2)
    step = samples = 0
    state = load(ckpt) if ckpt is not None else None
    if state is not None:
        step, samples, params, rng_state = state
        rng.bit_generator.state = rng_state
    start = step
    pace = None
    if args.pace:
        gpus = live.gpus() or list(range(world))
        pace = pace_step_time(
            args.pace,
            args.pace_scale,
            gpus,
            args.gpus_per_server,
            batch,
            args.pace_profiles,
            live.gpu_type(),
        )

    def finished() -> bool:
        if args.samples is not None:
            return samples >= args.samples
        return step >= args.steps

    if rank == 0:
        live.report(step=step, samples=samples, event="start", attempt=live.attempt())
        print(f"rank {rank}/{world}: starting at step {step} of {args.steps}", flush=True)

    def checkpoint() -> None:
        if ckpt is not None and rank == 0:
            save(ckpt, step, samples, params, rng)

    loss = float("nan")
    while not finished():
        t0 = time.monotonic()
        idx = rng.integers(0, len(x), size=local_batch * world)  # the same on every rank
        mine = idx[rank * local_batch : (rank + 1) * local_batch]
        loss, grads = loss_and_grads(params, x[mine], y[mine])
        for k in params:
            params[k] -= args.lr * grads[k]
        step += 1
        samples += local_batch * world
        done = finished()
        if done:  # a stop asked from now on crosses the exit: SIGTERM must not turn it into a
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # kill (exit -15), the exit stays 0
        if rank == 0:  # the last report says the work is done, so such an exit is a finish
            live.report(step=step, samples=samples, loss=loss, done=done)
        if step % args.checkpoint_every == 0:
            checkpoint()
        if live.should_stop():
            checkpoint()
            print(f"rank {rank}: stopped at step {step} (checkpointed)", flush=True)
            return 0
        if pace is not None:  # the step lasts what the profile says, the work above included
            time.sleep(max(pace - (time.monotonic() - t0), 0.0))
        if args.step_time:
            time.sleep(args.step_time)
    checkpoint()
    if rank == 0:
        full, _ = loss_and_grads(params, x, y)
        print(f"done: steps {start}..{step}, loss on all data {full:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
