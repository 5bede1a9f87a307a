#!/usr/bin/env bash
# Checks mrtr-rmcp against the lowest rmcp it declares and the newest one the
# lock file resolves.
#
#   scripts/rmcp-versions.sh [VERSION...]
#
# Without arguments: the lowest version (the `rmcp` requirement in
# [dependencies] of crates/mrtr-rmcp/Cargo.toml, as X.Y.0) and the locked one (the newest; every
# other CI step builds and tests that one too).
#
# A VERSION is checked in a temporary copy of the workspace (the worktree and its
# Cargo.lock are never touched): the copy's rmcp requirements (the dependency and
# the dev-dependency) admit VERSION, its lock file is moved with
# `cargo update -p rmcp --precise VERSION` (and rmcp-macros with it), and there
# the library is checked with and without default features, and the rmcp tests
# (crates/mrtr-rmcp/tests/rmcp: rmcp's real server and client over HTTP) run. Build output is kept in target/rmcp-versions.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$PWD

manifest=crates/mrtr-rmcp/Cargo.toml
req="$(sed -n '/^\[dependencies\]/,/^\[/{s/^rmcp = { version = "\([0-9.]*\)".*/\1/p}' "$manifest")"
if [ -z "$req" ]; then
    echo "error: no rmcp requirement in [dependencies] of $manifest" >&2
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
    # With all features it is built and tested by every other CI step.
    echo "rmcp $locked (locked, the newest): cargo check -p mrtr-rmcp --lib --no-default-features" >&2
    cargo check --quiet --locked -p mrtr-rmcp --lib --no-default-features
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CARGO_TARGET_DIR="$repo/target/rmcp-versions"
for v in "${versions[@]}"; do
    echo "rmcp $v: a copy of the crate with rmcp and rmcp-macros pinned to $v" >&2
    rm -rf "$tmp/crate"
    mkdir -p "$tmp/crate"
    # The workspace's sources without build output, caches or git.
    tar -C "$repo" --exclude=./target --exclude=./.cache --exclude=./.git --exclude=./fuzz \
        --exclude=./benches/peers -cf - . | tar -C "$tmp/crate" -xf -
    sed -i "s/^rmcp = { version = \"[0-9.]*\"/rmcp = { version = \"$v\"/" "$tmp/crate/$manifest"
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
        echo "rmcp $v: cargo check -p mrtr-rmcp --lib (with no and with all features)" >&2
        cargo check --quiet --locked -p mrtr-rmcp --lib --no-default-features
        cargo check --quiet --locked -p mrtr-rmcp --lib --all-features
        echo "rmcp $v: cargo test -p mrtr-rmcp --all-features --test rmcp (http and legacy)" >&2
        # The cfg leaves out the modules that need a newer rmcp (tests/rmcp/main.rs).
        RUSTFLAGS="${RUSTFLAGS:-} --cfg mrtr_rmcp_lowest" \
            cargo test --quiet --locked -p mrtr-rmcp --all-features --test rmcp -- http:: legacy::
    )
    echo "rmcp $v: ok" >&2
done
