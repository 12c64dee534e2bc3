"""Per-job JCTs of ddlsched's ``pollux-unaware`` beside a (possibly unfinished) run of the Sia
artifact's ``multi_simulator_unaware.py`` (issue #29).

    python benchmarks/sia_unaware_jcts.py ARTIFACT_STDOUT WORKLOAD.csv JOBS.csv

``ARTIFACT_STDOUT`` (plain or ``.gz``, as the reference runs keep it once finished) is the
simulator's printed output: after every round it prints the jobs
finished so far as a dict ``{name: JCT seconds}`` followed by ``Average JCT:`` (its
multi_simulator_unaware.py:96-100); the last such dict is taken. ``WORKLOAD.csv`` maps the
workload's row order (ddlsched's job ids) to the names; ``JOBS.csv`` is ddlsched's output.
Prints, on the jobs the artifact finished: both means, the per-job ratio ours/artifact
(median, quartiles), the same per application, and the largest differences. Not a test: the
artifact is not here.
"""

from __future__ import annotations

import ast
import csv
import gzip
import statistics
import sys
from pathlib import Path


def artifact_jcts(stdout: Path) -> dict[str, float]:
    """The last ``{...}`` line printed before an ``Average JCT`` line."""
    last: dict[str, float] = {}
    prev = ""
    opener = gzip.open if stdout.suffix == ".gz" else open
    with opener(stdout, "rt") as f:
        for line in f:
            if line.startswith("Average JCT") and prev.startswith("{"):
                last = ast.literal_eval(prev)
            prev = line.strip()
    return {k: float(v) for k, v in last.items()}


def by_application(
    theirs: dict[str, float], ours: dict[str, float]
) -> dict[str, tuple[int, float, float]]:
    """Per application (a job name's part before its last ``-``), over the jobs both runs
    finished: (jobs, median of ddlsched ÷ artifact, ddlsched's JCT sum ÷ the artifact's − 1).
    Where one application's jobs differ all one way, the gap is not one job's luck."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for name in sorted(theirs.keys() & ours.keys()):
        groups.setdefault(name.rsplit("-", 1)[0], []).append((theirs[name], ours[name]))
    return {
        app: (
            len(pairs),
            statistics.median(o / a for a, o in pairs),
            sum(o for _, o in pairs) / sum(a for a, _ in pairs) - 1,
        )
        for app, pairs in sorted(groups.items())
    }


def main(argv: list[str]) -> int:
    stdout, workload, jobs = map(Path, argv)
    theirs = artifact_jcts(stdout)
    with workload.open(newline="") as f:
        names = [r["name"] for r in csv.DictReader(f)]
    with jobs.open(newline="") as f:
        ours = {names[int(r["job_id"])]: float(r["jct"]) for r in csv.DictReader(f)}
    common = [n for n in names if n in theirs and n in ours]
    a = [theirs[n] for n in common]
    o = [ours[n] for n in common]
    ratio = sorted(x / y for x, y in zip(o, a, strict=True))
    q = statistics.quantiles(ratio, n=4)
    print(f"jobs the artifact finished: {len(common)} of {len(names)}")
    print(f"mean JCT artifact {statistics.mean(a):.1f} s, ddlsched {statistics.mean(o):.1f} s")
    print(f"ddlsched/artifact per job: median {q[1]:.2f}, quartiles {q[0]:.2f}-{q[2]:.2f}")
    rest = [ours[n] for n in names if n not in theirs]
    if rest:
        print(f"ddlsched on the {len(rest)} others: {', '.join(f'{x:.0f}' for x in rest)} s")
    for app, (n, median, total) in by_application(theirs, ours).items():
        print(f"  {app}: {n} jobs, per job median {median:.2f}, sum {100 * total:+.1f} %")
    worst = sorted(common, key=lambda n: abs(ours[n] - theirs[n]), reverse=True)[:5]
    for n in worst:
        print(f"  {n}: artifact {theirs[n]:.0f} s, ddlsched {ours[n]:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
