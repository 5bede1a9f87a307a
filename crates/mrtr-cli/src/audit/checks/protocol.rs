//! The protocol rules around the state: the capability gate, the carriers,
//! `resultType`, answer validation, the error channels, size caps, and what a
//! replayed final round does.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::super::answer::{self, Kind, Marks};
use super::super::catalog::{CheckId, Severity};
use super::super::flow::{Baseline, carrier, list, retry};
use super::super::outcome::Outcome;
use super::super::run::Context;
use super::super::target::{Exchange, JSON, McpHeaders, Reply, Spent, Who, derived};
use super::super::text::shown;
use super::{CheckResult, Findings, evidence, fresh_state, skip};

/// The kinds of input the baseline asked for.
fn kinds(b: &Baseline) -> BTreeSet<Kind> {
    b.rounds
        .iter()
        .flat_map(|r| r.requests.values())
        .filter_map(answer::kind_of)
        .collect()
}

/// Judges the answer to a first call that declared `caps`, where `undeclared`
/// are the kinds the client left out.
fn gate(f: &mut Findings, ex: &Exchange, sent: &str, undeclared: &[Kind], http: bool) {
    match &ex.reply {
        Reply::Result(r) => {
            let asked: Vec<Kind> = r
                .get("inputRequests")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.values())
                .filter_map(answer::kind_of)
                .filter(|k| undeclared.contains(k))
                .collect();
            if !asked.is_empty() {
                let names: BTreeSet<&str> = asked.iter().map(|k| k.name()).collect();
                f.add(
                    Severity::High,
                    "an input request of a kind the client did not declare",
                    "Look at this request's _meta clientCapabilities before asking: leave out (or \
                     make optional) an ask of an undeclared kind, or answer -32021 with \
                     data.requiredCapabilities.",
                    format!(
                        "{}; it asked {}",
                        evidence(sent, ex),
                        names.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
        Reply::Error {
            code: -32021, data, ..
        } => {
            let shaped = data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .is_some_and(Value::is_object);
            if !shaped {
                f.add(
                    Severity::Low,
                    "-32021 without data.requiredCapabilities",
                    "Say which capabilities are missing: data: {\"requiredCapabilities\": {...}}.",
                    evidence(sent, ex),
                );
            }
            if http && ex.status != Some(400) {
                f.add(
                    Severity::Low,
                    "-32021 without HTTP 400",
                    "Answer MissingRequiredClientCapability with HTTP 400.",
                    evidence(sent, ex),
                );
            }
        }
        Reply::Error { .. } => {}
        Reply::NotJsonRpc | Reply::Failed(_) => f.add(
            Severity::Low,
            "a request without a capability breaks (no JSON-RPC reply)",
            "Answer -32021 with data.requiredCapabilities, or go on without the ask.",
            evidence(sent, ex),
        ),
    }
}

pub(super) async fn capability_gate(
    ctx: &mut Context<'_>,
    b: &Baseline,
) -> Result<CheckResult, Spent> {
    let id = CheckId::CapabilityGate;
    let used = kinds(b);
    let http = ctx.target.is_http();
    let mut f = Findings::new(id);
    let every = [
        Kind::Form,
        Kind::Url,
        Kind::Sampling,
        Kind::SamplingTools,
        Kind::Roots,
    ];
    let rid = ctx.target.id();
    let bare = carrier(rid, b.method, &b.name, &b.arguments, &json!({}));
    let ex = ctx.target.send(Who::Main, &bare).await?;
    gate(
        &mut f,
        &ex,
        "the first call declaring no input capability",
        &every,
        http,
    );
    let mut variants: Vec<(String, Value, Vec<Kind>)> = used
        .iter()
        .map(|k| {
            (
                format!("the first call without {}", k.name()),
                k.caps_without(),
                vec![*k],
            )
        })
        .collect();
    if used.contains(&Kind::Url) {
        let mut caps = super::super::target::all_caps();
        caps["elicitation"] = json!({});
        variants.push((
            "the first call declaring elicitation {} (form only)".into(),
            caps,
            vec![Kind::Url],
        ));
    }
    for (sent, caps, undeclared) in variants {
        let rid = ctx.target.id();
        let body = carrier(rid, b.method, &b.name, &b.arguments, &caps);
        let ex = ctx.target.send(Who::Main, &body).await?;
        gate(&mut f, &ex, &sent, &undeclared, http);
    }
    let names: Vec<&str> = used.iter().map(|k| k.name()).collect();
    Ok(f.done(format!(
        "the baseline asks {}; each left out in turn, and all of them",
        names.join(", ")
    )))
}

pub(super) async fn carriers(ctx: &mut Context<'_>) -> Result<CheckResult, Spent> {
    let id = CheckId::Carriers;
    let mut f = Findings::new(id);
    let methods = [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ];
    for m in methods {
        let rid = ctx.target.id();
        let ex = ctx.target.send(Who::Main, &list(rid, m)).await?;
        if matches!(Outcome::of(&ex), Outcome::InputRequired { .. }) {
            f.add(
                Severity::High,
                "input_required on a method that is not a carrier",
                "Answer input_required only on tools/call, prompts/get and resources/read.",
                evidence(m, &ex),
            );
        }
    }
    Ok(f.done(format!("{} list methods asked", methods.len())))
}

pub(super) fn result_type(ctx: &mut Context<'_>) -> CheckResult {
    let id = CheckId::ResultType;
    if ctx.target.results.is_empty() {
        return skip(id, "no result was seen");
    }
    let mut f = Findings::new(id);
    let missing: BTreeSet<&str> = ctx
        .target
        .results
        .iter()
        .filter(|(_, has)| !has)
        .map(|(m, _)| m.as_str())
        .collect();
    for m in &missing {
        f.add(
            Severity::Low,
            "a result without resultType",
            "Put \"resultType\": \"complete\" (or \"input_required\") in every result.",
            format!("a result of {}", shown(m)),
        );
    }
    let mixed: BTreeSet<&str> = ctx.target.mixed.iter().map(String::as_str).collect();
    for m in &mixed {
        f.add(
            Severity::Low,
            "an input_required result also carries a success content (wire hygiene)",
            "Send content only in the complete result: an InputRequiredResult holds \
             inputRequests and requestState, and a client that reads content as the answer \
             acts on a result that is not there yet.",
            format!("an input_required result of {} with content", shown(m)),
        );
    }
    let n = ctx.target.results.len();
    f.done(format!("{n} results read"))
}

pub(super) async fn answers_validated(
    ctx: &mut Context<'_>,
    b: &Baseline,
) -> Result<CheckResult, Spent> {
    let id = CheckId::AnswersValidated;
    let round = b.key_round().clone();
    let Some((key, request)) = round
        .requests
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
    else {
        return Ok(skip(id, "the first round asks nothing"));
    };
    let marks = ctx.marks.clone();
    let cases = answer_cases(&round.answers, &key, &request, &marks);
    let mut f = Findings::new(id);
    if b.state().is_some() {
        answers_without_state(ctx, b, &round.answers, &mut f).await?;
    }
    for (sent, answers, should_go_on) in &cases {
        // Each case on a flow of its own: one that wrongly goes on may use it up.
        let state = match fresh_state(ctx, b, Who::Main, id).await? {
            Ok((_, state)) => Some(state),
            Err(_) if b.state().is_none() => None,
            Err(skipped) => return Ok(skipped),
        };
        let rid = ctx.target.id();
        let body = retry(&b.first, rid, state.as_deref(), answers.as_ref());
        let ex = ctx.target.send(Who::Main, &body).await?;
        let sent = format!("the retry with {sent}");
        judge_answers(&mut f, &ex, &sent, *should_go_on, &b.asked());
    }
    Ok(f.done(format!(
        "{} retries with answers that are not what was asked{}",
        cases.len(),
        if b.state().is_some() {
            ", and the right ones with no state"
        } else {
            ""
        }
    )))
}

/// One case of `answers-validated`: what is sent, the answers (none: no
/// inputResponses), and whether the flow must go on as the baseline did.
type Case = (String, Option<Map<String, Value>>, bool);

/// The answers `answers-validated` sends instead of the right ones (`right`),
/// where the round asked `key` with `request`.
fn answer_cases(
    right: &Map<String, Value>,
    key: &str,
    request: &Value,
    marks: &Marks,
) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    cases.push(("no inputResponses".into(), None, false));
    let mut unrequested = Map::new();
    unrequested.insert(
        "mrtr-audit-unrequested".into(),
        json!({"action": "accept", "content": {}}),
    );
    cases.push(("only an unrequested key".into(), Some(unrequested), false));
    let mut wrong = right.clone();
    wrong.insert(key.to_owned(), answer::wrong_kind(request, marks));
    cases.push((
        format!("an answer of another kind for {key:?}"),
        Some(wrong),
        false,
    ));
    if let Some(bad) = answer::schema_violation(request, marks) {
        let mut broken = right.clone();
        broken.insert(key.to_owned(), bad);
        cases.push((
            format!("a form answer for {key:?} that breaks its schema"),
            Some(broken),
            false,
        ));
    }
    let mut extra = right.clone();
    extra.insert(
        "mrtr-audit-extra".into(),
        json!({"action": "accept", "content": {}}),
    );
    cases.push((
        "the right answers and an extra unrequested key".into(),
        Some(extra),
        true,
    ));
    cases
}

/// The right answers (`right`) with no state at all, where the server gave
/// one: taken, they were never bound to the question, so a client can answer
/// on the first call what was never asked (elicitation: "Servers MUST bind
/// elicitation requests to client and user identity").
async fn answers_without_state(
    ctx: &mut Context<'_>,
    b: &Baseline,
    right: &Map<String, Value>,
    f: &mut Findings,
) -> Result<(), Spent> {
    let rid = ctx.target.id();
    let body = retry(&b.first, rid, None, Some(right));
    let ex = ctx.target.send(Who::Main, &body).await?;
    if Outcome::of(&ex).progressed(&b.asked()) {
        f.add(
            Severity::Medium,
            "answers are taken with no requestState at all: the question need never have \
             been asked",
            "Take answers only with the state of the round that asked for them (sealed, \
             bound to the request and the user), and ask again when it is missing.",
            evidence("the retry with the right answers and no requestState", &ex),
        );
    }
    Ok(())
}

/// Judges the reply `ex` to one case (`sent`): where the flow should go on
/// (`should_go_on`), that it did; else that the question was asked again
/// (`asked`: what the flow had asked).
fn judge_answers(
    f: &mut Findings,
    ex: &Exchange,
    sent: &str,
    should_go_on: bool,
    asked: &Map<String, Value>,
) {
    let o = Outcome::of(ex);
    if should_go_on {
        if !o.progressed(asked) {
            f.add(
                Severity::Low,
                "an extra, unrequested answer beside the right ones stops the flow",
                "Ignore inputResponses entries that were not asked for.",
                evidence(sent, ex),
            );
        }
        return;
    }
    if o.asks_again(asked) {
        return;
    }
    match o {
        o if o.progressed(asked) => f.add(
            Severity::High,
            "an answer that is missing or not what was asked is taken",
            "Check every answer against what was asked (its key, its kind, the form's \
             schema) and ask again for what is missing or wrong.",
            evidence(sent, ex),
        ),
        Outcome::Error { .. } | Outcome::Http(_) => f.add(
            Severity::Low,
            "a missing or wrong answer is a protocol error instead of a new question",
            "Answer a missing or wrong answer with a new InputRequiredResult asking again, \
             not an error: the client can always recover from a question.",
            evidence(sent, ex),
        ),
        _ => f.add(
            Severity::Low,
            "a missing or wrong answer is not asked again",
            "Answer a missing or wrong answer with a new InputRequiredResult asking again.",
            evidence(sent, ex),
        ),
    }
}

/// Whether `ex` is the JSON-RPC error `code`, over HTTP with `status`.
fn expect_error(
    f: &mut Findings,
    ex: &Exchange,
    sent: &str,
    code: i64,
    status: Option<u16>,
    what: &str,
) {
    match &ex.reply {
        Reply::Error { code: c, .. } if *c == code => {
            if let (Some(want), Some(got)) = (status, ex.status)
                && want != got
            {
                f.add(
                    Severity::Low,
                    &format!("{what}: the right code with another HTTP status"),
                    &format!("Answer {code} with HTTP {want} (Streamable HTTP, 2026-07-28)."),
                    evidence(sent, ex),
                );
            }
        }
        _ => f.add(
            Severity::Low,
            &format!("{what}: not the JSON-RPC error {code}"),
            &format!(
                "Answer it with the JSON-RPC error {code}{}.",
                status.map(|s| format!(" and HTTP {s}")).unwrap_or_default()
            ),
            evidence(sent, ex),
        ),
    }
}

/// A request the transport cannot take, and the refusal it calls for.
struct Unreadable {
    /// What was sent, for the evidence.
    sent: &'static str,
    /// The body.
    bytes: Vec<u8>,
    /// Its declared `Content-Type`.
    content_type: &'static str,
    /// The JSON-RPC error code asked (`None`: any).
    code: Option<i64>,
    /// Its name in a finding.
    what: &'static str,
}

/// What the transport must refuse before the request reaches the server's
/// methods, each with the JSON-RPC error code it calls for: a body that is not
/// JSON (-32700 Parse error), a batch (-32600 Invalid Request: batches are not
/// part of MCP since 2025-06-18), and a body declared as another media type
/// (Streamable HTTP: the body is `application/json`; HTTP 415 by preference,
/// with any JSON-RPC error code: neither JSON-RPC nor MCP names one for a media
/// type, so none is asked). Each must be a JSON-RPC error body, not plain
/// text, and an HTTP 4xx, never a 200.
async fn transport_refusals(ctx: &mut Context<'_>, f: &mut Findings) -> Result<(), Spent> {
    let rid = ctx.target.id();
    let probe = list(rid, "server/discover");
    let text = serde_json::to_string(&probe).unwrap_or_default();
    let cases = [
        Unreadable {
            sent: "a body that is not JSON (a request cut short)",
            bytes: text.as_bytes()[..text.len() - 1].to_vec(),
            content_type: JSON,
            code: Some(-32700),
            what: "a body that is not JSON",
        },
        Unreadable {
            sent: "a batch (a JSON array holding one server/discover)",
            bytes: format!("[{text}]").into_bytes(),
            content_type: JSON,
            code: Some(-32600),
            what: "a batch",
        },
        Unreadable {
            sent: "a server/discover declared Content-Type: text/plain",
            bytes: text.clone().into_bytes(),
            content_type: "text/plain",
            code: None,
            what: "a body of another media type",
        },
    ];
    for Unreadable {
        sent,
        bytes,
        content_type,
        code,
        what,
    } in cases
    {
        let Some(ex) = ctx.target.send_raw(&probe, bytes, content_type).await? else {
            return Ok(());
        };
        let status = ex.status.unwrap_or(0);
        match &ex.reply {
            Reply::Error { code: c, .. } if code.is_none_or(|code| *c == code) => {}
            Reply::Error { .. } => f.add(
                Severity::Low,
                &format!(
                    "{what}: another JSON-RPC error code than {}",
                    code.unwrap_or(0)
                ),
                &format!(
                    "Answer {what} with the JSON-RPC error {}.",
                    code.unwrap_or(0)
                ),
                evidence(sent, &ex),
            ),
            _ => f.add(
                Severity::Low,
                &format!("{what}: no JSON-RPC error body"),
                &format!(
                    "Answer {what} with a JSON-RPC error body ({}id null), Content-Type \
                     application/json, and an HTTP 4xx.",
                    code.map(|c| format!("code {c}, ")).unwrap_or_default()
                ),
                evidence(sent, &ex),
            ),
        }
        if !(400..500).contains(&status) {
            f.add(
                Severity::Low,
                &format!("{what}: not an HTTP 4xx"),
                "Refuse a request the transport cannot take with an HTTP 4xx (400; 415 for a \
                 wrong Content-Type), never a 200: a client or proxy reads the status first.",
                evidence(sent, &ex),
            );
        }
    }
    Ok(())
}

/// A request from a web page on another origin (DNS rebinding): Streamable
/// HTTP says a server MUST validate `Origin` and answer an invalid one with
/// HTTP 403.
async fn foreign_origin(ctx: &mut Context<'_>, f: &mut Findings) -> Result<(), Spent> {
    let rid = ctx.target.id();
    let probe = list(rid, "server/discover");
    let mut headers = derived(&probe);
    headers.push(("origin", "https://mrtr-audit.invalid".into()));
    let ex = ctx
        .target
        .send_to(None, Who::Main, &probe, McpHeaders::Given(headers))
        .await?;
    let sent = "a server/discover with Origin: https://mrtr-audit.invalid";
    match ex.status {
        Some(403) => {}
        Some(s) if (400..500).contains(&s) => f.add(
            Severity::Low,
            "a foreign Origin is refused, but not with HTTP 403",
            "Answer a request whose Origin is not allowed with HTTP 403 (Streamable HTTP).",
            evidence(sent, &ex),
        ),
        _ => f.add(
            Severity::Medium,
            "a request from a foreign Origin is served (DNS rebinding)",
            "Validate the Origin header of every request: allow your own origins (and \
             loopback ones for a local server), and answer any other with HTTP 403.",
            evidence(sent, &ex),
        ),
    }
    Ok(())
}

pub(super) async fn error_channels(
    ctx: &mut Context<'_>,
    b: &Baseline,
) -> Result<CheckResult, Spent> {
    let id = CheckId::ErrorChannels;
    let http = ctx.target.is_http();
    let mut f = Findings::new(id);
    request_errors(ctx, b, &mut f).await?;
    if http {
        transport_refusals(ctx, &mut f).await?;
        foreign_origin(ctx, &mut f).await?;
    }
    unknown_tool(ctx, &mut f).await?;
    let mut detail = "unknown method, no _meta, an unknown tool".to_owned();
    if http {
        detail.push_str(
            ", disagreeing headers, a body that is not JSON, a batch, a text/plain body, a \
             foreign Origin",
        );
    }
    if wrong_argument_type(ctx, b, &mut f).await? {
        detail.push_str(", an argument of the wrong type");
    }
    Ok(f.done(detail))
}

/// `error-channels` on requests that are wrong as requests: an unknown
/// method, a call without `_meta`, and (HTTP) an `Mcp-Name` header that
/// disagrees with the body.
async fn request_errors(
    ctx: &mut Context<'_>,
    b: &Baseline,
    f: &mut Findings,
) -> Result<(), Spent> {
    let http = ctx.target.is_http();
    let status = |s: u16| http.then_some(s);

    let rid = ctx.target.id();
    let mut unknown = list(rid, "mrtr-audit/no-such-method");
    unknown["method"] = json!("mrtr-audit/no-such-method");
    let ex = ctx.target.send(Who::Main, &unknown).await?;
    expect_error(
        f,
        &ex,
        "an unknown method",
        -32601,
        status(404),
        "an unknown method",
    );

    let rid = ctx.target.id();
    let mut no_meta = b.first.clone();
    no_meta["id"] = json!(rid);
    if let Some(p) = no_meta["params"].as_object_mut() {
        p.remove("_meta");
    }
    let ex = ctx.target.send(Who::Main, &no_meta).await?;
    expect_error(
        f,
        &ex,
        "the first call without _meta",
        -32602,
        status(400),
        "a request without _meta",
    );

    if http {
        let rid = ctx.target.id();
        let mut first = b.first.clone();
        first["id"] = json!(rid);
        let mut headers = derived(&first);
        for (name, value) in &mut headers {
            if *name == "mcp-name" {
                *value = "mrtr-audit-other-name".into();
            }
        }
        let ex = ctx
            .target
            .send_to(None, Who::Main, &first, McpHeaders::Given(headers))
            .await?;
        expect_error(
            f,
            &ex,
            "the first call with an Mcp-Name header that differs from the body",
            -32020,
            Some(400),
            "headers that disagree with the body",
        );
    }
    Ok(())
}

/// `error-channels` on a call of a tool that does not exist: a JSON-RPC error.
async fn unknown_tool(ctx: &mut Context<'_>, f: &mut Findings) -> Result<(), Spent> {
    let rid = ctx.target.id();
    let no_tool = carrier(
        rid,
        "tools/call",
        "mrtr-audit-no-such-tool",
        &json!({}),
        &super::super::target::all_caps(),
    );
    let ex = ctx.target.send(Who::Main, &no_tool).await?;
    if !matches!(ex.reply, Reply::Error { .. }) {
        f.add(
            Severity::Low,
            "an unknown tool is not a JSON-RPC error",
            "Answer a call of a tool that does not exist with a JSON-RPC error (-32602).",
            evidence("a call of a tool that does not exist", &ex),
        );
    }
    Ok(())
}

/// `error-channels` on the first call with a number for the audit's string
/// argument: a tool error, not a JSON-RPC error and not taken. `false` when
/// the tool has no such argument (nothing was sent).
async fn wrong_argument_type(
    ctx: &mut Context<'_>,
    b: &Baseline,
    f: &mut Findings,
) -> Result<bool, Spent> {
    let Some(name) = answer::marked_argument(&b.arguments, &ctx.marks) else {
        return Ok(false);
    };
    let rid = ctx.target.id();
    let mut wrong = b.first.clone();
    wrong["id"] = json!(rid);
    wrong["params"]["arguments"][&name] = json!(12345);
    let ex = ctx.target.send(Who::Main, &wrong).await?;
    let sent = format!("the first call with a number for the string argument {name:?}");
    match Outcome::of(&ex) {
        Outcome::Error { .. } => f.add(
            Severity::Low,
            "arguments of the wrong type are a JSON-RPC error, not a tool error",
            "Report invalid tool arguments as a tool result with isError: true and a message \
             the model can act on (tools.mdx, since 2025-11-25).",
            evidence(&sent, &ex),
        ),
        Outcome::Complete { is_error: false } => f.add(
            Severity::Low,
            "arguments of the wrong type are taken",
            "Validate tool arguments against the input schema; report a mismatch as a tool \
             result with isError: true.",
            evidence(&sent, &ex),
        ),
        _ => {}
    }
    Ok(true)
}

/// The fix for a state that is taken without being one the server issued.
const FIX_UNVERIFIED: &str = "Verify the state (an AEAD or an HMAC over its exact bytes) before \
     using it, and reject one that does not verify with the JSON-RPC error for a bad state.";

/// One MiB.
const MIB: usize = 1024 * 1024;

/// A request that did not go on must still say it was refused: a JSON-RPC
/// error or an HTTP 4xx. A 2xx (or 3xx) without a JSON-RPC reply, an empty
/// 200 above all, looks like success to a client and to a proxy. (A dropped
/// connection is not judged: a proxy in front may have cut it.)
fn unclear_refusal(f: &mut Findings, ex: &Exchange, sent: &str) {
    let refused = match Outcome::of(ex) {
        Outcome::Http(s) => s >= 400,
        _ => true,
    };
    if !refused {
        f.add(
            Severity::Low,
            "an oversized request gets neither a JSON-RPC error nor an HTTP 4xx",
            "Refuse an oversized request with HTTP 413 and a JSON-RPC error body (or the \
             JSON-RPC error for a bad state), never a 200 with an empty body or a dropped \
             connection.",
            evidence(sent, ex),
        );
    }
}

pub(super) async fn size_caps(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let id = CheckId::SizeCaps;
    let round = b.key_round().clone();
    let mut f = Findings::new(id);
    let fix = "Consider a body limit, and a requestState length limit checked before opening it \
               (HTTP 413, or the JSON-RPC error for a bad state), as the SEP's advice to limit \
               and throttle suggests.";

    let rid = ctx.target.id();
    let big_state = "A".repeat(MIB);
    let body = retry(&b.first, rid, Some(&big_state), Some(&round.answers));
    let ex = ctx.target.send(Who::Main, &body).await?;
    if Outcome::of(&ex).progressed(&b.asked()) {
        // Not a missing limit: 1 MiB of "A" is no state the server sealed, and
        // taking it breaks requirement 4 (MUST reject state that fails
        // verification), graded as `integrity` grades a replaced state.
        f.add(
            Severity::High,
            "a 1 MiB requestState (no state the server issued) is taken",
            FIX_UNVERIFIED,
            evidence("a 1 MiB requestState", &ex),
        );
    } else {
        unclear_refusal(&mut f, &ex, "a 1 MiB requestState");
    }

    let mut answers = round.answers.clone();
    if let Some((key, _)) = round.requests.iter().next() {
        let padded = match answers.get(key) {
            Some(a) if a.get("content").is_some_and(Value::is_object) => {
                let mut a = a.clone();
                a["content"]["mrtr_audit_padding"] = json!("a".repeat(MIB));
                a
            }
            _ => json!({"action": "accept", "content": {"mrtr_audit_padding": "a".repeat(MIB)}}),
        };
        answers.insert(key.clone(), padded);
    }
    let state = match fresh_state(ctx, b, Who::Main, id).await? {
        Ok((_, state)) => Some(state),
        Err(_) if b.state().is_none() => None,
        Err(skipped) => return Ok(skipped),
    };
    let rid = ctx.target.id();
    let body = retry(&b.first, rid, state.as_deref(), Some(&answers));
    let ex = ctx.target.send(Who::Main, &body).await?;
    if Outcome::of(&ex).progressed(&b.asked()) {
        // The spec sets no limit on inputResponses (nor on the state, the
        // rounds or the keys): a missing cap is a hardening note, not a finding.
        f.add(
            Severity::Info,
            "1 MiB of inputResponses is taken (the spec sets no limit: a hardening note)",
            fix,
            evidence("the right answers with 1 MiB of padding", &ex),
        );
    } else {
        unclear_refusal(&mut f, &ex, "the right answers with 1 MiB of padding");
    }
    Ok(f.done("a 1 MiB state and 1 MiB of answers"))
}

/// What a replay of the final round came back with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replayed {
    /// Refused, asked again, or anything else that did not go on.
    Refused,
    /// The first result again (`_meta` aside).
    Same,
    /// Another result: the flow ran again.
    Other,
}

impl Replayed {
    fn of(ex: &Exchange, b: &Baseline) -> Self {
        if !Outcome::of(ex).progressed(&b.asked()) {
            return Self::Refused;
        }
        let plain = |v: &Value| {
            let mut v = v.clone();
            v.as_object_mut().map(|o| o.remove("_meta"));
            v
        };
        match &ex.reply {
            Reply::Result(r) if plain(r) == plain(&b.last_result) => Self::Same,
            _ => Self::Other,
        }
    }
}

/// Single use: the final retry again, then again with another answer (a form
/// declined, another sampled text, no roots), each under a new id. A server
/// that refuses both keeps the flow to one use; one that gives the first
/// result to both answers from a cache; one that completes the other answer
/// differently ran the flow again. None of these is a rule broken (single use
/// is a MUST only where the server needs it, which the audit cannot see), but
/// a server that refuses the same replay and takes the other answer does need
/// it and keys its guard by the answers, not the flow: a side effect then
/// happens twice by changing one answer.
pub(super) async fn replay(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let id = CheckId::ReplayAfterComplete;
    let mut f = Findings::new(id);
    let mut again = b.last_retry.clone();
    again["id"] = json!(ctx.target.id());
    let same_ex = ctx.target.send(Who::Main, &again).await?;
    let same = Replayed::of(&same_ex, b);

    let round = b.key_round();
    let other_answers: Map<String, Value> = round
        .requests
        .iter()
        .map(|(k, r)| (k.clone(), answer::other_answer(r, &ctx.marks)))
        .collect();
    let mut other = b.last_retry.clone();
    other["id"] = json!(ctx.target.id());
    other["params"]["inputResponses"] = Value::Object(other_answers);
    let other_ex = ctx.target.send(Who::Main, &other).await?;
    let changed = Replayed::of(&other_ex, b);

    const GUARD: &str = "Where a side effect must happen at most once, enforce it server-side with a \
                         guard keyed by the flow (the state, or an id sealed in it), not by the \
                         request: a replay with other answers is the same flow.";
    let summary = match (same, changed) {
        (Replayed::Refused, Replayed::Refused) => {
            "a replay of the final round is refused, with the same answers and with others (single use)"
                .to_owned()
        }
        (Replayed::Refused, _) => {
            f.add(
                Severity::Medium,
                "the final round replayed is refused, but with another answer it completes again",
                GUARD,
                evidence("the final retry with another answer, under a new id", &other_ex),
            );
            "a replay is refused only when its answers are the same".to_owned()
        }
        (_, Replayed::Other) => {
            f.add(
                Severity::Info,
                "the final round can be replayed: with another answer it runs again and completes differently",
                GUARD,
                evidence("the final retry with another answer, under a new id", &other_ex),
            );
            "a replay runs the flow again (single use is not enforced)".to_owned()
        }
        (_, Replayed::Same) => {
            f.add(
                Severity::Info,
                "the final round can be replayed: the first result comes back, whatever the answer",
                "A cached result keeps a side effect to one run; if the tool reads the answers, \
                 it answers a replay with a result the new answers did not make.",
                evidence("the final retry with another answer, under a new id", &other_ex),
            );
            "a replay is answered with the first result (a cache, or a result that reads no answer)"
                .to_owned()
        }
        (_, Replayed::Refused) => {
            f.add(
                Severity::Info,
                "the final round can be replayed with the same answers (another answer is refused)",
                GUARD,
                evidence("the final retry again, under a new id", &same_ex),
            );
            format!(
                "the same replay completes; with another answer: {}",
                Outcome::of(&other_ex).describe()
            )
        }
    };
    Ok(f.done(summary))
}
