"""ddlsched's ILP solver on the artifact's own ILPs: same optimum every round?

Sia's simulator, instrumented by ``benchmarks/sia_patches/ilp_dump.py`` (besides the one-thread
change of docs/reproduction/sia.md), appends every round's problem — the cost matrix A it hands
CBC, the jobs pinned by checkpoint-restore, the GPUs per type, λ_n — and CBC's answer to the file
``$SIA_ILP_DUMP``. This script solves each with ``policies.sia.solve_ilp`` (SciPy HiGHS) and
counts the rounds whose optimum equals CBC's and the rounds where the two pick different (equally
good) answers::

    python benchmarks/sia_patches/ilp_dump.py ARTIFACT/sia-simulator
    cd ARTIFACT/sia-simulator && SIA_ILP_DUMP=/tmp/ilp.pkl python multi_simulator.py \\
        workloads/philly/workload-3.csv --policy=sia --policy_p_val=-0.5 --mip_lambda_a=0.01 \\
        --mip_lambda_n=1.1 --interval=60 --project_throughputs --share_max_replicas --output=o.log
    python benchmarks/sia_ilp_crosscheck.py /tmp/ilp.pkl
"""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

import numpy as np


def load(path: Path) -> list[dict]:
    """Every round the patched artifact appended to ``path``."""
    rounds = []
    with open(path, "rb") as f:
        while True:
            try:
                rounds.append(pickle.load(f))
            except EOFError:
                return rounds


def objective(a: np.ndarray, choice: list[int], lambda_n: float) -> float:
    """Σ A x + λ_n (N − Σ x) of an answer (column per job, -1: none)."""
    return float(sum(a[j, c] for j, c in enumerate(choice) if c >= 0)) + lambda_n * sum(
        1 for c in choice if c < 0
    )


def main() -> None:
    from ddlsched.core.cluster_io import load_cluster
    from ddlsched.core.sia_clusters import SIA_MAX_PHYSICAL_NODES
    from ddlsched.policies.sia import configurations, solve_ilp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump", type=Path, help="the file $SIA_ILP_DUMP named")
    ap.add_argument("--cluster", default="sia-64")
    args = ap.parse_args()
    cl = load_cluster(args.cluster)
    types = list(cl.gpu_types)
    cols: list[tuple[str, int]] = []
    for t in types:
        servers = [s for s in cl.servers if s.gpu_type == t]
        nodes = min(len(servers), SIA_MAX_PHYSICAL_NODES.get(t, len(servers)))
        cols += [(t, g) for _, g in configurations(servers[0].num_gpus, nodes)]
    gpus = np.array([g for _, g in cols])
    type_of = np.array([types.index(t) for t, _ in cols])
    same = worse = better = other_answer = 0
    rounds = load(args.dump)
    for r in rounds:
        a = np.asarray(r["A"], dtype=float)
        free = r["free"]
        if isinstance(free, np.ndarray):  # np.asarray of the artifact's dict
            free = free.item()
        cap = np.array([free[t] for t in types])
        fixed = [(i, c) for i, c in r["fixed"] if c is not None]
        ours = solve_ilp(a, gpus, type_of, cap, r["lambda_n"], fixed, True)
        x = np.asarray(r["x"])
        theirs = [int(np.argmax(x[j])) if x[j].sum() else -1 for j in range(a.shape[0])]
        d = objective(a, ours, r["lambda_n"]) - objective(a, theirs, r["lambda_n"])
        if abs(d) < 1e-6:  # A is float32 in the artifact; costs are multiples of 0.01
            same += 1
        elif d < 0:
            better += 1
        else:
            worse += 1
        other_answer += ours != theirs
    print(
        f"{len(rounds)} rounds: same optimum as CBC {same}, lower (better) {better}, "
        f"higher (worse) {worse}; a different answer in {other_answer} rounds "
        f"({other_answer / max(len(rounds), 1) * 100:.0f} %)"
    )


if __name__ == "__main__":
    main()
