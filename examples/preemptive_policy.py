"""A policy written from scratch against the protocol: attach, schedule, and on_round rounds.

Fewest GPUs first on first-fit GPUs; every 5 minutes, if the smallest waiting job cannot start,
the running job with the most GPUs is preempted (it keeps its progress and waits again).

    python examples/preemptive_policy.py
"""

from dataclasses import dataclass

from ddlsched import load_cluster, load_workload, simulate
from ddlsched.policy import FirstFit, JobState, SchedulingPolicy, Simulator


def smallest_first(job: JobState) -> tuple:
    return (job.num_gpus, job.arrival, job.job_id)


@dataclass
class EvictLargest:
    name: str = "evict-largest"
    interval: float = 300.0  # seconds between on_round calls
    evictions: int = 0

    def attach(self, sim: Simulator) -> None:
        self.evictions = 0  # one object may serve several runs

    def schedule(self, sim: Simulator) -> None:
        for job in sorted(sim.queue, key=smallest_first):
            gpus = FirstFit().select(job, sim)
            if gpus is not None:
                sim.start(job, gpus)

    def on_round(self, sim: Simulator) -> None:
        if not sim.queue or not sim.running:
            return
        first = min(sim.queue, key=smallest_first)
        largest = max(sim.running.values(), key=lambda j: (j.num_gpus, -j.job_id))
        if largest.num_gpus > first.num_gpus and FirstFit().select(first, sim) is None:
            sim.preempt(largest)  # the engine calls schedule() at the end of this instant
            self.evictions += 1

    def summary_extras(self, sim: Simulator) -> dict:
        return {"evictions": self.evictions}


if __name__ == "__main__":
    assert isinstance(EvictLargest(), SchedulingPolicy)
    cluster, jobs = load_cluster("wang20"), load_workload("wang20", seed=0)
    settings = {"granularity": "job", "restart_delay": 10.0}  # preemption needs job level
    for policy in (EvictLargest(), "fifo-ff", "srsf"):
        s = simulate(cluster, jobs, policy, settings=settings).summary
        name = policy if isinstance(policy, str) else policy.name
        extra = f"  evictions {s['evictions']}" if "evictions" in s else ""
        print(f"{name:14s} avg JCT {s['avg_jct']:7.1f} s  makespan {s['makespan']:8.1f} s{extra}")
