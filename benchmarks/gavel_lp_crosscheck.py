"""Cross-check ddlsched.policies.gavel_lp against Gavel's own cvxpy policy classes (#17).

NOT part of CI: needs cvxpy (and ECOS, Gavel's default solver) and Gavel's source. Run it in a
throwaway environment, e.g.

    /usr/bin/python3.11 -m venv /work/lpcheck
    /work/lpcheck/bin/pip install cvxpy ecos numpy scipy
    /work/lpcheck/bin/python benchmarks/gavel_lp_crosscheck.py [--n 50] [--seed 0]

Gavel's scheduler/policies/*.py and scheduler/job_id_pair.py are read from a bare mirror
(``--gavel``, default the stanford-futuredata/gavel mirror at commit c4fa400) into a temporary
directory and imported as-is. gavel_lp.py is loaded by path (only numpy/scipy needed), so
ddlsched itself need not be installed there.

For each random instance (2..12 jobs, Gavel's three worker types k80/p100/v100, scale factors
1/2/4, random weights, steps remaining and times since start) both sides compute every policy
and the *objective* of each allocation is compared (optima need not be unique, so X may differ):
max-min: min_j of Gavel's normalised terms; finish-time fairness: max_j rho_j; min total
duration: makespan. Prints the max relative objective difference per policy and the constraint
violations of both sides.

Result (2026-11-25, --n 50 --seed 0, cvxpy 1.9.3 + ECOS, SciPy 1.17.1 HiGHS), relative
objective difference (ours - Gavel) / |Gavel|:

    max_min_perf (min term)                  max |diff| 1.0e-09
    max_min (min term, T=1)                  max |diff| 1.0e-09
    ftf_perf (max rho)                       max |diff| 1.1e-07  (ours never worse by > 1.0e-09)
    ftf (max rho, v100 units)                max |diff| 3.1e-08  (ours never worse by > 1.0e-09)
    ftf_perf 2nd call (cumulative iso time)  max |diff| 9.2e-09
    mtd_perf (makespan), both bisection      -2.4e-02 .. +1.3e-02
    mtd (agnostic), both bisection           -2.9e-02 .. +1.6e-02
    mtd_perf exact vs Gavel's bisection      -4.3e-02 .. -4.0e-04 (exact always better)
    max constraint violation: Gavel 4.9e-10, ours 4.4e-16

The 1e-9 gaps are the refining pass's documented slack (gavel_lp module doc, item 6); the
finish-time gaps where ours is better are ECOS's tolerance. Both bisections visit the same
makespans M with the same verdicts (checked by instrumenting both on 30 further instances)
but each returns *some* X feasible for the last feasible M, whose realised makespan lies anywhere
below it; hence the +-3%, within Gavel's own 5% stopping rule.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GAVEL = "/work/.mirror/stanford-futuredata+gavel/repo"
TYPES = ["k80", "p100", "v100"]  # Gavel's worker types (sorted, as Gavel flattens them)


def load_gavel(repo: str, dest: Path) -> None:
    """Copy Gavel's policies and job_id_pair.py out of the bare repo; make them importable."""
    pol = dest / "scheduler" / "policies"
    pol.mkdir(parents=True)
    names = subprocess.run(
        ["git", "-C", repo, "ls-tree", "--name-only", "HEAD:scheduler/policies"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in names:
        text = subprocess.run(
            ["git", "-C", repo, "show", f"HEAD:scheduler/policies/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (pol / name).write_text(text)
    jp = subprocess.run(
        ["git", "-C", repo, "show", "HEAD:scheduler/job_id_pair.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (dest / "scheduler" / "job_id_pair.py").write_text(jp)
    sys.path.insert(0, str(pol))


def load_ours():
    path = ROOT / "src" / "ddlsched" / "policies" / "gavel_lp.py"
    spec = importlib.util.spec_from_file_location("gavel_lp", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def instance(rng):
    J = int(rng.integers(2, 13))
    counts = rng.integers(1, 9, size=3).astype(float)
    scale = rng.choice([1.0, 1.0, 1.0, 2.0, 4.0], size=J)
    # Roughly k80 < p100 < v100 with job-dependent speedups.
    base = rng.uniform(0.5, 3.0, size=(J, 1))
    T = base * np.column_stack(
        [np.ones(J), rng.uniform(1.2, 3.0, size=J), rng.uniform(2.0, 6.0, size=J)]
    )
    weights = rng.choice([1.0, 1.0, 2.0, 0.5], size=J)
    R = rng.uniform(1e3, 1e6, size=J).round()
    tss = rng.uniform(0, 1e4, size=J)
    return T, scale, counts, weights, R, tss


def as_dicts(T, scale, counts, weights, R, tss):
    J = T.shape[0]
    thr = {j: {t: float(T[j, k]) for k, t in enumerate(TYPES)} for j in range(J)}
    return dict(
        throughputs=thr,
        scale_factors={j: int(scale[j]) for j in range(J)},
        priority_weights={j: float(weights[j]) for j in range(J)},
        num_steps_remaining={j: float(R[j]) for j in range(J)},
        times_since_start={j: float(tss[j]) for j in range(J)},
        cluster_spec={t: int(counts[k]) for k, t in enumerate(TYPES)},
    )


def to_array(alloc, J):
    return np.array([[alloc[j][t] for t in TYPES] for j in range(J)], dtype=float)


def violation(X, scale, counts):
    return max(
        float(np.maximum(X.sum(axis=1) - 1, 0).max()),
        float(np.maximum(scale @ X - counts, 0).max()),
        float(np.maximum(-X, 0).max()),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gavel", default=DEFAULT_GAVEL)
    ap.add_argument("--solver", default="ECOS")
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory()
    load_gavel(args.gavel, Path(tmp.name))
    import finish_time_fairness as gftf
    import max_min_fairness as gmmf
    import min_total_duration as gmtd

    g = load_ours()
    rng = np.random.default_rng(args.seed)
    v100 = TYPES.index("v100")
    rel: dict[str, list[float]] = {}
    viol = {"gavel": 0.0, "ours": 0.0}
    warnings = 0

    def record(name, ours, theirs):
        rel.setdefault(name, []).append((ours - theirs) / abs(theirs))

    for _ in range(args.n):
        T, scale, counts, weights, R, tss = instance(rng)
        J = T.shape[0]
        d = as_dicts(T, scale, counts, weights, R, tss)
        ones = np.ones_like(T)
        Tv = np.repeat(T[:, [v100]], 3, axis=1)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):  # Gavel prints 'WARNING: ... not optimal!'
            G = {
                "max_min_perf": gmmf.MaxMinFairnessPolicyWithPerf(args.solver).get_allocation(
                    d["throughputs"], d["scale_factors"], d["priority_weights"], d["cluster_spec"]
                ),
                "max_min": gmmf.MaxMinFairnessPolicy(args.solver).get_allocation(
                    d["throughputs"], d["scale_factors"], d["priority_weights"], d["cluster_spec"]
                ),
                "ftf_perf": gftf.FinishTimeFairnessPolicyWithPerf(args.solver).get_allocation(
                    d["throughputs"],
                    d["scale_factors"],
                    d["priority_weights"],
                    d["times_since_start"],
                    d["num_steps_remaining"],
                    d["cluster_spec"],
                ),
                "ftf": gftf.FinishTimeFairnessPolicy(args.solver).get_allocation(
                    d["throughputs"],
                    d["scale_factors"],
                    d["priority_weights"],
                    d["times_since_start"],
                    d["num_steps_remaining"],
                    d["cluster_spec"],
                ),
                "mtd_perf": gmtd.MinTotalDurationPolicyWithPerf(args.solver).get_allocation(
                    d["throughputs"],
                    d["scale_factors"],
                    d["num_steps_remaining"],
                    d["cluster_spec"],
                ),
                "mtd": gmtd.MinTotalDurationPolicy(args.solver).get_allocation(
                    d["throughputs"],
                    d["scale_factors"],
                    d["num_steps_remaining"],
                    d["cluster_spec"],
                ),
            }
            # A second call on the same policy object exercises Gavel's cumulative isolated
            # time: (steps done since the previous call) / (isolated throughput then).
            pol = gftf.FinishTimeFairnessPolicyWithPerf(args.solver)
            pol.get_allocation(
                d["throughputs"],
                d["scale_factors"],
                d["priority_weights"],
                d["times_since_start"],
                d["num_steps_remaining"],
                d["cluster_spec"],
            )
            R2 = (R * rng.uniform(0.3, 1.0, size=J)).round()
            tss2 = tss + rng.uniform(100, 5000)
            G["ftf_perf_2nd"] = pol.get_allocation(
                d["throughputs"],
                d["scale_factors"],
                d["priority_weights"],
                {j: float(tss2[j]) for j in range(J)},
                {j: float(R2[j]) for j in range(J)},
                d["cluster_spec"],
            )
        warnings += out.getvalue().count("WARNING")
        cum = (R - R2) / g.isolated_throughput(T, scale, counts)
        G = {k: to_array(v, J) for k, v in G.items()}
        ours = {
            "max_min_perf": g.max_min_fairness_perf(T, scale, counts, weights),
            "max_min": g.max_min_fairness(T, scale, counts, weights),
            "ftf_perf": g.finish_time_fairness_perf(T, scale, counts, R, tss),
            "ftf": g.finish_time_fairness(T, scale, counts, R, tss, reference_type=v100),
            "mtd_perf": g.min_total_duration_perf(T, scale, counts, R),
            "mtd": g.min_total_duration(T, scale, counts, R, reference_type=v100),
            "mtd_perf_exact": g.min_total_duration_perf(T, scale, counts, R, method="exact"),
            "ftf_perf_2nd": g.finish_time_fairness_perf(T, scale, counts, R2, tss2, cum),
        }
        for k in G:
            viol["gavel"] = max(viol["gavel"], violation(G[k], scale, counts))
        for k in ours:
            viol["ours"] = max(viol["ours"], violation(ours[k], scale, counts))

        def mm(TT, X, scale=scale, counts=counts, weights=weights):
            return g.max_min_normalised(TT, X, scale, counts, weights).min()

        def ftf(TT, X, scale=scale, counts=counts, R=R, tss=tss):
            return g.finish_time_ratios(TT, X, scale, counts, R, tss).max()

        record("max_min_perf (min term)", mm(T, ours["max_min_perf"]), mm(T, G["max_min_perf"]))
        record("max_min (min term, T=1)", mm(ones, ours["max_min"]), mm(ones, G["max_min"]))
        record("ftf_perf (max rho)", ftf(T, ours["ftf_perf"]), ftf(T, G["ftf_perf"]))
        record("ftf (max rho, v100 units)", ftf(Tv, ours["ftf"]), ftf(Tv, G["ftf"]))
        r2 = [
            g.finish_time_ratios(T, X, scale, counts, R2, tss2, cum).max()
            for X in (ours["ftf_perf_2nd"], G["ftf_perf_2nd"])
        ]
        record("ftf_perf 2nd call (cumulative iso time)", *r2)
        mk = g.makespan
        record("mtd_perf (makespan)", mk(T, ours["mtd_perf"], R), mk(T, G["mtd_perf"], R))
        record("mtd (makespan, v100 units)", mk(Tv, ours["mtd"], R), mk(Tv, G["mtd"], R))
        record(
            "mtd_perf exact vs Gavel (makespan)",
            mk(T, ours["mtd_perf_exact"], R),
            mk(T, G["mtd_perf"], R),
        )

    print(f"{args.n} random instances, Gavel solver {args.solver}; Gavel warnings: {warnings}")
    print("relative objective difference (ours - Gavel) / |Gavel|; for max-min larger is better,")
    print("for rho and makespan smaller is better")
    for name, vals in rel.items():
        v = np.array(vals)
        print(
            f"  {name:36s} max |diff| {np.abs(v).max():.2e}   min {v.min():+.2e}   "
            f"max {v.max():+.2e}"
        )
    print(f"max constraint violation: Gavel {viol['gavel']:.1e}, ours {viol['ours']:.1e}")


if __name__ == "__main__":
    main()
