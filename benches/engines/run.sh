#!/usr/bin/env bash
# Wall time of a 4-run study (tests/plans/docker/parallel.yaml: caps summing to 0.95 core a
# run) on one engine against two groups of engines at once: this machine's engine and a
# second one in its own network namespace (tests/engines/second-engine), reached over TCP
# with TLS. Rounds alternate, one engine then two groups, each a whole `feedbench run` into
# fresh results, timed from the command's start to its exit. A first two-group run, not
# counted, copies the images to the second engine and seeds its database's template there,
# as the first run on the local engine did before it. Prints each sample, the medians and
# their ratio. Needs root (the second engine) and a committed plan.
#   benches/engines/run.sh [ROUNDS]      (default 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-2}
cargo build --release -q
fb=target/release/feedbench
plan=tests/plans/docker/parallel.yaml
study=parallel
work=$(mktemp -d)
engine="$work/engine2"
down() { tests/engines/second-engine down "$engine" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap down EXIT
$fb images build "$plan" >/dev/null
mapfile -t second < <(tests/engines/second-engine up "$engine")
here='  here: {endpoint: "unix:///var/run/docker.sock", address: 10.99.0.1}'
there="  second: {endpoint: \"${second[1]}\", address: 10.99.0.2, tls: {cert-path: ${second[2]}}}"
printf 'format_version: 1\nengines:\n%s\ngroups:\n  - {system: here}\n' "$here" > "$work/one.yaml"
printf 'format_version: 1\nengines:\n%s\n%s\ngroups:\n  - {system: here}\n  - {system: second}\n' \
    "$here" "$there" > "$work/two.yaml"
now() { date +%s.%N; }
timed() { # engines file -> seconds of one whole run, into fresh results
    local t0 t1 out
    out=$(mktemp -d -p "$work" results.XXXX)
    t0=$(now)
    $fb run "$plan" --no-build --engines "$1" --results "$out" >"$out.log" 2>&1 \
        || { echo "a run failed (engines $1):" >&2; tail -20 "$out.log" >&2; exit 1; }
    t1=$(now)
    echo "$t1 - $t0" | bc
}
$fb clean --study "$study" --engines "$work/two.yaml" >/dev/null
echo "warm-up (not counted): two groups $(timed "$work/two.yaml") s"
one=(); two=()
for i in $(seq 1 "$rounds"); do
    one+=("$(timed "$work/one.yaml")")
    two+=("$(timed "$work/two.yaml")")
    echo "round $i: one engine ${one[-1]} s, two groups ${two[-1]} s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
m1=$(median "${one[@]}"); m2=$(median "${two[@]}")
echo "median: one engine $m1 s, two groups $m2 s, ratio two/one $(echo "scale=2; $m2 / $m1" | bc)"
