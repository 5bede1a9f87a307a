//! Sealed `requestState`: encrypted, authenticated, bound, expiring tokens.
//!
//! `requestState` travels through the client, so it is attacker-controlled
//! (MRTR §Server Requirements). This module turns the engine's and the handler's
//! state into an opaque string and back, and refuses anything it did not make
//! for this very request.
//!
//! ```text
//!  seal:  Claims { iat, exp, deadline, round, flow_id, binding, state }
//!           → plaintext (93-byte claims header ‖ JSON state)
//!           → XAES-256-GCM under the ring's sealing key, AAD = label ‖ header
//!           → base64url(version ‖ kid ‖ nonce ‖ ciphertext ‖ tag)
//!  open:  UntrustedState → length cap → canonical base64 → version → kid → tag
//!           → strict claims decode → expiry, far future, deadline → binding,
//!             principal, audience → Verified<Claims<S>>
//! ```
//!
//! The byte layout, the limits and the versioning rules are in
//! [`crate::manual::token_format`]; the key ring's three-phase rotation in the
//! `mrtr` binary's rotation chapter (`mrtr_cli::manual::rotation`).
//!
//! # Security
//!
//! - **Secret**: the keys, and the sealed state (encrypted, not only signed).
//!   The kid (a keyed hash of the key) is in clear and reveals nothing about it.
//! - **Authenticated**: the whole token. The header is the AEAD's associated
//!   data, so a token cannot move between format versions or keys.
//! - **Bound**: each token carries SHA-256 digests, truncated to 128 bits, of
//!   the request (method, target, canonical arguments, protocol version), of
//!   the principal and of the audience; `open` compares them with the current request. They are
//!   inside the plaintext, not only in the AAD, so the private log can tell a
//!   tampered token (`tag`) from an authentic one replayed elsewhere
//!   (`binding`, `principal`, `audience`).
//! - **Expiring**: a per-round `exp` and an absolute flow deadline fixed in
//!   round 1, checked with a clock skew; an `exp` beyond `now + max_ttl + skew`
//!   is refused (`far_future`).
//! - **Not single-use**: a token stays valid until it expires, and may be
//!   replayed by the same principal on the same request. Steps that must run at
//!   most once need a store keyed on [`Claims::flow_id`] and the step
//!   ([`crate::replay`]).
//! - **Uniform failure**: every refusal is the same [`OpenError`], whose text is
//!   `invalid or expired requestState`; the [`RejectReason`] is for the private
//!   log and the per-reason counters ([`Sealer::reject_counts`]).
//!
//! # Randomness: one seam, the sealer's [`Entropy`]
//!
//! The core reads no randomness of its own. A [`Sealer`] draws every random byte
//! it needs from the [`Entropy`] it was built with: 24 bytes per seal for the
//! nonce, and 16 more when it seals a flow's first round, for the flow id. Keys
//! come in as bytes ([`Key::from_secret`], [`Keyring::parse_keys`]); reading them
//! from a file or the environment is the edge's job (`mrtr-server`'s
//! `KeySource`). So the core builds without an operating system, for
//! `wasm32-unknown-unknown` among others, given an `Entropy` from the host.
//!
//! - **With the `os-rng` feature** (on by default, and with `server`):
//!   [`Sealer::new`] uses [`OsEntropy`], `rand`'s per-thread ChaCha12 generator
//!   seeded from the operating system and reseeded periodically (no system call
//!   per seal), and [`Keyring::ephemeral`], [`Key::generate`] and
//!   [`generate_key_string`] take keys straight from the operating system.
//! - **Without it**: build the sealer with [`Sealer::with_entropy`] and a
//!   CSPRNG of the host (in a browser or a WebAssembly edge runtime, one over
//!   `crypto.getRandomValues`).
//!
//! **What it must provide**: a CSPRNG (see the contract on [`Entropy`]). Random
//! nonces are safe here because XAES-256-GCM derives a fresh AES-256-GCM key from
//! the first half of each 24-byte nonce, which lifts AES-GCM's limit of 2^32
//! random-nonce messages per key (NIST SP 800-38D §8.3) to about 2^80 at a 2^-32
//! collision risk: no seal counting across a fleet is needed.
//!
//! **What breaks if it is weak**: a nonce that repeats under one key (a constant
//! or low-entropy source, a generator seeded alike in two processes, a fork that
//! was not reseeded) reuses the AES-GCM keystream, which reveals the XOR of the two
//! sealed states (the users' answers), and lets an attacker recover the GHASH
//! authentication subkey and forge tokens under that key: any state, round, expiry
//! and binding.
//! Repeated flow ids make two flows share their at-most-once records
//! ([`Claims::flow_id`]), so a step of one may be refused as already done in the
//! other. Predictable but never repeating bytes do not break the AEAD, yet fall
//! short of the contract: use a CSPRNG, never a counter or a clock outside tests.
//!
//! **Fork caveat** (with [`OsEntropy`]): rand does not reseed on `fork`; a process
//! that forks after sealing must call `rand::rng().reseed()` in the child before
//! sealing again, or two processes may reuse nonces. Cipher state is built once
//! per key, when the [`Key`] is built.

mod binding;
mod claims;
mod config;
mod cursor;
mod entropy;
mod error;
mod key;
mod keyring;
mod rotate;
mod token;

use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) use binding::{AudienceDigest, hash_canonical};
pub use binding::{Binding, BindingInput, canonical_json};
pub use claims::Claims;
pub use config::{SealConfig, SealConfigError};
pub(crate) use cursor::{CursorScope, ListingDigest};
pub use entropy::Entropy;
#[cfg(feature = "os-rng")]
pub use entropy::OsEntropy;
pub use error::{OpenError, RejectCounts, RejectReason, SealError};
#[cfg(feature = "os-rng")]
pub use key::generate_key_string;
pub use key::{Key, KeyError, Kid};
pub use keyring::{KeyInUse, Keyring, KeysInUse};

use claims::{CLAIMS_HEADER_LEN, FLOW_ID_LEN, Header, strict_json_bounds};
use error::Counters;
use token::{HEADER_LEN, MIN_TOKEN_BYTES, NONCE_LEN, Scratch, TAG_LEN, VERSION};

use crate::time::Timestamp;
/// The `requestState` as received, defined with the other wire shapes (see
/// [`crate::wire::UntrustedState`]): [`Sealer::open`] is the only way to a [`Verified`] value.
pub use crate::wire::UntrustedState;

/// Proof that a value came out of a successful [`Sealer::open`]: only this
/// module can build one, so code that takes a `Verified<…>` cannot be reached
/// with unchecked state.
#[derive(Debug, Clone)]
pub struct Verified<T> {
    inner: T,
}

impl<T> Verified<T> {
    /// Private to the seal module (and its children): the only way to mint a proof.
    fn new(inner: T) -> Self {
        Verified { inner }
    }

    /// The verified value.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T> Deref for Verified<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

struct Inner {
    /// The ring in force. Each seal, open or inspect loads it once and uses that one
    /// ring throughout, so a [`Sealer::replace_keyring`] in the middle never mixes
    /// two rings in one operation; a replaced ring (and so its keys, zeroized on
    /// drop) goes away when the last operation holding it ends.
    keyring: ArcSwap<Keyring>,
    /// Each key the rings of this sealer sealed with, and until when a state it
    /// sealed may open (the record its ring writes: [`Keyring::note_sealed`]). In
    /// memory only: a new process starts with none. The lock also makes each
    /// replacement of the ring one step (check, then swap).
    sealed_with: Mutex<Vec<(Kid, Arc<AtomicU64>)>>,
    config: SealConfig,
    /// The only source of randomness; `None` only for the crate-private sealer of
    /// builds without `os-rng` (see [`Sealer::new`]), which opens but cannot seal.
    entropy: Arc<dyn Entropy>,
    counters: Counters,
    /// Size of the last sealed buffer: the next one starts at this capacity, so a
    /// steady flow of similar states seals without reallocating.
    size_hint: AtomicUsize,
}

/// Seals claims into `requestState` tokens and opens them, with a key ring and limits.
///
/// Cheap to clone (one `Arc`); clones share the key ring (so
/// [`Sealer::replace_keyring`] on one swaps it for all), the per-reason counters
/// and the [`Entropy`]. `Send + Sync`.
///
/// ```
/// use mrtr::seal::{Binding, BindingInput, Claims, Keyring, SealConfig, Sealer, UntrustedState};
/// use mrtr::principal::Principal;
/// use mrtr::Timestamp;
///
/// let sealer = Sealer::new(Keyring::ephemeral(), SealConfig::default());
/// let alice = Principal::subject("alice");
/// let args = serde_json::json!({"env": "prod"});
/// let binding = Binding::new(&BindingInput {
///     method: "tools/call", target: "deploy", arguments: Some(&args), principal: &alice,
///     audience: "https://mcp.example", protocol_version: "2026-07-28",
/// });
/// let now = Timestamp::from_unix_secs(1_800_000_000);
/// let claims = Claims::first_round(binding.clone(), now, sealer.config(), vec!["asked: confirm"]);
/// let token = sealer.seal(&claims)?;
///
/// let later = now.add_secs(30);
/// let verified = sealer.open::<Vec<String>>(&UntrustedState::new(token), &binding, later)?;
/// assert_eq!(verified.round(), 1);
/// assert_eq!(verified.state(), &vec!["asked: confirm".to_string()]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Sealer {
    inner: Arc<Inner>,
}

impl Sealer {
    /// A sealer over a key ring with a configuration, drawing its nonces and flow ids
    /// from the operating system through [`OsEntropy`].
    ///
    /// Available with the `os-rng` feature (on by default); without it, use
    /// [`Sealer::with_entropy`].
    #[cfg(feature = "os-rng")]
    pub fn new(keyring: Keyring, config: SealConfig) -> Sealer {
        Sealer::build(keyring, config, Arc::new(OsEntropy))
    }

    /// A sealer over a key ring with a configuration, drawing every nonce and flow
    /// id from `entropy`: the seam for hosts without the operating system's
    /// randomness (WebAssembly, edge runtimes) and for deterministic tests.
    ///
    /// `entropy` must be a CSPRNG: see [`Entropy`] for the contract and the
    /// [module documentation](self) for what a weak source breaks.
    pub fn with_entropy(keyring: Keyring, config: SealConfig, entropy: Arc<dyn Entropy>) -> Sealer {
        Sealer::build(keyring, config, entropy)
    }

    /// A sealer with the same key ring and entropy under another configuration. Its
    /// reject counters start at zero.
    ///
    /// It starts with the ring in force now, but has a ring of its own from then on:
    /// [`Sealer::replace_keyring`] on one of the two does not change the other.
    pub fn with_config(&self, config: SealConfig) -> Sealer {
        Sealer::build_shared(
            self.inner.keyring.load_full(),
            config,
            self.inner.entropy.clone(),
        )
    }

    fn build(keyring: Keyring, config: SealConfig, entropy: Arc<dyn Entropy>) -> Sealer {
        Sealer::build_shared(Arc::new(keyring), config, entropy)
    }

    fn build_shared(
        keyring: Arc<Keyring>,
        config: SealConfig,
        entropy: Arc<dyn Entropy>,
    ) -> Sealer {
        let sealed_with = vec![(keyring.sealing_kid(), keyring.sealed_record().clone())];
        Sealer {
            inner: Arc::new(Inner {
                keyring: ArcSwap::new(keyring),
                sealed_with: Mutex::new(sealed_with),
                config,
                entropy,
                counters: Counters::new(),
                size_hint: AtomicUsize::new(HEADER_LEN + CLAIMS_HEADER_LEN + 256 + TAG_LEN),
            }),
        }
    }

    /// Fills `dest` from this sealer's entropy (a CSPRNG): for the other
    /// unguessable values the engine makes (task ids).
    pub(crate) fn fill_random(&self, dest: &mut [u8]) {
        self.entropy().fill(dest);
    }

    /// The configuration.
    pub fn config(&self) -> &SealConfig {
        &self.inner.config
    }

    /// A snapshot of refused tokens per reason since this sealer was built.
    pub fn reject_counts(&self) -> RejectCounts {
        self.inner.counters.snapshot()
    }

    // Token format v1. All integers big-endian.
    //
    //   offset  len  field
    //   0       1    version = 0x01 (XAES-256-GCM, 24-byte nonce, 16-byte tag, AAD scheme v1)
    //   1       4    kid (u32): first 4 bytes of HMAC-SHA256(key, "mrtr/request-state/v1/kid")
    //   5       24   nonce (random, from the sealer's Entropy)
    //   29      n    ciphertext of the plaintext below (n = plaintext length)
    //   29+n    16   tag (exactly 16 bytes)
    //
    // then base64url without padding; only the canonical encoding is accepted
    // (no padding, no other alphabet, no whitespace, zero trailing bits).
    //
    // AAD = u64le(2) ‖ u64le(21) ‖ "mrtr/request-state/v1" ‖ u64le(29) ‖ bytes 0..29.
    //
    // Plaintext (claims format 1):
    //
    //   offset  len  field
    //   0       1    claims format = 0x01
    //   1       8    iat (u64 Unix seconds)
    //   9       8    exp (u64 Unix seconds)
    //   17      8    deadline (u64 Unix seconds)
    //   25      4    round (u32, 1 = first)
    //   29      16   flow id (random, from the sealer's Entropy when round 1 is sealed)
    //   45      16   request digest  (see Binding::new), first 16 bytes
    //   61      16   principal digest, first 16 bytes
    //   77      16   audience digest, first 16 bytes
    //   93      ..   state: exactly one JSON text as serde_json writes it
    //                (no leading or trailing whitespace, nothing after it)
    //
    // The request binding is inside the plaintext rather than the AAD so that
    // the private log can tell tampering (`tag`) from replay (`binding`).
    /// Seals claims into a token, under the ring's sealing key with a fresh random
    /// nonce (and, for a first round, a fresh random flow id) from the sealer's
    /// [`Entropy`].
    ///
    /// # Errors
    ///
    /// [`SealError::TooLarge`] when the plaintext exceeds `max_plaintext`,
    /// [`SealError::TokenTooLong`] when the token would exceed `max_token_len`,
    /// [`SealError::Serialize`] when the state does not serialize as JSON.
    pub fn seal<S: Serialize>(&self, claims: &Claims<S>) -> Result<String, SealError> {
        self.seal_flow(claims).map(|(token, _)| token)
    }

    /// [`Sealer::seal`], and the flow id the token carries (drawn here for a
    /// first round).
    pub(crate) fn seal_flow<S: Serialize>(
        &self,
        claims: &Claims<S>,
    ) -> Result<(String, [u8; 16]), SealError> {
        // One draw: the nonce, then the flow id when the claims need one.
        let mut random = [0u8; NONCE_LEN + FLOW_ID_LEN];
        let len = if claims.needs_flow_id() {
            random.len()
        } else {
            NONCE_LEN
        };
        self.entropy().fill(&mut random[..len]);
        let (mut nonce, mut flow_id) = ([0u8; NONCE_LEN], [0u8; FLOW_ID_LEN]);
        nonce.copy_from_slice(&random[..NONCE_LEN]);
        flow_id.copy_from_slice(&random[NONCE_LEN..]);
        let token = self.seal_inner(claims, &nonce, &flow_id)?;
        Ok((token, claims.flow_id.unwrap_or(flow_id)))
    }

    fn entropy(&self) -> &dyn Entropy {
        &*self.inner.entropy
    }

    /// [`Sealer::seal`] with a caller-chosen nonce, for known-answer vectors and fuzzing only.
    /// The flow id of a first round still comes from the sealer's [`Entropy`]; vectors
    /// fix it with `Claims::with_flow_id`.
    ///
    /// Exposed only with the `test-vectors` cargo feature (off by default; the crate's own
    /// tests turn it on through a dev-dependency on itself). Never use it in production:
    /// reusing a nonce under one key breaks confidentiality and authenticity.
    ///
    /// # Errors
    ///
    /// As [`Sealer::seal`].
    #[cfg(any(test, feature = "test-vectors"))]
    #[doc(hidden)]
    pub fn seal_with_nonce<S: Serialize>(
        &self,
        claims: &Claims<S>,
        nonce: [u8; 24],
    ) -> Result<String, SealError> {
        let mut flow_id = [0u8; FLOW_ID_LEN];
        if claims.needs_flow_id() {
            self.entropy().fill(&mut flow_id);
        }
        self.seal_inner(claims, &nonce, &flow_id)
    }

    /// Seals with this nonce; `flow_id` is written only when the claims have none.
    fn seal_inner<S: Serialize>(
        &self,
        claims: &Claims<S>,
        nonce: &[u8; NONCE_LEN],
        flow_id: &[u8; FLOW_ID_LEN],
    ) -> Result<String, SealError> {
        let cfg = &self.inner.config;
        // One load: the whole seal uses this ring even if it is replaced meanwhile.
        let ring = self.inner.keyring.load();
        let key = ring.sealing();
        // Wiped on drop: on the error paths it may hold plaintext.
        let hint = self.inner.size_hint.load(Ordering::Relaxed);
        let mut scratch = Scratch(Vec::with_capacity(hint));
        let buf = &mut scratch.0;
        buf.push(VERSION);
        buf.extend_from_slice(&key.kid().to_be_bytes());
        buf.extend_from_slice(nonce);
        claims.write_header(buf, flow_id);
        serde_json::to_writer(&mut *buf, &claims.state).map_err(SealError::Serialize)?;
        let pt_len = buf.len() - HEADER_LEN;
        if pt_len > cfg.max_plaintext() {
            return Err(SealError::TooLarge {
                len: pt_len,
                max: cfg.max_plaintext(),
            });
        }
        let token_len = token::encoded_len(buf.len() + TAG_LEN);
        if token_len > cfg.max_token_len() {
            return Err(SealError::TokenTooLong {
                len: token_len,
                max: cfg.max_token_len(),
            });
        }
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&buf[..HEADER_LEN]);
        let aad = token::aad(&header);
        token::encrypt_append(key.cipher(), nonce, &aad, buf, HEADER_LEN)
            .map_err(|_| SealError::Encrypt)?;
        if buf.len() != hint {
            self.inner.size_hint.store(buf.len(), Ordering::Relaxed);
        }
        // This key is in use until this flow's deadline (an expired but authentic
        // state still gets its own answer until then), plus the skew an open allows.
        ring.note_sealed(claims.deadline.unix_secs().saturating_add(cfg.skew_secs()));
        // Encode straight into an exact-size buffer: `encode_string` would stage chunks
        // and copy them again (measured slower).
        #[allow(clippy::slow_vector_initialization)]
        // why: zeroed by `resize`, not allocated zeroed as `vec![0; n]` is: the
        // allocator's zeroing path costs more than writing a token's few hundred bytes.
        let mut out = Vec::with_capacity(token_len);
        out.resize(token_len, 0u8);
        let written = URL_SAFE_NO_PAD
            .encode_slice(&*buf, &mut out)
            .map_err(|_| SealError::Encrypt)?;
        out.truncate(written);
        String::from_utf8(out).map_err(|_| SealError::Encrypt)
    }

    /// Opens a token for the current request at time `now`.
    ///
    /// Checks, in order: length cap (before any decoding), canonical base64url,
    /// version, kid (exactly one key), tag, strict claims decoding (including the
    /// state type `S`), then expiry (`now <= exp + skew`), far future
    /// (`exp <= now + max_ttl + skew`), deadline (`now <= deadline + skew`), and the
    /// request, principal and audience digests against `expected`. All claim checks
    /// are evaluated; the first failing one is the reason.
    ///
    /// # Errors
    ///
    /// [`OpenError`], whose public text never varies; its [`OpenError::reason`] says
    /// why, and [`OpenError::is_expired_but_authentic`] flags an authentic, correctly
    /// bound state whose window lapsed. Each failure bumps one counter and emits one
    /// `tracing` event (target `mrtr::seal`) with the reason, never the token.
    pub fn open<S: DeserializeOwned>(
        &self,
        token: &UntrustedState,
        expected: &Binding,
        now: Timestamp,
    ) -> Result<Verified<Claims<S>>, OpenError> {
        self.open_checked(token.as_str(), expected, now)
            .map_err(|e| self.record(e))
    }

    fn open_checked<S: DeserializeOwned>(
        &self,
        token: &str,
        expected: &Binding,
        now: Timestamp,
    ) -> Result<Verified<Claims<S>>, OpenError> {
        let (kid, scratch) = self.decrypt(token)?;
        let buf = &scratch.0;
        let fail = |r: RejectReason| OpenError::new(r).with_kid(kid);
        let pt = &buf[HEADER_LEN..buf.len() - TAG_LEN];
        let (header, state) = Header::parse(pt).ok_or_else(|| fail(RejectReason::Decode))?;
        if !strict_json_bounds(state) {
            return Err(fail(RejectReason::Decode));
        }
        let state: S = serde_json::from_slice(state).map_err(|_| fail(RejectReason::Decode))?;

        let cfg = &self.inner.config;
        let (now_s, skew) = (now.unix_secs(), cfg.skew_secs());
        let exp = header.exp.unix_secs();
        let expired = now_s > exp.saturating_add(skew);
        let far_future = exp
            > now_s
                .saturating_add(cfg.max_ttl_secs())
                .saturating_add(skew);
        let deadline = now_s > header.deadline.unix_secs().saturating_add(skew);
        let (request, principal, audience) = header.mismatches(expected);
        let first = [
            (expired, RejectReason::Expired),
            (far_future, RejectReason::FarFuture),
            (deadline, RejectReason::Deadline),
            (request, RejectReason::Binding),
            (principal, RejectReason::Principal),
            (audience, RejectReason::Audience),
        ]
        .into_iter()
        .find_map(|(failed, r)| failed.then_some(r));
        match first {
            None => Ok(Verified::new(header.with_state(*expected, state))),
            Some(r) => {
                let lapsed_but_authentic =
                    (expired || deadline) && !far_future && !request && !principal && !audience;
                Err(fail(r).with_expired_but_authentic(lapsed_but_authentic))
            }
        }
    }

    /// For operators (`mrtr inspect`): opens a token with the ring's keys (tag checked)
    /// without binding or expiry checks, and returns its claims as JSON: `version`, `kid`,
    /// `iat`, `exp`, `deadline`, `round`, `flow_id` (hex), `binding` (hex, the sealed 16-byte digests) and
    /// `state` (as sealed).
    ///
    /// The output holds the decrypted state: show it only to the operator.
    ///
    /// # Errors
    ///
    /// [`OpenError`] with the reason, for every failure up to and including decoding.
    pub fn inspect(&self, token: &UntrustedState) -> Result<serde_json::Value, OpenError> {
        self.inspect_inner(token.as_str())
            .map_err(|e| self.record(e))
    }

    fn inspect_inner(&self, token: &str) -> Result<serde_json::Value, OpenError> {
        let (kid, scratch) = self.decrypt(token)?;
        let buf = &scratch.0;
        let fail = || OpenError::new(RejectReason::Decode).with_kid(kid);
        let pt = &buf[HEADER_LEN..buf.len() - TAG_LEN];
        let (h, state) = Header::parse(pt).ok_or_else(fail)?;
        if !strict_json_bounds(state) {
            return Err(fail());
        }
        let state: serde_json::Value = serde_json::from_slice(state).map_err(|_| fail())?;
        Ok(serde_json::json!({
            "version": VERSION,
            "claims_format": claims::CLAIMS_FORMAT,
            "kid": kid.to_string(),
            "iat": h.iat.unix_secs(),
            "exp": h.exp.unix_secs(),
            "deadline": h.deadline.unix_secs(),
            "round": h.round,
            "flow_id": binding::hex(&h.flow_id),
            "binding": h.binding_json(),
            "state": state,
        }))
    }

    /// Length cap, base64, version, kid, tag. Returns the buffer with the plaintext
    /// at `HEADER_LEN..len - TAG_LEN`; zeroized on drop.
    fn decrypt(&self, token: &str) -> Result<(Kid, Scratch), OpenError> {
        let cfg = &self.inner.config;
        if token.len() > cfg.max_token_len() {
            return Err(OpenError::new(RejectReason::TooLarge));
        }
        if token.len() < token::encoded_len(MIN_TOKEN_BYTES) {
            return Err(OpenError::new(RejectReason::Malformed));
        }
        let mut scratch = Scratch(Vec::with_capacity(token.len() / 4 * 3 + 3));
        let buf = &mut scratch.0;
        URL_SAFE_NO_PAD
            .decode_vec(token.as_bytes(), buf)
            .map_err(|_| OpenError::new(RejectReason::Malformed))?;
        if buf.len() < MIN_TOKEN_BYTES {
            return Err(OpenError::new(RejectReason::Malformed));
        }
        if buf[0] != VERSION {
            return Err(OpenError::new(RejectReason::UnknownVersion));
        }
        let kid = Kid::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
        // One load: the kid lookup and the decryption use the same ring.
        let ring = self.inner.keyring.load();
        let key = ring
            .get(kid)
            .ok_or(OpenError::new(RejectReason::UnknownKey).with_kid(kid))?;
        let (header_bytes, body) = buf.split_at_mut(HEADER_LEN);
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(header_bytes);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&header[1 + 4..]);
        let aad = token::aad(&header);
        if token::decrypt_in_place(key.cipher(), &nonce, &aad, body).is_err() {
            // Whatever the AEAD left in the buffer is zeroized on drop and never read.
            return Err(OpenError::new(RejectReason::Tag).with_kid(kid));
        }
        Ok((kid, scratch))
    }

    /// Counts and logs a refusal; never the token, never plaintext.
    fn record(&self, e: OpenError) -> OpenError {
        self.inner.counters.bump(e.reason());
        let kid = e.kid().map(|k| k.to_string());
        let kid = kid.as_deref().unwrap_or("-");
        match e.reason() {
            RejectReason::Tag | RejectReason::UnknownVersion | RejectReason::Decode => {
                tracing::warn!(target: "mrtr::seal", reason = e.reason().as_str(), kid, "requestState rejected");
            }
            _ => {
                tracing::debug!(
                    target: "mrtr::seal",
                    reason = e.reason().as_str(),
                    kid,
                    expired_but_authentic = e.is_expired_but_authentic(),
                    "requestState rejected"
                );
            }
        }
        e
    }
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("keyring", &**self.inner.keyring.load())
            .field("config", &self.inner.config)
            .field("entropy", &self.inner.entropy)
            .field("reject_counts", &self.inner.counters)
            .finish()
    }
}

/// The bare XAES-256-GCM primitive as `seal` and `open` call it, for the C2SP and
/// Wycheproof-style vector tests only (`test-vectors` feature; not part of the API).
#[cfg(any(test, feature = "test-vectors"))]
#[doc(hidden)]
pub mod primitive {
    use xaes_256_gcm::Xaes256Gcm;
    use xaes_256_gcm::aead::KeyInit;

    /// Encrypts `plaintext` and returns `ciphertext ‖ tag`, through the same in-place
    /// path as `Sealer::seal`.
    pub fn xaes_seal(key: &[u8; 32], nonce: &[u8; 24], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let cipher = Xaes256Gcm::new(key.into());
        let mut buf = plaintext.to_vec();
        super::token::encrypt_append(&cipher, nonce, aad, &mut buf, 0)
            .expect("within XAES-256-GCM length limits");
        buf
    }

    /// Verifies and decrypts `ciphertext ‖ tag` through the same path as `Sealer::open`.
    pub fn xaes_open(
        key: &[u8; 32],
        nonce: &[u8; 24],
        aad: &[u8],
        sealed: &[u8],
    ) -> Option<Vec<u8>> {
        let cipher = Xaes256Gcm::new(key.into());
        let mut buf = sealed.to_vec();
        super::token::decrypt_in_place(&cipher, nonce, aad, &mut buf).ok()?;
        buf.truncate(buf.len() - super::token::TAG_LEN);
        Some(buf)
    }
}

#[cfg(test)]
mod tests;
