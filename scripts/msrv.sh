#!/usr/bin/env bash
# Checks that the crate builds on its declared rust-version (Cargo.toml), with every
# feature and target, on the locked dependency versions.
#
#   scripts/msrv.sh             # check the workspace on it
#   scripts/msrv.sh --toolchain # only install it if missing, and print its name
#
# Installs that toolchain through rustup (minimal profile) when it is missing.
# CI (.ci/run) uses --toolchain and then builds and runs every test on it, which
# proves more than this check.
set -euo pipefail

cd "$(dirname "$0")/.."

msrv="$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)"
if [ -z "$msrv" ]; then
    echo "error: no rust-version in Cargo.toml" >&2
    exit 1
fi
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
    echo "installing Rust $msrv (the declared rust-version)" >&2
    rustup toolchain install "$msrv" --profile minimal >&2
fi
case "${1:-}" in
    --toolchain) echo "$msrv"; exit 0 ;;
    '') ;;
    *) echo "usage: $0 [--toolchain]" >&2; exit 2 ;;
esac
echo "checking with $(rustup run "$msrv" rustc --version)" >&2
cargo "+$msrv" check --workspace --all-features --all-targets --locked --target-dir target/msrv
cargo "+$msrv" check -p mrtr --no-default-features --lib --locked --target-dir target/msrv
