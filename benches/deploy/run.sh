#!/usr/bin/env bash
# Deploy-to-ready of the probe topology: `feedbench deploy` against `docker-compose up` of
# the equivalent compose.yml (then waiting until every health check passes, as Compose v2's
# `up --wait` would; this machine has Compose v1, which has no --wait), alternating, on the
# same engine in the same run. Prints each sample and the medians and their ratio.
#   benches/deploy/run.sh [ROUNDS]      (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
cargo build --release -q
fb=target/release/feedbench
plan=tests/plans/docker/probe.yaml
run=static/steady/r1
# The balancer config feedbench renders for that run, so both deploy the same HAProxy.
dir=benches/deploy
$fb topology "$plan" --run "$run" --show haproxy > "$dir/haproxy.cfg"
now() { date +%s.%N; }
wait_healthy() {
    local ids; ids=$(docker-compose -f "$dir/compose.yml" -p benchcompose ps -q | tr '\n' ' ')
    while :; do
        local pending=0
        for id in $ids; do
            s=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$id")
            case "$s" in healthy|none) ;; *) pending=1 ;; esac
        done
        [ $pending -eq 0 ] && return 0
        sleep 0.1
    done
}
fb_times=(); compose_times=()
$fb clean --study test-probe >/dev/null
for i in $(seq 1 "$rounds"); do
    t0=$(now); $fb deploy "$plan" --run "$run" >/dev/null; t1=$(now)
    $fb clean --study test-probe >/dev/null
    fb_times+=("$(echo "$t1 - $t0" | bc)")
    t0=$(now)
    docker-compose -f "$dir/compose.yml" -p benchcompose up -d --quiet-pull >/dev/null 2>&1
    wait_healthy
    t1=$(now)
    docker-compose -f "$dir/compose.yml" -p benchcompose down -v >/dev/null 2>&1
    compose_times+=("$(echo "$t1 - $t0" | bc)")
    echo "round $i: feedbench ${fb_times[-1]} s, compose ${compose_times[-1]} s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mf=$(median "${fb_times[@]}"); mc=$(median "${compose_times[@]}")
echo "median: feedbench $mf s, compose $mc s, ratio feedbench/compose $(echo "scale=2; $mf / $mc" | bc)"
