//! The terminal's questions, with typed input: forms, links, sampling, roots.

use serde_json::json;

use super::super::sanitize::Sanitized;
use super::*;

fn form(schema: Value) -> ElicitFormParams {
    ElicitFormParams {
        message: "Fill".into(),
        requested_schema: RequestedSchema::from_value(&schema).unwrap(),
        explicit_mode: false,
    }
}

fn run_form(schema: Value, typed: &str) -> (ElicitResult, String) {
    let f = form(schema);
    let mut input = std::io::Cursor::new(typed.as_bytes().to_vec());
    let mut out = Vec::new();
    let r = ask_form(&f, &mut input, &mut out).unwrap();
    (r, String::from_utf8(out).unwrap())
}

#[test]
fn form_fields_are_typed_checked_and_defaulted() {
    // Declared in alphabetical order, so the fields are asked in this order whether
    // or not serde_json preserves insertion order. age: "x", 1.5, then the
    // default; color: 3 (out of range) then 2; mail: bad then good; name: empty
    // (required), too short, ok; note: skipped; ok: "maybe" then y; tags: "a, c".
    let schema = json!({"type": "object", "properties": {
        "age": {"type": "integer", "minimum": 0, "default": 30},
        "color": {"type": "string", "enum": ["red", "green"]},
        "mail": {"type": "string", "format": "email"},
        "name": {"type": "string", "title": "Name", "minLength": 2},
        "note": {"type": "string"},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}
    }, "required": ["name", "ok", "color"]});
    let typed = "x\n1.5\n\n3\n2\nnope\nada@example.org\n\nA\nAda\n\nmaybe\ny\na, c\n";
    let (r, shown) = run_form(schema, typed);
    assert_eq!(r.action, ElicitAction::Accept);
    assert_eq!(
        Value::Object(r.content.unwrap()),
        json!({"name": "Ada", "age": 30, "ok": true, "color": "green", "tags": ["a", "c"], "mail": "ada@example.org"})
    );
    assert!(shown.contains("1) red"), "{shown}");
    assert!(shown.contains("[default: 30]"), "{shown}");
    assert!(shown.contains("this field is required"), "{shown}");
    assert!(shown.contains("not an integer"), "{shown}");
}

#[test]
fn decline_cancel_and_end_of_input() {
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
    assert_eq!(
        run_form(schema.clone(), "x\n:decline\n").0,
        refusal(ElicitAction::Decline)
    );
    assert_eq!(
        run_form(schema.clone(), ":cancel\n").0,
        refusal(ElicitAction::Cancel)
    );
    assert_eq!(run_form(schema, "x\n").0, refusal(ElicitAction::Cancel));
}

#[test]
fn url_consent() {
    let u = ElicitUrlParams {
        message: "Sign in".into(),
        url: "https://example.com/a".into(),
    };
    let ask = |typed: &str| {
        let mut out = Vec::new();
        let r = ask_url(
            &u,
            &mut std::io::Cursor::new(typed.as_bytes().to_vec()),
            &mut out,
        )
        .unwrap();
        (r.action, String::from_utf8(out).unwrap())
    };
    let (a, shown) = ask("what\ny\n");
    assert_eq!(a, ElicitAction::Accept);
    assert!(shown.contains("https://example.com/a"));
    assert_eq!(ask("n\n").0, ElicitAction::Decline);
    assert_eq!(ask(":cancel\n").0, ElicitAction::Cancel);
}

#[test]
fn sampling_reply_from_the_user() {
    let p = CreateMessageParams::user_text("Capital of France?", 50);
    let mut out = Vec::new();
    let r = ask_sampling(&p, &mut std::io::Cursor::new(b"Paris\n".to_vec()), &mut out).unwrap();
    assert_eq!(r.as_deref(), Some("Paris"));
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("user: Capital of France?")
    );
    let r = ask_sampling(
        &p,
        &mut std::io::Cursor::new(b":decline\n".to_vec()),
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(r, None);
}

#[test]
fn links_are_offered_over_https_or_to_this_machine_only() {
    for ok in [
        ("https://example.com/a?b=c", "example.com"),
        ("HTTPS://Example.com/", "Example.com"),
        ("https://user@evil.example/x", "evil.example"),
        ("http://127.0.0.1:8080/cb", "127.0.0.1"),
        ("http://127.45.6.7/", "127.45.6.7"),
        ("http://[::1]:9/", "[::1]"),
        ("http://localhost:3000/x", "localhost"),
    ] {
        assert_eq!(link_host(ok.0).as_deref(), Ok(ok.1), "{}", ok.0);
    }
    for bad in [
        "http://example.com/",
        "http://localhost.evil.example/",
        "http://128.0.0.1/",
        "http://[::2]/",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "ftp://example.com/",
        "data:text/html,hi",
        "https:///nohost",
        "not a url",
        "",
    ] {
        assert!(link_host(bad).is_err(), "{bad}");
    }
    // A refused link is declined without a question, and not shown.
    let u = ElicitUrlParams {
        message: "Sign in".into(),
        url: "http://evil.example/steal".into(),
    };
    let mut out = Vec::new();
    let r = ask_url(&u, &mut std::io::Cursor::new(b"y\n".to_vec()), &mut out).unwrap();
    let shown = String::from_utf8(out).unwrap();
    assert_eq!(r.action, ElicitAction::Decline);
    assert!(shown.contains("does not offer"), "{shown}");
    assert!(!shown.contains("evil.example"), "{shown}");
}

#[test]
fn multibyte_input_in_every_field_kind_is_re_asked() {
    // Alphabetical, so the order is the same with or without preserve_order.
    let schema = json!({"type": "object", "properties": {
        "a_text": {"type": "string", "maxLength": 3},
        "b_email": {"type": "string", "format": "email"},
        "c_uri": {"type": "string", "format": "uri"},
        "d_date": {"type": "string", "format": "date"},
        "e_datetime": {"type": "string", "format": "date-time"},
        "f_number": {"type": "number", "maximum": 10},
        "g_integer": {"type": "integer"},
        "h_bool": {"type": "boolean"},
        "i_enum": {"type": "string", "enum": ["red", "green"]},
        "j_multi": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
    }, "required": ["a_text", "b_email", "c_uri", "d_date", "e_datetime", "f_number", "g_integer", "h_bool", "i_enum", "j_multi"]});
    let typed = [
        ("éééé", "éé"),
        ("adaé", "ada@example.org"),
        ("é:x", "https://example.org/é"),
        ("2024-01-0é", "2024-01-05"),
        ("2024-01-0é12:00:00Z", "2024-01-05T12:00:00Z"),
        ("４.５", "4.5"),
        ("4２", "42"),
        ("ｙ", "y"),
        ("é", "2"),
        ("é, a", "a"),
    ];
    let input: String = typed
        .iter()
        .map(|(bad, good)| format!("{bad}\n{good}\n"))
        .collect();
    let (r, shown) = run_form(schema, &input);
    assert_eq!(r.action, ElicitAction::Accept, "{shown}");
    assert_eq!(
        Value::Object(r.content.unwrap()),
        json!({"a_text": "éé", "b_email": "ada@example.org", "c_uri": "https://example.org/é",
               "d_date": "2024-01-05", "e_datetime": "2024-01-05T12:00:00Z", "f_number": 4.5,
               "g_integer": 42, "h_bool": true, "i_enum": "green", "j_multi": ["a"]})
    );
    let complaints: Vec<&str> = shown.lines().filter(|l| l.contains("  ! ")).collect();
    assert_eq!(complaints.len(), typed.len(), "{shown}");
    assert!(
        shown.contains("must be a valid date-time (e.g. 2026-07-28T10:00:00Z)"),
        "{shown}"
    );
    assert!(shown.contains("must be at most 3 characters"), "{shown}");
    assert!(shown.contains("not an integer"), "{shown}");
}

#[test]
fn sampling_shows_what_the_model_is_asked_filtered() {
    let mut p =
        CreateMessageParams::user_text("line one\n? Your reply as the model: \u{1b}[2J", 50);
    p.system_prompt = Some("be\u{202e}nice\nsecond".into());
    let mut out = Sanitized::new(Vec::new());
    let r = ask_sampling(&p, &mut std::io::Cursor::new(b"ok\n".to_vec()), &mut out).unwrap();
    assert_eq!(r.as_deref(), Some("ok"));
    let shown = String::from_utf8(out.into_inner()).unwrap();
    assert!(shown.contains("  system: benice\n  | second"), "{shown}");
    assert!(
        shown.contains("  user: line one\n  | ? Your reply as the model: [2J"),
        "{shown}"
    );
    assert_eq!(
        shown.matches("\n  Your reply as the model").count(),
        1,
        "{shown}"
    );
}

#[test]
fn roots_are_shared_only_on_yes() {
    let root = Root {
        uri: "file:///work".into(),
        name: None,
        meta: None,
    };
    let ask = |typed: &str| {
        let mut out = Vec::new();
        let r = ask_roots(
            &root,
            &mut std::io::Cursor::new(typed.as_bytes().to_vec()),
            &mut out,
        )
        .unwrap();
        (r, String::from_utf8(out).unwrap())
    };
    let (yes, shown) = ask("é\ny\n");
    assert!(yes);
    assert!(
        shown.contains("file:///work") && shown.contains("! answer y or n"),
        "{shown}"
    );
    assert!(!ask("n\n").0);
    assert!(!ask(":decline\n").0);
    assert!(!ask("").0, "end of input declines");
}
