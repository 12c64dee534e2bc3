#!/bin/bash
# run_ckpt.sh TRACE WORKLOAD POLICY[#TAG]: one resumable run of the Sia artifact's simulator
# (docs/reproduction/sia.md, "Setting the reference up again") in $SIA_REF/runs/TRACE_WORKLOAD_POLICY[#TAG]/.
# $SIA_REF (default /work/sia-ref) holds sia-simulator/ (instrumented by checkpoint.py) and venv/.
# stdout and stderr are appended; each segment's wall time and exit code go to segments.txt;
# a finished run ("rc=0" in segments.txt) is skipped, and its average JCT is appended to
# $SIA_REF/results.csv (trace,workload,policy,avg_jct_s) when it finishes.
set -u
REF=${SIA_REF:-/work/sia-ref}
T=$1 W=$2 P=$3
NAME=${P%%#*}
D=$REF/runs/${T}_${W}_${P}
mkdir -p "$D"
if grep -q '^rc=0$' "$D/segments.txt" 2>/dev/null; then
  echo "skip $D (finished)"
  exit 0
fi
case $NAME in
  pollux-unaware) CMD=(multi_simulator_unaware.py "workloads/$T/$W.csv" --policy=pollux
                       --interval=60 --policy_p_val=-1 "--output=$D/$W.log") ;;
  sia) CMD=(multi_simulator.py "workloads/$T/$W.csv" --policy=sia --policy_p_val=-0.5
            --mip_lambda_a=0.01 --mip_lambda_n=1.1 --interval=60 --project_throughput
            --share_max_replicas "--output=$D/$W.log") ;;
  gavel) CMD=(multi_simulator.py "workloads/$T/$W.csv" --policy=gavel --interval=360
              "--output=$D/$W.log") ;;
  *) echo "unknown policy $NAME" >&2; exit 2 ;;
esac
start=$(date +%s)
(cd "$REF/sia-simulator" && SIA_CHECKPOINT=$D/ckpt.pkl "$REF/venv/bin/python" "${CMD[@]}") \
  >> "$D/stdout.txt" 2>> "$D/stderr.txt"
rc=$?
echo "segment wall=$(( $(date +%s) - start )) rc=$rc" >> "$D/segments.txt"
if [ $rc = 0 ]; then
  echo "rc=0" >> "$D/segments.txt"
  [ -f "$REF/results.csv" ] || echo "trace,workload,policy,avg_jct_s" > "$REF/results.csv"
  jct=$(grep 'Average JCT' "$D/stdout.txt" | tail -1 | awk '{print $NF}')
  echo "$T,$W,$P,$jct" >> "$REF/results.csv"
fi
exit $rc
