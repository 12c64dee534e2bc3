"""Random runs, each checked: the fuzzing that found the twelfth session's bugs, kept.

    python benchmarks/fuzz_runs.py queues --seeds 0:200 [--policies fifo,gavel-fifo]
    python benchmarks/fuzz_runs.py plain --seeds 0:150
    python benchmarks/fuzz_runs.py sia --seeds 0:40

Three families of scenarios, each drawn from a seed:
- ``queues``: Kueue set-ups on trace jobs (tests/test_tenancy_random.py runs four seeds of it):
  one GPU type or two (gavel-V:0:K, flavors named after the types), one to three
  ClusterQueues in a cohort or not, preemption and reclaim rules, borrowing and lending
  limits, two priorities, arrivals with up to 12 decimals, stop and restart delays as
  ``plain``'s;
- ``plain``: trace workloads without queues on clusters of one type or several, per-type
  durations, arrivals with up to 13 decimals, in half the runs stop and restart delays;
- ``sia``: Kueue set-ups on ``sia-64`` with application jobs ``alpha`` and ``beta`` (batch
  32 per GPU) on small Sia-format profiles of our own (tests/test_sia_inputs.py's
  ``write_sia_profiles``, written to a temporary folder; ``--profiles DIR`` for others with
  those applications), flavors named after its types for the policies that hold them.

Every run must finish every job, and ``ddlsched check`` must pass on what it wrote. A run the
engine refuses with an ``InputError`` counts as refused, not failed (its first words are
tallied). Prints each failure; exit 1 if any. Not a test: minutes per hundred seeds.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from ddlsched.api import simulate
from ddlsched.check import check_run
from ddlsched.core.cluster import Cluster
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec
from ddlsched.core.results import write_result
from ddlsched.errors import InputError
from ddlsched.policies.gavel import POLICIES as GAVEL_POLICIES
from ddlsched.tenancy import load_queues
from ddlsched.workloads.trace_formats import PLACEHOLDER_MODEL, placeholder_model

MODEL = placeholder_model(PLACEHOLDER_MODEL)
APP_MODEL = placeholder_model("app")
GPU = '"nvidia.com/gpu"'
#: the policies that run trace jobs with and without ``--queues``
TRACE_POLICIES = ["fifo", "sjf", "tiresias", "sjf-ffs", "sjf-bsbf", *sorted(GAVEL_POLICIES)]
#: the policies that run application jobs on sia-64 (those that hold typed flavors first)
SIA_POLICIES = ["sia", "gavel-tunedjobs", "pollux", "pollux-unaware", "fifo", "tiresias"]
SIA_TYPED = ("sia", "gavel-tunedjobs")
#: refused runs named per reason in the report (the rest counted)
REFUSALS_SHOWN = 5


def _flavor_entries(rng: random.Random, flavors: list[str], first: list[int], cohort: bool) -> str:
    text = f"[[clusterQueue.resourceGroups]]\ncoveredResources = [{GPU}]\nflavors = [\n"
    for n, f in enumerate(flavors):
        quota = f"nominalQuota = {rng.choice(first if n == 0 else [0, 1, 2, 3, 4, 6, 8])}"
        if cohort and rng.random() < 0.3:
            quota += f", borrowingLimit = {rng.choice([0, 2, 4])}"
        if cohort and rng.random() < 0.2:
            quota += f", lendingLimit = {rng.choice([0, 2])}"
        text += f'  {{ name = "{f}", resources = [{{ name = {GPU}, {quota} }}] }},\n'
    return text + "]\n"


def queues_manifest(
    rng: random.Random, flavors: list[str], queues: int, first: list[int], cohort: bool
) -> str:
    """A Kueue manifest (TOML): the flavors, a ``high`` priority class, ``queues``
    ClusterQueues ``q0``… each offering one or all of the flavors in a random order."""
    text = "".join(f'[[resourceFlavor]]\nname = "{f}"\n' for f in flavors)
    text += '[[workloadPriorityClass]]\nname = "high"\nvalue = 100\n'
    for q in range(queues):
        offered = list(flavors)
        rng.shuffle(offered)
        offered = offered[: rng.choice([1, len(offered)])]
        rules = []
        if rng.random() < 0.6:
            within = rng.choice(["LowerPriority", "Never", "LowerOrNewerEqualPriority"])
            rules.append(f'withinClusterQueue = "{within}"')
        if cohort and rng.random() < 0.7:
            rules.append(f'reclaimWithinCohort = "{rng.choice(["Any", "LowerPriority", "Never"])}"')
        text += f'[[clusterQueue]]\nname = "q{q}"\n' + ('cohortName = "c"\n' if cohort else "")
        if rules:
            text += "preemption = { " + ", ".join(rules) + " }\n"
        text += _flavor_entries(rng, offered, first, cohort)
    return text


def queues_scenario(rng: random.Random) -> tuple[Cluster, str, list[JobSpec]]:
    """``queues``: a cluster, a queues manifest (TOML) and trace jobs, drawn from ``rng``."""
    if rng.random() < 0.5:
        v100, k80 = rng.choice([(4, 4), (4, 8), (8, 4)])
        cluster = load_cluster(f"gavel-{v100}:0:{k80}")
        flavors = ["V100", "k80"]
    else:
        cluster = Cluster.homogeneous(rng.choice([2, 3]), 4)
        flavors = ["default"]
    queues = rng.choice([1, 2, 3])
    text = queues_manifest(rng, flavors, queues, [4, 6, 8], rng.random() < 0.8)
    jobs = [
        JobSpec(
            i,
            round(rng.uniform(0, 300), rng.choice([0, 3, 12])),
            rng.choice([1, 1, 2, 3, 4]),
            0,
            MODEL,
            duration=rng.uniform(10, 400),
            queue=f"q{rng.randrange(queues)}",
            priority=rng.choice(["", "", "high"]),
        )
        for i in range(rng.choice([10, 25, 40]))
    ]
    return cluster, text, jobs


def plain_scenario(rng: random.Random) -> tuple[Cluster, list[JobSpec]]:
    """``plain``: a cluster and trace jobs (per-type durations on a typed cluster)."""
    typed = rng.random() < 0.6
    if typed:
        v100, p100, k80 = rng.choice([(2, 1, 2), (4, 0, 4), (1, 1, 1), (8, 4, 4)])
        cluster = load_cluster(f"gavel-{v100}:{p100}:{k80}")
        cap = min(n for n in cluster.gpu_types.values() if n)
    else:
        cluster = Cluster.homogeneous(rng.choice([1, 2, 3]), rng.choice([2, 4, 8]))
        cap = cluster.num_gpus
    jobs = []
    for i in range(rng.choice([1, 5, 20, 50])):
        gpus = min(rng.choice([1, 1, 2, 4]), cap)
        d = rng.choice([rng.uniform(1, 50), rng.uniform(50, 5000)])
        table = None
        if typed and rng.random() < 0.7:
            table = (("v100", d), ("p100", d * rng.uniform(1, 2)), ("k80", d * rng.uniform(1.5, 4)))
        arrival = rng.choice([0.0, round(rng.uniform(0, 3000), rng.choice([0, 2, 9, 13]))])
        jobs.append(JobSpec(i, arrival, gpus, 0, MODEL, duration=d, type_durations=table))
    return cluster, jobs


def plain_delays(rng: random.Random) -> dict[str, object]:
    """``plain``'s and ``queues``' stop and restart delays, from a generator of their own (the
    scenarios stay those drawn before delays existed): none in half the runs, else each 0, up
    to a minute or up to 15 minutes (a stop longer than a policy's round lets it restart, and
    preempt again, a job whose old run still stops)."""
    if rng.random() < 0.5:
        return {}
    return {
        k: round(rng.choice([0.0, rng.uniform(0, 60), rng.uniform(60, 900)]), 3)
        for k in ("stop_delay", "restart_delay")
    }


def sia_scenario(rng: random.Random, typed: bool) -> tuple[str, list[JobSpec]]:
    """``sia``: a queues manifest for sia-64 (flavors named after its types when ``typed``)
    and application jobs."""
    flavors = ["aws", "rtx", "dgx-ext"] if typed and rng.random() < 0.6 else ["default"]
    queues = rng.choice([1, 2, 3])
    text = queues_manifest(rng, flavors, queues, [8, 12, 16], True)
    sizes = [(1, 32), (2, 64), (4, 128), (8, 256)]
    jobs = [
        JobSpec(
            i,
            round(rng.uniform(0, 900), 3),
            gpus,
            0,
            APP_MODEL,
            application=rng.choice(["alpha", "beta"]),
            batch_size=batch,
            queue=f"q{rng.randrange(queues)}",
            priority=rng.choice(["", "high"]),
        )
        for i, (gpus, batch) in enumerate(rng.choice(sizes) for _ in range(rng.choice([8, 16])))
    ]
    return text, jobs


def _checked(run: Callable[[], object], work: Path) -> str | None:
    """Run, write and check; None if clean, else what went wrong (InputError propagates)."""
    try:
        res = run()
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - any other error is a finding
        return f"{type(e).__name__}: {str(e)[:300]}"
    write_result(res, work / "out")
    result = check_run(work / "out")
    if not result.ok:
        return f"check: {[v.message for v in result.violations][:3]}"
    return None


def fuzz(
    family: str,
    seeds: Iterable[int],
    policies: list[str],
    profiles: Path | None = None,
) -> tuple[int, dict[str, list[str]], list[str]]:
    """(runs, refusals by their first words → the "seed S POLICY" refused so, failure lines)
    over ``seeds`` × ``policies``."""
    ran, failures = 0, []
    refused: dict[str, list[str]] = {}
    sia64 = load_cluster("sia-64") if family == "sia" else None
    for seed in seeds:
        for policy in policies:
            rng = random.Random(seed)
            with tempfile.TemporaryDirectory() as d:
                work = Path(d)
                if family == "queues":
                    cluster, text, jobs = queues_scenario(rng)
                    settings: dict[str, object] = plain_delays(random.Random(seed + 2))
                elif family == "plain":
                    cluster, jobs = plain_scenario(rng)
                    text, settings = "", plain_delays(random.Random(seed + 2))
                else:
                    assert sia64 is not None and profiles is not None
                    cluster = sia64
                    text, jobs = sia_scenario(rng, policy in SIA_TYPED)
                    settings = {
                        "profiles": str(profiles),
                        "calibration": "sia",
                        "semantics": random.Random(seed + 1).choice(["events", "rounds"]),
                    }
                queues = None
                if text:
                    (work / "queues.toml").write_text(text)
                    queues = load_queues(work / "queues.toml")

                run = partial(
                    simulate, cluster, jobs, policy, queues=queues, seed=seed, settings=settings
                )
                try:
                    found = _checked(run, work)
                except InputError as e:
                    why = " ".join(str(e).split()[:8])
                    refused.setdefault(why, []).append(f"seed {seed} {policy}")
                    continue
                ran += 1
                if found is not None:
                    failures.append(f"{family} seed {seed} {policy}: {found}")
    return ran, refused, failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("family", choices=["queues", "plain", "sia"])
    ap.add_argument("--seeds", default="0:50", help="A:B, seeds A to B−1 (default 0:50)")
    ap.add_argument("--policies", help="comma-separated (default: every policy of the family)")
    ap.add_argument("--profiles", type=Path, help="sia: Sia-format profiles of alpha and beta")
    args = ap.parse_args(argv)
    lo, _, hi = args.seeds.partition(":")
    seeds = range(int(lo), int(hi or int(lo) + 1))
    default = SIA_POLICIES if args.family == "sia" else TRACE_POLICIES
    policies = args.policies.split(",") if args.policies else default
    with tempfile.TemporaryDirectory() as d:
        profiles = args.profiles
        if args.family == "sia" and profiles is None:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            from test_sia_inputs import write_sia_profiles

            profiles = write_sia_profiles(Path(d) / "p", apps=("alpha", "beta"), epoch_progress=2e4)
        ran, refused, failures = fuzz(args.family, seeds, policies, profiles)
    for line in failures:
        print(line)
    print(
        f"{args.family}: {ran} runs checked, {len(failures)} failed, "
        f"{sum(map(len, refused.values()))} refused"
    )
    for why, runs in sorted(refused.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(runs[:REFUSALS_SHOWN]) + (", …" if len(runs) > REFUSALS_SHOWN else "")
        print(f"  refused {len(runs)}×: {why} … ({shown})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
