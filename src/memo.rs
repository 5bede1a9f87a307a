//! A small bounded memo of what is derived from an ask: its question digest (the
//! engine) and rmcp's typed form of it (the `rmcp` adapter). A request's `_meta`
//! has a memo of its own, [`MetaMemo`](crate::wire::meta::MetaMemo).
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
use std::sync::{PoisonError, RwLock};

use serde_json::Value;

use crate::wire::{InputRequest, string_bytes};

/// At most this many asks are kept.
const ENTRIES: usize = 256;
/// An ask with more string bytes than this in its JSON form is not kept.
const ASK_BYTES: usize = 4096;

/// Values derived from asks, each kept for an equal ask only (a bounded memo).
pub struct AskMemo<V> {
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
    /// Whether the memo holds no ask.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many asks the memo holds.
    pub fn len(&self) -> usize {
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
    pub fn get_or(&self, ask: &InputRequest, derive: impl FnOnce(&Value) -> V) -> V {
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
    #[doc(hidden)]
    pub fn get_or_try(
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
