#!/usr/bin/env bash
# Round-trip benchmark of the fault proxy against a direct connection and
# HAProxy in TCP mode, all on 127.0.0.1. Needs taskset (util-linux) and,
# for the reference row, haproxy (apt-get install haproxy).
#
# Tunables (environment): BENCH_SECS (3), BENCH_CONNS (32), BENCH_RATE (5000),
# BENCH_SAMPLES (20000), BENCH_PROXY_CPU (0), BENCH_CLIENT_CPU (1).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
command -v haproxy >/dev/null && haproxy -v | head -n1
exec cargo bench -p feedbench-fault-proxy --bench roundtrip
