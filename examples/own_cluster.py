"""Build a cluster, a model and jobs in code, simulate them, and write the usual result files.

python examples/own_cluster.py [OUT_DIR]
"""

import sys
import tempfile

from ddlsched import Cluster, JobSpec, ModelProfile, Server, simulate, write_result

# two 8-GPU servers (32 GB, 25 GbE) and one older 4-GPU server (16 GB, 10 GbE)
cluster = Cluster(
    servers=(
        Server(num_gpus=8, gpu_memory_mb=32768, network_bandwidth_gbps=25.0),
        Server(num_gpus=8, gpu_memory_mb=32768, network_bandwidth_gbps=25.0),
        Server(num_gpus=4),
    ),
    name="lab",
)
# gradient size 240 MB, 6 GB per worker, batch 32, forward 40 ms, backward 80 ms per iteration
bert = ModelProfile(
    "bert-base", size_mb=240.0, memory_mb=6000, batch_size=32, t_forward=0.040, t_backward=0.080
)
# twelve jobs, one every 30 s, of 1, 2, 4 or 8 GPUs
jobs = [
    JobSpec(job_id=i, arrival=30.0 * i, num_gpus=(1, 2, 4, 8)[i % 4], iterations=2000, model=bert)
    for i in range(12)
]

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ddlsched-")
    for policy in ("ada-srsf", "fifo-ff"):
        result = simulate(cluster, jobs, policy, settings={"iterations_per_task": 10})
        write_result(result, f"{out}/{policy}", config={"cluster": cluster.name, "policy": policy})
        print(
            f"{policy:9s} avg JCT {result.summary['avg_jct']:7.1f} s  "
            f"makespan {result.summary['makespan']:7.1f} s"
        )
    print(f"wrote {out}/ada-srsf/ and {out}/fifo-ff/")
