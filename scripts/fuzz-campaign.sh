#!/usr/bin/env bash
# A fuzzing campaign: every cargo-fuzz target in fuzz/, one after another, for a
# given time or number of executions each, then a table of what each did.
#
#   scripts/fuzz-campaign.sh [OPTIONS] [SECONDS_PER_TARGET | --runs N] [TARGET...]
#
#   SECONDS_PER_TARGET   run each target this long (default 600)
#   --runs N             run each target for N executions instead (e.g. 10000000)
#   --jobs N             N parallel libFuzzer jobs per target (-jobs=N -workers=N;
#                        default 1); the counts are summed over the jobs
#   --sanitizer S        address (cargo-fuzz's default) or none (default: none,
#                        several times the executions per second; the crate forbids
#                        unsafe code, and scripts/fuzz.sh keeps the address
#                        sanitizer for the CI smoke run)
#   --nice N             niceness of the fuzzers (default 15: other builds go first)
#   TARGET...            only these targets, in this order (default: `cargo fuzz list`)
#
# Each target starts from its committed seeds (fuzz/corpus/TARGET, read only) and
# grows its own corpus in target/fuzz-campaign/corpus/TARGET, kept between
# campaigns; every target gets the dictionary fuzz/mcp.dict. Logs go to
# target/fuzz-campaign/TARGET.log, crash inputs to fuzz/artifacts/TARGET/, and the
# table to target/fuzz-campaign/summary.md. Per target it prints executions, wall
# time, executions per second, the final coverage (libFuzzer's `cov:` edges and
# `ft:` features from its last status line), the corpus size and the crashes.
# Exits non-zero when any target crashed or failed.
set -euo pipefail

usage() {
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

seconds=600
runs=""
jobs=1
sanitizer=none
niceness=15
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="${2:-}"; shift 2 ;;
        --jobs) jobs="${2:-}"; shift 2 ;;
        --sanitizer) sanitizer="${2:-}"; shift 2 ;;
        --nice) niceness="${2:-}"; shift 2 ;;
        -h | --help) usage ;;
        -*) usage ;;
        *[!0-9]*) targets+=("$1"); shift ;;
        *) seconds="$1"; shift ;;
    esac
done
for n in "$seconds" "$jobs" "$niceness" ${runs:+"$runs"}; do
    case "$n" in '' | *[!0-9]*) usage ;; esac
done
case "$sanitizer" in address | none) ;; *) usage ;; esac

cd "$(dirname "$0")/.."
root="$PWD"
out="$root/target/fuzz-campaign"
mkdir -p "$out/corpus"

if [ "${#targets[@]}" -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
if [ "${#targets[@]}" -eq 0 ]; then
    echo "error: no fuzz targets found in fuzz/" >&2
    exit 1
fi

if [ -n "$runs" ]; then
    budget=(-runs="$runs")
    what="$runs executions"
else
    budget=(-max_total_time="$seconds")
    what="${seconds}s"
fi
parallel=()
if [ "$jobs" -gt 1 ]; then
    parallel=(-jobs="$jobs" -workers="$jobs")
fi

echo "== building the fuzz targets (sanitizer: $sanitizer; log: $out/build.log)" >&2
nice -n "$niceness" cargo +nightly fuzz build -s "$sanitizer" >"$out/build.log" 2>&1 || {
    tail -n 40 "$out/build.log" >&2
    exit 1
}

# The sum of `key: N` over the final stats of every log given.
stat_sum() {
    local key="$1"
    shift
    awk -v k="stat::$key:" '$1 == k { s += $2 } END { print s + 0 }' "$@"
}

summary="$out/summary.md"
{
    echo "| target | executions | wall s | exec/s | cov | ft | corpus | crashes |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
} >"$summary"
failed=()
for target in "${targets[@]}"; do
    log="$out/$target.log"
    corpus="$out/corpus/$target"
    artifacts="$root/fuzz/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    seeds=()
    if [ -d "$root/fuzz/corpus/$target" ]; then
        seeds=("$root/fuzz/corpus/$target")
    fi
    before=$(find "$artifacts" -type f | wc -l)
    echo "== $target: $what (log: $log)" >&2
    start=$(date +%s)
    status=0
    # With -jobs, libFuzzer writes each job's output to fuzz-N.log in the working directory.
    (cd "$out" && rm -f fuzz-*.log &&
        nice -n "$niceness" cargo +nightly fuzz run --fuzz-dir "$root/fuzz" -s "$sanitizer" "$target" \
            "$corpus" "${seeds[@]}" -- \
            "${budget[@]}" "${parallel[@]}" -print_final_stats=1 -dict="$root/fuzz/mcp.dict" \
            -artifact_prefix="$artifacts/") >"$log" 2>&1 || status=$?
    wall=$(($(date +%s) - start))
    logs=("$log")
    if [ "$jobs" -gt 1 ]; then
        # The main log repeats each job's log as the job ends: count the jobs' own.
        logs=()
        for f in "$out"/fuzz-*.log; do
            [ -e "$f" ] || continue
            mv "$f" "$out/$target.job-${f##*/fuzz-}"
            logs+=("$out/$target.job-${f##*/fuzz-}")
        done
    fi
    execs=$(stat_sum number_of_executed_units "${logs[@]}" /dev/null)
    rate=$((execs / (wall > 0 ? wall : 1)))
    # The last status line of the (first) job: "#N DONE cov: C ft: F corp: U/S ...".
    last=$(grep -hE '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "${logs[@]}" /dev/null | tail -n 1 || true)
    cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$last")
    units=$(find "$corpus" -type f | wc -l)
    crashes=$(($(find "$artifacts" -type f | wc -l) - before))
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' \
        "$target" "$execs" "$wall" "$rate" "${cov:-?}" "${ft:-?}" "$units" "$crashes" >>"$summary"
    printf '   %s executions in %ss (%s/s), cov %s ft %s, corpus %s, crashes %s\n' \
        "$execs" "$wall" "$rate" "${cov:-?}" "${ft:-?}" "$units" "$crashes" >&2
    if [ "$status" -ne 0 ] || [ "$crashes" -gt 0 ]; then
        grep -hE -A12 'panicked|ERROR: libFuzzer|SUMMARY' "${logs[@]}" | head -n 40 >&2 || tail -n 40 "$log" >&2
        failed+=("$target")
    fi
done

echo >&2
cat "$summary" >&2
if [ "${#failed[@]}" -gt 0 ]; then
    echo "error: targets that crashed or failed: ${failed[*]} (inputs in fuzz/artifacts/; reproduce with" >&2
    echo "       cargo +nightly fuzz run -s $sanitizer TARGET fuzz/artifacts/TARGET/crash-...)" >&2
    exit 1
fi
echo "all ${#targets[@]} targets ran ($what each) without a crash" >&2
