//! Unit tests of `result`.

use serde_json::json;

use super::*;

fn v(x: impl Into<Value>) -> Value {
    x.into()
}

#[test]
fn tool_text_and_media_shapes() {
    let r = ToolResult::text("a")
        .with(Content::text("b"))
        .with(Content::image_bytes(b"hi", "image/png"))
        .with(Content::audio_bytes(&[0xff], "audio/wav"))
        .with(Content::image("aGk=", "image/jpeg").unwrap());
    assert_eq!(
        v(r),
        json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "/w==", "mimeType": "audio/wav"},
            {"type": "image", "data": "aGk=", "mimeType": "image/jpeg"},
        ]})
    );
    assert_eq!(v(ToolResult::new()), json!({"content": []}));
}

#[test]
fn tool_resources_and_links() {
    let r = ToolResult::new()
        .with(Content::resource(ResourceContents::text(
            "file:///a",
            "text/plain",
            "x",
        )))
        .with(Content::resource(ResourceContents::blob(
            "file:///b",
            "application/zip",
            &[0],
        )))
        .with(Content::link(ResourceLink::new("file:///c", "c")))
        .with(Content::link(
            ResourceLink::new("file:///d", "d")
                .title("D")
                .description("the d file")
                .mime_type("text/csv")
                .size(42),
        ));
    assert_eq!(
        v(r),
        json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "x"}},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "application/zip", "blob": "AA=="}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "resource_link", "uri": "file:///d", "name": "d", "title": "D",
             "description": "the d file", "mimeType": "text/csv", "size": 42},
        ]})
    );
}

#[test]
fn structured_sets_both_fields() {
    let r = ToolResult::structured(&json!({"n": 1, "tags": ["a"]}))
        .unwrap()
        .with(Content::text("extra"));
    assert_eq!(
        v(r),
        json!({
            "content": [{"type": "text", "text": "{\"n\":1,\"tags\":[\"a\"]}"},
                        {"type": "text", "text": "extra"}],
            "structuredContent": {"n": 1, "tags": ["a"]},
        })
    );
    // Any JSON value is allowed since 2026-07-28.
    assert_eq!(
        v(ToolResult::structured(&[1, 2]).unwrap()),
        json!({"content": [{"type": "text", "text": "[1,2]"}], "structuredContent": [1, 2]})
    );
    let mut bad = std::collections::HashMap::new();
    bad.insert((1, 2), "non-string key");
    assert_eq!(
        ToolResult::structured(&bad).unwrap_err(),
        BuildError::NotSerializable
    );
}

#[test]
fn base64_strings_are_checked() {
    for bad in ["not base64!", "aGk", "aGk=\n", "aG-k"] {
        let e = Content::image(bad, "image/png").unwrap_err();
        assert_eq!(e, BuildError::InvalidBase64 { what: "image data" });
        assert!(!e.to_string().contains(bad));
    }
    assert!(Content::audio("!!", "audio/wav").is_err());
    assert!(Content::audio("", "audio/wav").is_ok());
    assert_eq!(
        ResourceContents::blob_base64("u", "m", "%%").unwrap_err(),
        BuildError::InvalidBase64 { what: "blob" }
    );
    assert!(Content::image("@", "image/png").is_err());
    assert_eq!(
        BuildError::InvalidBase64 { what: "blob" }.to_string(),
        "blob is not valid base64"
    );
}

#[test]
fn prompt_shapes() {
    let r = PromptResult::new()
        .description("d")
        .user_text("q")
        .message(Role::Assistant, Content::text("a"))
        .message(Role::User, Content::image_bytes(b"hi", "image/png"))
        .message(Role::User, Content::image("aGk=", "image/gif").unwrap())
        .message(
            Role::User,
            Content::resource(ResourceContents::text("file:///x", "text/plain", "t")),
        )
        .message(
            Role::Assistant,
            Content::link(ResourceLink::new("file:///y", "y")),
        );
    assert_eq!(
        v(r),
        json!({"description": "d", "messages": [
            {"role": "user", "content": {"type": "text", "text": "q"}},
            {"role": "assistant", "content": {"type": "text", "text": "a"}},
            {"role": "user", "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "image", "data": "aGk=", "mimeType": "image/gif"}},
            {"role": "user", "content": {"type": "resource",
                "resource": {"uri": "file:///x", "mimeType": "text/plain", "text": "t"}}},
            {"role": "assistant", "content": {"type": "resource_link", "uri": "file:///y", "name": "y"}},
        ]})
    );
    assert_eq!(v(PromptResult::new()), json!({"messages": []}));
}

#[test]
fn resource_shapes() {
    let r = ResourceResult::text("file:///a", "text/plain", "x")
        .with(ResourceContents::blob(
            "file:///b",
            "application/octet-stream",
            b"hi",
        ))
        .with(ResourceContents::blob_base64("file:///c", "image/png", "aGk=").unwrap())
        .with(ResourceContents::text("file:///d", "text/markdown", "# d"));
    assert_eq!(
        v(r),
        json!({"contents": [
            {"uri": "file:///a", "mimeType": "text/plain", "text": "x"},
            {"uri": "file:///b", "mimeType": "application/octet-stream", "blob": "aGk="},
            {"uri": "file:///c", "mimeType": "image/png", "blob": "aGk="},
            {"uri": "file:///d", "mimeType": "text/markdown", "text": "# d"},
        ], "ttlMs": 0, "cacheScope": "private"})
    );
    let cached =
        ResourceResult::blob("file:///e", "image/png", &[]).cache_for(60_000, CacheScope::Public);
    assert_eq!(
        v(cached),
        json!({"contents": [{"uri": "file:///e", "mimeType": "image/png", "blob": ""}],
               "ttlMs": 60_000, "cacheScope": "public"})
    );
    assert_eq!(
        v(ResourceResult::new(
            ResourceContents::blob_base64("u", "m", "aGk=").unwrap()
        ))["contents"][0]["blob"],
        "aGk="
    );
}

#[test]
fn no_result_type_is_added() {
    for r in [
        v(ToolResult::text("x")),
        v(PromptResult::new().user_text("x")),
        v(ResourceResult::text("u", "text/plain", "x")),
    ] {
        assert!(r.get("resultType").is_none() && r.get("isError").is_none());
    }
}
