"""Issue #17: ``gavel_lp.min_total_duration_perf(method="ecos")`` against Gavel's own
``MinTotalDurationPolicyWithPerf`` (CVXPY + ECOS), allocation for allocation.

Not a test (it needs Gavel's code and a Python with cvxpy and ecos; docs/gavel-reference.md):
``/work/gavel-env/bin/python benchmarks/gavel_mtd_ecos_check.py --gavel /work/gavel-run/gavel``.
It loads ``gavel_lp.py`` by path (no ddlsched install needed) and Gavel's policy from
``GAVEL/scheduler/policies``, draws random instances (2–11 jobs, 1/2/4 GPUs, three types) and
prints the largest |X_gavel − X_ours| (measured 2026-11-25: 0 on 30 instances, bit for bit).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gavel", default="/work/gavel-run/gavel")
    ap.add_argument("--instances", type=int, default=30)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location(
        "gavel_lp", HERE / "src" / "ddlsched" / "policies" / "gavel_lp.py"
    )
    ours = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ours)  # type: ignore[union-attr]
    sys.path.insert(0, str(Path(args.gavel) / "scheduler" / "policies"))
    import min_total_duration as mtd  # Gavel's module

    rng = np.random.default_rng(1)
    types = ["k80", "p100", "v100"]  # Gavel's (sorted) worker type order
    worst = 0.0
    for _ in range(args.instances):
        m = int(rng.integers(2, 12))
        sf = rng.choice([1, 2, 4], m)
        thr = {j: {t: float(rng.uniform(0.2, 3.0)) for t in types} for j in range(m)}
        steps = {j: float(rng.uniform(1e3, 1e5)) for j in range(m)}
        alloc = mtd.MinTotalDurationPolicyWithPerf("ECOS").get_allocation(
            thr, {j: int(sf[j]) for j in range(m)}, steps, dict.fromkeys(types, 4)
        )
        Xg = np.array([[alloc[j][t] for t in types] for j in range(m)])
        T = np.array([[thr[j][t] for t in types] for j in range(m)])
        R = np.array([steps[j] for j in range(m)])
        Xo = ours.min_total_duration_perf(T, sf.astype(float), np.full(3, 4.0), R, method="ecos")
        worst = max(worst, float(np.abs(Xg - Xo).max()))
    print(f"{args.instances} instances: max |X_gavel - X_ours| = {worst:g}")


if __name__ == "__main__":
    main()
