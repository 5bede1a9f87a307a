//! The catalogue of checks: each stable id with its name and the spec's
//! sentence it rests on (data beside the ids, one entry per check), the word
//! (MUST or SHOULD) of its rule, and how bad a finding is. A leaf: it imports
//! nothing of the audit.

use clap::ValueEnum;

/// A check, by its stable id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CheckId {
    /// Altered states are refused.
    Integrity,
    /// A state cannot be read.
    Confidentiality,
    /// A state opens only for its arguments.
    BindingArguments,
    /// A state opens only for its tool.
    BindingTool,
    /// A state opens only for its method.
    BindingMethod,
    /// A state opens only for its user.
    BindingPrincipal,
    /// A state opens only under its key.
    ForeignKey,
    /// A state opens on every instance that shares the key.
    Fleet,
    /// A state is refused after its lifetime.
    Expiry,
    /// Every refusal looks the same.
    ErrorUniformity,
    /// No reply (or log) gives away a reason, a token or a value.
    Leaks,
    /// No ask of a kind the client did not declare.
    CapabilityGate,
    /// `input_required` only on the three carrier methods.
    Carriers,
    /// Every result has a `resultType`.
    ResultType,
    /// Answers are checked against what was asked.
    AnswersValidated,
    /// Errors go on the right channel, with the right code and status.
    ErrorChannels,
    /// Oversized states and answers are refused.
    SizeCaps,
    /// What a replayed final round does (information only).
    ReplayAfterComplete,
}

impl CheckId {
    /// Every check, in the report's order.
    pub const ALL: [CheckId; 18] = [
        Self::Integrity,
        Self::Confidentiality,
        Self::BindingArguments,
        Self::BindingTool,
        Self::BindingMethod,
        Self::BindingPrincipal,
        Self::ForeignKey,
        Self::Fleet,
        Self::Expiry,
        Self::ErrorUniformity,
        Self::Leaks,
        Self::CapabilityGate,
        Self::Carriers,
        Self::ResultType,
        Self::AnswersValidated,
        Self::ErrorChannels,
        Self::SizeCaps,
        Self::ReplayAfterComplete,
    ];

    /// Its entry in [`CATALOG`].
    fn entry(self) -> &'static Entry {
        let entry = &CATALOG[self as usize];
        debug_assert_eq!(entry.id, self);
        entry
    }

    /// Its id.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// The check named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The spec's sentence the check rests on.
    pub fn spec(self) -> &'static str {
        self.entry().spec
    }
}

/// What the catalogue holds of one check.
#[derive(Debug)]
struct Entry {
    /// The check (its place in [`CATALOG`] is its place in [`CheckId::ALL`]).
    id: CheckId,
    /// Its stable id, as `--only` and the report spell it.
    name: &'static str,
    /// The spec's sentence it rests on.
    spec: &'static str,
}

/// Every check's name and spec sentence, in the order of [`CheckId`].
const CATALOG: [Entry; 18] = [
    Entry {
        id: CheckId::Integrity,
        name: "integrity",
        spec: "MRTR server requirement 4: \"servers MUST protect its integrity (e.g. HMAC or AEAD) and MUST reject state that fails verification\"",
    },
    Entry {
        id: CheckId::Confidentiality,
        name: "confidentiality",
        spec: "MRTR server requirement 3: the state is \"an opaque string meaningful only to the server, in any format (base64 JSON, encrypted JWT, binary, ...)\"; only the SEP says \"If tampering is a concern, servers SHOULD encrypt it (e.g. AES-GCM, signed JWT)\": values in the clear miss that SHOULD, a readable state breaks no rule",
    },
    Entry {
        id: CheckId::BindingArguments,
        name: "binding-arguments",
        spec: "MRTR server requirement 5: servers SHOULD bind \"an identifier for the originating request, e.g. the method name and a digest of its salient parameters (reject state presented on a non-matching request)\"",
    },
    Entry {
        id: CheckId::BindingTool,
        name: "binding-tool",
        spec: "MRTR server requirement 5: servers SHOULD bind \"an identifier for the originating request, e.g. the method name and a digest of its salient parameters (reject state presented on a non-matching request)\"",
    },
    Entry {
        id: CheckId::BindingMethod,
        name: "binding-method",
        spec: "MRTR server requirement 5: servers SHOULD bind \"an identifier for the originating request, e.g. the method name and a digest of its salient parameters (reject state presented on a non-matching request)\"",
    },
    Entry {
        id: CheckId::BindingPrincipal,
        name: "binding-principal",
        spec: "MRTR server requirement 5: servers SHOULD bind \"the authenticated principal (reject state presented by a different principal)\"; elicitation: \"Servers MUST bind elicitation requests to client and user identity\"",
    },
    Entry {
        id: CheckId::ForeignKey,
        name: "foreign-key",
        spec: "MRTR server requirement 4: servers \"MUST reject state that fails verification\"",
    },
    Entry {
        id: CheckId::Fleet,
        name: "fleet",
        spec: "MRTR: \"Requests in each round are completely independent. The server handling the retry needs nothing beyond what is in the retry request\"",
    },
    Entry {
        id: CheckId::Expiry,
        name: "expiry",
        spec: "MRTR server requirement 5: servers SHOULD bind \"a short expiry/TTL (reject state presented after it lapses)\"",
    },
    Entry {
        id: CheckId::ErrorUniformity,
        name: "error-uniformity",
        spec: "MRTR security considerations: state is attacker-controlled; one error for every failed verification gives an attacker no oracle (the conformance suite expects \"-32602 or similar\")",
    },
    Entry {
        id: CheckId::Leaks,
        name: "leaks",
        spec: "MRTR: requestState is attacker-controlled input; a refusal that names its reason, or echoes a token or a value, helps the attacker (the reason belongs in a private log)",
    },
    Entry {
        id: CheckId::CapabilityGate,
        name: "capability-gate",
        spec: "MRTR server requirement 7: \"Servers MUST NOT send inputRequests the client has not declared support for in its capabilities\"; basic/_meta: a required undeclared capability is -32021 with data.requiredCapabilities (HTTP 400)",
    },
    Entry {
        id: CheckId::Carriers,
        name: "carriers",
        spec: "tools.mdx, prompts.mdx, resources.mdx: an InputRequiredResult answers tools/call, prompts/get and resources/read",
    },
    Entry {
        id: CheckId::ResultType,
        name: "result-type",
        spec: "basic/index.mdx: \"The result MUST include a resultType field. Servers implementing this version MUST include it.\"; an InputRequiredResult carries inputRequests and requestState, the content belongs to the complete result (wire hygiene)",
    },
    Entry {
        id: CheckId::AnswersValidated,
        name: "answers-validated",
        spec: "MRTR error handling: missing information \"SHOULD respond with a new InputRequiredResult requesting it again, rather than returning an error\"; wrong answers are treated as missing; extra entries SHOULD be ignored",
    },
    Entry {
        id: CheckId::ErrorChannels,
        name: "error-channels",
        spec: "basic/index.mdx error codes: -32601 (HTTP 404), -32602 for a missing _meta (HTTP 400), -32020 for headers that disagree (HTTP 400); Streamable HTTP: servers MUST validate Origin and answer an invalid one with HTTP 403; JSON-RPC 2.0: -32700 for a body that is not JSON, -32600 for one that is not a request (MCP has no batches since 2025-06-18); Streamable HTTP: the body is application/json; tools.mdx: input validation errors are tool results with isError",
    },
    Entry {
        id: CheckId::SizeCaps,
        name: "size-caps",
        spec: "The spec sets no limit on requestState, inputResponses, rounds or keys (the SEP suggests standard limits and throttling): a missing cap is a hardening note; a state the server never issued that is taken breaks requirement 4 (\"MUST reject state that fails verification\"); a refusal is a JSON-RPC error or an HTTP 4xx, never an empty 200",
    },
    Entry {
        id: CheckId::ReplayAfterComplete,
        name: "replay-after-complete",
        spec: "MRTR server requirement 5, warning: binding \"do[es] not guarantee single use. Servers for which a requestState must be consumed at most once ... MUST enforce that server-side.\"",
    },
];

/// The word the spec uses for the rule a check rests on: a MUST broken is not
/// graded like a SHOULD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Word {
    /// MUST (or MUST NOT).
    Must,
    /// SHOULD (or SHOULD NOT).
    Should,
}

impl CheckId {
    /// The word of the rule a misplaced or altered state breaks here: MUST for
    /// a state that fails verification (`integrity`, `foreign-key`) and for
    /// the user's (the SEP and the elicitation page: user data and elicitation
    /// MUST be bound to the user); SHOULD for the request, the tool, the method
    /// and the expiry (server requirement 5).
    pub(super) fn word(self) -> Word {
        match self {
            Self::Integrity | Self::ForeignKey | Self::BindingPrincipal => Word::Must,
            _ => Word::Should,
        }
    }
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum Severity {
    /// Worth knowing; breaks no rule.
    Info,
    /// A SHOULD missed, or a MUST on a detail.
    Low,
    /// A rule broken that weakens a defence.
    Medium,
    /// A MUST broken that lets a client do what it should not.
    High,
    /// A forged or moved state is taken: the protection is not there.
    Critical,
}

impl Severity {
    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_is_in_the_order_of_the_ids() {
        for (i, id) in CheckId::ALL.into_iter().enumerate() {
            assert_eq!(CATALOG[i].id, id);
            assert_eq!(id as usize, i);
            assert_eq!(CheckId::from_name(id.name()), Some(id));
        }
    }
}
