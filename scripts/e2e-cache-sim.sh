#!/usr/bin/env bash
# The servers of benches/peers' e2e bench under callgrind: instructions, simulated
# cache misses and branch mispredictions, and `malloc` calls, per two-round flow on
# the servers' thread.
#
#   scripts/e2e-cache-sim.sh [VARIANT ...]      (rmcp, floor, mrtr; default all three)
#
# Why: on the 2-vCPU host of the README's figures, mrtr's extra time per flow in the
# e2e bench is two to three times what its extra instructions would take at the rate
# the rest of the server runs; about 2 µs of it is code fetched again every flow, and
# the rest is instructions that run slower than the server's average, with more
# mispredicted branches and data misses (benches/README.md). Wall-clock runs
# cannot resolve a change of one or two percent on that host; these counts can, and
# they say where it goes.
#
# Simulated: first-level caches of 32 KiB for instructions and for data (8-way,
# 64-byte lines, as on that host), and the last level as that host's 1 MiB 8-way
# second-level cache (callgrind simulates two levels). Valgrind runs every thread on
# one simulated core, so the load driver's own work passes through the same
# simulated caches between the server's requests, as on a host whose two CPUs are
# hyperthreads of one core; where they have caches of their own the absolute miss
# counts are pessimistic. The differences between variants (or between two builds)
# are what to read. Branches go through valgrind's simple predictor model, which
# mispredicts more than a modern CPU; again, read the differences. Instruction counts
# repeat to within about 0.2% from run to run, the other counts to within a tenth.
# SHA-256 runs without the CPU's SHA instructions under valgrind, so its
# instructions count several times too high.
#
# Takes a minute or two for the three (3 s of load each, under valgrind). Needs
# valgrind; installs it with apt-get when missing and running as root.
set -euo pipefail

cd "$(dirname "$0")/.."

die() { echo "e2e-cache-sim: $*" >&2; exit 1; }

if ! command -v valgrind >/dev/null; then
    command -v apt-get >/dev/null || die "valgrind is missing and there is no apt-get to install it"
    [ "$(id -u)" = 0 ] || die "valgrind is missing; installing it needs root (apt-get install -y valgrind)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >&2
fi

variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(rmcp floor mrtr)
for v in "${variants[@]}"; do
    case $v in rmcp | floor | mrtr) ;; *) die "unknown variant $v (rmcp, floor or mrtr)" ;; esac
done

built=$(cd benches/peers && cargo bench --bench e2e --no-run 2>&1) || { echo "$built" >&2; die "the bench did not build"; }
bin=$(echo "$built" | sed -n 's/.*Executable benches\/e2e.rs (\(.*\))$/\1/p' | tail -1)
[ -n "$bin" ] || die "no bench executable in cargo's output"
bin=benches/peers/$bin

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "variant     flows  instructions  I1 misses  L2 code misses  D1 misses  L2 data misses  mispredicted: cond  indirect  malloc"
for v in "${variants[@]}"; do
    E2E_ONLY=$v E2E_SECONDS=3 E2E_PAIRS=1 E2E_CONNECTIONS=4 \
        valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes \
        --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,8,64 \
        --separate-threads=yes --callgrind-out-file="$out/$v.out" "$bin" >"$out/$v.log" 2>&1 ||
        { cat "$out/$v.log" >&2; die "$v: the bench failed under valgrind"; }
    python3 - "$out" "$v" <<'PY'
import glob, re, sys

sys.path.insert(0, "scripts")
from callgrind_counts import malloc_calls

out, v = sys.argv[1], sys.argv[2]
log = open(f"{out}/{v}.log").read()
warm = int(re.search(r"warm-up (\d+) flows", log).group(1))
run = int(re.search(r"^\s+\d+\s+\w+\s+\d+\s+(\d+)", log, re.M).group(1))
# The check before the warm-up: one flow, one more first round, one refused retry.
flows = warm + run + 2.5

best = None
for path in glob.glob(f"{out}/{v}.out-*"):
    text = open(path).read()
    if "::greet::" not in text:  # not the thread that ran the tools
        continue
    events = re.search(r"^events: (.*)$", text, re.M).group(1).split()
    totals = dict(zip(events, map(int, re.search(r"^summary: (.*)$", text, re.M).group(1).split())))
    if best is None or totals["Ir"] > best[0]["Ir"]:
        best = (totals, text)
if best is None:
    sys.exit(f"e2e-cache-sim: {v}: no thread ran the tool")
totals, text = best

mallocs = malloc_calls(text)

per = lambda k: totals.get(k, 0) / flows
print(f"{v:<8} {flows:8.0f}  {per('Ir'):12.0f}  {per('I1mr'):9.0f}  {per('ILmr'):14.0f}"
      f"  {per('D1mr') + per('D1mw'):9.0f}  {per('DLmr') + per('DLmw'):14.0f}"
      f"  {per('Bcm'):18.0f}  {per('Bim'):8.0f}  {mallocs / flows:6.1f}")
PY
done
