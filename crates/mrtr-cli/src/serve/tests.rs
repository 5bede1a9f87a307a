//! Unit tests of `server`.

use super::*;

fn hosts_of(cfg: &ServeConfig, listen: &str) -> Vec<String> {
    cfg.http_options(listen.parse().unwrap())
        .unwrap()
        .allowed_host_names()
}

#[test]
fn the_host_list_defaults_to_loopback_names_on_loopback_only() {
    let cfg = ServeConfig::default();
    assert_eq!(
        hosts_of(&cfg, "127.0.0.1:8808"),
        ["localhost", "127.0.0.1", "[::1]"]
    );
    assert_eq!(
        hosts_of(&cfg, "[::1]:0"),
        ["localhost", "127.0.0.1", "[::1]"]
    );
    assert!(hosts_of(&cfg, "0.0.0.0:8808").is_empty());
    let listed = ServeConfig {
        allowed_hosts: vec!["mcp.example.com".into()],
        ..ServeConfig::default()
    };
    assert_eq!(hosts_of(&listed, "127.0.0.1:8808"), ["mcp.example.com"]);
    assert_eq!(hosts_of(&listed, "0.0.0.0:8808"), ["mcp.example.com"]);
}

#[test]
fn the_body_budget_must_hold_the_largest_body() {
    let mut cfg = ServeConfig {
        principal: PrincipalConfig::Anonymous,
        ..ServeConfig::default()
    };
    cfg.body_budget = cfg.max_body - 1;
    assert!(cfg.clone().validate().is_err());
    cfg.body_budget = cfg.max_body;
    assert!(cfg.validate().is_ok());
}

#[test]
fn a_page_holds_at_least_one_item() {
    let mut cfg = ServeConfig {
        principal: PrincipalConfig::Anonymous,
        ..ServeConfig::default()
    };
    cfg.page_size = 0;
    let e = cfg.clone().validate().unwrap_err();
    assert!(e.to_string().contains("--page-size"), "{e}");
    cfg.page_size = 1;
    assert!(cfg.validate().is_ok());
}

#[test]
fn accepted_typs_are_media_types() {
    let settings = |typ: &str| OAuthSettings {
        issuer: "https://auth.example".into(),
        audience: "https://mcp.example/mcp".into(),
        accept_typ: vec![typ.into()],
        ..OAuthSettings::default()
    };
    assert!(settings("JWT").config().is_ok());
    assert!(settings("application/jwt").config().is_ok());
    for bad in ["", "a b", "x\"y", "t\u{e9}"] {
        let e = settings(bad).config().unwrap_err();
        assert!(e.0.starts_with("--oauth-accept-typ"), "{bad:?}: {e}");
    }
}
