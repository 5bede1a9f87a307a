#!/usr/bin/env bash
# The core's public API as a checked-in listing, so that its growth is a reviewed diff.
#
#   scripts/public-api.sh          fails (exit 1, with the diff) when the public API
#                                  of `mrtr` (all features) differs from api/mrtr.txt
#   scripts/public-api.sh --bless  rewrites api/mrtr.txt from the code
#
# Nightly rustdoc writes the crate's JSON (`--output-format json`, hidden items
# included, its lints left to CI's `cargo doc` step) under target/public-api/;
# scripts/public_api.py turns it into one sorted line per item reachable from
# `mrtr::` (path, kind, signature), the #[doc(hidden)] ones (mrtr::__private) in a
# section of their own. The last line counts them: `public-api: N public, M hidden`.
# Needs the nightly toolchain (CI installs it: `rustup toolchain install nightly
# --profile minimal`) and python3; nothing else. Cold, about 30 s (the dependencies
# are checked once with nightly); warm, about 2 s.
set -euo pipefail
cd "$(dirname "$0")/.."

bless=""
case "${1:-}" in
    "") ;;
    --bless) bless=1 ;;
    *) echo "usage: scripts/public-api.sh [--bless]" >&2; exit 2 ;;
esac

snapshot=api/mrtr.txt
target_dir=target/public-api
fresh=$target_dir/mrtr.txt

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "error: scripts/public-api.sh needs the nightly toolchain: rustup toolchain install nightly --profile minimal" >&2
    exit 2
fi

# The parser first, on its built-in sample: a parse that lists nothing must not pass.
python3 scripts/public_api.py --self-test >&2

rm -f "$target_dir/doc/mrtr.json"
CARGO_TARGET_DIR=$target_dir cargo +nightly rustdoc -p mrtr --all-features --lib --locked --quiet -- \
    -Z unstable-options --output-format json --document-hidden-items --cap-lints allow
# At least 100 public lines (the core has thousands) and one hidden (mrtr::__private):
# fewer means the parse broke, not the API.
counts=$(python3 scripts/public_api.py "$target_dir/doc/mrtr.json" -o "$fresh" --min-public 100 --min-hidden 1 2>&1) ||
    { echo "$counts" >&2; exit 2; }

if [ -n "$bless" ]; then
    mkdir -p "$(dirname "$snapshot")"
    cp "$fresh" "$snapshot"
    echo "wrote $snapshot"
elif ! diff -u --label "$snapshot" --label "the code" "$snapshot" "$fresh"; then
    echo "public-api: the public API of mrtr differs from $snapshot (above: - the snapshot, + the code)" >&2
    echo "if the change is intended: scripts/public-api.sh --bless" >&2
    echo "$counts"
    exit 1
fi
echo "$counts"
