//! [`CliHandler`]: answers input requests from `--answers`, the flags, or the
//! terminal, and declares only what it can answer.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

use mrtr::wire::JsonObject;
use mrtr::wire::RequestedSchema;
use mrtr::wire::{ClientCapabilities, ElicitationCapability, SamplingCapability};
use mrtr::wire::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, InputKind,
    InputResponse, ListRootsResult, Root,
};
use mrtr_client::{BoxFuture, HandlerError, InputContext, InputHandler};

use super::args::root_of;
use super::prompt::{ask_form, ask_roots, ask_sampling, ask_url, kind_of, problem_list};
use super::sanitize::Sanitized;

/// Answers input requests from `--answers`, the flags, or the terminal.
#[derive(Debug)]
pub(super) struct CliHandler {
    pub(super) answers: Map<String, Value>,
    pub(super) sampling_reply: Option<String>,
    /// The roots of `--root`; `None` when none was given.
    pub(super) roots: Option<Vec<Root>>,
    pub(super) interactive: bool,
    /// One dialog at a time on the terminal (a round's questions run concurrently).
    pub(super) terminal: tokio::sync::Mutex<()>,
    /// Set when the flow failed for want of a usable answer: exit 2 (usage), not 3.
    pub(super) failed_closed: AtomicBool,
    /// The questions answered from the command line, by key: a server that asks
    /// one of them again did not take the answer, and would not take it resent.
    pub(super) sent: Mutex<HashMap<String, Sent>>,
    /// Set when the server asked again for an answer given on the command line:
    /// exit 4 (refused).
    pub(super) refused: AtomicBool,
}

/// A question answered from the command line (`--answers`, `--sampling-reply`,
/// `--root`).
#[derive(Debug)]
pub(super) struct Sent {
    /// The round whose result asked it.
    round: u32,
    kind: InputKind,
    /// What the question asks for: a form's schema or a link. A question with
    /// another one is a new question, not the same one asked again.
    asks: Option<Value>,
    /// The question's message, to tell the server's note on a re-ask apart from it.
    message: Option<String>,
}

/// A question, as far as telling it from a re-ask of itself goes.
struct Question<'a> {
    kind: InputKind,
    asks: Option<Value>,
    message: Option<&'a str>,
}

impl<'a> Question<'a> {
    fn of_elicit(params: &'a ElicitParams) -> Option<Self> {
        Some(match params {
            ElicitParams::Form(f) => Self {
                kind: InputKind::ElicitForm,
                asks: Some(f.requested_schema.to_value()),
                message: Some(&f.message),
            },
            ElicitParams::Url(u) => Self {
                kind: InputKind::ElicitUrl,
                asks: Some(Value::String(u.url.clone())),
                message: Some(&u.message),
            },
            _ => return None,
        })
    }

    /// A sampling or roots request: its key and kind are all that is compared.
    fn bare(kind: InputKind) -> Self {
        Self {
            kind,
            asks: None,
            message: None,
        }
    }
}

impl CliHandler {
    /// The `--answers` entry for the question, parsed as the asked kind; an error
    /// when the server asks again for a question it was already sent for.
    fn given(
        &self,
        ctx: &InputContext,
        question: &Question<'_>,
    ) -> Option<Result<InputResponse, HandlerError>> {
        let (key, kind) = (&ctx.key, question.kind);
        let v = self.answers.get(key)?;
        if let Err(e) = self.first_ask(ctx, question, &format!("--answers[{key:?}]")) {
            return Some(Err(e));
        }
        Some(InputResponse::parse_as(kind, v).map_err(|e| {
            // A bad answer on the command line is a usage error.
            self.failed_closed.store(true, Ordering::Relaxed);
            HandlerError::Failed(format!(
                "--answers[{key:?}] is not a valid {} answer: {e}",
                kind.as_str()
            ))
        }))
    }

    /// Records that `source` (a flag) answers the question, or fails when it
    /// already answered the same question in an earlier round: the server did not
    /// take that answer, and the same answer sent again would only be refused
    /// again, round after round. The error shows the server's note, the part of
    /// the message the question did not have before (MRTR servers say there why
    /// an answer was not taken).
    fn first_ask(
        &self,
        ctx: &InputContext,
        question: &Question<'_>,
        source: &str,
    ) -> Result<(), HandlerError> {
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(before) = sent.get(&ctx.key)
            && before.round < ctx.round
            && before.kind == question.kind
            && before.asks == question.asks
        {
            self.refused.store(true, Ordering::Relaxed);
            let note = match (question.message, before.message.as_deref()) {
                (Some(now), Some(then)) => now.strip_prefix(then).unwrap_or(now).trim(),
                _ => "",
            };
            let why = if note.is_empty() {
                "without saying why".to_owned()
            } else {
                format!("with this note: {note}")
            };
            return Err(HandlerError::Failed(format!(
                "the server did not take the answer from {source} and asks again, {why}"
            )));
        }
        sent.insert(
            ctx.key.clone(),
            Sent {
                round: ctx.round,
                kind: question.kind,
                asks: question.asks.clone(),
                message: question.message.map(str::to_owned),
            },
        );
        Ok(())
    }

    /// Whether some `--answers` entry has the shape of an answer to `kind`.
    fn answers_kind(&self, kind: InputKind) -> bool {
        self.answers.values().any(|v| {
            matches!(
                (kind, InputResponse::from_value(v)),
                (InputKind::Sampling, Ok(InputResponse::CreateMessage(_)))
                    | (InputKind::Roots, Ok(InputResponse::ListRoots(_)))
            )
        })
    }

    fn closed(
        &self,
        ctx: &InputContext,
        kind: InputKind,
        form: Option<&RequestedSchema>,
    ) -> HandlerError {
        self.failed_closed.store(true, Ordering::Relaxed);
        let example = match (kind, form) {
            (InputKind::ElicitForm, Some(schema)) => {
                let fields: Vec<String> = schema
                    .properties
                    .iter()
                    .map(|(name, f)| format!("{name:?}: <{}>", kind_of(f)))
                    .collect();
                format!(r#"{{"action": "accept", "content": {{{}}}}}"#, fields.join(", "))
            }
            (InputKind::ElicitForm, None) => r#"{"action": "accept", "content": {...}}"#.to_owned(),
            (InputKind::ElicitUrl, _) => r#"{"action": "accept"}"#.to_owned(),
            (InputKind::Sampling, _) => {
                r#"{"role": "assistant", "content": {"type": "text", "text": "..."}, "model": "..."}"#.to_owned()
            }
            (InputKind::Roots, _) => r#"{"roots": [{"uri": "file:///..."}]}"#.to_owned(),
            // A kind this client does not know (`InputKind` may grow).
            _ => "{...}".to_owned(),
        };
        HandlerError::Failed(format!(
            "no terminal to ask on (stdin is not a terminal, or --no-input); answer it with --answers '{{{:?}: {example}}}'",
            ctx.key
        ))
    }

    async fn dialog<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn BufRead, &mut dyn Write) -> T + Send + 'static,
    ) -> Result<T, HandlerError> {
        let _guard = self.terminal.lock().await;
        tokio::task::spawn_blocking(move || {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            let mut output = Sanitized::new(std::io::stderr());
            f(&mut input, &mut output)
        })
        .await
        .map_err(|e| HandlerError::Failed(format!("terminal dialog failed: {e}")))
    }
}

fn expect_elicit(r: InputResponse) -> ElicitResult {
    match r {
        InputResponse::Elicit(e) => e,
        // parse_as with an elicitation kind only yields Elicit.
        _ => ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
        },
    }
}

impl InputHandler for CliHandler {
    fn capabilities(&self) -> ClientCapabilities {
        let sampling = self.sampling_reply.is_some()
            || self.interactive
            || self.answers_kind(InputKind::Sampling);
        let roots = self.roots.is_some() || self.interactive || self.answers_kind(InputKind::Roots);
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: Some(JsonObject::new()),
                ..Default::default()
            }),
            sampling: sampling.then(SamplingCapability::default),
            roots: roots.then(JsonObject::new),
            ..Default::default()
        }
    }

    fn elicit(
        &self,
        ctx: InputContext,
        params: ElicitParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        Box::pin(async move {
            let schema = match &params {
                ElicitParams::Form(f) => Some(&f.requested_schema),
                _ => None,
            };
            // None: an elicitation mode this client does not know (`ElicitParams` may grow).
            let question = Question::of_elicit(&params).ok_or(HandlerError::Unsupported)?;
            let kind = question.kind;
            if let Some(r) = self.given(&ctx, &question) {
                let mut answer = r.map(expect_elicit)?;
                // An accepted form from the command line is checked like a typed one,
                // and sent without keys the form does not define.
                if let (Some(schema), Some(content)) = (schema, &answer.content)
                    && answer.action == ElicitAction::Accept
                {
                    let kept = schema.validate_content(content).map_err(|problems| {
                        self.failed_closed.store(true, Ordering::Relaxed);
                        HandlerError::Failed(format!(
                            "--answers[{:?}] does not fit the form: {}",
                            ctx.key,
                            problem_list(&problems)
                        ))
                    })?;
                    answer.content = Some(kept);
                }
                return Ok(answer);
            }
            if !self.interactive {
                return Err(self.closed(&ctx, kind, schema));
            }
            match params {
                ElicitParams::Form(form) => self.dialog(move |i, o| ask_form(&form, i, o)).await?,
                ElicitParams::Url(url) => self.dialog(move |i, o| ask_url(&url, i, o)).await?,
                _ => return Err(HandlerError::Unsupported),
            }
            .map_err(|e| HandlerError::Failed(format!("terminal: {e}")))
        })
    }

    fn create_message(
        &self,
        ctx: InputContext,
        params: CreateMessageParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        Box::pin(async move {
            let question = Question::bare(InputKind::Sampling);
            if let Some(r) = self.given(&ctx, &question) {
                return r.map(|a| match a {
                    InputResponse::CreateMessage(m) => m,
                    _ => model_reply(String::new()),
                });
            }
            if let Some(text) = &self.sampling_reply {
                self.first_ask(&ctx, &question, "--sampling-reply")?;
                return Ok(model_reply(text.clone()));
            }
            if !self.interactive {
                return Err(self.closed(&ctx, InputKind::Sampling, None));
            }
            let reply = self
                .dialog(move |i, o| ask_sampling(&params, i, o))
                .await?
                .map_err(|e| HandlerError::Failed(format!("terminal: {e}")))?;
            reply.map(model_reply).ok_or(HandlerError::Declined)
        })
    }

    fn list_roots(
        &self,
        ctx: InputContext,
    ) -> BoxFuture<'_, Result<ListRootsResult, HandlerError>> {
        Box::pin(async move {
            let question = Question::bare(InputKind::Roots);
            if let Some(r) = self.given(&ctx, &question) {
                return r.map(|a| match a {
                    InputResponse::ListRoots(l) => l,
                    _ => ListRootsResult { roots: vec![] },
                });
            }
            if let Some(roots) = &self.roots {
                self.first_ask(&ctx, &question, "--root")?;
                return Ok(ListRootsResult {
                    roots: roots.clone(),
                });
            }
            if !self.interactive {
                return Err(self.closed(&ctx, InputKind::Roots, None));
            }
            let here = std::env::current_dir()
                .and_then(|d| root_of(&d))
                .map_err(|e| {
                    HandlerError::Failed(format!("cannot read the current directory: {e}"))
                })?;
            let offered = here.clone();
            let shared = self
                .dialog(move |i, o| ask_roots(&offered, i, o))
                .await?
                .map_err(|e| HandlerError::Failed(format!("terminal: {e}")))?;
            if shared {
                Ok(ListRootsResult { roots: vec![here] })
            } else {
                Err(HandlerError::Declined)
            }
        })
    }
}

fn model_reply(text: String) -> CreateMessageResult {
    CreateMessageResult {
        role: "assistant".into(),
        content: json!({"type": "text", "text": text}),
        model: "mrtr-call-user".into(),
        stop_reason: Some("endTurn".into()),
        meta: None,
    }
}
