//! Pagination of the lists (MCP 2026-07-28 §Pagination): pages of a size the
//! server sets ([`Service::with_page_size`](super::Service::with_page_size)), in
//! registration order, with a `nextCursor` on every page but the last; a
//! request's `params.cursor` names where its page starts.
//!
//! A cursor is made and checked by the engine's sealer (`crate::seal::cursor`):
//! MACed under a key of the ring kept for cursors, and bound to the list method,
//! the principal, the audience and a digest of the listing. Every cursor it did
//! not make for this very list, caller and listing, or that points past the end,
//! gets -32602 `invalid cursor`, whatever the reason.
//!
//! **When the listing changes between pages** (a deploy that registers other
//! tools, or an instance of the fleet that serves another listing), the cursors
//! issued for the old listing are refused with -32602: the client starts over
//! from the first page, and never gets an item twice or misses one because
//! positions moved. The same happens after the key that made a cursor leaves
//! the ring.

use serde_json::{Map, Value};

use crate::engine::Engine;
use crate::error::Error;
use crate::principal::Principal;
use crate::seal::{CursorScope, ListingDigest};

/// What pages a list for one request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pager<'a> {
    /// Whose sealer makes and checks the cursors, and whose audience binds them.
    pub(super) engine: &'a Engine,
    /// The caller, whom the cursors are bound to.
    pub(super) principal: &'a Principal,
    /// The most items of a page (at least 1).
    pub(super) page_size: usize,
}

impl Pager<'_> {
    /// Puts the page of `entries` (key, list entry) that `cursor` names, or the
    /// first one, under `field` of `result`, and its `nextCursor` when more follow.
    ///
    /// # Errors
    ///
    /// -32602 `invalid cursor` for a cursor that is not a string this pager
    /// issued for `method`, this principal and this listing, or that points past
    /// its end. `null` counts as no cursor.
    pub(super) fn fill<'e, I>(
        &self,
        result: &mut Map<String, Value>,
        method: &str,
        field: &str,
        entries: I,
        cursor: Option<&Value>,
    ) -> Result<(), Error>
    where
        I: ExactSizeIterator<Item = (&'e str, &'e Value)> + Clone,
    {
        let len = entries.len();
        let scope = || CursorScope {
            method,
            principal: self.principal,
            audience: self.engine.audience(),
            listing: ListingDigest::of(entries.clone().map(|(key, _)| key)),
        };
        let start = match cursor {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => self
                .engine
                .sealer()
                .open_cursor(&scope(), c)
                .ok()
                .and_then(|p| usize::try_from(p).ok())
                .filter(|&p| p < len)
                .ok_or_else(invalid_cursor)?,
            Some(_) => return Err(invalid_cursor()),
        };
        let end = start.saturating_add(self.page_size.max(1)).min(len);
        let page = entries
            .clone()
            .skip(start)
            .take(end - start)
            .map(|(_, entry)| entry.clone())
            .collect();
        result.insert(field.into(), Value::Array(page));
        if end < len {
            let next = u64::try_from(end).map_err(|_| invalid_cursor())?;
            let cursor = self.engine.sealer().issue_cursor(&scope(), next);
            result.insert("nextCursor".into(), cursor.into());
        }
        Ok(())
    }
}

/// The one answer to every refused cursor: it says nothing of why.
fn invalid_cursor() -> Error {
    Error::invalid_params("invalid cursor")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::seal::Keyring;

    fn listing(n: usize) -> Vec<(String, Value)> {
        (0..n)
            .map(|i| (format!("t{i}"), json!({"name": format!("t{i}")})))
            .collect()
    }

    fn entries(l: &[(String, Value)]) -> impl ExactSizeIterator<Item = (&str, &Value)> + Clone {
        l.iter().map(|(k, v)| (k.as_str(), v))
    }

    fn page(
        pager: &Pager<'_>,
        l: &[(String, Value)],
        cursor: Option<&Value>,
    ) -> Result<Map<String, Value>, Error> {
        let mut result = Map::new();
        pager.fill(&mut result, "tools/list", "tools", entries(l), cursor)?;
        Ok(result)
    }

    #[test]
    fn pages_cover_the_listing_once_in_order() {
        let engine = Engine::new(Keyring::ephemeral(), "aud");
        let anon = Principal::anonymous();
        let l = listing(7);
        for size in [0, 1, 2, 3, 7, 8, usize::MAX] {
            let pager = Pager {
                engine: &engine,
                principal: &anon,
                page_size: size,
            };
            let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<Value>, 0);
            loop {
                let r = page(&pager, &l, cursor.as_ref()).unwrap();
                pages += 1;
                for t in r["tools"].as_array().unwrap() {
                    seen.push(t["name"].as_str().unwrap().to_owned());
                }
                match r.get("nextCursor") {
                    Some(c) => cursor = Some(c.clone()),
                    None => break,
                }
            }
            let want: Vec<_> = (0..7).map(|i| format!("t{i}")).collect();
            assert_eq!(seen, want, "page size {size}");
            assert_eq!(pages, 7usize.div_ceil(size.clamp(1, 7)), "page size {size}");
        }
    }

    #[test]
    fn refused_cursors_all_read_alike() {
        let engine = Engine::new(Keyring::ephemeral(), "aud");
        let anon = Principal::anonymous();
        let pager = Pager {
            engine: &engine,
            principal: &anon,
            page_size: 2,
        };
        let l = listing(5);
        let next = page(&pager, &l, None).unwrap()["nextCursor"].clone();
        let shorter = listing(4);
        for (cursor, l) in [
            (json!(""), &l),
            (json!(7), &l),
            (json!({"page": 2}), &l),
            (json!("eyJwYWdlIjogMn0="), &l),
            (next.clone(), &shorter),
            (next.clone(), &Vec::new()),
        ] {
            let e = page(&pager, l, Some(&cursor)).unwrap_err();
            assert_eq!(e.code(), -32602);
            assert_eq!(e.to_string(), invalid_cursor().to_string());
        }
        assert!(page(&pager, &l, Some(&Value::Null)).is_ok());
        // An authentic cursor one past the end (never issued) is refused too.
        let scope = CursorScope {
            method: "tools/list",
            principal: &anon,
            audience: "aud",
            listing: ListingDigest::of(entries(&l).map(|(k, _)| k)),
        };
        let end = json!(engine.sealer().issue_cursor(&scope, 5));
        assert_eq!(page(&pager, &l, Some(&end)).unwrap_err().code(), -32602);
        let last = json!(engine.sealer().issue_cursor(&scope, 4));
        assert_eq!(
            page(&pager, &l, Some(&last)).unwrap()["tools"][0]["name"],
            "t4"
        );
        // A cursor of another list method.
        let mut result = Map::new();
        let e = pager
            .fill(
                &mut result,
                "prompts/list",
                "prompts",
                entries(&l),
                Some(&next),
            )
            .unwrap_err();
        assert_eq!(e.code(), -32602);
    }
}
