#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 60), two at a
# time (MRTR_FUZZ_JOBS).
#
#   scripts/fuzz.sh [SECONDS]
#
# Needs the nightly toolchain (libFuzzer and sanitizers); installs it and cargo-fuzz if missing.
# Targets come from `cargo fuzz list`, so targets added later run too; each gets the
# dictionary of MCP keys fuzz/mcp.dict. A longer run with counts and coverage per
# target: scripts/fuzz-campaign.sh (fuzz/README.md).
set -euo pipefail

per_target="${1:-60}"
case "$per_target" in
    '' | *[!0-9]*) echo "usage: $0 [SECONDS]  (a whole number of seconds per target)" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "installing the nightly toolchain (cargo-fuzz needs it)" >&2
    rustup toolchain install nightly --profile minimal
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

mapfile -t targets < <(cargo +nightly fuzz list)
if [ "${#targets[@]}" -eq 0 ]; then
    echo "error: no fuzz targets found in fuzz/" >&2
    exit 1
fi

# libFuzzer is chatty: each target's output goes to a log file; the summary line
# (executions, coverage) is printed, and the log's tail when a target fails.
logs=target/fuzz-logs
mkdir -p "$logs"
failed=()
# Two targets at a time (one per core): each runs for the whole SECONDS, the run
# takes half as long.
jobs="${MRTR_FUZZ_JOBS:-2}"
run_one() {
    local target=$1
    cargo +nightly fuzz run "$target" -- -max_total_time="$per_target" -print_final_stats=1 \
        -dict="$PWD/fuzz/mcp.dict" >"$logs/$target.log" 2>&1
}
# Build every target first, so the parallel runs do not race one build.
cargo +nightly fuzz build >"$logs/build.log" 2>&1 || { tail -n 60 "$logs/build.log" >&2; exit 1; }
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    pids=()
    batch=("${targets[@]:i:jobs}")
    for target in "${batch[@]}"; do
        echo "== fuzzing $target for ${per_target}s (log: $logs/$target.log)" >&2
        run_one "$target" &
        pids+=($!)
    done
    for k in "${!batch[@]}"; do
        target=${batch[$k]}
        if wait "${pids[$k]}"; then
            grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$logs/$target.log" | sed "s/^/$target: /" >&2 || true
        else
            tail -n 60 "$logs/$target.log" >&2
            failed+=("$target")
        fi
    done
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "error: fuzz targets failed: ${failed[*]} (crash inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "all ${#targets[@]} fuzz targets ran ${per_target}s without failure" >&2
