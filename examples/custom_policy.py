"""A new policy in ~30 lines: highest response ratio next, LWF-1 placement, SRSF(1) gate.

    python examples/custom_policy.py
    ddlsched run --cluster wang20 --workload wang20 --set iterations_per_task=1000 \
        --policy examples/custom_policy.py:make_policy --out out/
"""

from ddlsched import load_cluster, load_workload, simulate
from ddlsched.policy import compose, register_policy


def response_ratio(job, sim):
    """Ordering key, smaller first: highest (waiting + service) / service first (HRRN).

    Short jobs go first, as in SRSF, but a long job's ratio grows while it waits."""
    service = job.num_gpus * job.iterations_left * job.spec.model.t_compute
    return (-(sim.now - job.arrival + service) / service, job.job_id)


def make_policy():
    """A fresh policy per run: the ordering above + Wang's LWF-1 placement + SRSF(1) gate."""
    return compose("hrrn", ordering=response_ratio, placement="lwf", gate="srsf1")


if __name__ == "__main__":
    register_policy("hrrn", make_policy)
    cluster = load_cluster("wang20")
    settings = {"iterations_per_task": 1000}  # the Wang artifact's scale: about 0.1 s a run
    seeds = range(5)
    print(f"policy      avg JCT (s)  wang20, mean of seeds 0-{seeds[-1]}")
    for name in ("hrrn", "srsf1", "ada-srsf", "fifo-ff"):
        jcts = [
            simulate(
                cluster, load_workload("wang20", seed=s), name, seed=s, settings=settings
            ).summary["avg_jct"]
            for s in seeds
        ]
        print(f"{name:10s} {sum(jcts) / len(jcts):9.1f}")
