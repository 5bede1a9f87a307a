//! The toy servers checked by hand, without `mrtr audit`: raw HTTP requests
//! show the correct toy's behaviour, and a small probe per check (sending what
//! the audit's module doc says that check sends, judged by its pass rule) shows
//! that each flawed toy breaks exactly the rule of its own check.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::CHECKS;
use super::toy::{self, Config, FROZEN_CODE, FROZEN_MESSAGE, Flaw, Fleet, Toy};
use crate::support::{HttpResponse, borrow, headers_for, meta, request};

const ALICE: &str = "Bearer alice-token";
const BOB: &str = "Bearer bob-token";
const ARG: &str = "arg-selfcheck";
const ARG2: &str = "arg2-selfcheck";

/// Every input capability, as the audit declares them.
fn all_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {"listChanged": true}})
}

fn first(method: &str, name: &str, args: Value, caps: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method,
           "params": {"_meta": meta(caps), "name": name, "arguments": args}})
}

fn confirm_call() -> Value {
    first(
        "tools/call",
        "confirm_action",
        json!({"item": ARG}),
        &all_caps(),
    )
}

fn retry(first: &Value, state: Option<&str>, answers: Option<Value>) -> Value {
    let mut r = first.clone();
    r["id"] = json!(2);
    if let Some(a) = answers {
        r["params"]["inputResponses"] = a;
    }
    if let Some(s) = state {
        r["params"]["requestState"] = json!(s);
    }
    r
}

fn list(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": {"_meta": meta(&all_caps())}})
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn confirm_yes() -> Value {
    json!({"confirm": accept(json!({"confirm": true}))})
}

fn sampled() -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": "ans-x"}, "model": "m", "stopReason": "endTurn"})
}

/// POSTs `body` with the MCP headers that agree with it, as `auth`.
fn post(addr: SocketAddr, body: &Value, auth: &str) -> HttpResponse {
    post_bytes(addr, body, body.to_string().into_bytes(), auth)
}

fn post_bytes(addr: SocketAddr, body: &Value, bytes: Vec<u8>, auth: &str) -> HttpResponse {
    let owned = headers_for(body);
    post_with(addr, &borrow(&owned), bytes, auth)
}

fn post_with(addr: SocketAddr, mcp: &[(&str, &str)], bytes: Vec<u8>, auth: &str) -> HttpResponse {
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Authorization", auth),
    ];
    h.extend_from_slice(mcp);
    request(addr, "POST", "/mcp", &h, &bytes)
}

/// What a reply means.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Complete {
        is_error: bool,
    },
    Asks(Vec<String>, Option<String>),
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    Http(u16),
}

impl Outcome {
    fn of(r: &HttpResponse) -> Outcome {
        let Ok(v) = serde_json::from_slice::<Value>(&r.body) else {
            return Outcome::Http(r.status);
        };
        if let Some(e) = v.get("error") {
            return Outcome::Error {
                code: e["code"].as_i64().unwrap_or(0),
                message: e["message"].as_str().unwrap_or_default().to_owned(),
                data: e.get("data").cloned(),
            };
        }
        let res = &v["result"];
        if res["resultType"] == "input_required" {
            let keys = res["inputRequests"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            return Outcome::Asks(keys, res["requestState"].as_str().map(str::to_owned));
        }
        Outcome::Complete {
            is_error: res["isError"] == true,
        }
    }

    /// Whether the flow went past the round that asked `confirm`.
    fn progressed(&self) -> bool {
        match self {
            Outcome::Complete { is_error } => !is_error,
            Outcome::Asks(keys, _) => !keys.is_empty() && keys != &["confirm".to_owned()],
            _ => false,
        }
    }

    fn asks_again(&self, key: &str) -> bool {
        matches!(self, Outcome::Asks(keys, Some(_)) if keys == &[key.to_owned()])
    }

    fn is_error(&self) -> bool {
        matches!(self, Outcome::Error { .. })
    }
}

/// A probe run against one fleet: what came back, and each refusal of a state
/// (status, code, message, data) for the uniformity and leak rules.
struct Probe<'a> {
    fleet: &'a Fleet,
    refusals: Vec<(u16, Outcome, String)>,
    results_without_type: Vec<String>,
}

impl<'a> Probe<'a> {
    fn send(&mut self, addr: SocketAddr, body: &Value, auth: &str) -> Outcome {
        let r = post(addr, body, auth);
        self.note(body, &r)
    }

    fn note(&mut self, body: &Value, r: &HttpResponse) -> Outcome {
        if let Ok(v) = serde_json::from_slice::<Value>(&r.body)
            && let Some(res) = v.get("result")
            && res.get("resultType").is_none()
        {
            self.results_without_type
                .push(body["method"].as_str().unwrap_or_default().to_owned());
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&r.body)
            && let Some(res) = v.get("result")
            && res["resultType"] == "input_required"
            && res.get("content").is_some()
        {
            self.results_without_type.push(format!(
                "{} (input_required with content)",
                body["method"].as_str().unwrap_or_default()
            ));
        }
        Outcome::of(r)
    }

    /// Sends a retry whose state must be rejected (an error: asking again
    /// treats it as no state, and is no rejection), keeping the refusal when it
    /// is a JSON-RPC error.
    fn refused(
        &mut self,
        addr: SocketAddr,
        body: &Value,
        auth: &str,
        what: &str,
    ) -> Result<(), String> {
        let r = post(addr, body, auth);
        let o = self.note(body, &r);
        if o.is_error() {
            self.refusals.push((r.status, o.clone(), r.text()));
        }
        if !o.is_error()
            && !matches!(
                o,
                Outcome::Http(400..=499) | Outcome::Complete { is_error: true }
            )
        {
            return Err(format!("{what}: {o:?}"));
        }
        Ok(())
    }

    /// The baseline's first round: its state.
    fn baseline_state(&mut self) -> String {
        let main = self.fleet.main.addr;
        match self.send(main, &confirm_call(), ALICE) {
            Outcome::Asks(keys, Some(state)) if keys == ["confirm"] => state,
            other => panic!("the baseline does not ask: {other:?}"),
        }
    }

    fn run(mut self) -> BTreeMap<&'static str, Result<(), String>> {
        let main = self.fleet.main.addr;
        let mut out = BTreeMap::new();
        let state = self.baseline_state();
        let base = confirm_call();
        let done = self.send(
            main,
            &retry(&base, Some(&state), Some(confirm_yes())),
            ALICE,
        );
        assert_eq!(
            done,
            Outcome::Complete { is_error: false },
            "the baseline completes"
        );

        out.insert("integrity", self.integrity(&state));
        out.insert("confidentiality", confidentiality(&state));
        let other_args = first(
            "tools/call",
            "confirm_action",
            json!({"item": ARG2}),
            &all_caps(),
        );
        out.insert(
            "binding-arguments",
            self.refused(
                main,
                &retry(&other_args, Some(&state), Some(confirm_yes())),
                ALICE,
                "another argument",
            ),
        );
        let name = first("tools/call", "ask_name", json!({"item": ARG}), &all_caps());
        assert!(
            self.send(main, &name, ALICE).asks_again("name"),
            "ask_name asks"
        );
        let both = json!({"confirm": accept(json!({"confirm": true})), "name": accept(json!({"name": "ans-x"}))});
        out.insert(
            "binding-tool",
            self.refused(
                main,
                &retry(&name, Some(&state), Some(both)),
                ALICE,
                "another tool",
            ),
        );
        let prompt = first(
            "prompts/get",
            "confirm_action",
            json!({"item": ARG}),
            &all_caps(),
        );
        assert!(
            self.send(main, &prompt, ALICE).asks_again("confirm"),
            "the prompt asks"
        );
        out.insert(
            "binding-method",
            self.refused(
                main,
                &retry(&prompt, Some(&state), Some(confirm_yes())),
                ALICE,
                "prompts/get",
            ),
        );
        let again = retry(&base, Some(&state), Some(confirm_yes()));
        out.insert("binding-principal", self.principal(&again));
        out.insert(
            "foreign-key",
            self.refused(self.fleet.foreign.addr, &again, ALICE, "another key"),
        );
        let peer = self.send(self.fleet.peer.addr, &again, ALICE);
        out.insert(
            "fleet",
            if peer == (Outcome::Complete { is_error: false }) {
                Ok(())
            } else {
                Err(format!("the peer did not resume: {peer:?}"))
            },
        );
        out.insert("expiry", self.expiry());
        out.insert("capability-gate", self.capability_gate());
        out.insert("carriers", self.carriers());
        out.insert("answers-validated", self.answers_validated(&state));
        out.insert("error-channels", self.error_channels());
        out.insert("size-caps", self.size_caps(&state));
        out.insert("replay-after-complete", self.replay(&state));
        // Last: these read what the others saw.
        out.insert("error-uniformity", self.uniformity());
        out.insert("leaks", self.leaks(&state));
        out.insert(
            "result-type",
            if self.results_without_type.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "results without resultType: {:?}",
                    self.results_without_type
                ))
            },
        );
        out
    }

    /// Alice's state presented by bob is rejected, and alike on her request
    /// and on one with another argument (else bob learns whether a guessed
    /// argument is right).
    fn principal(&mut self, again: &Value) -> Result<(), String> {
        let main = self.fleet.main.addr;
        self.refused(main, again, BOB, "as bob")?;
        let state = self.baseline_state();
        let right = post(
            main,
            &retry(&confirm_call(), Some(&state), Some(confirm_yes())),
            BOB,
        );
        let other_args = first(
            "tools/call",
            "confirm_action",
            json!({"item": ARG2}),
            &all_caps(),
        );
        let wrong = post(
            main,
            &retry(&other_args, Some(&state), Some(confirm_yes())),
            BOB,
        );
        if (right.status, Outcome::of(&right)) != (wrong.status, Outcome::of(&wrong)) {
            return Err(format!(
                "bob is told the arguments: {} {} vs {} {}",
                right.status,
                right.text(),
                wrong.status,
                wrong.text()
            ));
        }
        Ok(())
    }

    fn integrity(&mut self, state: &str) -> Result<(), String> {
        let main = self.fleet.main.addr;
        let base = confirm_call();
        let mut altered = Vec::new();
        let flip = |seg: &str| -> Vec<String> {
            let Ok(bytes) = URL_SAFE_NO_PAD.decode(seg) else {
                return Vec::new();
            };
            let n = bytes.len();
            [0, 1, n / 4, n / 2, 3 * n / 4, n.saturating_sub(16), n - 1]
                .into_iter()
                .map(|i| {
                    let mut b = bytes.clone();
                    b[i] ^= 1;
                    URL_SAFE_NO_PAD.encode(b)
                })
                .collect()
        };
        match state.split_once('.') {
            None => altered.extend(flip(state)),
            Some((a, b)) => {
                altered.extend(flip(a).into_iter().map(|x| format!("{x}.{b}")));
                altered.extend(flip(b).into_iter().map(|x| format!("{a}.{x}")));
            }
        }
        let n = state.len();
        altered.extend([
            state[..n - 1].to_owned(),
            state[..n - 4].to_owned(),
            state[..n / 2].to_owned(),
            format!("{state}A"),
            format!("{state}AAAA"),
            format!("{state}."),
            String::new(),
            "A".repeat(64 * 1024),
        ]);
        for a in altered {
            let r = post(main, &retry(&base, Some(&a), Some(confirm_yes())), ALICE);
            let o = self.note(&base, &r);
            if !o.is_error() {
                return Err(format!("an altered state got {o:?}"));
            }
            self.refusals.push((r.status, o, r.text()));
        }
        Ok(())
    }

    fn expiry(&mut self) -> Result<(), String> {
        let ttl = self.fleet.ttl.addr;
        let base = confirm_call();
        let Outcome::Asks(_, Some(state)) = self.send(ttl, &base, ALICE) else {
            return Err("the TTL instance does not ask".into());
        };
        std::thread::sleep(Duration::from_secs(toy::AUDIT_TTL_SECS));
        let r = post(ttl, &retry(&base, Some(&state), Some(confirm_yes())), ALICE);
        let o = self.note(&base, &r);
        match o {
            Outcome::Error { .. } => {
                self.refusals.push((r.status, o, r.text()));
                Ok(())
            }
            Outcome::Complete { is_error: true } => Ok(()),
            other => Err(format!("after the TTL: {other:?}")),
        }
    }

    fn uniformity(&self) -> Result<(), String> {
        let mut seen: Vec<(u16, i64, String)> = self
            .refusals
            .iter()
            .filter_map(|(status, o, _)| match o {
                Outcome::Error { code, message, .. } => Some((*status, *code, message.clone())),
                _ => None,
            })
            .collect();
        seen.sort();
        seen.dedup();
        if seen.len() == 1 {
            Ok(())
        } else {
            Err(format!("refusals differ: {seen:?}"))
        }
    }

    fn leaks(&self, state: &str) -> Result<(), String> {
        // "expired" is in the frozen message itself, said of every refusal alike.
        const PRIVATE: [&str; 12] = [
            "tag",
            "mismatch",
            "principal",
            "binding",
            "key",
            "aead",
            "hmac",
            "signature",
            "decrypt",
            "malformed",
            "base64",
            "longer",
        ];
        for (_, o, text) in &self.refusals {
            let Outcome::Error { message, data, .. } = o else {
                continue;
            };
            if data.is_some() {
                return Err(format!("a refusal has data: {text}"));
            }
            let lower = message.to_lowercase();
            if let Some(w) = PRIVATE.iter().find(|w| lower.contains(*w)) {
                return Err(format!("a refusal says {w:?}: {text}"));
            }
            for secret in [ARG, ARG2, "alice-token", "bob-token", &state[..12]] {
                if text.contains(secret) {
                    return Err(format!("a refusal holds {secret:?}"));
                }
            }
        }
        Ok(())
    }

    fn capability_gate(&mut self) -> Result<(), String> {
        let main = self.fleet.main.addr;
        let no_form = json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}, "roots": {"listChanged": true}});
        for caps in [json!({}), no_form] {
            let body = first("tools/call", "confirm_action", json!({"item": ARG}), &caps);
            let r = post(main, &body, ALICE);
            match self.note(&body, &r) {
                Outcome::Asks(..) => return Err(format!("asked a form under {caps}")),
                Outcome::Error {
                    code: -32021, data, ..
                } if r.status != 400
                    || data
                        .as_ref()
                        .and_then(|d| d.get("requiredCapabilities"))
                        .is_none() =>
                {
                    return Err(format!("-32021 without data or HTTP 400: {}", r.text()));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn carriers(&mut self) -> Result<(), String> {
        let main = self.fleet.main.addr;
        for m in [
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
        ] {
            if let Outcome::Asks(..) = self.send(main, &list(m), ALICE) {
                return Err(format!("{m} answered input_required"));
            }
        }
        Ok(())
    }

    fn answers_validated(&mut self, state: &str) -> Result<(), String> {
        let main = self.fleet.main.addr;
        let base = confirm_call();
        let bad = [
            ("no answer", None),
            (
                "only an unrequested key",
                Some(json!({"other": accept(json!({"confirm": true}))})),
            ),
            ("another kind", Some(json!({"confirm": sampled()}))),
            (
                "a schema break",
                Some(json!({"confirm": accept(json!({"confirm": "not-a-boolean"}))})),
            ),
        ];
        let bare = self.send(main, &retry(&base, None, Some(confirm_yes())), ALICE);
        if bare.progressed() {
            return Err(format!("the right answers with no state: {bare:?}"));
        }
        for (what, answers) in bad {
            let o = self.send(main, &retry(&base, Some(state), answers), ALICE);
            if !o.asks_again("confirm") {
                return Err(format!("{what}: {o:?}"));
            }
        }
        let mut extra = confirm_yes();
        extra["unrequested"] = accept(json!({"x": "y"}));
        let o = self.send(main, &retry(&base, Some(state), Some(extra)), ALICE);
        if o != (Outcome::Complete { is_error: false }) {
            return Err(format!("an extra key: {o:?}"));
        }
        Ok(())
    }

    /// A server may run a completed flow again (single use is not asked), but
    /// one that refuses the same final retry must refuse it with another
    /// answer too: its guard is for the flow, not the request.
    fn replay(&mut self, state: &str) -> Result<(), String> {
        let main = self.fleet.main.addr;
        let base = confirm_call();
        let same = self.send(main, &retry(&base, Some(state), Some(confirm_yes())), ALICE);
        if same.progressed() {
            return Ok(());
        }
        let declined = json!({"confirm": {"action": "decline"}});
        let other = self.send(main, &retry(&base, Some(state), Some(declined)), ALICE);
        if other.progressed() {
            return Err(format!(
                "the same replay is refused ({same:?}), another answer completes: {other:?}"
            ));
        }
        Ok(())
    }

    fn error_channels(&mut self) -> Result<(), String> {
        let main = self.fleet.main.addr;
        let expect = |r: &HttpResponse, status: u16, code: i64, what: &str| -> Result<(), String> {
            match Outcome::of(r) {
                Outcome::Error { code: c, .. } if c == code && r.status == status => Ok(()),
                _ => Err(format!("{what}: HTTP {} {}", r.status, r.text())),
            }
        };
        let unknown = json!({"jsonrpc": "2.0", "id": 9, "method": "no/such_method", "params": {"_meta": meta(&all_caps())}});
        expect(&post(main, &unknown, ALICE), 404, -32601, "unknown method")?;
        let mut bare = confirm_call();
        bare["params"].as_object_mut().unwrap().remove("_meta");
        expect(&post(main, &bare, ALICE), 400, -32602, "no _meta")?;
        let body = confirm_call();
        let text = body.to_string().into_bytes();
        let pv = ("MCP-Protocol-Version", toy::PROTOCOL);
        let (m, n) = (("Mcp-Method", "tools/call"), ("Mcp-Name", "confirm_action"));
        for (what, headers) in [
            ("Mcp-Name differs", vec![pv, m, ("Mcp-Name", "ask_name")]),
            (
                "Mcp-Method differs",
                vec![pv, ("Mcp-Method", "prompts/get"), n],
            ),
            (
                "the version differs",
                vec![("MCP-Protocol-Version", "2025-11-25"), m, n],
            ),
            ("Mcp-Name missing", vec![pv, m]),
            ("no MCP headers", vec![]),
        ] {
            expect(
                &post_with(main, &headers, text.clone(), ALICE),
                400,
                -32020,
                what,
            )?;
        }
        // What the transport must refuse, as JSON-RPC errors with a 4xx.
        let probe = list("server/discover");
        let text = probe.to_string();
        let owned = headers_for(&probe);
        for (what, bytes, content_type, status, code) in [
            (
                "not JSON",
                text[..text.len() - 1].to_owned(),
                "application/json",
                400,
                -32700,
            ),
            (
                "a batch",
                format!("[{text}]"),
                "application/json",
                400,
                -32600,
            ),
            ("text/plain", text.clone(), "text/plain", 415, -32600),
        ] {
            let mut h = vec![("Content-Type", content_type), ("Authorization", ALICE)];
            h.extend_from_slice(&borrow(&owned));
            expect(
                &request(main, "POST", "/mcp", &h, bytes.as_bytes()),
                status,
                code,
                what,
            )?;
        }
        // A foreign Origin (DNS rebinding): 403.
        let mut h = vec![
            ("Content-Type", "application/json"),
            ("Authorization", ALICE),
            ("Origin", "https://evil.example"),
        ];
        h.extend_from_slice(&borrow(&owned));
        expect(
            &request(main, "POST", "/mcp", &h, text.as_bytes()),
            403,
            -32600,
            "a foreign Origin",
        )?;
        let nope = first("tools/call", "no_such_tool", json!({}), &all_caps());
        if !Outcome::of(&post(main, &nope, ALICE)).is_error() {
            return Err("an unknown tool is no JSON-RPC error".into());
        }
        let wrong = first(
            "tools/call",
            "confirm_action",
            json!({"item": 42}),
            &all_caps(),
        );
        let o = self.send(main, &wrong, ALICE);
        if o != (Outcome::Complete { is_error: true }) {
            return Err(format!("wrong argument type: {o:?}"));
        }
        Ok(())
    }

    fn size_caps(&mut self, state: &str) -> Result<(), String> {
        let main = self.fleet.main.addr;
        let base = confirm_call();
        let refused = |o: &Outcome| o.is_error() || matches!(o, Outcome::Http(400..=499));
        let huge_state = retry(&base, Some(&"A".repeat(1 << 20)), Some(confirm_yes()));
        let r = post(main, &huge_state, ALICE);
        let o = self.note(&huge_state, &r);
        if !refused(&o) && r.status < 400 {
            return Err(format!("a 1 MiB requestState: {o:?}"));
        }
        let mut answers = confirm_yes();
        answers["pad"] = accept(json!({"pad": "a".repeat(1 << 20)}));
        let big = retry(&base, Some(state), Some(answers));
        let r = post(main, &big, ALICE);
        let o = self.note(&big, &r);
        // Taking it breaks no rule (the spec sets no limit); a reply that is
        // neither the flow nor a refusal does.
        if !refused(&o) && r.status < 400 && !o.progressed() {
            return Err(format!("1 MiB of inputResponses: HTTP {} {o:?}", r.status));
        }
        Ok(())
    }
}

/// Whether a client can read the state: a base64url part that decodes to JSON
/// or holds the argument.
fn confidentiality(state: &str) -> Result<(), String> {
    for part in state.split('.') {
        if let Ok(bytes) = URL_SAFE_NO_PAD.decode(part) {
            if serde_json::from_slice::<Value>(&bytes).is_ok() {
                return Err("a part of the state decodes to JSON".into());
            }
            if String::from_utf8_lossy(&bytes).contains(ARG) {
                return Err("the state holds the argument".into());
            }
        }
    }
    Ok(())
}

/// Runs every probe on a fleet with `flaw` and asserts that exactly its check's
/// rule is broken.
fn breaks_only_its_rule(flaw: Flaw) {
    let fleet = Fleet::start(flaw);
    let results = Probe {
        fleet: &fleet,
        refusals: Vec::new(),
        results_without_type: Vec::new(),
    }
    .run();
    let ids: Vec<&str> = results.keys().copied().collect();
    let mut all = CHECKS.to_vec();
    all.sort_unstable();
    assert_eq!(ids, all, "a probe per check");
    let broken: Vec<&str> = results
        .iter()
        .filter(|(_, r)| r.is_err())
        .map(|(id, _)| *id)
        .collect();
    let mut expected: Vec<&str> = flaw.checks().to_vec();
    expected.sort_unstable();
    assert_eq!(broken, expected, "{flaw:?}: {results:#?}");
}

macro_rules! probes {
    ($($test:ident => $flaw:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                breaks_only_its_rule(Flaw::$flaw);
            }
        )*

        /// The table above names every flaw.
        #[test]
        fn every_flaw_has_a_probe_test() {
            let listed = [$(Flaw::$flaw),*];
            assert_eq!(listed.len(), Flaw::ALL.len());
            for f in Flaw::ALL {
                assert!(listed.contains(&f), "{f:?}");
            }
        }
    };
}

probes! {
    correct_toy_breaks_no_rule => None,
    accepts_tampered_state_breaks_integrity => AcceptsTamperedState,
    readable_state_breaks_confidentiality => ReadableState,
    unbound_arguments_break_binding_arguments => UnboundArguments,
    unbound_tool_breaks_binding_tool => UnboundTool,
    unbound_method_breaks_binding_method => UnboundMethod,
    unbound_principal_breaks_binding_principal => UnboundPrincipal,
    shared_default_key_breaks_foreign_key => SharedDefaultKey,
    per_process_key_breaks_fleet => PerProcessKey,
    ignored_ttl_breaks_expiry => IgnoresTtl,
    leaked_reason_breaks_leaks_and_binding_principal => LeaksReason,
    distinct_errors_break_error_uniformity => DistinctErrors,
    undeclared_ask_breaks_capability_gate => AsksUndeclared,
    input_required_on_a_list_breaks_carriers => InputRequiredOnList,
    wrong_kind_accepted_breaks_answers_validated => AcceptsWrongKind,
    no_size_cap_breaks_no_rule => NoSizeCap,
    no_result_type_breaks_result_type => NoResultType,
    tool_errors_as_protocol_errors_break_error_channels => ToolErrorsAsProtocolErrors,
    plain_text_transport_errors_break_error_channels => PlainTextTransportErrors,
    ignored_origin_breaks_error_channels => IgnoresOrigin,
    empty_ok_on_size_breaks_size_caps => EmptyOkOnSize,
    content_with_input_required_breaks_result_type => ContentWithInputRequired,
    reprompts_on_other_arguments_break_binding_arguments_and_principal => RepromptsOnOtherArguments,
    data_says_which_breaks_leaks_and_binding_principal => DataSaysWhich,
    principal_refused_with_403_breaks_binding_principal_and_uniformity => PrincipalRefusedWith403,
    takes_answers_without_state_breaks_answers_validated => TakesAnswersWithoutState,
    replay_guard_keyed_by_answers_breaks_replay_after_complete => ReplayGuardKeyedByAnswers,
}

/// Every check has a flaw (some have several, one per class of fault), and no
/// flaw names another id.
#[test]
fn the_flaws_cover_every_check() {
    let mut named: Vec<&str> = Flaw::ALL.iter().flat_map(|f| f.checks()).copied().collect();
    named.sort_unstable();
    named.dedup();
    let mut expected: Vec<&str> = CHECKS.to_vec();
    expected.sort_unstable();
    assert_eq!(named, expected);
}

// ---------------------------------------------------------------------------
// The correct toy's replies, exactly.
// ---------------------------------------------------------------------------

fn json_of(r: &HttpResponse) -> Value {
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    r.json()
}

#[test]
fn the_correct_toy_lists_asks_and_completes() {
    let t = Toy::start(Config::new(Flaw::None, toy::random_key()));
    let tools = json_of(&post(t.addr, &list("tools/list"), ALICE));
    assert_eq!(tools["result"]["resultType"], "complete");
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["confirm_action", "ask_name"]);
    assert_eq!(
        tools["result"]["tools"][0]["inputSchema"]["required"],
        json!(["item"])
    );
    let prompts = json_of(&post(t.addr, &list("prompts/list"), ALICE));
    assert_eq!(prompts["result"]["prompts"][0]["name"], "confirm_action");
    assert_eq!(
        prompts["result"]["prompts"][0]["arguments"][0]["required"],
        true
    );
    for (m, key) in [
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let v = json_of(&post(t.addr, &list(m), ALICE));
        assert_eq!(
            v["result"],
            json!({"resultType": "complete", key: []}),
            "{m}"
        );
    }

    // confirm_action: the form, then done or cancelled.
    let base = confirm_call();
    let r = post(t.addr, &base, ALICE);
    assert_eq!(r.status, 200);
    let v = json_of(&r);
    assert_eq!(v["id"], 1);
    let res = &v["result"];
    assert_eq!(res["resultType"], "input_required");
    assert_eq!(
        res["inputRequests"]["confirm"],
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": format!("Confirm {ARG}?"),
            "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}}})
    );
    let state = res["requestState"].as_str().unwrap().to_owned();
    let done = json_of(&post(
        t.addr,
        &retry(&base, Some(&state), Some(confirm_yes())),
        ALICE,
    ));
    assert_eq!(
        done,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "content": [{"type": "text", "text": format!("done: {ARG}")}]}})
    );
    for answer in [
        accept(json!({"confirm": false})),
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
    ] {
        let v = json_of(&post(
            t.addr,
            &retry(&base, Some(&state), Some(json!({"confirm": answer}))),
            ALICE,
        ));
        assert_eq!(
            v["result"]["content"][0]["text"],
            format!("cancelled: {ARG}"),
            "{v}"
        );
    }
    // The final round may be replayed.
    let again = json_of(&post(
        t.addr,
        &retry(&base, Some(&state), Some(confirm_yes())),
        ALICE,
    ));
    assert_eq!(
        again["result"]["content"][0]["text"],
        format!("done: {ARG}")
    );

    // ask_name.
    let name = first("tools/call", "ask_name", json!({"item": ARG}), &all_caps());
    let v = json_of(&post(t.addr, &name, ALICE));
    assert_eq!(
        v["result"]["inputRequests"]["name"]["params"]["requestedSchema"],
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );
    let s = v["result"]["requestState"].as_str().unwrap();
    let v = json_of(&post(
        t.addr,
        &retry(
            &name,
            Some(s),
            Some(json!({"name": accept(json!({"name": "Ada"}))})),
        ),
        ALICE,
    ));
    assert_eq!(v["result"]["content"][0]["text"], "Hello, Ada!");

    // The prompt.
    let prompt = first(
        "prompts/get",
        "confirm_action",
        json!({"item": ARG}),
        &all_caps(),
    );
    let v = json_of(&post(t.addr, &prompt, ALICE));
    let s = v["result"]["requestState"].as_str().unwrap();
    let v = json_of(&post(
        t.addr,
        &retry(&prompt, Some(s), Some(confirm_yes())),
        ALICE,
    ));
    assert_eq!(
        v["result"],
        json!({"resultType": "complete", "description": "A message about the item",
               "messages": [{"role": "user", "content": {"type": "text", "text": format!("Confirm {ARG}: yes")}}]})
    );
}

#[test]
fn the_correct_toy_refuses_every_bad_state_alike() {
    let fleet = Fleet::start(Flaw::None);
    let t = fleet.main.addr;
    let base = confirm_call();
    let v = json_of(&post(t, &base, ALICE));
    let state = v["result"]["requestState"].as_str().unwrap().to_owned();
    let frozen = json!({"jsonrpc": "2.0", "id": 2, "error": {"code": FROZEN_CODE, "message": FROZEN_MESSAGE}});
    let mut flipped = URL_SAFE_NO_PAD.decode(&state).unwrap();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let cases = [
        (
            t,
            ALICE,
            retry(
                &base,
                Some(&URL_SAFE_NO_PAD.encode(&flipped)),
                Some(confirm_yes()),
            ),
        ),
        (
            t,
            ALICE,
            retry(&base, Some("not a state"), Some(confirm_yes())),
        ),
        (
            t,
            ALICE,
            retry(
                &base,
                Some(&"A".repeat(toy::MAX_STATE + 1)),
                Some(confirm_yes()),
            ),
        ),
        (t, BOB, retry(&base, Some(&state), Some(confirm_yes()))),
        (
            fleet.foreign.addr,
            ALICE,
            retry(&base, Some(&state), Some(confirm_yes())),
        ),
        (
            t,
            ALICE,
            retry(
                &first(
                    "tools/call",
                    "confirm_action",
                    json!({"item": ARG2}),
                    &all_caps(),
                ),
                Some(&state),
                Some(confirm_yes()),
            ),
        ),
    ];
    for (addr, who, body) in cases {
        let r = post(addr, &body, who);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(json_of(&r), frozen, "{body}");
    }
    // A body over 256 KiB: 413 with a JSON-RPC error, id null.
    let mut big = confirm_call();
    big["params"]["arguments"]["pad"] = json!("x".repeat(toy::MAX_BODY));
    let r = post(t, &big, ALICE);
    assert_eq!(r.status, 413);
    let v = json_of(&r);
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], -32600);
    // A notification: 202, no body.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": meta(&all_caps())}});
    let r = post(t, &note, ALICE);
    assert_eq!((r.status, r.body.len()), (202, 0));
}

#[test]
fn the_correct_toy_gates_on_capabilities() {
    let t = Toy::start(Config::new(Flaw::None, toy::random_key()));
    for caps in [json!({}), json!({"elicitation": {"url": {}}})] {
        let r = post(
            t.addr,
            &first("tools/call", "confirm_action", json!({"item": ARG}), &caps),
            ALICE,
        );
        assert_eq!(r.status, 400);
        assert_eq!(
            json_of(&r)["error"],
            json!({"code": -32021, "message": "Missing required client capability",
                   "data": {"requiredCapabilities": {"elicitation": {"form": {}}}}})
        );
    }
    for caps in [
        json!({"elicitation": {}}),
        json!({"elicitation": {"form": {}}}),
    ] {
        let r = post(
            t.addr,
            &first("tools/call", "confirm_action", json!({"item": ARG}), &caps),
            ALICE,
        );
        assert!(
            Outcome::of(&r).asks_again("confirm"),
            "{caps}: {}",
            r.text()
        );
    }
}

#[test]
fn the_toy_states_are_sealed_except_the_readable_flaw() {
    let sealed = Toy::start(Config::new(Flaw::None, toy::random_key()));
    let readable = Toy::start(Config::new(Flaw::ReadableState, toy::random_key()));
    let state = |t: &Toy| {
        let v = json_of(&post(t.addr, &confirm_call(), ALICE));
        v["result"]["requestState"].as_str().unwrap().to_owned()
    };
    assert!(confidentiality(&state(&sealed)).is_ok());
    let s = state(&readable);
    let (body, _) = s.split_once('.').unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).unwrap()).unwrap();
    assert_eq!(claims["arguments"], json!({"item": ARG}));
    assert_eq!(claims["principal"], "alice");
}

#[test]
fn the_leaky_and_the_distinct_toys_say_what_they_should_not() {
    let leaky = Fleet::start(Flaw::LeaksReason);
    let base = confirm_call();
    let r = post(
        leaky.main.addr,
        &retry(&base, Some(&"A".repeat(64)), Some(confirm_yes())),
        ALICE,
    );
    let e = &json_of(&r)["error"];
    assert_eq!(
        (e["code"].as_i64(), e["message"].as_str()),
        (Some(FROZEN_CODE), Some(FROZEN_MESSAGE))
    );
    assert!(e["data"]["reason"].is_string(), "{e}");

    let distinct = Fleet::start(Flaw::DistinctErrors);
    let t = distinct.main.addr;
    let v = json_of(&post(t, &base, ALICE));
    let state = v["result"]["requestState"].as_str().unwrap().to_owned();
    let bad = json_of(&post(
        t,
        &retry(&base, Some("AAAA"), Some(confirm_yes())),
        ALICE,
    ));
    let other = json_of(&post(
        t,
        &retry(&base, Some(&state), Some(confirm_yes())),
        BOB,
    ));
    assert_eq!(
        bad["error"],
        json!({"code": -32602, "message": "Invalid requestState"})
    );
    assert_eq!(
        other["error"],
        json!({"code": -32600, "message": "Invalid requestState"})
    );
}
