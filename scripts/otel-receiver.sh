#!/usr/bin/env bash
# A real OTLP/HTTP receiver for the span-export test: OtelTap (PyPI `oteltap`,
# MIT), which listens for OTLP/HTTP protobuf and prints every span it gets as
# one JSON line on stdout.
#
#   scripts/otel-receiver.sh install   # installs it into .cache/otel (a venv), once
#   scripts/otel-receiver.sh python    # installs if missing; prints the venv's python
#
#   MRTR_TEST_OTLP_PYTHON=$(scripts/otel-receiver.sh python) \
#       cargo test -p mrtr-cli --all-features --test mrtr -- --ignored serve::otel
#
# The test starts the receiver itself (`$python -m oteltap --port PORT`) on a free
# loopback port, so nothing is left running.
set -euo pipefail

OTELTAP_VERSION=1.0.0
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${MRTR_OTEL_CACHE:-$repo/.cache/otel}"

die() { echo "otel-receiver.sh: $*" >&2; exit 1; }

install() {
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import oteltap" 2>/dev/null; then
        return
    fi
    command -v python3 >/dev/null || die "python3 is missing"
    echo "otel-receiver.sh: installing oteltap $OTELTAP_VERSION into $venv" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "oteltap==$OTELTAP_VERSION" >&2
    "$venv/bin/python" -c "import oteltap" || die "oteltap did not install"
}

case "${1:-}" in
    install) install ;;
    python) install; echo "$venv/bin/python" ;;
    *) die "usage: scripts/otel-receiver.sh install|python" ;;
esac
