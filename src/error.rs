//! The error model: one public error type, two channels (the why, and the code
//! table: [`crate::manual::security_model`]).
//!
//! A failure the model can act on (the user declined, a window lapsed, a limit
//! was reached) becomes, on `tools/call`, a tool result with `isError: true`
//! whose text says what failed, which input, whether retrying helps and what to
//! do instead. A request that cannot be processed becomes a JSON-RPC error with
//! the right code, and the model never sees it. `prompts/get` and
//! `resources/read` have no `isError`, so every failure there is a JSON-RPC error.
//!
//! Every failure also carries a private [`Diagnostic`] for the operator's log;
//! its text is a different string from the public one, and neither ever holds a
//! token, key, plaintext state or argument value.

use serde_json::{Value, json};

use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::meta::MetaError;
use crate::wire::{CarrierMethod, ClientCapabilities, RequestError, truncate};

/// JSON-RPC and MCP error codes (MCP 2026-07-28, Base Protocol §Error Codes).
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid JSON-RPC request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method (HTTP 404).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params, including missing `_meta` fields (HTTP 400).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// HTTP headers disagree with the body (HTTP 400).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// A required client capability was not declared (HTTP 400).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// Unsupported protocol version (HTTP 400).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// The frozen public message for every rejected `requestState` (see
/// [`crate::manual::security_model`]).
pub const INVALID_REQUEST_STATE_MESSAGE: &str = "Invalid or expired requestState";

/// The most characters of the client's protocol version that a -32022 error echoes
/// in `data.requested`: 64.
pub const REQUESTED_VERSION_ECHO_MAX: usize = 64;

/// What kind of failure this is; decides the code (and so the HTTP status). The
/// channel (tool result or JSON-RPC error) is decided by [`channel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// -32700.
    Parse,
    /// -32600.
    InvalidRequest,
    /// -32601.
    MethodNotFound,
    /// -32602.
    InvalidParams,
    /// -32602 with the frozen requestState message and `data.reason`.
    InvalidRequestState,
    /// -32603.
    Internal,
    /// -32020.
    HeaderMismatch,
    /// -32021.
    MissingCapability,
    /// -32022.
    UnsupportedVersion,
    /// A failure the model can act on: a tool error on `tools/call` (see [`channel`]).
    ToolFailure,
}

/// Whether calling again can help, as the model is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retry {
    /// The same call may succeed later.
    Helps,
    /// The same call will fail the same way.
    DoesNotHelp,
    /// Nothing was done; calling the tool again starts the flow over.
    StartOver,
}

/// The JSON-RPC error a failure the model can act on becomes where there is no tool
/// result to carry it (`prompts/get`, `resources/read`): a closed set of standard
/// codes, so no MCP-specific code (-32020, -32021, -32022, -32042) can be claimed
/// for a failure that is none of those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// -32602: the request as sent cannot succeed (declined, a limit reached, bad arguments).
    InvalidParams,
    /// -32603: a fault on the server's side (a backend failed, a deadline passed).
    Internal,
}

impl Fallback {
    /// The JSON-RPC error code.
    pub fn code(self) -> i64 {
        match self {
            Self::InvalidParams => code::INVALID_PARAMS,
            Self::Internal => code::INTERNAL_ERROR,
        }
    }
}

/// The model-facing parts of a failure (only rendered on `tools/call`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolAdvice {
    what: String,
    input: Option<String>,
    retry: Retry,
    instead: Option<String>,
}

impl ToolAdvice {
    /// `what` failed, and whether a retry helps. `what` must not hold secrets or argument values.
    pub fn new(what: impl Into<String>, retry: Retry) -> Self {
        Self {
            what: what.into(),
            input: None,
            retry,
            instead: None,
        }
    }

    /// Names the input (argument or field name, never its value) that was at fault.
    pub fn input(mut self, name: impl Into<String>) -> Self {
        self.input = Some(name.into());
        self
    }

    /// What to do instead.
    pub fn instead(mut self, advice: impl Into<String>) -> Self {
        self.instead = Some(advice.into());
        self
    }

    /// The text a model reads.
    pub fn text(&self) -> String {
        let mut t = self.what.trim_end_matches('.').to_owned();
        t.push('.');
        if let Some(i) = &self.input {
            t.push_str(&format!(" Input: {i}."));
        }
        t.push(' ');
        t.push_str(match self.retry {
            Retry::Helps => "Retrying the same call may succeed.",
            Retry::DoesNotHelp => "Retrying the same call will not help.",
            Retry::StartOver => "Nothing was done; call the tool again to start over.",
        });
        if let Some(i) = &self.instead {
            t.push(' ');
            t.push_str(i.trim_end_matches('.'));
            t.push('.');
        }
        t
    }
}

/// The private record of a failure, for the operator's log only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// A stable category (`parse`, `meta`, `request_state`, `capability`, ...).
    pub category: &'static str,
    /// Whether a client retry could succeed.
    pub retryable: bool,
    /// The precise technical detail (no tokens, keys, plaintext state or argument values).
    pub detail: String,
    /// The private reason a requestState was rejected, when it was.
    pub reject_reason: Option<&'static str>,
}

/// The one public error type of mrtr's request path.
///
/// ```
/// use mrtr::error::{Error, code};
/// let e = Error::invalid_request_state("tag");
/// let wire = e.to_jsonrpc(None);
/// assert_eq!(wire["error"]["code"], code::INVALID_PARAMS);
/// assert_eq!(wire["error"]["data"]["reason"], "invalid_request_state");
/// // the private reason never reaches the wire
/// assert!(!wire.to_string().contains("tag"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    // Boxed so that `Result<T, Error>` stays one pointer wide (clippy::result_large_err).
    inner: Box<Inner>,
}

#[derive(Debug, Clone, PartialEq)]
struct Inner {
    kind: ErrorKind,
    code: i64,
    public: String,
    data: Option<Value>,
    advice: Option<ToolAdvice>,
    diagnostic: Diagnostic,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.inner.public, self.inner.code)
    }
}

impl std::error::Error for Error {}

impl Error {
    fn new(
        kind: ErrorKind,
        code: i64,
        public: impl Into<String>,
        category: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        let inner = Inner {
            kind,
            code,
            public: public.into(),
            data: None,
            advice: None,
            diagnostic: Diagnostic {
                category,
                retryable: false,
                detail: detail.into(),
                reject_reason: None,
            },
        };
        Self {
            inner: Box::new(inner),
        }
    }

    /// -32700: the body is not JSON.
    pub fn parse(detail: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Parse,
            code::PARSE_ERROR,
            "Parse error",
            "parse",
            detail,
        )
    }

    /// -32600: not a valid JSON-RPC request (`public` names what is wrong, never a value).
    pub fn invalid_request(public: impl Into<String>) -> Self {
        let public = public.into();
        let detail = format!("rejected envelope: {public}");
        Self::new(
            ErrorKind::InvalidRequest,
            code::INVALID_REQUEST,
            public,
            "envelope",
            detail,
        )
    }

    /// -32601: unknown method. The method name is logged privately, not echoed.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorKind::MethodNotFound,
            code::METHOD_NOT_FOUND,
            "Method not found",
            "routing",
            format!("no handler for method {:?}", truncate(method, 64)),
        )
    }

    /// -32602: invalid params. `public` names the field at fault, never its value.
    pub fn invalid_params(public: impl Into<String>) -> Self {
        let public = public.into();
        let detail = format!("params rejected: {public}");
        Self::new(
            ErrorKind::InvalidParams,
            code::INVALID_PARAMS,
            public,
            "params",
            detail,
        )
    }

    /// -32602 for a missing or malformed `_meta` field (HTTP 400).
    pub fn invalid_meta(public: impl Into<String>) -> Self {
        let public = public.into();
        let detail = format!("_meta rejected: {public}");
        Self::new(
            ErrorKind::InvalidParams,
            code::INVALID_PARAMS,
            public,
            "meta",
            detail,
        )
    }

    /// -32602 with the frozen message and `data: {"reason": "invalid_request_state"}`.
    /// `reason` is the private reason (e.g. `tag`, `binding`), for the log only.
    pub fn invalid_request_state(reason: &'static str) -> Self {
        let mut e = Self::new(
            ErrorKind::InvalidRequestState,
            code::INVALID_PARAMS,
            INVALID_REQUEST_STATE_MESSAGE,
            "request_state",
            format!("requestState rejected: {reason}"),
        );
        e.inner.data = Some(json!({"reason": "invalid_request_state"}));
        e.inner.diagnostic.reject_reason = Some(reason);
        e
    }

    /// An authentic requestState whose window lapsed: on `tools/call` a tool error
    /// telling the model to call again; elsewhere the frozen -32602.
    pub fn expired_request_state(reason: &'static str) -> Self {
        let mut e = Self::invalid_request_state(reason);
        e.inner.advice = Some(
            ToolAdvice::new(
                "The time window to answer this tool's questions lapsed",
                Retry::StartOver,
            )
            .instead("Call the tool again with the same arguments; it will ask its questions anew"),
        );
        e.inner.diagnostic.retryable = true;
        e
    }

    /// -32603: an internal failure; `detail` goes to the log only.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Internal,
            code::INTERNAL_ERROR,
            "Internal error",
            "internal",
            detail,
        )
    }

    /// -32020: an HTTP header disagrees with the body or is missing/malformed.
    /// `header` is the header name; values are never echoed.
    pub fn header_mismatch(header: &str, detail: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::HeaderMismatch,
            code::HEADER_MISMATCH,
            format!(
                "Header mismatch: {header} header is missing, malformed or does not match the body"
            ),
            "header",
            detail,
        )
    }

    /// -32602 "Resource not found" with `data.uri`, the URI asked for (SEP-2164),
    /// when it is at most [`TEMPLATE_URI_MAX_BYTES`](crate::defaults::TEMPLATE_URI_MAX_BYTES)
    /// long: the client's own target, never grown past what a resource URI may be.
    /// The log gets neither.
    pub(crate) fn resource_not_found(uri: &str) -> Self {
        let mut e = Self::new(
            ErrorKind::InvalidParams,
            code::INVALID_PARAMS,
            "Resource not found",
            "params",
            "params rejected: no resource or template serves the URI",
        );
        if uri.len() <= crate::defaults::TEMPLATE_URI_MAX_BYTES {
            e.inner.data = Some(json!({ "uri": uri }));
        }
        e
    }

    /// -32021 with `data.requiredCapabilities`; `names` reads them for a person.
    /// Built by the capability gate ([`crate::capability::missing_error`]).
    pub(crate) fn missing_capabilities(names: &str, required: &ClientCapabilities) -> Self {
        let mut e = Self::new(
            ErrorKind::MissingCapability,
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("Server requires the {names} client capability for this request"),
            "capability",
            format!("undeclared client capabilities needed: {names}"),
        );
        e.inner.data = Some(json!({"requiredCapabilities": required.to_value()}));
        e
    }

    /// -32022 with `data: {supported, requested}`. `requested` is what the client
    /// sent, cut to its first [`REQUESTED_VERSION_ECHO_MAX`] characters: the reply
    /// never grows with what the client chose to send (a version is ten characters).
    pub fn unsupported_version(requested: &str) -> Self {
        let requested = truncate(requested, REQUESTED_VERSION_ECHO_MAX);
        let mut e = Self::new(
            ErrorKind::UnsupportedVersion,
            code::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            "version",
            format!("client asked for protocol version {requested:?}"),
        );
        e.inner.data = Some(
            json!({"supported": crate::wire::SUPPORTED_PROTOCOL_VERSIONS, "requested": requested}),
        );
        e
    }

    /// A failure the model can act on. On `tools/call` it is a tool error with
    /// `advice`'s text; on the other carriers a JSON-RPC error with the
    /// `fallback` code ([`Fallback::InvalidParams`] when the request as sent cannot
    /// succeed, [`Fallback::Internal`] for a server-side fault).
    pub fn tool_failure(
        advice: ToolAdvice,
        fallback: Fallback,
        category: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        let retryable = advice.retry != Retry::DoesNotHelp;
        let public = advice.what.trim_end_matches('.').to_owned();
        let mut e = Self::new(
            ErrorKind::ToolFailure,
            fallback.code(),
            public,
            category,
            detail,
        );
        e.inner.advice = Some(advice);
        e.inner.diagnostic.retryable = retryable;
        e
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The JSON-RPC error code used when this goes out as a JSON-RPC error.
    pub fn code(&self) -> i64 {
        self.inner.code
    }

    /// The public message.
    pub fn public_message(&self) -> &str {
        &self.inner.public
    }

    /// The JSON-RPC `error.data`, if any.
    pub fn data(&self) -> Option<&Value> {
        self.inner.data.as_ref()
    }

    /// The model-facing advice, if this failure has one.
    pub fn advice(&self) -> Option<&ToolAdvice> {
        self.inner.advice.as_ref()
    }

    /// The private diagnostic.
    pub fn diagnostic(&self) -> &Diagnostic {
        &self.inner.diagnostic
    }

    /// Adds private detail to the diagnostic (never shown to the client).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.inner.diagnostic.detail = detail.into();
        self
    }

    /// The JSON-RPC error response.
    pub fn to_jsonrpc(&self, id: Option<&RequestId>) -> Value {
        jsonrpc::error(
            id,
            self.inner.code,
            &self.inner.public,
            self.inner.data.clone(),
        )
    }

    /// The `CallToolResult` with `isError: true`, when this failure is one the model can act on.
    pub fn to_tool_result(&self) -> Option<Value> {
        self.inner.advice.as_ref().map(|a| {
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": a.text()}],
                "isError": true,
            })
        })
    }

    /// Emits the private diagnostic record through `tracing` (target `mrtr::diag`).
    pub fn log(&self, ctx: &DiagContext<'_>) {
        tracing::warn!(
            target: "mrtr::diag",
            correlation_id = ctx.correlation_id,
            jsonrpc_id = ctx.jsonrpc_id.map(tracing::field::display),
            method = ctx.method,
            target_name = ctx.target,
            round = ctx.round,
            category = self.inner.diagnostic.category,
            code = self.inner.code,
            retryable = self.inner.diagnostic.retryable,
            reject_reason = self.inner.diagnostic.reject_reason,
            detail = %self.inner.diagnostic.detail,
            "request failed"
        );
    }
}

/// The channel a failure goes out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Channel {
    /// A `CallToolResult` with `isError: true`: the model reads the advice.
    ToolResult,
    /// A JSON-RPC error: the client sees it, the model does not.
    JsonRpc,
}

/// The one rule that decides the channel of `error` on a request for `method`
/// (`None`: not a carrier request). Everything that renders a failure calls it,
/// [`Outcome::from_error`](crate::engine::Outcome::from_error) first of all.
///
/// A failure goes out as a tool result only on `tools/call` (the other carriers
/// have no `isError`) and only when it carries model-facing [`ToolAdvice`]: a
/// [`Error::tool_failure`], or an authentic `requestState` whose window lapsed
/// ([`Error::expired_request_state`]). The [`ErrorKind`] alone does not decide it.
///
/// ```
/// use mrtr::error::{Channel, Error, Fallback, Retry, ToolAdvice, channel};
/// use mrtr::wire::CarrierMethod;
/// let declined = Error::tool_failure(ToolAdvice::new("The user declined", Retry::DoesNotHelp),
///     Fallback::InvalidParams, "declined", "user declined");
/// assert_eq!(channel(Some(CarrierMethod::ToolsCall), &declined), Channel::ToolResult);
/// assert_eq!(channel(Some(CarrierMethod::PromptsGet), &declined), Channel::JsonRpc);
/// assert_eq!(channel(Some(CarrierMethod::ToolsCall), &Error::internal("x")), Channel::JsonRpc);
/// ```
pub fn channel(method: Option<CarrierMethod>, error: &Error) -> Channel {
    if method == Some(CarrierMethod::ToolsCall) && error.inner.advice.is_some() {
        Channel::ToolResult
    } else {
        Channel::JsonRpc
    }
}

/// Where a failure happened, for the private log.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiagContext<'a> {
    /// Correlation id of the request.
    pub correlation_id: &'a str,
    /// JSON-RPC id.
    pub jsonrpc_id: Option<&'a RequestId>,
    /// Method.
    pub method: Option<&'a str>,
    /// Tool/prompt name or resource URI.
    pub target: Option<&'a str>,
    /// MRTR round.
    pub round: Option<u32>,
}

impl From<MetaError> for Error {
    /// -32602 (HTTP 400) for missing or malformed `_meta` fields, -32022 for an
    /// unsupported protocol version.
    fn from(e: MetaError) -> Self {
        match e {
            MetaError::Invalid(w) => Self::invalid_meta(w.message().to_owned()),
            MetaError::UnsupportedVersion { requested } => Self::unsupported_version(&requested),
        }
    }
}

impl From<RequestError> for Error {
    /// -32602 (HTTP 400) for malformed params, and as for [`MetaError`] for `_meta`.
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::InvalidParams(w) => Self::invalid_params(w.message().to_owned()),
            RequestError::Meta(m) => m.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_method_names_are_cut_in_the_log() {
        let long = "x".repeat(10_000);
        let e = Error::method_not_found(&long);
        assert!(
            e.diagnostic().detail.len() < 100,
            "{}",
            e.diagnostic().detail
        );
        let e = Error::unsupported_version(&long);
        assert!(e.diagnostic().detail.len() < 120);
    }

    #[test]
    fn the_requested_version_is_echoed_as_a_bounded_prefix() {
        let e = Error::unsupported_version(&"é".repeat(10_000));
        let echoed = e.to_jsonrpc(None)["error"]["data"]["requested"].clone();
        assert_eq!(echoed, "é".repeat(REQUESTED_VERSION_ECHO_MAX));
        let e = Error::unsupported_version("2099-01-01");
        assert_eq!(
            e.to_jsonrpc(None)["error"]["data"]["requested"],
            "2099-01-01"
        );
    }

    #[test]
    fn error_is_small_and_thread_safe() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<Error>();
        // Boxed: `Result<T, Error>` stays small (clippy::result_large_err).
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn fallbacks_are_standard_codes_only() {
        assert_eq!(Fallback::InvalidParams.code(), -32602);
        assert_eq!(Fallback::Internal.code(), -32603);
        let advice = || ToolAdvice::new("x", Retry::Helps);
        for f in [Fallback::InvalidParams, Fallback::Internal] {
            assert_eq!(Error::tool_failure(advice(), f, "c", "d").code(), f.code());
        }
    }

    #[test]
    fn display_is_public_text_and_code() {
        assert_eq!(
            Error::internal("secret detail").to_string(),
            "Internal error (-32603)"
        );
    }
}
