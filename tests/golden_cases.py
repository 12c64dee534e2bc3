"""The golden set (issue #12): one small run per built-in policy, whose every output file is
committed under ``tests/golden/<case>/`` and compared byte for byte by ``test_golden.py``.

Regenerate (only when a change of output is intended, and say why in the commit):
``python tests/golden_cases.py`` from the repository root (``python tests/golden_cases.py CASE …``:
only those cases).

The cases run in a child process with :data:`PORTABLE_ENV`: OpenBLAS and numpy pick their
kernels by CPU, and Pollux's throughput fits (scipy's least squares and L-BFGS-B on BLAS) end a
few ulps apart on an AMD EPYC and an Intel Xeon (a job's finish moved by 0.05 s in the 12-job
Pollux case). With the Haswell kernels (AVX2, on every x86-64 CPU since 2013) and numpy's
AVX-512 loops off, the bytes are the same on both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
#: a small generic trace with measured durations (our own numbers, not a public trace)
TRACE = """arrival,num_gpus,duration
0,2,300
10,4,120
20,1,600
30,8,90
45,2,60
50,1,30
60,4,400
75,2,200
90,1,50
100,8,100
"""

#: the same kind of trace with per-type durations (seconds on v100, p100, k80) for Gavel's
#: policies on a gavel-V:P:K cluster
TRACE_TYPED = """arrival,num_gpus,duration,type_durations
0,2,3000,v100=3000;p100=4200;k80=9000
10,1,1200,v100=1200;p100=1300;k80=1500
20,1,800,v100=800;p100=1700;k80=8000
400,2,5000,v100=5000;p100=5600;k80=6000
900,1,600,v100=600;p100=900;k80=2400
3000,1,300,v100=300;p100=400;k80=900
3100,2,2000,v100=2000;p100=2600;k80=7000
"""


@dataclass(frozen=True)
class Case:
    name: str
    cluster: str
    workload: str
    policy: str
    placement: str | None = None
    settings: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)


def cases() -> list[Case]:
    out: list[Case] = []
    wang = dict(
        workload="wang20", cluster="tiny", options={"max_gpus": 8, "sample": 10, "load_scale": 10.0}
    )
    for pol in ("ada-srsf", "srsf1", "srsf2", "srsf3", "srsf", "fifo-ff"):
        for place in ("ff", "ls", "rand", "lwf"):
            out.append(Case(f"wang-{pol}-{place}", policy=pol, placement=place, **wang))
    out.append(
        Case("wang-ada-srsf-job", policy="ada-srsf", settings={"granularity": "job"}, **wang)
    )
    out.append(Case("wang-ada-srsf-rar", policy="ada-srsf", settings={"model": "rar"}, **wang))
    yu = dict(workload="yu22", cluster="yu22-4", options={"max_gpus": 8, "sample": 12})
    for pol in ("sjf-bco", "yu-ff", "yu-ls", "yu-rand"):
        out.append(Case(f"plan-{pol}", policy=pol, **yu))
    for sem in ("events", "rounds"):
        for pol in (
            "fifo",
            "sjf",
            "tiresias",
            "sjf-ffs",
            "sjf-bsbf",
            "pollux",
            "pollux-unaware",
            "sia",
            "gavel-tunedjobs",
        ):
            out.append(
                Case(
                    f"profile-{pol}-{sem}",
                    cluster="tiny",
                    workload="luo24-12",
                    policy=pol,
                    settings={"semantics": sem},
                    options={"max_gpus": 8, "load_scale": 20.0},
                )
            )
    for pol in ("fifo", "sjf", "tiresias"):
        out.append(Case(f"trace-{pol}", cluster="tiny", workload="TRACE", policy=pol))
    for pol in (
        "gavel-fifo",
        "gavel-fifo-perf",
        "max-min-fairness",
        "max-min-fairness-perf",
        "finish-time-fairness",
        "finish-time-fairness-perf",
        "min-total-duration-perf",
    ):
        out.append(Case(f"{pol}", cluster="gavel-2:1:2", workload="TRACE_TYPED", policy=pol))
    return out


def run_case(case: Case, out: Path, workdir: Path) -> None:
    """Run ``case`` into ``out`` through the same path as ``ddlsched run --config``."""
    from ddlsched.config import build_run_config, run_config

    workload = case.workload
    if workload in ("TRACE", "TRACE_TYPED"):
        trace = workdir / "trace.csv"
        trace.write_text(TRACE if workload == "TRACE" else TRACE_TYPED)
        workload = str(trace)
    run = {"cluster": case.cluster, "workload": workload, "policy": case.policy, "seed": 0}
    if case.placement:
        run["placement"] = case.placement
    run.update(case.options)
    cfg = build_run_config(run, case.settings, f"golden case {case.name}")
    run_config(cfg, out)


def normalise(files: dict[str, bytes], workdir: Path) -> dict[str, bytes]:
    """The files of a run as if it had run in ``WORKDIR``: the temporary trace path inside
    config.json is replaced, and the run id and config digest in summary.json follow it (they
    hash config.json). Every other byte is compared as written."""
    import hashlib

    out = dict(files)
    config = files.get("config.json")
    if config is None or str(workdir).encode() not in config:
        return out
    fixed = config.replace(str(workdir).encode(), b"WORKDIR")
    out["config.json"] = fixed
    old, new = hashlib.sha256(config).hexdigest(), hashlib.sha256(fixed).hexdigest()
    summary = files["summary.json"].replace(old.encode(), new.encode())
    out["summary.json"] = summary.replace(old[:16].encode(), new[:16].encode())
    return out


def read_run(out: Path, workdir: Path) -> dict[str, bytes]:
    """Every file of the run directory ``out``, normalised."""
    return normalise({f.name: f.read_bytes() for f in sorted(out.iterdir())}, workdir)


#: the environment the golden runs get (module doc): OpenBLAS's Haswell kernels and numpy's
#: loops without AVX-512 (the feature names of numpy ≥ 2.4 and of earlier versions)
PORTABLE_ENV = {
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX "
    "AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR",
    "OPENBLAS_NUM_THREADS": "1",
}

#: the policies whose golden copies are the answers of Gavel's solver, ECOS (optional extra)
NEEDS_ECOS = ("min-total-duration-perf", "max-min-fairness", "max-min-fairness-perf")


def has_ecos() -> bool:
    import importlib.util

    return importlib.util.find_spec("ecos") is not None


def write_cases(dest: Path, names: list[str] | None = None) -> None:
    """Run every case (or the cases ``names``) into ``dest/<case>/``, normalised; a case that
    needs ECOS is left out where ECOS is not installed. Call it in a process that has
    :data:`PORTABLE_ENV` (:func:`run_portably`)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for case in cases():
            if (names and case.name not in names) or (case.policy in NEEDS_ECOS and not has_ecos()):
                continue
            out = work / case.name
            run_case(case, out, work)
            target = dest / case.name
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
            for name, data in read_run(out, work).items():
                (target / name).write_bytes(data)
            print(f"{case.name}: {len(list(target.iterdir()))} files", file=sys.stderr)


def run_portably(dest: Path, names: list[str] | None = None, timeout: float = 600) -> None:
    """:func:`write_cases` in a child process with :data:`PORTABLE_ENV`."""
    env = {**os.environ, **PORTABLE_ENV}
    subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--into", str(dest), *(names or [])],
        env=env,
        check=True,
        timeout=timeout,
        capture_output=True,
    )


def regenerate(names: list[str] | None = None) -> None:
    """Rewrite the golden copies: every case, or only the cases ``names``."""
    if GOLDEN.exists() and not names:
        shutil.rmtree(GOLDEN)
    GOLDEN.mkdir(exist_ok=True)
    run_portably(GOLDEN, names)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--into"]:
        write_cases(Path(sys.argv[2]), sys.argv[3:])
    else:
        regenerate(sys.argv[1:])
