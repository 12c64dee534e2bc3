#!/bin/sh
# Sia live on two GPU types of logical GPUs (docs/live.md "Sia live"); from the repository root:
#   sh examples/live/sia/run.sh [OUT]
set -e
out=${1:-runs/live-sia}
python3 examples/live/sia/make_profiles.py   # the made-up profiles (not kept in the repository)
ddlsched live --local --cluster examples/live/sia/cluster.toml \
    --workload examples/live/sia/jobs.toml --policy sia \
    --set profiles=examples/live/sia/profiles --set interval=3 --set rescale_delay=1 \
    --grace 5 --out "$out" --overwrite
python3 examples/live/sia/moves.py "$out"
ddlsched check "$out"
