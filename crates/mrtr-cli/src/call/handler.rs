//! [`CliHandler`]: answers input requests from `--answers`, the flags, or the
//! terminal, and declares only what it can answer.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

use mrtr::answers::validate_content;
use mrtr::client::{BoxFuture, HandlerError, InputContext, InputHandler};
use mrtr::wire::JsonObject;
use mrtr::wire::input::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, InputKind,
    InputResponse, ListRootsResult, Root,
};
use mrtr::wire::meta::{ClientCapabilities, ElicitationCapability, SamplingCapability};
use mrtr::wire::schema::RequestedSchema;

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
}

impl CliHandler {
    /// The `--answers` entry for `key`, parsed as the asked kind.
    fn given(&self, key: &str, kind: InputKind) -> Option<Result<InputResponse, HandlerError>> {
        self.answers.get(key).map(|v| {
            InputResponse::parse_as(kind, v).map_err(|e| {
                // A bad answer on the command line is a usage error.
                self.failed_closed.store(true, Ordering::Relaxed);
                HandlerError::Failed(format!(
                    "--answers[{key:?}] is not a valid {} answer: {e}",
                    kind.as_str()
                ))
            })
        })
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
            let (kind, schema) = match &params {
                ElicitParams::Form(f) => (InputKind::ElicitForm, Some(&f.requested_schema)),
                ElicitParams::Url(_) => (InputKind::ElicitUrl, None),
                // An elicitation mode this client does not know (`ElicitParams` may grow).
                _ => return Err(HandlerError::Unsupported),
            };
            if let Some(r) = self.given(&ctx.key, kind) {
                let mut answer = r.map(expect_elicit)?;
                // An accepted form from the command line is checked like a typed one,
                // and sent without keys the form does not define.
                if let (Some(schema), Some(content)) = (schema, &answer.content)
                    && answer.action == ElicitAction::Accept
                {
                    let kept = validate_content(schema, content).map_err(|problems| {
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
            if let Some(r) = self.given(&ctx.key, InputKind::Sampling) {
                return r.map(|a| match a {
                    InputResponse::CreateMessage(m) => m,
                    _ => model_reply(String::new()),
                });
            }
            if let Some(text) = &self.sampling_reply {
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
            if let Some(r) = self.given(&ctx.key, InputKind::Roots) {
                return r.map(|a| match a {
                    InputResponse::ListRoots(l) => l,
                    _ => ListRootsResult { roots: vec![] },
                });
            }
            if let Some(roots) = &self.roots {
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
