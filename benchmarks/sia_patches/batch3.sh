#!/bin/bash
# batch3.sh TRACE:WORKLOAD:POLICY ...: run_ckpt.sh on each in turn (a finished one is skipped).
# Start it so that it yields to other work: setsid nohup bash -c 'echo 19 > /proc/self/autogroup;
# exec benchmarks/sia_patches/batch3.sh saturn:workload-5:pollux-unaware' &
here=$(dirname "$0")
for spec in "$@"; do
  IFS=: read -r t w p <<< "$spec"
  "$here/run_ckpt.sh" "$t" "$w" "$p"
done
