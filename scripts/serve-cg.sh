#!/usr/bin/env bash
# The reference server (`mrtr serve`, release build) under callgrind: instructions and
# `malloc` calls per two-round elicitation flow over loopback HTTP, summed over all of
# the server's threads.
#
#   scripts/serve-cg.sh      (env: SERVE_CG_LO, SERVE_CG_HI, SERVE_CG_WARMUP, SERVE_CG_WORKERS,
#                             SERVE_CG_VERBOSE, SERVE_CG_ARGS; below)
#
# Why: benches/peers' e2e bench (scripts/e2e-cache-sim.sh) measures mrtr inside rmcp's
# server; this measures the crate's own server, the HTTP stack and accept loop of
# src/server, the reference tools and the request log included. Instruction counts do
# not depend on the host's load, so a change of a few tenths of a percent between two
# builds shows.
#
# The flow: the conformance fixture `test_input_required_result_elicitation`, as a
# 2026-07-28 client sends it (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Accept and
# Content-Type headers; `_meta` with the protocol version and clientCapabilities
# declaring elicitation): a `tools/call` answered `input_required` asking `user_name`
# with a sealed requestState, then the retry with `inputResponses` and that
# `requestState`, answered `complete` ("Hello, Ada!"). Every reply is checked (HTTP 200,
# the JSON-RPC id, resultType, the question's key, the final text, and that the
# connection stays open); the first that is wrong stops the script. The same two JSON-RPC
# ids every flow, so every flow does the same work. One kept-alive connection, the
# driver (python3, outside valgrind) sending one request at a time.
#
# Method: the server runs under `valgrind --tool=callgrind --cache-sim=no
# --separate-threads=yes` twice, once for WARMUP+LO flows and once for WARMUP+HI flows
# (default 20+100 and 20+300), each stopped with SIGTERM after the driver closes its
# connection (the server drains and exits 0, and callgrind writes one file per thread
# at exit). Per flow = (run HI - run LO) / (HI - LO), each run's count the sum over
# every thread's file: the slope, so start-up, key set-up, warm-up, the connection's
# accept and shutdown cancel out, and so does which thread (tokio worker, blocking pool,
# main) a refactor moves work to. malloc is the `calls=` to `malloc` in those files
# (as scripts/e2e-cache-sim.sh counts it; calloc, realloc and posix_memalign are not
# counted).
#
# One tokio worker by default (TOKIO_WORKER_THREADS=1, which tokio's runtime builder
# reads; SERVE_CG_WORKERS=N for N, SERVE_CG_WORKERS= for tokio's default, one per
# CPU). With one worker, instructions per flow repeat to within about 0.5% from run to
# run, most runs within 0.2% of the median (what is left is mostly glibc malloc's heap
# state, which depends on timing: tokio's timers, the log's durations), malloc per flow
# to within 0.2. With two workers on a 2-CPU host, a connection's requests run on either worker,
# stealing and wake-ups between them depend on timing, and glibc's per-thread arenas
# see frees from the other thread: instructions then vary by 3% either way on a busy
# host. Compare two builds with the same setting, and take the median of three runs.
#
# The server gets a fixed key ring made with `mrtr keygen` (MRTR_KEYS, in the
# environment only; never printed), --anonymous, --listen 127.0.0.1:0, RUST_LOG=info
# (the binary's default: one request line per request, to a file) and --log-format
# human. Only the binary's CLI (and tokio's TOKIO_WORKER_THREADS) is used, so the
# script runs unchanged on another tree.
# SHA-256 runs without the CPU's SHA instructions under valgrind, so its instructions
# count several times too high (as in scripts/e2e-cache-sim.sh).
#
# Prints one line: `flows N  instructions/flow I  malloc/flow M` (N = HI - LO);
# SERVE_CG_VERBOSE=1 adds each thread's share on stderr. Takes about 15 s after the
# build. Needs valgrind and python3; installs valgrind with apt-get when
# missing and running as root.
set -euo pipefail

cd "$(dirname "$0")/.."

die() { echo "serve-cg: $*" >&2; exit 1; }

# SERVE_CG_ARGS: more `mrtr serve` arguments, word-split (e.g. `--otlp-endpoint
# http://127.0.0.1:4318` to measure the cost of span export).
EXTRA=${SERVE_CG_ARGS:-}
LO=${SERVE_CG_LO:-100}
HI=${SERVE_CG_HI:-300}
WARMUP=${SERVE_CG_WARMUP:-20}
WORKERS=${SERVE_CG_WORKERS-1}
[ -z "$WORKERS" ] || [[ $WORKERS =~ ^[1-9][0-9]*$ ]] || die "SERVE_CG_WORKERS must be a positive number or empty (got $WORKERS)"
for n in "$LO" "$HI" "$WARMUP"; do
    [[ $n =~ ^[0-9]+$ ]] || die "flow counts must be whole numbers (got $n)"
done
[ "$HI" -gt "$LO" ] || die "SERVE_CG_HI ($HI) must be more than SERVE_CG_LO ($LO)"

command -v python3 >/dev/null || die "python3 is missing"
if ! command -v valgrind >/dev/null; then
    command -v apt-get >/dev/null || die "valgrind is missing and there is no apt-get to install it"
    [ "$(id -u)" = 0 ] || die "valgrind is missing; installing it needs root (apt-get install -y valgrind)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >&2
fi

echo "serve-cg: building (cargo build --release -p mrtr-cli --bin mrtr)" >&2
built=$(cargo build --release -p mrtr-cli --bin mrtr --message-format=json-render-diagnostics 2>&1) ||
    { echo "$built" >&2; die "the binary did not build"; }
bin=$(echo "$built" | python3 -c '
import json, sys
exe = ""
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    t = m.get("target") or {}
    if m.get("reason") == "compiler-artifact" and t.get("name") == "mrtr" and "bin" in t.get("kind", []):
        exe = m.get("executable") or exe
print(exe)')
[ -n "$bin" ] && [ -x "$bin" ] || die "no mrtr executable in cargo's output"

# The work files beside the build, not in /tmp: a cleaner of /tmp/tmp.* on a shared
# host must not take them away mid-run.
out=$(mktemp -d "$(dirname "$(dirname "$bin")")/serve-cg.XXXXXX") || die "cannot make a work directory"
server=
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
        kill -KILL "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$out"
}
trap cleanup EXIT

# The key ring: made once, shared by both runs, only ever in the server's environment.
keys=$("$bin" keygen) || die "mrtr keygen failed"
[ -n "$keys" ] || die "mrtr keygen printed nothing"

# The server's last log lines, for a failure, valgrind's own lines left out (the
# request log holds no body, token or key).
log_tail() {
    echo "serve-cg: the server's last log lines:" >&2
    grep -v '^==[0-9]*==' "$1" | tail -n 20 >&2 || true
}

# run NAME FLOWS: one server under callgrind, WARMUP+FLOWS flows, a clean stop.
run() {
    local name=$1 flows=$2 log=$out/$1.log addr= i status
    env -u MRTR_PRINCIPAL -u MRTR_REPLAY_STORE -u MRTR_KEYS -u TOKIO_WORKER_THREADS \
        RUST_LOG=info NO_COLOR=1 MRTR_KEYS="$keys" ${WORKERS:+TOKIO_WORKER_THREADS=$WORKERS} \
        valgrind --tool=callgrind --cache-sim=no --branch-sim=no --separate-threads=yes \
        --callgrind-out-file="$out/$name.out" \
        "$bin" serve --anonymous --listen 127.0.0.1:0 --log-format human $EXTRA \
        </dev/null >"$out/$name.stdout" 2>"$log" &
    server=$!
    for ((i = 0; i < 1200; i++)); do # 120 s: valgrind starts slowly on a busy host
        [ -d "$out" ] || die "$name: the work directory $out is gone (removed by something else?)"
        addr=$(sed -n 's/.*listening on http:\/\/\([^/ ]*\)\/mcp.*/\1/p' "$log" 2>/dev/null | head -1) || addr=
        [ -n "$addr" ] && break
        kill -0 "$server" 2>/dev/null || { log_tail "$log"; server=; die "$name: the server exited before listening"; }
        sleep 0.1
    done
    [ -n "$addr" ] || { log_tail "$log"; die "$name: the server did not say where it listens within 120 s"; }

    python3 - "$addr" "$((WARMUP + flows))" <<'PY' || { log_tail "$log"; die "$name: the flows failed (the driver's message is above the log lines)"; }
import http.client, json, sys

addr, flows = sys.argv[1], int(sys.argv[2])
host, port = addr.rsplit(":", 1)
TOOL = "test_input_required_result_elicitation"
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": TOOL,
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
FIRST = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"_meta": META, "name": TOOL, "arguments": {}}}
ANSWER = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}


def shown(v):
    """The reply for an error message, its requestState left out."""
    v = json.loads(json.dumps(v))
    r = v.get("result") if isinstance(v, dict) else None
    if isinstance(r, dict) and isinstance(r.get("requestState"), str):
        r["requestState"] = f"<{len(r['requestState'])} characters>"
    return json.dumps(v)[:600]


def fail(flow, what):
    sys.exit(f"serve-cg: flow {flow}: {what}")


conn = http.client.HTTPConnection(host, int(port), timeout=300)


def post(flow, body):
    try:
        conn.request("POST", "/mcp", body=json.dumps(body, separators=(",", ":")), headers=HEADERS)
        r = conn.getresponse()
        raw = r.read()
    except (OSError, http.client.HTTPException) as e:
        fail(flow, f"round {body['id']}: no answer from the server ({type(e).__name__}: {e})")
    if r.status != 200:
        fail(flow, f"round {body['id']}: HTTP {r.status}: {raw[:300]!r}")
    if r.will_close:
        fail(flow, f"round {body['id']}: the server closes the connection (keep-alive expected)")
    ctype = (r.getheader("Content-Type") or "").split(";")[0].strip()
    text = raw.decode("utf-8", "replace")
    if ctype == "text/event-stream":  # the last event's data is the reply
        events = [e for e in text.strip().split("\n\n") if e]
        text = "\n".join(l[5:].lstrip() for l in events[-1].splitlines() if l.startswith("data:")) if events else ""
    elif ctype != "application/json":
        fail(flow, f"round {body['id']}: Content-Type {ctype!r}")
    try:
        v = json.loads(text)
    except ValueError:
        fail(flow, f"round {body['id']}: the reply is not JSON: {text[:300]!r}")
    if not isinstance(v, dict) or v.get("jsonrpc") != "2.0" or v.get("id") != body["id"] or not isinstance(v.get("result"), dict):
        fail(flow, f"round {body['id']}: not a result for this request: {shown(v)}")
    return v, v["result"]


for flow in range(1, flows + 1):
    v, r = post(flow, FIRST)
    state = r.get("requestState")
    if r.get("resultType") != "input_required" or not isinstance(state, str) or not state \
            or "user_name" not in (r.get("inputRequests") or {}):
        fail(flow, f"round 1: expected resultType input_required asking user_name with a requestState: {shown(v)}")
    retry = json.loads(json.dumps(FIRST))
    retry["id"] = 2
    retry["params"]["inputResponses"] = ANSWER
    retry["params"]["requestState"] = state
    v, r = post(flow, retry)
    content = r.get("content") or [{}]
    if r.get("resultType") != "complete" or r.get("isError") or content[0].get("text") != "Hello, Ada!":
        fail(flow, f"round 2: expected resultType complete with \"Hello, Ada!\": {shown(v)}")
conn.close()
PY

    kill -TERM "$server" 2>/dev/null || die "$name: the server is gone before its stop"
    status=0
    for ((i = 0; i < 1200; i++)); do # 120 s for the drain and callgrind's dump
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$server" 2>/dev/null; then
        log_tail "$log"
        die "$name: the server did not stop within 120 s of SIGTERM"
    fi
    wait "$server" || status=$?
    server=
    [ "$status" = 0 ] || { log_tail "$log"; die "$name: the server exited with status $status after SIGTERM"; }
    compgen -G "$out/$name.out-*" >/dev/null || { log_tail "$log"; die "$name: callgrind wrote no output"; }
}

echo "serve-cg: $((WARMUP + LO)) flows under callgrind (tokio workers: ${WORKERS:-default})" >&2
run lo "$LO"
echo "serve-cg: $((WARMUP + HI)) flows under callgrind" >&2
run hi "$HI"

python3 - "$out" "$LO" "$HI" "${SERVE_CG_VERBOSE:-0}" <<'PY'
import glob, re, sys

sys.path.insert(0, "scripts")
from callgrind_counts import malloc_calls

out, lo, hi, verbose = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"


def threads(name):
    """{thread name or number: (Ir, malloc calls)} over the run's callgrind files."""
    per = {}
    for path in sorted(glob.glob(f"{out}/{name}.out-*")):
        text = open(path).read()
        events = re.search(r"^events: (.*)$", text, re.M).group(1).split()
        line = re.search(r"^(?:summary|totals): (.*)$", text, re.M).group(1).split()
        ir = dict(zip(events, map(int, line)))["Ir"]
        mallocs = malloc_calls(text)
        key = re.search(r"^thread: (\d+)$", text, re.M)
        per[int(key.group(1)) if key else path] = (ir, mallocs)
    return per


a, b = threads("lo"), threads("hi")
flows = hi - lo
ir = (sum(v[0] for v in b.values()) - sum(v[0] for v in a.values())) / flows
mallocs = (sum(v[1] for v in b.values()) - sum(v[1] for v in a.values())) / flows
if verbose:
    print(f"serve-cg: thread  Ir(lo)  Ir(hi)  Ir/flow  malloc/flow", file=sys.stderr)
    for t in sorted(set(a) | set(b), key=str):
        (ia, ma), (ib, mb) = a.get(t, (0, 0)), b.get(t, (0, 0))
        print(f"serve-cg: {t}  {ia}  {ib}  {(ib - ia) / flows:.0f}  {(mb - ma) / flows:.1f}", file=sys.stderr)
if ir <= 0:
    sys.exit("serve-cg: the longer run counted no more instructions than the shorter one")
print(f"flows {flows}  instructions/flow {ir:.0f}  malloc/flow {mallocs:.1f}")
PY
