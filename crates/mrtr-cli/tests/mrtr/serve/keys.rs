//! Loading keys at the edge, as an operator would: `MRTR_KEYS` and `--keys-file`
//! through `mrtr_cli::serve::KeySource` (the core only parses the text).

use std::ffi::OsString;

use mrtr::seal::{Key, generate_key_string};
use mrtr_cli::serve::KeySource;

/// The kids of the ring `MRTR_KEYS=value` gives, or the error's text.
fn from_env(value: Option<&str>) -> Result<Option<Vec<String>>, String> {
    let source = KeySource::resolve(None, value.map(OsString::from)).map_err(|e| e.to_string())?;
    if source == KeySource::Ephemeral {
        return Ok(None);
    }
    let ring = source.keyring().map_err(|e| e.to_string())?;
    Ok(Some(ring.kids().iter().map(ToString::to_string).collect()))
}

#[test]
fn mrtr_keys_cases() {
    let (a, b) = (generate_key_string(), generate_key_string());
    let kid = |s: &str| Key::from_base64url(s).unwrap().kid().to_string();
    assert_eq!(from_env(None), Ok(None), "unset: an ephemeral key");
    // Set but blank is a mistake a fleet operator must hear about, not a per-process key.
    for blank in ["", "  "] {
        let e = from_env(Some(blank)).unwrap_err();
        assert!(e.contains("MRTR_KEYS is set but empty"), "{e}");
    }
    assert_eq!(from_env(Some(&a)), Ok(Some(vec![kid(&a)])));
    assert_eq!(
        from_env(Some(&format!(" {a} , {b} "))),
        Ok(Some(vec![kid(&a), kid(&b)]))
    );
    for bad in [format!("{a},tooshortsecret"), format!("{a},{a}")] {
        let e = from_env(Some(&bad)).unwrap_err();
        assert!(e.starts_with("MRTR_KEYS: "), "{e}");
        for secret in bad.split(',').filter(|s| s.len() > 8) {
            assert!(!e.contains(secret), "error echoes a key: {e}");
        }
    }
}

#[cfg(unix)]
#[test]
fn mrtr_keys_not_unicode() {
    use std::os::unix::ffi::OsStringExt;
    let e = KeySource::resolve(None, Some(OsString::from_vec(vec![0xff, 0xfe]))).unwrap_err();
    assert!(e.to_string().contains("not valid UTF-8"), "{e}");
}

#[test]
fn key_file_is_read_at_the_edge() {
    let dir = std::env::temp_dir().join(format!("mrtr-server-keys-{}", std::process::id()));
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
    // --keys-file wins over MRTR_KEYS.
    let source = KeySource::resolve(Some(path.clone()), Some(OsString::from(&a))).unwrap();
    assert_eq!(source, KeySource::File(path.clone()));
    let ring = source.keyring().unwrap();
    let kids: Vec<_> = [&a, &b, &c]
        .iter()
        .map(|s| Key::from_base64url(s).unwrap().kid())
        .collect();
    assert_eq!(ring.kids(), kids);
    assert!(!ring.is_ephemeral());

    std::fs::write(&path, "# no keys yet\n").unwrap();
    let e = source.keyring().unwrap_err().to_string();
    assert!(e.starts_with("--keys-file: no key found"), "{e}");
    std::fs::write(&path, "c2hvcnQ\n").unwrap();
    let e = source.keyring().unwrap_err().to_string();
    assert!(
        e.contains("key entry 1") && e.contains("mrtr keygen"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let e = source.keyring().unwrap_err().to_string();
    assert!(e.starts_with("--keys-file: cannot read key file"), "{e}");
    assert!(e.contains(&path.display().to_string()), "{e}");
}

#[test]
fn no_keys_configured_is_an_ephemeral_ring() {
    let ring = KeySource::Ephemeral.keyring().unwrap();
    assert!(ring.is_ephemeral());
    assert!(format!("{:?}", KeySource::Env(generate_key_string())).contains("<redacted>"));
}
