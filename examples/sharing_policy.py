"""GPU sharing from Luo et al.'s parts: a new queue order with the Theorem 1 sharing rule.

Application-profile jobs (built-in profiles, the Pollux workload recipe's 240 jobs) on 12 servers
of 4 GPUs, three quarters of the luo24 cluster, so that GPUs run short and sharing matters.

    python examples/sharing_policy.py
"""

from ddlsched import Cluster, load_workload, simulate
from ddlsched.policy import Sharing, theorem1


def fewest_gpus_first(job, sim):
    """Ordering key, smaller first: the smallest gang, then the earliest arrival."""
    return (job.num_gpus, job.arrival, job.job_id)


def make_policy():
    """Fewest GPUs first; share a GPU with one running job only where Theorem 1 says it pays."""
    return Sharing("fewest-bsbf", mode="bsbf", ordering=fewest_gpus_first)


if __name__ == "__main__":
    # Theorem 1 alone: a new job of L_a s beside a running one with L_b s left, both 1.5x slower
    for L_a, L_b in ((100.0, 50.0), (20.0, 100.0)):
        share, avg = theorem1(L_a, L_b, xi_a=1.5, xi_b=1.5)
        print(f"theorem1 L_a={L_a:.0f} L_b={L_b:.0f}: share={share}, pair mean JCT {avg:.1f} s")
    cluster = Cluster.homogeneous(12, 4, name="luo24-small")
    jobs = load_workload("luo24", seed=0)
    for policy in (make_policy(), "sjf-bsbf", "sjf-ffs", "sjf", "fifo"):
        s = simulate(cluster, jobs, policy, seed=0).summary
        name = policy if isinstance(policy, str) else policy.name
        print(f"{name:12s} avg JCT {s['avg_jct']:7.1f} s  makespan {s['makespan']:8.1f} s")
