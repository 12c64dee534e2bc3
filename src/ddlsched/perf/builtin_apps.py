"""Built-in synthetic applications, so that profile-driven simulations run without external data.

**These are synthetic: our own round numbers, not measurements** of any real system. They are
shaped like the Pollux artifact's applications (a CIFAR-size CNN, an ImageNet-size ResNet, a BERT
fine-tune, a recommender, a speech model) so that schedulers see the same kinds of contrast —
compute- vs communication-bound, small vs large models, short vs long jobs — but no number here
was taken from the artifact's data.

Each application is an ordinary :class:`~ddlsched.perf.profiles.Application` built from generated
rows, so the measured ground truth (interpolation) and the fitted one
(:mod:`ddlsched.perf.fitting`, which recovers the parameters below) both work unchanged.

**Throughput** (:class:`~ddlsched.perf.fitting.ThroughputParams`, the Pollux/Luo model):

- compute T_a = α_c + β_c·a: α_c (launch/optimizer overhead) and β_c (seconds per sample) are
  chosen per model so that a micro-step takes 0.01–0.9 s over the local-batch range;
- all-reduce constants from the model size S (fp32 gradients) on a notional server of 4 GPUs: a
  ring all-reduce moves about 2S bytes per replica, so α_n = 2S / 1.25 GB/s (10 Gb/s Ethernet
  between nodes) and α_r = 2S / 8 GB/s (PCIe within a node); each replica beyond 2 adds two ring
  hops of latency plus a little straggling: β_n = 2 ms + 0.02·α_n, β_r = 0.5 ms + 0.02·α_r;
- γ (compute/communication overlap) from 1.2 (little overlap: embedding-heavy recommender) to 2.5
  (bucketed all-reduce overlapping a long backward pass).

Chosen numbers (S: model size; local: the local-batch range; ep: max_epochs; N: samples per
epoch)::

    application        S MB   α_c s   β_c s/sample  γ    init B  max B  local      ep  N
    synthetic-cnn        45   0.012   4e-4          1.5    128    4096  32-512     20  50,000
    synthetic-resnet    102   0.04    4.5e-3        2.5    256    8192  16-128     10  128,000
    synthetic-bert      440   0.08    5e-2          1.8     16     512  4-16        4  24,000
    synthetic-rec        16   0.01    4e-6          1.2   1024   65536  256-16384  10  1,000,000
    synthetic-speech    150   0.12    1.2e-2        1.3     32    1024  8-64       15  24,000

which gives the all-reduce constants (seconds) α_n, β_n, α_r, β_r: cnn 0.072, 0.00344, 0.01125,
0.000725; resnet 0.1632, 0.005264, 0.0255, 0.00101; bert 0.704, 0.01608, 0.11, 0.0027; rec
0.0256, 0.002512, 0.004, 0.00058; speech 0.24, 0.0068, 0.0375, 0.00125. One-GPU iterations at the
initial batch take 0.06 s (cnn), 1.23 s (resnet: 2 micro-steps of 128), 0.88 s (bert), 0.014 s
(rec) and 0.50 s (speech); one-GPU runs take from ~2 min (rec) to ~1.7 h (resnet).

**Rows.** placements.csv-like rows for every rotation-distinct placement of 1–4 nodes × 1–4 GPUs
(written as the smallest rotation, as the artifact's IDs) at 8 local batches spaced geometrically
over the local range; scalability-like rows for 6, 8, 10, 12, 14 and 16 nodes with n, 1.5n, 2n,
3n and 4n replicas at the same batches, so that every placement of up to 16 nodes × 4 GPUs lies in
the interpolation hull. step_time = T_o and sync_time = T_o − T_a of the model.

**Statistical efficiency.** A gradient-noise model (McCandlish et al.'s noise scale, as Pollux
uses it): the noise scale grows geometrically over training from B_noise(0) to B_noise(last)
(below), grad_sqr(e) = 1/(1 + e) and grad_var(e) = grad_sqr(e)·B_noise(e)/init_bsz, identical for
every validated batch (init·2^i up to max). Then gain(M) = (var + sqr)/(var/scale + sqr) ≥ 1
grows with M, and the efficiency gain/scale = (B_noise + init)/(B_noise + M). Progress per epoch is
the number of iterations per epoch at the initial batch, samples per epoch / init_bsz; epochs are
few so that simulated jobs are short.

Noise scale (samples), first → last epoch: cnn 200 → 4,000; resnet 500 → 10,000; bert 300 →
1,000; rec 16,384 → 1,000,000; speech 50 → 5,000.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from .fitting import ThroughputParams
from .profiles import Application, PlacementRow, ScalabilityRow, ValidationRow, canonical_placement

#: Effective all-reduce bandwidths (bytes/s) of the notional server: 10 Gb/s Ethernet, PCIe.
INTER_NODE_BW = 1.25e9
INTRA_NODE_BW = 8e9

#: Local batches per placement row set.
LOCAL_POINTS = 8
#: Node counts and replica multiples of the scalability rows.
SCALABILITY_NODES = (6, 8, 10, 12, 14, 16)
SCALABILITY_REPLICAS = (1.0, 1.5, 2.0, 3.0, 4.0)
GPUS_PER_NODE = 4
MAX_PLACEMENT_NODES = 4


def allreduce_params(model_mb: float) -> tuple[float, float, float, float]:
    """(α_n, β_n, α_r, β_r) of a ring all-reduce of ``model_mb`` MB of gradients (module doc)."""
    volume = 2 * model_mb * 1e6
    alpha_n = volume / INTER_NODE_BW
    alpha_r = volume / INTRA_NODE_BW
    return alpha_n, 0.002 + 0.02 * alpha_n, alpha_r, 0.0005 + 0.02 * alpha_r


@dataclass(frozen=True)
class SyntheticSpec:
    """The chosen numbers of one synthetic application (see the module doc's table)."""

    name: str
    model_mb: float
    alpha_c: float
    beta_c: float
    gamma: float
    init_bsz: int
    max_bsz: int
    min_local: int
    max_local: int
    max_epochs: int
    samples_per_epoch: int
    noise_start: float
    noise_end: float

    @property
    def params(self) -> ThroughputParams:
        a_n, b_n, a_r, b_r = allreduce_params(self.model_mb)
        return ThroughputParams(self.alpha_c, self.beta_c, a_n, b_n, a_r, b_r, self.gamma)

    @property
    def progress_per_epoch(self) -> float:
        return self.samples_per_epoch / self.init_bsz


SPECS: tuple[SyntheticSpec, ...] = (
    SyntheticSpec("synthetic-cnn", 45, 0.012, 4e-4, 1.5, 128, 4096, 32, 512, 20, 50_000, 200, 4e3),
    SyntheticSpec(
        "synthetic-resnet", 102, 0.04, 4.5e-3, 2.5, 256, 8192, 16, 128, 10, 128_000, 500, 1e4
    ),
    SyntheticSpec("synthetic-bert", 440, 0.08, 5e-2, 1.8, 16, 512, 4, 16, 4, 24_000, 300, 1e3),
    SyntheticSpec(
        "synthetic-rec", 16, 0.01, 4e-6, 1.2, 1024, 65536, 256, 16384, 10, 1_000_000, 16384, 1e6
    ),
    SyntheticSpec("synthetic-speech", 150, 0.12, 1.2e-2, 1.3, 32, 1024, 8, 64, 15, 24_000, 50, 5e3),
)


def local_batches(spec: SyntheticSpec) -> list[int]:
    """``LOCAL_POINTS`` integer local batches, geometric over [min_local, max_local]."""
    pts = np.geomspace(spec.min_local, spec.max_local, LOCAL_POINTS)
    out = sorted({int(round(float(x))) for x in pts} | {spec.min_local, spec.max_local})
    return out


def small_placements() -> list[tuple[int, ...]]:
    """Every rotation-distinct placement of 1–4 nodes × 1–4 GPUs, as its smallest rotation."""
    out = []
    for n in range(1, MAX_PLACEMENT_NODES + 1):
        for p in itertools.product(range(1, GPUS_PER_NODE + 1), repeat=n):
            if canonical_placement(p) == p:
                out.append(p)
    return out


def placement_rows(spec: SyntheticSpec) -> list[PlacementRow]:
    params = spec.params
    rows: list[PlacementRow] = []
    for p in small_placements():
        for a in local_batches(spec):
            step, sync = params.step_and_sync(len(p), sum(p), a)
            rows.append((p, float(a), step, sync))
    return rows


def scalability_rows(spec: SyntheticSpec) -> list[ScalabilityRow]:
    params = spec.params
    rows: list[ScalabilityRow] = []
    for n in SCALABILITY_NODES:
        for r in sorted({int(m * n) for m in SCALABILITY_REPLICAS}):
            for a in local_batches(spec):
                step, sync = params.step_and_sync(n, r, a)
                rows.append((float(n), float(r), float(a), step, sync))
    return rows


def validation_rows(spec: SyntheticSpec) -> dict[int, list[ValidationRow]]:
    """One curve per validated batch init·2^i ≤ max, all equal (module doc)."""
    epochs = spec.max_epochs
    rows: list[ValidationRow] = []
    for e in range(epochs):
        frac = e / (epochs - 1) if epochs > 1 else 0.0
        noise = spec.noise_start * (spec.noise_end / spec.noise_start) ** frac
        sqr = 1.0 / (1 + e)
        rows.append(((e + 1) * spec.progress_per_epoch, sqr, sqr * noise / spec.init_bsz))
    sizes = []
    b = spec.init_bsz
    while b <= spec.max_bsz:
        sizes.append(b)
        b *= 2
    if sizes[-1] != spec.max_bsz:
        raise ValueError(f"{spec.name}: max_bsz must be init_bsz times a power of two")
    return {size: list(rows) for size in sizes}


def build_application(spec: SyntheticSpec) -> Application:
    """The :class:`Application` of one synthetic spec."""
    return Application(
        spec.name,
        placement_rows(spec),
        scalability_rows(spec),
        validation_rows(spec),
        max_epochs=spec.max_epochs,
        init_bsz=spec.init_bsz,
        max_bsz=spec.max_bsz,
        min_local=spec.min_local,
        max_local=spec.max_local,
    )


@functools.cache
def _builtin() -> tuple[tuple[str, Application], ...]:
    return tuple((s.name, build_application(s)) for s in SPECS)


def builtin_applications() -> dict[str, Application]:
    """The built-in synthetic applications by name (built once; a fresh dict each call)."""
    return dict(_builtin())


def builtin_params() -> dict[str, ThroughputParams]:
    """The throughput parameters the built-in applications were generated from."""
    return {s.name: s.params for s in SPECS}


def builtin_profiles() -> dict:
    """The built-in synthetic applications, also under the Pollux application names they stand
    in for (so Pollux-format workloads run without the artifact's data)."""
    apps = dict(builtin_applications())
    for pollux, ours in BUILTIN_STANDINS.items():
        apps.setdefault(pollux, apps[ours])
    return apps


#: Pollux application → built-in synthetic stand-in (similar batch ranges; docs/models.md)
BUILTIN_STANDINS = {
    "cifar10": "synthetic-cnn",
    "imagenet": "synthetic-resnet",
    "bert": "synthetic-bert",
    "ncf": "synthetic-rec",
    "deepspeech2": "synthetic-speech",
    "yolov3": "synthetic-bert",  # local batch 4–16 holds YOLOv3's 4 per GPU (luo24-physical)
}
