"""Kueue's quota layer inside the engine (docs/tenancy.md "In the engine"): hand-built
scenarios whose outcome is stated by hand, composition with the policies, and equality with
the run without queues when the quota never binds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec
from ddlsched.errors import InputError
from ddlsched.policies.gavel import POLICIES as GAVEL_POLICIES
from ddlsched.tenancy import QueuesConfig, load_queues
from ddlsched.workloads.trace_formats import PLACEHOLDER_MODEL, placeholder_model

MODEL = placeholder_model(PLACEHOLDER_MODEL)
GAVEL = sorted(GAVEL_POLICIES)  # Gavel's policies

TWO_QUEUES = """
[[resourceFlavor]]
name = "default"

[[clusterQueue]]
name = "a"
cohortName = "lab"
preemption = {{ withinClusterQueue = "LowerPriority", reclaimWithinCohort = "Any" }}
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{{ name = "default", resources = [{{ name = "nvidia.com/gpu", nominalQuota = {a} }}] }}]

[[clusterQueue]]
name = "b"
cohortName = "lab"
preemption = {{ withinClusterQueue = "LowerPriority", reclaimWithinCohort = "Any" }}
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{{ name = "default", resources = [{{ name = "nvidia.com/gpu", nominalQuota = {b} }}] }}]

[[localQueue]]
name = "team-b"
clusterQueue = "b"

[[workloadPriorityClass]]
name = "high"
value = 100
"""


def queues(tmp_path: Path, a: int = 2, b: int = 2) -> QueuesConfig:
    path = tmp_path / "queues.toml"
    path.write_text(TWO_QUEUES.format(a=a, b=b))
    return load_queues(path)


def job(i: int, arrival: float, gpus: int, duration: float, queue: str, prio: str = "") -> JobSpec:
    return JobSpec(i, arrival, gpus, 0, MODEL, duration=duration, queue=queue, priority=prio)


CLUSTER = Cluster.homogeneous(1, 4)


def test_an_arrival_reclaims_the_quota_another_queue_borrowed(tmp_path: Path) -> None:
    # a's job borrows b's idle 2 GPUs at 0; b's job arrives at 10 within b's nominal quota:
    # Kueue evicts a's (InCohortReclamation), admits b's at once; a's waits until b's ends
    # (110) and runs its last 990 s
    jobs = [job(0, 0.0, 4, 1000.0, "a"), job(1, 10.0, 2, 100.0, "team-b")]
    res = simulate(CLUSTER, jobs, "fifo", queues=queues(tmp_path))
    a, b = res.jobs
    assert (b.start, b.finish, b.preemptions) == (10.0, 110.0, 0)
    assert (a.start, a.finish, a.preemptions) == (0.0, 1100.0, 1)
    assert [(s.start, s.end) for s in res.segments if s.job_id == 0] == [(0, 10), (110, 1100)]
    qa, qb = res.summary["queues"]["a"], res.summary["queues"]["b"]
    assert qa["preemptions"]["InCohortReclamation"] == 1 and qa["preemptions"]["policy"] == 0
    assert qb["preemptions"]["InCohortReclamation"] == 0
    # a held 4 GPUs for 10 + 990 s, 2 above its nominal quota
    assert qa["gpu_hours_used"] == pytest.approx(4 * 1000 / 3600)
    assert qa["gpu_hours_borrowed"] == pytest.approx(2 * 1000 / 3600)
    assert qb["gpu_hours_borrowed"] == 0.0
    assert qa["gpu_hours_nominal"] == pytest.approx(2 * 1100 / 3600)
    assert qb["avg_jct"] == 100.0 and qa["avg_admission_wait"] == 0.0
    assert [r[0] for r in res.queues] == ["a", "b"]


def test_priority_orders_admission_within_a_queue(tmp_path: Path) -> None:
    # b's jobs need all 4 GPUs (2 borrowed from a): Kueue preempts only within nominal quota
    # (or with borrowWithinCohort), so the high-priority job 2 waits, and is admitted before
    # job 1, which arrived earlier
    jobs = [
        job(0, 0.0, 4, 100.0, "b"),
        job(1, 1.0, 4, 100.0, "b"),
        job(2, 2.0, 4, 100.0, "b", "high"),
    ]
    res = simulate(CLUSTER, jobs, "fifo", queues=queues(tmp_path))
    assert [(j.start, j.preemptions) for j in res.jobs] == [(0, 0), (200, 0), (100, 0)]


def test_a_higher_priority_job_preempts_within_its_queue(tmp_path: Path) -> None:
    # within b's nominal 2 GPUs (a's 2 are busy): job 2 (priority 100) evicts job 1
    # (InClusterQueue, withinClusterQueue LowerPriority), which resumes when job 2 ends
    jobs = [
        job(0, 0.0, 2, 1000.0, "a"),
        job(1, 0.0, 2, 100.0, "b"),
        job(2, 10.0, 2, 50.0, "b", "high"),
    ]
    res = simulate(CLUSTER, jobs, "fifo", queues=queues(tmp_path))
    assert [(j.start, j.finish, j.preemptions) for j in res.jobs] == [
        (0, 1000, 0),
        (0, 150, 1),
        (10, 60, 0),
    ]
    assert res.summary["queues"]["b"]["preemptions"]["InClusterQueue"] == 1


def one_queue(tmp_path: Path, gpus: int) -> QueuesConfig:
    """One ClusterQueue ``a`` of ``gpus`` GPUs (jobs without a queue go to it)."""
    two = queues(tmp_path, a=gpus, b=0)
    return QueuesConfig(two.flavors, {"a": two.cluster_queues["a"]}, two.cohorts, {}, {})


JOBS = [job(i, 37.0 * i, 1 + i % 3, 200.0 + 13 * (i % 7), "") for i in range(40)]


def test_fifo_under_a_queue_holding_the_whole_cluster_is_fifo(tmp_path: Path) -> None:
    # Kueue admits in FIFO order (BestEffortFIFO skips what does not fit: fifo's backfill)
    # up to the 4 GPUs: the same jobs fifo would start, at the same times
    plain = simulate(CLUSTER, JOBS, "fifo")
    quota = simulate(CLUSTER, JOBS, "fifo", queues=one_queue(tmp_path, 4))
    assert quota.jobs == plain.jobs and quota.segments == plain.segments
    assert quota.summary["queues"]["a"]["gpu_hours_borrowed"] == 0.0


@pytest.mark.parametrize(
    "policy", ["fifo", "sjf", "tiresias", "sjf-bsbf", "gavel-fifo", "max-min-fairness"]
)
def test_a_quota_that_never_binds_changes_nothing(tmp_path: Path, policy: str) -> None:
    # every job admitted at its arrival: the policy sees what it sees without queues
    plain = simulate(CLUSTER, JOBS, policy)
    quota = simulate(CLUSTER, JOBS, policy, queues=one_queue(tmp_path, 1000))
    assert quota.jobs == plain.jobs and quota.segments == plain.segments
    assert {k: v for k, v in quota.summary.items() if k != "queues"} == plain.summary


def test_sjf_orders_only_what_the_quota_admitted(tmp_path: Path) -> None:
    # a quota of the whole cluster admits in FIFO order: sjf chooses among admitted jobs
    # only, so it differs from sjf without queues on this loaded cluster
    plain = simulate(CLUSTER, JOBS, "sjf")
    quota = simulate(CLUSTER, JOBS, "sjf", queues=one_queue(tmp_path, 4))
    assert quota.jobs != plain.jobs


def test_a_job_its_queue_can_never_hold_is_an_input_error(tmp_path: Path) -> None:
    cfg = queues(tmp_path, a=1, b=1)  # the cohort has 2 GPUs
    with pytest.raises(InputError, match="job 0 needs 4 GPU"):
        simulate(CLUSTER, [job(0, 0.0, 4, 10.0, "a")], "fifo", queues=cfg)


def test_planners_do_not_run_with_queues(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not run with --queues: an offline planner"):
        from dataclasses import replace

        from ddlsched.workloads.presets import load_workload

        jobs = [replace(j, queue="a") for j in list(load_workload("yu22", 0))[:3]]
        simulate(Cluster.homogeneous(4, 8), jobs, "sjf-bco", queues=queues(tmp_path, a=8, b=8))


# ------------------------------------------------------------------ the command line
TRACE = """arrival,num_gpus,duration,queue,priority
0,4,1000,a,
10,2,100,team-b,high
20,1,50,team-b,5
"""


def run_cli(tmp_path: Path, *args: str) -> int:
    from ddlsched.cli import main

    return main(["run", "--cluster", "tiny", "--quiet", *args])


def test_run_with_queues_writes_queues_csv_and_checks(tmp_path: Path, capsys) -> None:
    import csv
    import json

    from ddlsched.check import check_run

    (tmp_path / "w.csv").write_text(TRACE)
    queues(tmp_path, a=4, b=4)  # 8 GPUs of tiny: a's job borrows nothing
    outs = []
    for k in range(2):
        out = tmp_path / f"out{k}"
        argv = ["--workload", str(tmp_path / "w.csv"), "--policy", "fifo", "--out", str(out)]
        assert run_cli(tmp_path, *argv, "--queues", str(tmp_path / "queues.toml")) == 0
        assert "queues.csv" in capsys.readouterr().out.splitlines()[2]  # the "wrote" line
        outs.append(out)
        result = check_run(out)
        assert result.ok, [v.message for v in result.violations]
    summary = json.loads((outs[0] / "summary.json").read_text())
    assert summary["queues"]["b"]["jobs"] == 2 and summary["queues"]["a"]["jobs"] == 1
    rows = list(csv.DictReader((outs[0] / "queues.csv").open()))
    assert [r["queue"] for r in rows] == ["a", "b"] and rows[1]["nominal_gpus"] == "4"
    config = json.loads((outs[0] / "config.json").read_text())
    assert config["queues"] == str(tmp_path / "queues.toml")
    for name in ("jobs.csv", "segments.csv", "queues.csv", "summary.json"):  # deterministic
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


def test_a_run_without_queues_records_no_queues_key(tmp_path: Path) -> None:
    import json

    (tmp_path / "w.csv").write_text(TRACE)
    out = tmp_path / "out"
    argv = ["--workload", str(tmp_path / "w.csv"), "--policy", "fifo", "--out", str(out)]
    assert run_cli(tmp_path, *argv) == 0
    assert "queues" not in json.loads((out / "config.json").read_text())
    assert not (out / "queues.csv").exists()


@pytest.mark.parametrize(
    ("cell", "field"), [("nobody", "queue"), ("", "queue"), ("urgent", "priority")]
)
def test_a_job_naming_no_queue_is_one_line(tmp_path: Path, capsys, cell: str, field: str) -> None:
    text = TRACE.replace("20,1,50,team-b,5", f"20,1,50,{cell},5")
    if field == "priority":
        text = TRACE.replace("20,1,50,team-b,5", f"20,1,50,b,{cell}")
    (tmp_path / "w.csv").write_text(text)
    queues(tmp_path)
    argv = ["--workload", str(tmp_path / "w.csv"), "--policy", "fifo", "--out", str(tmp_path / "o")]
    assert run_cli(tmp_path, *argv, "--queues", str(tmp_path / "queues.toml")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{tmp_path / 'w.csv'}, line 4, field '{field}'" in err, err


def test_philly_virtual_clusters_become_proportional_queues(tmp_path: Path) -> None:
    from ddlsched.api import load_run_queues, simulate_named

    # aa: 100 + 7200 GPU-seconds, bb: 200 → 8 GPUs as 7.8 : 0.2 → 8 : 0
    (tmp_path / "p.csv").write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:00:10,100.0,1,100.0,aa\n"
        "2017-10-09 07:00:00,50.0,4,200.0,bb\n"
        "2017-10-09 07:00:20,3600.0,2,7200.0,aa\n"
    )
    from ddlsched.workloads.traces import read_trace

    jobs = read_trace(tmp_path / "p.csv")
    cfg = load_run_queues("proportional", Cluster.homogeneous(2, 4), jobs)
    assert {q: cq.cohort for q, cq in cfg.cluster_queues.items()} == {
        "aa": "cluster",
        "bb": "cluster",
    }
    nominal = {
        q: cq.quotas()[("default", "nvidia.com/gpu")].nominal
        for q, cq in cfg.cluster_queues.items()
    }
    assert nominal == {"aa": 8000, "bb": 0}
    res = simulate_named("tiny", str(tmp_path / "p.csv"), "fifo", queues="proportional")
    assert res.summary["queues"]["bb"]["gpu_hours_borrowed"] == pytest.approx(4 * 50 / 3600)
    assert all(j.finish > 0 for j in res.jobs)


@pytest.mark.parametrize(
    "policy",
    [
        "fifo",
        "sjf",
        "tiresias",
        "sjf-bsbf",
        "gavel-fifo",
        "max-min-fairness",
        "finish-time-fairness-perf",
    ],
)
def test_policies_under_binding_queues_finish_and_check(tmp_path: Path, policy: str) -> None:
    from ddlsched.check import check_run
    from ddlsched.core.results import write_result

    # two queues of 2 GPUs lending to each other, reclaiming: evictions happen
    jobs = [
        job(i, 29.0 * i, 1 + i % 2, 300.0 + 17 * (i % 5), "ab"[(i // 4) % 2]) for i in range(30)
    ]
    res = simulate(CLUSTER, jobs, policy, queues=queues(tmp_path))
    assert all(j.finish > j.start >= j.arrival for j in res.jobs)
    evicted = sum(
        sum(v for k, v in q["preemptions"].items() if k != "policy")
        for q in res.summary["queues"].values()
    )
    assert evicted > 0, policy
    write_result(res, tmp_path / "out")
    result = check_run(tmp_path / "out")
    assert result.ok, [v.message for v in result.violations]


def test_a_plugin_policy_runs_under_binding_queues(tmp_path: Path) -> None:
    # a user's policy written against the protocol (examples/preemptive_policy.py) orders and
    # preempts inside the quota; Kueue's evictions and its own preemptions both happen
    import importlib.util

    from ddlsched.check import check_run
    from ddlsched.core.results import write_result

    path = Path(__file__).parents[1] / "examples" / "preemptive_policy.py"
    spec = importlib.util.spec_from_file_location("preemptive_policy", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    jobs = [
        job(i, 29.0 * i, 1 + i % 2, 300.0 + 17 * (i % 5), "ab"[(i // 4) % 2]) for i in range(30)
    ]
    res = simulate(CLUSTER, jobs, mod.EvictLargest(interval=60.0), queues=queues(tmp_path))
    kueue = sum(
        sum(v for k, v in q["preemptions"].items() if k != "policy")
        for q in res.summary["queues"].values()
    )
    assert kueue > 0 and all(j.finish > j.start >= j.arrival for j in res.jobs)
    write_result(res, tmp_path / "out")
    assert check_run(tmp_path / "out").ok


# ------------------------------------------------------------------ the incremental layer
CONTENDED = """
{fair}
[[resourceFlavor]]
name = "default"

[[clusterQueue]]
name = "a"
cohortName = "lab"
queueingStrategy = "{strategy}"
preemption = {{ withinClusterQueue = "LowerPriority", reclaimWithinCohort = "Any" }}
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{{ name = "default", resources = [{{ name = "nvidia.com/gpu", nominalQuota = 3 }}] }}]

[[clusterQueue]]
name = "b"
cohortName = "lab"
preemption = {{ withinClusterQueue = "LowerPriority", reclaimWithinCohort = "LowerPriority", borrowWithinCohort = {{ policy = "LowerPriority" }} }}
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{{ name = "default", resources = [{{ name = "nvidia.com/gpu", nominalQuota = 3, borrowingLimit = 2, lendingLimit = 2 }}] }}]

[[clusterQueue]]
name = "c"
cohortName = "lab"
preemption = {{ withinClusterQueue = "LowerOrNewerEqualPriority", reclaimWithinCohort = "Any" }}
[[clusterQueue.resourceGroups]]
coveredResources = ["nvidia.com/gpu"]
flavors = [{{ name = "default", resources = [{{ name = "nvidia.com/gpu", nominalQuota = 2 }}] }}]

[[workloadPriorityClass]]
name = "high"
value = 100
"""


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "sjf-bsbf"])
@pytest.mark.parametrize(
    ("fair", "strategy"),
    [
        ("", "BestEffortFIFO"),
        ("", "StrictFIFO"),
        ("[configuration]\nfairSharing = { enable = true }", "BestEffortFIFO"),
    ],
)
def test_the_incremental_layer_decides_as_a_whole_snapshot_does(
    tmp_path: Path, monkeypatch, policy: str, fair: str, strategy: str
) -> None:
    # Kueue's state kept between scheduling points, the cycle run only when its answer can
    # change (the default) against decide() on a whole snapshot at every point: the same run
    # on a contended cluster of three queues (borrowing, reclaims, lending and borrowing
    # limits, priorities, fair sharing or not), files byte for byte
    from functools import partialmethod

    from ddlsched.core import admission
    from ddlsched.core.results import write_result

    path = tmp_path / "q.toml"
    path.write_text(CONTENDED.format(fair=fair, strategy=strategy))
    cfg = load_queues(path)
    cluster = Cluster.homogeneous(2, 4)
    jobs = [
        job(
            i,
            11.0 * i + (i % 4) * 3.0,
            1 + (i * 7) % 4,
            60.0 + 37 * (i % 9),
            "abc"[(i * 5 // 3) % 3],
            "high" if i % 11 == 5 else str(i % 3),
        )
        # fair sharing's cycles are slow here (reclaims that ping-pong up to MAX_CYCLES)
        for i in range(30 if fair else 100)
    ]
    files = []
    for incremental in (True, False):
        with monkeypatch.context() as m:
            init = partialmethod(admission.KueueAdmission.__init__, incremental=incremental)
            m.setattr(admission.KueueAdmission, "__init__", init)
            res = simulate(cluster, jobs, policy, queues=cfg)
        out = tmp_path / f"out-{incremental}"
        write_result(res, out)
        files.append(
            {
                n: (out / n).read_bytes()
                for n in ("jobs.csv", "segments.csv", "queues.csv", "summary.json")
            }
        )
    assert files[0] == files[1]
    evicted = sum(
        sum(v for k, v in q["preemptions"].items() if k != "policy")
        for q in res.summary["queues"].values()
    )
    borrowed = sum(q["gpu_hours_borrowed"] for q in res.summary["queues"].values())
    assert evicted > 0 and borrowed > 0


# ------------------------------------------------------------------ HiveD's sharing anomaly
def test_sharing_anomaly_compares_each_queue_with_a_private_cluster(tmp_path: Path) -> None:
    from ddlsched.api import private_cluster

    # a (2 GPUs) lends to b (2 GPUs), which runs 2-GPU jobs back to back; a's 1-GPU jobs
    # arrive later and reclaim: each queue against its own 2 GPUs run by fifo
    jobs = [job(i, 5.0 * i, 2, 100.0, "b") for i in range(4)]
    jobs += [job(4 + i, 50.0 + 3 * i, 1, 80.0, "a") for i in range(4)]
    cfg = queues(tmp_path)
    res = simulate(CLUSTER, jobs, "fifo", queues=cfg, settings={"sharing_anomaly": True})
    assert res.summary["queues"]
    for q in ("a", "b"):
        own = [j for j in jobs if j.queue.endswith(q)]
        alone = simulate(private_cluster(CLUSTER, 2), own, "fifo")
        m = res.summary["queues"][q]
        assert m["private_avg_queueing"] == alone.summary["avg_queueing"]
        assert m["sharing_anomaly"] == m["avg_queueing"] - m["private_avg_queueing"]
        row = next(r for r in res.queues if r[0] == q)
        assert row[-2:] == (m["private_avg_queueing"], m["sharing_anomaly"])
    # b borrowed a's idle GPUs at first: it waited less than on its own 2 GPUs
    assert res.summary["queues"]["b"]["sharing_anomaly"] < 0
    # off by default: the columns are empty
    plain = simulate(CLUSTER, jobs, "fifo", queues=cfg)
    assert plain.summary["queues"]["a"]["sharing_anomaly"] is None
    assert all(r[-2:] == ("", "") for r in plain.queues)
    with pytest.raises(InputError, match="with --queues"):
        simulate(CLUSTER, jobs, "fifo", settings={"sharing_anomaly": True})


@pytest.mark.parametrize("semantics", ["events", "rounds"])
def test_pollux_runs_under_binding_queues(tmp_path: Path, semantics: str) -> None:
    # an elastic policy under two queues of 4 GPUs each that lend and reclaim: every job
    # finishes and the run directory passes `ddlsched check`
    from dataclasses import replace

    from ddlsched.api import load_named
    from ddlsched.check import check_run
    from ddlsched.core.results import write_result
    from ddlsched.settings import Settings
    from ddlsched.workloads.traces import TraceOptions

    settings = Settings.from_mapping({"semantics": semantics})
    cluster, specs = load_named(
        "tiny", "luo24-12", settings=settings, trace=TraceOptions(max_gpus=4, load_scale=20.0)
    )
    specs = [replace(j, queue="ab"[k % 2]) for k, j in enumerate(specs)]
    res = simulate(cluster, specs, "pollux", settings=settings, queues=queues(tmp_path, 4, 4))
    assert all(j.finish >= j.start >= j.arrival for j in res.jobs)
    assert sum(q["jobs"] for q in res.summary["queues"].values()) == len(specs)
    write_result(res, tmp_path / "out")
    result = check_run(tmp_path / "out")
    assert result.ok, [v.message for v in result.violations]


TYPED_FLAVORS = (
    '[[resourceFlavor]]\nname = "V100"\n[[resourceFlavor]]\nname = "{second}"\n'
    '[[clusterQueue]]\nname = "a"\n[[clusterQueue.resourceGroups]]\n'
    'coveredResources = ["nvidia.com/gpu"]\nflavors = [\n'
    '  {{ name = "V100", resources = [{{ name = "nvidia.com/gpu", nominalQuota = 8 }}] }},\n'
    '  {{ name = "{second}", resources = [{{ name = "nvidia.com/gpu", nominalQuota = 4 }}] }},\n]\n'
)


def typed_flavors(tmp_path: Path, second: str = "k80") -> QueuesConfig:
    path = tmp_path / "typed.toml"
    path.write_text(TYPED_FLAVORS.format(second=second))
    return load_queues(path)


@pytest.mark.parametrize("policy", ["fifo", "sjf", "tiresias"])
def test_gpu_flavors_named_after_gpu_types_hold_their_jobs_to_them(
    tmp_path: Path, policy: str
) -> None:
    """gavel-4:0:4 (GPUs 0-3 v100, 4-7 k80); flavor V100 (quota 8, more than the 4 GPUs)
    first, then k80 (quota 4). Job 0 is admitted in V100 and runs on the v100s; job 1 too,
    and waits for them; job 2 finds V100's quota used and is admitted in k80: it starts at
    once on the k80s, though job 1 of the same size waits before it."""
    from ddlsched.core.cluster_io import load_cluster

    typed = load_cluster("gavel-4:0:4")
    specs = [JobSpec(i, float(i), 4, 0, MODEL, duration=100.0, queue="a") for i in range(3)]
    res = simulate(typed, specs, policy, queues=typed_flavors(tmp_path))
    kinds: dict[int, set[str]] = {}
    for seg in res.segments:  # placements "server:slot;…"
        for at in seg.placement.split(";"):
            kinds.setdefault(seg.job_id, set()).add(typed.servers[int(at.split(":")[0])].gpu_type)
    assert kinds == {0: {"v100"}, 1: {"v100"}, 2: {"k80"}}
    assert [j.start for j in sorted(res.jobs, key=lambda j: j.job_id)] == [0.0, 100.0, 2.0]


#: ClusterQueue `a` (flavors V100 then k80, 3 GPUs each) and `b` (3 GPUs of one flavor,
#: `any`), one cohort: 9 GPUs of quota on an 8-GPU cluster
QUEUES_9_ON_8 = (
    '[[resourceFlavor]]\nname = "V100"\n[[resourceFlavor]]\nname = "k80"\n'
    '[[resourceFlavor]]\nname = "any"\n'
    '[[clusterQueue]]\nname = "a"\ncohortName = "c"\n[[clusterQueue.resourceGroups]]\n'
    'coveredResources = ["nvidia.com/gpu"]\nflavors = [\n'
    '  { name = "V100", resources = [{ name = "nvidia.com/gpu", nominalQuota = 3 }] },\n'
    '  { name = "k80", resources = [{ name = "nvidia.com/gpu", nominalQuota = 3 }] },\n]\n'
    '[[clusterQueue]]\nname = "b"\ncohortName = "c"\n[[clusterQueue.resourceGroups]]\n'
    'coveredResources = ["nvidia.com/gpu"]\nflavors = [\n'
    '  { name = "any", resources = [{ name = "nvidia.com/gpu", nominalQuota = 3 }] },\n]\n'
)


def random_jobs(seed: int) -> list[JobSpec]:
    """40 jobs of 1–3 GPUs arriving over 200 s, 10–120 s long, in queue `a` or `b`."""
    import random

    rng = random.Random(seed)
    return [
        JobSpec(
            i,
            rng.uniform(0, 200),
            rng.choice([1, 1, 2, 3]),
            0,
            MODEL,
            duration=rng.uniform(10, 120),
            queue=rng.choice("ab"),
        )  # fmt: skip
        for i in range(40)
    ]


def queues_from(text: str) -> QueuesConfig:
    """``text`` (a queues manifest in TOML) loaded as ``--queues FILE`` loads it."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "queues.toml"
        path.write_text(text)
        return load_queues(path)


def _types_of(cluster: Cluster, res) -> dict[int, set[str]]:  # type: ignore[no-untyped-def]
    """job id → the GPU types its segments ran on (placements "server:slot;…")."""
    kinds: dict[int, set[str]] = {}
    for seg in res.segments:
        for at in seg.placement.split(";"):
            kinds.setdefault(seg.job_id, set()).add(cluster.servers[int(at.split(":")[0])].gpu_type)
    return kinds


@pytest.mark.parametrize("policy", GAVEL)
def test_gavel_policies_keep_each_job_to_its_flavors_type(tmp_path: Path, policy: str) -> None:
    """As above with Gavel's mechanism: job 0 and job 1 are admitted in V100, job 2 in k80.
    The v100s are faster, and the LP would give some of their time to job 2 and some of the
    k80s' to job 1 (the engine refuses such a start); with the flavors' types each job runs
    only on its own, and all three finish."""
    from ddlsched.core.cluster_io import load_cluster

    typed = load_cluster("gavel-4:0:4")
    specs = [JobSpec(i, float(i), 4, 0, MODEL, duration=1000.0, queue="a") for i in range(3)]
    res = simulate(typed, specs, policy, queues=typed_flavors(tmp_path))
    assert _types_of(typed, res) == {0: {"v100"}, 1: {"v100"}, 2: {"k80"}}
    assert all(j.finish > j.start for j in res.jobs)


RECLAIM = (
    '[[resourceFlavor]]\nname = "V100"\n[[resourceFlavor]]\nname = "k80"\n'
    '[[clusterQueue]]\nname = "a"\ncohortName = "c"\n[[clusterQueue.resourceGroups]]\n'
    'coveredResources = ["nvidia.com/gpu"]\nflavors = [\n'
    '  { name = "V100", resources = [{ name = "nvidia.com/gpu", nominalQuota = 0 }] },\n'
    '  { name = "k80", resources = [{ name = "nvidia.com/gpu", nominalQuota = 4 }] },\n]\n'
    '[[clusterQueue]]\nname = "b"\ncohortName = "c"\n'
    'preemption = { reclaimWithinCohort = "Any" }\n[[clusterQueue.resourceGroups]]\n'
    'coveredResources = ["nvidia.com/gpu"]\nflavors = [\n'
    '  { name = "V100", resources = [{ name = "nvidia.com/gpu", nominalQuota = 4 }] },\n]\n'
)
RECLAIM_JOBS = [
    JobSpec(0, 0.0, 4, 0, MODEL, duration=1000.0, queue="a"),
    JobSpec(1, 10.0, 4, 0, MODEL, duration=100.0, queue="b"),
]


def _placements(cluster: Cluster, res) -> dict[int, list[tuple[float, str]]]:  # type: ignore[no-untyped-def]
    """job id → (start, GPU type) of each of its segments."""
    out: dict[int, list[tuple[float, str]]] = {}
    for seg in res.segments:
        server = int(seg.placement.split(";")[0].split(":")[0])
        out.setdefault(seg.job_id, []).append((seg.start, cluster.servers[server].gpu_type))
    return out


@pytest.mark.parametrize("incremental", [True, False])
def test_a_job_reclaimed_and_readmitted_in_another_flavor_moves_to_its_type(
    tmp_path: Path, monkeypatch, incremental: bool
) -> None:
    """Job 0 of ClusterQueue `a` borrows `b`'s V100 quota (V100 is `a`'s first flavor) and
    runs on the v100s. Job 1 of `b` reclaims it at 10 s, and in the same run of cycles Kueue
    admits job 0 again in `a`'s next flavor, k80: job 0 stops and starts on the k80s at 10 s,
    job 1 starts on the v100s, and the quota is kept per flavor (V100 is not counted twice).
    Both the incremental layer and decide() on whole snapshots. (Before 2026-12-07 the
    engine kept job 0's old flavor: job 0 ran on, and job 1 waited for it, admitted.)"""
    from functools import partialmethod

    from ddlsched.core import admission
    from ddlsched.core.cluster_io import load_cluster

    path = tmp_path / "reclaim.toml"
    path.write_text(RECLAIM)
    typed = load_cluster("gavel-4:0:4")
    init = partialmethod(admission.KueueAdmission.__init__, incremental=incremental)
    monkeypatch.setattr(admission.KueueAdmission, "__init__", init)
    res = simulate(typed, RECLAIM_JOBS, "fifo", queues=load_queues(path))
    assert _placements(typed, res) == {0: [(0.0, "v100"), (10.0, "k80")], 1: [(10.0, "v100")]}
    queues = res.summary["queues"]
    assert queues["a"]["preemptions"]["InCohortReclamation"] == 1
    assert queues["b"]["avg_queueing"] == 0.0
    # b's V100 GPU-hours admitted: 4 GPUs from 10 s to 110 s, not also a's job from 0 to 10 s
    assert queues["b"]["gpu_hours_admitted"] == pytest.approx(4 * 100 / 3600)


@pytest.mark.parametrize("policy", ["max-min-fairness-perf", "gavel-fifo"])
def test_gavel_takes_a_readmitted_job_to_its_new_flavors_type(tmp_path: Path, policy: str) -> None:
    """The reclaim above under a Gavel policy: job 0's throughputs are set anew at its
    admission in k80 (0 on v100), so the mechanism places it on the k80s and it finishes.
    gavel-fifo also drops the type its FIFO allocation kept from the first admission (with
    it, job 0 waited for the v100s it may no longer use, and never ran again)."""
    from ddlsched.core.cluster_io import load_cluster

    path = tmp_path / "reclaim.toml"
    path.write_text(RECLAIM)
    typed = load_cluster("gavel-4:0:4")
    res = simulate(typed, RECLAIM_JOBS, policy, queues=load_queues(path))
    placed = _placements(typed, res)
    assert placed[0][0] == (0.0, "v100") and {t for _, t in placed[0][1:]} == {"k80"}, placed
    assert {t for _, t in placed[1]} == {"v100"}
    assert all(j.finish > j.start for j in res.jobs)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "policy",
    ["tiresias", "fifo", "sjf", "sjf-ffs", "sjf-bsbf", "gavel-fifo", "max-min-fairness-perf",
     "finish-time-fairness"],
)  # fmt: skip
def test_typed_and_untyped_queues_keep_every_job_on_its_flavor(
    tmp_path: Path, seed: int, policy: str
) -> None:
    """Random jobs in ClusterQueue `a` (flavors V100 then k80, 3 GPUs each) and `b` (3 GPUs
    of one flavor, `any`, that names no type; 9 GPUs of quota on 8): the run ends (no policy
    starts a job off its flavor's type, which the engine would refuse; Tiresias' per-type
    budget never admits what it cannot place) and every job of `a` runs each segment on one
    type. Tiresias with a low threshold, so that it demotes and preempts."""
    from ddlsched.core.cluster_io import load_cluster

    typed = load_cluster("gavel-4:0:4")
    specs = random_jobs(seed)
    tiresias = {"interval": 10.0, "tiresias_thresholds": str(30 / 3600)}
    settings = tiresias if policy == "tiresias" else None
    res = simulate(typed, specs, policy, queues=queues_from(QUEUES_9_ON_8), settings=settings)
    assert len(res.jobs) == 40
    if policy == "tiresias":
        assert sum(j.preemptions for j in res.jobs) > 0
    queue = {s.job_id: s.queue for s in specs}
    typed_segments = 0
    for seg in res.segments:
        kinds = {typed.servers[int(at.split(":")[0])].gpu_type for at in seg.placement.split(";")}
        if queue[seg.job_id] == "a":
            assert len(kinds) == 1, (seg, kinds)
            typed_segments += 1
    assert typed_segments > 0


@pytest.mark.parametrize("policy", GAVEL)
def test_gavel_takes_in_a_job_admitted_after_its_decision(policy: str) -> None:
    """Kueue may admit a job in a later pass of an instant whose decision Gavel has made
    (quota freed by a completion there). Before 2026-12-07 Gavel waited for its next
    decision to take it in, and with nothing running none came: the run ended with jobs
    admitted and never started (gavel-fifo here: 3 of 40). 40 jobs of 1–3 GPUs on 8 GPUs
    of one type, queues `a` (two flavors, quota accounting only) and `b`."""
    specs = random_jobs(0)
    res = simulate(Cluster.homogeneous(2, 4), specs, policy, queues=queues_from(QUEUES_9_ON_8))
    assert len(res.jobs) == 40 and all(j.finish > j.start >= j.arrival - 1e-9 for j in res.jobs)


def test_gpu_flavors_on_a_typed_cluster_must_each_name_a_type(tmp_path: Path) -> None:
    from ddlsched.core.cluster_io import load_cluster

    typed = load_cluster("gavel-4:0:4")
    spec = JobSpec(0, 0.0, 1, 0, MODEL, duration=10.0, queue="a")
    with pytest.raises(InputError, match="several flavors .* 'default' names none of them"):
        simulate(typed, [spec], "fifo", queues=typed_flavors(tmp_path, "default"))
    # one type, several flavors: quota accounting only, allowed
    res = simulate(CLUSTER, [spec], "fifo", queues=typed_flavors(tmp_path, "default"))
    assert res.jobs[0].finish == 10.0


def test_a_policy_that_does_not_place_by_flavor_is_refused_with_typed_flavors(
    tmp_path: Path,
) -> None:
    from ddlsched.core.cluster_io import load_cluster

    typed = load_cluster("gavel-4:0:4")
    spec = JobSpec(0, 0.0, 1, 0, MODEL, duration=10.0, queue="a")

    class AnyGpus:
        """Starts every waiting job on the lowest-numbered idle GPUs, of any type."""

        name = "any-gpus"

        def attach(self, sim) -> None:  # type: ignore[no-untyped-def]
            pass

        def schedule(self, sim) -> None:  # type: ignore[no-untyped-def]
            for job in list(sim.queue):
                sim.start(job, sorted(sim.idle)[: job.num_gpus])

    with pytest.raises(InputError, match="policy any-gpus does not hold its placements"):
        simulate(typed, [spec], AnyGpus(), queues=typed_flavors(tmp_path))  # type: ignore[arg-type]


def test_a_job_whose_table_rules_out_its_flavors_type_is_refused(tmp_path: Path) -> None:
    """A Gavel-style job measured at 0 steps/s on k80 (``inf``), or with no k80 entry, in a
    ClusterQueue that may admit it in flavor k80: it could wait forever."""
    from dataclasses import replace

    from ddlsched.core.cluster_io import load_cluster

    typed = load_cluster("gavel-4:0:4")
    base = JobSpec(0, 0.0, 1, 0, MODEL, duration=10.0, queue="a")
    for table, words in (
        ((("v100", 10.0), ("k80", float("inf"))), "mark it inf"),
        ((("v100", 10.0),), "have no entry for it"),
    ):
        spec = replace(base, type_durations=table)
        with pytest.raises(InputError, match=f"job 0 cannot run on GPU type k80 .*{words}.*'k80'"):
            simulate(typed, [spec], "fifo", queues=typed_flavors(tmp_path))
    ok = replace(base, type_durations=(("v100", 10.0), ("k80", 30.0)))
    assert simulate(typed, [ok], "fifo", queues=typed_flavors(tmp_path)).jobs[0].finish == 10.0


def test_a_job_larger_than_its_flavors_gpu_type_is_refused(tmp_path: Path) -> None:
    from ddlsched.core.cluster_io import load_cluster

    typed = load_cluster("gavel-4:0:4")
    spec = JobSpec(0, 0.0, 5, 0, MODEL, duration=10.0, queue="a")
    with pytest.raises(InputError, match="flavor 'V100', which holds it to GPU type v100, of"):
        simulate(typed, [spec], "fifo", queues=typed_flavors(tmp_path))


def test_the_engine_refuses_a_placement_against_the_flavor(tmp_path: Path) -> None:
    from ddlsched.core.cluster_io import load_cluster
    from ddlsched.errors import ScheduleError

    class LastGpus:
        """Starts every waiting job on the highest-numbered idle GPUs (k80s first)."""

        name = "last-gpus"
        holds_flavor_types = True

        def attach(self, sim) -> None:  # type: ignore[no-untyped-def]
            pass

        def schedule(self, sim) -> None:  # type: ignore[no-untyped-def]
            for job in list(sim.queue):
                sim.start(job, sorted(sim.idle)[-job.num_gpus :])

    typed = load_cluster("gavel-4:0:4")
    spec = JobSpec(0, 0.0, 1, 0, MODEL, duration=10.0, queue="a")
    with pytest.raises(ScheduleError, match=r"GPU 7 \(k80\): its Kueue flavor holds it to .*v100"):
        simulate(typed, [spec], LastGpus(), queues=typed_flavors(tmp_path))  # type: ignore[arg-type]
