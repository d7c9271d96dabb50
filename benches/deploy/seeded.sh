#!/usr/bin/env bash
# Deploy-to-ready of the study's topology (experiments/study.yaml, feed-rs.indexed, at the
# study's data size): its database from its init scripts against from a copy of its seeded
# snapshot, alternating, on the same engine in the same run. The snapshot is seeded (once)
# before the first round. Prints each sample, the medians and their ratio.
#   benches/deploy/seeded.sh [ROUNDS]      (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
cargo build --release -q
fb=target/release/feedbench
plan=experiments/study.yaml
run=feed-rs.indexed/ramp/r1
study=feed-runtimes
now() { date +%s.%N; }
$fb clean --study "$study" >/dev/null
# Seeds the template if this machine has none for this input yet.
$fb deploy "$plan" --run "$run" --seeding snapshot | grep -E '^(ready|database)'
$fb clean --study "$study" >/dev/null
scripts=(); snapshot=()
for i in $(seq 1 "$rounds"); do
    t0=$(now); $fb deploy "$plan" --run "$run" --seeding scripts >/dev/null; t1=$(now)
    $fb clean --study "$study" >/dev/null
    scripts+=("$(echo "$t1 - $t0" | bc)")
    t0=$(now); $fb deploy "$plan" --run "$run" --seeding snapshot >/dev/null; t1=$(now)
    $fb clean --study "$study" >/dev/null
    snapshot+=("$(echo "$t1 - $t0" | bc)")
    echo "round $i: scripts ${scripts[-1]} s, snapshot ${snapshot[-1]} s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms=$(median "${scripts[@]}"); mn=$(median "${snapshot[@]}")
echo "median: scripts $ms s, snapshot $mn s, ratio scripts/snapshot $(echo "scale=2; $ms / $mn" | bc)"
