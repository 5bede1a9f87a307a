//! Pagination of the lists through the `Service` (MCP 2026-07-28 §Pagination):
//! a client that follows `nextCursor` gets every item once, in registration
//! order; every cursor the service did not issue for that very list, caller and
//! listing is refused with -32602 `invalid cursor`, which says nothing more.

use mrtr_testkit as common;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use mrtr::principal::Principal;
use mrtr::service::{PromptDefinition, RequestContext, ResourceDefinition, Service};
use mrtr::{PromptResult, ResourceResult, ToolResult};
use serde_json::{Value, json};

/// A service with `n` tools `t000`..., `n` prompts and `n` resources, in pages of `size`.
fn service(n: usize, size: usize) -> Service {
    let mut s = Service::new(engine(), "pages", "0").with_page_size(size);
    for i in 0..n {
        s = s
            .tool(
                &format!("t{i:03}"),
                "a tool",
                json!({"type": "object"}),
                |_| Ok(ToolResult::text("ok")),
            )
            .prompt(PromptDefinition::new(format!("p{i:03}")), |_| {
                Ok(PromptResult::new().user_text("hi"))
            })
            .resource(
                ResourceDefinition::new(format!("file:///r{i:03}"), format!("r{i:03}")),
                |_| Ok(ResourceResult::text("file:///r", "text/plain", "text")),
            );
    }
    s
}

/// `method` with `cursor` (when given) from `ctx`: the result, or the error object.
fn list(s: &Service, ctx: &RequestContext, method: &str, cursor: Option<&Value>) -> Value {
    let mut params = json!({"_meta": meta(&json!({}))});
    if let Some(c) = cursor {
        params["cursor"] = c.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply = s.handle_sync(body.to_string().as_bytes(), ctx);
    let v: Value = serde_json::from_str(reply.body.as_deref().expect("a reply")).unwrap();
    if let Some(e) = v.get("error") {
        assert_eq!(reply.error_code, e["code"].as_i64());
        return json!({"error": e});
    }
    v["result"].clone()
}

/// Follows `nextCursor` to the end: the keys (`key` of each item) and the page count.
fn walk(s: &Service, method: &str, field: &str, key: &str) -> (Vec<String>, usize) {
    let ctx = ctx(T0);
    let (mut keys, mut cursor, mut pages) = (Vec::new(), None, 0);
    loop {
        let r = list(s, &ctx, method, cursor.as_ref());
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(r["resultType"], "complete");
        assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string(), "{r}");
        let items = r[field].as_array().expect("an item array");
        assert!(items.len() <= s.page_size());
        keys.extend(items.iter().map(|i| i[key].as_str().unwrap().to_owned()));
        pages += 1;
        match r.get("nextCursor") {
            Some(c) => {
                assert_eq!(items.len(), s.page_size(), "only the last page is short");
                cursor = Some(c.clone());
            }
            None => return (keys, pages),
        }
        assert!(pages <= 1000, "the pages never end");
    }
}

fn assert_invalid_cursor(r: &Value) {
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "invalid cursor", "{r}");
    assert!(r["error"].get("data").is_none(), "{r}");
}

#[test]
fn paging_many_tools_to_the_end_yields_each_once_in_order() {
    let s = service(250, 7);
    let (names, pages) = walk(&s, "tools/list", "tools", "name");
    let want: Vec<String> = (0..250).map(|i| format!("t{i:03}")).collect();
    assert_eq!(names, want);
    assert_eq!(pages, 250usize.div_ceil(7));
    // Prompts and resources page the same way.
    let (prompts, _) = walk(&s, "prompts/list", "prompts", "name");
    assert_eq!(prompts.len(), 250);
    assert_eq!(prompts[249], "p249");
    let (uris, _) = walk(&s, "resources/list", "resources", "uri");
    assert_eq!(uris.len(), 250);
    assert_eq!(uris[0], "file:///r000");
}

#[test]
fn the_default_page_size_holds_a_hundred() {
    let s = service(101, 100);
    assert_eq!(
        Service::new(engine(), "d", "0").page_size(),
        mrtr::defaults::PAGE_SIZE
    );
    let (names, pages) = walk(&s, "tools/list", "tools", "name");
    assert_eq!((names.len(), pages), (101, 2));
}

#[test]
fn page_size_one_gives_a_page_per_item() {
    let s = service(5, 1);
    let (names, pages) = walk(&s, "tools/list", "tools", "name");
    assert_eq!(names, ["t000", "t001", "t002", "t003", "t004"]);
    assert_eq!(pages, 5);
    // 0 counts as 1.
    assert_eq!(service(1, 0).page_size(), 1);
}

#[test]
fn a_page_larger_than_the_list_is_the_whole_list_without_a_cursor() {
    for size in [6, 1000, usize::MAX] {
        let s = service(5, size);
        let r = list(&s, &ctx(T0), "tools/list", None);
        assert_eq!(r["tools"].as_array().unwrap().len(), 5);
        assert!(r.get("nextCursor").is_none(), "{r}");
    }
    // An empty list, and the templates (none registered): one empty page.
    let s = service(0, 3);
    for (method, field) in [
        ("tools/list", "tools"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let r = list(&s, &ctx(T0), method, None);
        assert_eq!(r[field], json!([]), "{r}");
        assert!(r.get("nextCursor").is_none(), "{r}");
    }
}

#[test]
fn a_cursor_of_another_list_method_is_refused() {
    let s = service(10, 3);
    let ctx = ctx(T0);
    let next = list(&s, &ctx, "tools/list", None)["nextCursor"].clone();
    assert!(next.is_string());
    for other in ["prompts/list", "resources/list", "resources/templates/list"] {
        assert_invalid_cursor(&list(&s, &ctx, other, Some(&next)));
    }
    // It still works where it belongs, as often as it is sent.
    for _ in 0..2 {
        let r = list(&s, &ctx, "tools/list", Some(&next));
        assert_eq!(r["tools"][0]["name"], "t003");
    }
}

#[test]
fn a_cursor_of_another_principal_or_service_is_refused() {
    let s = service(10, 3);
    let alice = RequestContext::new(Principal::subject("alice"), T0, "a");
    let bob = RequestContext::new(Principal::subject("bob"), T0, "b");
    let next = list(&s, &alice, "tools/list", None)["nextCursor"].clone();
    assert_eq!(
        list(&s, &alice, "tools/list", Some(&next))["tools"][0]["name"],
        "t003"
    );
    assert_invalid_cursor(&list(&s, &bob, "tools/list", Some(&next)));
    assert_invalid_cursor(&list(&s, &ctx(T0), "tools/list", Some(&next)));
    // Another service with other keys, and one with the same keys but another listing.
    let other_keys = Service::new(mrtr::Engine::new(ring(SECRET_B), AUDIENCE), "pages", "0");
    assert_invalid_cursor(&list(&other_keys, &alice, "tools/list", Some(&next)));
    let other_listing = service(11, 3);
    assert_invalid_cursor(&list(&other_listing, &alice, "tools/list", Some(&next)));
    // The same keys and listing (another instance of the fleet): it opens.
    let twin = service(10, 3);
    assert_eq!(
        list(&twin, &alice, "tools/list", Some(&next))["tools"][0]["name"],
        "t003"
    );
}

#[test]
fn tampered_forged_and_garbage_cursors_are_refused_alike() {
    let s = service(10, 3);
    let ctx = ctx(T0);
    let next = list(&s, &ctx, "tools/list", None)["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let bytes = URL_SAFE_NO_PAD.decode(&next).unwrap();
    let mut cases: Vec<Value> = Vec::new();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        cases.push(URL_SAFE_NO_PAD.encode(&b).into());
    }
    // A cursor moved to another position keeps its tag: refused.
    let mut moved = bytes.clone();
    moved[12] = 0;
    cases.push(URL_SAFE_NO_PAD.encode(&moved).into());
    for garbage in [
        json!(""),
        json!("eyJwYWdlIjogMn0="),
        json!(format!("{next}=")),
        json!(format!("{next}A")),
        json!(next.to_uppercase()),
        json!("A".repeat(1 << 20)),
        json!(3),
        json!(true),
        json!(["x"]),
        json!({"position": 3}),
    ] {
        cases.push(garbage);
    }
    for c in &cases {
        let r = list(&s, &ctx, "tools/list", Some(c));
        assert_invalid_cursor(&r);
        // Nothing of the cursor comes back.
        if let Some(text) = c.as_str().filter(|t| !t.is_empty()) {
            assert!(!r.to_string().contains(text), "{r}");
        }
    }
    // `null` is no cursor: the first page.
    let r = list(&s, &ctx, "tools/list", Some(&Value::Null));
    assert_eq!(r["tools"][0]["name"], "t000");
}

#[test]
fn cursors_survive_a_key_rotation_while_the_old_key_opens() {
    let old = service(10, 4);
    let next = list(&old, &ctx(T0), "tools/list", None)["nextCursor"].clone();
    let rotated_ring = mrtr::Keyring::parse_keys(&format!("{SECRET_B},{SECRET_A}")).unwrap();
    let mut rotated =
        Service::new(mrtr::Engine::new(rotated_ring, AUDIENCE), "pages", "0").with_page_size(4);
    for i in 0..10 {
        rotated = rotated.tool(
            &format!("t{i:03}"),
            "a tool",
            json!({"type": "object"}),
            |_| Ok(ToolResult::text("ok")),
        );
    }
    let r = list(&rotated, &ctx(T0), "tools/list", Some(&next));
    assert_eq!(r["tools"][0]["name"], "t004", "{r}");
    // Its own cursors are made with the new sealing key.
    assert_ne!(
        r["nextCursor"],
        list(&old, &ctx(T0), "tools/list", Some(&next))["nextCursor"]
    );
}

/// Resource templates are paged like every other list: each template once, in
/// registration order, and a templates cursor refused by `resources/list`.
#[test]
fn resource_templates_are_paged_like_the_other_lists() {
    use mrtr::service::ResourceTemplateDefinition;
    let mut s = Service::new(engine(), "pages", "0").with_page_size(2);
    for i in 0..5 {
        let definition =
            ResourceTemplateDefinition::new(&format!("test://t{i}/{{id}}"), format!("t{i}"))
                .expect("a level-1 template");
        s = s.resource_template(definition, |r| {
            Ok(ResourceResult::text(r.target(), "text/plain", "text"))
        });
    }
    let (keys, pages) = walk(&s, "resources/templates/list", "resourceTemplates", "name");
    assert_eq!(keys, ["t0", "t1", "t2", "t3", "t4"]);
    assert_eq!(pages, 3);
    let ctx = ctx(T0);
    let first = list(&s, &ctx, "resources/templates/list", None);
    let cursor = first["nextCursor"].clone();
    assert!(cursor.is_string(), "{first}");
    assert_invalid_cursor(&list(&s, &ctx, "resources/list", Some(&cursor)));
}
