#!/usr/bin/env bash
# Two-round MRTR flows per second that `mrtr serve` (release, default limits)
# sustains on one core, over loopback with keep-alive.
#
#   scripts/flows-per-second.sh [--bin PATH] [SECONDS] [CONNECTIONS]
#
# Builds `mrtr` and examples/flows_load.rs in release (unless --bin names an
# `mrtr` binary to measure instead, e.g. one built from an older commit), starts
# `mrtr serve --listen 127.0.0.1:0 --anonymous` pinned to CPU 0 and the load
# driver pinned to CPU 1 (with taskset, when it is available and there are two
# CPUs), runs for SECONDS (default 10) on CONNECTIONS keep-alive connections
# (default 8), prints the driver's `flows/s: N`, and stops the server. The server
# logs at its default level to a temporary file, as in production.
set -euo pipefail

cd "$(dirname "$0")/.."

bin=
if [ "${1:-}" = --bin ]; then
    bin=$2
    shift 2
fi
seconds=${1:-10}
connections=${2:-8}

cargo build --release --quiet -p mrtr-cli --example flows_load
[ -n "$bin" ] || { cargo build --release --quiet -p mrtr-cli --bin mrtr; bin=target/release/mrtr; }
driver=target/release/examples/flows_load

server_cpu=() driver_cpu=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    server_cpu=(taskset -c 0) driver_cpu=(taskset -c 1)
else
    echo "flows-per-second: no taskset or one CPU: not pinned" >&2
fi

log=$(mktemp)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -f "$log"
}
trap cleanup EXIT

NO_COLOR=1 "${server_cpu[@]}" "$bin" serve --listen 127.0.0.1:0 --anonymous 2>"$log" &
pid=$!
url=
for _ in $(seq 100); do
    url=$(grep -o -m1 'listening on http://[^ "]*/mcp' "$log" | sed 's/^listening on //' || true)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "flows-per-second: the server did not start:" >&2; cat "$log" >&2; exit 1; }

"${driver_cpu[@]}" "$driver" "$url" "$seconds" "$connections"
