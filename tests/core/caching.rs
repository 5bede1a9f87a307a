//! Caching hints (SEP-2549) on `resources/read` set per registration: the
//! registration's hints go on a result read at once unless its handler set
//! its own; a result that took a round of input keeps `0` and private.

use mrtr_testkit as common;

use common::*;
use mrtr::result::CacheScope;
use mrtr::service::ResourceTemplateDefinition;
use mrtr::{Elicited, Form, ResourceDefinition, ResourceResult, Service};
use serde_json::{Value, json};

fn service() -> Service {
    Service::new(engine(), "cache", "0")
        .resource(
            ResourceDefinition::new("file:///static", "static")
                .cache_for(60_000, CacheScope::Public),
            |_| Ok(ResourceResult::text("file:///static", "text/plain", "s")),
        )
        .resource(
            ResourceDefinition::new("file:///own", "own").cache_for(60_000, CacheScope::Public),
            |_| {
                Ok(ResourceResult::text("file:///own", "text/plain", "o")
                    .cache_for(5, CacheScope::Private))
            },
        )
        .resource(ResourceDefinition::new("file:///plain", "plain"), |_| {
            Ok(ResourceResult::text("file:///plain", "text/plain", "p"))
        })
        .resource(
            ResourceDefinition::new("file:///asks", "asks").cache_for(60_000, CacheScope::Public),
            |r| match r.elicit("ok", Form::confirm("Show it?"))? {
                Elicited::Accepted(_) => {
                    Ok(ResourceResult::text("file:///asks", "text/plain", "a"))
                }
                _ => Ok(ResourceResult::text("file:///asks", "text/plain", "-")),
            },
        )
        .resource_template(
            ResourceTemplateDefinition::new("file:///items/{id}", "item")
                .unwrap()
                .cache_for(1_000, CacheScope::Private),
            |r| Ok(ResourceResult::text(r.target(), "text/plain", "i")),
        )
}

fn read(s: &Service, id: u64, uri: &str, extra: Value) -> Value {
    let mut params = json!({"uri": uri, "_meta": meta(&all_caps())});
    if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
        p.extend(e);
    }
    call(s, &rpc(id, "resources/read", params), T0)
}

fn hints(v: &Value) -> (Value, Value) {
    (
        v["result"]["ttlMs"].clone(),
        v["result"]["cacheScope"].clone(),
    )
}

#[test]
fn a_registration_sets_the_hints_of_what_it_reads_at_once() {
    let s = service();
    assert_eq!(
        hints(&read(&s, 1, "file:///static", json!({}))),
        (json!(60_000), json!("public"))
    );
    // The handler's own hints win.
    assert_eq!(
        hints(&read(&s, 2, "file:///own", json!({}))),
        (json!(5), json!("private"))
    );
    // No registration hints: the defaults.
    assert_eq!(
        hints(&read(&s, 3, "file:///plain", json!({}))),
        (json!(0), json!("private"))
    );
    // A template's, on each URI it matches.
    assert_eq!(
        hints(&read(&s, 4, "file:///items/7", json!({}))),
        (json!(1_000), json!("private"))
    );
}

#[test]
fn a_result_that_took_a_round_of_input_is_never_cached() {
    let s = service();
    let first = read(&s, 1, "file:///asks", json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert!(
        first["result"].get("ttlMs").is_none(),
        "an interim result carries no hints: {first}"
    );
    let state = first["result"]["requestState"].clone();
    let done = read(
        &s,
        2,
        "file:///asks",
        json!({"requestState": state, "inputResponses": {"ok": accept(json!({"confirm": true}))}}),
    );
    assert_eq!(done["result"]["contents"][0]["text"], "a", "{done}");
    assert_eq!(hints(&done), (json!(0), json!("private")));
}
