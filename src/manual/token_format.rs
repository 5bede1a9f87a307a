//! The `requestState` token format, byte by byte.
//!
//! What [`Sealer::seal`] writes and [`Sealer::open`] accepts. This is format
//! version 1, the only one so far. The known-answer vectors in
//! `tests/vectors/seal_vectors.json` pin every byte of it: a fixed key, nonce,
//! flow id and clock must seal to exactly the stored tokens.
//!
//! # The token
//!
//! A token is the base64url encoding (RFC 4648 §5) without padding of:
//!
//! | offset | length | field |
//! |---|---|---|
//! | 0 | 1 | version, `0x01`: XAES-256-GCM, 24-byte nonce, 16-byte tag, AAD scheme v1 |
//! | 1 | 4 | kid: the first 4 bytes of HMAC-SHA256(key, `"mrtr/request-state/v1/kid"`), a big-endian `u32` |
//! | 5 | 24 | nonce: random, from the per-thread CSPRNG (`rand::rng()`) |
//! | 29 | n | ciphertext: XAES-256-GCM of the plaintext below, same length `n` |
//! | 29 + n | 16 | tag: exactly 16 bytes, no other length is produced or accepted |
//!
//! Bytes 0..29 are the *header*: in clear, and authenticated. The AAD (not
//! transmitted) is the PASETO PAE encoding of a domain label and the header,
//! 74 bytes in all:
//!
//! ```text
//! AAD = u64le(2) ‖ u64le(21) ‖ "mrtr/request-state/v1" ‖ u64le(29) ‖ header[0..29]
//! ```
//!
//! so a token cannot be moved to another format version or another key, and
//! its nonce cannot be swapped. The kid names exactly one key of the
//! [`Keyring`]; `open` never tries the others (see the `mrtr` binary's rotation chapter,
//! `mrtr_cli::manual::rotation`).
//!
//! Only the canonical encoding is accepted: the URL-safe alphabet, no `=`
//! padding, no whitespace, zero trailing bits. Any other spelling of the same
//! bytes is `malformed`, so one token has exactly one text.
//!
//! # The plaintext (claims format 1)
//!
//! All integers big-endian, times in whole Unix seconds.
//!
//! | offset | length | field |
//! |---|---|---|
//! | 0 | 1 | claims format, `0x01` |
//! | 1 | 8 | `iat`: when this round's token was sealed |
//! | 9 | 8 | `exp`: this round's expiry, `min(iat + ttl, deadline)` |
//! | 17 | 8 | `deadline`: the flow's absolute deadline, fixed in round 1 as `iat + flow_lifetime` and copied unchanged into every later round |
//! | 25 | 4 | round, `u32`, 1 for the first `InputRequiredResult` of a flow |
//! | 29 | 16 | flow id: random in round 1, the same in every later round (the key of at-most-once guards, [`Claims::flow_id`]) |
//! | 45 | 16 | request digest, first 16 bytes |
//! | 61 | 16 | principal digest, first 16 bytes |
//! | 77 | 16 | audience digest, first 16 bytes |
//! | 93 | .. | state: exactly one JSON text as serde_json writes it, nothing before or after it |
//!
//! The three digests are those of [`Binding::new`]. With
//! `enc(x₁..xₙ) = u64le(n) ‖ for each xᵢ: u64le(len(xᵢ)) ‖ xᵢ` (PAE):
//!
//! - request = SHA-256(enc(`"mrtr/binding/v1/request"`, method, target, A,
//!   protocol version)), where A = SHA-256(enc(`"mrtr/binding/v1/arguments"`,
//!   [`canonical_json`] of the arguments)) and absent arguments count as `{}`;
//! - principal = SHA-256(enc(`"mrtr/binding/v1/principal"`, s, i, c)), where the
//!   subject, issuer and client id each encode as `0x00` when absent and
//!   `0x01 ‖ value` when present;
//! - audience = SHA-256(enc(`"mrtr/binding/v1/audience"`, audience)).
//!
//! The canonical arguments sort object keys bytewise at every depth, drop all
//! whitespace, and print numbers as serde_json does (so `1.0` and `1` differ).
//! The digests sit inside the plaintext, not only in the AAD, so that the private
//! log can tell a tampered token (`tag`) from an authentic one presented on
//! another request, by another principal or to another audience (`binding`,
//! `principal`, `audience`); see [`security_model`].
//!
//! # The engine's state
//!
//! The JSON state the round engine seals is one object with one-letter keys
//! (every byte travels through the client twice per round). Each key is
//! omitted when empty, and unknown keys are refused, so a state of another
//! shape never half-parses:
//!
//! | key | what |
//! |---|---|
//! | `q` | the asked set: for each key the round asked, `{"k": kind, "h": question digest}` |
//! | `a` | the answers accepted so far: `{"k": kind, "h": question digest, "v": answer}` per key |
//! | `o` | the results of `once` steps already carried out, by step name |
//! | `d` | the handler's own data (`set_data`), any JSON value |
//!
//! A kind is `"elicitation/form"`, `"elicitation/url"`, `"sampling"` or
//! `"roots"`. A question digest is SHA-256 over `"mrtr/question/v1\0"` and the
//! canonical JSON of the input request exactly as the handler built it,
//! truncated to 16 bytes and written in base64url: a reworded question has
//! another digest, so an answer never carries over to a question it was not
//! given to. An accepted form answer is sealed as validated, keeping only the
//! fields the `requestedSchema` declares.
//!
//! # Limits
//!
//! - [`Sealer::open`] checks the token's length first, before decoding
//!   anything: more than [`SealConfig::max_token_len`] characters (default
//!   [`MAX_TOKEN_LEN`], 16 384) is `too_large`. Fewer than 60 characters
//!   (a header and a tag around nothing) is `malformed`.
//! - [`Sealer::seal`] refuses a plaintext (the 93-byte claims header plus the
//!   JSON state) above [`SealConfig::max_plaintext`] (default
//!   [`MAX_PLAINTEXT`], 8 192 bytes), and a token that `open` would refuse
//!   as too long. It returns an error; it never truncates. A full 8 192-byte
//!   plaintext makes a token of 10 983 characters.
//! - In the engine, a state that grows past the limit (long free-text answers,
//!   large handler data) ends the flow with a limit error, not a server fault:
//!   the answers came from the client.
//!
//! # Opening, in order
//!
//! Length cap, canonical base64url, version byte, kid (exactly one key), tag,
//! strict claims decoding (claims format, JSON bounds, the state's type), then
//! the claims: expiry (`now <= exp + skew`), far future
//! (`exp <= now + max_ttl + skew`), deadline (`now <= deadline + skew`), and the
//! request, principal and audience digests. Every refusal is the one public
//! [`OpenError`]; [`RejectReason`] lists the private reasons in this order.
//!
//! # Versioning rules
//!
//! - The version byte covers everything outside the plaintext: the AEAD, the
//!   nonce and tag lengths, the AAD scheme and the header layout. The claims
//!   format byte covers the 93-byte claims header. The domain labels
//!   (`mrtr/request-state/v1`, `mrtr/binding/v1/…`, `mrtr/question/v1`) are part
//!   of the format too.
//! - A number, once released, never changes meaning. Any change to what a byte
//!   of the token means, to a label, or to the canonical JSON takes a new version
//!   (or claims format) number and new known-answer vectors; the old vectors stay
//!   and must keep opening for as long as the old version is accepted.
//! - A build refuses a version byte it does not know (`unknown_version`, logged
//!   at warning level) and a claims format it does not know (`decode`), with
//!   the same public error as any other refusal.
//! - The engine's state is strict JSON: adding a key to it is a format change
//!   as well, because a build without the key refuses it (`decode`).
//! - A new format is rolled out like a new key (see the rotation chapter): first
//!   ship a build that opens both formats and still seals the old one, then one
//!   that seals the new one, and stop opening the old one only after the longest
//!   flow lifetime plus clock skew. Otherwise, during a rolling deploy, an old
//!   instance refuses what a new one sealed and the flow fails for the user.
//!
//! [`Sealer::seal`]: crate::seal::Sealer::seal
//! [`Sealer::open`]: crate::seal::Sealer::open
//! [`Keyring`]: crate::seal::Keyring
//! [`Claims::flow_id`]: crate::seal::Claims::flow_id
//! [`Binding::new`]: crate::seal::Binding::new
//! [`canonical_json`]: crate::seal::canonical_json
//! [`SealConfig::max_token_len`]: crate::seal::SealConfig::max_token_len
//! [`SealConfig::max_plaintext`]: crate::seal::SealConfig::max_plaintext
//! [`MAX_TOKEN_LEN`]: crate::defaults::MAX_TOKEN_LEN
//! [`MAX_PLAINTEXT`]: crate::defaults::MAX_PLAINTEXT
//! [`OpenError`]: crate::seal::OpenError
//! [`RejectReason`]: crate::seal::RejectReason
//! [`security_model`]: super::security_model
