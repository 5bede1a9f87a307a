#!/usr/bin/env bash
# `mrtr audit` against `mrtr serve` and the peer servers on other SDKs
# (scripts/audit-peers.sh: the Python SDK, the TypeScript SDK v2, rmcp), each
# with every optional input: a second user, a fleet instance that shares the
# key, an instance with another key, and one whose states lapse after 2 s.
#
# Usage:
#   scripts/audit.sh [SERVER...]     SERVER: mrtr, python, typescript, rmcp (default: all)
#   scripts/audit.sh --table         also print the README's table of what each reports
#
# `mrtr serve` must have no finding at or above low. A peer's report must fail
# exactly the checks listed for it below (what its SDK's own protection, used as
# documented, leaves open): a change either way fails this script, so that the
# audit can neither start raising false alarms nor stop seeing what it saw.
# It builds nothing: target/debug/mrtr and target/debug/examples/rmcp_audit_peer
# are what `cargo build --workspace --all-features --bins --examples` leaves
# (or MRTR_BIN). The reports go to target/audit/NAME.json.
# The last line is `audit: N passed, M failed` (servers audited).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
MRTR_BIN=${MRTR_BIN:-$REPO/target/debug/mrtr}
OUT=$REPO/target/audit
TTL=2

# The checks each peer fails, as its SDK's documented protection leaves them.
declare -A EXPECTED=(
  [mrtr]=""
  [python]="answers-validated capability-gate error-channels"
  [typescript]="answers-validated binding-arguments binding-tool confidentiality"
  [rmcp]="answers-validated capability-gate error-channels"
)

table=""
servers=()
for a in "$@"; do
  case "$a" in
    --table) table=1 ;;
    mrtr | python | typescript | rmcp) servers+=("$a") ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
[ ${#servers[@]} -gt 0 ] || servers=(mrtr python typescript rmcp)

[ -x "$MRTR_BIN" ] || { echo "audit: $MRTR_BIN is not built" >&2; exit 1; }
mkdir -p "$OUT"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# mrtr_instance KEY TTL LOG: starts `mrtr serve` with the principal in X-User;
# sets URL. (Not in a $(...) subshell: the pid must reach `pids`.)
mrtr_instance() {
  local key=$1 ttl=$2 log=$3
  MRTR_KEYS=$key "$MRTR_BIN" serve --listen 127.0.0.1:0 --principal-header X-User \
    --state-ttl "$ttl" --clock-skew 0 </dev/null >/dev/null 2>"$log" &
  pids+=($!)
  local i
  for i in $(seq 200); do
    if grep -q 'listening on http://' "$log"; then
      URL=$(grep -o 'http://[0-9.:]*/mcp' "$log" | head -n 1)
      return 0
    fi
    sleep 0.05
  done
  echo "audit: mrtr serve did not start: $(cat "$log")" >&2
  return 1
}

# peer_instance NAME KEY TTL: starts a peer; sets URL.
peer_instance() {
  local facts
  facts=$(PEER_STATE_KEY=$2 PEER_STATE_TTL=$3 PEER_PORT=0 scripts/audit-peers.sh start "$1")
  URL=$(sed -n 's/^PEER_URL=//p' <<<"$facts")
  pids+=("$(sed -n 's/^PEER_PID=//p' <<<"$facts")")
}

passed=0
failed=0
declare -A got
for s in "${servers[@]}"; do
  if [ "$s" = mrtr ]; then
    k1=$("$MRTR_BIN" keygen)
    k2=$("$MRTR_BIN" keygen)
    log=$OUT/mrtr-serve.log
    mrtr_instance "$k1" 600 "$log"; main=$URL
    mrtr_instance "$k1" 600 "$OUT/mrtr-peer.log"; peer=$URL
    mrtr_instance "$k2" 600 "$OUT/mrtr-foreign.log"; foreign=$URL
    mrtr_instance "$k1" "$TTL" "$OUT/mrtr-ttl.log"; short=$URL
    who=(-H 'X-User: alice' --as-other 'X-User: bob' --log "$log")
    fail_on=low
  else
    peer_instance "$s" audit-key-1 600; main=$URL
    peer_instance "$s" audit-key-1 600; peer=$URL
    peer_instance "$s" audit-key-2 600; foreign=$URL
    peer_instance "$s" audit-key-1 "$TTL"; short=$URL
    who=(-H 'Authorization: Bearer alice-token' --as-other 'Authorization: Bearer bob-token')
    fail_on=critical
  fi
  echo "== mrtr audit $main ($s)"
  rc=0
  "$MRTR_BIN" audit "$main" "${who[@]}" --peer-url "$peer" --foreign-url "$foreign" \
    --ttl-url "$short" --ttl $((TTL + 1)) --format json --fail-on "$fail_on" \
    >"$OUT/$s.json" 2>"$OUT/$s.err" || rc=$?
  if [ "$rc" -gt 1 ]; then
    echo "audit: the audit of $s did not run (exit $rc):" >&2
    cat "$OUT/$s.err" >&2
    failed=$((failed + 1))
    continue
  fi
  fails=$(python3 - "$OUT/$s.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "mrtr-audit/1", r["schema"]
print(" ".join(sorted(c["id"] for c in r["checks"] if c["status"] == "fail")))
PY
)
  # The versions the audit found served, of both eras; mrtr serve serves both.
  versions=$(python3 - "$OUT/$s.json" <<'PY'
import json, sys
print(" and ".join(json.load(open(sys.argv[1]))["server"].get("versions", [])))
PY
)
  if [ "$s" = mrtr ] && [ "$versions" != "2026-07-28 and 2025-11-25" ]; then
    echo "audit: mrtr serve was found to serve [$versions], not 2026-07-28 and 2025-11-25" >&2
    failed=$((failed + 1))
  fi
  skips=$(python3 - "$OUT/$s.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(f'{c["id"]} ({c["detail"]})' for c in r["checks"] if c["status"] == "skip"))
PY
)
  got[$s]=$fails
  want=${EXPECTED[$s]}
  if [ "$fails" = "$want" ] && { [ "$s" != mrtr ] || [ "$rc" = 0 ]; }; then
    echo "ok: $s (protocol ${versions:-unknown}) fails exactly: ${fails:-nothing}${skips:+; skipped: $skips}"
    passed=$((passed + 1))
  else
    echo "audit: $s failed [${fails}], expected [${want}] (exit $rc); the report:" >&2
    python3 -m json.tool "$OUT/$s.json" >&2 || cat "$OUT/$s.json" >&2
    failed=$((failed + 1))
  fi
  cleanup
  pids=()
done

if [ -n "$table" ]; then
  python3 - "$OUT" "${servers[@]}" <<'PY'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
reports = {n: json.load(open(f"{out}/{n}.json")) for n in names}
ids = [c["id"] for c in reports[names[0]]["checks"]]
print("| check | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
mark = {"pass": "pass", "skip": "skip"}
for i in ids:
    cells = []
    for n in names:
        c = next(c for c in reports[n]["checks"] if c["id"] == i)
        if c["status"] == "fail":
            sev = max((f["severity"] for f in reports[n]["findings"] if f["check"] == i),
                      key=["info", "low", "medium", "high", "critical"].index)
            cells.append(f"**{sev}**")
        else:
            cells.append(mark[c["status"]])
    print(f"| `{i}` | " + " | ".join(cells) + " |")
PY
fi
echo "audit: $passed passed, $failed failed"
[ "$failed" = 0 ]
