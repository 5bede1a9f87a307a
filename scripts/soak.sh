#!/usr/bin/env bash
# Soak: FLOWS two-round MRTR flows against one `mrtr serve`, its resident set
# sampled throughout. Passes when every flow completed and the resident set at
# the end is at most 10% above the one after warm-up. Not part of .ci/run or
# `cargo test`: a full run takes a few minutes of both cores.
#
#   scripts/soak.sh [FLOWS] [MAX_MINUTES]
#
# FLOWS defaults to 1000000 (at least 100), MAX_MINUTES to 30 (at most 60): the
# driver stops by itself at that wall-clock cap, and flows not completed by then
# fail the soak. Environment: SOAK_CONNECTIONS (default 8) keep-alive connections
# run the flows; each is closed and replaced after SOAK_RECONNECT_EVERY flows
# (default 100; 0 keeps each connection for the whole run), so accepting and
# closing connections is soaked as well. SOAK_SERVE_ARGS adds flags to
# `mrtr serve` (e.g. "--metrics-listen 127.0.0.1:0" to soak the Prometheus
# recorder too).
#
# Builds `mrtr` and examples/flows_load.rs in release, starts one
# `mrtr serve --listen 127.0.0.1:0 --anonymous` (default limits, ephemeral key,
# logging at its default level to a file, as in production), and runs the flows
# of `test_input_required_result_elicitation` (round 1 asks, round 2 completes)
# with examples/flows_load.rs. The driver reads the server's VmRSS
# (/proc/PID/status) before the first flow, every second, and at each 1% of the
# flows, into target/soak/rss.csv (seconds,flows,failures,rss_kib,event).
#
# Warm-up is the first 10% of the flows: by then every runtime worker has its
# allocator arena, the connection buffers and the logger's buffers have grown to
# their working size, and the allocator's free lists hold what a round needs, so
# what grows after it grows with the number of flows. The verdict compares the
# sample taken when the last flow ended (connections still open, as at warm-up)
# with the one taken when 10% had ended.
#
# Loopback only; the server is stopped on exit, Ctrl-C included. What it leaves
# in target/soak/: rss.csv, summary.txt, driver.txt and server.log (the server's
# log without its per-request lines, which are only counted).
set -euo pipefail

cd "$(dirname "$0")/.."

flows=${1:-1000000}
minutes=${2:-30}
connections=${SOAK_CONNECTIONS:-8}
reconnect=${SOAK_RECONNECT_EVERY:-100}
read -r -a serve_args <<<"${SOAK_SERVE_ARGS:-}"
number() { [[ $2 =~ ^[0-9]+$ ]] || { echo "soak: $1 must be a number, not '$2'" >&2; exit 2; }; }
number FLOWS "$flows"
number MAX_MINUTES "$minutes"
number SOAK_CONNECTIONS "$connections"
number SOAK_RECONNECT_EVERY "$reconnect"
if [ "$flows" -lt 100 ] || [ "$minutes" -lt 1 ] || [ "$minutes" -gt 60 ] || [ "$connections" -lt 1 ]; then
    echo "soak: FLOWS at least 100, MAX_MINUTES 1 to 60, SOAK_CONNECTIONS at least 1" >&2
    exit 2
fi

cargo build --release --quiet -p mrtr-cli --bin mrtr --example flows_load
bin=target/release/mrtr
driver=target/release/examples/flows_load

out=target/soak
mkdir -p "$out"
samples=$out/rss.csv
summary=$out/summary.txt
raw_log=$out/server-raw.log
rm -f "$samples" "$summary" "$out/driver.txt" "$out/server.log"

server='' driver_pid=''
cleanup() {
    if [ -n "$driver_pid" ]; then kill "$driver_pid" 2>/dev/null || true; fi
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    # Keep the server's own messages; the per-request lines are 2 per flow.
    if [ -f "$raw_log" ]; then
        grep -v ' mrtr::request: ' "$raw_log" >"$out/server.log" || true
        rm -f "$raw_log"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 --anonymous "${serve_args[@]}" 2>"$raw_log" &
server=$!
url=''
for _ in $(seq 100); do
    url=$(grep -o -m1 'listening on http://[^ "]*/mcp' "$raw_log" 2>/dev/null | sed 's/^listening on //' || true)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "soak: the server did not start:" >&2; cat "$raw_log" >&2; exit 1; }

reconnect_args=()
[ "$reconnect" -gt 0 ] && reconnect_args=(--reconnect-every "$reconnect")
echo "soak: $flows flows on $connections connections against $url (pid $server${serve_args[*]:+, serve ${serve_args[*]}}), at most $minutes min"
# The driver stops itself at the cap; `timeout` is the backstop if it hangs.
timeout --signal=KILL $((minutes * 60 + 60)) \
    "$driver" "$url" $((minutes * 60)) "$connections" --flows "$flows" "${reconnect_args[@]}" \
    --rss-pid "$server" --samples "$samples" >"$out/driver.txt" 2>&1 &
driver_pid=$!
status=0
wait "$driver_pid" || status=$?
driver_pid=''
# Failed flows print one line each: show the first few.
head -n 20 "$out/driver.txt"

# The resident set once the driver's connections have closed and the server idled.
sleep 2
idle=$(awk '/^VmRSS:/ {print $2}' "/proc/$server/status" 2>/dev/null || true)
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$server/status" 2>/dev/null || true)
alive=yes
kill -0 "$server" 2>/dev/null || alive=no
requests=$(grep -c ' mrtr::request: ' "$raw_log" || true)
rate=$(sed -n 's/^flows\/s: //p' "$out/driver.txt")
elapsed=$(sed -n 's/^flows: [0-9]* in \([0-9.]*\) s.*/\1/p' "$out/driver.txt")

# The curve: start, each 10% of the flows (the first is the warm-up), the peak,
# the end and the idle sample; then the verdict on end against warm-up.
curve=0
awk -F, -v n="$flows" -v idle="$idle" -v hwm="$hwm" '
    NR == 1 { next }
    { ended = $2 + $3 }
    $5 == "start" { start = $4 }
    $4 != "" && $4 + 0 > peak { peak = $4 + 0; peak_at = ended; peak_s = $1 }
    $5 == "progress" {
        while (next_mark <= 10 && ended >= next_mark * n / 10) {
            if (next_mark > 0) { mark_rss[next_mark] = $4; mark_flows[next_mark] = ended; mark_s[next_mark] = $1 }
            next_mark++
        }
    }
    function row(name, fl, s, rss) {
        pct = (warm > 0 && rss != "") ? sprintf("%+.1f%%", 100 * (rss - warm) / warm) : ""
        printf "  %-22s %9s %9s %10s %11s\n", name, fl, s, rss, pct
    }
    BEGIN { next_mark = 0 }
    END {
        warm = mark_rss[1]
        printf "  %-22s %9s %9s %10s %11s\n", "point", "flows", "seconds", "RSS KiB", "vs warm-up"
        row("start", 0, "0.000", start)
        for (k = 1; k <= 10; k++) {
            if (!(k in mark_rss)) break
            row(sprintf("%d%%%s", 10 * k, k == 1 ? " (warm-up)" : k == 10 ? " (end)" : ""), mark_flows[k], mark_s[k], mark_rss[k])
        }
        row("peak sample", peak_at, peak_s, peak)
        row("idle 2 s after the end", "", "", idle)
        if (hwm != "") printf "  %-22s %9s %9s %10s\n", "VmHWM (kernel peak)", "", "", hwm
        end = mark_rss[10]
        if (warm == "" || end == "") { print "no warm-up or end sample"; exit 2 }
        printf "end / warm-up: %.3f (limit 1.100)\n", end / warm
        exit (end * 10 <= warm * 11) ? 0 : 1
    }' "$samples" >"$out/curve.txt" || curve=$?

{
    echo "soak: $flows flows, $connections connections, $([ "$reconnect" -gt 0 ] && echo "each replaced after $reconnect flows" || echo "kept for the whole run")"
    echo "soak: driver: $(grep -E '^(flows|incomplete):' "$out/driver.txt" | tr '\n' ' ')(exit $status)"
    echo "soak: $rate flows/s over $elapsed s; the server logged $requests requests; server alive: $alive"
    cat "$out/curve.txt"
} | tee "$summary"
rm -f "$out/curve.txt"

if [ "$status" -eq 0 ] && [ "$curve" -eq 0 ] && [ "$alive" = yes ]; then
    echo "soak: PASS (curve in $samples)" | tee -a "$summary"
else
    why=()
    [ "$status" -eq 0 ] || why+=("flows failed or did not all complete")
    [ "$curve" -eq 0 ] || why+=("the resident set at the end is more than 10% above warm-up (or missing)")
    [ "$alive" = yes ] || why+=("the server exited")
    echo "soak: FAIL: $(IFS=';'; echo "${why[*]}") (curve in $samples)" | tee -a "$summary"
    exit 1
fi
