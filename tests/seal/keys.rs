//! Keys from text, as an operator writes them: `MRTR_KEYS` lists and key files.
//!
//! Only parsing lives in the core; reading the environment and the file is the
//! edge's job (`tests/server_keys.rs` covers `mrtr_cli::serve::KeySource`).

use mrtr::seal::{Key, KeyError, Keyring, generate_key_string};

#[test]
fn key_list_cases() {
    let (a, b) = (generate_key_string(), generate_key_string());
    let kids =
        |ring: Keyring| -> Vec<String> { ring.kids().iter().map(ToString::to_string).collect() };
    let kid = |s: &str| Key::from_base64url(s).unwrap().kid().to_string();
    assert_eq!(kids(Keyring::parse_keys(&a).unwrap()), [kid(&a)]);
    assert_eq!(
        kids(Keyring::parse_keys(&format!(" {a} , {b} ")).unwrap()),
        [kid(&a), kid(&b)]
    );
    for blank in ["", "  ", " , "] {
        assert!(matches!(Keyring::parse_keys(blank), Err(KeyError::NoKeys)));
    }
    for bad in [format!("{a},tooshortsecret"), format!("{a},{a}")] {
        let e = Keyring::parse_keys(&bad).unwrap_err();
        assert!(!e.to_string().contains(&a), "error echoes a key: {e}");
        assert!(
            !e.to_string().contains("tooshortsecret"),
            "error echoes a key: {e}"
        );
    }
}

#[test]
fn key_file_format() {
    let (a, b, c) = (
        generate_key_string(),
        generate_key_string(),
        generate_key_string(),
    );
    let text = format!("# sealing key first\n{a}\n\n# open-only\n{b}, {c} # retiring\n");
    let ring = Keyring::parse_key_file(&text).unwrap();
    let kids: Vec<_> = [&a, &b, &c]
        .iter()
        .map(|s| Key::from_base64url(s).unwrap().kid())
        .collect();
    assert_eq!(ring.kids(), kids);
    assert_eq!(ring.sealing_kid(), kids[0]);
    assert!(!ring.is_ephemeral());

    assert!(matches!(
        Keyring::parse_key_file("# no keys yet\n"),
        Err(KeyError::NoKeys)
    ));
    let e = Keyring::parse_key_file("c2hvcnQ\n").unwrap_err();
    assert!(e.to_string().contains("key entry 1"), "{e}");
    assert!(e.to_string().contains("mrtr keygen"), "{e}");
}

#[test]
fn basenc_style_padded_keys_are_accepted() {
    // `head -c 32 /dev/urandom | basenc --base64url` prints 44 characters with one '='.
    let padded = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE, [9u8; 32]);
    assert!(padded.ends_with('='));
    let k = Key::from_base64url(&format!("{padded}\n")).unwrap();
    assert_eq!(k.kid(), Key::from_secret(&[9u8; 32]).unwrap().kid());
}

#[test]
fn error_messages_are_lowercase_without_period() {
    let errs = [
        Key::from_secret(&[0; 3]).unwrap_err(),
        Key::from_base64url("@@").unwrap_err(),
        Keyring::parse_keys("").unwrap_err(),
        Keyring::parse_keys(&format!("{0},{0}", generate_key_string())).unwrap_err(),
    ];
    for e in errs {
        let s = e.to_string();
        assert!(s.chars().next().unwrap().is_lowercase(), "{s}");
        assert!(!s.ends_with('.'), "{s}");
    }
}
