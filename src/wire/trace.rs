//! Trace context in `_meta` (SEP-414): the W3C `traceparent` a client sends
//! with a request (`params._meta.traceparent`, with `tracestate` beside it),
//! which a server's span takes as its parent, and which mrtr seals into a
//! flow's first round so every later round's span links to that round's.

use std::fmt;

use serde_json::Value;

/// The `_meta` key of the W3C trace parent.
pub const META_TRACEPARENT: &str = "traceparent";

/// The `_meta` key of the W3C trace state.
pub const META_TRACESTATE: &str = "tracestate";

/// The longest `tracestate` taken (the W3C limit is 32 members of at most 256
/// bytes each; longer is dropped, as the recommendation allows).
const TRACESTATE_MAX: usize = 512;

/// A W3C `traceparent` of version `00`: a trace id, a span id and the flags.
/// Only a well-formed one parses (lowercase hex, neither id all zeros).
///
/// ```
/// use mrtr::wire::TraceParent;
/// let t = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
/// assert_eq!(t.to_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// assert!(t.is_sampled());
/// assert!(TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
/// assert!(TraceParent::parse("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// A trace parent of these ids and flags; `None` when an id is all zeros.
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8], flags: u8) -> Option<Self> {
        (trace_id != [0; 16] && span_id != [0; 8]).then_some(Self {
            trace_id,
            span_id,
            flags,
        })
    }

    /// Parses `00-<32 hex>-<16 hex>-<2 hex>`.
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 55 || &b[..3] != b"00-" || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        let mut flags = [0u8; 1];
        hex_into(&b[3..35], &mut trace_id)?;
        hex_into(&b[36..52], &mut span_id)?;
        hex_into(&b[53..55], &mut flags)?;
        Self::new(trace_id, span_id, flags[0])
    }

    /// The trace id.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The span id.
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace flags.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Whether the sampled flag is set.
    pub fn is_sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        for b in self.trace_id {
            write!(f, "{b:02x}")?;
        }
        f.write_str("-")?;
        for b in self.span_id {
            write!(f, "{b:02x}")?;
        }
        write!(f, "-{:02x}", self.flags)
    }
}

/// Lowercase hex `src` into `out` (twice as many digits as bytes).
fn hex_into(src: &[u8], out: &mut [u8]) -> Option<()> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    for (i, o) in out.iter_mut().enumerate() {
        *o = (digit(src[2 * i])? << 4) | digit(src[2 * i + 1])?;
    }
    Some(())
}

/// The trace context of a request's `_meta`: its `traceparent` when well
/// formed, and its `tracestate` (when not too long) beside it. A malformed
/// one is ignored, as W3C says, never refused.
pub fn trace_context(meta: Option<&Value>) -> Option<(TraceParent, Option<&str>)> {
    let meta = meta?;
    let parent = TraceParent::parse(meta.get(META_TRACEPARENT)?.as_str()?)?;
    let state = meta
        .get(META_TRACESTATE)
        .and_then(Value::as_str)
        .filter(|s| s.len() <= TRACESTATE_MAX);
    Some((parent, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_well_formed_version_00_parent_is_taken() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let t = TraceParent::parse(good).unwrap();
        assert!(!t.is_sampled());
        assert_eq!(t.to_string(), good);
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::parse(bad).is_none(), "{bad}");
        }
        let meta = json!({"traceparent": good, "tracestate": "k=v"});
        assert_eq!(trace_context(Some(&meta)), Some((t, Some("k=v"))));
        let long = json!({"traceparent": good, "tracestate": "k".repeat(600)});
        assert_eq!(trace_context(Some(&long)), Some((t, None)));
        assert_eq!(trace_context(Some(&json!({"traceparent": 5}))), None);
    }
}
