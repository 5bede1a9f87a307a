#!/usr/bin/env bash
# Builds every fuzz target in fuzz/ under libFuzzer with the address sanitizer and
# runs each for SECONDS (default 60), two at a time (MRTR_FUZZ_JOBS).
#
#   scripts/fuzz.sh [SECONDS]
#   scripts/fuzz.sh --build-only
#
# Needs the nightly toolchain (the sanitizer); installs it if missing. It builds
# with cargo itself and the flags cargo-fuzz passes by default (SanitizerCoverage
# with 8-bit counters, PC table, compare tracing and stack depth; `--cfg fuzzing`;
# ASan; release with debug assertions and overflow checks; for the host target
# only, so build scripts and proc macros are not instrumented), so a clean
# machine needs no `cargo install cargo-fuzz`. The binaries are the ones
# `cargo fuzz build` makes, in the same place. The targets are fuzz/Cargo.toml's
# [[bin]]s, so targets added later run too; each gets the dictionary of MCP keys
# fuzz/mcp.dict and reads the committed seeds in fuzz/corpus/TARGET, and what it
# finds new goes to a scratch corpus under target/, so the worktree is left as it
# was. Crash inputs go to fuzz/artifacts/TARGET/. A longer run with counts and
# coverage per target: scripts/fuzz-campaign.sh (fuzz/README.md).
set -euo pipefail

build_only=""
per_target=60
case "${1:-}" in
    --build-only) build_only=1 ;;
    '') ;;
    *[!0-9]*) echo "usage: $0 [SECONDS] | --build-only  (SECONDS: a whole number per target)" >&2; exit 2 ;;
    *) per_target=$1 ;;
esac

cd "$(dirname "$0")/.."
repo=$PWD

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "installing the nightly toolchain (the address sanitizer needs it)" >&2
    rustup toolchain install nightly --profile minimal
fi

host="$(rustup run nightly rustc -vV | sed -n 's/^host: //p')"
mapfile -t targets < <(sed -n '/^\[\[bin\]\]/,/^$/{s/^name = "\(.*\)"$/\1/p}' fuzz/Cargo.toml)
if [ "${#targets[@]}" -eq 0 ]; then
    echo "error: no [[bin]] fuzz targets in fuzz/Cargo.toml" >&2
    exit 1
fi

# libFuzzer is chatty: the build's and each target's output go to log files; the
# summary lines (executions, memory) are printed, and a log's tail on failure.
logs=target/fuzz-logs
mkdir -p "$logs"
flags=(
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    -Cllvm-args=-sanitizer-coverage-stack-depth
    --cfg fuzzing
    -Zsanitizer=address
    -Cdebug-assertions
    -Coverflow-checks
)
echo "building ${#targets[@]} fuzz targets (nightly, $host, address sanitizer; log: $logs/build.log)" >&2
RUSTFLAGS="${flags[*]}" cargo +nightly build --manifest-path fuzz/Cargo.toml --release --locked \
    --target "$host" --bins >"$logs/build.log" 2>&1 || { tail -n 60 "$logs/build.log" >&2; exit 1; }
[ -z "$build_only" ] || exit 0

bin_dir=fuzz/target/$host/release
scratch=target/fuzz-corpus
failed=()
run_one() {
    local target=$1
    mkdir -p "$scratch/$target" "fuzz/corpus/$target" "fuzz/artifacts/$target"
    ASAN_OPTIONS="${ASAN_OPTIONS:-} detect_odr_violation=0" \
        "$bin_dir/$target" -max_total_time="$per_target" -print_final_stats=1 \
        -dict="$repo/fuzz/mcp.dict" -artifact_prefix="$repo/fuzz/artifacts/$target/" \
        "$scratch/$target" "fuzz/corpus/$target" >"$logs/$target.log" 2>&1
}
# Two targets at a time (one per core): each runs for the whole SECONDS, the run
# takes half as long.
jobs="${MRTR_FUZZ_JOBS:-2}"
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
