//! The state presented where it does not belong: other arguments, another tool,
//! another method, another user, another key; and where it must still open
//! (another instance of the fleet) or no longer (after its lifetime).

use std::io::Write;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::super::answer::{self, Marks};
use super::super::catalog::{CheckId, Severity};
use super::super::flow::{Baseline, Listed, carrier, retry};
use super::super::outcome::Outcome;
use super::super::run::Context;
use super::super::target::{Exchange, McpHeaders, Spent, Who, all_caps};
use super::super::text::cut;
use super::{
    BadState, CheckResult, Findings, Looks, Verdict, evidence, fresh_state, judge_bad_state, skip,
};

const FIX_BINDING: &str = "Put the method, the tool (or prompt or resource) name and a digest of the \
     canonical arguments inside the integrity-protected state, and refuse a state presented on \
     any other request with the one JSON-RPC error used for every bad state.";

/// Why a binding check cannot tell anything: the server needs no state there,
/// and took the misplaced one as it would take none.
const STATE_FREE: &str = "the server completes this retry without any state (the control) and \
     took the misplaced one too: the state binds nothing here, so this shows nothing";

/// One misplaced state's reply, to be judged.
struct Trial<'a> {
    /// What came back.
    ex: &'a Exchange,
    /// Every key the flow had asked.
    asked: &'a Map<String, Value>,
    /// What was sent, for the evidence.
    sent: &'a str,
    /// The finding a taken state makes.
    taken: Verdict<'a>,
    /// Whether the flow goes on without any state (the control).
    state_free: bool,
}

/// Records the verdict on one misplaced state (see [`BadState`]) as a finding
/// (or not). A state taken where the flow goes on without any state
/// (`state_free`) shows nothing: the result is `None`, and the check is skipped.
/// `Some(true)` when it was rejected.
fn judge(f: &mut Findings, t: Trial<'_>) -> Option<bool> {
    let verdict = BadState::of(t.ex, t.asked);
    if verdict == BadState::Taken && t.state_free {
        return None;
    }
    judge_bad_state(f, verdict, t.ex, t.sent, t.taken);
    Some(verdict == BadState::Rejected)
}

/// `args` with the value of one argument changed: the audit's marked string
/// replaced by another, else the first string, number or boolean changed.
fn changed(args: &Value, marks: &Marks) -> Option<(String, Value)> {
    let obj = args.as_object()?;
    let name = answer::marked_argument(args, marks).or_else(|| {
        obj.iter()
            .find(|(_, v)| v.is_string() || v.is_number() || v.is_boolean())
            .map(|(k, _)| k.clone())
    })?;
    let mut out = obj.clone();
    let new = match &obj[&name] {
        Value::String(s) if *s == marks.arg() => json!(marks.other_arg()),
        Value::String(s) => json!(format!("{s}-other")),
        Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) + 1.0),
        Value::Bool(b) => json!(!b),
        _ => return None,
    };
    out.insert(name.clone(), new);
    Some((name, Value::Object(out)))
}

pub(super) async fn arguments(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let id = CheckId::BindingArguments;
    let Some((name, args)) = changed(&b.arguments, &ctx.marks) else {
        return Ok(skip(
            id,
            "the tool takes no argument the audit can change (give --tool and --args with a string argument)",
        ));
    };
    let mut first = b.first.clone();
    first["params"]["arguments"] = args;
    let ex = match presented(ctx, b, id, &first, None, Who::Main).await? {
        Ok(ex) => ex,
        Err(skipped) => return Ok(skipped),
    };
    let sent = format!("the state with another value of the argument {name:?}");
    let detail = format!("the argument {name:?} changed under the state");
    Ok(judged(
        ctx,
        b,
        Findings::new(id),
        &ex,
        Misplaced {
            sent: &sent,
            taken: Verdict {
                severity: Severity::Medium,
                title: "a state opens for other arguments than its own",
                fix: FIX_BINDING,
            },
            detail: &detail,
        },
    ))
}

/// The first call of `method` `name` with `arguments`: its first request and
/// what it asked, when it answers input_required.
async fn asking(
    ctx: &mut Context<'_>,
    method: &str,
    name: &str,
    arguments: &Value,
) -> Result<Option<(Value, Map<String, Value>)>, Spent> {
    let rid = ctx.target.id();
    let first = carrier(rid, method, name, arguments, &all_caps());
    let ex = ctx.target.send(Who::Main, &first).await?;
    Ok(match Outcome::of(&ex) {
        Outcome::InputRequired { requests, .. } if !requests.is_empty() => Some((first, requests)),
        _ => None,
    })
}

/// The first of `candidates` (at most six) that asks on `method`: its name,
/// its first request, what it asked, and whether it was called with the
/// baseline's arguments. The baseline's arguments are tried first where it
/// takes them (then only the tool or the method differs), else its own.
async fn other_asking(
    ctx: &mut Context<'_>,
    b: &Baseline,
    method: &str,
    candidates: &[Listed],
) -> Result<Option<(String, Value, Map<String, Value>, bool)>, Spent> {
    for Listed {
        name,
        arguments: own,
        ..
    } in candidates.iter().take(6)
    {
        let mut same = own.clone();
        if let (Some(o), Some(base)) = (same.as_object_mut(), b.arguments.as_object()) {
            for (k, v) in base {
                o.insert(k.clone(), v.clone());
            }
        }
        let tries = if same == *own {
            vec![(own, false)]
        } else {
            vec![(&same, true), (own, false)]
        };
        for (args, same_args) in tries {
            if let Some((first, requests)) = asking(ctx, method, name, args).await? {
                return Ok(Some((
                    name.clone(),
                    first,
                    requests,
                    same_args || *args == b.arguments,
                )));
            }
        }
    }
    Ok(None)
}

/// The state of the baseline presented on `method` for the first of
/// `candidates` that asks (another tool, or a prompt), with both flows'
/// answers; skipped with `none` when none of them asks.
async fn transplant(
    ctx: &mut Context<'_>,
    b: &Baseline,
    id: CheckId,
    method: &str,
    candidates: &[Listed],
    none: &str,
) -> Result<CheckResult, Spent> {
    if b.state().is_none() {
        return Ok(skip(id, "the server hands out no requestState"));
    }
    let found = other_asking(ctx, b, method, candidates).await?;
    let Some((name, first, requests, same_args)) = found else {
        return Ok(skip(id, none));
    };
    let (round, state) = match fresh_state(ctx, b, Who::Main, id).await? {
        Ok(r) => r,
        Err(skipped) => return Ok(skipped),
    };
    let mut answers = answer::answers(&requests, &ctx.marks);
    for (k, v) in &round.answers {
        answers.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let rid = ctx.target.id();
    let control = retry(&first, rid, None, Some(&answers));
    let cex = ctx.target.send(Who::Main, &control).await?;
    let state_free = Outcome::of(&cex).progressed(&requests);
    let rid = ctx.target.id();
    let body = retry(&first, rid, Some(&state), Some(&answers));
    let ex = ctx.target.send(Who::Main, &body).await?;
    let sent = format!(
        "the state of {} {:?} on {method} {name:?}",
        b.method, b.name
    );
    ctx.keep_refusal(id, &sent, &ex);
    let mut f = Findings::new(id);
    let title = if method == b.method {
        "a state of one tool opens for another"
    } else {
        "a state of one method opens for another"
    };
    let trial = Trial {
        ex: &ex,
        asked: &requests,
        sent: &sent,
        taken: Verdict {
            severity: Severity::Medium,
            title,
            fix: FIX_BINDING,
        },
        state_free,
    };
    if judge(&mut f, trial).is_none() {
        return Ok(skip(
            id,
            format!(
                "{method} {name:?} completes without any state and took the misplaced one too: \
                 the state binds nothing there, so this shows nothing"
            ),
        ));
    }
    Ok(f.done(format!(
        "presented on {method} {name:?} {}",
        if same_args {
            "with the same arguments"
        } else {
            "with its own arguments (a refusal may be for the arguments)"
        }
    )))
}

pub(super) async fn tool(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let none = "no other tool answers input_required";
    transplant(ctx, b, CheckId::BindingTool, "tools/call", &b.tools, none).await
}

pub(super) async fn method(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let none = "no prompt answers input_required (prompts/get)";
    transplant(
        ctx,
        b,
        CheckId::BindingMethod,
        "prompts/get",
        &b.prompts,
        none,
    )
    .await
}

pub(super) async fn principal(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let id = CheckId::BindingPrincipal;
    if ctx.plan.as_other.is_empty() {
        return Ok(skip(
            id,
            "needs --as-other 'Name: value', the credentials of a second user",
        ));
    }
    // The other user must be able to call the tool at all.
    let rid = ctx.target.id();
    let mut own = b.first.clone();
    own["id"] = json!(rid);
    let ex = ctx.target.send(Who::Other, &own).await?;
    if !matches!(
        Outcome::of(&ex),
        Outcome::InputRequired { .. } | Outcome::Complete { .. }
    ) {
        return Ok(skip(
            id,
            format!(
                "the second user cannot call the tool ({}), so it cannot show whose state opens",
                Outcome::of(&ex).describe()
            ),
        ));
    }
    let ex = match presented(ctx, b, id, &b.first, None, Who::Other).await? {
        Ok(ex) => ex,
        Err(skipped) => return Ok(skipped),
    };
    // The cross-user oracle: the first user's state presented by the second on
    // a request with another argument value too. A server that checks the
    // request before the principal answers the two differently, and so tells
    // the second user whether a guessed argument of the first user's flow is
    // right.
    let mut f = Findings::new(id);
    if BadState::of(&ex, &b.asked()) != BadState::Taken
        && let Some((name, args)) = changed(&b.arguments, &ctx.marks)
    {
        let mut first = b.first.clone();
        first["params"]["arguments"] = args;
        if let Ok(changed_ex) = presented(ctx, b, id, &first, None, Who::Other).await? {
            let sent = format!(
                "the first user's state, as the second user, with another value of the \
                 argument {name:?}"
            );
            ctx.keep_refusal(id, &sent, &changed_ex);
            let looks = |ex: &Exchange| {
                Looks::of(ex).map_or_else(|| Outcome::of(ex).describe(), |l| l.shown())
            };
            let (right, wrong) = (looks(&ex), looks(&changed_ex));
            if right != wrong {
                f.add(
                    Severity::Medium,
                    "another user is told whether a guessed argument is right (the request is \
                     checked before the principal)",
                    "Check the principal before (or together with) the request, and answer \
                     every mismatch with the one JSON-RPC error used for every bad state.",
                    format!(
                        "on its own request: {}; on one with another {name:?}: {}",
                        cut(&right, 110),
                        cut(&wrong, 110)
                    ),
                );
            }
        }
    }
    Ok(judged(
        ctx,
        b,
        f,
        &ex,
        Misplaced {
            sent: "the first user's state, as the second user (--as-other)",
            taken: Verdict {
                severity: Severity::Critical,
                title: "a state of one user opens for another",
                fix: "Bind the authenticated principal (for OAuth, the token's issuer and subject) \
                  inside the integrity-protected state, and refuse a state presented by anyone else.",
            },
            detail: "presented by the second user",
        },
    ))
}

/// A fresh key round's state (begun as the first user), presented with `first`
/// (the baseline's first request, or one with other arguments) to `url` (the
/// server when `None`) as `who`.
async fn presented(
    ctx: &mut Context<'_>,
    b: &Baseline,
    id: CheckId,
    first: &Value,
    url: Option<&str>,
    who: Who,
) -> Result<Result<Exchange, CheckResult>, Spent> {
    let (round, state) = match fresh_state(ctx, b, Who::Main, id).await? {
        Ok(r) => r,
        Err(skipped) => return Ok(Err(skipped)),
    };
    let rid = ctx.target.id();
    let body = retry(first, rid, Some(&state), Some(&round.answers));
    Ok(Ok(ctx
        .target
        .send_to(url, who, &body, McpHeaders::Derived)
        .await?))
}

/// A state presented where it does not belong, and what taking it means.
struct Misplaced<'a> {
    /// What was sent, for the evidence.
    sent: &'a str,
    /// The finding a taken state makes.
    taken: Verdict<'a>,
    /// The check's detail when it ran.
    detail: &'a str,
}

/// The check's result for the misplaced state `ex` answered (with what `f`
/// already holds): kept as a refusal, judged, and skipped where the server
/// needs no state.
fn judged(
    ctx: &mut Context<'_>,
    b: &Baseline,
    mut f: Findings,
    ex: &Exchange,
    m: Misplaced<'_>,
) -> CheckResult {
    let id = f.id;
    ctx.keep_refusal(id, m.sent, ex);
    let judged = judge(
        &mut f,
        Trial {
            ex,
            asked: &b.asked(),
            sent: m.sent,
            taken: m.taken,
            state_free: !b.needs_state,
        },
    );
    if judged.is_none() {
        return skip(id, STATE_FREE);
    }
    f.done(m.detail)
}

/// Whether `url` answers the tool's first call by asking.
async fn answers_the_tool(
    ctx: &mut Context<'_>,
    b: &Baseline,
    url: &str,
) -> Result<Option<String>, Spent> {
    let rid = ctx.target.id();
    let mut first = b.first.clone();
    first["id"] = json!(rid);
    let ex = ctx
        .target
        .send_to(Some(url), Who::Main, &first, McpHeaders::Derived)
        .await?;
    Ok(match Outcome::of(&ex) {
        Outcome::InputRequired { .. } => None,
        o => Some(o.describe()),
    })
}

pub(super) async fn foreign_key(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let id = CheckId::ForeignKey;
    let Some(url) = ctx.plan.foreign_url.clone() else {
        return Ok(skip(
            id,
            "needs --foreign-url URL, an instance with another key",
        ));
    };
    if let Some(got) = answers_the_tool(ctx, b, &url).await? {
        return Ok(skip(
            id,
            format!("the foreign instance does not ask as the server does ({got})"),
        ));
    }
    let ex = match presented(ctx, b, id, &b.first, Some(&url), Who::Main).await? {
        Ok(ex) => ex,
        Err(skipped) => return Ok(skipped),
    };
    Ok(judged(
        ctx,
        b,
        Findings::new(id),
        &ex,
        Misplaced {
            sent: "the state, to the instance with another key",
            taken: Verdict {
                severity: Severity::Critical,
                title: "a state opens under another key",
                fix: "Verify the state with the instance's own keys only (check that --foreign-url \
                  really has another key).",
            },
            detail: "presented to the instance with another key",
        },
    ))
}

pub(super) async fn fleet(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let id = CheckId::Fleet;
    let Some(url) = ctx.plan.peer_url.clone() else {
        return Ok(skip(
            id,
            "needs --peer-url URL, another instance that shares the key",
        ));
    };
    let ex = match presented(ctx, b, id, &b.first, Some(&url), Who::Main).await? {
        Ok(ex) => ex,
        Err(skipped) => return Ok(skipped),
    };
    let mut f = Findings::new(id);
    if !Outcome::of(&ex).progressed(&b.asked()) {
        f.add(
            Severity::Medium,
            "another instance of the fleet cannot resume the flow",
            "Give every instance the same keys (the first one seals, all of them open), the same \
             audience and the same tools, so that a retry resumes wherever it lands.",
            evidence("the state, to the other instance (--peer-url)", &ex),
        );
    }
    Ok(f.done("a fresh state presented to the other instance"))
}

/// A flow begun on `url` (its first request, what it asked, its state),
/// answered and resumed there: the reply, and what had been asked.
async fn resume(
    ctx: &mut Context<'_>,
    url: Option<&str>,
    (first, requests, state): &(Value, Map<String, Value>, String),
) -> Result<(Exchange, Map<String, Value>), Spent> {
    let answers = answer::answers(requests, &ctx.marks);
    let rid = ctx.target.id();
    let body = retry(first, rid, Some(state), Some(&answers));
    let ex = ctx
        .target
        .send_to(url, Who::Main, &body, McpHeaders::Derived)
        .await?;
    Ok((ex, requests.clone()))
}

pub(super) async fn expiry(
    ctx: &mut Context<'_>,
    b: &Baseline,
    progress: &mut (dyn Write + Send),
) -> Result<CheckResult, Spent> {
    let id = CheckId::Expiry;
    let Some(ttl) = ctx.plan.ttl else {
        return Ok(skip(
            id,
            "needs --ttl SECONDS: the state's lifetime plus the clock skew the server allows \
             (--ttl alone serves a server whose lifetime is fixed and short; --ttl-url names \
             an instance configured with a short one)",
        ));
    };
    let url = ctx.plan.ttl_url.clone();
    // Two fresh flows: one resumed at once (the control: the state works there),
    // one after the lifetime.
    let mut flows = Vec::new();
    for _ in 0..2 {
        let rid = ctx.target.id();
        let mut first = b.first.clone();
        first["id"] = json!(rid);
        let ex = ctx
            .target
            .send_to(url.as_deref(), Who::Main, &first, McpHeaders::Derived)
            .await?;
        match Outcome::of(&ex) {
            Outcome::InputRequired {
                requests,
                state: Some(state),
            } => flows.push((first, requests, state)),
            o => {
                return Ok(skip(
                    id,
                    format!(
                        "the TTL instance does not hand out a state for the tool ({})",
                        o.describe()
                    ),
                ));
            }
        }
    }
    let (ex, requests) = resume(ctx, url.as_deref(), &flows[0]).await?;
    if !Outcome::of(&ex).progressed(&requests) {
        return Ok(skip(
            id,
            format!(
                "a fresh state does not resume there either ({}), so its expiry cannot be told apart",
                Outcome::of(&ex).describe()
            ),
        ));
    }
    let wait = ttl + Duration::from_secs(1);
    if ctx.target.time_left() <= wait {
        return Ok(skip(
            id,
            format!(
                "waiting {} s for a state to lapse would pass the audit's deadline (raise \
                 --deadline above --ttl and the other checks' time)",
                wait.as_secs()
            ),
        ));
    }
    let _ = writeln!(
        progress,
        "audit: expiry: waiting {} s for a state to lapse",
        wait.as_secs()
    );
    tokio::time::sleep(wait).await;
    let (ex, requests) = resume(ctx, url.as_deref(), &flows[1]).await?;
    let sent = format!("a state {} s after it was issued", wait.as_secs());
    ctx.keep_refusal(id, &sent, &ex);
    let mut f = Findings::new(id);
    let fix = "Put an expiry inside the integrity-protected state and reject the state after it \
               with the one JSON-RPC error used for every bad state.";
    let verdict = BadState::of(&ex, &requests);
    if verdict == BadState::Taken && !b.needs_state {
        return Ok(skip(id, STATE_FREE));
    }
    judge_bad_state(
        &mut f,
        verdict,
        &ex,
        &sent,
        Verdict {
            severity: Severity::Medium,
            title: "a state is taken after its lifetime",
            fix,
        },
    );
    Ok(f.done(format!(
        "a fresh state resumed there; another presented {} s after it was issued",
        wait.as_secs()
    )))
}
