"""Benchmark: ``ddlsched queues decide`` on 10,000 pending workloads across 100 ClusterQueues
(10 cohorts of 10, two GPU flavors, some admitted workloads borrowing, preemption on).

Not a test: run ``python benchmarks/bench_queues.py``. Target (issue #28): one decision in
under 1 s on the project's 2-core machine, reading the files included (the CLI's work). Also
reports ``--until-stable`` and fair sharing, which have no target.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import tempfile
import time
from pathlib import Path

import yaml

from ddlsched.cli import main
from ddlsched.tenancy import decide, load_queues, load_snapshot

TARGET_S = 1.0


def write_inputs(folder: Path, queues: int, pending: int, fair: bool) -> tuple[Path, Path]:
    rng = random.Random(28)
    v = "kueue.x-k8s.io/v1beta2"
    docs: list[dict] = [
        {"apiVersion": v, "kind": "ResourceFlavor", "metadata": {"name": f}}
        for f in ("a100", "v100")
    ]
    for c in range(queues // 10):
        docs.append({"apiVersion": v, "kind": "Cohort", "metadata": {"name": f"org{c}"}})
    for q in range(queues):
        docs.append(
            {
                "apiVersion": v,
                "kind": "ClusterQueue",
                "metadata": {"name": f"team{q}"},
                "spec": {
                    "cohortName": f"org{q // 10}",
                    "preemption": {
                        "withinClusterQueue": "LowerPriority",
                        "reclaimWithinCohort": "Any",
                    },
                    "resourceGroups": [
                        {
                            "coveredResources": ["gpu"],
                            "flavors": [
                                {
                                    "name": f,
                                    "resources": [
                                        {"name": "gpu", "nominalQuota": 16, "borrowingLimit": 16}
                                    ],
                                }
                                for f in ("a100", "v100")
                            ],
                        }
                    ],
                },
            }
        )
    if fair:
        docs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "fairSharing": {},
            }
        )
    admitted = [
        {
            "name": f"run{q}",
            "queue": f"team{q}",
            "admitted_at": 0,
            "priority": 0,
            "podsets": [
                {
                    "name": "main",
                    "count": 1,
                    "requests": {"gpu": 8 * (1 + q % 3)},
                    "flavors": {"gpu": "a100"},
                }
            ],
        }
        for q in range(queues)
    ]
    jobs = [
        {
            "name": f"job{i}",
            "queue": f"team{rng.randrange(queues)}",
            "priority": rng.choice([0, 0, 0, 10]),
            "created": i,
            "podsets": [
                {
                    "name": "main",
                    "count": rng.choice([1, 2, 4]),
                    "requests": {"gpu": rng.choice([1, 2, 4, 8])},
                }
            ],
        }
        for i in range(pending)
    ]
    q, w = folder / "queues.yaml", folder / "workloads.yaml"
    q.write_text(yaml.safe_dump_all(docs))
    w.write_text(yaml.safe_dump({"admitted": admitted, "pending": jobs}))
    (folder / "workloads.json").write_text(json.dumps({"admitted": admitted, "pending": jobs}))
    return q, w


def best_of(n: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--pending", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for fair in (False, True):
            q, w = write_inputs(Path(tmp), args.queues, args.pending, fair)
            label = "fair sharing" if fair else "classical"
            timings = {}
            for form in (w, w.with_suffix(".json")):
                cli = ["queues", "decide", "--queues", str(q), "--workloads", str(form)]

                def run_cli() -> None:
                    with contextlib.redirect_stdout(io.StringIO()):
                        assert main(cli) == 0  # noqa: B023

                timings[form.suffix] = best_of(1 if form.suffix == ".yaml" else 3, run_cli)
            total = timings[".json"]
            config = load_queues(q)
            snap = load_snapshot(w, config)
            one = best_of(3, lambda: decide(config, snap))  # noqa: B023
            t = time.perf_counter()
            d = decide(config, snap, until_stable=True)
            stable = time.perf_counter() - t
            ok = "OK" if total < TARGET_S else "OVER TARGET"
            print(
                f"{label}: {args.pending:,} pending, {args.queues} ClusterQueues: "
                f"`queues decide` {total:.3f} s with a JSON workloads file ({ok}, target "
                f"{TARGET_S} s), {timings['.yaml']:.2f} s with YAML; "
                f"the cycle alone {one * 1000:.1f} ms; --until-stable {stable:.2f} s "
                f"({d.cycles} cycles, {'stable' if d.stable else 'no stable state'}, "
                f"{len(d.admitted)} admitted, {len(d.preempted)} preempted)"
            )


if __name__ == "__main__":
    main_()
