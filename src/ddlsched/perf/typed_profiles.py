"""Application profiles per GPU type, in the Sia artifact's layout (Jayaram Subramanya et al.,
SOSP '23; github.com/siasosp23/artifacts at ``aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70``,
``sia-simulator/applications.py``; docs/sia.md).

A Sia profiles directory (the artifact's ``sia-simulator/traces``) holds one folder per
application. Per GPU type T a folder has ``placements-T.csv`` (``placement,local_bsz,
step_time,sync_time``, columns in any order) and ``scalability-T.csv`` (``num_nodes,
num_replicas,local_bsz,step_time,sync_time``): the step times measured on GPUs of type T,
read by Sia's ``Application(trace_dir, cluster_suffix=T)`` (applications.py:37-46). The
validation curves ``validation-<bsz>.csv`` are the folder's, shared by every type
(applications.py:32-36). Most folders also hold the unsuffixed ``placements.csv`` and
``scalability.csv`` of the Pollux artifact's layout, which Sia's simulator never reads.

Each (application, GPU type) is one :class:`~ddlsched.perf.profiles.Application` of the
Pollux artifact's model (the same batch rule, interpolation and statistical efficiency as
Sia's applications.py, which builds on it), with Sia's per-application constants:
``max_epochs`` from its application table (:data:`SIA_MAX_EPOCHS`, applications.py:342-395),
the measured local-batch range of the type's own table, except deepspeech2 on ``rtx`` capped
at 57 (:data:`SIA_MAX_LOCAL`, applications.py:51-52) — and not the Pollux artifact's yolov3
cap of 8, which Sia does not have. A type's tables measure placements on a few of its nodes
(``rtx`` 3, ``dgx-ext`` 2, ``quad`` 1, ``aws`` 16: the artifact's
``cluster_max_physical_nnodes``, simulator_config.py:15, is exactly that); a placement on more
nodes is looked up as Sia's simulator runs it, packed onto that many nodes (cluster.py:197-209,
``perf.profiles.packed_placement``).

A directory is in this layout when some application folder has a ``placements-T.csv``
(:func:`is_typed_profiles`). Its unsuffixed tables, where a folder has them, are then the
*default* profile (epochs, progress and the batch limits a type-blind policy plans with),
read with the same constants; on a cluster of declared GPU types every type runs on its own
tables (``backends/profile.type_applications``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import InputError, quote
from ..paths import is_dir
from .profiles import DEFAULT_MAX_EPOCHS, Application, load_application

#: Epochs each application runs in Sia's application table (applications.py:342-395; the same
#: for every GPU type)
SIA_MAX_EPOCHS: dict[str, int] = {**DEFAULT_MAX_EPOCHS, "gpt_pmp": 2}

#: Largest local batch per (application, GPU type) where Sia overrides the measured maximum
#: (applications.py:51-52)
SIA_MAX_LOCAL: dict[tuple[str, str], int] = {("deepspeech2", "rtx"): 57}

#: Sia's calibration (simulator_config.py:31-33, job.py:105 and 485): every simulated rate of
#: an application is divided by its factor ("real-world runs being slower than simulator");
#: ``--set calibration=sia`` applies it (``core.profileexec``). Applications not listed: 1.
SIA_SLOWDOWNS: dict[str, float] = {
    "cifar10": 1.8,
    "imagenet": 1.2,
    "yolov3": 1.2,
    "bert": 1.2,
    "deepspeech2": 1.2,
    "ncf": 1.5,
    "gpt_pmp": 1.0,
}

#: Seconds of checkpoint-restore Sia's simulator charges an application at every (re)start
#: (``Application.rescale_time``, applications.py:56-69); others 30 s. ``--set
#: calibration=sia`` applies them instead of ``rescale_delay``.
SIA_RESCALE_TIMES: dict[str, float] = {
    "cifar10": 50.0,
    "deepspeech2": 25.0,
    "bert": 120.0,
    "yolov3": 80.0,
    "imagenet": 250.0,
    "ncf": 15.0,
}
SIA_DEFAULT_RESCALE_TIME = 30.0


def calibration(name: str) -> dict[str, dict[str, float]]:
    """The profile executor's per-application rate slowdowns and restart delays of ``--set
    calibration=NAME``: ``sia`` = Sia's simulator's (:data:`SIA_SLOWDOWNS`,
    :data:`SIA_RESCALE_TIMES`; Sia's applications only, others keep ``rescale_delay`` and
    their rate); ``none``: neither."""
    if name != "sia":
        return {}
    delays = {a: SIA_RESCALE_TIMES.get(a, SIA_DEFAULT_RESCALE_TIME) for a in SIA_MAX_EPOCHS}
    return {"slowdowns": dict(SIA_SLOWDOWNS), "app_delays": delays}


#: Applications Sia runs as pipeline-parallel jobs (``PMPApplication``, applications.py:327-338
#: and 366, 375): their step times are per pipeline of several GPUs, which ddlsched's
#: data-parallel model cannot run; reading their tables is fine
SIA_PIPELINE_APPS: frozenset[str] = frozenset({"gpt_pmp"})

_TYPED_PLACEMENTS = re.compile(r"placements-(.+)\.csv")


def application_types(folder: str | Path) -> tuple[str, ...]:
    """The GPU types an application folder has tables for (``placements-T.csv``), sorted."""
    out = []
    for p in Path(folder).iterdir():
        m = _TYPED_PLACEMENTS.fullmatch(p.name)
        if m is not None and p.is_file():
            out.append(m.group(1))
    return tuple(sorted(out))


def profile_types(root: str | Path) -> dict[str, tuple[str, ...]]:
    """Application folder → the GPU types it has tables for, for every folder of ``root`` with
    a ``placements.csv`` or a ``placements-T.csv`` (an untyped folder maps to ``()``)."""
    base = Path(root)
    if not is_dir(base):
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for d in sorted(base.iterdir()):
        if not d.is_dir():
            continue
        types = application_types(d)
        if types or (d / "placements.csv").is_file():
            out[d.name] = types
    return out


def is_typed_profiles(root: str | Path) -> bool:
    """Whether ``root`` is a profiles directory in Sia's layout (a ``placements-T.csv``)."""
    return any(profile_types(root).values())


def load_sia_application(folder: str | Path, gpu_type: str = "") -> Application:
    """One application folder's profile on ``gpu_type`` (its ``placements-<type>.csv`` and
    ``scalability-<type>.csv``; "" = the unsuffixed tables), with Sia's constants."""
    name = Path(folder).name
    app = load_application(
        folder,
        name,
        SIA_MAX_EPOCHS.get(name),
        max_local=SIA_MAX_LOCAL.get((name, gpu_type), 0),
        suffix=gpu_type,
    )
    if gpu_type:  # a placement on more nodes of the type is looked up as Sia packs it
        app.max_nodes = app.measured_nodes
    return app


def load_profiles(root: str | Path) -> dict[str, Application]:
    """The default profiles of a profiles directory (``--set profiles=DIR``): the Pollux
    layout as :func:`~ddlsched.perf.profiles.load_applications` reads it; Sia's layout: every
    folder with unsuffixed tables, with Sia's constants (may be none: every folder typed)."""
    from .profiles import load_applications

    if not is_typed_profiles(root):
        return load_applications(root)
    base = Path(root)
    return {
        d.name: load_sia_application(d)
        for d in sorted(base.iterdir())
        if d.is_dir() and (d / "placements.csv").is_file()
    }


def load_type_profiles(
    root: str | Path, gpu_type: str, names: Iterable[str], cluster: str
) -> dict[str, Application]:
    """The profiles of ``names`` on ``gpu_type`` from a Sia-layout directory, for cluster
    ``cluster``: an application without ``placements-<type>.csv`` is a one-line error naming
    its folder and the types it has tables for."""
    base = Path(root)
    out: dict[str, Application] = {}
    for name in names:
        folder = base / name
        if not (folder / f"placements-{gpu_type}.csv").is_file():
            have = application_types(folder) if is_dir(folder) else ()
            raise InputError(
                f"no placements-{gpu_type}.csv: application {quote(name)} has no profile for "
                f"GPU type {quote(gpu_type)} of cluster {quote(cluster)} (its GPU types: "
                f"{', '.join(have) or 'none'})",
                source=str(folder),
                field="profiles",
            )
        out[name] = load_sia_application(folder, gpu_type)
    return out


def check_runnable(name: str, source: str) -> None:
    """A pipeline-parallel application of Sia's (:data:`SIA_PIPELINE_APPS`) cannot run here."""
    if name in SIA_PIPELINE_APPS:
        raise InputError(
            f"application {quote(name)} is a pipeline-parallel job in Sia (PMPApplication, "
            "applications.py:327-338): its step times are per pipeline of GPUs, and ddlsched "
            "runs data-parallel jobs only",
            source=source,
            field="profiles",
        )
