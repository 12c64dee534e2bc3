"""Kueue's own test cases, restated through ``ddlsched queues decide`` (its library function
:func:`ddlsched.tenancy.decide`, and a few through the real CLI).

Each test names the Go test and case it restates, all at kubernetes-sigs/kueue
ff69552e79ad21652c36caa97038382e55625cf7 (``pkg/scheduler/preemption/preemption_test.go``
``TestPreemption``, ``pkg/scheduler/scheduler_test.go`` ``TestSchedule``,
``pkg/scheduler/scheduler_fs_test.go``). Kueue's preemption tests hand the preemptor's flavor
assignment in; here the cycle computes it (the cases chosen have one possible flavor, or the
flavor the assigner picks is the one the case gives). The expected admissions, flavors,
victims and reasons are the case's own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from ddlsched.cli import main
from ddlsched.tenancy import decide, parse_documents, parse_snapshot

KUEUE = "kueue.x-k8s.io/v1beta2"
Q = dict[str, Any]


# ------------------------------------------------------------------ fixture builders
def res_name(key: str) -> str:
    """Keyword argument to resource name: ``example_com_gpu`` → ``example.com/gpu``."""
    return "example.com/gpu" if key == "example_com_gpu" else key


def flavor(name: str) -> Q:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}}


def fq(name: str, **resources: Any) -> Q:
    """``MakeFlavorQuotas(name).Resource(res, nominal, borrowingLimit, lendingLimit)``:
    each value is ``nominal`` or a tuple ``(nominal, borrowingLimit, lendingLimit)`` with
    ``""`` for "not set" as in Kueue's test helper."""
    out = []
    for res, spec in resources.items():
        spec = spec if isinstance(spec, tuple) else (spec,)
        r: Q = {"name": res_name(res), "nominalQuota": spec[0]}
        if len(spec) > 1 and spec[1] != "":
            r["borrowingLimit"] = spec[1]
        if len(spec) > 2 and spec[2] != "":
            r["lendingLimit"] = spec[2]
        out.append(r)
    return {"name": name, "resources": out}


def rg(*flavors: Q) -> Q:
    return {
        "coveredResources": [r["name"] for r in flavors[0]["resources"]],
        "flavors": list(flavors),
    }


def cq(name: str, *groups: Q, cohort: str | None = None, **spec: Any) -> Q:
    s: Q = {"resourceGroups": list(groups), **spec}
    if cohort:
        s["cohortName"] = cohort
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": s}


def cohort(name: str, parent: str | None = None, *groups: Q, **spec: Any) -> Q:
    s: Q = {"resourceGroups": list(groups), **spec}
    if parent:
        s["parentName"] = parent
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name}, "spec": s}


def pre(
    within: str = "Never",
    reclaim: str = "Never",
    borrow: str | None = None,
    threshold: int | None = None,
) -> Q:
    p: Q = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}
    if borrow:
        p["borrowWithinCohort"] = {"policy": borrow}
        if threshold is not None:
            p["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
    return p


def wl(
    name: str,
    queue: str,
    *podsets: Q,
    priority: int = 0,
    created: float = 0,
    admitted_at: float | None = None,
) -> Q:
    w: Q = {
        "name": name,
        "queue": queue,
        "priority": priority,
        "created": created,
        "podsets": list(podsets),
    }
    if admitted_at is not None:
        w["admitted_at"] = admitted_at
    return w


def ps(
    count: int = 1, name: str = "main", flavors: dict[str, str] | None = None, **requests: Any
) -> Q:
    p: Q = {"name": name, "count": count, "requests": {res_name(k): v for k, v in requests.items()}}
    if flavors:
        p["flavors"] = flavors
    return p


def run(
    docs: list[Q],
    admitted: list[Q] = (),
    pending: list[Q] = (),
    *,  # type: ignore[assignment]
    until_stable: bool = False,
    fair: bool | dict = False,
) -> dict[str, Any]:
    docs = list(docs)
    if fair:
        fs = fair if isinstance(fair, dict) else {}
        docs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "fairSharing": fs,
            }
        )
    config = parse_documents(docs, "Q.yaml")
    snap = parse_snapshot({"admitted": list(admitted), "pending": list(pending)}, "W.yaml", config)
    return decide(config, snap, until_stable=until_stable).to_json()


def cli(
    tmp_path, capsys, docs: list[Q], admitted: list[Q], pending: list[Q], *extra: str
) -> dict[str, Any]:
    q = tmp_path / "Q.yaml"
    w = tmp_path / "W.yaml"
    q.write_text(yaml.safe_dump_all(docs))
    w.write_text(yaml.safe_dump({"admitted": admitted, "pending": pending}))
    assert main(["queues", "decide", "--queues", str(q), "--workloads", str(w), *extra]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ TestPreemption's queues
PREEMPTION_FLAVORS = [flavor("default"), flavor("alpha"), flavor("beta")]
PREEMPTION_CQS = {
    "standalone": cq(
        "standalone",
        rg(fq("default", cpu=6)),
        rg(fq("alpha", memory="3Gi"), fq("beta", memory="3Gi")),
        preemption=pre("LowerPriority"),
    ),
    "c1": cq(
        "c1",
        rg(fq("default", cpu=(6, 6), memory=("3Gi", "3Gi"))),
        cohort="cohort",
        preemption=pre("LowerPriority", "LowerPriority"),
    ),
    "c2": cq(
        "c2",
        rg(fq("default", cpu=(6, 6), memory=("3Gi", "3Gi"))),
        cohort="cohort",
        preemption=pre("Never", "Any"),
    ),
    "d1": cq(
        "d1",
        rg(fq("default", cpu=6, memory="3Gi")),
        cohort="cohort-no-limits",
        preemption=pre("LowerPriority", "LowerPriority"),
    ),
    "d2": cq(
        "d2",
        rg(fq("default", cpu=6, memory="3Gi")),
        cohort="cohort-no-limits",
        preemption=pre("Never", "Any"),
    ),
    "l1": cq(
        "l1",
        rg(fq("default", cpu=(6, 12), memory=("3Gi", "6Gi"))),
        cohort="legion",
        preemption=pre("LowerPriority", "LowerPriority"),
    ),
    "preventStarvation": cq(
        "preventStarvation", rg(fq("default", cpu=6)), preemption=pre("LowerOrNewerEqualPriority")
    ),
    "a_standard": cq(
        "a_standard",
        rg(fq("default", cpu=(1, 12))),
        cohort="with_shared_cq",
        preemption=pre("Never", "LowerPriority", "LowerPriority", 0),
    ),
    "b_standard": cq(
        "b_standard",
        rg(fq("default", cpu=(1, 12))),
        cohort="with_shared_cq",
        preemption=pre("LowerPriority", "Any", "LowerPriority", 0),
    ),
    "a_best_effort": cq(
        "a_best_effort",
        rg(fq("default", cpu=(1, 12))),
        cohort="with_shared_cq",
        preemption=pre("Never", "LowerPriority", "LowerPriority", 0),
    ),
    "b_best_effort": cq(
        "b_best_effort",
        rg(fq("default", cpu=(0, 13))),
        cohort="with_shared_cq",
        preemption=pre("Never", "LowerPriority", "LowerPriority", 0),
    ),
    "shared": cq("shared", rg(fq("default", cpu=10)), cohort="with_shared_cq"),
    "lend1": cq(
        "lend1",
        rg(fq("default", cpu=(6, "", 4))),
        cohort="cohort-lend",
        preemption=pre("LowerPriority", "LowerPriority"),
    ),
    "lend2": cq(
        "lend2",
        rg(fq("default", cpu=(6, "", 2))),
        cohort="cohort-lend",
        preemption=pre("LowerPriority", "LowerPriority"),
    ),
}
PREEMPTION_DOCS = PREEMPTION_FLAVORS + list(PREEMPTION_CQS.values())


def adm(
    name: str,
    queue: str,
    cpu: Any = None,
    priority: int = 0,
    at: float = 0,
    memory: Any = None,
    flavor_: str = "default",
    mem_flavor: str | None = None,
    created: float = 0,
) -> Q:
    """An admitted single-podset workload (``ReserveQuotaAt(MakeAdmission(queue)…, at)``)."""
    req: Q = {}
    flv: dict[str, str] = {}
    if cpu is not None:
        req["cpu"] = cpu
        flv["cpu"] = flavor_
    if memory is not None:
        req["memory"] = memory
        flv["memory"] = mem_flavor or flavor_
    return wl(
        name, queue, ps(1, flavors=flv, **req), priority=priority, created=created, admitted_at=at
    )


def incoming(queue: str, priority: int = 0, created: float = 0, **requests: Any) -> Q:
    return wl("in", queue, ps(1, **requests), priority=priority, created=created)


def preempt(admitted: list[Q], pending: Q) -> tuple[dict[str, str], list[str]]:
    out = run(PREEMPTION_DOCS, admitted, [pending])
    assert out["admitted"] == {}  # a preemptor waits for its victims (scheduler.go)
    return out["preempted"], out["pending"]


def test_preempt_lowest_priority() -> None:
    """TestPreemption "preempt lowest priority" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, pending = preempt(
        [
            adm("low", "standalone", 2, -1),
            adm("mid", "standalone", 2),
            adm("high", "standalone", 2, 1),
        ],
        incoming("standalone", 1, cpu=2),
    )
    assert victims == {"low": "InClusterQueue"}
    assert pending == ["in", "low"]  # a victim is pending again


def test_preempt_multiple() -> None:
    """TestPreemption "preempt multiple" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("low", "standalone", 2, -1),
            adm("mid", "standalone", 2),
            adm("high", "standalone", 2, 1),
        ],
        incoming("standalone", 1, cpu=3),
    )
    assert victims == {"low": "InClusterQueue", "mid": "InClusterQueue"}


def test_no_preemption_for_low_priority() -> None:
    """TestPreemption "no preemption for low priority" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, pending = preempt(
        [adm("low", "standalone", 3, -1), adm("mid", "standalone", 3)],
        incoming("standalone", -1, cpu=1),
    )
    assert victims == {} and pending == ["in"]


def test_not_enough_low_priority_workloads() -> None:
    """TestPreemption "not enough low priority workloads" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("low", "standalone", 3, -1), adm("mid", "standalone", 3)],
        incoming("standalone", 0, cpu=4),
    )
    assert victims == {}


def test_some_free_quota_preempt_low_priority() -> None:
    """TestPreemption "some free quota, preempt low priority" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("low", "standalone", 1, -1),
            adm("mid", "standalone", 1),
            adm("high", "standalone", 3, 1),
        ],
        incoming("standalone", 1, cpu=2),
    )
    assert victims == {"low": "InClusterQueue"}


def test_minimal_set_excludes_low_priority() -> None:
    """TestPreemption "minimal set excludes low priority" (fillBackWorkloads gives ``low``
    back: preempting ``mid`` alone frees enough) (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("low", "standalone", 1, -1),
            adm("mid", "standalone", 2),
            adm("high", "standalone", 3, 1),
        ],
        incoming("standalone", 1, cpu=2),
    )
    assert victims == {"mid": "InClusterQueue"}


def test_reclaim_quota_from_borrower() -> None:
    """TestPreemption "reclaim quota from borrower" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("c1-low", "c1", 3, -1), adm("c2-mid", "c2", 3), adm("c2-high", "c2", 6, 1)],
        incoming("c1", 1, cpu=3),
    )
    assert victims == {"c2-mid": "InCohortReclamation"}


def test_reclaim_quota_if_workload_requests_0_of_a_resource_at_nominal() -> None:
    """TestPreemption "reclaim quota if workload requests 0 resources for a resource at
    nominal quota" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("c1-low", "c1", 3, -1, memory="3Gi"),
            adm("c2-mid", "c2", 3),
            adm("c2-high", "c2", 6, 1),
        ],
        incoming("c1", 1, cpu=3, memory=0),
    )
    assert victims == {"c2-mid": "InCohortReclamation"}


def test_not_enough_workloads_borrowing() -> None:
    """TestPreemption "not enough workloads borrowing" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("c1-high", "c1", 4, 1), adm("c2-low-1", "c2", 4, -1), adm("c2-low-2", "c2", 4, -1)],
        incoming("c1", 1, cpu=4),
    )
    assert victims == {}


def test_preempting_locally_and_borrowing_same_resource_in_cohort() -> None:
    """TestPreemption "preempting locally and borrowing same resource in cohort" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("c1-med", "c1", 4, 0), adm("c1-low", "c1", 4, -1), adm("c2-low-1", "c2", 4, -1)],
        incoming("c1", 1, cpu=4),
    )
    assert victims == {"c1-low": "InClusterQueue"}


def test_preempting_locally_no_borrowing_limit_in_cohort() -> None:
    """TestPreemption "preempting locally and borrowing same resource in cohort; no borrowing
    limit in the cohort" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("d1-med", "d1", 4, 0), adm("d1-low", "d1", 4, -1), adm("d2-low-1", "d2", 4, -1)],
        incoming("d1", 1, cpu=4),
    )
    assert victims == {"d1-low": "InClusterQueue"}


def test_preempting_locally_not_borrowing_in_1_queue_cohort() -> None:
    """TestPreemption "preempting locally and not borrowing same resource in 1-queue
    cohort" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("l1-med", "l1", 4, 0), adm("l1-low", "l1", 2, -1)], incoming("l1", 1, cpu=4)
    )
    assert victims == {"l1-med": "InClusterQueue"}


def test_do_not_reclaim_same_priority_for_reclaim_lower_priority() -> None:
    """TestPreemption "do not reclaim borrowed quota from same priority for
    withinCohort=ReclaimFromLowerPriority" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("c1", "c1", 2), adm("c2-1", "c2", 4), adm("c2-2", "c2", 4)], incoming("c1", 0, cpu=4)
    )
    assert victims == {}


def test_reclaim_same_priority_for_reclaim_any() -> None:
    """TestPreemption "reclaim borrowed quota from same priority for
    withinCohort=ReclaimFromAny" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("c1-1", "c1", 4), adm("c1-2", "c1", 4, 1), adm("c2", "c2", 2)],
        incoming("c2", 0, cpu=4),
    )
    assert victims == {"c1-1": "InCohortReclamation"}


def test_preempt_from_all_cluster_queues_in_cohort() -> None:
    """TestPreemption "preempt from all ClusterQueues in cohort" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("c1-low", "c1", 3, -1),
            adm("c1-mid", "c1", 2),
            adm("c2-low", "c2", 3, -1),
            adm("c2-mid", "c2", 4),
        ],
        incoming("c1", 0, cpu=4),
    )
    assert victims == {"c1-low": "InClusterQueue", "c2-low": "InCohortReclamation"}


def test_preempt_newer_workloads_with_the_same_priority() -> None:
    """TestPreemption "preempt newer workloads with the same priority"
    (LowerOrNewerEqualPriority; wl2 holds its quota for the shortest time) (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("wl1", "preventStarvation", 2, 2, at=0, created=100),
            adm("wl2", "preventStarvation", 2, 1, at=1, created=100),
            adm("wl3", "preventStarvation", 2, 1, at=0, created=100),
        ],
        incoming("preventStarvation", 1, created=85, cpu=2),
    )
    assert victims == {"wl2": "InClusterQueue"}


def test_borrow_within_cohort_preempt_lower_priority_while_borrowing() -> None:
    """TestPreemption "use BorrowWithinCohort; allow preempting a lower-priority workload from
    another ClusterQueue while borrowing" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("a_best_effort_low", "a_best_effort", 10, -1),
            adm("b_best_effort_low", "b_best_effort", 1, -1),
        ],
        incoming("a_standard", 0, cpu=10),
    )
    assert victims == {"a_best_effort_low": "InCohortReclaimWhileBorrowing"}


def test_borrow_within_cohort_not_above_max_priority_threshold() -> None:
    """TestPreemption "use BorrowWithinCohort; don't allow preempting a lower-priority workload
    with priority above MaxPriorityThreshold, if borrowing is required even after the
    preemption" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("b_standard", "b_standard", 10, 1)], incoming("a_standard", 2, cpu=10)
    )
    assert victims == {}


# ------------------------------------------------------------------ TestSchedule's queues
SCHEDULE_FLAVORS = [flavor(f) for f in ("default", "on-demand", "spot", "model-a")]
SCHEDULE_CQS = [
    cq("sales", rg(fq("default", cpu=(50, 0))), queueingStrategy="StrictFIFO"),
    cq(
        "eng-alpha",
        rg(fq("on-demand", cpu=(50, 50)), fq("spot", cpu=(100, 0))),
        cohort="eng",
        queueingStrategy="StrictFIFO",
    ),
    cq(
        "eng-beta",
        rg(fq("on-demand", cpu=(50, 10)), fq("spot", cpu=(0, 100))),
        rg(fq("model-a", example_com_gpu=(20, 0))),
        cohort="eng",
        queueingStrategy="StrictFIFO",
        preemption=pre("LowerPriority", "Any"),
    ),
    cq("lend-a", rg(fq("default", cpu=(3, "", 2))), cohort="lend"),
    cq("lend-b", rg(fq("default", cpu=(2, "", 2))), cohort="lend"),
]
SCHEDULE_DOCS = SCHEDULE_FLAVORS + SCHEDULE_CQS


def test_admit_in_same_cohort_with_no_borrowing(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """TestSchedule "admit in same cohort with no borrowing", through the real CLI
    (kueue@ff69552e, pkg/scheduler/scheduler_test.go)"""
    out = cli(
        tmp_path,
        capsys,
        SCHEDULE_DOCS,
        [],
        [
            wl("alpha-new", "eng-alpha", ps(40, "one", cpu=1)),
            wl("beta-new", "eng-beta", ps(40, "one", cpu=1)),
        ],
    )
    assert out == {
        "admitted": {
            "alpha-new": {"one": {"cpu": "on-demand"}},
            "beta-new": {"one": {"cpu": "on-demand"}},
        },
        "preempted": {},
        "pending": [],
    }


def test_assign_multiple_resources_and_flavors(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """TestSchedule "assign multiple resources and flavors": podset one borrows on-demand,
    podset two no longer fits there and takes spot (kueue@ff69552e, scheduler_test.go)"""
    out = cli(
        tmp_path,
        capsys,
        SCHEDULE_DOCS,
        [],
        [wl("new", "eng-beta", ps(10, "one", cpu=6, example_com_gpu=1), ps(40, "two", cpu=1))],
    )
    assert out["admitted"] == {
        "new": {"one": {"cpu": "on-demand", "example.com/gpu": "model-a"}, "two": {"cpu": "spot"}}
    }


def test_cannot_borrow_if_it_would_overadmit() -> None:
    """TestSchedule "cannot borrow if cohort was assigned and would result in overadmission" (kueue@ff69552e, pkg/scheduler/scheduler_test.go TestSchedule)"""
    out = run(
        SCHEDULE_DOCS,
        [],
        [wl("a", "eng-alpha", ps(45, "one", cpu=1)), wl("b", "eng-beta", ps(56, "one", cpu=1))],
    )
    assert out["admitted"] == {"a": {"one": {"cpu": "on-demand"}}}
    assert out["pending"] == ["b"]


def test_can_borrow_if_it_will_not_overadmit() -> None:
    """TestSchedule "can borrow if cohort was assigned and will not result in overadmission" (kueue@ff69552e, pkg/scheduler/scheduler_test.go TestSchedule)"""
    out = run(
        SCHEDULE_DOCS,
        [],
        [wl("a", "eng-alpha", ps(45, "one", cpu=1)), wl("b", "eng-beta", ps(55, "one", cpu=1))],
    )
    assert out["admitted"] == {
        "a": {"one": {"cpu": "on-demand"}},
        "b": {"one": {"cpu": "on-demand"}},
    }


def test_workload_exceeds_lending_limit_when_borrow_in_cohort() -> None:
    """TestSchedule "workload exceeds lending limit when borrow in cohort" (kueue@ff69552e, pkg/scheduler/scheduler_test.go TestSchedule)"""
    out = run(
        SCHEDULE_DOCS,
        [wl("a", "lend-b", ps(1, cpu=2, flavors={"cpu": "default"}))],
        [wl("b", "lend-b", ps(1, cpu=3))],
    )
    assert out == {"admitted": {}, "preempted": {}, "pending": ["b"]}


def test_fallback_to_next_flavor_when_not_enough_to_borrow() -> None:
    """TestSchedule "not enough resources to borrow, fallback to next flavor; WhenCanPreempt:
    TryNextFlavor" (kueue@ff69552e, pkg/scheduler/scheduler_test.go TestSchedule)"""
    out = run(
        SCHEDULE_DOCS,
        [wl("existing", "eng-beta", ps(45, "one", cpu=1, flavors={"cpu": "on-demand"}))],
        [wl("new", "eng-alpha", ps(60, "one", cpu=1))],
    )
    assert out["admitted"] == {"new": {"one": {"cpu": "spot"}}}


def test_hierarchical_cohort_respects_lending_limit() -> None:
    """TestSchedule "hierarchical cohort respects lending limit when borrowing": lender(10,
    lendingLimit 3) and borrower(5, borrowingLimit 10, 5 used) under CHILD under ROOT; a
    4-CPU workload cannot get the 3 lendable CPUs (kueue@ff69552e, pkg/scheduler/scheduler_test.go TestSchedule)"""
    docs = [
        flavor("default"),
        cohort("root"),
        cohort("child", "root"),
        cq("lender", rg(fq("default", cpu=(10, "", 3))), cohort="child"),
        cq("borrower", rg(fq("default", cpu=(5, 10))), cohort="child"),
    ]
    out = run(
        docs,
        [wl("used", "borrower", ps(1, cpu=5, flavors={"cpu": "default"}))],
        [wl("wl-pending", "borrower", ps(1, cpu=4))],
    )
    assert out["admitted"] == {} and out["pending"] == ["wl-pending"]
    out = run(
        docs,
        [wl("used", "borrower", ps(1, cpu=5, flavors={"cpu": "default"}))],
        [wl("wl-pending", "borrower", ps(1, cpu=3))],
    )
    assert out["admitted"] == {"wl-pending": {"main": {"cpu": "default"}}}


# ------------------------------------------------------------------ fair sharing


def test_fair_sharing_schedule_lowest_share_first() -> None:
    """ "with fair sharing: schedule workload with lowest share first": eng-beta borrows, so
    eng-alpha's newer workload goes first and eng-beta's older one waits (kueue@ff69552e, pkg/scheduler/scheduler_fs_test.go TestScheduleForFairSharing)"""
    docs = SCHEDULE_DOCS + [cq("eng-shared", rg(fq("on-demand", cpu=(10, 0))), cohort="eng")]
    out = run(
        docs,
        [
            wl("all_nominal", "eng-alpha", ps(50, "one", cpu=1, flavors={"cpu": "on-demand"})),
            wl("borrowing", "eng-beta", ps(55, "one", cpu=1, flavors={"cpu": "on-demand"})),
        ],
        [
            wl("older_new", "eng-beta", ps(1, "one", cpu=1), created=-60),
            wl("new", "eng-alpha", ps(5, "one", cpu=1), created=0),
        ],
        fair=True,
    )
    assert out["admitted"] == {"new": {"one": {"cpu": "on-demand"}}}
    assert out["pending"] == ["older_new"]


def test_fair_sharing_two_queues_with_weight_0() -> None:
    """ "fair sharing two queues with weight 0 schedules workload which borrows less" (kueue@ff69552e, pkg/scheduler/scheduler_fs_test.go TestScheduleForFairSharing)"""
    docs = [
        flavor("on-demand"),
        cohort("A", None, rg(fq("on-demand", cpu=8))),
        cq(
            "b",
            rg(fq("on-demand", cpu=0)),
            cohort="A",
            fairSharing={"weight": "0"},
            preemption=pre("Never", "Any"),
        ),
        cq(
            "c",
            rg(fq("on-demand", cpu=0)),
            cohort="A",
            fairSharing={"weight": "0"},
            preemption=pre("Never", "Any"),
        ),
    ]
    out = run(
        docs,
        [wl("b0", "b", ps(1, "one", cpu=4, flavors={"cpu": "on-demand"}))],
        [wl("b1", "b", ps(1, "one", cpu=4), priority=9001), wl("c1", "c", ps(1, "one", cpu=4))],
        fair=True,
    )
    assert out["admitted"] == {"c1": {"one": {"cpu": "on-demand"}}}
    assert out["pending"] == ["b1"]


def test_fair_sharing_preempt_from_cq_with_highest_share(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """ "with fair sharing: preempt workload from CQ with the highest share", through the
    real CLI: eng-beta, within its nominal quota, reclaims one workload from the CQ that
    borrows most (eng-alpha), then from eng-gamma (kueue@ff69552e, pkg/scheduler/scheduler_fs_test.go TestScheduleForFairSharing)"""
    docs = SCHEDULE_DOCS + [
        cq("eng-gamma", rg(fq("on-demand", cpu=(50, 0))), cohort="eng"),
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta1",
            "kind": "Configuration",
            "fairSharing": {"enable": True},
        },
    ]
    od = {"cpu": "on-demand"}
    admitted = [wl("all_spot", "eng-alpha", ps(1, cpu=100, flavors={"cpu": "spot"}))]
    admitted += [
        wl(f"alpha{i}", "eng-alpha", ps(1, cpu=20, flavors=od), admitted_at=0) for i in range(1, 5)
    ]
    admitted += [wl("gamma1", "eng-gamma", ps(1, cpu=10, flavors=od), admitted_at=0)]
    admitted += [
        wl(f"gamma{i}", "eng-gamma", ps(1, cpu=20, flavors=od), admitted_at=0) for i in range(2, 5)
    ]
    out = cli(tmp_path, capsys, docs, admitted, [wl("preemptor", "eng-beta", ps(1, cpu=30))])
    assert out["preempted"] == {"alpha1": "InCohortReclamation", "gamma1": "InCohortReclamation"}
    assert out["admitted"] == {}
    assert "preemptor" in out["pending"]


# ------------------------------------------------------------------ queueing strategies


@pytest.mark.parametrize("strategy", ["StrictFIFO", "BestEffortFIFO"])
def test_strict_fifo_blocks_best_effort_fifo_moves_on(strategy: str) -> None:
    """StrictFIFO keeps a head that does not fit at the head (the smaller workload behind it
    waits); BestEffortFIFO sets it aside and admits the next one (kueue@ff69552e, pkg/cache/queue/cluster_queue.go RequeueIfNotPresent)"""
    docs = [flavor("default"), cq("q", rg(fq("default", cpu=10)), queueingStrategy=strategy)]
    out = run(
        docs,
        [wl("running", "q", ps(1, cpu=6, flavors={"cpu": "default"}))],
        [wl("big", "q", ps(1, cpu=8), created=1), wl("small", "q", ps(1, cpu=2), created=2)],
        until_stable=True,
    )
    if strategy == "StrictFIFO":
        assert out["admitted"] == {} and out["pending"] == ["big", "small"]
    else:
        assert out["admitted"] == {"small": {"main": {"cpu": "default"}}}
        assert out["pending"] == ["big"]


def test_one_cycle_admits_one_head_per_queue() -> None:
    """A cycle takes one head per ClusterQueue (scheduler.go ``schedule``: ``Heads``);
    ``--until-stable`` keeps going (kueue@ff69552e, pkg/cache/queue/cluster_queue.go RequeueIfNotPresent)"""
    docs = [flavor("default"), cq("q", rg(fq("default", cpu=10)))]
    pending = [wl("a", "q", ps(1, cpu=1), created=1), wl("b", "q", ps(1, cpu=1), created=2)]
    assert run(docs, [], pending)["pending"] == ["b"]
    assert run(docs, [], pending, until_stable=True)["pending"] == []


def test_until_stable_preemptor_admitted_after_victims_leave() -> None:
    """TestPreemption "preempt lowest priority" carried on: the next cycle admits the
    preemptor once its victim is gone (kueue@ff69552e, preemption_test.go)"""
    out = run(
        PREEMPTION_DOCS,
        [
            adm("low", "standalone", 2, -1),
            adm("mid", "standalone", 2),
            adm("high", "standalone", 2, 1),
        ],
        [incoming("standalone", 1, cpu=2)],
        until_stable=True,
    )
    assert out["admitted"] == {"in": {"main": {"cpu": "default"}}}
    assert out["preempted"] == {"low": "InClusterQueue"}
    assert out["pending"] == ["low"]


def test_reclaim_quota_from_lender() -> None:
    """TestPreemption "reclaim quota from lender" (lendingLimit)
    (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("lend1-low", "lend1", 3, -1),
            adm("lend2-mid", "lend2", 3),
            adm("lend2-high", "lend2", 4, 1),
        ],
        incoming("lend1", 1, cpu=3),
    )
    assert victims == {"lend2-mid": "InCohortReclamation"}


def test_preempt_from_all_cluster_queues_in_cohort_lend() -> None:
    """TestPreemption "preempt from all ClusterQueues in cohort-lend"
    (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("lend1-low", "lend1", 3, -1),
            adm("lend1-mid", "lend1", 2),
            adm("lend2-low", "lend2", 3, -1),
            adm("lend2-mid", "lend2", 4),
        ],
        incoming("lend1", 0, cpu=4),
    )
    assert victims == {"lend1-low": "InClusterQueue", "lend2-low": "InCohortReclamation"}


def test_cannot_preempt_beyond_requestable_quota_with_lending_limit() -> None:
    """TestPreemption "cannot preempt from other ClusterQueues if exceeds requestable quota
    including lending limit": lend1 can reach 6 + 2 lendable = 8 < 9
    (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, pending = preempt([adm("lend2-low", "lend2", 10, -1)], incoming("lend1", 0, cpu=9))
    assert victims == {} and pending == ["in"]


# ------------------------------------------------------------------ flavor fungibility
def fungibility_docs(prefix: str, preference: str) -> list[Q]:
    return [
        flavor("on-demand"),
        flavor("spot"),
        cq(
            f"{prefix}-cq",
            rg(fq("on-demand", cpu=(5, 0)), fq("spot", cpu=(0, 5))),
            cohort=f"{prefix}-cohort",
            preemption=pre("LowerPriority"),
            flavorFungibility={
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": preference,
            },
        ),
        cq(
            f"{prefix}-lender",
            rg(fq("on-demand", cpu=0), fq("spot", cpu=5)),
            cohort=f"{prefix}-cohort",
        ),
    ]


def test_preemption_over_borrowing_preference() -> None:
    """TestSchedule "PreemptionOverBorrowing preference: preempt in first flavor instead of
    borrowing in second" (kueue@ff69552e, pkg/scheduler/scheduler_test.go)"""
    out = run(
        fungibility_docs("pob", "PreemptionOverBorrowing"),
        [wl("low-pob", "pob-cq", ps(1, cpu=5, flavors={"cpu": "on-demand"}), priority=-1)],
        [wl("high-pob", "pob-cq", ps(1, cpu=5))],
    )
    assert out == {
        "admitted": {},
        "preempted": {"low-pob": "InClusterQueue"},
        "pending": ["high-pob", "low-pob"],
    }


def test_borrowing_over_preemption_preference() -> None:
    """TestSchedule "BorrowingOverPreemption preference: borrow in second flavor instead of
    preempting in first" (kueue@ff69552e, pkg/scheduler/scheduler_test.go)"""
    out = run(
        fungibility_docs("bop", "BorrowingOverPreemption"),
        [wl("low-bop", "bop-cq", ps(1, cpu=5, flavors={"cpu": "on-demand"}), priority=-1)],
        [wl("high-bop", "bop-cq", ps(1, cpu=5))],
    )
    assert out == {
        "admitted": {"high-bop": {"main": {"cpu": "spot"}}},
        "preempted": {},
        "pending": [],
    }


def test_second_flavor_when_first_has_no_candidates_may_stop_search() -> None:
    """TestSchedule "use second flavor when the first has no preemption candidates;
    WhenCanPreempt: MayStopSearch" (kueue@ff69552e, pkg/scheduler/scheduler_test.go)"""
    docs = [
        flavor("on-demand"),
        flavor("spot"),
        cq(
            "other-alpha",
            rg(fq("on-demand", cpu=(50, 50)), fq("spot", cpu=(100, 0))),
            preemption=pre("LowerPriority"),
            flavorFungibility={"whenCanPreempt": "MayStopSearch"},
        ),
    ]
    out = run(
        docs,
        [wl("admitted", "other-alpha", ps(1, cpu=50, flavors={"cpu": "on-demand"}))],
        [wl("new", "other-alpha", ps(1, cpu=20))],
    )
    assert out["admitted"] == {"new": {"main": {"cpu": "spot"}}}


def test_preempting_locally_borrowing_other_resources_without_cohort_candidates() -> None:
    """TestPreemption "preempting locally and borrowing other resources in cohort, without
    cohort candidates" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [adm("c1-low", "c1", 4, -1), adm("c2-low-1", "c2", 4, -1), adm("c2-high-2", "c2", 4, 1)],
        incoming("c1", 1, cpu=4, memory="5Gi"),
    )
    assert victims == {"c1-low": "InClusterQueue"}


def test_preempting_locally_borrowing_other_resources_with_cohort_candidates() -> None:
    """TestPreemption "preempting locally and borrowing other resources in cohort, with cohort
    candidates" (kueue@ff69552e, pkg/scheduler/preemption/preemption_test.go)"""
    victims, _ = preempt(
        [
            adm("c1-med", "c1", 4, 0),
            adm("c2-low-1", "c2", 5, -1),
            adm("c2-low-2", "c2", 1, -1),
            adm("c2-low-3", "c2", 1, -1),
        ],
        incoming("c1", 1, cpu=2, memory="5Gi"),
    )
    assert victims == {"c1-med": "InClusterQueue"}


def test_hierarchical_cohort_workload_borrowing_less_scheduled_first() -> None:
    """TestSchedule "in a hierarchical cohort, workload borrowing less is scheduled first":
    ``guaranteed`` borrows from its own cohort (level 1), ``best-effort`` from the root
    (level 2), so the lower-priority one goes first (kueue@ff69552e, scheduler_test.go)"""
    docs = [
        flavor("default"),
        cohort("root"),
        cohort("guaranteed", "root", rg(fq("default", cpu=4))),
        cq("guaranteed", rg(fq("default", cpu=0)), cohort="guaranteed"),
        cq("best-effort", rg(fq("default", cpu=0)), cohort="root"),
    ]
    out = run(
        docs,
        [],
        [
            wl("guaranteed", "guaranteed", ps(1, "one", cpu=4), priority=0),
            wl("best-effort", "best-effort", ps(1, "one", cpu=4), priority=3),
        ],
    )
    assert out == {
        "admitted": {"guaranteed": {"one": {"cpu": "default"}}},
        "preempted": {},
        "pending": ["best-effort"],
    }


def test_hierarchical_fair_sharing_tournament() -> None:
    """TestScheduleForFairSharing "hierarchical fair sharing schedule workload which wins
    tournament": d1 wins in B, f1 in C, and B's share with d1 is below C's with f1
    (kueue@ff69552e, pkg/scheduler/scheduler_fs_test.go)"""
    docs = [
        flavor("on-demand"),
        cohort("A", None, rg(fq("on-demand", cpu=200))),
        cohort("B", "A"),
        cohort("C", "A"),
    ]
    docs += [
        cq(q, rg(fq("on-demand", cpu=0)), cohort=co)
        for q, co in (("d", "B"), ("e", "B"), ("f", "C"), ("g", "C"))
    ]
    od = {"cpu": "on-demand"}
    out = run(
        docs,
        [
            wl("d0", "d", ps(1, "one", cpu=10, flavors=od)),
            wl("e0", "e", ps(1, "one", cpu=20, flavors=od)),
            wl("g0", "g", ps(1, "one", cpu=100, flavors=od)),
        ],
        [
            wl("d1", "d", ps(1, "one", cpu=70)),
            wl("e1", "e", ps(1, "one", cpu=61)),
            wl("f1", "f", ps(1, "one", cpu=1)),
            wl("g1", "g", ps(1, "one", cpu=1)),
        ],
        fair=True,
    )
    assert out["admitted"] == {"d1": {"one": {"cpu": "on-demand"}}}
    assert out["pending"] == ["e1", "f1", "g1"]


def test_victims_shared_by_two_preemptors_are_removed_once() -> None:
    """Two heads of one cohort whose victims overlap: the second is recomputed with the first's
    victims gone (RecomputeAssignmentUponPreemptionTargetsOverlap) and waits; the shared victim
    is counted once (``fits``: ``MergeWithTargets``) (kueue@ff69552e, pkg/scheduler/scheduler.go
    processEntry, updateAssignmentIfNeeded)"""
    docs = [
        flavor("default"),
        cq("a", rg(fq("default", cpu=4)), cohort="co", preemption=pre("Never", "Any")),
        cq("b", rg(fq("default", cpu=4)), cohort="co", preemption=pre("Never", "Any")),
        cq("c", rg(fq("default", cpu=0)), cohort="co"),
    ]
    out = run(
        docs,
        [wl("borrower", "c", ps(1, cpu=8, flavors={"cpu": "default"}), admitted_at=0)],
        [wl("wa", "a", ps(1, cpu=4)), wl("wb", "b", ps(1, cpu=4))],
    )
    assert out["preempted"] == {"borrower": "InCohortReclamation"}
    assert out["admitted"] == {}
    out = run(
        docs,
        [wl("borrower", "c", ps(1, cpu=8, flavors={"cpu": "default"}), admitted_at=0)],
        [wl("wa", "a", ps(1, cpu=4)), wl("wb", "b", ps(1, cpu=4))],
        until_stable=True,
    )
    assert set(out["admitted"]) == {"wa", "wb"} and out["pending"] == ["borrower"]
