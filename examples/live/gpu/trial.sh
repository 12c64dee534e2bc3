#!/bin/bash
# The live mode's torch.distributed example on a real GPU: one standalone run, then a
# tiresias live run on a 1-GPU cluster where a later job preempts the first (NCCL, CUDA).
# Run from the repository root on a machine with one GPU and PyTorch: bash examples/live/gpu/trial.sh
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
D=$(mktemp -d)  # everything this script writes
nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0))"
t0=$(date +%s.%N)
timeout 120 python3 examples/live/ddp_train.py --steps 200 --checkpoint-dir $D/ck0 2>&1 | tail -3; timeout 120 python3 examples/live/ddp_train.py --steps 300 --checkpoint-dir $D/ck0 2>&1 | tail -3
echo "standalone 200 steps: $(awk -v a=$t0 -v b=$(date +%s.%N) "BEGIN{print b-a}") s"
for pol in tiresias; do
  t0=$(date +%s.%N)
  timeout 200 python3 -m ddlsched.cli live --local --cluster examples/live/gpu/cluster-1gpu.toml --workload examples/live/gpu/jobs-ddp.toml \
    --policy $pol $( [ $pol = tiresias ] && echo --set interval=1 --set tiresias_thresholds=0.004 ) \
    --grace 10 --out $D/run-$pol 2>&1 | tail -5
  echo "$pol wall: $(awk -v a=$t0 -v b=$(date +%s.%N) "BEGIN{print b-a}") s"
  python3 -m ddlsched.cli check $D/run-$pol 2>&1 | tail -3
  grep -v '"measured"' $D/run-$pol/events.jsonl
  python3 -c "import json;s=json.load(open('$D/run-$pol/summary.json'));print({k:s[k] for k in ('avg_jct','makespan','num_jobs','failed_jobs','attempts_restarted','mean_startup_s','mean_restart_startup_s','mean_stop_s') if k in s})"
  for f in $D/run-$pol/jobs/*/attempt-*/rank-0.log; do echo "== $f"; cat $f | tail -4; done
  [ -n "${OUT:-}" ] && tar czf $OUT/run-$pol.tgz -C $D run-$pol
done
nvidia-smi --query-gpu=name,memory.used --format=csv
echo "run directories in $D"
