#!/usr/bin/env bash
# MCP authorization end to end, against a real authorization server
# (node-oidc-provider, scripts/oidc-provider.sh): the harness's smoke test, then
# tests/oauth/e2e.mjs (`mrtr call` logging in to `mrtr serve --oauth-issuer`,
# refresh, another audience, a state moved between users, client credentials,
# --logout, and -H against the embed_axum example), tests/oauth/hostile.mjs
# (`mrtr call` against hostile MCP servers: the OAuth mix-up replayed through
# the real provider, requests aimed at this machine, a client secret pinned to
# its issuer, no credentials over plain http to a remote host, an origin-wide
# resource cached and logged out), then the official Python
# SDK's client logging in with its own OAuth support (scripts/python-sdk.sh),
# once with no scope required and once with --oauth-scope mcp.
#
# Usage: scripts/oauth-e2e.sh
# It builds nothing: the binaries are target/debug/mrtr and
# target/debug/examples/embed_axum, as `cargo test --workspace --all-features`
# and `cargo build --workspace --all-features --examples` leave them (or
# MRTR_BIN and MRTR_EMBED_AXUM). oidc-provider and the Python SDK are installed into .cache/ once.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
for bin in "${MRTR_BIN:-target/debug/mrtr}" "${MRTR_EMBED_AXUM:-target/debug/examples/embed_axum}"; do
  [ -x "$bin" ] || { echo "oauth-e2e: $bin is not built (cargo build --workspace --all-features --bins --examples)" >&2; exit 1; }
done
scripts/oidc-provider.sh install
scripts/python-sdk.sh install
node --test tests/oauth/smoke.mjs tests/oauth/e2e.mjs tests/oauth/hostile.mjs
scripts/python-sdk.sh test
MRTR_PY_OAUTH_SCOPE=mcp scripts/python-sdk.sh test
