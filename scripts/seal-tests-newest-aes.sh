#!/usr/bin/env bash
# Runs the sealing tests (known-answer vectors, C2SP XAES and Wycheproof AES-GCM,
# tampering, round trips) against the newest `aes` 0.9.x as well.
#
#   scripts/seal-tests-newest-aes.sh
#
# mrtr's lock file resolves `aes` 0.9.2 for its rust-version (1.88). Applications on a
# newer toolchain get 0.9.3 or later, which runs AES through the VAES-256/512 backends
# on CPUs that have them: a different code path under every token. This run checks that
# path against the same vectors. The lock file is restored on exit.
set -euo pipefail

cd "$(dirname "$0")/.."

saved="$(mktemp)"
cp Cargo.lock "$saved"
trap 'cp "$saved" Cargo.lock; rm -f "$saved"' EXIT

cargo update --quiet -p aes --ignore-rust-version
version="$(cargo pkgid aes)"
backend="AES-NI"
if grep -qw vaes /proc/cpuinfo 2>/dev/null; then
    backend="VAES-256"
    grep -qw avx512f /proc/cpuinfo && backend="VAES-512"
fi
echo "sealing tests with ${version##*#} (this CPU: $backend backend)" >&2
cargo test -p mrtr --all-features --test seal
