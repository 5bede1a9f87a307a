//! What a sealed state is bound to: the request, the principal and the audience.

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::principal::Principal;

/// Domain label of the request component digest.
const REQUEST_LABEL: &[u8] = b"mrtr/binding/v1/request";
/// Domain label of the principal component digest.
const PRINCIPAL_LABEL: &[u8] = b"mrtr/binding/v1/principal";
/// Domain label of the audience component digest.
const AUDIENCE_LABEL: &[u8] = b"mrtr/binding/v1/audience";
/// Domain label of the canonical-arguments digest.
const ARGUMENTS_LABEL: &[u8] = b"mrtr/binding/v1/arguments";

/// The request a state is sealed for or opened against. Every field is required:
/// an unauthenticated server passes [`Principal::anonymous`] on purpose.
#[derive(Debug, Clone, Copy)]
pub struct BindingInput<'a> {
    /// The JSON-RPC method: `tools/call`, `prompts/get` or `resources/read`.
    pub method: &'a str,
    /// The tool name, prompt name or resource URI.
    pub target: &'a str,
    /// `params.arguments`; `None` and `{}` bind the same (clients may omit an empty object on retry).
    pub arguments: Option<&'a Value>,
    /// The authenticated principal.
    pub principal: &'a Principal,
    /// This server's audience (e.g. its canonical resource URI), so state does not move between servers.
    pub audience: &'a str,
    /// The negotiated MCP protocol version.
    pub protocol_version: &'a str,
}

/// SHA-256 digests of the three bound components; the claims seal the first 16 bytes of each.
///
/// The components are digested separately so that the private log can say which one
/// differed (another request, another principal, another audience). Each digest is
/// SHA-256 over a length-prefixed encoding (see [`Binding::new`]), so no two distinct
/// inputs share an encoding.
///
/// Serde form: an object of three lowercase hex strings, `request`, `principal`, `audience`.
///
/// ```
/// use mrtr::seal::{Binding, BindingInput};
/// use mrtr::principal::Principal;
/// let alice = Principal::subject("alice");
/// let arguments = serde_json::json!({"env": "prod", "force": false});
/// let input = BindingInput {
///     method: "tools/call", target: "deploy",
///     arguments: Some(&arguments),
///     principal: &alice, audience: "https://mcp.example", protocol_version: "2026-07-28",
/// };
/// let reordered = serde_json::json!({"force": false, "env": "prod"});
/// assert_eq!(Binding::new(&input), Binding::new(&BindingInput { arguments: Some(&reordered), ..input }));
/// assert_ne!(Binding::new(&input), Binding::new(&BindingInput { target: "undeploy", ..input }));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding {
    pub(super) request: [u8; 32],
    pub(super) principal: [u8; 32],
    pub(super) audience: [u8; 32],
}

impl Binding {
    /// Digests a request's binding components.
    ///
    /// With `enc(x₁..xₙ)` = `u64le(n) ‖ for each: u64le(len(xᵢ)) ‖ xᵢ` (PASETO's PAE):
    /// - request = SHA-256(enc("mrtr/binding/v1/request", method, target, A, protocol_version)),
    ///   where A = SHA-256(enc("mrtr/binding/v1/arguments", `canonical_json(args)`)) and
    ///   absent arguments count as `{}`;
    /// - principal = SHA-256(enc("mrtr/binding/v1/principal", s, i, c)) where each optional
    ///   field is `0x00` when absent and `0x01 ‖ value` when present (subject, issuer, client id);
    /// - audience = SHA-256(enc("mrtr/binding/v1/audience", audience)).
    pub fn new(input: &BindingInput<'_>) -> Binding {
        Self::with_audience(input, &AudienceDigest::of(input.audience))
    }

    /// [`Binding::new`] with the audience component already digested: an engine's
    /// audience never changes, so it digests it once. `audience` must be the digest
    /// of `input.audience`.
    pub(crate) fn with_audience(input: &BindingInput<'_>, audience: &AudienceDigest) -> Binding {
        debug_assert!(
            AudienceDigest::of(input.audience) == *audience,
            "the audience digest is of another audience"
        );
        let empty = Value::Object(serde_json::Map::new());
        let args = input.arguments.unwrap_or(&empty);
        let mut h = Sha256::new();
        h.update(pae_count(2));
        h.update(pae_len(ARGUMENTS_LABEL.len()));
        h.update(ARGUMENTS_LABEL);
        // The canonical form's length must precede it; write it twice rather than buffer:
        // the first pass only counts.
        let mut counter = CountSink(0);
        write_canonical(&mut counter, args);
        h.update(pae_len(counter.0));
        write_canonical(&mut HashSink(&mut h), args);
        let args_digest: [u8; 32] = h.finalize().into();

        let request = digest(&[
            REQUEST_LABEL,
            input.method.as_bytes(),
            input.target.as_bytes(),
            &args_digest,
            input.protocol_version.as_bytes(),
        ]);
        Binding {
            request,
            principal: principal_component(input.principal),
            audience: audience.0,
        }
    }

    /// The request component digest (method, target, arguments, protocol version).
    pub fn request_digest(&self) -> &[u8; 32] {
        &self.request
    }

    /// The principal component digest.
    pub fn principal_digest(&self) -> &[u8; 32] {
        &self.principal
    }

    /// The audience component digest.
    pub fn audience_digest(&self) -> &[u8; 32] {
        &self.audience
    }
}

/// The audience component of a [`Binding`], digested once for every request to
/// the same audience.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AudienceDigest([u8; 32]);

impl AudienceDigest {
    /// SHA-256(enc("mrtr/binding/v1/audience", audience)), as in [`Binding::new`].
    pub(crate) fn of(audience: &str) -> Self {
        Self(digest(&[AUDIENCE_LABEL, audience.as_bytes()]))
    }
}

/// The principal component of a [`Binding`] for `p`, as in [`Binding::new`]
/// (what the list cursors bind too, `super::cursor`).
pub(crate) fn principal_component(p: &Principal) -> [u8; 32] {
    match [p.subject_id(), p.issuer(), p.client_id()] {
        // The anonymous principal's digest never changes: digested once.
        [None, None, None] => *ANONYMOUS.get_or_init(|| principal_digest([None; 3])),
        fields => principal_digest(fields),
    }
}

/// The principal component of the anonymous principal (no subject, issuer or
/// client id), once computed.
static ANONYMOUS: OnceLock<[u8; 32]> = OnceLock::new();

/// SHA-256 of the PAE encoding of the principal label and `fields`, each
/// `0x00` when absent and `0x01 ‖ value` when present (no buffer per field).
fn principal_digest(fields: [Option<&str>; 3]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(pae_count(1 + fields.len()));
    h.update(pae_len(PRINCIPAL_LABEL.len()));
    h.update(PRINCIPAL_LABEL);
    for field in fields {
        match field {
            None => {
                h.update(pae_len(1));
                h.update([0]);
            }
            Some(v) => {
                h.update(pae_len(1 + v.len()));
                h.update([1]);
                h.update(v.as_bytes());
            }
        }
    }
    h.finalize().into()
}

pub(super) fn pae_count(n: usize) -> [u8; 8] {
    (n as u64).to_le_bytes()
}

pub(super) fn pae_len(n: usize) -> [u8; 8] {
    (n as u64).to_le_bytes()
}

/// SHA-256 of the PAE encoding of `parts`.
fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(pae_count(parts.len()));
    for p in parts {
        h.update(pae_len(p.len()));
        h.update(p);
    }
    h.finalize().into()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn unhex32(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let nib = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (nib(b[2 * i])? << 4) | nib(b[2 * i + 1])?;
    }
    Some(out)
}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Binding")
            .field("request", &format_args!("{}…", hex(&self.request[..6])))
            .field("principal", &format_args!("{}…", hex(&self.principal[..6])))
            .field("audience", &format_args!("{}…", hex(&self.audience[..6])))
            .finish()
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BindingHex {
    request: String,
    principal: String,
    audience: String,
}

impl Serialize for Binding {
    fn serialize<Se: Serializer>(&self, s: Se) -> Result<Se::Ok, Se::Error> {
        BindingHex {
            request: hex(&self.request),
            principal: hex(&self.principal),
            audience: hex(&self.audience),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Binding {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let h = BindingHex::deserialize(d)?;
        let bad = || serde::de::Error::custom("binding digest is not 64 lowercase hex digits");
        Ok(Binding {
            request: unhex32(&h.request).ok_or_else(bad)?,
            principal: unhex32(&h.principal).ok_or_else(bad)?,
            audience: unhex32(&h.audience).ok_or_else(bad)?,
        })
    }
}

/// The canonical JSON text of a value, part of the token format (it feeds the request digest).
///
/// - object keys sorted by Rust `String` order (bytewise UTF-8, the same as Unicode
///   code point order; *not* the UTF-16 order of RFC 8785), at every depth;
/// - no whitespace at all;
/// - strings escaped as serde_json escapes them (`"` `\` and control characters;
///   other characters, `/` included, as they are);
/// - numbers as serde_json prints them (integers as integers, floats in shortest
///   round-trip form, so `1.0` stays `1.0` and differs from `1`).
///
/// It does not depend on serde_json's `preserve_order` feature.
///
/// ```
/// use mrtr::seal::canonical_json;
/// let v = serde_json::json!({"b": [1, 2.5, null], "a": {"y": "é", "x": true}});
/// assert_eq!(canonical_json(&v), r#"{"a":{"x":true,"y":"é"},"b":[1,2.5,null]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = StringSink(String::new());
    write_canonical(&mut out, value);
    out.0
}

/// Feeds the [`canonical_json`] text of `value` to `h`, without building it.
pub(crate) fn hash_canonical(h: &mut Sha256, value: &Value) {
    write_canonical(&mut HashSink(h), value);
}

trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

/// A sink as an `io::Write` (for serde_json's string escaping) and a
/// `fmt::Write` (for a number's `Display`): the same bytes, without a `String`
/// per value.
struct SinkWriter<'a, S>(&'a mut S);
impl<S: Sink> std::io::Write for SinkWriter<'_, S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.put(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl<S: Sink> fmt::Write for SinkWriter<'_, S> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.put(s.as_bytes());
        Ok(())
    }
}

struct StringSink(String);
impl Sink for StringSink {
    fn put(&mut self, bytes: &[u8]) {
        // Every caller passes whole UTF-8 sequences (JSON text).
        self.0
            .push_str(std::str::from_utf8(bytes).unwrap_or_default());
    }
}

struct CountSink(usize);
impl Sink for CountSink {
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
}

struct HashSink<'a>(&'a mut Sha256);
impl Sink for HashSink<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

fn write_string(out: &mut impl Sink, s: &str) {
    // serde_json's escaping (what `serde_json::to_string` writes), straight into the
    // sink: whole UTF-8 sequences, split only around the ASCII escapes. A plain
    // string's serialization cannot fail.
    let _ = Serialize::serialize(s, &mut serde_json::Serializer::new(SinkWriter(out)));
}

fn write_canonical(out: &mut impl Sink, value: &Value) {
    match value {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        // `Display`, as `to_string` would print it.
        Value::Number(n) => {
            let _ = fmt::Write::write_fmt(&mut SinkWriter(out), format_args!("{n}"));
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.put(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                write_canonical(out, item);
            }
            out.put(b"]");
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.put(b"{");
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                write_string(out, k);
                out.put(b":");
                write_canonical(out, v);
            }
            out.put(b"}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The canonical form as first written: a `String` per string and number.
    fn reference(out: &mut String, value: &Value) {
        match value {
            Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap()),
            Value::Number(n) => out.push_str(&n.to_string()),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    reference(out, item);
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    reference(out, v);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    #[test]
    fn the_streamed_canonical_form_is_the_reference_one_byte_for_byte() {
        let tricky = "q\"b\\s/\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f}\u{7f}é€😀\u{2028}";
        let v = json!({
            "z": [1, -2, 2.5, 1.0, 1e300, -0.0, 18446744073709551615u64, -9223372036854775808i64, 0.1],
            tricky: {"b": tricky, "a": [null, true, false, "", {}]},
            "é": "x", "": 0, "A": [[], [[]]],
        });
        let mut want = String::new();
        reference(&mut want, &v);
        assert_eq!(canonical_json(&v), want);
        let mut h = Sha256::new();
        hash_canonical(&mut h, &v);
        assert_eq!(
            <[u8; 32]>::from(h.finalize()),
            <[u8; 32]>::from(Sha256::digest(want.as_bytes()))
        );
    }

    fn input<'a>(p: &'a Principal, args: Option<&'a Value>) -> BindingInput<'a> {
        BindingInput {
            method: "tools/call",
            target: "deploy",
            arguments: args,
            principal: p,
            audience: "https://mcp.example",
            protocol_version: "2026-07-28",
        }
    }

    #[test]
    fn canonical_form() {
        let v = json!({"z": 1, "a": [true, false, null, "x\"\n/"], "m": {"b": 1.5, "a": -0}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":[true,false,null,"x\"\n/"],"m":{"a":0,"b":1.5},"z":1}"#
        );
        assert_eq!(canonical_json(&json!({})), "{}");
        // The canonical text is itself valid JSON that parses to the same value.
        let back: Value = serde_json::from_str(&canonical_json(&v)).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn absent_arguments_equal_empty_object() {
        let p = Principal::anonymous();
        let empty = json!({});
        assert_eq!(
            Binding::new(&input(&p, None)),
            Binding::new(&input(&p, Some(&empty)))
        );
        let null = Value::Null;
        assert_ne!(
            Binding::new(&input(&p, None)),
            Binding::new(&input(&p, Some(&null)))
        );
    }

    #[test]
    fn components_are_separate() {
        let a = Principal::subject("alice");
        let b = Principal::subject("bob");
        let x = Binding::new(&input(&a, None));
        let y = Binding::new(&input(&b, None));
        assert_eq!(x.request, y.request);
        assert_eq!(x.audience, y.audience);
        assert_ne!(x.principal, y.principal);
    }

    #[test]
    fn a_digested_audience_binds_as_the_audience_itself() {
        let p = Principal::subject("alice");
        let args = json!({"env": "prod"});
        let i = input(&p, Some(&args));
        let once = AudienceDigest::of(i.audience);
        assert_eq!(Binding::with_audience(&i, &once), Binding::new(&i));
        assert_eq!(&once.0, Binding::new(&i).audience_digest());
        // Another audience is another digest.
        assert_ne!(AudienceDigest::of("https://other.example"), once);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the audience digest is of another audience")]
    fn a_digest_of_another_audience_is_a_bug_caught_in_debug_builds() {
        let p = Principal::anonymous();
        let _ = Binding::with_audience(
            &input(&p, None),
            &AudienceDigest::of("https://other.example"),
        );
    }

    #[test]
    fn encoding_is_injective_across_boundaries() {
        let p = Principal::anonymous();
        let one = Binding::new(&BindingInput {
            method: "tools/call",
            target: "ab",
            ..input(&p, None)
        });
        let two = Binding::new(&BindingInput {
            method: "tools/callab",
            target: "",
            ..input(&p, None)
        });
        assert_ne!(one.request, two.request);
        // Subject "x" with no issuer differs from no subject with issuer "x".
        let s = Binding::new(&input(&Principal::subject("x"), None));
        let i = Binding::new(&input(&Principal::anonymous().with_issuer("x"), None));
        assert_ne!(s.principal, i.principal);
        // Empty subject differs from anonymous.
        let e = Binding::new(&input(&Principal::subject(""), None));
        assert_ne!(e.principal, Binding::new(&input(&p, None)).principal);
    }

    #[test]
    fn serde_round_trip_is_strict() {
        let p = Principal::subject("alice");
        let b = Binding::new(&input(&p, None));
        let v = serde_json::to_value(b).unwrap();
        assert_eq!(v["request"].as_str().unwrap().len(), 64);
        assert_eq!(serde_json::from_value::<Binding>(v.clone()).unwrap(), b);
        let mut upper = v.clone();
        upper["audience"] = Value::String(v["audience"].as_str().unwrap().to_uppercase());
        assert!(serde_json::from_value::<Binding>(upper).is_err());
        let mut extra = v;
        extra["more"] = json!(1);
        assert!(serde_json::from_value::<Binding>(extra).is_err());
    }

    #[test]
    fn debug_is_short() {
        let p = Principal::subject("alice");
        let d = format!("{:?}", Binding::new(&input(&p, None)));
        assert!(d.starts_with("Binding { request: "), "{d}");
        assert!(!d.contains("alice"));
    }
}
