//! The matcher: what matches, what is decoded, what is refused.

use super::*;

fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    let t = UriTemplate::parse(template).unwrap();
    t.match_uri(uri).map(|m| m.into_iter().collect())
}

fn pairs(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

#[test]
fn a_literal_template_matches_only_itself() {
    assert_eq!(vars("test://static", "test://static"), pairs(&[]));
    assert_eq!(vars("test://static", "test://static/"), None);
    assert_eq!(vars("test://static", "test://stati"), None);
    assert_eq!(vars("test://static", "TEST://static"), None);
}

#[test]
fn one_variable() {
    let t = "test://template/{id}/data";
    assert_eq!(vars(t, "test://template/123/data"), pairs(&[("id", "123")]));
    assert_eq!(
        vars(t, "test://template/a-b.c_d~e/data"),
        pairs(&[("id", "a-b.c_d~e")])
    );
    // An empty value, a reserved character inside, or a missing part: no match.
    assert_eq!(vars(t, "test://template//data"), None);
    assert_eq!(vars(t, "test://template/1/2/data"), None);
    assert_eq!(vars(t, "test://template/1:2/data"), None);
    assert_eq!(vars(t, "test://template/123"), None);
    assert_eq!(vars(t, "test://template/123/datax"), None);
    // A variable at the very end, and one at the very start.
    assert_eq!(vars("file:///{name}", "file:///x"), pairs(&[("name", "x")]));
    assert_eq!(
        vars("{scheme}://x", "https://x"),
        pairs(&[("scheme", "https")])
    );
}

#[test]
fn several_variables() {
    let t = "repo://{owner}/{name}/issues/{number}";
    assert_eq!(
        vars(t, "repo://acme/widgets/issues/42"),
        pairs(&[("name", "widgets"), ("number", "42"), ("owner", "acme")])
    );
    assert_eq!(vars(t, "repo://acme/widgets/pulls/42"), None);
    // The last variable ends where the trailing literal, a suffix, begins, even
    // when that literal starts with an unreserved character.
    assert_eq!(
        vars("notes://{day}/{title}.txt", "notes://mon/a.b.txt"),
        pairs(&[("day", "mon"), ("title", "a.b")])
    );
    assert_eq!(vars("notes://{day}/{title}.txt", "notes://mon/.txt"), None);
    assert_eq!(
        UriTemplate::parse(t)
            .unwrap()
            .variables()
            .collect::<Vec<_>>(),
        ["owner", "name", "number"]
    );
}

#[test]
fn values_are_percent_decoded() {
    let t = "test://template/{id}/data";
    assert_eq!(
        vars(t, "test://template/a%20b/data"),
        pairs(&[("id", "a b")])
    );
    assert_eq!(
        vars(t, "test://template/a%2Fb/data"),
        pairs(&[("id", "a/b")])
    );
    assert_eq!(
        vars(t, "test://template/%C3%A9t%C3%A9/data"),
        pairs(&[("id", "été")])
    );
    assert_eq!(vars(t, "test://template/%2f/data"), pairs(&[("id", "/")]));
    // A broken triplet, a byte sequence that is not UTF-8, an unencoded space.
    assert_eq!(vars(t, "test://template/%zz/data"), None);
    assert_eq!(vars(t, "test://template/%4/data"), None);
    assert_eq!(vars(t, "test://template/%FF/data"), None);
    assert_eq!(vars(t, "test://template/a b/data"), None);
    assert_eq!(vars("x:{v}", "x:%"), None);
    assert_eq!(vars("x:{v}", "x:%4"), None);
}

#[test]
fn nothing_matches_a_different_uri() {
    let t = "test://template/{id}/data";
    for uri in [
        "",
        "test://",
        "other://template/1/data",
        "test://template/",
        "é",
    ] {
        assert_eq!(vars(t, uri), None, "{uri:?}");
    }
}

#[test]
fn over_long_uris_and_values_do_not_match() {
    let t = UriTemplate::parse("test://{id}").unwrap();
    let at_limit = "x".repeat(TEMPLATE_VARIABLE_MAX_BYTES);
    assert!(t.match_uri(&format!("test://{at_limit}")).is_some());
    let over = "x".repeat(TEMPLATE_VARIABLE_MAX_BYTES + 1);
    assert!(t.match_uri(&format!("test://{over}")).is_none());
    let t = UriTemplate::parse("test://{id}/{rest}").unwrap();
    let long = format!("test://a/{}", "x".repeat(TEMPLATE_URI_MAX_BYTES));
    assert!(t.match_uri(&long).is_none());
    // A decoded value counts its decoded bytes: 3 bytes of "%41" are 1 byte.
    let t = UriTemplate::parse("test://{id}").unwrap();
    let encoded = "%41".repeat(TEMPLATE_VARIABLE_MAX_BYTES);
    assert_eq!(
        t.match_uri(&format!("test://{encoded}")).unwrap()["id"].len(),
        TEMPLATE_VARIABLE_MAX_BYTES
    );
}

#[test]
fn the_matcher_is_linear_on_hostile_input() {
    // Many candidate boundaries and no match: one pass per template, no backtracking.
    let t = UriTemplate::parse("a:{x}/{y}/{z}.end").unwrap();
    let uri = format!("a:{}", "/%41".repeat(1000));
    assert!(uri.len() <= TEMPLATE_URI_MAX_BYTES);
    let started = std::time::Instant::now();
    for _ in 0..1000 {
        assert!(t.match_uri(&uri).is_none());
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn templates_the_matcher_cannot_read_back_are_refused() {
    use TemplateError as E;
    let refused = [
        ("", E::Empty),
        (
            "file:///{a}{b}",
            E::AdjacentVariables("a".into(), "b".into()),
        ),
        ("file:///{a}-{b}", E::AmbiguousBoundary("a".into())),
        ("file:///{a}.{b}", E::AmbiguousBoundary("a".into())),
        ("file:///{a}%20{b}", E::AmbiguousBoundary("a".into())),
        ("file:///{a}/{a}", E::DuplicateVariable("a".into())),
        ("file:///{+path}", E::Unsupported("+path".into())),
        ("file:///{#frag}", E::Unsupported("#frag".into())),
        ("file:///{/seg}", E::Unsupported("/seg".into())),
        ("file:///{?q}", E::Unsupported("?q".into())),
        ("file:///{a,b}", E::Unsupported("a,b".into())),
        ("file:///{list*}", E::Unsupported("list*".into())),
        ("file:///{name:3}", E::Unsupported("name:3".into())),
        ("file:///{}", E::EmptyExpression),
        ("file:///{a", E::UnbalancedBrace),
        ("file:///a}", E::UnbalancedBrace),
        ("file:///{a{b}", E::UnbalancedBrace),
        ("file:///{a-b}", E::InvalidName("a-b".into())),
        ("file:///{.a}", E::Unsupported(".a".into())),
        ("file:///{a.}", E::InvalidName("a.".into())),
        ("file:///{a..b}", E::InvalidName("a..b".into())),
        ("file:///{%41}", E::InvalidName("%41".into())),
        ("file:///a b/{x}", E::InvalidLiteral(' ')),
        ("file:///a\"/{x}", E::InvalidLiteral('"')),
        ("file:///100%/{x}", E::InvalidLiteral('%')),
        ("file:///\n", E::InvalidLiteral('\n')),
    ];
    for (template, error) in refused {
        assert_eq!(
            UriTemplate::parse(template),
            Err(error.clone()),
            "{template:?}"
        );
        assert!(!error.to_string().is_empty());
        assert!(ResourceTemplateDefinition::new(template, "n").is_err());
    }
    // Accepted: reserved separators between variables, a dotted name, an
    // encoded literal, a non-ASCII literal.
    for template in [
        "file:///{a}/{b}",
        "x:{a}:{b}",
        "x:{a}?q={b}",
        "file:///{a.b}",
        "file:///a%20b/{x}",
        "file:///été/{x}",
        "file:///{a}é{b}",
    ] {
        assert!(UriTemplate::parse(template).is_ok(), "{template:?}");
    }
    assert_eq!(
        vars("file:///{a}é{b}", "file:///1é2"),
        pairs(&[("a", "1"), ("b", "2")])
    );
}

#[test]
fn a_definition_lists_the_spec_fields() {
    let (_, v, caching) = ResourceTemplateDefinition::new("test://template/{id}/data", "template")
        .unwrap()
        .title("Resource Template")
        .description("d")
        .mime_type("application/json")
        .into_parts();
    assert_eq!(
        v,
        json!({"uriTemplate": "test://template/{id}/data", "name": "template",
               "title": "Resource Template", "description": "d", "mimeType": "application/json"})
    );
    assert_eq!(caching, None);
    // Caching hints are not part of the listed definition.
    let (_, v, caching) = ResourceTemplateDefinition::new("x:{a}", "n")
        .unwrap()
        .cache_for(5, crate::result::CacheScope::Public)
        .into_parts();
    assert_eq!(v, json!({"uriTemplate": "x:{a}", "name": "n"}));
    assert_eq!(caching, Some((5, crate::result::CacheScope::Public)));
}

/// What the type's doc example showed before the type left the public API.
#[test]
fn the_former_doc_example_matches_decodes_and_refuses() {
    let t = UriTemplate::parse("test://template/{id}/data").unwrap();
    let vars = t.match_uri("test://template/a%20b/data").unwrap();
    assert_eq!(vars["id"], "a b");
    assert!(t.match_uri("test://template/a/b/data").is_none());
    assert!(UriTemplate::parse("file:///{a}{b}").is_err());
}
