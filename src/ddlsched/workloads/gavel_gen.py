"""Gavel's synthetic job generator, reproduced draw for draw.

Gavel (Narayanan et al., OSDI '20; github.com/stanford-futuredata/gavel, MIT licence) generates
its simulation workloads in ``scheduler/utils.py: generate_job`` and the arrival loop of
``scheduler/scheduler.py: Scheduler.simulate``. :func:`generate_gavel_jobs` makes the same
Python ``random`` calls in the same order, so for a seed it returns the jobs Gavel's simulator
(commit c4fa400) generates with that seed: same types, scale factors, steps and arrival times,
bit for bit. :func:`write_gavel_trace` writes them in Gavel's trace format (10 columns, read by
Gavel's ``utils.parse_trace`` and its ``simulate_scheduler_with_trace.py``) or in the 7-column
format of the Philly-derived ``msr`` traces; both are read back by :func:`ddlsched.workloads.
read_trace`.

What Gavel does, and this module with it:

* streams: the job parameters come from ``random.Random(seed + 2)``, the inter-arrival times
  from ``random.Random(seed + 3)`` (``Scheduler._initialize_seeds``);
* per job (``generate_job`` with its defaults): a scale factor is drawn first, always
  (``r = U(0, 1)``: 1 below 0.7, 2 in [0.7, 0.8], 4 in (0.8, 0.95], 8 above), then the
  duration: with probability 0.2 ``60 · 10^U(3, 4)`` s, else ``60 · 10^U(1.5, 3)`` s; without
  ``multi_gpu`` the scale factor is then reset to 1; the job type is drawn uniformly from
  Gavel's 26 job templates (``job_table.py``), redrawn until it is distributed if the scale
  factor is above 1 (only ResNet-18/50, Transformer and LM are); ``total_steps = duration ·
  throughput`` of the type alone on ``scale_factor`` V100s;
* arrivals: the first job arrives at 0, then ``next = -ln(1 - u) / (1 / lam) + last``: ``lam``
  is the *mean inter-arrival time in seconds* (Gavel's ``--lam``), not a rate.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from .trace_formats import gavel_throughputs

__all__ = [
    "GAVEL_SCALE_FACTORS",
    "GavelJob",
    "GavelTemplate",
    "JOB_TABLE",
    "gavel_workload",
    "generate_gavel_jobs",
    "write_gavel_trace",
]

#: The scale factors (GPUs per job) Gavel's generator draws.
GAVEL_SCALE_FACTORS: tuple[int, ...] = (1, 2, 4, 8)


@dataclass(frozen=True)
class GavelTemplate:
    """One entry of Gavel's ``JobTable`` (``scheduler/job_table.py``)."""

    model: str
    command: str
    working_directory: str
    num_steps_arg: str
    needs_data_dir: bool = True
    distributed: bool = False


def _table() -> tuple[GavelTemplate, ...]:
    # The order matters: ``rng.choice`` indexes this table as Gavel indexes its JobTable.
    t: list[GavelTemplate] = []
    for b in (16, 32, 64, 128, 256):
        t.append(
            GavelTemplate(
                f"ResNet-18 (batch size {b})",
                f"python3 main.py --data_dir=%s/cifar10 --batch_size {b}",
                "image_classification/cifar10",
                "--num_steps",
                distributed=True,
            )
        )
    for b in (16, 32, 64, 128):
        t.append(
            GavelTemplate(
                f"ResNet-50 (batch size {b})",
                f"python3 main.py -j 8 -a resnet50 -b {b} %s/imagenet/",
                "image_classification/imagenet",
                "--num_minibatches",
                distributed=True,
            )
        )
    for b in (16, 32, 64, 128, 256):
        t.append(
            GavelTemplate(
                f"Transformer (batch size {b})",
                "python3 train.py -data %s/translation/multi30k.atok.low.pt"
                f" -batch_size {b} -proj_share_weight",
                "translation",
                "-step",
                distributed=True,
            )
        )
    for b in (5, 10, 20, 40, 80):
        t.append(
            GavelTemplate(
                f"LM (batch size {b})",
                f"python main.py --cuda --data %s/wikitext2 --batch_size {b}",
                "language_modeling",
                "--steps",
                distributed=True,
            )
        )
    for b in (512, 1024, 2048, 4096, 8192):
        t.append(
            GavelTemplate(
                f"Recommendation (batch size {b})",
                f"python3 train.py --data_dir %s/ml-20m/pro_sg/ --batch_size {b}",
                "recommendation",
                "-n",
            )
        )
    t.append(
        GavelTemplate(
            "A3C",
            "python3 main.py --env PongDeterministic-v4 --workers 4 --amsgrad True",
            "rl",
            "--max-steps",
            needs_data_dir=False,
        )
    )
    t.append(
        GavelTemplate(
            "CycleGAN",
            "python3 cyclegan.py --dataset_path %s/monet2photo --decay_epoch 0",
            "cyclegan",
            "--n_steps",
        )
    )
    return tuple(t)


#: Gavel's 26 job templates, in Gavel's order.
JOB_TABLE: tuple[GavelTemplate, ...] = _table()


@dataclass(frozen=True)
class GavelJob:
    """A generated job: Gavel's ``Job`` fields plus its arrival time (seconds).

    ``total_steps`` is Gavel's float; its trace writes it truncated to an integer. ``duration``
    is the drawn run time (seconds alone on ``scale_factor`` V100s)."""

    job_type: str
    command: str
    working_directory: str
    num_steps_arg: str
    needs_data_dir: bool
    total_steps: float
    scale_factor: int
    duration: float
    arrival: float
    priority_weight: float = 1.0


def _scale_factor(rng: random.Random) -> int:
    # utils._generate_scale_factor (the overlapping bounds are Gavel's)
    r = rng.uniform(0, 1)
    if 0.7 <= r <= 0.8:
        return 2
    if 0.8 <= r <= 0.95:
        return 4
    if 0.95 <= r:
        return 8
    return 1


def _duration(rng: random.Random) -> float:
    # utils._generate_duration
    if rng.random() >= 0.8:
        return 60 * (10 ** rng.uniform(3, 4))
    return 60 * (10 ** rng.uniform(1.5, 3))


def generate_gavel_jobs(
    num_jobs: int,
    lam: float,
    seed: int,
    throughputs_path: str | Path,
    *,
    multi_gpu: bool = False,
    multi_priority: bool = False,
    fixed_job_duration: float | None = None,
    reference_gpu: str = "v100",
) -> list[GavelJob]:
    """The first ``num_jobs`` jobs Gavel's ``Scheduler.simulate`` generates with ``seed``.

    ``lam``: Gavel's ``--lam``, the mean inter-arrival time in seconds (0: all arrive at 0).
    ``throughputs_path``: Gavel's ``simulation_throughputs.json``. ``multi_gpu``: Gavel's
    ``--generate-multi-gpu-jobs``; ``multi_priority``: ``--generate-multi-priority-jobs`` (a
    fifth of the jobs get weight 5). ``fixed_job_duration``: ``--fixed-job-duration``."""
    if num_jobs < 0:
        raise ValueError("num_jobs must be >= 0")
    if not lam >= 0 or math.isinf(lam):
        raise ValueError("lam (mean inter-arrival time, s) must be finite and >= 0")
    table = gavel_throughputs(throughputs_path, reference_gpu)
    job_rng = random.Random()
    job_rng.seed(seed + 2)
    arrival_rng = random.Random()
    arrival_rng.seed(seed + 3)
    jobs: list[GavelJob] = []
    arrival = 0.0
    for _ in range(num_jobs):
        scale_factor = _scale_factor(job_rng)
        run_time = fixed_job_duration if fixed_job_duration else _duration(job_rng)
        if not multi_gpu:
            scale_factor = 1
        while True:
            template = job_rng.choice(JOB_TABLE)
            if scale_factor == 1 or template.distributed:
                break
        try:
            throughput = table[template.model][scale_factor]
        except KeyError:
            raise ValueError(
                f"{throughputs_path}: no {reference_gpu} throughput for "
                f"({template.model!r}, {scale_factor})"
            ) from None
        priority = 1.0
        if multi_priority and 0.0 <= job_rng.uniform(0, 1) <= 0.2:
            priority = 5.0
        jobs.append(
            GavelJob(
                job_type=template.model,
                command=template.command,
                working_directory=template.working_directory,
                num_steps_arg=template.num_steps_arg,
                needs_data_dir=template.needs_data_dir,
                total_steps=run_time * throughput,
                scale_factor=scale_factor,
                duration=run_time,
                arrival=arrival,
                priority_weight=priority,
            )
        )
        delta = 0.0 if lam == 0.0 else -math.log(1.0 - arrival_rng.random()) / (1.0 / lam)
        arrival = delta + arrival
    return jobs


def write_gavel_trace(jobs: list[GavelJob], path: str | Path, *, columns: int = 10) -> Path:
    """Write ``jobs`` as a Gavel trace: ``columns=10`` is Gavel's own format (``str(Job)`` and
    the arrival, as its simulator writes and ``utils.parse_trace`` reads: ``job_type, command,
    working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor,
    priority_weight, SLO, arrival_time``); ``columns=7`` is the ``msr`` Philly traces' format
    (``job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time,
    scale_factor``). Steps are truncated to integers as Gavel does."""
    if columns not in (7, 10):
        raise ValueError("columns must be 10 (Gavel's parse_trace) or 7 (msr traces)")
    lines = []
    for j in jobs:
        if columns == 10:
            lines.append(
                "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%f\t%f\n"  # noqa: UP031 (Gavel's bytes)
                % (
                    j.job_type,
                    j.command,
                    j.working_directory,
                    j.num_steps_arg,
                    j.needs_data_dir,
                    j.total_steps,
                    j.scale_factor,
                    j.priority_weight,
                    -1.0,
                    j.arrival,
                )
            )
        else:
            lines.append(
                "%s\t%s\t%s\t%d\t%d\t%f\t%d\n"  # noqa: UP031
                % (
                    j.job_type,
                    j.command,
                    j.num_steps_arg,
                    j.needs_data_dir,
                    j.total_steps,
                    j.arrival,
                    j.scale_factor,
                )
            )
    p = Path(path)
    p.write_text("".join(lines), encoding="utf-8")
    return p


def gavel_workload(
    num_jobs: int,
    jobs_per_hour: float,
    seed: int,
    throughputs_path: str | Path,
    *,
    multi_gpu: bool = False,
) -> list:
    """The jobs of :func:`generate_gavel_jobs` as ddlsched trace jobs, exactly as reading
    their Gavel trace file gives them (``read_gavel`` with the throughputs: whole
    ``total_steps`` as the file holds them, the reference ``duration`` on V100 and one per
    GPU type). ``jobs_per_hour``: Gavel's input job rate (``lam`` = 3600 / rate seconds)."""
    from ..core.job import JobSpec
    from .trace_formats import (
        batch_from_name,
        gavel_pairs,
        gavel_types,
        gavel_zeros,
        per_type_durations,
        placeholder_model,
        scaled_throughput,
    )

    if not jobs_per_hour > 0 or math.isinf(jobs_per_hour):
        raise ValueError("jobs_per_hour must be finite and > 0")
    raw = generate_gavel_jobs(
        num_jobs, 3600.0 / jobs_per_hour, seed, throughputs_path, multi_gpu=multi_gpu
    )
    ref = gavel_throughputs(throughputs_path, "v100")
    types = gavel_types(throughputs_path)
    zeros = gavel_zeros(throughputs_path)
    pairs = gavel_pairs(throughputs_path, "v100")
    profiles: dict = {}
    out = []
    for i, g in enumerate(raw):
        steps = int(g.total_steps)  # the trace file holds whole steps (Gavel's own dump too)
        thr = scaled_throughput(ref, g.job_type, g.scale_factor, throughputs_path, "gavel", i + 1)
        model = profiles.get(g.job_type)
        if model is None:
            model = profiles[g.job_type] = placeholder_model(
                g.job_type, batch_from_name(g.job_type)
            )
        out.append(
            JobSpec(
                job_id=i,
                arrival=float(f"{g.arrival:f}"),  # the trace file's 6 decimals
                num_gpus=g.scale_factor,
                iterations=steps,
                model=model,
                duration=steps / thr,
                type_durations=per_type_durations(types, g.job_type, g.scale_factor, steps, zeros),
                colocation=pairs,
            )
        )
    return out
