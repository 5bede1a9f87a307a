#!/usr/bin/env bash
# Checks that the bare core (no default features) builds for wasm32-unknown-unknown,
# a target with no operating system, and that nothing in it reads the operating
# system's randomness or brings an async runtime, HTTP or TLS: no tokio, hyper, axum,
# rand, getrandom, rustls, ring or OpenSSL among its normal dependencies for that target.
#
#   scripts/wasm-check.sh
#
# Installs the target through rustup when it is missing.
set -euo pipefail

cd "$(dirname "$0")/.."

target=wasm32-unknown-unknown
if ! rustup target list --installed | grep -qx "$target"; then
    echo "installing the $target target" >&2
    rustup target add "$target"
fi

echo "building the bare core for $target" >&2
cargo build -p mrtr --lib --no-default-features --locked --target "$target"

tree="$(cargo tree -p mrtr --no-default-features -e normal --locked --target "$target" --prefix none)"
if forbidden="$(grep -E '^(tokio|hyper|hyper-util|axum|rand|rand_core|getrandom|rustls|rustls-native-certs|hyper-rustls|tokio-rustls|ring|aws-lc-rs|aws-lc-sys|openssl|openssl-sys) ' <<<"$tree")"; then
    echo "error: the bare core for $target depends on:" >&2
    sort -u <<<"$forbidden" >&2
    exit 1
fi
echo "ok: the bare core builds for $target without tokio, hyper, axum, rand, getrandom or TLS" >&2
