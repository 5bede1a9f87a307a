//! Small bounded memos of what is derived from what a client repeats: an ask's
//! question digest (the engine) and rmcp's typed form of it (the `rmcp` adapter)
//! in [`AskMemo`]; a request's typed `_meta` in [`MetaMemo`].
//!
//! A handler re-runs from the top every round and builds the same asks each time
//! (`Form::new("What is your name?")...`), and both derivations go through a JSON
//! value: a few microseconds per ask, on every round. The memo finds an ask by a
//! cheap fingerprint (its kind, message, URL and field names) and returns a value
//! only for an ask equal to the one it was made from, field names in the same
//! order ([`InputRequest::same_as`]), so a hit is exactly what a fresh derivation
//! would give. Bounded in entries and in the size of each ask; a full memo starts
//! again empty. Never printed: an ask may quote a client's arguments.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

use crate::wire::InputRequest;
use crate::wire::JsonObject;
use crate::wire::meta::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, MetaError, RequestMeta,
};

/// At most this many asks are kept.
const ENTRIES: usize = 256;
/// An ask with more string bytes than this in its JSON form is not kept.
const ASK_BYTES: usize = 4096;

pub(crate) struct AskMemo<V> {
    keys: RandomState,
    slots: RwLock<HashMap<u64, (InputRequest, V)>>,
}

impl<V> fmt::Debug for AskMemo<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AskMemo")
            .field("entries", &self.len())
            .finish()
    }
}

impl<V> AskMemo<V> {
    /// How many asks the memo holds.
    pub(crate) fn len(&self) -> usize {
        self.slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl<V> Default for AskMemo<V> {
    fn default() -> Self {
        Self {
            keys: RandomState::new(),
            slots: RwLock::new(HashMap::new()),
        }
    }
}

impl<V: Clone> AskMemo<V> {
    /// What `derive` gives for `ask`: from the memo when an equal ask is there,
    /// else `derive` on the ask's JSON form, kept unless the ask is large.
    pub(crate) fn get_or(&self, ask: &InputRequest, derive: impl FnOnce(&Value) -> V) -> V {
        let key = self.key(ask);
        if let Some(v) = self.find(key, ask) {
            return v;
        }
        let json = ask.to_value();
        let v = derive(&json);
        self.keep(key, ask, &json, &v);
        v
    }

    /// [`AskMemo::get_or`] for a derivation that may fail: `None`, and nothing
    /// kept, when `derive` gives nothing.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))] // why: the rmcp adapter's
    pub(crate) fn get_or_try(
        &self,
        ask: &InputRequest,
        derive: impl FnOnce(&Value) -> Option<V>,
    ) -> Option<V> {
        let key = self.key(ask);
        if let Some(v) = self.find(key, ask) {
            return Some(v);
        }
        let json = ask.to_value();
        let v = derive(&json)?;
        self.keep(key, ask, &json, &v);
        Some(v)
    }

    fn key(&self, ask: &InputRequest) -> u64 {
        let mut h = self.keys.build_hasher();
        ask.fingerprint(&mut h);
        h.finish()
    }

    fn find(&self, key: u64, ask: &InputRequest) -> Option<V> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        slots
            .get(&key)
            .filter(|(seen, _)| seen.same_as(ask))
            .map(|(_, v)| v.clone())
    }

    fn keep(&self, key: u64, ask: &InputRequest, json: &Value, v: &V) {
        if string_bytes(json) > ASK_BYTES {
            return;
        }
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        if slots.len() >= ENTRIES {
            slots.clear();
        }
        slots.insert(key, (ask.clone(), v.clone()));
    }
}

/// The bytes of the strings and keys in `v`.
/// How many `_meta` objects a [`MetaMemo`] keeps.
const METAS: usize = 8;

/// The typed `_meta` of the last few distinct `_meta` objects parsed.
///
/// A client sends the same `_meta` (protocol version, capabilities, client info)
/// with every request, and each must be parsed again (MCP 2026-07-28: a server
/// never carries capabilities over from an earlier request). The memo returns
/// the typed form of an object exactly equal to one it parsed, its keys in the
/// same order at every depth, so a hit is what parsing would give; it never
/// carries anything over between objects that differ. Only an object of those
/// three keys and at most [`ASK_BYTES`] of strings is kept (one with a
/// `progressToken` or trace context differs per request: it is parsed, not kept);
/// a new one replaces the oldest. Never printed: `_meta` is the client's.
pub(crate) struct MetaMemo {
    slots: RwLock<Vec<(JsonObject, Arc<RequestMeta>)>>,
    next: AtomicUsize,
}

impl fmt::Debug for MetaMemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetaMemo")
            .field("entries", &self.len())
            .finish()
    }
}

impl Default for MetaMemo {
    fn default() -> Self {
        Self {
            slots: RwLock::new(Vec::with_capacity(METAS)),
            next: AtomicUsize::new(0),
        }
    }
}

impl MetaMemo {
    fn len(&self) -> usize {
        self.slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// [`RequestMeta::from_meta`] of `meta`, through [`MetaMemo::parse`] when
    /// it is an object.
    ///
    /// # Errors
    /// As [`RequestMeta::from_meta`].
    pub(crate) fn parse_value(&self, meta: Option<&Value>) -> Result<Arc<RequestMeta>, MetaError> {
        match meta {
            Some(Value::Object(object)) => self.parse(Some(object)),
            other => RequestMeta::from_meta(other).map(Arc::new),
        }
    }

    /// [`RequestMeta::from_object`] of `meta`, from the memo when it parsed an
    /// equal object before.
    ///
    /// # Errors
    /// As [`RequestMeta::from_object`] (a refused `_meta` is never kept).
    pub(crate) fn parse(&self, meta: Option<&JsonObject>) -> Result<Arc<RequestMeta>, MetaError> {
        let Some(object) = meta.filter(|o| o.keys().all(|k| REPEATED.contains(&k.as_str()))) else {
            return RequestMeta::from_object(meta).map(Arc::new);
        };
        // A comparison stops at the first difference, and a kept object is small:
        // a large `_meta` costs no more to look up than a small one.
        {
            let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, parsed)) = slots.iter().find(|(seen, _)| same_object(seen, object)) {
                return Ok(Arc::clone(parsed));
            }
        }
        let parsed = Arc::new(RequestMeta::from_object(meta)?);
        if object
            .iter()
            .map(|(k, v)| k.len() + string_bytes(v))
            .sum::<usize>()
            > ASK_BYTES
        {
            return Ok(parsed);
        }
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        let entry = (object.clone(), Arc::clone(&parsed));
        if slots.len() < METAS {
            slots.push(entry);
        } else {
            slots[self.next.fetch_add(1, Ordering::Relaxed) % METAS] = entry;
        }
        Ok(parsed)
    }
}

/// The `_meta` keys every request repeats: the only ones a [`MetaMemo`] keeps.
const REPEATED: [&str; 3] = [
    META_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
];

/// Equal JSON objects with their keys in the same order, at every depth (a
/// `serde_json::Map` with `preserve_order` compares as a map, ignoring order).
fn same_object(a: &JsonObject, b: &JsonObject) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => same_object(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_value(a, b))
        }
        // Numbers compare by representation (1 and 1.0 differ): a miss, never
        // a wrong hit.
        _ => a == b,
    }
}

fn string_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(string_bytes).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + string_bytes(v)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ElicitFormParams, ElicitParams, ElicitUrlParams, RequestedSchema};
    use serde_json::json;

    fn form(message: &str, fields: &[&str]) -> InputRequest {
        let mut schema = serde_json::Map::new();
        for f in fields {
            schema.insert((*f).into(), json!({"type": "string"}));
        }
        let schema = json!({"type": "object", "properties": schema});
        InputRequest::Elicit(ElicitParams::Form(ElicitFormParams {
            message: message.into(),
            requested_schema: RequestedSchema::from_value(&schema).unwrap(),
            explicit_mode: false,
        }))
    }

    #[test]
    fn a_value_is_returned_only_for_an_equal_ask_in_the_same_order() {
        let memo: AskMemo<String> = AskMemo::default();
        let derive = |v: &Value| v.to_string();
        let a = form("Name?", &["first", "last"]);
        let b = form("Name?", &["last", "first"]);
        let c = form("Name!", &["first", "last"]);
        let url = InputRequest::Elicit(ElicitParams::Url(ElicitUrlParams {
            message: "Name?".into(),
            url: "https://x.example".into(),
        }));
        for ask in [&a, &b, &c, &url, &a, &b, &c, &url] {
            assert_eq!(memo.get_or(ask, derive), ask.to_value().to_string());
        }
        assert_eq!(memo.len(), 4);
        // Nothing derived, nothing kept.
        let roots = InputRequest::ListRoots { meta: None };
        assert!(memo.get_or_try(&roots, |_| None::<String>).is_none());
        assert_eq!(memo.len(), 4);
        // The memo never prints what it holds.
        assert_eq!(format!("{memo:?}"), "AskMemo { entries: 4 }");
    }

    fn meta(v: Value) -> JsonObject {
        match v {
            Value::Object(o) => o,
            _ => unreachable!("a JSON object"),
        }
    }

    fn client(caps: Value) -> JsonObject {
        meta(json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_INFO: {"name": "c", "version": "1"},
            META_CLIENT_CAPABILITIES: caps,
        }))
    }

    #[test]
    fn a_repeated_meta_is_parsed_once_and_gives_what_parsing_gives() {
        let memo = MetaMemo::default();
        let a = client(json!({"elicitation": {"form": {}}, "x-ext": {"b": 1, "a": 2}}));
        let first = memo.parse(Some(&a)).unwrap();
        let again = memo.parse(Some(&a.clone())).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "a hit");
        assert_eq!(*again, RequestMeta::from_object(Some(&a)).unwrap());
        // The same members in another order, at any depth: another object, whose
        // parse keeps its own order (a map's equality would not tell them apart).
        let b = client(json!({"elicitation": {"form": {}}, "x-ext": {"a": 2, "b": 1}}));
        let other = memo.parse(Some(&b)).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        let keys = |m: &RequestMeta| {
            let ext = &m.client_capabilities.extra["x-ext"];
            ext.as_object().unwrap().keys().cloned().collect::<Vec<_>>()
        };
        assert_eq!(keys(&first), ["b", "a"]);
        assert_eq!(keys(&other), ["a", "b"]);
        // Another capability, another answer: nothing carries over.
        let c = client(json!({}));
        let none = memo.parse(Some(&c)).unwrap();
        assert!(none.client_capabilities.elicitation.is_none());
        assert!(first.client_capabilities.elicitation.is_some());
        // Numbers by representation: 1 and 1.0 are two objects.
        let one = memo.parse(Some(&client(json!({"x": {"n": 1}})))).unwrap();
        let one_f = memo.parse(Some(&client(json!({"x": {"n": 1.0}})))).unwrap();
        assert!(!Arc::ptr_eq(&one, &one_f));
        assert_eq!(one_f.client_capabilities.extra["x"]["n"], json!(1.0));
        assert_eq!(memo.len(), 5);
        assert_eq!(format!("{memo:?}"), "MetaMemo { entries: 5 }");
    }

    #[test]
    fn only_a_small_valid_meta_of_the_repeated_keys_is_kept() {
        let memo = MetaMemo::default();
        // Refused: the error parsing gives, nothing kept.
        for bad in [
            json!({META_PROTOCOL_VERSION: "2024-01-01", META_CLIENT_CAPABILITIES: {}}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}),
            json!({META_PROTOCOL_VERSION: "2026-07-28"}),
        ] {
            let o = meta(bad);
            let want = RequestMeta::from_object(Some(&o)).unwrap_err().to_string();
            for _ in 0..2 {
                assert_eq!(memo.parse(Some(&o)).unwrap_err().to_string(), want);
            }
        }
        assert!(memo.parse(None).is_err());
        assert!(memo.parse_value(Some(&json!([]))).is_err());
        assert_eq!(memo.len(), 0);
        // A per-request key (progress token, trace context): parsed, not kept.
        let mut traced = client(json!({}));
        traced.insert("traceparent".into(), json!("00-1-2-01"));
        traced.insert("progressToken".into(), json!(7));
        let parsed = memo.parse(Some(&traced)).unwrap();
        assert_eq!(*parsed, RequestMeta::from_object(Some(&traced)).unwrap());
        assert_eq!(parsed.progress_token, Some(json!(7)));
        assert_eq!(memo.len(), 0);
        // Too large to keep.
        let big = client(json!({"x": {"s": "x".repeat(ASK_BYTES)}}));
        memo.parse(Some(&big)).unwrap();
        assert_eq!(memo.len(), 0);
        // Bounded in entries: the newest replace the oldest, and each still parses
        // to what parsing gives.
        for round in 0..2 {
            for i in 0..METAS + 3 {
                let o = client(json!({ "x": {"i": i} }));
                let m = memo.parse_value(Some(&Value::Object(o.clone()))).unwrap();
                assert_eq!(
                    *m,
                    RequestMeta::from_object(Some(&o)).unwrap(),
                    "{round} {i}"
                );
                assert!(memo.len() <= METAS);
            }
        }
        assert_eq!(memo.len(), METAS);
    }

    #[test]
    fn the_memo_is_bounded_in_entries_and_ask_size() {
        let memo: AskMemo<usize> = AskMemo::default();
        for i in 0..ENTRIES + 10 {
            let ask = form(&format!("question {i}"), &["a"]);
            assert_eq!(memo.get_or(&ask, |_| i), i);
            assert!(memo.len() <= ENTRIES);
        }
        // A full memo started again: the last ten are what it holds.
        assert_eq!(memo.len(), 10);
        let big = form(&"x".repeat(ASK_BYTES), &["a"]);
        assert_eq!(memo.get_or(&big, |_| 1), 1, "derived, not kept");
        assert_eq!(memo.len(), 10);
        assert_eq!(memo.get_or(&big, |_| 2), 2);
    }
}
