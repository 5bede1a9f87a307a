//! The capability gate (MCP 2026-07-28, MRTR §Capability negotiation): every row of the gating
//! table through `capability::missing`, and `capability::gate` turning required
//! asks the client cannot serve into -32021 with exactly the missing
//! (sub-)capabilities, and optional ones into `Decision::Drop`.

use super::{Decision, Necessity, gate, missing};
use crate::error::{ErrorKind, code};
use crate::streamable_http::error_status;
use crate::wire::{ClientCapabilities, InputRequest};
use serde_json::{Value, json};

fn caps(v: Value) -> ClientCapabilities {
    serde_json::from_value(v).unwrap()
}

fn ask(v: Value) -> InputRequest {
    InputRequest::from_value(&v).unwrap()
}

fn form() -> InputRequest {
    ask(json!({"method": "elicitation/create", "params": {
        "message": "Your GitHub username?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}))
}

fn form_explicit() -> InputRequest {
    ask(json!({"method": "elicitation/create", "params": {
        "mode": "form", "message": "Your GitHub username?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}))
}

fn url() -> InputRequest {
    ask(json!({"method": "elicitation/create", "params": {
        "mode": "url", "message": "Sign in", "url": "https://mcp.example.com/connect"}}))
}

fn sampling_with(extra: Value) -> InputRequest {
    let mut p = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10
    });
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    ask(json!({"method": "sampling/createMessage", "params": p}))
}

fn sampling() -> InputRequest {
    sampling_with(json!({}))
}

fn tool() -> Value {
    json!({"name": "get_weather", "inputSchema": {"type": "object"}})
}

fn roots() -> InputRequest {
    ask(json!({"method": "roots/list"}))
}

/// `missing` as JSON (`null` when the request may be sent).
fn need(declared: Value, request: &InputRequest) -> Value {
    missing(&caps(declared), request).map_or(Value::Null, |c| c.to_value())
}

// ---------------------------------------------------------------------------
// The table, row by row
// ---------------------------------------------------------------------------

#[test]
fn form_elicitation() {
    for r in [form(), form_explicit()] {
        // `elicitation: {}` is `{form: {}}` for backward compatibility.
        assert_eq!(need(json!({"elicitation": {}}), &r), Value::Null);
        assert_eq!(need(json!({"elicitation": {"form": {}}}), &r), Value::Null);
        assert_eq!(
            need(json!({"elicitation": {"form": {}, "url": {}}}), &r),
            Value::Null
        );
        // A url-only client does not do forms.
        assert_eq!(
            need(json!({"elicitation": {"url": {}}}), &r),
            json!({"elicitation": {"form": {}}})
        );
        // No elicitation at all: name the capability as the spec's example does.
        assert_eq!(need(json!({}), &r), json!({"elicitation": {}}));
        assert_eq!(
            need(json!({"sampling": {}, "roots": {}}), &r),
            json!({"elicitation": {}})
        );
    }
}

#[test]
fn url_elicitation() {
    let r = url();
    assert_eq!(
        need(json!({"elicitation": {}}), &r),
        json!({"elicitation": {"url": {}}})
    );
    assert_eq!(
        need(json!({"elicitation": {"form": {}}}), &r),
        json!({"elicitation": {"url": {}}})
    );
    assert_eq!(need(json!({}), &r), json!({"elicitation": {"url": {}}}));
    assert_eq!(need(json!({"elicitation": {"url": {}}}), &r), Value::Null);
    assert_eq!(
        need(json!({"elicitation": {"form": {}, "url": {}}}), &r),
        Value::Null
    );
}

#[test]
fn plain_sampling() {
    let r = sampling();
    assert_eq!(need(json!({}), &r), json!({"sampling": {}}));
    assert_eq!(
        need(json!({"elicitation": {}, "roots": {}}), &r),
        json!({"sampling": {}})
    );
    assert_eq!(need(json!({"sampling": {}}), &r), Value::Null);
    assert_eq!(
        need(json!({"sampling": {"tools": {}, "context": {}}}), &r),
        Value::Null
    );
}

#[test]
fn sampling_with_tools_or_tool_choice() {
    for r in [
        sampling_with(json!({"tools": [tool()]})),
        sampling_with(json!({"toolChoice": {"mode": "auto"}})),
        sampling_with(json!({"toolChoice": {"mode": "none"}})),
        sampling_with(json!({"tools": [tool()], "toolChoice": {"mode": "required"}})),
        // An empty tools array is still the field.
        sampling_with(json!({"tools": []})),
    ] {
        assert_eq!(
            need(json!({"sampling": {}}), &r),
            json!({"sampling": {"tools": {}}})
        );
        assert_eq!(
            need(json!({"sampling": {"context": {}}}), &r),
            json!({"sampling": {"tools": {}}})
        );
        // Without sampling at all, sampling.tools names both.
        assert_eq!(need(json!({}), &r), json!({"sampling": {"tools": {}}}));
        assert_eq!(need(json!({"sampling": {"tools": {}}}), &r), Value::Null);
    }
}

#[test]
fn sampling_with_include_context() {
    for ctx in ["thisServer", "allServers"] {
        let r = sampling_with(json!({"includeContext": ctx}));
        assert_eq!(
            need(json!({"sampling": {}}), &r),
            json!({"sampling": {"context": {}}}),
            "{ctx}"
        );
        assert_eq!(
            need(json!({"sampling": {"tools": {}}}), &r),
            json!({"sampling": {"context": {}}})
        );
        assert_eq!(need(json!({}), &r), json!({"sampling": {"context": {}}}));
        assert_eq!(need(json!({"sampling": {"context": {}}}), &r), Value::Null);
    }
    // "none" needs nothing beyond sampling.
    let none = sampling_with(json!({"includeContext": "none"}));
    assert_eq!(need(json!({"sampling": {}}), &none), Value::Null);
    assert_eq!(need(json!({}), &none), json!({"sampling": {}}));
}

#[test]
fn sampling_with_tools_and_context_names_both() {
    let r = sampling_with(json!({"tools": [tool()], "includeContext": "allServers"}));
    assert_eq!(
        need(json!({"sampling": {}}), &r),
        json!({"sampling": {"tools": {}, "context": {}}})
    );
    assert_eq!(
        need(json!({"sampling": {"tools": {}}}), &r),
        json!({"sampling": {"context": {}}})
    );
    assert_eq!(
        need(json!({"sampling": {"context": {}}}), &r),
        json!({"sampling": {"tools": {}}})
    );
    assert_eq!(
        need(json!({"sampling": {"tools": {}, "context": {}}}), &r),
        Value::Null
    );
}

#[test]
fn roots_list() {
    let r = roots();
    assert_eq!(need(json!({}), &r), json!({"roots": {}}));
    assert_eq!(
        need(json!({"elicitation": {}, "sampling": {}}), &r),
        json!({"roots": {}})
    );
    assert_eq!(need(json!({"roots": {}}), &r), Value::Null);
    assert_eq!(
        need(json!({"roots": {"listChanged": true}}), &r),
        Value::Null
    );
    let with_meta = ask(json!({"method": "roots/list", "params": {"_meta": {"k": 1}}}));
    assert_eq!(need(json!({}), &with_meta), json!({"roots": {}}));
}

#[test]
fn experimental_and_extensions_grant_nothing() {
    let declared = json!({
        "experimental": {"elicitation": {}, "sampling": {}, "roots": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    });
    assert_eq!(need(declared.clone(), &form()), json!({"elicitation": {}}));
    assert_eq!(need(declared.clone(), &sampling()), json!({"sampling": {}}));
    assert_eq!(need(declared, &roots()), json!({"roots": {}}));
}

// ---------------------------------------------------------------------------
// Properties over every combination
// ---------------------------------------------------------------------------

fn all_requests() -> Vec<InputRequest> {
    vec![
        form(),
        form_explicit(),
        url(),
        sampling(),
        sampling_with(json!({"tools": [tool()]})),
        sampling_with(json!({"toolChoice": {"mode": "auto"}})),
        sampling_with(json!({"includeContext": "thisServer"})),
        sampling_with(json!({"includeContext": "allServers", "tools": [tool()]})),
        sampling_with(json!({"includeContext": "none"})),
        roots(),
    ]
}

fn all_declared() -> Vec<Value> {
    let mut out = vec![];
    for e in [
        None,
        Some(json!({})),
        Some(json!({"form": {}})),
        Some(json!({"url": {}})),
        Some(json!({"form": {}, "url": {}})),
    ] {
        for s in [
            None,
            Some(json!({})),
            Some(json!({"tools": {}})),
            Some(json!({"context": {}})),
            Some(json!({"tools": {}, "context": {}})),
        ] {
            for r in [None, Some(json!({}))] {
                let mut c = serde_json::Map::new();
                if let Some(e) = &e {
                    c.insert("elicitation".into(), e.clone());
                }
                if let Some(s) = &s {
                    c.insert("sampling".into(), s.clone());
                }
                if let Some(r) = &r {
                    c.insert("roots".into(), r.clone());
                }
                out.push(Value::Object(c));
            }
        }
    }
    out
}

/// What a client does with a -32021: declares the union of what it declared and
/// what was named, reading `elicitation: {}` as the `{form: {}}` it stands for
/// (MCP 2026-07-28, Client capabilities, elicitation) on both sides.
fn union(declared: &Value, named: &Value) -> Value {
    deep_union(&explicit_form(declared), &explicit_form(named))
}

fn explicit_form(c: &Value) -> Value {
    let mut c = c.clone();
    if let Some(e) = c.get_mut("elicitation").and_then(Value::as_object_mut)
        && !e.contains_key("form")
        && !e.contains_key("url")
    {
        e.insert("form".into(), json!({}));
    }
    c
}

fn deep_union(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut out = x.clone();
            for (k, v) in y {
                let merged = match out.get(k) {
                    Some(old) => deep_union(old, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (_, b) => b.clone(),
    }
}

#[test]
fn declaring_what_is_missing_is_enough() {
    let (mut checked, mut served) = (0usize, 0usize);
    for declared in all_declared() {
        for r in all_requests() {
            if let Some(m) = missing(&caps(declared.clone()), &r) {
                let fixed = union(&declared, &m.to_value());
                assert_eq!(
                    need(fixed.clone(), &r),
                    Value::Null,
                    "declared {declared} + missing {} = {fixed} still cannot serve {r:?}",
                    m.to_value()
                );
                checked += 1;
            } else {
                served += 1;
            }
        }
    }
    // The property was checked at all, on both sides: a search that found
    // nothing missing would pass it vacuously.
    assert!(
        checked > 0 && served > 0,
        "checked {checked}, served {served}"
    );
}

#[test]
fn missing_never_names_what_is_declared() {
    // A sub-capability already declared never appears in the missing set.
    let mut checked = 0usize;
    for declared in all_declared() {
        for r in all_requests() {
            let Some(m) = missing(&caps(declared.clone()), &r) else {
                continue;
            };
            checked += 1;
            let m = m.to_value();
            for (cap, sub) in [
                ("elicitation", "form"),
                ("elicitation", "url"),
                ("sampling", "tools"),
                ("sampling", "context"),
            ] {
                if declared.get(cap).and_then(|c| c.get(sub)).is_some() {
                    assert!(
                        m.get(cap).and_then(|c| c.get(sub)).is_none(),
                        "{declared} {r:?} -> {m}"
                    );
                }
            }
            if declared.get("roots").is_some() {
                assert!(m.get("roots").is_none(), "{declared} {r:?} -> {m}");
            }
        }
    }
    assert!(
        checked > 0,
        "no declaration missed anything: the check ran on nothing"
    );
}

#[test]
fn gate_agrees_with_missing_everywhere() {
    for declared in all_declared() {
        let c = caps(declared.clone());
        for r in all_requests() {
            let optional = gate(&c, [(&r, Necessity::Optional)]).unwrap();
            let required = gate(&c, [(&r, Necessity::Required)]);
            match missing(&c, &r) {
                None => {
                    assert_eq!(optional, vec![Decision::Send]);
                    assert_eq!(required.unwrap(), vec![Decision::Send]);
                }
                Some(m) => {
                    assert_eq!(optional, vec![Decision::Drop]);
                    let e = required.unwrap_err();
                    assert_eq!(
                        e.data(),
                        Some(&json!({"requiredCapabilities": m.to_value()}))
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// gate: -32021, Drop, mixed rounds
// ---------------------------------------------------------------------------

fn assert_32021(e: &crate::error::Error, required: Value) {
    assert_eq!(e.kind(), ErrorKind::MissingCapability);
    assert_eq!(e.code(), code::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(e.code(), -32021);
    assert_eq!(error_status(e), 400);
    assert_eq!(e.data(), Some(&json!({"requiredCapabilities": required})));
    let wire = e.to_jsonrpc(Some(&1.into()));
    assert_eq!(wire["error"]["code"], -32021);
    assert_eq!(wire["error"]["data"]["requiredCapabilities"], required);
    assert!(
        e.advice().is_none(),
        "-32021 is a protocol error, never a tool result"
    );
    assert!(e.to_tool_result().is_none());
}

#[test]
fn required_ask_without_capability_is_32021() {
    let e = gate(&caps(json!({})), [(&form(), Necessity::Required)]).unwrap_err();
    assert_32021(&e, json!({"elicitation": {}}));
    // The spec's example message.
    assert_eq!(
        e.public_message(),
        "Server requires the elicitation client capability for this request"
    );

    let e = gate(
        &caps(json!({"elicitation": {}})),
        [(&url(), Necessity::Required)],
    )
    .unwrap_err();
    assert_32021(&e, json!({"elicitation": {"url": {}}}));
    assert!(
        e.public_message().contains("elicitation.url"),
        "{}",
        e.public_message()
    );

    let tools = sampling_with(json!({"tools": [tool()]}));
    let e = gate(
        &caps(json!({"sampling": {}})),
        [(&tools, Necessity::Required)],
    )
    .unwrap_err();
    assert_32021(&e, json!({"sampling": {"tools": {}}}));
    assert!(
        e.public_message().contains("sampling.tools"),
        "{}",
        e.public_message()
    );
}

#[test]
fn two_required_asks_merge_their_missing_capabilities() {
    let e = gate(
        &caps(json!({"elicitation": {}})),
        [
            (&url(), Necessity::Required),
            (&roots(), Necessity::Required),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"elicitation": {"url": {}}, "roots": {}}));

    let e = gate(
        &caps(json!({"sampling": {}})),
        [
            (
                &sampling_with(json!({"tools": [tool()]})),
                Necessity::Required,
            ),
            (
                &sampling_with(json!({"includeContext": "thisServer"})),
                Necessity::Required,
            ),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"sampling": {"tools": {}, "context": {}}}));

    // Plain sampling and tool sampling: sampling.tools covers both.
    let e = gate(
        &caps(json!({})),
        [
            (&sampling(), Necessity::Required),
            (
                &sampling_with(json!({"toolChoice": {"mode": "auto"}})),
                Necessity::Required,
            ),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"sampling": {"tools": {}}}));

    // Everything at once from a client that declares nothing.
    let e = gate(
        &caps(json!({})),
        [
            (&url(), Necessity::Required),
            (&sampling(), Necessity::Required),
            (&roots(), Necessity::Required),
        ],
    )
    .unwrap_err();
    assert_32021(
        &e,
        json!({"elicitation": {"url": {}}, "sampling": {}, "roots": {}}),
    );
}

#[test]
fn form_and_url_both_required_name_both_modes() {
    // A client with no elicitation must declare both modes to serve a form and
    // a url ask: `{"url": {}}` alone would mean url-only (no forms).
    let e = gate(
        &caps(json!({})),
        [
            (&form(), Necessity::Required),
            (&url(), Necessity::Required),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"elicitation": {"form": {}, "url": {}}}));
    // In the other order too.
    let e = gate(
        &caps(json!({})),
        [
            (&url(), Necessity::Required),
            (&form_explicit(), Necessity::Required),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"elicitation": {"form": {}, "url": {}}}));
    // A url-only client asked for a form and a url: only form is missing.
    let e = gate(
        &caps(json!({"elicitation": {"url": {}}})),
        [
            (&form(), Necessity::Required),
            (&url(), Necessity::Required),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"elicitation": {"form": {}}}));
    // Two forms from a client without elicitation: the spec's plain shape.
    let e = gate(
        &caps(json!({})),
        [
            (&form(), Necessity::Required),
            (&form_explicit(), Necessity::Required),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"elicitation": {}}));
}

#[test]
fn merged_missing_set_is_enough_for_every_required_ask() {
    // Declaring the union of what was declared and what -32021 names serves
    // every required ask of the round, for every pair of asks.
    let requests = all_requests();
    for declared in all_declared() {
        let c = caps(declared.clone());
        for a in &requests {
            for b in &requests {
                let Err(e) = gate(&c, [(a, Necessity::Required), (b, Necessity::Required)]) else {
                    continue;
                };
                let named = &e.data().unwrap()["requiredCapabilities"];
                let fixed = caps(union(&declared, named));
                assert_eq!(
                    gate(&fixed, [(a, Necessity::Required), (b, Necessity::Required)])
                        .map_err(|e| e.data().cloned()),
                    Ok(vec![Decision::Send, Decision::Send]),
                    "declared {declared}, -32021 named {named}, asks {a:?} / {b:?}"
                );
            }
        }
    }
}

#[test]
fn optional_ask_without_capability_is_dropped() {
    let d = gate(&caps(json!({})), [(&form(), Necessity::Optional)]).unwrap();
    assert_eq!(d, vec![Decision::Drop]);
    let d = gate(
        &caps(json!({"elicitation": {}})),
        [(&url(), Necessity::Optional)],
    )
    .unwrap();
    assert_eq!(d, vec![Decision::Drop]);
    let d = gate(
        &caps(json!({"elicitation": {"url": {}}})),
        [(&form(), Necessity::Optional)],
    )
    .unwrap();
    assert_eq!(d, vec![Decision::Drop]);
}

#[test]
fn mixed_round() {
    let c = caps(json!({"elicitation": {}, "roots": {}}));
    let tools = sampling_with(json!({"tools": [tool()]}));
    // required asks the client can serve are sent, optional ones it cannot are dropped
    let d = gate(
        &c,
        [
            (&form(), Necessity::Required),
            (&url(), Necessity::Optional),
            (&roots(), Necessity::Required),
            (&tools, Necessity::Optional),
        ],
    )
    .unwrap();
    assert_eq!(
        d,
        vec![
            Decision::Send,
            Decision::Drop,
            Decision::Send,
            Decision::Drop
        ]
    );

    // One required ask missing fails the round, and names only what the
    // *required* asks lack (not the optional url/sampling).
    let e = gate(
        &caps(json!({"elicitation": {}})),
        [
            (&url(), Necessity::Optional),
            (&roots(), Necessity::Required),
            (&tools, Necessity::Optional),
            (&form(), Necessity::Required),
        ],
    )
    .unwrap_err();
    assert_32021(&e, json!({"roots": {}}));
}

#[test]
fn empty_round_and_default_necessity() {
    let none: [(&InputRequest, Necessity); 0] = [];
    assert_eq!(gate(&caps(json!({})), none).unwrap(), vec![]);
    assert_eq!(Necessity::default(), Necessity::Required);
}

#[test]
fn missing_capability_error_never_shows_request_content() {
    let secret_form = ask(json!({"method": "elicitation/create", "params": {
        "message": "SECRET-123", "requestedSchema": {"type": "object", "properties": {"SECRET-123": {"type": "string"}}}}}));
    let secret_url = ask(json!({"method": "elicitation/create", "params": {
        "mode": "url", "message": "m", "url": "https://example.com/?token=SECRET-123"}}));
    let e = gate(
        &caps(json!({})),
        [
            (&secret_form, Necessity::Required),
            (&secret_url, Necessity::Required),
        ],
    )
    .unwrap_err();
    let wire = e.to_jsonrpc(None).to_string();
    assert!(!wire.contains("SECRET-123"), "{wire}");
    assert!(!e.diagnostic().detail.contains("SECRET-123"));
}
