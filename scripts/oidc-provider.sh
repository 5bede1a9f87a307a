#!/usr/bin/env bash
# A real OAuth 2.1 / OpenID authorization server for end-to-end tests:
# node-oidc-provider, configured by tests/oauth/provider.mjs.
#
# Usage:
#   scripts/oidc-provider.sh install   # npm install of the pinned oidc-provider (once)
#   scripts/oidc-provider.sh start     # start one in the background (installs if needed)
#   scripts/oidc-provider.sh stop [PID]  # stop PID, else $MRTR_OIDC_PID, else all started ones
#   scripts/oidc-provider.sh test      # run the smoke test tests/oauth/smoke.mjs
#
# `start` waits until the discovery document answers, then prints lines to eval:
#   MRTR_OIDC_ISSUER=http://127.0.0.1:PORT  MRTR_OIDC_PORT  MRTR_OIDC_PID  MRTR_OIDC_LOG
#   MRTR_OIDC_RESOURCE (comma separated)  MRTR_OIDC_AT_TTL
#   MRTR_OIDC_CLIENT_ID=mrtr-ci  MRTR_OIDC_CLIENT_SECRET (the client credentials client)
# e.g.  eval "$(scripts/oidc-provider.sh start)"; ...; scripts/oidc-provider.sh stop
# Test users: alice / alice-password, bob / bob-password (sub = alice, bob);
# play them with tests/oauth/browser.mjs.
#
# Environment:
#   MRTR_OIDC_RESOURCE  resource indicators the provider issues JWT access tokens
#                       for (aud = the resource); comma or space separated, or
#                       several lines (default http://127.0.0.1:8808/mcp). Any
#                       other resource is refused with invalid_target.
#   MRTR_OIDC_AT_TTL    access token lifetime in seconds (default 300)
#   MRTR_OIDC_PORT      listening port on 127.0.0.1 (default: a free one)
#   MRTR_OIDC_CLIENT_SECRET  secret of static client mrtr-ci (default mrtr-ci-test-only-secret)
#   MRTR_OIDC_JWT_ALG   access token signature: RS256 (default), ES256 or EdDSA
#   MRTR_OIDC_CACHE     install dir (default $REPO/.cache/oidc-provider)
#   MRTR_OIDC_STATE     logs and pid files (default $REPO/target/oidc-provider)
#   NODE                node binary (default: node in PATH)
set -euo pipefail

OIDC_PROVIDER_VERSION=9.13.3

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export MRTR_OIDC_CACHE=${MRTR_OIDC_CACHE:-$REPO/.cache/oidc-provider}
STATE=${MRTR_OIDC_STATE:-$REPO/target/oidc-provider}
NODE=${NODE:-node}

say() { printf 'oidc-provider: %s\n' "$*" >&2; }
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

installed() {
  local v
  v=$("$NODE" -p 'require(process.argv[1]).version' \
    "$MRTR_OIDC_CACHE/node_modules/oidc-provider/package.json" 2>/dev/null) || return 1
  [ "$v" = "$OIDC_PROVIDER_VERSION" ]
}

install() {
  installed && return 0
  command -v npm >/dev/null || {
    say "npm is required to install oidc-provider"
    exit 1
  }
  say "installing oidc-provider@$OIDC_PROVIDER_VERSION into $MRTR_OIDC_CACHE"
  mkdir -p "$MRTR_OIDC_CACHE"
  npm install --prefix "$MRTR_OIDC_CACHE" --no-audit --no-fund --save-exact --loglevel=error \
    "oidc-provider@$OIDC_PROVIDER_VERSION" >/dev/null # errors still go to stderr
  installed || {
    say "install did not produce oidc-provider $OIDC_PROVIDER_VERSION"
    exit 1
  }
}

start() {
  install
  mkdir -p "$STATE"
  local log pid issuer=
  log=$(mktemp "$STATE/provider-XXXXXX.log")
  MRTR_OIDC_RESOURCE=$(printf '%s' "${MRTR_OIDC_RESOURCE:-http://127.0.0.1:8808/mcp}" | tr -s ' \n\t,' ',' | sed 's/^,//; s/,$//')
  export MRTR_OIDC_RESOURCE
  nohup "$NODE" "$REPO/tests/oauth/provider.mjs" </dev/null >"$log" 2>&1 &
  pid=$!
  echo "$pid" >"${log%.log}.pid"
  for _ in $(seq 200); do
    issuer=$(grep -o -m1 'listening on http://[^ ]*' "$log" 2>/dev/null | sed 's/^listening on //' || true)
    if [ -n "$issuer" ] && "$NODE" -e 'fetch(process.argv[1]).then((r) => r.json())
        .then((d) => process.exit(d.issuer === process.argv[2] ? 0 : 1), () => process.exit(1))' \
      "$issuer/.well-known/openid-configuration" "$issuer" 2>/dev/null; then
      break
    fi
    issuer=
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$issuer" ]; then
    say "the provider did not come up; its log ($log):"
    cat "$log" >&2
    kill "$pid" 2>/dev/null || true
    rm -f "${log%.log}.pid"
    exit 1
  fi
  say "up at $issuer (pid $pid, log $log)"
  printf 'MRTR_OIDC_ISSUER=%s\n' "$issuer"
  printf 'MRTR_OIDC_PORT=%s\n' "${issuer##*:}"
  printf 'MRTR_OIDC_PID=%s\n' "$pid"
  printf 'MRTR_OIDC_LOG=%s\n' "$log"
  printf 'MRTR_OIDC_RESOURCE=%s\n' "$MRTR_OIDC_RESOURCE"
  printf 'MRTR_OIDC_AT_TTL=%s\n' "${MRTR_OIDC_AT_TTL:-300}"
  printf 'MRTR_OIDC_CLIENT_ID=mrtr-ci\n'
  printf 'MRTR_OIDC_CLIENT_SECRET=%s\n' "${MRTR_OIDC_CLIENT_SECRET:-mrtr-ci-test-only-secret}"
}

# stop_pid PID: TERM (then KILL) PID if it is one of our providers.
stop_pid() {
  local pid=$1
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | grep -q 'tests/oauth/provider\.mjs'; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    say "stopped pid $pid"
  fi
  { grep -lx "$pid" "$STATE"/provider-*.pid 2>/dev/null || true; } | xargs -r rm -f
}

stop() {
  local pid=${1:-${MRTR_OIDC_PID:-}} f
  if [ -n "$pid" ]; then
    stop_pid "$pid"
    return
  fi
  for f in "$STATE"/provider-*.pid; do
    [ -e "$f" ] && stop_pid "$(cat "$f")"
  done
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop "${2:-}" ;;
  test)
    install
    cd "$REPO"
    exec "$NODE" --test tests/oauth/smoke.mjs
    ;;
  *) usage ;;
esac
