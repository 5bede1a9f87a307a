#!/usr/bin/env bash
# Checks the `rmcp` feature against the lowest rmcp the crate declares and the
# newest one its lock file resolves.
#
#   scripts/rmcp-versions.sh [VERSION...]
#
# Without arguments: the lowest version (the `rmcp` requirement in
# [dependencies] of Cargo.toml, as X.Y.0) and the locked one (the newest; every
# other CI step builds and tests that one too).
#
# A VERSION is checked in a temporary copy of the crate (the worktree and its
# Cargo.lock are never touched): the copy's rmcp requirements (the dependency and
# the dev-dependency) admit VERSION, its lock file is moved with
# `cargo update -p rmcp --precise VERSION` (and rmcp-macros with it), and there
# the library is checked with and without default features, and the rmcp tests
# (tests/rmcp_http.rs, tests/rmcp_legacy.rs: rmcp's real server and client over
# HTTP) run. Build output is kept in target/rmcp-versions.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$PWD

req="$(sed -n '/^\[dependencies\]/,/^\[/{s/^rmcp = { version = "\([0-9.]*\)".*/\1/p}' Cargo.toml)"
if [ -z "$req" ]; then
    echo "error: no rmcp requirement in [dependencies] of Cargo.toml" >&2
    exit 1
fi
case "$req" in
    *.*.*) lowest=$req ;;
    *.*) lowest=$req.0 ;;
    *) lowest=$req.0.0 ;;
esac
locked_version() {
    awk -v name="$1" '$0 == "name = \"" name "\"" {getline; sub(/^version = "/, ""); sub(/"$/, ""); print; exit}' "$2"
}
locked="$(locked_version rmcp Cargo.lock)"

if [ $# -gt 0 ]; then
    versions=("$@")
else
    versions=("$lowest")
    echo "rmcp $locked (locked, the newest): cargo check --features rmcp" >&2
    cargo check --quiet --locked --lib --no-default-features --features rmcp
    cargo check --quiet --locked --lib --features rmcp
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CARGO_TARGET_DIR="$repo/target/rmcp-versions"
for v in "${versions[@]}"; do
    echo "rmcp $v: a copy of the crate with rmcp and rmcp-macros pinned to $v" >&2
    rm -rf "$tmp/crate"
    mkdir -p "$tmp/crate"
    cp -r "$repo/src" "$repo/examples" "$repo/benches" "$repo/tests" "$repo/Cargo.toml" \
        "$repo/Cargo.lock" "$repo/README.md" "$tmp/crate/"
    sed -i "s/^rmcp = { version = \"[0-9.]*\"/rmcp = { version = \"$v\"/" "$tmp/crate/Cargo.toml"
    (
        cd "$tmp/crate"
        cargo update --quiet -p rmcp --precise "$v"
        cargo update --quiet -p rmcp-macros --precise "$v"
        for name in rmcp rmcp-macros; do
            got="$(locked_version "$name" Cargo.lock)"
            [ "$got" = "$v" ] || {
                echo "error: the copy resolved $name $got, not $v" >&2
                exit 1
            }
        done
        echo "rmcp $v: cargo check --lib --features rmcp (with and without default features)" >&2
        cargo check --quiet --locked --lib --no-default-features --features rmcp
        cargo check --quiet --locked --lib --features rmcp
        echo "rmcp $v: cargo test --all-features --test rmcp_http --test rmcp_legacy" >&2
        cargo test --quiet --locked --all-features --test rmcp_http --test rmcp_legacy
    )
    echo "rmcp $v: ok" >&2
done
