"""A torch.distributed (DDP) training job for ``ddlsched live``: a small network learns a
generated classification data set with one process per GPU (nccl), or on CPU (gloo).

It reads the variables ddlsched sets for every worker (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT, and DDLSCHED_* for the client) and follows the same contract as
train.py: rank 0 reports progress every step and checkpoints every ``--checkpoint-every`` steps
and on a stop request; every rank resumes from that checkpoint; exit 0 after ``--steps``.
The ranks agree on stopping (an all-reduce of the stop flag every step), so that no rank waits
in a collective for one that already left.

Needs PyTorch (not a dependency of ddlsched). By hand, one process::

    python3 examples/live/ddp_train.py --steps 100
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

try:
    import ddlsched.live as live
except ImportError:  # run from a source checkout without installing ddlsched
    for _name in [m for m in sys.modules if m == "ddlsched" or m.startswith("ddlsched.")]:
        del sys.modules[_name]
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    import ddlsched.live as live

CHECKPOINT_NAME = "ddp_train.pt"


def make_data(seed: int, n: int = 8192, dim: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """The same deterministic data set on every rank: points labelled by a fixed nonlinear
    rule."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=g)
    w, v = torch.randn(dim, generator=g), torch.randn(dim, generator=g)
    y = ((x @ w + 2.0 * torch.sin(x @ v)) > 0).float()
    return x, y


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="total steps to train (default 200)")
    ap.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="total batch size over all ranks (default: the scheduler's choice, else 64)",
    )
    ap.add_argument("--step-time", type=float, default=0.0, help="extra seconds per step")
    ap.add_argument("--checkpoint-every", type=int, default=50, help="steps between checkpoints")
    ap.add_argument("--checkpoint-dir", default=None, help="default: $DDLSCHED_CHECKPOINT_DIR")
    ap.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of data and weights (default 0)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # one process without a launcher: a world of one on a free local port
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    rank, world = live.rank(), live.world_size()
    cuda = torch.cuda.is_available()
    if cuda:
        device = torch.device("cuda", live.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo", init_method="env://")
    try:
        return train(args, rank, world, device)
    finally:
        dist.destroy_process_group()


def train(args: argparse.Namespace, rank: int, world: int, device: torch.device) -> int:
    batch = args.batch_size or live.batch_size(64) or 64
    local_batch = max(1, batch // world)
    ckpt_dir = args.checkpoint_dir or live.checkpoint_dir()
    ckpt = Path(ckpt_dir) / CHECKPOINT_NAME if ckpt_dir else None
    if ckpt is not None and rank == 0:
        ckpt.parent.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(args.seed)
    x, y = make_data(args.seed)
    model = nn.Sequential(nn.Linear(x.shape[1], 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    g = torch.Generator().manual_seed(args.seed + 2)  # batch order, the same on every rank
    step = samples = 0
    data = live.load_checkpoint(ckpt) if ckpt is not None else None
    if data is not None:
        # on the CPU: the generator state must stay a CPU ByteTensor (load_state_dict moves
        # the weights and the optimizer state to the model's device)
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        g.set_state(state["generator"])
        step, samples = state["step"], state["samples"]
    ddp = DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )
    loss_fn = nn.BCEWithLogitsLoss()

    def checkpoint() -> None:
        if ckpt is None or rank != 0:
            return
        buf = io.BytesIO()
        torch.save(
            {
                "model": model.state_dict(),
                "opt": opt.state_dict(),
                "generator": g.get_state(),
                "step": step,
                "samples": samples,
            },
            buf,
        )
        live.save_checkpoint(ckpt, buf.getvalue())

    if rank == 0:
        live.report(step=step, samples=samples, event="start", attempt=live.attempt())
        print(f"{world} rank(s) on {device}: starting at step {step} of {args.steps}", flush=True)
    stop = torch.zeros(1, device=device)
    loss = torch.zeros(())
    while step < args.steps:
        idx = torch.randint(0, len(x), (local_batch * world,), generator=g)
        mine = idx[rank * local_batch : (rank + 1) * local_batch]
        xb, yb = x[mine].to(device), y[mine].to(device)
        opt.zero_grad()
        loss = loss_fn(ddp(xb).squeeze(1), yb)
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        step += 1
        samples += local_batch * world
        if rank == 0:
            live.report(step=step, samples=samples, loss=loss.item())
        if step % args.checkpoint_every == 0:
            checkpoint()
        stop.fill_(1.0 if live.should_stop() else 0.0)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item() > 0:
            checkpoint()
            dist.barrier()
            if rank == 0:
                print(f"stopped at step {step} (checkpointed)", flush=True)
            return 0
        if args.step_time:
            time.sleep(args.step_time)
    checkpoint()
    if rank == 0:
        print(f"done at step {step}, last loss {loss.item():.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
