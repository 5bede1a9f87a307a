//! `completion/complete`: argument suggestions for prompts and resource templates.
//!
//! A server registers a completion *source* for one argument of a prompt
//! ([`Service::prompt_completion`](super::Service::prompt_completion)) or one
//! variable of a resource template
//! ([`Service::resource_template_completion`](super::Service::resource_template_completion),
//! keyed by the template's URI string). The source gets what the client has
//! typed so far and the arguments it already resolved ([`CompletionRequest`]) and
//! returns candidates ([`Completion`]), sync or async.
//!
//! What goes on the wire (spec 2026-07-28, `server/utilities/completion` and
//! `schema.ts` `CompleteRequestParams` / `CompleteResult`):
//!
//! ```text
//! params: {ref: {type: "ref/prompt", name} | {type: "ref/resource", uri},
//!          argument: {name, value}, context?: {arguments?: {name: value}}}
//! result: {resultType: "complete", completion: {values: [..≤100], total?, hasMore?}}
//! ```
//!
//! Completion is not a carrier: it never answers an `InputRequiredResult`
//! (MRTR, Supported Requests), which a source cannot even express, since it
//! returns a [`Completion`] or an [`Error`], never a round's [`Flow`](crate::engine::Flow).
//! The server advertises the `completions` capability only when a source is
//! registered; without one the method stays -32601, as for any capability the
//! server does not advertise.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde_json::{Map, Value, json};

use crate::engine::turn::{Awaited, await_within};
use crate::engine::{Later, Now, Outcome};
use crate::error::Error;
use crate::principal::Principal;
use crate::wire::meta::RequestMeta;
use crate::wire::type_name;

/// The method this module answers.
pub(super) const METHOD: &str = "completion/complete";

/// At most this many values in one answer (`CompleteResult.completion.values`,
/// `@maxItems 100`); a source's longer list is cut and answered with `hasMore`.
pub(crate) const MAX_VALUES: usize = 100;

/// The longest partial value (`argument.value`) and context argument value a
/// client may send, in bytes: what a user types into one field.
pub(crate) const MAX_VALUE_BYTES: usize = 4096;

/// The longest argument name a client may send (`argument.name` and the keys
/// of `context.arguments`), in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 256;

/// The most already-resolved arguments (`context.arguments`) a client may send.
pub(crate) const MAX_CONTEXT_ARGUMENTS: usize = 64;

/// What a completion source is asked: the argument being completed, the
/// partial value typed so far, the arguments the client already resolved, and
/// who asks.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    argument: String,
    value: String,
    context: BTreeMap<String, String>,
    principal: Principal,
}

impl CompletionRequest {
    /// The name of the argument (or URI template variable) being completed.
    pub fn argument(&self) -> &str {
        &self.argument
    }

    /// The partial value the client has so far (`argument.value`; may be empty).
    pub fn value(&self) -> &str {
        &self.value
    }

    /// One already-resolved argument from `context.arguments`, by name.
    pub fn context(&self, name: &str) -> Option<&str> {
        self.context.get(name).map(String::as_str)
    }

    /// Every already-resolved argument from `context.arguments` (empty when
    /// the client sent none).
    pub fn context_arguments(&self) -> &BTreeMap<String, String> {
        &self.context
    }

    /// The authenticated principal asking, for sources whose suggestions are
    /// not for everyone (the spec asks servers to control access to sensitive
    /// suggestions).
    pub fn principal(&self) -> &Principal {
        &self.principal
    }
}

/// A source's answer: candidate values, best first, and optionally how many
/// exist in all and whether more exist than were sent.
///
/// More than 100 values are cut to the first 100 on the wire, with `hasMore`
/// and `total` (the full count, unless the source gave a larger one).
///
/// ```
/// use mrtr::service::Completion;
/// let c = Completion::starting_with(["python", "pytorch", "rust"], "py").total(10).has_more(true);
/// assert_eq!(c.values(), ["python", "pytorch"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct Completion {
    values: Vec<String>,
    total: Option<u64>,
    has_more: bool,
}

impl Completion {
    /// These values, in this order (best first).
    pub fn new<I>(values: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Self {
            values: values.into_iter().map(Into::into).collect(),
            total: None,
            has_more: false,
        }
    }

    /// No suggestion.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The candidates that start with `prefix`, compared without regard to
    /// ASCII case, in their order.
    pub fn starting_with<I>(candidates: I, prefix: &str) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Self::new(
            candidates
                .into_iter()
                .map(Into::into)
                .filter(|c: &String| starts_with_ignore_ascii_case(c, prefix)),
        )
    }

    /// The number of matches in all (`total`), which may exceed the values sent.
    pub fn total(mut self, total: u64) -> Self {
        self.total = Some(total);
        self
    }

    /// Whether more matches exist than were sent (`hasMore`), even when their
    /// number is unknown.
    pub fn has_more(mut self, has_more: bool) -> Self {
        self.has_more = has_more;
        self
    }

    /// The values, as the source gave them (before the cut at 100).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// The `CompleteResult` object: at most [`MAX_VALUES`] values, `hasMore`
    /// when cut, and `resultType: complete`.
    fn into_result(self) -> Value {
        let Self {
            mut values,
            total,
            mut has_more,
        } = self;
        let count = u64::try_from(values.len()).unwrap_or(u64::MAX);
        let mut total = total;
        if values.len() > MAX_VALUES {
            values.truncate(MAX_VALUES);
            has_more = true;
            total = Some(total.map_or(count, |t| t.max(count)));
        }
        let mut completion = Map::new();
        completion.insert("values".into(), json!(values));
        if let Some(t) = total {
            completion.insert("total".into(), t.into());
        }
        completion.insert("hasMore".into(), has_more.into());
        json!({"resultType": "complete", "completion": completion})
    }
}

impl<S: Into<String>> From<Vec<S>> for Completion {
    fn from(values: Vec<S>) -> Self {
        Self::new(values)
    }
}

fn starts_with_ignore_ascii_case(s: &str, prefix: &str) -> bool {
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// What a completion source may return: `Result<R, Error>` now, or a `Send`
/// future of it, where `R: Into<`[`Completion`]`>`. `M` is
/// [`Now`](crate::engine::Now) or [`Later`](crate::engine::Later), inferred, never named.
pub trait CompletionOutput<M>: private::IntoSourceRun<M> + Send {}

impl<M, O: private::IntoSourceRun<M> + Send> CompletionOutput<M> for O {}

mod private {
    use super::{Completion, Error, Future, Pin};

    /// The boxed future of an async source.
    pub(crate) type BoxSourceRun =
        Pin<Box<dyn Future<Output = Result<Completion, Error>> + Send + 'static>>;

    /// A source's return value: ready now, or a future to await.
    #[allow(unreachable_pub)] // why: in the public CompletionOutput bound, unnameable outside
    pub enum SourceRun {
        /// A synchronous source's answer.
        Now(Result<Completion, Error>),
        /// An async source's future.
        Later(BoxSourceRun),
    }

    impl std::fmt::Debug for SourceRun {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(match self {
                Self::Now(_) => "SourceRun::Now(..)",
                Self::Later(_) => "SourceRun::Later(..)",
            })
        }
    }

    /// The conversion behind [`super::CompletionOutput`].
    #[allow(unreachable_pub)] // why: in the public CompletionOutput bound, unnameable outside
    pub trait IntoSourceRun<M> {
        /// The return value as a [`SourceRun`].
        fn into_source_run(self) -> SourceRun;
    }
}

use private::{IntoSourceRun, SourceRun};

impl<R: Into<Completion>> IntoSourceRun<Now> for Result<R, Error> {
    fn into_source_run(self) -> SourceRun {
        SourceRun::Now(self.map(Into::into))
    }
}

impl<F, R> IntoSourceRun<Later> for F
where
    F: Future<Output = Result<R, Error>> + Send + 'static,
    R: Into<Completion>,
{
    fn into_source_run(self) -> SourceRun {
        SourceRun::Later(Box::pin(self.map(|r| r.map(Into::into))))
    }
}

/// A registered source, sync or async, behind one shape.
type Source = Arc<dyn Fn(CompletionRequest) -> SourceRun + Send + Sync>;

/// What is being completed: a prompt's argument or a resource template's variable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Reference {
    /// `ref/prompt`, by the prompt's name.
    Prompt(String),
    /// `ref/resource`, by the template's URI string.
    ResourceTemplate(String),
}

/// The completion sources of a service, by reference and argument name.
#[derive(Default)]
pub(super) struct Completions {
    sources: HashMap<(Reference, String), Source>,
}

impl fmt::Debug for Completions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.sources.keys().map(|(r, a)| (r, a)))
            .finish()
    }
}

impl Completions {
    /// Whether any source is registered (so `completions` is advertised).
    pub(super) fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Registers `source` for `argument` of the prompt `prompt`, replacing any earlier one.
    pub(super) fn insert_prompt<F, O, M>(&mut self, prompt: &str, argument: &str, source: F)
    where
        F: Fn(CompletionRequest) -> O + Send + Sync + 'static,
        O: CompletionOutput<M> + 'static,
        M: 'static,
    {
        self.insert(Reference::Prompt(prompt.to_owned()), argument, source);
    }

    /// Registers `source` for `variable` of the template `uri_template`,
    /// replacing any earlier one.
    pub(super) fn insert_template<F, O, M>(&mut self, uri_template: &str, variable: &str, source: F)
    where
        F: Fn(CompletionRequest) -> O + Send + Sync + 'static,
        O: CompletionOutput<M> + 'static,
        M: 'static,
    {
        self.insert(
            Reference::ResourceTemplate(uri_template.to_owned()),
            variable,
            source,
        );
    }

    fn insert<F, O, M>(&mut self, reference: Reference, argument: &str, source: F)
    where
        F: Fn(CompletionRequest) -> O + Send + Sync + 'static,
        O: CompletionOutput<M> + 'static,
        M: 'static,
    {
        let source: Source = Arc::new(move |request| source(request).into_source_run());
        self.sources
            .insert((reference, argument.to_owned()), source);
    }

    /// The answer to `completion/complete`: the source's values, or -32602 for
    /// malformed params or a reference without a source. A source that panics
    /// gets -32603, as does an async one still running when `deadline` completes
    /// (its future dropped).
    pub(super) async fn answer<D: Future<Output = ()>>(
        &self,
        params: Option<&Value>,
        principal: &Principal,
        timeout: Duration,
        deadline: D,
    ) -> Outcome {
        let (key, request) = match parse(params, principal) {
            Ok(parsed) => parsed,
            Err(e) => return Outcome::Protocol(e),
        };
        let Some(source) = self.sources.get(&key) else {
            return Outcome::Protocol(Error::invalid_params(match key.0 {
                Reference::Prompt(_) => "Unknown prompt or argument",
                Reference::ResourceTemplate(_) => "Unknown resource template or variable",
            }));
        };
        let answered = match std::panic::catch_unwind(AssertUnwindSafe(|| source(request))) {
            Ok(SourceRun::Now(r)) => r,
            Ok(SourceRun::Later(future)) => match await_within(future, deadline).await {
                Awaited::Done(r) => r,
                Awaited::Panicked => Err(panicked()),
                Awaited::Overdue => Err(Error::internal(format!(
                    "completion source still running after {} ms: abandoned",
                    timeout.as_millis()
                ))),
            },
            Err(_panic) => Err(panicked()),
        };
        match answered {
            Ok(c) => Outcome::Complete(c.into_result()),
            Err(e) => Outcome::Protocol(e),
        }
    }
}

fn panicked() -> Error {
    Error::internal("completion source panicked")
}

/// Reads `CompleteRequestParams`, within the caps on what a client may send.
fn parse(
    params: Option<&Value>,
    principal: &Principal,
) -> Result<((Reference, String), CompletionRequest), Error> {
    let Some(params) = params else {
        return Err(Error::invalid_params("params are required"));
    };
    let Some(params) = params.as_object() else {
        return Err(Error::invalid_params(format!(
            "params must be an object, not {}",
            type_name(params)
        )));
    };
    RequestMeta::from_meta(params.get("_meta"))?;
    let reference = reference(params.get("ref"))?;
    let Some(argument) = params.get("argument").and_then(Value::as_object) else {
        return Err(Error::invalid_params("argument must be an object"));
    };
    let name = bounded_str(argument.get("name"), MAX_NAME_BYTES, "argument.name")?;
    let value = bounded_str(argument.get("value"), MAX_VALUE_BYTES, "argument.value")?;
    let context = context(params.get("context"))?;
    let request = CompletionRequest {
        argument: name.to_owned(),
        value: value.to_owned(),
        context,
        principal: principal.clone(),
    };
    Ok(((reference, name.to_owned()), request))
}

fn reference(r: Option<&Value>) -> Result<Reference, Error> {
    let Some(r) = r.and_then(Value::as_object) else {
        return Err(Error::invalid_params("ref must be an object"));
    };
    match r.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => match r.get("name").and_then(Value::as_str) {
            Some(name) => Ok(Reference::Prompt(name.to_owned())),
            None => Err(Error::invalid_params("ref.name must be a string")),
        },
        Some("ref/resource") => match r.get("uri").and_then(Value::as_str) {
            Some(uri) => Ok(Reference::ResourceTemplate(uri.to_owned())),
            None => Err(Error::invalid_params("ref.uri must be a string")),
        },
        _ => Err(Error::invalid_params(
            "ref.type must be ref/prompt or ref/resource",
        )),
    }
}

fn context(c: Option<&Value>) -> Result<BTreeMap<String, String>, Error> {
    let arguments = match c {
        None => return Ok(BTreeMap::new()),
        Some(Value::Object(c)) => c.get("arguments"),
        Some(_) => return Err(Error::invalid_params("context must be an object")),
    };
    let arguments = match arguments {
        None => return Ok(BTreeMap::new()),
        Some(Value::Object(a)) => a,
        Some(_) => {
            return Err(Error::invalid_params("context.arguments must be an object"));
        }
    };
    if arguments.len() > MAX_CONTEXT_ARGUMENTS {
        return Err(Error::invalid_params(format!(
            "context.arguments has more than {MAX_CONTEXT_ARGUMENTS} entries"
        )));
    }
    let mut out = BTreeMap::new();
    for (k, v) in arguments {
        if k.len() > MAX_NAME_BYTES {
            return Err(Error::invalid_params(format!(
                "a context.arguments name is longer than {MAX_NAME_BYTES} bytes"
            )));
        }
        let v = bounded_str(Some(v), MAX_VALUE_BYTES, "context.arguments values")?;
        out.insert(k.clone(), v.to_owned());
    }
    Ok(out)
}

/// A string of at most `max` bytes; the error names `field`, never the value.
fn bounded_str<'a>(v: Option<&'a Value>, max: usize, field: &str) -> Result<&'a str, Error> {
    match v.and_then(Value::as_str) {
        None => Err(Error::invalid_params(format!("{field} must be a string"))),
        Some(s) if s.len() > max => Err(Error::invalid_params(format!(
            "{field} is longer than {max} bytes"
        ))),
        Some(s) => Ok(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn params(rest: &str) -> Value {
        serde_json::from_str(&format!("{{{META},{rest}}}")).unwrap()
    }

    fn sources() -> Completions {
        let mut c = Completions::default();
        c.insert_prompt("p", "lang", |q: CompletionRequest| {
            Ok(Completion::starting_with(
                ["python", "pytorch", "rust"],
                q.value(),
            ))
        });
        c.insert_template(
            "file:///{path}",
            "path",
            |q: CompletionRequest| async move {
                Ok(vec![format!(
                    "{}-{}",
                    q.value(),
                    q.context("dir").unwrap_or("-")
                )])
            },
        );
        c.insert_prompt("p", "many", |_| {
            Ok(Completion::new((0..250).map(|i| i.to_string())))
        });
        c
    }

    fn run(c: &Completions, p: &Value) -> Outcome {
        let principal = Principal::anonymous();
        let fut = c.answer(
            Some(p),
            &principal,
            Duration::from_secs(1),
            std::future::ready(()),
        );
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match pin!(fut).poll(&mut cx) {
            std::task::Poll::Ready(o) => o,
            std::task::Poll::Pending => panic!("pending"),
        }
    }

    fn code(o: &Outcome) -> i64 {
        match o {
            Outcome::Protocol(e) => e.code(),
            other => panic!("not an error: {other:?}"),
        }
    }

    fn complete(o: Outcome) -> Value {
        match o {
            Outcome::Complete(v) => v,
            other => panic!("not complete: {other:?}"),
        }
    }

    #[test]
    fn a_prompt_source_sees_the_partial_value() {
        let v = complete(run(
            &sources(),
            &params(
                r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"lang","value":"PY"}"#,
            ),
        ));
        assert_eq!(
            v,
            json!({"resultType":"complete","completion":{"values":["python","pytorch"],"hasMore":false}})
        );
    }

    #[test]
    fn an_async_template_source_sees_the_context() {
        let v = complete(run(
            &sources(),
            &params(
                r#""ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":"a"},"context":{"arguments":{"dir":"d"}}"#,
            ),
        ));
        assert_eq!(v["completion"]["values"], json!(["a-d"]));
    }

    #[test]
    fn more_than_100_values_are_cut_with_has_more_and_total() {
        let v = complete(run(
            &sources(),
            &params(
                r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"many","value":""}"#,
            ),
        ));
        assert_eq!(v["completion"]["values"].as_array().unwrap().len(), 100);
        assert_eq!(v["completion"]["hasMore"], true);
        assert_eq!(v["completion"]["total"], 250);
        let c = Completion::new((0..150).map(|i| i.to_string())).total(1000);
        assert_eq!(c.into_result()["completion"]["total"], 1000);
    }

    #[test]
    fn unknown_references_and_bad_params_are_invalid_params() {
        let s = sources();
        for rest in [
            r#""ref":{"type":"ref/prompt","name":"q"},"argument":{"name":"lang","value":""}"#,
            r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"path","value":""}"#,
            r#""ref":{"type":"ref/resource","uri":"p"},"argument":{"name":"lang","value":""}"#,
            r#""ref":{"type":"ref/tool","name":"p"},"argument":{"name":"lang","value":""}"#,
            r#""ref":{"type":"ref/prompt"},"argument":{"name":"lang","value":""}"#,
            r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"lang"}"#,
            r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"lang","value":1}"#,
            r#""ref":{"type":"ref/prompt","name":"p"}"#,
            r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"lang","value":""},"context":[]"#,
            r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"lang","value":""},"context":{"arguments":{"a":1}}"#,
        ] {
            assert_eq!(code(&run(&s, &params(rest))), -32602, "{rest}");
        }
        let no_meta =
            json!({"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"lang","value":""}});
        assert_eq!(code(&run(&s, &no_meta)), -32602);
        assert_eq!(code(&run(&s, &json!([]))), -32602);
    }

    #[test]
    fn what_a_client_sends_is_capped() {
        let s = sources();
        let long = "x".repeat(MAX_VALUE_BYTES + 1);
        let rest = format!(
            r#""ref":{{"type":"ref/prompt","name":"p"}},"argument":{{"name":"lang","value":"{long}"}}"#
        );
        assert_eq!(code(&run(&s, &params(&rest))), -32602);
        let many: Map<String, Value> = (0..=MAX_CONTEXT_ARGUMENTS)
            .map(|i| (format!("k{i}"), json!("v")))
            .collect();
        let mut p = params(
            r#""ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"lang","value":""}"#,
        );
        p["context"] = json!({"arguments": many});
        assert_eq!(code(&run(&s, &p)), -32602);
        p["context"] = json!({"arguments": {"k": long}});
        assert_eq!(code(&run(&s, &p)), -32602);
        p["context"] = json!({"arguments": {"k": "fine"}});
        assert!(matches!(run(&s, &p), Outcome::Complete(_)));
    }

    #[test]
    fn a_failing_panicking_or_overdue_source_is_an_error() {
        let mut c = Completions::default();
        c.insert_prompt("p", "fail", |_| {
            Err::<Completion, _>(Error::internal("db down"))
        });
        c.insert_prompt("p", "panic", |_| -> Result<Completion, Error> {
            panic!("boom")
        });
        c.insert_prompt("p", "slow", |_| async {
            std::future::pending::<()>().await;
            Ok(Completion::empty())
        });
        for arg in ["fail", "panic", "slow"] {
            let rest = format!(
                r#""ref":{{"type":"ref/prompt","name":"p"}},"argument":{{"name":"{arg}","value":""}}"#
            );
            assert_eq!(code(&run(&c, &params(&rest))), -32603, "{arg}");
        }
    }

    #[test]
    fn prefix_match_ignores_ascii_case_and_never_splits_a_char() {
        assert!(starts_with_ignore_ascii_case("Python", "py"));
        assert!(!starts_with_ignore_ascii_case("py", "python"));
        assert!(starts_with_ignore_ascii_case("é", ""));
        assert!(!starts_with_ignore_ascii_case("éa", "e"));
    }
}
