//! `mrtr serve --metrics-listen`: after a known mix of requests (completions,
//! tampered states, expired states, replays, unknown names), the scraped
//! counters match exactly, and no client string is a label value. What each
//! label means is unit-tested beside the code (`src/metrics.rs`).

use crate::support as server_support;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;
use server_support::common::SECRET_A;
use server_support::{
    ELICIT, Server, all_caps, assert_frozen_state_response, bin, complete_text, confirm_answer,
    meta, name_answer, request, retry, rpc_error, state_of, tool_call, tool_error_text,
};

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The samples of a text exposition: `name{k="v",...}` (labels sorted) → value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l:?}"));
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("{l:?}"));
            let key = match series.split_once('{') {
                None => series.to_owned(),
                Some((name, labels)) => {
                    let mut labels: Vec<&str> = labels.trim_end_matches('}').split(',').collect();
                    labels.sort_unstable();
                    format!("{name}{{{}}}", labels.join(","))
                }
            };
            (key, value)
        })
        .collect()
}

/// The samples of one metric family (`name` and `name{...}`).
fn family(all: &BTreeMap<String, f64>, name: &str) -> BTreeMap<String, f64> {
    all.iter()
        .filter(|(k, _)| k.as_str() == name || k.starts_with(&format!("{name}{{")))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

fn expect(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// A `tools/call` of `deploy` for `service`.
fn deploy(id: u64, service: &str) -> serde_json::Value {
    tool_call(id, "deploy", Some(json!({"service": service})))
}

#[test]
fn scraped_counters_match_a_known_mix_of_requests() {
    // The server under test (no clock skew, so a lapsed state is refused at once),
    // and a second one on the same key that seals states with a 1 s lifetime: the
    // expired states, opened by the first.
    let s = Server::start_with_keys(
        &["--clock-skew", "0", "--metrics-listen", "127.0.0.1:0"],
        SECRET_A,
    );
    let short = Server::start_with_keys(&["--state-ttl", "1"], SECRET_A);
    let metrics = s.metrics_addr();
    assert_ne!(metrics, s.addr);
    assert!(metrics.ip().is_loopback(), "{metrics}");

    // K = 2 expired states, sealed by `short` before anything else so the wait
    // below overlaps the rest of the mix.
    const K: u64 = 2;
    let expired: Vec<_> = (0..K)
        .map(|i| {
            let first = tool_call(900 + i, ELICIT, None);
            let state = state_of(&short.call(&first, 200));
            (first, state)
        })
        .collect();
    let sealed_by = unix_secs();

    // N = 3 completed two-round deploys.
    const N: u64 = 3;
    let mut finals = Vec::new();
    for i in 0..N {
        let first = deploy(10 * i + 1, "web");
        let state = state_of(&s.call(&first, 200));
        let last = retry(&first, 10 * i + 2, Some(confirm_answer(true)), &state);
        assert!(complete_text(&s.call(&last, 200)).starts_with("Deployed web"));
        finals.push((first, state, last));
    }

    // R = 2 replays of the first flow's final round: the replay guard refuses them.
    const R: u64 = 2;
    for i in 0..R {
        let mut replay = finals[0].2.clone();
        replay["id"] = json!(100 + i);
        let v = s.call(&replay, 200);
        assert!(tool_error_text(&v).contains("already carried out"), "{v}");
    }

    // M = 2 tampered states: one character in the middle of the ciphertext.
    const M: u64 = 2;
    for i in 0..M {
        let (first, state, _) = &finals[usize::try_from(i).unwrap()];
        let mut bytes = state.clone().into_bytes();
        let mid = bytes.len() / 2;
        bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        let v = s.call(
            &retry(first, 200 + i, Some(confirm_answer(true)), &tampered),
            400,
        );
        assert_frozen_state_response(&v);
    }

    // Names the client chose: an unknown tool, an unknown method.
    rpc_error(&s.call(&tool_call(300, "evil-tool", None), 400), -32602);
    let params = json!({"_meta": meta(&all_caps())});
    let unknown = json!({"jsonrpc": "2.0", "id": 301, "method": "evil/method", "params": params});
    rpc_error(&s.call(&unknown, 404), -32601);
    let list = json!({"jsonrpc": "2.0", "id": 302, "method": "tools/list", "params": params});
    s.call(&list, 200);

    // The expired states: once the 1 s lifetime has passed (whole seconds, `now >
    // exp`: from `sealed_by + 2` on), one bounded wait on the clock.
    let deadline = Instant::now() + Duration::from_secs(5);
    while unix_secs() < sealed_by + 2 {
        assert!(Instant::now() < deadline, "clock did not advance");
        std::thread::sleep(Duration::from_millis(50));
    }
    for (i, (first, state)) in expired.iter().enumerate() {
        let id = 400 + u64::try_from(i).unwrap();
        let v = s.call(&retry(first, id, Some(name_answer("Late")), state), 200);
        assert!(tool_error_text(&v).contains("lapsed"), "{v}");
    }

    // Scrape.
    let r = request(metrics, "GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = r.text();
    let all = samples(&text);
    let n = |x: u64| x as f64;

    assert_eq!(
        family(&all, "mrtr_requests_total"),
        expect(&[
            (
                r#"mrtr_requests_total{era="modern",method="tools/call",name="deploy",outcome="input_required"}"#,
                n(N)
            ),
            (
                r#"mrtr_requests_total{era="modern",method="tools/call",name="deploy",outcome="complete"}"#,
                n(N)
            ),
            (
                r#"mrtr_requests_total{era="modern",method="tools/call",name="deploy",outcome="tool_error"}"#,
                n(R)
            ),
            (
                r#"mrtr_requests_total{code="-32602",era="modern",method="tools/call",name="deploy",outcome="error"}"#,
                n(M)
            ),
            (
                r#"mrtr_requests_total{era="modern",method="tools/call",name="test_input_required_result_elicitation",outcome="tool_error"}"#,
                n(K)
            ),
            (
                r#"mrtr_requests_total{code="-32602",era="modern",method="tools/call",outcome="error"}"#,
                1.0
            ),
            (
                r#"mrtr_requests_total{code="-32601",era="modern",method="other",outcome="error"}"#,
                1.0
            ),
            (
                r#"mrtr_requests_total{era="modern",method="tools/list",outcome="complete"}"#,
                1.0
            ),
        ]),
        "{text}"
    );
    assert_eq!(
        family(&all, "mrtr_state_rejections_total"),
        expect(&[
            (r#"mrtr_state_rejections_total{reason="tag"}"#, n(M)),
            (r#"mrtr_state_rejections_total{reason="expired"}"#, n(K)),
        ]),
        "{text}"
    );
    // The round of every request whose state opened (or that had none): N first
    // rounds; N final rounds and R replays of one, all round 2. Refused states
    // carry no round anyone can trust.
    assert!(text.contains("# TYPE mrtr_rounds histogram"), "{text}");
    let rounds = family(&all, "mrtr_rounds_bucket");
    assert_eq!(rounds[r#"mrtr_rounds_bucket{le="1"}"#], n(N), "{text}");
    assert_eq!(
        rounds[r#"mrtr_rounds_bucket{le="2"}"#],
        n(N + N + R),
        "{text}"
    );
    assert_eq!(
        rounds[r#"mrtr_rounds_bucket{le="+Inf"}"#],
        n(N + N + R),
        "{text}"
    );
    assert_eq!(all["mrtr_rounds_count"], n(N + N + R), "{text}");
    assert_eq!(all["mrtr_rounds_sum"], n(N + 2 * (N + R)), "{text}");
    // Every final round claimed its `once` step; every replay was refused by the guard.
    assert_eq!(
        family(&all, "mrtr_once_total"),
        expect(&[
            (r#"mrtr_once_total{result="claimed"}"#, n(N)),
            (r#"mrtr_once_total{result="replayed"}"#, n(R)),
        ]),
        "{text}"
    );
    assert_eq!(
        all.get("mrtr_replay_store_seconds_count"),
        None,
        "no store behind the memory guard"
    );
    // Only the N completed flows have an age (a replay completes nothing).
    assert!(
        text.contains("# TYPE mrtr_flow_seconds histogram"),
        "{text}"
    );
    assert_eq!(all["mrtr_flow_seconds_count"], n(N), "{text}");
    assert!(
        text.contains("# HELP mrtr_requests_total "),
        "described: {text}"
    );
    // The conventions' operation duration: every request, by method, error
    // type and transport, in the conventions' buckets.
    assert!(
        text.contains("# TYPE mcp_server_operation_duration histogram"),
        "{text}"
    );
    assert_eq!(
        family(&all, "mcp_server_operation_duration_count"),
        expect(&[
            (
                r#"mcp_server_operation_duration_count{mcp_method_name="tools/call",network_transport="tcp"}"#,
                n(2 * N)
            ),
            (
                r#"mcp_server_operation_duration_count{error_type="tool_error",mcp_method_name="tools/call",network_transport="tcp"}"#,
                n(R + K)
            ),
            (
                r#"mcp_server_operation_duration_count{error_type="-32602",mcp_method_name="tools/call",network_transport="tcp"}"#,
                n(M + 1)
            ),
            (
                r#"mcp_server_operation_duration_count{error_type="-32601",mcp_method_name="other",network_transport="tcp"}"#,
                1.0
            ),
            (
                r#"mcp_server_operation_duration_count{mcp_method_name="tools/list",network_transport="tcp"}"#,
                1.0
            ),
        ]),
        "{text}"
    );
    assert!(
        text.contains(r#"mcp_server_operation_duration_bucket{mcp_method_name="tools/list",network_transport="tcp",le="0.01"}"#),
        "the conventions' buckets: {text}"
    );

    // No client-chosen string anywhere in the exposition.
    for needle in ["evil", "web", "Late"] {
        assert!(!text.contains(needle), "{needle:?} in {text}");
    }
    // The metrics listener serves nothing else, and the MCP port no metrics.
    assert_eq!(request(metrics, "GET", "/mcp", &[], b"").status, 404);
    assert_eq!(request(metrics, "GET", "/", &[], b"").status, 404);
    assert_eq!(request(s.addr, "GET", "/metrics", &[], b"").status, 404);
}

#[test]
fn metrics_are_off_by_default_and_never_on_the_mcp_port() {
    let s = Server::start(&[]);
    assert!(
        !s.stderr_lines().iter().any(|l| l.contains("metrics on")),
        "{:?}",
        s.stderr_lines()
    );
    assert_eq!(request(s.addr, "GET", "/metrics", &[], b"").status, 404);

    let out = Command::new(bin())
        .args([
            "serve",
            "--anonymous",
            "--listen",
            "127.0.0.1:8808",
            "--metrics-listen",
            "127.0.0.1:8808",
        ])
        .env_remove("MRTR_KEYS")
        .env_remove("MRTR_PRINCIPAL")
        .stdin(Stdio::null())
        .output()
        .expect("run mrtr");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--metrics-listen"), "{err}");
}

/// A 2025-era session's life: opened by `initialize`, ended by `DELETE`, counted
/// in `mrtr_sessions_total` and measured in the conventions'
/// `mcp.server.session.duration` (by its version and transport).
#[test]
fn a_2025_era_session_is_counted_and_its_life_measured() {
    let s = Server::start(&["--metrics-listen", "127.0.0.1:0"]);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let r = request(
        s.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        init.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    assert_eq!(request(s.addr, "DELETE", "/mcp", &headers, b"").status, 200);

    let text = request(s.metrics_addr(), "GET", "/metrics", &[], b"").text();
    let all = samples(&text);
    assert_eq!(
        family(&all, "mrtr_sessions_total"),
        expect(&[
            (r#"mrtr_sessions_total{event="opened"}"#, 1.0),
            (r#"mrtr_sessions_total{event="closed"}"#, 1.0),
        ]),
        "{text}"
    );
    assert_eq!(
        family(&all, "mcp_server_session_duration_count"),
        expect(&[(
            r#"mcp_server_session_duration_count{mcp_protocol_version="2025-11-25",network_transport="tcp"}"#,
            1.0
        )]),
        "{text}"
    );
    assert!(
        text.contains(r#"mcp_server_session_duration_bucket{mcp_protocol_version="2025-11-25",network_transport="tcp",le="300"} 1"#),
        "the conventions' buckets: {text}"
    );
}
