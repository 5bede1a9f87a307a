#!/usr/bin/env bash
# MRTR peer servers on other SDKs, for running `mrtr audit` against: each uses its
# SDK's own requestState protection exactly as that SDK documents it (neither
# hardened nor weakened), serves Streamable HTTP (MCP 2026-07-28) on loopback,
# and implements the same fixture surface:
#   tool   confirm_action {item}  asks form key `confirm` (boolean `confirm`),
#                                 then "done: <item>" / "cancelled: <item>"
#   tool   ask_name {}            asks form key `name` (string), then "Hello, <name>!"
#   prompt review                 asks form key `focus` (string), then one user message
#   toy auth: `Authorization: Bearer alice-token` = alice, `Bearer bob-token` = bob,
#   none (or another token) = anonymous; states bound to the principal the SDK's way.
#
# Peers (NAME):
#   python      tests/audit/peers/python_peer.py on mcp 2.3.0 (PyPI): MCPServer +
#               RequestStateSecurity (AES-256-GCM, "v1." + kid; TTL; principal,
#               request and audience bound by the SDK's RequestStateBoundary)
#   typescript  tests/audit/peers/ts_peer.mjs on @modelcontextprotocol/server 2.4.0
#               + @modelcontextprotocol/node 2.1.2 (npm): createRequestStateCodec
#               (HMAC-SHA256, "v1."; TTL; bind = method + client id)
#   rmcp        target/debug/examples/rmcp_audit_peer, rmcp 3.11's RequestStateCodec
#               ("rs2", key id k1, HMAC-SHA256; TTL; associated data = principal +
#               method + name + arguments). Built by
#               `cargo build -p mrtr-rmcp --example rmcp_audit_peer`, never here.
#
# Usage:
#   scripts/audit-peers.sh install       # Python venv (scripts/python-sdk.sh install)
#                                        # and the npm packages into .cache/ts-peer;
#                                        # idempotent and quiet
#   scripts/audit-peers.sh start NAME    # start one in the background, wait until it
#                                        # listens, print lines to eval:
#                                        #   PEER_URL=http://127.0.0.1:PORT/mcp
#                                        #   PEER_PID=...   PEER_LOG=...
#   scripts/audit-peers.sh stop PID      # stop a peer started by `start`
#   scripts/audit-peers.sh check NAME    # start NAME, prove the flow and the
#                                        # tamper refusal with plain HTTP, stop it
# e.g.  eval "$(scripts/audit-peers.sh start rmcp)"; mrtr audit "$PEER_URL"; \
#       scripts/audit-peers.sh stop "$PEER_PID"
#
# Environment (read by the peers):
#   PEER_STATE_KEY  state key; each peer derives its SDK's key form from it:
#                   SHA-256(PEER_STATE_KEY), 32 raw bytes, everywhere. Two peers of
#                   one SDK with the same value share states (a fleet); different
#                   values are foreign keys. Unset: a per-process key.
#   PEER_STATE_TTL  state TTL in seconds (defaults: python 600, typescript 600,
#                   rmcp 600; rmcp takes 0 as "no TTL", rmcp's own default)
#   PEER_PORT       port on 127.0.0.1 (default 0: a free port)
# And by this script:
#   AUDIT_PEERS_STATE  logs (default $REPO/target/audit-peers)
#   AUDIT_PEERS_WAIT   seconds `start` waits for the listening line (default 60)
#   NODE               node binary (default: node in PATH)
set -euo pipefail

TS_SERVER_VERSION=2.4.0
TS_NODE_VERSION=2.1.2
TS_ZOD_VERSION=4.6.7

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=$REPO/.cache/python-sdk/venv/bin/python
TS_DIR=$REPO/.cache/ts-peer
RMCP_BIN=$REPO/target/debug/examples/rmcp_audit_peer
STATE=${AUDIT_PEERS_STATE:-$REPO/target/audit-peers}
WAIT=${AUDIT_PEERS_WAIT:-60}
NODE=${NODE:-node}

say() { printf 'audit-peers: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

ts_installed() {
  local f=$TS_DIR/node_modules/@modelcontextprotocol
  [ -f "$f/server/package.json" ] && [ -f "$f/node/package.json" ] &&
    grep -q "\"version\": \"$TS_SERVER_VERSION\"" "$f/server/package.json" &&
    grep -q "\"version\": \"$TS_NODE_VERSION\"" "$f/node/package.json"
}

install_ts() {
  ts_installed && return 0
  say "installing @modelcontextprotocol/server@$TS_SERVER_VERSION, @modelcontextprotocol/node@$TS_NODE_VERSION into $TS_DIR"
  mkdir -p "$TS_DIR"
  cat >"$TS_DIR/package.json" <<EOF
{
  "name": "mrtr-ts-audit-peer",
  "private": true,
  "type": "module",
  "dependencies": {
    "@modelcontextprotocol/server": "$TS_SERVER_VERSION",
    "@modelcontextprotocol/node": "$TS_NODE_VERSION",
    "zod": "$TS_ZOD_VERSION"
  }
}
EOF
  (cd "$TS_DIR" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  ts_installed || die "npm install did not produce the pinned packages in $TS_DIR"
}

install() {
  "$REPO/scripts/python-sdk.sh" install
  install_ts
}

# The command line of peer NAME.
peer_cmd() {
  case "$1" in
    python)
      [ -x "$PY" ] || die "no Python venv: run scripts/audit-peers.sh install"
      CMD=("$PY" "$REPO/tests/audit/peers/python_peer.py") ;;
    typescript)
      ts_installed || die "no TypeScript SDK in $TS_DIR: run scripts/audit-peers.sh install"
      CMD=("$NODE" "$REPO/tests/audit/peers/ts_peer.mjs") ;;
    rmcp)
      [ -x "$RMCP_BIN" ] || die "no $RMCP_BIN: cargo build -p mrtr-rmcp --example rmcp_audit_peer"
      CMD=("$RMCP_BIN") ;;
    *) die "unknown peer '$1' (python|typescript|rmcp)" ;;
  esac
}

# Starts peer $1; sets PEER_URL, PEER_PID, PEER_LOG.
start_peer() {
  local name=$1 deadline line
  peer_cmd "$name"
  mkdir -p "$STATE"
  PEER_LOG=$(mktemp "$STATE/$name.XXXXXX.log")
  TS_PEER_DIR=$TS_DIR nohup "${CMD[@]}" >"$PEER_LOG" 2>&1 </dev/null &
  PEER_PID=$!
  deadline=$((SECONDS + WAIT))
  while :; do
    line=$(grep -m1 -o 'listening on http://127\.0\.0\.1:[0-9]*/mcp' "$PEER_LOG" 2>/dev/null || true)
    [ -n "$line" ] && break
    if ! kill -0 "$PEER_PID" 2>/dev/null; then
      cat "$PEER_LOG" >&2
      die "$name peer exited before listening"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill "$PEER_PID" 2>/dev/null || true
      cat "$PEER_LOG" >&2
      die "$name peer did not listen within ${WAIT}s"
    fi
    sleep 0.1
  done
  PEER_URL=${line#listening on }
}

stop_peer() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# The proof: round 1 asks with a requestState, the retry completes, a state with
# one character changed is refused. Plain HTTP from Python's standard library.
check_flow() {
  local python
  python=$(command -v python3 || echo "$PY")
  "$python" - "$1" "$2" <<'EOF'
import json, sys, urllib.request, urllib.error

name, url = sys.argv[1], sys.argv[2]
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "audit-peers-check", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
ITEM = "audit-item"
ids = iter(range(1, 100))

def call(params):
    body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
            "params": {"_meta": META, "name": "confirm_action", "arguments": {"item": ITEM}, **params}}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "confirm_action"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, ctype, raw = r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        status, ctype, raw = e.code, e.headers.get("Content-Type", ""), e.read().decode()
    if "text/event-stream" in ctype:
        datas = [l[5:].strip() for l in raw.splitlines() if l.startswith("data:") and l[5:].strip()]
        raw = datas[-1] if datas else ""
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, {"unparsed": raw[:200]}

def short(s):
    return s[:12] + "..." if isinstance(s, str) and len(s) > 12 else s

fails = 0
def verdict(ok, what):
    global fails
    if not ok:
        fails += 1
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")

print(f"{name} peer at {url}")
st, r1 = call({})
res = r1.get("result", {})
state = res.get("requestState")
print(f"  round 1: HTTP {st}, resultType={res.get('resultType')}, "
      f"inputRequests={sorted(res.get('inputRequests') or {})}, requestState={short(state)} ({len(state or '')} chars)")
verdict(res.get("resultType") == "input_required" and "confirm" in (res.get("inputRequests") or {})
        and isinstance(state, str), "round 1 is input_required asking `confirm`, with a requestState")

answer = {"confirm": {"action": "accept", "content": {"confirm": True}}}
if isinstance(state, str):
    st, r2 = call({"inputResponses": answer, "requestState": state})
    res2 = r2.get("result", {})
    texts = [c.get("text") for c in res2.get("content", []) if isinstance(c, dict)]
    print(f"  retry:   HTTP {st}, resultType={res2.get('resultType')}, text={texts}, error={r2.get('error')}")
    verdict(res2.get("resultType", "complete") == "complete" and f"done: {ITEM}" in texts,
            f"the retry completes with 'done: {ITEM}'")

    # A fresh state, one character changed (in the middle, to another base64url character).
    st, r1b = call({})
    fresh = r1b.get("result", {}).get("requestState", state)
    i = len(fresh) // 2
    while i < len(fresh) - 1 and not fresh[i].isalnum():
        i += 1
    sub = "A" if fresh[i] != "A" else "B"
    tampered = fresh[:i] + sub + fresh[i + 1:]
    st, r3 = call({"inputResponses": answer, "requestState": tampered})
    err = r3.get("error")
    print(f"  tamper:  requestState={short(fresh)} char {i} {fresh[i]!r}->{sub!r}: HTTP {st}, "
          + (f"error code={err.get('code')} message={err.get('message')!r} data={err.get('data')}" if err
             else f"result={json.dumps(r3.get('result'))[:160]}"))
    verdict(err is not None and "result" not in r3, "the tampered state is refused with a JSON-RPC error")

print(f"audit-peers check {name}: {'ok' if fails == 0 else f'{fails} failed'}")
sys.exit(1 if fails else 0)
EOF
}

check() {
  local name=$1 rc=0
  start_peer "$name"
  trap 'stop_peer "$PEER_PID"' EXIT
  check_flow "$name" "$PEER_URL" || rc=$?
  stop_peer "$PEER_PID"
  trap - EXIT
  [ "$rc" = 0 ] || { say "peer log: $PEER_LOG"; }
  return "$rc"
}

case "${1:-}" in
  install) install ;;
  start)
    [ $# -eq 2 ] || usage
    start_peer "$2"
    printf 'PEER_URL=%s\nPEER_PID=%s\nPEER_LOG=%s\n' "$PEER_URL" "$PEER_PID" "$PEER_LOG" ;;
  stop)
    [ $# -eq 2 ] || usage
    stop_peer "$2" ;;
  check)
    [ $# -eq 2 ] || usage
    check "$2" ;;
  *) usage ;;
esac
