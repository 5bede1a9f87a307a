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
# A VERSION is checked in this worktree, in its own target dir (CARGO_TARGET_DIR,
# default target/), so that every dependency rmcp VERSION shares with the locked
# tree is reused from the build CI made before rather than built again: the
# rmcp requirements of crates/mrtr-rmcp/Cargo.toml (the dependency and the
# dev-dependency) are set to admit VERSION, the lock file is moved with
# `cargo update -p rmcp --precise VERSION` (and rmcp-macros with it), and both
# files are put back as they were on exit, whatever the outcome. There the
# library is checked without default features, and the rmcp tests
# (crates/mrtr-rmcp/tests/rmcp: rmcp's real server and client over HTTP) are
# built with every feature and `--cfg mrtr_rmcp_lowest` (for that test target
# only: it leaves out the modules that need a newer rmcp) and run.
set -euo pipefail

cd "$(dirname "$0")/.."

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

saved=$(mktemp -d)
cp "$manifest" "$saved/Cargo.toml"
cp Cargo.lock "$saved/Cargo.lock"
restore() {
    cp "$saved/Cargo.toml" "$manifest"
    cp "$saved/Cargo.lock" Cargo.lock
    rm -rf "$saved"
}
trap restore EXIT
for v in "${versions[@]}"; do
    echo "rmcp $v: crates/mrtr-rmcp and Cargo.lock pinned to rmcp and rmcp-macros $v (until this script ends)" >&2
    cp "$saved/Cargo.toml" "$manifest"
    cp "$saved/Cargo.lock" Cargo.lock
    sed -i "s/^rmcp = { version = \"[0-9.]*\"/rmcp = { version = \"$v\"/" "$manifest"
    cargo update --quiet -p rmcp --precise "$v"
    cargo update --quiet -p rmcp-macros --precise "$v"
    for name in rmcp rmcp-macros; do
        got="$(locked_version "$name" Cargo.lock)"
        [ "$got" = "$v" ] || {
            echo "error: the lock file resolved $name $got, not $v" >&2
            exit 1
        }
    done
    echo "rmcp $v: cargo check -p mrtr-rmcp --lib --no-default-features" >&2
    cargo check --quiet --locked -p mrtr-rmcp --lib --no-default-features
    echo "rmcp $v: the rmcp test target with every feature and --cfg mrtr_rmcp_lowest, then its http and legacy tests" >&2
    exe="$(cargo rustc --quiet --locked -p mrtr-rmcp --all-features --test rmcp \
        --message-format=json-render-diagnostics -- --cfg mrtr_rmcp_lowest |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "rmcp" and m.get("executable"):
        print(m["executable"])')"
    [ -n "$exe" ] || { echo "error: cargo rustc named no rmcp test executable" >&2; exit 1; }
    (cd crates/mrtr-rmcp && "$exe" http:: legacy::)
    echo "rmcp $v: ok" >&2
done
