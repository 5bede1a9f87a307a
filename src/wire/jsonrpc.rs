//! The JSON-RPC 2.0 envelope: ids, requests, responses.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
}
