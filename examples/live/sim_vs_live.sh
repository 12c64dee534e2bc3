#!/bin/bash
# Live vs simulated, for fifo, sjf and tiresias (docs/live.md "Sim vs live"). Run from the
# repository root with ddlsched's environment active (e.g. `. .venv/bin/activate`):
#   bash examples/live/sim_vs_live.sh OUT_DIR
# For each policy: a live run of examples/live/jobs.toml on 2 × 2 logical GPUs; then two
# simulations of the same jobs — with the durations the live run measured (measured.csv, and
# its restart start-up as restart_delay) and with the job file's a-priori estimates — each
# compared with the live run by `ddlsched compare`.
set -euo pipefail
out=${1:-runs/sim-vs-live}
mkdir -p "$out"
cluster=examples/live/cluster-2x2.toml
jobs=examples/live/jobs.toml
python - "$jobs" "$out/estimated.csv" <<'PY'
import sys
from ddlsched.live.jobfile import read_live_jobs
with open(sys.argv[2], "w") as f:
    f.write("arrival,num_gpus,duration,name\n")
    for j in read_live_jobs(sys.argv[1]):
        f.write(f"{j.arrival},{j.gpus},{j.duration},live-{j.job_id}\n")
PY
for p in fifo sjf tiresias; do
  extra=()
  # 0.012 GPU-hours: a 4-GPU job is demoted after 10.8 s of running (docs/live.md, "Sim vs live")
  if [ "$p" = tiresias ]; then extra=(--set interval=1 --set tiresias_thresholds=0.012); fi
  ddlsched live --cluster $cluster --workload $jobs --policy $p "${extra[@]}" --quiet \
    --overwrite --out "$out/live-$p"
  delay=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['mean_restart_startup_s'])" \
    "$out/live-$p/summary.json")
  ddlsched run --cluster $cluster --workload "$out/live-$p/measured.csv" --policy $p \
    "${extra[@]}" --set restart_delay="$delay" --quiet --overwrite --out "$out/sim-measured-$p"
  ddlsched run --cluster $cluster --workload "$out/estimated.csv" --policy $p "${extra[@]}" \
    --quiet --overwrite --out "$out/sim-estimated-$p"
  echo "== $p: live vs simulated with measured durations"
  ddlsched compare "$out/live-$p" "$out/sim-measured-$p" | tail -4
  echo "== $p: live vs simulated with the job file's estimates"
  ddlsched compare "$out/live-$p" "$out/sim-estimated-$p" | tail -4
done
