//! Loading keys from `MRTR_KEYS` and files, as an operator would.
//!
//! The environment is only read, never set in-process (setting it is `unsafe` in
//! edition 2024): each case re-runs this test binary with its own environment.

use std::process::Command;

use mrtr::seal::{Key, KeyError, Keyring, generate_key_string};

/// Runs `probe_from_env` in a child process with `MRTR_KEYS` set (or unset) and the
/// expected outcome in `MRTR_TEST_EXPECT`.
fn run_probe(keys: Option<&str>, expect: &str) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "probe_from_env", "--nocapture"]);
    cmd.env("MRTR_TEST_EXPECT", expect);
    match keys {
        Some(k) => cmd.env("MRTR_KEYS", k),
        None => cmd.env_remove("MRTR_KEYS"),
    };
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{expect}: {text}");
    assert!(text.contains("1 passed"), "probe did not run: {text}");
}

#[test]
#[ignore = "run by from_env_cases in a child process"]
fn probe_from_env() {
    let expect = std::env::var("MRTR_TEST_EXPECT").unwrap();
    let got = Keyring::from_env();
    match expect.as_str() {
        "none" => assert!(matches!(got, Ok(None)), "{got:?}"),
        "error" => {
            let e = got.unwrap_err();
            let keys = std::env::var("MRTR_KEYS").unwrap_or_default();
            for secret in keys.split(',').map(str::trim).filter(|s| s.len() > 8) {
                assert!(!e.to_string().contains(secret), "error echoes a key: {e}");
            }
        }
        kids => {
            let ring = got.unwrap().unwrap();
            let shown: Vec<String> = ring.kids().iter().map(ToString::to_string).collect();
            assert_eq!(shown.join(","), kids);
        }
    }
}

#[test]
fn from_env_cases() {
    let (a, b) = (generate_key_string(), generate_key_string());
    let kid = |s: &str| Key::from_base64url(s).unwrap().kid().to_string();
    run_probe(None, "none");
    run_probe(Some(""), "none");
    run_probe(Some("  "), "none");
    run_probe(Some(&a), &kid(&a));
    run_probe(
        Some(&format!(" {a} , {b} ")),
        &format!("{},{}", kid(&a), kid(&b)),
    );
    run_probe(Some(&format!("{a},tooshortsecret")), "error");
    run_probe(Some(&format!("{a},{a}")), "error");
}

#[test]
fn key_file_round_trip() {
    let dir = std::env::temp_dir().join(format!("mrtr-seal-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keys.txt");
    let (a, b, c) = (
        generate_key_string(),
        generate_key_string(),
        generate_key_string(),
    );
    std::fs::write(
        &path,
        format!("# sealing key first\n{a}\n\n# open-only\n{b}, {c} # retiring\n"),
    )
    .unwrap();
    let ring = Keyring::from_file(&path).unwrap();
    let kids: Vec<_> = [&a, &b, &c]
        .iter()
        .map(|s| Key::from_base64url(s).unwrap().kid())
        .collect();
    assert_eq!(ring.kids(), kids);
    assert_eq!(ring.sealing_kid(), kids[0]);
    assert!(!ring.is_ephemeral());

    std::fs::write(&path, "# no keys yet\n").unwrap();
    assert!(matches!(Keyring::from_file(&path), Err(KeyError::NoKeys)));
    std::fs::write(&path, "c2hvcnQ\n").unwrap();
    let e = Keyring::from_file(&path).unwrap_err();
    assert!(e.to_string().contains("key entry 1"), "{e}");
    assert!(e.to_string().contains("mrtr keygen"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    let e = Keyring::from_file(&path).unwrap_err();
    assert!(matches!(e, KeyError::Io { .. }));
    assert!(e.to_string().starts_with("cannot read key file"));
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
