#!/usr/bin/env bash
# The official MCP Python SDK (`mcp` on PyPI, pinned below) as a client of
# `mrtr serve --oauth-issuer`, with the SDK's own OAuth support, against
# node-oidc-provider (scripts/oidc-provider.sh).
#
# Usage:
#   scripts/python-sdk.sh install   # venv with the pinned mcp under .cache/python-sdk (once)
#   scripts/python-sdk.sh test      # provider + mrtr serve + tests/oauth/python_client.py
#
# `test` picks a free port, starts the provider for resource
# http://127.0.0.1:PORT/mcp, starts target/debug/mrtr serve as its resource
# server, and runs tests/oauth/python_client.py: the SDK's OAuthClientProvider
# gets a 401, discovers (RFC 9728, RFC 8414), registers (RFC 7591), sends alice
# through tests/oauth/browser.mjs (code + PKCE + resource), and the SDK's Client
# completes test_input_required_result_elicitation and _multi_round.
# Both servers are stopped on exit. The last line is
#   python-sdk-oauth: N passed, M failed
# and the exit status is non-zero on any failure.
#
# Environment:
#   MRTR_BIN            the mrtr binary (default target/debug/mrtr; not built here)
#   MRTR_PY_OAUTH_SCOPE a scope mrtr serve requires (--oauth-scope; default none).
#                       Without one, mrtr's protected resource metadata names no
#                       scopes and the SDK asks for the provider's; with one, the
#                       401 challenge and the metadata name it. (An empty
#                       "scopes_supported": [] once made mcp 2.3.0 register the
#                       scope " offline_access", which the provider refused.)
#   MRTR_PY_SDK_CACHE   venv dir parent (default $REPO/.cache/python-sdk)
#   PYTHON              python used to create the venv (default python3)
#   NODE                node binary (default: node in PATH)
set -euo pipefail

MCP_VERSION=2.3.0

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${MRTR_PY_SDK_CACHE:-$REPO/.cache/python-sdk}
VENV=$CACHE/venv
PY=$VENV/bin/python
PYTHON=${PYTHON:-python3}
MRTR_BIN=${MRTR_BIN:-$REPO/target/debug/mrtr}
STATE=$REPO/target/python-sdk
export NODE=${NODE:-node}

say() { printf 'python-sdk: %s\n' "$*" >&2; }
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

installed() {
  [ -x "$PY" ] && [ "$("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" = "$MCP_VERSION" ]
}

install() {
  installed && return 0
  say "installing mcp==$MCP_VERSION into $VENV"
  mkdir -p "$CACHE"
  [ -x "$PY" ] || "$PYTHON" -m venv "$VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" >&2
  installed || {
    say "install did not produce mcp $MCP_VERSION"
    exit 1
  }
}

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

run_test() {
  local reported=0 serve_pid= serve_log prov_out scope port url rc=0 out summary
  # On any exit: stop what we started; a failure before the client's own
  # summary still ends with the summary line.
  cleanup() {
    local status=$?
    [ -n "$serve_pid" ] && { kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; }
    [ -n "${MRTR_OIDC_PID:-}" ] && "$REPO/scripts/oidc-provider.sh" stop "$MRTR_OIDC_PID" 2>/dev/null || true
    if [ "$reported" = 0 ]; then
      echo "python-sdk-oauth: 0 passed, 1 failed"
      [ "$status" = 0 ] && status=1
    fi
    exit "$status"
  }
  trap cleanup EXIT
  trap 'exit 130' INT TERM

  [ -x "$MRTR_BIN" ] || { say "$MRTR_BIN is missing: build it first (cargo build --bin mrtr)"; exit 1; }
  install
  "$REPO/scripts/oidc-provider.sh" install
  mkdir -p "$STATE"

  port=$(free_port)
  url=http://127.0.0.1:$port/mcp
  prov_out=$(MRTR_OIDC_RESOURCE=$url "$REPO/scripts/oidc-provider.sh" start 2>/dev/null) || {
    say "the provider did not start"
    exit 1
  }
  eval "$prov_out"

  scope=${MRTR_PY_OAUTH_SCOPE-}
  serve_log=$(mktemp "$STATE/serve-XXXXXX.log")
  "$MRTR_BIN" serve --listen "127.0.0.1:$port" --oauth-issuer "$MRTR_OIDC_ISSUER" --oauth-audience "$url" \
    ${scope:+--oauth-scope "$scope"} </dev/null >/dev/null 2>"$serve_log" &
  serve_pid=$!
  for _ in $(seq 100); do
    grep -q 'listening on http://' "$serve_log" && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q 'listening on http://' "$serve_log" || {
    say "mrtr serve did not come up; its log ($serve_log):"
    cat "$serve_log" >&2
    exit 1
  }

  echo "# mcp $MCP_VERSION; provider $MRTR_OIDC_ISSUER; mrtr serve $url${scope:+ --oauth-scope $scope}"
  out=$(mktemp "$STATE/client-XXXXXX.log")
  # The client's summary line is held back so that it stays the last line.
  "$PY" "$REPO/tests/oauth/python_client.py" --url "$url" --issuer "$MRTR_OIDC_ISSUER" 2>&1 |
    tee "$out" | sed -u '/^python-sdk-oauth: /d' || rc=$?
  if [ "$rc" != 0 ]; then
    say "mrtr serve log ($serve_log), last lines:"
    tail -n 20 "$serve_log" >&2
    say "provider log ($MRTR_OIDC_LOG), last lines:"
    tail -n 20 "$MRTR_OIDC_LOG" >&2
  fi
  summary=$(grep -E '^python-sdk-oauth: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)
  rm -f "$out"
  if [ -n "$summary" ]; then
    reported=1
    echo "$summary"
  fi
  exit "$rc"
}

case "${1:-}" in
  install) install ;;
  test) run_test ;;
  *) usage ;;
esac
