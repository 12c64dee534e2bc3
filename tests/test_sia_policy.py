"""The ``sia`` policy (issue #29, policies/sia.py): Sia's ILP per round as the artifact's
sia.py solves it, its restart factor, its goodput bootstrap from one-GPU profiles, and an
end-to-end run on ``sia-64`` with tiny profiles of our own (tests/test_sia_inputs.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from ddlsched.api import simulate
from ddlsched.cli import main
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.perf.typed_profiles import load_type_profiles
from ddlsched.policies.sia import (
    ZERO_ALLOC_GAIN,
    Sia,
    alloc_to_placement,
    configurations,
    one_gpu_throughput,
    restart_factor,
    restart_penalty,
    solve_ilp,
)

sys.path.insert(0, str(Path(__file__).parent))
from test_sia_inputs import write_sia_profiles  # noqa: E402

MODEL = ModelProfile("app", 0.0, 0.0, 0, 0.0, 0.0)


def costs(goodput: np.ndarray, p: float = -0.5) -> np.ndarray:
    """A = min(round(G^p, 2), 3000) (sia.py:959-968)."""
    return np.minimum(np.round(np.power(goodput, p), 2), 3000.0)


def test_hand_solved_ilp_two_jobs_two_types() -> None:
    """Two jobs, GPU types T1 (2 GPUs, configurations 1 and 2 GPUs) and T2 (1 GPU).

    Normalised goodputs (columns T1×1, T1×2, T2×1): A = (1, 1.8, 3), B = (1, 1.9, 1.2).
    With p = −0.5 and 2-decimal rounding, A's costs are (1, 0.75, 0.58) and B's
    (1, 0.73, 0.91); λ_n = 1.1 per job left without GPUs. The feasible assignments (T1 has 2
    GPUs, T2 one):

    - A→T2×1, B→T1×2: 0.58 + 0.73 = 1.31  ← optimum
    - A→T2×1, B→T1×1: 0.58 + 1.00 = 1.58
    - A→T1×2, B→T2×1: 0.75 + 0.91 = 1.66
    - A→T1×1, B→T2×1: 1.00 + 0.91 = 1.91
    - A→T1×1, B→T1×1: 2.00
    - one job alone at best: A→T2×1 + 1.1 = 1.68; none: 2.2.

    So A takes the fast type although B scales better there, and B takes both T1 GPUs."""
    g = np.array([[1.0, 1.8, 3.0], [1.0, 1.9, 1.2]])
    a = costs(g)
    assert a.tolist() == [[1.0, 0.75, 0.58], [1.0, 0.73, 0.91]]
    gpus = np.array([1, 2, 1])
    type_of = np.array([0, 0, 1])
    choice = solve_ilp(a, gpus, type_of, np.array([2, 1]), 1.1, [])
    assert choice == [2, 1]


def test_lambda_n_leaves_a_job_out_only_when_cheaper() -> None:
    """One GPU, two jobs whose only configuration costs 1 (goodput 1): one runs (1 + 1.1 =
    2.1 < 2.2); with λ_n = 0.5 running still beats leaving both out (1.5 < 1.0 + … no: 1 +
    0.5 = 1.5 vs 2 × 0.5 = 1.0), so both wait."""
    a = np.array([[1.0], [1.0]])
    one = np.array([1])
    assert sorted(solve_ilp(a, one, np.array([0]), np.array([1]), 1.1, [])) == [-1, 0]
    assert solve_ilp(a, one, np.array([0]), np.array([1]), 0.5, []) == [-1, -1]


def test_restart_penalty_keeps_an_allocation_when_the_gain_is_below_it() -> None:
    """A job on configuration 0 (goodput 1) could move to configuration 1 (goodput 1.2).
    Without a penalty it moves: 1.2^−0.5 = 0.91 < 1. Age 100 s, one restart, penalty 30 s
    (cifar10's, sia.py:27-28): factor (100 − 30)/(100 + 30) = 0.538, so the move's goodput is
    0.646 and its cost 1.24 > 1 — it stays."""
    assert restart_penalty("cifar10-7") == 30.0
    assert restart_penalty("imagenet-1") == 250.0
    assert restart_penalty("yolov3-2") == 45.0
    assert restart_penalty("alpha-0") == 30.0
    f = restart_factor(100.0, 1, 30.0)
    assert f == pytest.approx(70 / 130)
    assert restart_factor(20.0, 5, 30.0) == 1.0  # younger than the penalty: no factor
    row = np.array([1.0, 1.2])
    gpus, types, cap = np.array([1, 1]), np.array([0, 0]), np.array([1])
    assert solve_ilp(costs(row[None]), gpus, types, cap, 1.1, []) == [1]
    damped = row * f
    damped[0] = row[0]  # the previous configuration keeps its goodput (sia.py:921-927)
    assert costs(damped[None]).tolist() == [[1.0, 1.24]]
    assert solve_ilp(costs(damped[None]), gpus, types, cap, 1.1, []) == [0]


def test_a_fixed_configuration_is_kept() -> None:
    """A job in checkpoint-restore keeps its configuration (cluster.py:424-425) even where
    another is cheaper."""
    a = costs(np.array([[1.0, 4.0]]))
    out = solve_ilp(a, np.array([1, 1]), np.array([0, 0]), np.array([1]), 1.1, [(0, 0)])
    assert out == [0]


def test_configurations_are_the_artifacts_tables() -> None:
    """CONFIGS_4GPU and CONFIGS_8GPU (sia.py:13-17) cut at the type's usable nodes: sia-64
    has 8 aws, 5 dgx-ext and 6 rtx columns (SEMANTICS §6)."""
    assert configurations(4, 6) == [(1, 1), (1, 2), (1, 4), *[(k, 4 * k) for k in range(2, 7)]]
    assert [g for _, g in configurations(8, 2)] == [1, 2, 4, 8, 16]
    assert [g for _, g in configurations(8, 3)] == [1, 2, 4, 8, 16, 24]
    assert len(configurations(4, 16)) == 18 and configurations(4, 16)[-1] == (16, 64)
    assert configurations(8, 100)[-1] == (8, 64)


def test_placement_is_round_robin_as_the_artifact() -> None:
    """alloc_to_placement_fast (sia.py:155-204): two 2-GPU jobs on an 8-GPU type land on
    nodes 0 and 1; a 16-GPU job takes two whole nodes first."""
    assert alloc_to_placement([8, 8, 8], [(0, 2), (1, 2)], 8) == {0: [0, 0], 1: [1, 1]}
    free = [8, 8, 8]
    out = alloc_to_placement(free, [(0, 2), (1, 2), (2, 16)], 8)
    assert out == {2: [0] * 8 + [1] * 8, 0: [2, 2], 1: [2, 2]}
    assert free == [0, 0, 4]
    # a job split over nodes where the pointer's node lacks GPUs: placement (1, 1)
    assert alloc_to_placement([1, 8], [(0, 2)], 8) == {0: [0, 1]}


def test_bootstrap_from_one_gpu_profiles(tmp_path) -> None:
    """A new job gets goodput 1 on one GPU of every type and nothing else (sia.py:637-650);
    after it ran on one type, a type where it has not run is projected from that type's model
    at the same GPU count × the ratio of the one-GPU throughputs of the profiles
    (cluster.py:227-276, sia.py:423-507)."""
    root = write_sia_profiles(tmp_path / "t", epoch_progress=2e4)
    spec = JobSpec(0, 0.0, 1, 0, MODEL, application="alpha", batch_size=128, name="alpha-0")
    rec: list = []
    pol = Sia(record=rec)
    simulate(load_cluster("sia-64"), [spec], pol, settings={"profiles": str(root)})
    first = rec[0]
    cols = first.configs
    ones = [i for i, (_, _, g) in enumerate(cols) if g == 1]
    row = first.goodput[0]
    assert [row[i] for i in ones] == [1.0, 1.0, 1.0]
    assert all(row[i] == ZERO_ALLOC_GAIN for i in range(len(cols)) if i not in ones)
    # the second round: the job ran on one type (t0) with one GPU
    second = rec[1]
    t0 = cols[first.choice[0]][0]
    apps = {
        t: load_type_profiles(root, t, ["alpha"], "sia-64")["alpha"]
        for t in ("aws", "dgx-ext", "rtx")
    }
    row = second.goodput[0]
    for t in ("aws", "dgx-ext", "rtx"):
        if t == t0:
            continue
        ratio = one_gpu_throughput(apps[t]) / one_gpu_throughput(apps[t0])
        for g in (1, 2):  # at most twice the one replica it ran on
            i = cols.index(next(c for c in cols if c[0] == t and c[2] == g))
            j = cols.index(next(c for c in cols if c[0] == t0 and c[2] == g))
            # round 2 at 60 s: every configuration but the previous one (t0, 1 GPU) has
            # the restart factor (60 − 0)/(60 + 30) (penalty 30 s, no restart yet)
            damp = restart_factor(60.0, 0, 30.0) if g == 1 else 1.0
            assert row[i] / row[j] == pytest.approx(ratio * damp, rel=1e-5)
        big = [i for i, c in enumerate(cols) if c[0] == t and c[2] > 2]
        assert all(row[i] <= ZERO_ALLOC_GAIN for i in big)  # invalid (× the factor)
    # the tiny profiles' one-GPU throughputs: largest local batch ÷ its step time
    assert one_gpu_throughput(apps["dgx-ext"]) == pytest.approx(32 / (1.0 * (0.01 + 0.016)))
    assert one_gpu_throughput(apps["aws"]) == pytest.approx(32 / (3.0 * (0.01 + 0.016)))


def test_end_to_end_on_sia_64_passes_check(tmp_path, capsys) -> None:
    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "beta"), epoch_progress=2e4)
    wl = tmp_path / "w.csv"
    wl.write_text(
        "name,time,application,num_replicas,batch_size\n"
        + "".join(
            f"{('alpha', 'beta')[i % 2]}-{i},{30 * i},{('alpha', 'beta')[i % 2]},{g},{b}\n"
            for i, (g, b) in enumerate(
                [(1, 32), (2, 64), (4, 128), (8, 256), (12, 256), (16, 256)] * 2
            )
        )
    )
    for sem in ("events", "rounds"):
        out = tmp_path / f"o-{sem}"
        argv = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", "sia"]
        sets = ["--set", f"profiles={root}", "--set", f"semantics={sem}"]
        sets += ["--set", "calibration=sia", "--set", "sia_lambda_n=1.2"]
        assert main([*argv, *sets, "--quiet", "--out", str(out)]) == 0
        assert main(["check", str(out)]) == 0
        assert "ok:" in capsys.readouterr().out
        import json

        summary = json.loads((out / "summary.json").read_text())
        assert summary["elastic"] is True and summary["sia_rounds"] > 0
        assert math.isfinite(summary["avg_jct"])


def test_sia_is_listed_and_its_settings_are_scoped(tmp_path, capsys) -> None:
    assert main(["list"]) == 0
    assert "sia" in capsys.readouterr().out
    root = write_sia_profiles(tmp_path / "t")
    wl = tmp_path / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\na-0,0,alpha,1,32\n")
    argv = ["run", "--cluster", "sia-64", "--workload", str(wl), "--policy", "fifo"]
    out = ["--quiet", "--out", str(tmp_path / "o")]
    rc = main([*argv, "--set", f"profiles={root}", "--set", "sia_p=-1", *out])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "sia_p" in err[0] and "sia policy" in err[0]
    argv[-1] = "sia"
    rc = main([*argv, "--set", f"profiles={root}", "--set", "calibration=fast", *out])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "calibration" in err[0]


def test_calibration_divides_the_rate_and_sets_per_application_delays(tmp_path) -> None:
    """``calibration=sia``: a job of an application Sia calibrates runs SLOWDOWNS times
    slower after a restart of its own delay (simulator_config.py:31-33, applications.py:56-69);
    here an application named like Sia's (bert: 1.2, 120 s; Sia runs 2 of its epochs)."""
    root = write_sia_profiles(tmp_path / "t", apps=("bert",), epoch_progress=2e4)
    spec = JobSpec(0, 0.0, 1, 0, MODEL, application="bert", batch_size=32)
    cl = load_cluster("sia-64")
    base = {"profiles": str(root), "rescale_delay": 0.0}
    (plain,) = simulate(cl, [spec], "fifo", settings=base).jobs
    (cal,) = simulate(cl, [spec], "fifo", settings={**base, "calibration": "sia"}).jobs
    assert cal.jct == pytest.approx(120.0 + 1.2 * plain.jct, rel=1e-9)


class _PlacementWatch(Sia):
    """Sia, checking after every round that each running job holds, node by node, exactly
    the GPUs the artifact's ``alloc_to_placement_fast`` gives it from empty nodes."""

    checked = 0

    def on_round(self, sim) -> None:
        n = len(self.record)
        super().on_round(sim)
        if len(self.record) == n:
            return
        prob = self.record[-1]
        cl = sim.cluster
        for t in self.types:
            servers = self.servers[t]
            demands = [
                (jid, self.configs[c][2])
                for jid, c in zip(prob.job_ids, prob.choice, strict=True)
                if c >= 0 and self.configs[c][0] == t
            ]
            free = [cl.servers[s].num_gpus for s in servers]
            for jid, nodes in alloc_to_placement(free, demands, self.per_node[t]).items():
                job = sim.running[jid]
                assert [cl.gpu_server[g] for g in job.gpus] == [servers[k] for k in nodes]
                type(self).checked += 1


def test_every_job_runs_where_the_artifacts_placement_puts_it(tmp_path) -> None:
    """The artifact recomputes every placement from empty nodes and restarts a job only when
    its type or per-node GPUs change (cluster.py:184-215, job.py:524-546): a job whose tuple
    stays moves to its new GPUs for free. Keeping such jobs where they were (as ddlsched once
    did) split later jobs across nodes the artifact gives whole."""
    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "beta"), epoch_progress=2e4)
    jobs = [
        JobSpec(i, 30.0 * i, g, 0, MODEL, application=("alpha", "beta")[i % 2], batch_size=b)
        for i, (g, b) in enumerate([(1, 32), (2, 64), (4, 128), (8, 256), (12, 256)] * 3)
    ]
    settings = {"profiles": str(root), "semantics": "rounds", "calibration": "sia"}
    from ddlsched.perf.typed_profiles import calibration

    pol = _PlacementWatch(restart_delays=calibration("sia")["app_delays"], record=[])
    res = simulate(load_cluster("sia-64"), jobs, pol, settings=settings)
    assert len(res.jobs) == len(jobs) and _PlacementWatch.checked > 0
    assert res.summary["sia_free_moves"] == pol.free_moves > 0


def _random_ilp(rng: np.random.Generator, jobs: int) -> tuple:
    """A small random instance of Sia's ILP: 2 types, ties in the 0.01-rounded costs."""
    types = [(4, 3), (8, 2)]  # (GPUs per node, nodes)
    configs = [
        (t, g) for t, (per, nodes) in enumerate(types) for _, g in configurations(per, nodes)
    ]
    gpus = np.array([g for _, g in configs])
    type_of = np.array([t for t, _ in configs])
    capacity = np.array([per * nodes for per, nodes in types]) // 2
    g = np.full((jobs, len(configs)), ZERO_ALLOC_GAIN)
    for j in range(jobs):
        limit = int(rng.choice([1, 2, 4, 8, 16]))
        speed = rng.uniform(0.5, 3.0, size=len(types))
        for c, (t, n) in enumerate(configs):
            if n <= limit:
                g[j, c] = speed[t] * n ** rng.uniform(0.3, 1.0)
    return costs(g / g[g > ZERO_ALLOC_GAIN].min()), gpus, type_of, capacity


def _value(cost: np.ndarray, choice: list[int], lam: float, minimise: bool) -> float:
    v = sum(cost[j, c] - lam for j, c in enumerate(choice) if c >= 0)
    return round(v if minimise else -v, 6)


def test_pruned_ilp_has_the_plain_ilps_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """``solve_ilp``'s pruning (``useful_columns``, the fixed jobs taken out, the LP's
    reduced-cost fixing) keeps the optimum of the whole ILP: on random instances, with an
    exact gap, both solves reach the same objective, and the pruned one's answer is feasible
    (capacity, fixed columns)."""
    import ddlsched.policies.sia as sia_mod

    monkeypatch.setattr(sia_mod, "MIP_GAP", 0.0)
    rng = np.random.default_rng(29)
    for trial in range(40):
        cost, gpus, type_of, capacity = _random_ilp(rng, int(rng.integers(1, 14)))
        minimise = trial % 5 != 4
        lam = 1.1 if minimise else float(rng.choice([0.5, 1.1, 2.0]))
        fixed: list[tuple[int, int]] = []
        if trial % 3 == 0:
            j = int(rng.integers(cost.shape[0]))
            c = int(np.argmin(np.where(gpus <= capacity[type_of], cost[j], np.inf)))
            fixed = [(j, c)]
        plain = solve_ilp(cost, gpus, type_of, capacity, lam, fixed, minimise, prune=False)
        fast = solve_ilp(cost, gpus, type_of, capacity, lam, fixed, minimise, prune=True)
        assert _value(cost, fast, lam, minimise) == _value(cost, plain, lam, minimise)
        used = np.zeros(capacity.size)
        for c in fast:
            if c >= 0:
                used[type_of[c]] += gpus[c]
        assert (used <= capacity).all()
        assert all(fast[j] == c for j, c in fixed)


def test_useful_columns_rules() -> None:
    """Rule 1 drops a column no cheaper than λ_n; rule 2 one of the same type with more GPUs
    and no lower cost; a column of another type or a strictly cheaper one stays."""
    from ddlsched.policies.sia import useful_columns

    gpus = np.array([1, 2, 4, 1])
    type_of = np.array([0, 0, 0, 1])
    cost = np.array([[1.0, 1.0, 0.9, 1.0], [1.2, 0.8, 0.9, 1.1]])
    keep = useful_columns(cost, gpus, type_of, 1.1)
    assert keep.tolist() == [[True, False, True, True], [False, True, False, False]]


def test_small_ilps_are_solved_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``PRUNE_FROM`` variables the default is the whole ILP (Sia's own scale keeps the
    tied optimum HiGHS returns for it); from it on, the pruned one."""
    import ddlsched.policies.sia as sia_mod

    seen: list[int] = []
    real = sia_mod.useful_columns

    def spy(cost: np.ndarray, *args: object) -> np.ndarray:
        seen.append(cost.size)
        return real(cost, *args)

    monkeypatch.setattr(sia_mod, "useful_columns", spy)
    cost, gpus, type_of, capacity = _random_ilp(np.random.default_rng(1), 5)
    solve_ilp(cost, gpus, type_of, capacity, 1.1, [])
    assert seen == []
    monkeypatch.setattr(sia_mod, "PRUNE_FROM", cost.size)
    solve_ilp(cost, gpus, type_of, capacity, 1.1, [])
    assert seen == [cost.size]


@pytest.mark.parametrize("policy", ["sia", "gavel-tunedjobs"])
def test_typed_flavors_hold_sia_to_each_jobs_type(tmp_path, policy: str) -> None:
    """``--queues`` on sia-64: ClusterQueue `slow` offers only flavor `aws` (the T4-class
    type), `fast` only `dgx-ext` (A100s, the type both policies favour). Sia's ILP and
    Gavel's LP and greedy pass give each job its flavor's type only: each type is asked for
    more GPUs than it has, and a waiting job never takes the other type's free GPUs (the
    engine would refuse that start); every job finishes on its type. (gavel-tunedjobs with
    throughput 0 alone still put job 0 on a dgx-ext: a priority of 0 is still a turn.)"""
    from ddlsched.tenancy import load_queues

    root = write_sia_profiles(tmp_path / "t", apps=("alpha", "beta"), epoch_progress=2e4)
    gpu = '"nvidia.com/gpu"'
    path = tmp_path / "q.toml"
    path.write_text(
        "".join(f'[[resourceFlavor]]\nname = "{f}"\n' for f in ("aws", "dgx-ext"))
        + "".join(
            f'[[clusterQueue]]\nname = "{q}"\n[[clusterQueue.resourceGroups]]\n'
            f"coveredResources = [{gpu}]\nflavors = [\n"
            f'  {{ name = "{f}", resources = [{{ name = {gpu}, nominalQuota = 48 }}] }},\n]\n'
            for q, f in (("slow", "aws"), ("fast", "dgx-ext"))
        )
    )
    jobs = [
        JobSpec(
            i,
            20.0 * i,
            g,
            0,
            MODEL,
            application=("alpha", "beta")[i % 2],
            batch_size=b,
            queue=("slow", "fast")[(i // 2) % 2],
        )  # fmt: skip
        for i, (g, b) in enumerate([(4, 128), (8, 256), (4, 128), (8, 256)] * 3)
    ]  # 36 GPUs asked of each type (24 aws GPUs, 16 dgx-ext): jobs wait for their type
    cl = load_cluster("sia-64")
    settings = {"profiles": str(root), "calibration": "sia"}
    res = simulate(cl, jobs, policy, settings=settings, queues=load_queues(path))
    assert len(res.jobs) == len(jobs) and all(j.finish > j.start for j in res.jobs)
    ran: dict[int, set[str]] = {}
    for seg in res.segments:
        for at in seg.placement.split(";"):
            ran.setdefault(seg.job_id, set()).add(cl.servers[int(at.split(":")[0])].gpu_type)
    want = {"slow": {"aws"}, "fast": {"dgx-ext"}}
    assert {j.job_id: ran[j.job_id] for j in jobs} == {j.job_id: want[j.queue] for j in jobs}
