"""Compare published policies and placements on presets with the public API.

python examples/compare_policies.py
"""

from ddlsched import simulate_named

SETTINGS = {"iterations_per_task": 1000}  # the Wang artifact's scale: about 0.1 s a run


def row(policy: str, placement: str, s: dict) -> str:
    """One table line from a run's summary."""
    return (
        f"{policy:10s} {placement:9s} {s['avg_jct']:8.1f}s {s['p95_jct']:8.1f}s "
        f"{s['makespan']:8.1f}s"
    )


if __name__ == "__main__":
    print(f"{'policy':10s} {'placement':9s} {'avg JCT':>9s} {'p95 JCT':>9s} {'makespan':>9s}")
    # online policies on Wang et al.'s cluster and workload, with two placements each
    for policy in ("ada-srsf", "srsf1", "fifo-ff"):
        for placement in ("lwf", "ff"):
            s = simulate_named(
                "wang20", "wang20", policy, placement=placement, seed=0, settings=SETTINGS
            ).summary
            print(row(policy, placement, s))
    # offline planners see every job at time 0 (Yu et al.'s setting, RAR model)
    for policy in ("sjf-bco", "yu-ff"):
        print(row(policy, "(plan)", simulate_named("yu22-4", "yu22", policy, seed=0).summary))
