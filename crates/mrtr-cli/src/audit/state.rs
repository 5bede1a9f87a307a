//! What the audit can learn from a `requestState` without a key, and the
//! altered states it sends: the state is opaque to a client, so all this is
//! guesswork over the encodings servers use (base64 of either alphabet, with or
//! without padding, dotted segments as in a JWT).

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

/// How a string was base64-encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Encoding {
    url: bool,
    padded: bool,
}

impl Encoding {
    fn engine(self) -> GeneralPurpose {
        let config = GeneralPurposeConfig::new()
            .with_encode_padding(self.padded)
            .with_decode_padding_mode(DecodePaddingMode::Indifferent);
        let alphabet = if self.url {
            &alphabet::URL_SAFE
        } else {
            &alphabet::STANDARD
        };
        GeneralPurpose::new(alphabet, config)
    }

    pub(super) fn encode(self, bytes: &[u8]) -> String {
        self.engine().encode(bytes)
    }
}

/// `s` as base64 (of the alphabet its characters show, padding or not), and
/// how it was encoded; `None` when it is not base64 at all.
pub(super) fn decode(s: &str) -> Option<(Vec<u8>, Encoding)> {
    if s.len() < 4 {
        return None;
    }
    let url = !(s.contains('+') || s.contains('/'));
    let enc = Encoding {
        url,
        padded: s.ends_with('='),
    };
    enc.engine().decode(s).ok().map(|b| (b, enc))
}

/// How an altered state was altered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Alteration {
    /// Bytes (or characters) changed in place.
    Flipped,
    /// Cut short.
    Truncated,
    /// Made longer.
    Extended,
    /// The same bytes in another base64 form.
    ReEncoded,
    /// The empty string.
    Emptied,
    /// A 64 KiB value.
    Huge,
    /// Decoded JSON with one value changed, encoded again.
    Forged,
}

/// One altered state.
#[derive(Debug, Clone)]
pub(super) struct Altered {
    pub(super) what: Alteration,
    /// What was done, for the evidence.
    pub(super) label: String,
    pub(super) state: String,
}

/// The byte positions flipped in a value of `n` bytes: the start, a quarter, the
/// middle, three quarters, where a 16-byte tag or MAC would begin, the end.
fn positions(n: usize) -> Vec<usize> {
    let mut p = vec![
        0,
        1,
        n / 4,
        n / 2,
        3 * n / 4,
        n.saturating_sub(16),
        n.saturating_sub(1),
    ];
    p.retain(|&i| i < n);
    p.sort_unstable();
    p.dedup();
    p
}

/// A character of the same base64 alphabet, other than `c`.
fn other_char(c: char) -> char {
    match c {
        'A' => 'B',
        '0'..='8' | 'a'..='y' | 'A'..='Y' => (c as u8 + 1) as char,
        _ => 'A',
    }
}

/// An alteration before it is checked against the state: what it is, what
/// was done (for the evidence), and the altered state.
type Candidate = (Alteration, String, String);

/// How one alteration of the state's text is made from it.
type MakeText = fn(&str) -> Option<String>;

/// The alterations of the state's text, whatever its encoding, in the order
/// they are sent: what each is, what was done, and how it is made (`None`
/// where the state is too short, or would be cut inside a character).
const TEXT_ALTERATIONS: [(Alteration, &str, MakeText); 8] = [
    (Alteration::Truncated, "the last character cut", |s| {
        let n = s.len();
        (n > 1 && s.is_char_boundary(n - 1)).then(|| s[..n - 1].to_owned())
    }),
    (Alteration::Truncated, "the last 4 characters cut", |s| {
        let n = s.len();
        (n > 8 && s.is_char_boundary(n - 4)).then(|| s[..n - 4].to_owned())
    }),
    (Alteration::Truncated, "cut to its first half", |s| {
        let n = s.len();
        (n > 2 && s.is_char_boundary(n / 2)).then(|| s[..n / 2].to_owned())
    }),
    (Alteration::Extended, "one character added", |s| {
        Some(format!("{s}A"))
    }),
    (Alteration::Extended, "four characters added", |s| {
        Some(format!("{s}AAAA"))
    }),
    (Alteration::Extended, "a dot added", |s| {
        Some(format!("{s}."))
    }),
    (Alteration::Emptied, "the empty string", |_| {
        Some(String::new())
    }),
    (Alteration::Huge, "64 KiB of `A`", |_| {
        Some("A".repeat(64 * 1024))
    }),
];

/// The altered states to present instead of `state`: those of its decoded
/// bytes (or of each dotted segment's), else characters changed in place,
/// then [`TEXT_ALTERATIONS`]. None is the state itself.
pub(super) fn alterations(state: &str) -> Vec<Altered> {
    let mut out = Vec::new();
    let keep = |out: &mut Vec<Altered>, candidates: Vec<Candidate>| {
        for (what, label, s) in candidates {
            if s != state {
                out.push(Altered {
                    what,
                    label,
                    state: s,
                });
            }
        }
    };
    let segments: Vec<&str> = state.split('.').collect();
    if let Some((bytes, enc)) = decode(state) {
        keep(&mut out, of_bytes(&bytes, enc));
    } else if segments.len() > 1 {
        keep(&mut out, of_segments(&segments));
    }
    if !out.iter().any(|a| a.what == Alteration::Flipped) {
        keep(&mut out, of_characters(state));
    }
    let text = TEXT_ALTERATIONS
        .iter()
        .filter_map(|(what, label, make)| Some((*what, (*label).to_owned(), make(state)?)))
        .collect();
    keep(&mut out, text);
    out
}

/// The alterations of a state that decodes (`enc`) to `bytes`: bits flipped,
/// the same bytes encoded otherwise, and a forgery when they are JSON.
fn of_bytes(bytes: &[u8], enc: Encoding) -> Vec<Candidate> {
    let mut out = Vec::new();
    for i in positions(bytes.len()) {
        let mut b = bytes.to_vec();
        b[i] ^= 0x01;
        out.push((
            Alteration::Flipped,
            format!(
                "bit 0 of byte {i} (counted from 0) of the {} bytes the state decodes to \
                 (base64) flipped",
                bytes.len()
            ),
            enc.encode(&b),
        ));
    }
    let other_padding = Encoding {
        padded: !enc.padded,
        ..enc
    };
    out.push((
        Alteration::ReEncoded,
        format!(
            "the same bytes {} padding",
            if enc.padded { "without" } else { "with" }
        ),
        other_padding.encode(bytes),
    ));
    let other_alphabet = Encoding {
        url: !enc.url,
        ..enc
    };
    out.push((
        Alteration::ReEncoded,
        format!(
            "the same bytes in the {} alphabet",
            if enc.url { "standard" } else { "URL-safe" }
        ),
        other_alphabet.encode(bytes),
    ));
    if let Some(forged) = forge(bytes) {
        out.push((
            Alteration::Forged,
            "decoded as JSON, one value changed, encoded again".into(),
            enc.encode(&forged),
        ));
    }
    out
}

/// The alterations of a dotted state (`segments`): in each of the first four
/// segments that decodes, bits flipped, and a forgery when it is JSON.
fn of_segments(segments: &[&str]) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (n, seg) in segments.iter().enumerate().take(4) {
        let Some((bytes, enc)) = decode(seg) else {
            continue;
        };
        for i in positions(bytes.len()) {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x01;
            let mut s = segments.to_vec();
            let encoded = enc.encode(&flipped);
            s[n] = &encoded;
            out.push((
                Alteration::Flipped,
                format!(
                    "bit 0 of byte {i} (counted from 0) of the {} bytes dotted segment {} \
                     decodes to (base64) flipped",
                    bytes.len(),
                    n + 1
                ),
                s.join("."),
            ));
        }
        if let Some(forged) = forge(&bytes) {
            let encoded = enc.encode(&forged);
            let mut s = segments.to_vec();
            s[n] = &encoded;
            out.push((
                Alteration::Forged,
                format!(
                    "dotted segment {} decoded as JSON, one value changed",
                    n + 1
                ),
                s.join("."),
            ));
        }
    }
    out
}

/// The alterations of a state none of whose bytes could be flipped: characters
/// changed in place.
fn of_characters(state: &str) -> Vec<Candidate> {
    let chars: Vec<char> = state.chars().collect();
    positions(chars.len())
        .into_iter()
        .map(|i| {
            let mut c = chars.clone();
            c[i] = other_char(c[i]);
            (
                Alteration::Flipped,
                format!("character {i} of {} changed", chars.len()),
                c.into_iter().collect(),
            )
        })
        .collect()
}

/// `bytes` as JSON with its first scalar value changed, serialized again.
fn forge(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(bytes).ok()?;
    if !(v.is_object() || v.is_array()) || !change_first_scalar(&mut v) {
        return None;
    }
    serde_json::to_vec(&v).ok()
}

fn change_first_scalar(v: &mut Value) -> bool {
    match v {
        Value::String(s) => {
            s.push('x');
            true
        }
        Value::Number(n) => {
            *v = match n.as_i64() {
                Some(i) => Value::from(i.wrapping_add(1)),
                None => Value::from(n.as_f64().unwrap_or(0.0) + 1.0),
            };
            true
        }
        Value::Bool(b) => {
            *b = !*b;
            true
        }
        Value::Array(a) => a.iter_mut().any(change_first_scalar),
        Value::Object(o) => o.values_mut().any(change_first_scalar),
        Value::Null => false,
    }
}

/// What a client can read in `state`: the audit's marked values, JSON, or
/// text; `None` when it reads nothing.
pub(super) fn readable(state: &str, marks: &[String]) -> Option<String> {
    let mut texts = vec![state.to_owned()];
    let mut decoded = Vec::new();
    if let Some((b, _)) = decode(state) {
        decoded.push(b);
    }
    for seg in state.split('.').filter(|_| state.contains('.')) {
        if let Some((b, _)) = decode(seg) {
            decoded.push(b);
        }
    }
    for b in &decoded {
        texts.push(String::from_utf8_lossy(b).into_owned());
    }
    for m in marks {
        if texts.iter().any(|t| t.contains(m.as_str())) {
            return Some(format!(
                "a value the audit sent ({}) is in it",
                super::text::cut(m, 6)
            ));
        }
    }
    for b in &decoded {
        if let Some(v) = embedded_json(b) {
            let keys: Vec<String> = match &v {
                Value::Object(o) => o.keys().take(6).map(|k| super::text::cut(k, 20)).collect(),
                _ => vec!["(an array)".into()],
            };
            return Some(format!("it decodes to JSON ({})", keys.join(", ")));
        }
        if longest_printable_run(b) >= 16 {
            return Some("it decodes to readable text".into());
        }
    }
    None
}

/// A JSON object (or array) in `b`, whole or after a binary prefix (an expiry,
/// a key id): parsed from each `{` or `[` until one parses.
fn embedded_json(b: &[u8]) -> Option<Value> {
    b.iter()
        .enumerate()
        .filter(|(_, c)| **c == b'{' || **c == b'[')
        .take(8)
        .find_map(|(i, _)| {
            let v = serde_json::Deserializer::from_slice(&b[i..])
                .into_iter::<Value>()
                .next()?
                .ok()?;
            match &v {
                Value::Object(o) if !o.is_empty() => Some(v),
                Value::Array(a) if !a.is_empty() => Some(v),
                _ => None,
            }
        })
}

/// The longest run of printable ASCII in `b` (ciphertext has none of 16).
fn longest_printable_run(b: &[u8]) -> usize {
    b.split(|c| !(c.is_ascii_graphic() || *c == b' '))
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use serde_json::json;

    #[test]
    fn every_alteration_differs_and_keeps_the_encoding() {
        let sealed: Vec<u8> = (0u8..48).map(|i| i.wrapping_mul(37)).collect();
        let state = URL_SAFE_NO_PAD.encode(&sealed);
        let alt = alterations(&state);
        assert!(alt.iter().all(|a| a.state != state));
        let flips: Vec<_> = alt
            .iter()
            .filter(|a| a.what == Alteration::Flipped)
            .collect();
        assert_eq!(flips.len(), 7, "{flips:?}");
        for f in &flips {
            let (b, _) = decode(&f.state).unwrap();
            assert_eq!(b.len(), sealed.len());
            assert_eq!(b.iter().zip(&sealed).filter(|(x, y)| x != y).count(), 1);
        }
        // Both re-encodings decode to the same bytes.
        for r in alt.iter().filter(|a| a.what == Alteration::ReEncoded) {
            assert_eq!(decode(&r.state).unwrap().0, sealed, "{}", r.label);
        }
        assert!(alt.iter().any(|a| a.what == Alteration::Emptied));
        assert!(
            alt.iter()
                .any(|a| a.what == Alteration::Huge && a.state.len() == 65536)
        );
        assert!(!alt.iter().any(|a| a.what == Alteration::Forged));
    }

    #[test]
    fn json_states_are_forged_and_read() {
        let state = STANDARD.encode(br#"{"step":1,"args":{"item":"arg-x"}}"#);
        let forged = alterations(&state)
            .into_iter()
            .find(|a| a.what == Alteration::Forged)
            .unwrap();
        let (b, _) = decode(&forged.state).unwrap();
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v, json!({"step": 2, "args": {"item": "arg-x"}}));
        assert!(
            readable(&state, &["arg-x".into()])
                .unwrap()
                .contains("a value the audit sent")
        );
        assert!(readable(&state, &[]).unwrap().contains("JSON (step, args)"));
        let jwt = format!(
            "{}.{}.sig",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256"}"#),
            URL_SAFE_NO_PAD.encode(br#"{"n":1}"#)
        );
        assert!(
            alterations(&jwt)
                .iter()
                .any(|a| a.what == Alteration::Forged)
        );
        assert!(readable(&jwt, &[]).is_some());
    }

    #[test]
    fn json_after_a_binary_prefix_is_read() {
        let mut b = vec![0u8, 0, 1, 0x9c, 0xff, 0x10, 0x02, 0x03];
        b.extend_from_slice(br#"{"asked":"confirm"}"#);
        let state = format!("rs2.azE.{}.tag", URL_SAFE_NO_PAD.encode(&b));
        assert_eq!(readable(&state, &[]).unwrap(), "it decodes to JSON (asked)");
        assert_eq!(longest_printable_run(b"\x01abc\x02"), 3);
    }

    #[test]
    fn sealed_states_read_as_nothing() {
        let sealed: Vec<u8> = (0u8..64)
            .map(|i| i.wrapping_mul(151).wrapping_add(7))
            .collect();
        assert_eq!(
            readable(&URL_SAFE_NO_PAD.encode(&sealed), &["arg-1".into()]),
            None
        );
        // Not base64 at all: characters are changed instead.
        let alt = alterations("~~not base64~~");
        assert!(
            alt.iter()
                .any(|a| a.what == Alteration::Flipped && a.label.starts_with("character"))
        );
    }
}
