//! The JSON-RPC 2.0 envelope: ids, requests, responses.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// A JSON-RPC request id: a string or a number, kept exactly as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id; `None` for anything that is not a string or number.
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Number(n) => Some(Self::Number(n.clone())),
            Value::String(s) => Some(Self::String(s.clone())),
            _ => None,
        }
    }

    /// The JSON form.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::Number(n.clone()),
            Self::String(s) => Value::String(s.clone()),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n.into())
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{}", Value::String(s.clone())),
        }
    }
}

/// A success response `{jsonrpc, id, result}` as JSON.
pub fn success(id: &RequestId, result: Value) -> Value {
    let mut o = Map::new();
    o.insert("jsonrpc".into(), "2.0".into());
    o.insert("id".into(), id.to_value());
    o.insert("result".into(), result);
    Value::Object(o)
}

/// An error response `{jsonrpc, id?, error: {code, message, data?}}` as JSON.
/// `id` is omitted when unknown (the schema makes it optional on errors).
pub fn error(id: Option<&RequestId>, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut e = Map::new();
    e.insert("code".into(), code.into());
    e.insert("message".into(), message.into());
    if let Some(d) = data {
        e.insert("data".into(), d);
    }
    let mut o = Map::new();
    o.insert("jsonrpc".into(), "2.0".into());
    if let Some(id) = id {
        o.insert("id".into(), id.to_value());
    }
    o.insert("error".into(), Value::Object(e));
    Value::Object(o)
}

/// A JSON-RPC request object as the client sends it.
pub fn request(id: &RequestId, method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params})
}

/// Why a message is not one unambiguous JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrictJsonError {
    /// Not JSON (or trailing bytes, or nested deeper than serde_json's recursion
    /// limit of 128),
    /// at this line and column.
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// An object names the same member twice; the position is just after the
    /// second value.
    DuplicateKey {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
}

/// The marker of the visitor's own error; every other error is serde_json's.
const DUPLICATE_KEY: &str = "duplicate object key";

/// Parses one JSON value, refusing an object that names a member twice, at any depth.
///
/// serde_json keeps the last of two duplicate members without a word; other JSON
/// readers keep the first. A message whose `method`, `params.name` or `arguments`
/// reads differently to a proxy (or a log, or an auditing layer) than to the server
/// must not run at all (RFC 8259 §4 leaves duplicates to the reader; I-JSON, RFC 7493
/// §2.3, forbids them). One pass, linear in the input: each member is inserted once
/// into its object's map, and the insert reports the duplicate. Depth stays bounded
/// by serde_json's recursion limit (128), which applies to this visitor as to
/// [`Value`]'s own.
///
/// # Errors
/// [`StrictJsonError::Syntax`] for anything `serde_json::from_slice::<Value>`
/// refuses; [`StrictJsonError::DuplicateKey`] for a repeated member name.
pub fn from_slice_strict(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = StrictValue
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| {
        let (line, column) = (e.line(), e.column());
        // The visitor below raises the only data error a JSON text can produce
        // through `deserialize_any`; everything else is syntax or EOF.
        if e.is_data() {
            StrictJsonError::DuplicateKey { line, column }
        } else {
            StrictJsonError::Syntax { line, column }
        }
    })
}

/// Builds a [`Value`] exactly as serde_json's own visitor does, except that a
/// repeated member name is an error instead of a silent overwrite.
struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value without duplicate object keys")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        StrictValue.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(StrictValue)?;
            if members.insert(key, value).is_some() {
                return Err(de::Error::custom(DUPLICATE_KEY));
            }
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_kept_exactly() {
        for v in [
            json!(0),
            json!(-3),
            json!(1.5),
            json!(u64::MAX),
            json!("a"),
            json!(""),
        ] {
            let id = RequestId::from_value(&v).unwrap();
            assert_eq!(id.to_value(), v);
            assert_eq!(serde_json::to_value(&id).unwrap(), v);
            assert_eq!(serde_json::from_value::<RequestId>(v.clone()).unwrap(), id);
        }
        for v in [json!(null), json!(true), json!([1]), json!({"id": 1})] {
            assert!(RequestId::from_value(&v).is_none(), "{v}");
        }
        assert_eq!(RequestId::from(7).to_string(), "7");
        assert_eq!(RequestId::String("a\"b".into()).to_string(), r#""a\"b""#);
    }

    #[test]
    fn envelopes() {
        let id = RequestId::from(1);
        assert_eq!(
            success(&id, json!({"resultType": "complete"})),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}})
        );
        assert_eq!(
            error(Some(&id), -32601, "Method not found", None),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}})
        );
        assert_eq!(
            error(None, -32602, "m", Some(json!({"reason": "r"}))),
            json!({"jsonrpc": "2.0", "error": {"code": -32602, "message": "m", "data": {"reason": "r"}}})
        );
        assert_eq!(
            request(&RequestId::String("x".into()), "tools/call", json!({})),
            json!({"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {}})
        );
    }

    #[test]
    fn strict_parse_reads_what_serde_json_reads() {
        let text = br#" {"a": [1, -2, 3.5, 1e300, 18446744073709551615, -9223372036854775808,
            0.1, true, false, null, "s\u00e9\n", {}], "b": {"c": {"d": []}}, "": 0} "#;
        let strict = from_slice_strict(text).unwrap();
        let plain: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(strict, plain);
        assert_eq!(strict.to_string(), plain.to_string());
        // Member order is kept (preserve_order), as serde_json keeps it.
        let keys: Vec<&String> = strict.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b", ""]);
    }

    #[test]
    fn strict_parse_refuses_duplicate_keys_at_any_depth() {
        for text in [
            r#"{"a":1,"a":1}"#,
            r#"{"a":1,"b":2,"a":3}"#,
            r#"{"x":[{"k":{"n":1,"n":2}}]}"#,
            r#"{"a":1,"\u0061":2}"#,
        ] {
            let e = from_slice_strict(text.as_bytes()).unwrap_err();
            assert!(
                matches!(e, StrictJsonError::DuplicateKey { .. }),
                "{text}: {e:?}"
            );
        }
        // The same name in sibling or nested objects is no duplicate.
        assert!(from_slice_strict(br#"{"a":{"a":1},"b":{"a":2}}"#).is_ok());
    }

    #[test]
    fn strict_parse_reports_syntax_and_depth() {
        for text in ["", "{", "{\"a\":1}x", "[1,]", "{\"a\" 1}"] {
            let e = from_slice_strict(text.as_bytes()).unwrap_err();
            assert!(
                matches!(e, StrictJsonError::Syntax { .. }),
                "{text:?}: {e:?}"
            );
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        // serde_json's own limit, unchanged: 127 levels parse, 128 do not.
        assert!(serde_json::from_slice::<Value>(deep(127).as_bytes()).is_ok());
        assert!(serde_json::from_slice::<Value>(deep(128).as_bytes()).is_err());
        assert!(from_slice_strict(deep(127).as_bytes()).is_ok());
        let e = from_slice_strict(deep(128).as_bytes()).unwrap_err();
        assert!(matches!(e, StrictJsonError::Syntax { .. }), "{e:?}");
        let e = from_slice_strict(b"{\n\"a\":1,\n\"a\":2}").unwrap_err();
        assert!(
            matches!(e, StrictJsonError::DuplicateKey { line: 3, .. }),
            "{e:?}"
        );
    }
}
