//! The baseline: a flow that asks, found on the server and completed once with
//! plain answers, which every check then departs from in one way.

use serde_json::{Map, Value, json};

use super::answer::{self, Marks};
use super::outcome::Outcome;
use super::run::Context;
use super::target::{Exchange, Reply, Spent, Who, all_caps, meta};
use super::text::{cut, shown};

/// The most rounds the baseline may take.
const MAX_ROUNDS: usize = 8;
/// The most tools tried when looking for one that asks.
const MAX_CANDIDATES: usize = 12;
/// The most flows that ask completed while looking for one that needs its state.
const MAX_ASKING: usize = 6;

/// One round of the baseline: the state it was given, what it asked, and what
/// the audit answered.
#[derive(Debug, Clone)]
pub(super) struct Round {
    pub(super) state: Option<String>,
    pub(super) requests: Map<String, Value>,
    pub(super) answers: Map<String, Value>,
}

/// A tool or prompt the server lists.
#[derive(Debug, Clone)]
pub(super) struct Listed {
    pub(super) name: String,
    /// Arguments the audit made for it.
    pub(super) arguments: Value,
    /// Whether its annotations say it is destructive (`destructiveHint: true`).
    pub(super) destructive: bool,
}

/// The flow the checks work on.
#[derive(Debug, Clone)]
pub(super) struct Baseline {
    pub(super) method: &'static str,
    pub(super) name: String,
    pub(super) arguments: Value,
    /// The first request, declaring every capability.
    pub(super) first: Value,
    /// The rounds that asked, in order (at least one).
    pub(super) rounds: Vec<Round>,
    /// The retry that completed.
    pub(super) last_retry: Value,
    /// The result it completed with.
    pub(super) last_result: Value,
    /// Whether the key round's retry fails without the state (the control).
    pub(super) needs_state: bool,
    /// The other tools listed (with arguments for them).
    pub(super) tools: Vec<Listed>,
    /// The prompts listed.
    pub(super) prompts: Vec<Listed>,
    /// `serverInfo`, if the server said.
    pub(super) server: Option<Value>,
    /// The protocol versions the server answered with, of each era it serves.
    pub(super) eras: Vec<String>,
}

impl Baseline {
    /// The round the checks work on: the last one, whose state carries
    /// whatever the earlier rounds gathered.
    pub(super) fn key_round(&self) -> &Round {
        &self.rounds[self.rounds.len() - 1]
    }

    /// Every key the flow asked, up to and including the key round.
    pub(super) fn asked(&self) -> Map<String, Value> {
        self.rounds
            .iter()
            .flat_map(|r| r.requests.clone())
            .collect()
    }

    /// The key round's state (`None` when the server hands out none).
    pub(super) fn state(&self) -> Option<&str> {
        self.key_round().state.as_deref()
    }
}

/// A fresh key round: the flow begun again as `who` (its first request under a
/// new id) and answered up to the key round, whose state has never been
/// presented. The checks present their altered or misplaced states in place of
/// a fresh one, so that a single-use guard on the final round can never make a
/// state look refused for the wrong reason. `None` when the server does not ask
/// the same way again.
pub(super) async fn fresh(
    ctx: &mut Context<'_>,
    b: &Baseline,
    who: Who,
) -> Result<Option<Round>, Spent> {
    let marks = ctx.marks.clone();
    let rid = ctx.target.id();
    let mut first = b.first.clone();
    first["id"] = json!(rid);
    let mut ex = ctx.target.send(who, &first).await?;
    for n in 0..b.rounds.len() {
        let Outcome::InputRequired { requests, state } = Outcome::of(&ex) else {
            return Ok(None);
        };
        if requests.is_empty() && state.is_none() {
            return Ok(None);
        }
        let answers = answer::answers(&requests, &marks);
        if n + 1 == b.rounds.len() {
            return Ok(Some(Round {
                state,
                requests,
                answers,
            }));
        }
        let rid = ctx.target.id();
        ex = ctx
            .target
            .send(who, &retry(&b.first, rid, state.as_deref(), Some(&answers)))
            .await?;
    }
    Ok(None)
}

/// A first request of `method` for `name` with `arguments`, declaring `caps`.
pub(super) fn carrier(id: u64, method: &str, name: &str, arguments: &Value, caps: &Value) -> Value {
    let mut params = json!({"_meta": meta(caps)});
    match method {
        "resources/read" => params["uri"] = json!(name),
        _ => {
            params["name"] = json!(name);
            params["arguments"] = arguments.clone();
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The retry of `first` under `id`, with `state` (if any) and `answers` (if any).
pub(super) fn retry(
    first: &Value,
    id: u64,
    state: Option<&str>,
    answers: Option<&Map<String, Value>>,
) -> Value {
    let mut r = first.clone();
    r["id"] = json!(id);
    if let Some(a) = answers {
        r["params"]["inputResponses"] = Value::Object(a.clone());
    }
    if let Some(s) = state {
        r["params"]["requestState"] = json!(s);
    }
    r
}

/// A list request (`tools/list`, ...).
pub(super) fn list(id: u64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta(&all_caps())}})
}

/// The most pages of one list the audit reads (`nextCursor` followed).
const MAX_LIST_PAGES: usize = 16;

/// Lists `method`'s items, following `nextCursor` for at most [`MAX_LIST_PAGES`]
/// pages, or nothing when the server refuses. A server that (wrongly) answers
/// a list with `input_required` is answered, a few rounds at most, so that the
/// audit still learns what it lists (the `carriers` check reports the fault).
async fn listed(ctx: &mut Context<'_>, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let spent = |why: Spent| format!("{} while listing", why.what());
    let id = ctx.target.id();
    let request = list(id, method);
    let mut ex = ctx.target.send(Who::Main, &request).await.map_err(spent)?;
    for _ in 0..3 {
        let Outcome::InputRequired { requests, state } = Outcome::of(&ex) else {
            break;
        };
        let answers = answer::answers(&requests, &ctx.marks);
        let id = ctx.target.id();
        let again = retry(&request, id, state.as_deref(), Some(&answers));
        ex = ctx.target.send(Who::Main, &again).await.map_err(spent)?;
    }
    let mut items = Vec::new();
    for page in 1..=MAX_LIST_PAGES {
        let Reply::Result(r) = &ex.reply else {
            break;
        };
        items.extend(
            r.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .cloned(),
        );
        let Some(cursor) = r.get("nextCursor").and_then(Value::as_str) else {
            break;
        };
        if page == MAX_LIST_PAGES {
            break;
        }
        let mut next = list(ctx.target.id(), method);
        next["params"]["cursor"] = Value::from(cursor);
        ex = ctx.target.send(Who::Main, &next).await.map_err(spent)?;
    }
    Ok(items)
}

/// What the server offers: its `serverInfo` (if it said), and its tools and
/// prompts with arguments the audit made for each.
struct Offered {
    /// `serverInfo`, from `server/discover`.
    server: Option<Value>,
    /// The protocol versions it serves: `server/discover`'s, and (over HTTP) the
    /// one a 2025-era `initialize` got.
    eras: Vec<String>,
    /// The tools of `tools/list`.
    tools: Vec<Listed>,
    /// The prompts of `prompts/list`.
    prompts: Vec<Listed>,
}

/// What trying one tool came to.
enum Tried {
    /// It asked, and its flow completed with plain answers (boxed: a baseline
    /// is large beside the other two).
    Completed(Box<Baseline>),
    /// It asked, but its flow did not complete: why.
    Failed(String),
    /// It did not ask: what it answered instead.
    NotAsking(String),
}

/// Finds the flow to work on and completes it once: the first tool whose flow
/// needs its state, else the first whose flow completes.
pub(super) async fn establish(ctx: &mut Context<'_>) -> Result<Baseline, String> {
    let offered = discover(ctx).await?;
    let candidates = candidates(ctx, &offered.tools);
    if candidates.is_empty() {
        return Err("the server lists no tools (tools/list), so there is no flow to audit".into());
    }
    let mut tried = Vec::new();
    // The first flow that asks, kept while a flow that needs its state is
    // looked for: on one that does not, a misplaced state may show nothing.
    let mut fallback: Option<Baseline> = None;
    let mut asking = 0;
    for c in &candidates {
        if asking >= MAX_ASKING {
            break;
        }
        match try_tool(ctx, c, &offered).await? {
            Tried::Completed(baseline) => {
                asking += 1;
                if baseline.needs_state {
                    return Ok(*baseline);
                }
                fallback.get_or_insert(*baseline);
            }
            Tried::Failed(e) if fallback.is_none() && ctx.plan.tool.is_some() => return Err(e),
            Tried::Failed(e) => {
                asking += 1;
                tried.push(e);
            }
            Tried::NotAsking(why) => tried.push(why),
        }
    }
    if let Some(b) = fallback {
        return Ok(b);
    }
    Err(format!(
        "no tool answered input_required (tried {}); name one with --tool NAME --args JSON",
        tried.join("; ")
    ))
}

/// At most this many protocol versions of a server are reported, each cut to
/// 16 characters: what a server says is never let grow the report.
const VERSIONS_SHOWN: usize = 4;

/// The strings of `supportedVersions`, newest first, bounded.
fn versions(v: Option<&Value>) -> Vec<String> {
    let mut all: Vec<&str> = v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    newest_first(&mut all);
    all.into_iter().map(|s| super::text::cut(s, 16)).collect()
}

/// `versions` sorted newest first (dates sort as strings), without repeats, at
/// most [`VERSIONS_SHOWN`].
fn newest_first<S: Ord>(versions: &mut Vec<S>) {
    versions.sort_by(|a, b| b.cmp(a));
    versions.dedup();
    versions.truncate(VERSIONS_SHOWN);
}

/// Whether the server serves 2025-era clients too (over HTTP only: a stdio
/// server's era is its process's): the version a 2025-11-25 `initialize` (no
/// 2026-07-28 `_meta`) gets, if it gets one. The session it may open is left
/// to expire.
async fn legacy_version(ctx: &mut Context<'_>) -> Option<String> {
    let id = ctx.target.id();
    let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mrtr-audit", "version": env!("CARGO_PKG_VERSION")}}});
    let answered = ctx.target.send(Who::Main, &init).await;
    // A 2025-era result has no resultType by design: not one the
    // `result-type` check reads.
    ctx.target.results.retain(|(m, _)| m != "initialize");
    match answered {
        Ok(Exchange {
            reply: Reply::Result(r),
            ..
        }) => versions(Some(&json!([r.get("protocolVersion")?]))).pop(),
        _ => None,
    }
}

/// Asks the server what it is (`server/discover`) and what it lists (tools
/// and prompts), making arguments for each.
async fn discover(ctx: &mut Context<'_>) -> Result<Offered, String> {
    let marks = ctx.marks.clone();
    let id = ctx.target.id();
    let discover = json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {"_meta": meta(&all_caps())}});
    let (server, mut eras) = match ctx.target.send(Who::Main, &discover).await {
        Ok(Exchange {
            reply: Reply::Result(r),
            ..
        }) => (
            r.get("_meta")
                .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
                .or_else(|| r.get("serverInfo"))
                .cloned(),
            versions(r.get("supportedVersions")),
        ),
        _ => (None, Vec::new()),
    };
    if ctx.target.is_http() {
        eras.extend(legacy_version(ctx).await);
        newest_first(&mut eras);
    }
    let tools = listed(ctx, "tools/list", "tools").await?;
    let prompts: Vec<Listed> = listed(ctx, "prompts/list", "prompts")
        .await?
        .iter()
        .filter_map(|p| {
            Some(Listed {
                name: p.get("name")?.as_str()?.to_owned(),
                arguments: answer::prompt_arguments(
                    p.get("arguments").unwrap_or(&Value::Null),
                    &marks,
                ),
                destructive: false,
            })
        })
        .collect();
    let tools: Vec<Listed> = tools
        .iter()
        .filter_map(|t| {
            Some(Listed {
                name: t.get("name")?.as_str()?.to_owned(),
                arguments: answer::arguments_for(
                    t.get("inputSchema").unwrap_or(&Value::Null),
                    &marks,
                ),
                destructive: t["annotations"]["destructiveHint"] == json!(true),
            })
        })
        .collect();
    Ok(Offered {
        server,
        eras,
        tools,
        prompts,
    })
}

/// The tools to try, in order: `--tool` alone when given, else the listed
/// ones, at most [`MAX_CANDIDATES`].
fn candidates(ctx: &Context<'_>, tools: &[Listed]) -> Vec<Listed> {
    match &ctx.plan.tool {
        Some((name, args)) => vec![Listed {
            name: name.clone(),
            arguments: args.clone(),
            destructive: false,
        }],
        None => {
            // Tools that say they are destructive last; among the rest, those
            // with an argument the audit can change first (the argument binding
            // check needs one). The sort is stable: otherwise the server's order.
            let mut c = tools.to_vec();
            c.sort_by_key(|t| {
                (
                    t.destructive,
                    answer::marked_argument(&t.arguments, &ctx.marks).is_none(),
                )
            });
            c.truncate(MAX_CANDIDATES);
            c
        }
    }
}

/// Calls the tool `c` and, when it asks, completes its flow.
async fn try_tool(ctx: &mut Context<'_>, c: &Listed, offered: &Offered) -> Result<Tried, String> {
    let id = ctx.target.id();
    let first = carrier(id, "tools/call", &c.name, &c.arguments, &all_caps());
    let ex = ctx
        .target
        .send(Who::Main, &first)
        .await
        .map_err(|why| format!("{} looking for a tool that asks", why.what()))?;
    Ok(match Outcome::of(&ex) {
        Outcome::InputRequired { requests, state } if state.is_some() || !requests.is_empty() => {
            let completed = complete(
                ctx,
                c,
                first,
                requests,
                state,
                &offered.tools,
                &offered.prompts,
            )
            .await;
            match completed {
                Ok(mut baseline) => {
                    baseline.server = offered.server.clone();
                    baseline.eras = offered.eras.clone();
                    Tried::Completed(Box::new(baseline))
                }
                Err(e) => Tried::Failed(e),
            }
        }
        other => Tried::NotAsking(format!(
            "{}: {}",
            shown(&cut(&c.name, 40)),
            other.describe()
        )),
    })
}

/// Answers every round of the flow that `first` began, then runs the control.
async fn complete(
    ctx: &mut Context<'_>,
    tool: &Listed,
    first: Value,
    mut requests: Map<String, Value>,
    mut state: Option<String>,
    tools: &[Listed],
    prompts: &[Listed],
) -> Result<Baseline, String> {
    let marks: Marks = ctx.marks.clone();
    let spent = |why: Spent| format!("{} completing the flow", why.what());
    let mut rounds = Vec::new();
    loop {
        let answers = answer::answers(&requests, &marks);
        rounds.push(Round {
            state: state.clone(),
            requests: requests.clone(),
            answers: answers.clone(),
        });
        let id = ctx.target.id();
        let r = retry(&first, id, state.as_deref(), Some(&answers));
        let ex = ctx.target.send(Who::Main, &r).await.map_err(spent)?;
        match Outcome::of(&ex) {
            Outcome::Complete { is_error: false } => {
                let key = &rounds[rounds.len() - 1];
                let id = ctx.target.id();
                let control = retry(&first, id, None, Some(&key.answers));
                let cex = ctx.target.send(Who::Main, &control).await.map_err(spent)?;
                let asked: Map<String, Value> =
                    rounds.iter().flat_map(|r| r.requests.clone()).collect();
                let needs_state = key.state.is_some() && !Outcome::of(&cex).progressed(&asked);
                return Ok(Baseline {
                    method: "tools/call",
                    name: tool.name.clone(),
                    arguments: tool.arguments.clone(),
                    first,
                    rounds,
                    last_retry: r,
                    last_result: match ex.reply {
                        Reply::Result(v) => v,
                        _ => Value::Null,
                    },
                    needs_state,
                    tools: tools
                        .iter()
                        .filter(|t| t.name != tool.name)
                        .cloned()
                        .collect(),
                    prompts: prompts.to_vec(),
                    server: None,
                    eras: Vec::new(),
                });
            }
            Outcome::InputRequired {
                requests: next,
                state: s,
            } if rounds.len() < MAX_ROUNDS => {
                requests = next;
                state = s;
            }
            other => {
                return Err(format!(
                    "the tool {} asked, but its flow did not complete with plain answers (round {}: {}); \
                     name another with --tool, or give --args that it completes with",
                    shown(&cut(&tool.name, 40)),
                    rounds.len(),
                    other.describe()
                ));
            }
        }
    }
}
