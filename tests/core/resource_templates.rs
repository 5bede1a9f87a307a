//! Resource templates through the `Service`: `resources/templates/list` lists
//! them; `resources/read` of a URI no static resource has routes through the
//! first template that matches, with its variables as the round's arguments;
//! a static resource wins; a URI nothing matches keeps the not-found error; a
//! template handler may answer `input_required` like any read.

use mrtr_testkit as common;

use common::*;
use mrtr::service::ResourceTemplateDefinition;
use mrtr::{Elicited, Form, ResourceResult, Round, Service};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Issue {
    owner: String,
    number: String,
}

fn template(uri: &str, name: &str) -> ResourceTemplateDefinition {
    ResourceTemplateDefinition::new(uri, name).expect("a valid template")
}

fn service() -> Service {
    Service::new(engine(), "t", "0")
        .resource(
            mrtr::ResourceDefinition::new("test://items/static", "static"),
            |r: Round| {
                Ok(ResourceResult::text(
                    r.target(),
                    "text/plain",
                    "the static one",
                ))
            },
        )
        .resource_template(
            template("test://items/{id}", "item")
                .title("Item")
                .description("One item by id")
                .mime_type("text/plain"),
            |r: Round| {
                let id = r
                    .argument("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Ok(ResourceResult::text(
                    r.target(),
                    "text/plain",
                    format!("item {id}"),
                ))
            },
        )
        .resource_template(
            template("repo://{owner}/issues/{number}", "issue"),
            |r: Round| {
                let issue: Issue = r.arguments()?;
                Ok(ResourceResult::text(
                    r.target(),
                    "text/plain",
                    format!("{}#{}", issue.owner, issue.number),
                ))
            },
        )
        // Registered after `test://items/{id}`, which matches first.
        .resource_template(template("test://{any}/{id}", "shadowed"), |r: Round| {
            Ok(ResourceResult::text(r.target(), "text/plain", "shadowed"))
        })
        .resource_template(template("vault://{secret}", "vault"), |r: Round| {
            match r.elicit("reveal", Form::confirm("Reveal it?"))? {
                Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
                    let secret = r
                        .argument("secret")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    Ok(ResourceResult::text(
                        r.target(),
                        "text/plain",
                        format!("revealed {secret}"),
                    ))
                }
                _ => Ok(ResourceResult::text(r.target(), "text/plain", "hidden")),
            }
        })
}

fn read(s: &Service, uri: &str) -> Value {
    call(
        s,
        &rpc(
            1,
            "resources/read",
            json!({"_meta": meta(&all_caps()), "uri": uri}),
        ),
        T0,
    )
}

fn text(v: &Value) -> &str {
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {v}"))
}

#[test]
fn the_list_shows_the_templates_with_the_spec_fields() {
    let s = service();
    let v = call(
        &s,
        &rpc(
            1,
            "resources/templates/list",
            json!({"_meta": meta(&all_caps())}),
        ),
        T0,
    );
    let list = v["result"]["resourceTemplates"].as_array().unwrap();
    assert_eq!(list.len(), 4, "{v}");
    assert_eq!(
        list[0],
        json!({"uriTemplate": "test://items/{id}", "name": "item", "title": "Item",
               "description": "One item by id", "mimeType": "text/plain"})
    );
    assert_eq!(
        list[1],
        json!({"uriTemplate": "repo://{owner}/issues/{number}", "name": "issue"})
    );
    assert_eq!(v["result"]["resultType"], "complete");
    assert!(v["result"]["ttlMs"].is_u64());
    // The static resource is listed alone under resources/list.
    let v = call(
        &s,
        &rpc(2, "resources/list", json!({"_meta": meta(&all_caps())})),
        T0,
    );
    assert_eq!(v["result"]["resources"].as_array().unwrap().len(), 1);
    // A service with templates only advertises resources.
    let only = Service::new(engine(), "t", "0")
        .resource_template(template("x://{a}", "a"), |r: Round| {
            Ok(ResourceResult::text(r.target(), "text/plain", "a"))
        });
    let v = call(
        &only,
        &rpc(3, "server/discover", json!({"_meta": meta(&all_caps())})),
        T0,
    );
    assert_eq!(v["result"]["capabilities"]["resources"], json!({}), "{v}");
}

#[test]
fn a_read_routes_through_the_template_with_its_variables() {
    let s = service();
    assert_eq!(text(&read(&s, "test://items/42")), "item 42");
    assert_eq!(text(&read(&s, "test://items/a%20b")), "item a b");
    assert_eq!(
        read(&s, "test://items/42")["result"]["contents"][0]["uri"],
        "test://items/42"
    );
    // Several variables, decoded into the handler's own type.
    assert_eq!(text(&read(&s, "repo://acme/issues/7")), "acme#7");
    // Registration order decides between templates that both match.
    assert_eq!(text(&read(&s, "test://other/1")), "shadowed");
}

#[test]
fn a_static_resource_wins_over_a_template() {
    let s = service();
    assert_eq!(text(&read(&s, "test://items/static")), "the static one");
}

#[test]
fn a_uri_nothing_matches_keeps_the_not_found_error() {
    let s = service();
    for uri in [
        "nope://x",
        "test://items/",
        "repo://acme/pulls/7",
        "test://items/a/b/c",
    ] {
        let v = read(&s, uri);
        assert_eq!(v["error"]["code"], -32602, "{uri}: {v}");
        assert_eq!(v["error"]["message"], "Resource not found", "{uri}: {v}");
        // SEP-2164: the URI asked for, in `data`.
        assert_eq!(v["error"]["data"], json!({"uri": uri}), "{uri}: {v}");
    }
    // An over-long URI is refused before any template is tried, with its own reason.
    let long = format!(
        "test://items/{}",
        "x".repeat(mrtr::defaults::TEMPLATE_URI_MAX_BYTES)
    );
    let v = read(&s, &long);
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{v}"
    );
    // An over-long variable: its template does not match.
    let v = read(
        &s,
        &format!(
            "vault://{}",
            "x".repeat(mrtr::defaults::TEMPLATE_VARIABLE_MAX_BYTES + 1)
        ),
    );
    assert_eq!(v["error"]["message"], "Resource not found", "{v}");
}

#[test]
fn a_template_handler_may_answer_input_required_like_any_read() {
    let s = service();
    let first = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                       "params": {"_meta": meta(&all_caps()), "uri": "vault://s3cr%21t"}});
    let v = call(&s, first.to_string().as_bytes(), T0);
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    assert_eq!(
        v["result"]["inputRequests"]["reveal"]["method"],
        "elicitation/create"
    );
    let state = v["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"reveal": {"action": "accept", "content": {"confirm": true}}});
    let again = retry(&first, 2, Some(answer.clone()), &state);
    let v = call(&s, again.to_string().as_bytes(), T0);
    assert_eq!(text(&v), "revealed s3cr!t", "{v}");
    // The state is bound to the URI (and so to its variables): another URI the
    // same template matches cannot take it.
    let mut elsewhere = retry(&first, 3, Some(answer), &state);
    elsewhere["params"]["uri"] = json!("vault://other");
    let v = call(&s, elsewhere.to_string().as_bytes(), T0);
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

#[test]
fn variables_that_do_not_fit_the_handlers_type_are_invalid_params() {
    #[derive(Deserialize)]
    #[allow(dead_code)] // decoded to check the type, not read
    struct Numbered {
        n: u32,
    }
    let s =
        Service::new(engine(), "t", "0").resource_template(template("n://{n}", "n"), |r: Round| {
            let _: Numbered = r.arguments()?;
            Ok(ResourceResult::text(r.target(), "text/plain", "n"))
        });
    // Variables are strings: a numeric field does not take them.
    let v = read(&s, "n://7");
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

#[test]
fn a_client_still_cannot_send_arguments_to_resources_read() {
    let s = service();
    let v = call(
        &s,
        &rpc(
            1,
            "resources/read",
            json!({"_meta": meta(&all_caps()), "uri": "test://items/1", "arguments": {"id": "2"}}),
        ),
        T0,
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
}
