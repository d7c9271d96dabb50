#!/usr/bin/env bash
# CPU and memory of feedbench-load on 127.0.0.1, against the crate's own test server
# (examples/serve.rs: hyper, one thread). Needs perf (linux-perf) and taskset (util-linux).
#
#   images/load/bench.sh cpu     # CPU µs per request and peak RSS at BENCH_RATE for BENCH_SECS
#   images/load/bench.sh conns   # RSS per open connection, BENCH_CONNS held open by a slow server
#
# The server runs on CPU 0 and the generator on CPU 1. With K6=/path/to/k6 set, `cpu` also
# runs k6 on the same schedule and routes (the script feedbench renders from
# crates/core/src/spec/templates/load.js.j2), for the ratio.
# Tunables (environment): BENCH_RATE (1000), BENCH_SECS (20), BENCH_CONNS (2000).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
RATE="${BENCH_RATE:-1000}" SECS="${BENCH_SECS:-20}" CONNS="${BENCH_CONNS:-2000}"
cargo build --release -q -p feedbench-load --bin feedbench-load --example serve
BIN="$CARGO_TARGET_DIR/release/feedbench-load"
WORK="$(mktemp -d)"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# serve DELAY_MS: starts the server; sets URL.
serve() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  taskset -c 0 "$CARGO_TARGET_DIR/release/examples/serve" "$1" >"$WORK/url" &
  SERVER=$!
  for _ in $(seq 100); do [ -s "$WORK/url" ] && break; sleep 0.05; done
  URL="$(head -n1 "$WORK/url")"
}

# plan RATE SECS TIMEOUT_MS MAX_CONNECTIONS: writes $WORK/load.json.
plan() {
  python3 - "$URL" "$@" >"$WORK/load.json" <<'EOF'
import json, sys
url, rate, secs, timeout, cap = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(json.dumps({
    "format_version": 1, "seed": 1, "base_url": url, "timeout_ms": timeout,
    "routes": [
        {"name": "feed", "method": "GET", "path": ["/feed/", {"id": "user"}], "body": None},
        {"name": "post", "method": "POST", "path": ["/posts"], "body": ["{\"author\":", {"id": "user"}, "}"]},
    ],
    "cumulative_weights": [3, 4], "total_weight": 4, "ids": {"user": [1, 1000000]},
    "schedule": {"start_rate": rate, "stages": [{"duration_s": secs, "target": rate}]},
    "max_connections": cap, "max_lag_ms": 1000,
}))
EOF
}

# measure LABEL REQUESTS CMD…: task-clock (exact, unlike utime+stime's ticks) and peak RSS.
measure() {
  local label="$1" requests="$2"
  shift 2
  # time(1) inside perf: its peak RSS is then the measured program's, not perf's.
  perf stat -x, -e task-clock -o "$WORK/perf" taskset -c 1 /usr/bin/time -f "%M" -o "$WORK/rss" "$@" >/dev/null
  local ms rss
  ms="$(grep task-clock "$WORK/perf" | cut -d, -f1)"
  rss="$(cat "$WORK/rss")"
  awk -v l="$label" -v ms="$ms" -v n="$requests" -v rss="$rss" 'BEGIN {
    printf "%-16s %8d requests  %9.1f ms CPU  %7.1f µs/request  peak RSS %6.1f MiB\n", l, n, ms, ms * 1000 / n, rss / 1024 }'
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
case "${1:-cpu}" in
cpu)
  serve 0
  plan "$RATE" "$SECS" 5000 1000
  echo "schedule: $RATE/s for $SECS s"
  measure feedbench-load "$(awk -v r="$RATE" -v s="$SECS" 'BEGIN { printf "%d", r * s }')" \
    "$BIN" --plan "$WORK/load.json" --out "$WORK/load.csv"
  tail -n1 "$WORK/load.csv"
  if [ -n "${K6:-}" ]; then
    python3 - "$URL" "$RATE" "$SECS" >"$WORK/load.js" <<'EOF'
import json, sys
url, rate, secs = sys.argv[1], int(float(sys.argv[2])), sys.argv[3]
plan = {"seed": 1, "baseUrl": url, "timeout": "5s",
        "routes": [{"name": "feed", "method": "GET", "path": ["/feed/", {"id": "user"}], "body": None},
                   {"name": "post", "method": "POST", "path": ["/posts"], "body": ["{\"author\":", {"id": "user"}, "}"]}],
        "cumulativeWeights": [3, 4], "totalWeight": 4, "ids": {"user": [1, 1000000]},
        "scenario": {"executor": "constant-arrival-rate", "rate": rate, "timeUnit": "1s",
                     "duration": secs + "s", "preAllocatedVUs": 50, "maxVUs": 1000}}
template = open("crates/core/src/spec/templates/load.js.j2").read()
print(template.replace("{{ plan_json }}", json.dumps(plan)).replace("{{ kind }}", "bench"))
EOF
    K6_NO_USAGE_REPORT=true K6_CSV_TIME_FORMAT=unix_nano \
      measure k6 "$(awk -v r="$RATE" -v s="$SECS" 'BEGIN { printf "%d", r * s }')" \
      "$K6" run -q --no-summary --address "" --out "csv=$WORK/k6.csv" "$WORK/load.js"
  fi
  ;;
conns)
  # The server holds every response 60 s: each request keeps its connection open.
  serve 60000
  rss_at() { # RSS (KiB) of the generator once `#second t=$1` is written
    local pid="$2"
    for _ in $(seq 400); do grep -q "^#second t=$1 " "$WORK/load.csv" 2>/dev/null && break; sleep 0.05; done
    awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"
  }
  # Baseline: one connection at a time (a trickle against the same slow server).
  plan 1 3 120000 10
  taskset -c 1 "$BIN" --plan "$WORK/load.json" --out "$WORK/load.csv" & GEN=$!
  base="$(rss_at 1 "$GEN")"
  few="$(grep '^#second t=1 ' "$WORK/load.csv" | sed 's/.*connections=//')"
  # Killed: an interrupted run would wait for the held responses.
  kill -KILL "$GEN"; wait "$GEN" 2>/dev/null || true
  # CONNS connections opened over 2 s and held. Kernel socket memory is not in RSS:
  # /proc/net/sockstat's TCP `mem` (pages, both ends of every loopback connection) shows it.
  sock_before="$(awk '/^TCP:/ { for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat)"
  plan "$(awk -v c="$CONNS" 'BEGIN { print c / 2 }')" 2 120000 "$((CONNS + 100))"
  taskset -c 1 "$BIN" --plan "$WORK/load.json" --out "$WORK/load.csv" & GEN=$!
  held="$(rss_at 1 "$GEN")"
  many="$(grep '^#second t=1 ' "$WORK/load.csv" | sed 's/.*connections=//')"
  sock_after="$(awk '/^TCP:/ { for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat)"
  kill -KILL "$GEN"; wait "$GEN" 2>/dev/null || true
  awk -v b="$base" -v h="$held" -v f="$few" -v m="$many" 'BEGIN {
    printf "RSS with %d connections %.1f MiB; with %d connections %.1f MiB: %.2f KiB per connection\n",
      f, b / 1024, m, h / 1024, (h - b) / (m - f) }'
  awk -v b="$sock_before" -v a="$sock_after" -v m="$many" 'BEGIN {
    printf "kernel TCP memory: +%d pages for %d loopback connections (both ends)\n", a - b, m }'
  ;;
*)
  echo "usage: $0 [cpu|conns]" >&2
  exit 2
  ;;
esac
