#!/usr/bin/env bash
# A throwaway Redis on loopback for the replay-store tests and bench.
#
#   scripts/redis.sh install # installs redis-server from Debian if missing
#   scripts/redis.sh start   # installs redis-server if missing, starts it, prints its URL
#   scripts/redis.sh url     # prints the URL of the running one
#   scripts/redis.sh stop    # stops it and removes its directory
#
#   MRTR_TEST_REDIS_URL=$(scripts/redis.sh start) cargo test -p mrtr-cli --all-features --test mrtr -- redis::
#
# The server listens on 127.0.0.1 only, on a free port, with no persistence (no
# RDB, no AOF) in a temporary directory. Its state (port, pid) lives in
# $MRTR_REDIS_DIR (default: $TMPDIR/mrtr-redis-$UID), so one shell can start it
# and another stop it. When redis-server is missing it is installed from Debian
# (apt-get update && apt-get install -y redis-server; needs root).
set -euo pipefail

state_dir="${MRTR_REDIS_DIR:-${TMPDIR:-/tmp}/mrtr-redis-$(id -u)}"

die() { echo "redis.sh: $*" >&2; exit 1; }

url() {
    [ -f "$state_dir/port" ] || die "not running (no $state_dir/port): scripts/redis.sh start"
    echo "redis://127.0.0.1:$(cat "$state_dir/port")"
}

running() {
    [ -f "$state_dir/pid" ] && kill -0 "$(cat "$state_dir/pid")" 2>/dev/null
}

install() {
    if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
        return
    fi
    command -v apt-get >/dev/null || die "redis-server is missing and there is no apt-get to install it"
    echo "redis.sh: installing redis-server from Debian" >&2
    if [ "$(id -u)" -ne 0 ]; then
        die "redis-server is missing; installing it needs root (apt-get install -y redis-server)"
    fi
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
    # Debian's package may also start a system instance on :6379; this script does not use it.
}

free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$((20000 + RANDOM % 30000))
        # Nothing answers on it: free (a connect to a closed loopback port fails at once).
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
    die "no free loopback port found"
}

start() {
    if running; then
        url
        return
    fi
    install
    rm -rf "$state_dir"
    mkdir -p "$state_dir"
    local port
    port="$(free_port)"
    redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes \
        --save '' --appendonly no --dir "$state_dir" \
        --daemonize yes --pidfile "$state_dir/redis.pid" --logfile "$state_dir/redis.log" >&2
    for _ in $(seq 1 100); do
        if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = "PONG" ]; then
            cat "$state_dir/redis.pid" >"$state_dir/pid"
            echo "$port" >"$state_dir/port"
            url
            return
        fi
        sleep 0.1
    done
    cat "$state_dir/redis.log" >&2 || true
    die "redis-server did not answer on 127.0.0.1:$port"
}

stop() {
    if running; then
        local pid
        pid="$(cat "$state_dir/pid")"
        kill "$pid"
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -rf "$state_dir"
}

case "${1:-}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    url) url ;;
    *) die "usage: scripts/redis.sh install|start|stop|url" ;;
esac
