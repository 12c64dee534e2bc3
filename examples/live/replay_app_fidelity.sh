#!/bin/bash
# Replay fidelity of application-profile jobs (docs/live.md "Replay: predict another policy
# from one live run"). Run from the repository root with ddlsched's environment active:
#   bash examples/live/replay_app_fidelity.sh OUT_DIR [POLICY ...]
# Live runs of examples/live/replay-app-jobs.toml (10 jobs of train.py --pace APP) on 2 × 2
# logical GPUs (local subprocesses) under fifo, pollux, sjf-bsbf and sjf-ffs (default); then each
# live run replayed under every policy (`ddlsched replay`) and compared with the live run of
# that policy (`ddlsched compare`): predicted vs live average JCT, the largest per-job error.
# REPLAY_ONLY=1: replay the live runs already in OUT_DIR again, without running them.
set -euo pipefail
out=${1:-runs/replay-app-fidelity}
shift || true
policies=${*:-fifo pollux sjf-bsbf sjf-ffs}
mkdir -p "$out"
cluster=examples/live/cluster-2x2.toml
jobs=examples/live/replay-app-jobs.toml
ddl() { python -m ddlsched.cli "$@"; }
# Pollux decides every 2 s (its default 60 s is longer than these jobs)
settings() { if [ "$1" = pollux ]; then echo "--set interval=2"; fi; }
[ "${REPLAY_ONLY:-}" = 1 ] || uptime > "$out/load.txt"
for p in $policies; do
  [ "${REPLAY_ONLY:-}" = 1 ] && continue
  # shellcheck disable=SC2046
  ddl live --local --cluster $cluster --workload $jobs --policy $p $(settings $p) --quiet \
    --overwrite --out "$out/live-$p" > /dev/null
done
[ "${REPLAY_ONLY:-}" = 1 ] || uptime >> "$out/load.txt"
printf '%-22s %9s %9s %8s %16s %8s\n' "measured → predicted" "live (s)" "pred (s)" "avg" \
  "worst job" "preempt"
for a in $policies; do
  for b in $policies; do
    # shellcheck disable=SC2046
    ddl replay "$out/live-$a" --policy $b $(settings $b) --quiet --overwrite \
      --out "$out/replay-$a-as-$b" > /dev/null
    ddl check "$out/replay-$a-as-$b" > /dev/null
    ddl compare "$out/live-$b" "$out/replay-$a-as-$b" --json --out "$out/jobs-$a-as-$b.csv" \
      > "$out/compare-$a-as-$b.json"
    python - "$a" "$b" "$out" <<'PY'
import csv, json, sys
a, b, out = sys.argv[1:]
s = json.load(open(f"{out}/compare-{a}-as-{b}.json"))
rows = list(csv.DictReader(open(f"{out}/jobs-{a}-as-{b}.csv")))
worst = max(rows, key=lambda r: abs(float(r["diff_pct"] or 0)))
pre = sum(int(r["preemptions"]) for r in csv.DictReader(open(f"{out}/replay-{a}-as-{b}/jobs.csv")))
print(f"{a + ' → ' + b:<22} {s['avg_jct_a']:9.2f} {s['avg_jct_b']:9.2f} "
      f"{s['avg_jct_diff_pct']:+7.1f}% {float(worst['diff_pct']):+7.1f}% (job {worst['job_id']:>2}) "
      f"{pre:>6}")
PY
  done
done
