//! The claims sealed inside a token, and their strict binary encoding.

use super::Verified;
use super::binding::Binding;
use super::config::SealConfig;
use crate::time::Timestamp;

/// Version of the claims encoding inside the plaintext.
pub(super) const CLAIMS_FORMAT: u8 = 1;

/// Bytes kept of each binding digest in the claims header: the first 16 bytes of the
/// SHA-256 digest (128-bit second-preimage resistance; the tag authenticates them).
pub(super) const SEALED_DIGEST_LEN: usize = 16;

/// Length of a flow id, in bytes.
pub(super) const FLOW_ID_LEN: usize = 16;

/// Length of the fixed claims header that precedes the JSON state in the plaintext.
pub(super) const CLAIMS_HEADER_LEN: usize = 1 + 8 + 8 + 8 + 4 + FLOW_ID_LEN + SEALED_DIGEST_LEN * 3;

/// The sealed (truncated) form of a binding digest.
pub(super) fn sealed_digest(d: &[u8; 32]) -> [u8; SEALED_DIGEST_LEN] {
    let mut out = [0u8; SEALED_DIGEST_LEN];
    out.copy_from_slice(&d[..SEALED_DIGEST_LEN]);
    out
}

/// What a sealed `requestState` asserts, plus the handler's own state `S`.
///
/// Built only through [`Claims::first_round`] and [`Claims::next_round`], so the
/// flow id is always random and the deadline is never extended. The flow id of a
/// first round is drawn from the sealer's [`Entropy`](super::Entropy) as it seals:
/// building claims reads no randomness.
///
/// ```
/// use mrtr::seal::{Binding, BindingInput, Claims, SealConfig};
/// use mrtr::principal::Principal;
/// use mrtr::Timestamp;
/// let who = Principal::anonymous();
/// let binding = Binding::new(&BindingInput {
///     method: "tools/call", target: "t", arguments: None, principal: &who,
///     audience: "https://mcp.example", protocol_version: "2026-07-28",
/// });
/// let now = Timestamp::from_unix_secs(1_800_000_000);
/// let c = Claims::first_round(binding, now, &SealConfig::default(), "step 1");
/// assert_eq!(c.round(), 1);
/// assert_eq!(c.expires_at(), now.add_secs(600));
/// assert_eq!(c.deadline(), now.add_secs(3600));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Claims<S> {
    pub(super) iat: Timestamp,
    pub(super) exp: Timestamp,
    pub(super) deadline: Timestamp,
    pub(super) round: u32,
    /// `None` on a first round until it is sealed: the sealer draws it.
    pub(super) flow_id: Option<[u8; FLOW_ID_LEN]>,
    pub(super) binding: Binding,
    pub(super) state: S,
}

impl<S> Claims<S> {
    /// The claims of a flow's first round: round 1, a new random flow id (drawn
    /// from the sealer's [`Entropy`](super::Entropy) when these claims are sealed),
    /// deadline = `now + flow_lifetime`, expiry = `min(now + ttl, deadline)`.
    pub fn first_round(
        binding: Binding,
        now: Timestamp,
        config: &SealConfig,
        state: S,
    ) -> Claims<S> {
        let deadline = now.add_secs(config.flow_lifetime_secs());
        Claims {
            iat: now,
            exp: now.add_secs(config.ttl_secs()).min(deadline),
            deadline,
            round: 1,
            flow_id: None,
            binding,
            state,
        }
    }

    /// The claims of the round after a verified one: round + 1 (saturating), the same
    /// flow id, binding and deadline (never extended), expiry = `min(now + ttl, deadline)`.
    pub fn next_round<T>(
        prev: &Verified<Claims<T>>,
        now: Timestamp,
        config: &SealConfig,
        state: S,
    ) -> Claims<S> {
        Claims {
            iat: now,
            exp: now.add_secs(config.ttl_secs()).min(prev.deadline),
            deadline: prev.deadline,
            round: prev.round.saturating_add(1),
            flow_id: prev.flow_id,
            binding: prev.binding,
            state,
        }
    }

    /// These claims as a round of a task's flow (the tasks extension): its
    /// flow id fixed by the task (a first round's is not drawn), and its
    /// deadline, held to the task's end on a first round, and its expiry the
    /// deadline: the state is kept by the server with the task, never sent,
    /// so the short life of a client-held state does not apply.
    pub(crate) fn for_task(mut self, flow_id: [u8; 16], deadline: Timestamp) -> Self {
        if self.flow_id.is_none() {
            self.flow_id = Some(flow_id);
            self.deadline = deadline;
        }
        self.exp = self.deadline;
        self
    }

    /// The round number, 1 for the first.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The random flow id, the same in every round of one flow (key for at-most-once guards).
    ///
    /// Claims from [`Claims::first_round`] get theirs from the sealer as they are
    /// sealed, so it is known from the [`Verified`] claims that `open` returns; on
    /// first-round claims themselves it reads all zeros.
    pub fn flow_id(&self) -> [u8; 16] {
        self.flow_id.unwrap_or([0; FLOW_ID_LEN])
    }

    /// Whether the sealer must draw a flow id when it seals these claims.
    pub(super) fn needs_flow_id(&self) -> bool {
        self.flow_id.is_none()
    }

    /// When this round's token was sealed.
    pub fn issued_at(&self) -> Timestamp {
        self.iat
    }

    /// When this round's token expires (before clock skew).
    pub fn expires_at(&self) -> Timestamp {
        self.exp
    }

    /// The flow's absolute deadline, fixed in round 1.
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// What the state is bound to.
    pub fn binding(&self) -> &Binding {
        &self.binding
    }

    /// The handler's state.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The handler's state, by value.
    pub fn into_state(self) -> S {
        self.state
    }

    /// Replaces the random flow id, for deterministic test vectors only.
    #[cfg(any(test, feature = "test-vectors"))]
    #[doc(hidden)]
    pub fn with_flow_id(mut self, flow_id: [u8; 16]) -> Self {
        self.flow_id = Some(flow_id);
        self
    }

    /// Replaces the round expiry, even past the deadline (which the constructors never
    /// do), for test vectors that must reach the `deadline` reason only.
    #[cfg(any(test, feature = "test-vectors"))]
    #[doc(hidden)]
    pub fn with_expires_at(mut self, exp: Timestamp) -> Self {
        self.exp = exp;
        self
    }

    /// Writes the fixed claims header (layout in [`super::Sealer::seal`]'s comment),
    /// with `drawn` as the flow id when these claims have none yet.
    pub(super) fn write_header(&self, out: &mut Vec<u8>, drawn: &[u8; FLOW_ID_LEN]) {
        out.push(CLAIMS_FORMAT);
        out.extend_from_slice(&self.iat.unix_secs().to_be_bytes());
        out.extend_from_slice(&self.exp.unix_secs().to_be_bytes());
        out.extend_from_slice(&self.deadline.unix_secs().to_be_bytes());
        out.extend_from_slice(&self.round.to_be_bytes());
        out.extend_from_slice(self.flow_id.as_ref().unwrap_or(drawn));
        out.extend_from_slice(&self.binding.request[..SEALED_DIGEST_LEN]);
        out.extend_from_slice(&self.binding.principal[..SEALED_DIGEST_LEN]);
        out.extend_from_slice(&self.binding.audience[..SEALED_DIGEST_LEN]);
    }
}

/// The claims header decoded from an authentic plaintext, before the state.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub(super) iat: Timestamp,
    pub(super) exp: Timestamp,
    pub(super) deadline: Timestamp,
    pub(super) round: u32,
    pub(super) flow_id: [u8; 16],
    /// The sealed (truncated) request, principal and audience digests.
    pub(super) request: [u8; SEALED_DIGEST_LEN],
    pub(super) principal: [u8; SEALED_DIGEST_LEN],
    pub(super) audience: [u8; SEALED_DIGEST_LEN],
}

impl Header {
    /// Splits a plaintext into the claims header and the state bytes; `None` when
    /// the format version is unknown or the plaintext is too short.
    pub(super) fn parse(pt: &[u8]) -> Option<(Header, &[u8])> {
        if pt.len() < CLAIMS_HEADER_LEN || pt[0] != CLAIMS_FORMAT {
            return None;
        }
        let (h, state) = pt.split_at(CLAIMS_HEADER_LEN);
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[i..i + 8]);
            Timestamp::from_unix_secs(u64::from_be_bytes(b))
        };
        let digest_at = |i: usize| {
            let mut b = [0u8; SEALED_DIGEST_LEN];
            b.copy_from_slice(&h[i..i + SEALED_DIGEST_LEN]);
            b
        };
        let mut flow_id = [0u8; 16];
        flow_id.copy_from_slice(&h[29..45]);
        let header = Header {
            iat: u64_at(1),
            exp: u64_at(9),
            deadline: u64_at(17),
            round: u32::from_be_bytes([h[25], h[26], h[27], h[28]]),
            flow_id,
            request: digest_at(45),
            principal: digest_at(45 + SEALED_DIGEST_LEN),
            audience: digest_at(45 + 2 * SEALED_DIGEST_LEN),
        };
        Some((header, state))
    }

    /// Which sealed digests differ from `expected`'s: (request, principal, audience).
    pub(super) fn mismatches(&self, expected: &Binding) -> (bool, bool, bool) {
        (
            self.request != sealed_digest(&expected.request),
            self.principal != sealed_digest(&expected.principal),
            self.audience != sealed_digest(&expected.audience),
        )
    }

    /// The sealed digests as lowercase hex, for `inspect`.
    pub(super) fn binding_json(&self) -> serde_json::Value {
        serde_json::json!({
            "request": super::binding::hex(&self.request),
            "principal": super::binding::hex(&self.principal),
            "audience": super::binding::hex(&self.audience),
        })
    }

    /// The verified claims. `binding` must be the binding every sealed digest matched
    /// (see [`Header::mismatches`]): the header keeps only their first 16 bytes.
    pub(super) fn with_state<S>(self, binding: Binding, state: S) -> Claims<S> {
        Claims {
            iat: self.iat,
            exp: self.exp,
            deadline: self.deadline,
            round: self.round,
            flow_id: Some(self.flow_id),
            binding,
            state,
        }
    }
}

/// Whether `state` is exactly one JSON text as serde_json writes it: no leading or
/// trailing whitespace (serde_json itself would accept it around the value).
pub(super) fn strict_json_bounds(state: &[u8]) -> bool {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    match (state.first(), state.last()) {
        (Some(f), Some(l)) => !ws(f) && !ws(l),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::Principal;
    use crate::seal::BindingInput;

    fn binding_input(p: &Principal) -> BindingInput<'_> {
        BindingInput {
            method: "tools/call",
            target: "t",
            arguments: None,
            principal: p,
            audience: "aud",
            protocol_version: "2026-07-28",
        }
    }

    fn binding() -> Binding {
        Binding::new(&binding_input(&Principal::subject("alice")))
    }

    #[test]
    fn header_round_trip() {
        let now = Timestamp::from_unix_secs(1_800_000_000);
        let c = Claims::first_round(binding(), now, &SealConfig::default(), ());
        let mut buf = Vec::new();
        c.write_header(&mut buf, &[9; FLOW_ID_LEN]);
        assert_eq!(buf.len(), CLAIMS_HEADER_LEN);
        buf.extend_from_slice(b"null");
        let (h, rest) = Header::parse(&buf).unwrap();
        assert_eq!(rest, b"null");
        assert_eq!(h.mismatches(c.binding()), (false, false, false));
        // The drawn flow id is written for a first round, and comes back as its id.
        assert_eq!(
            h.with_state(*c.binding(), ()),
            c.clone().with_flow_id([9; 16])
        );
        let mut again = Vec::new();
        let fixed = c.clone().with_flow_id([4; 16]);
        fixed.write_header(&mut again, &[9; FLOW_ID_LEN]);
        assert_eq!(
            &again[29..45],
            &[4; 16],
            "a set flow id is kept, not redrawn"
        );
        let other = Binding::new(&BindingInput {
            audience: "other",
            ..binding_input(&Principal::subject("alice"))
        });
        assert_eq!(h.mismatches(&other), (false, false, true));
        buf[0] = 2;
        assert!(Header::parse(&buf).is_none());
        assert!(Header::parse(&buf[..CLAIMS_HEADER_LEN - 1]).is_none());
    }

    #[test]
    fn first_round_expiry_clamped_to_deadline() {
        let now = Timestamp::from_unix_secs(1000);
        let cfg = SealConfig::default()
            .with_flow_lifetime(std::time::Duration::from_secs(100))
            .unwrap();
        let c = Claims::first_round(binding(), now, &cfg, ());
        assert_eq!(c.deadline(), now.add_secs(100));
        assert_eq!(c.expires_at(), c.deadline());
        // Building claims reads no randomness: the sealer draws the flow id as it
        // seals (seal/tests.rs checks that two flows get different ids).
        let d = Claims::first_round(binding(), now, &cfg, ());
        assert_eq!(c, d);
        assert!(c.needs_flow_id());
        assert_eq!(c.flow_id(), [0; 16]);
        assert!(!c.with_flow_id([1; 16]).needs_flow_id());
    }

    #[test]
    fn next_round_keeps_flow_and_deadline() {
        let now = Timestamp::from_unix_secs(1000);
        let cfg = SealConfig::default();
        let c = Claims::first_round(binding(), now, &cfg, 1u8).with_flow_id([3; 16]);
        let v = Verified::new(c.clone());
        let later = now.add_secs(3500);
        let n = Claims::next_round(&v, later, &cfg, "two");
        assert_eq!(n.round(), 2);
        assert_eq!(n.flow_id(), c.flow_id());
        assert_eq!(n.deadline(), c.deadline());
        assert_eq!(n.expires_at(), c.deadline(), "clamped to deadline");
        assert_eq!(n.issued_at(), later);
        assert_eq!(n.binding(), c.binding());
        let mut max = c;
        max.round = u32::MAX;
        assert_eq!(
            Claims::next_round(&Verified::new(max), later, &cfg, ()).round(),
            u32::MAX
        );
    }

    #[test]
    fn strict_bounds() {
        assert!(strict_json_bounds(b"{}"));
        assert!(!strict_json_bounds(b" {}"));
        assert!(!strict_json_bounds(b"{}\n"));
        assert!(!strict_json_bounds(b""));
    }
}
