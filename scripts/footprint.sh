#!/usr/bin/env bash
# What each way of using mrtr adds to an application's build: the number of
# distinct crates in `cargo tree -e normal --prefix none` (normal dependencies,
# the root package included; a crate is counted once however often it appears).
#
#   scripts/footprint.sh          prints the table (the README's "Which crate")
#   scripts/footprint.sh --check  also fails if the core depends on tokio, hyper,
#                                 axum, clap or redis (with any of its features),
#                                 or if mrtr-rmcp adds more than MAX_RMCP_ADDED
#                                 crates to an rmcp server
#
# The applications are scratch packages under target/footprint/, resolved with
# this repository's Cargo.lock (so the versions are the tested ones), offline
# when the registry cache already has everything.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# mrtr-rmcp's addition to an rmcp server, at most (issue: 155 before the split).
MAX_RMCP_ADDED=40

check=false
[ "${1:-}" = --check ] && check=true

# Distinct crates of a tree printed with --prefix none.
count() { sed -e 's/ (\*)$//' -e 's/ (proc-macro)//' | sort -u | wc -l; }

scratch=target/footprint
rm -rf "$scratch"
mkdir -p "$scratch"

# app NAME DEPENDENCIES...: a scratch binary package with these [dependencies] lines.
app() {
    local name=$1
    shift
    mkdir -p "$scratch/$name/src"
    {
        printf '[package]\nname = "%s"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n[workspace]\n\n[dependencies]\n' "$name"
        printf '%s\n' "$@"
    } >"$scratch/$name/Cargo.toml"
    echo 'fn main() {}' >"$scratch/$name/src/main.rs"
    cp Cargo.lock "$scratch/$name/Cargo.lock"
}

tree_of() {
    (cd "$scratch/$1" && { cargo tree --offline -e normal --prefix none 2>/dev/null ||
        cargo tree -e normal --prefix none; }) | count
}

rmcp_line='rmcp = { version = "3.11", default-features = false, features = ["server", "macros", "transport-streamable-http-server"] }'
tokio_line='tokio = { version = "1", features = ["macros", "rt-multi-thread"] }'
axum_line='axum = "0.8"'
core_line="mrtr = { path = \"$repo\" }"

app rmcp-alone "$rmcp_line" "$axum_line" "$tokio_line"
app rmcp-mrtr "$rmcp_line" "$axum_line" "$tokio_line" "$core_line" \
    "mrtr-rmcp = { path = \"$repo/crates/mrtr-rmcp\", features = [\"http\"] }"
app axum-server "$axum_line" "$tokio_line" "$core_line" \
    "mrtr-server = { path = \"$repo/crates/mrtr-server\" }"
app axum-oauth "$axum_line" "$tokio_line" "$core_line" \
    "mrtr-server = { path = \"$repo/crates/mrtr-server\", features = [\"oauth\"] }"
app axum-otel "$axum_line" "$tokio_line" "$core_line" \
    "mrtr-server = { path = \"$repo/crates/mrtr-server\", features = [\"otel\"] }"
app axum-otlp "$axum_line" "$tokio_line" "$core_line" \
    "mrtr-server = { path = \"$repo/crates/mrtr-server\", features = [\"otlp\"] }"

core=$(cargo tree --offline -p mrtr -e normal --prefix none 2>/dev/null | count)
core_bare=$(cargo tree --offline -p mrtr --no-default-features -e normal --prefix none 2>/dev/null | count)
rmcp_alone=$(tree_of rmcp-alone)
rmcp_mrtr=$(tree_of rmcp-mrtr)
axum_server=$(tree_of axum-server)
axum_oauth=$(tree_of axum-oauth)
axum_otel=$(tree_of axum-otel)
axum_otlp=$(tree_of axum-otlp)
cli=$(cargo tree --offline -p mrtr-cli -e normal --prefix none 2>/dev/null | count)
redis=$(cargo tree --offline -p mrtr-redis -e normal --prefix none 2>/dev/null | count)
client=$(cargo tree --offline -p mrtr-client -e normal --prefix none 2>/dev/null | count)
client_oauth=$(cargo tree --offline -p mrtr-client --features oauth -e normal --prefix none 2>/dev/null | count)
added=$((rmcp_mrtr - rmcp_alone))

printf '| build | crates |\n|---|---|\n'
printf '| `mrtr` alone (default features: `os-rng`) | %d |\n' "$core"
printf '| `mrtr` alone, `default-features = false` (wasm32) | %d |\n' "$core_bare"
printf '| rmcp server alone (rmcp `server`, `macros`, `transport-streamable-http-server`; axum; tokio) | %d |\n' "$rmcp_alone"
printf '| the same with `mrtr` and `mrtr-rmcp` (`http`) | %d (+%d) |\n' "$rmcp_mrtr" "$added"
printf '| axum app with `mrtr` and `mrtr-server` | %d |\n' "$axum_server"
printf '| the same with `mrtr-server`'"'"'s `oauth` (a JWT resource server) | %d |\n' "$axum_oauth"
printf '| the same with `mrtr-server`'"'"'s `otel` (spans parented and linked) | %d |\n' "$axum_otel"
printf '| the same with `mrtr-server`'"'"'s `otlp` (spans and metrics exported over OTLP/HTTP) | %d |\n' "$axum_otlp"
printf '| `mrtr-redis` alone | %d |\n' "$redis"
printf '| `mrtr-client` alone (`http`, `stdio`) | %d |\n' "$client"
printf '| `mrtr-client` with `oauth` (MCP authorization) | %d |\n' "$client_oauth"
printf '| the `mrtr` binary (`mrtr-cli`) | %d |\n' "$cli"

if $check; then
    status=0
    for features in --no-default-features "" --all-features; do
        # shellcheck disable=SC2086 # an empty feature flag is no argument
        if bad=$(cargo tree --offline -p mrtr $features -e normal --prefix none 2>/dev/null |
            sed 's/ (\*)$//' | grep -E '^(tokio|hyper|hyper-util|axum|axum-core|clap|redis) ' | sort -u); then
            echo "footprint: the core (${features:-default features}) depends on: $bad" >&2
            status=1
        fi
    done
    if [ "$added" -gt "$MAX_RMCP_ADDED" ]; then
        echo "footprint: mrtr-rmcp adds $added crates to an rmcp server (at most $MAX_RMCP_ADDED)" >&2
        status=1
    fi
    [ "$status" -eq 0 ] && echo "footprint: ok (core free of tokio/hyper/axum/clap/redis; mrtr-rmcp adds $added <= $MAX_RMCP_ADDED)" >&2
    exit "$status"
fi
