//! The AEAD under the token, through the same in-place code path `seal` and `open` use:
//! the C2SP XAES-256-GCM vectors (fixed and accumulated) and the Wycheproof AES-GCM
//! cases for the inner AES-256-GCM (256-bit keys, 96-bit IVs).

use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use mrtr::seal::primitive::{xaes_open, xaes_seal};
use sha3::Shake128;
use sha3::digest::{ExtendableOutput, Update, XofReader};
use wycheproof::TestResult;
use wycheproof::aead::{TestName, TestSet};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// c2sp.org/XAES-256-GCM, the two fixed vectors (the first with MSB(L) = 0, the second 1).
#[test]
fn c2sp_fixed_vectors() {
    let cases: [([u8; 32], &[u8], &str); 2] = [
        (
            [0x01; 32],
            b"",
            "ce546ef63c9cc60765923609b33a9a1974e96e52daf2fcf7075e2271",
        ),
        (
            [0x03; 32],
            b"c2sp.org/XAES-256-GCM",
            "986ec1832593df5443a179437fd083bf3fdb41abd740a21f71eb769d",
        ),
    ];
    let nonce: [u8; 24] = *b"ABCDEFGHIJKLMNOPQRSTUVWX";
    for (key, aad, want) in cases {
        let sealed = xaes_seal(&key, &nonce, aad, b"XAES-256-GCM");
        assert_eq!(hex(&sealed), want);
        assert_eq!(
            xaes_open(&key, &nonce, aad, &sealed).unwrap(),
            b"XAES-256-GCM"
        );
        let mut bad = sealed.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(xaes_open(&key, &nonce, aad, &bad).is_none());
        assert!(xaes_open(&key, &nonce, b"other", &sealed).is_none());
        // Truncated tags are never accepted.
        for cut in 1..=16 {
            assert!(xaes_open(&key, &nonce, aad, &sealed[..sealed.len() - cut]).is_none());
        }
    }
}

/// c2sp.org/XAES-256-GCM accumulated randomized test, 10 000 iterations: inputs read from
/// one SHAKE-128 stream (key[32], nonce[24], plaintext<0..255>, aad<0..255>), every
/// ciphertext absorbed by a second SHAKE-128.
#[test]
fn c2sp_accumulated_10k() {
    let mut rng = Shake128::default().finalize_xof();
    let mut first = [0u8; 16];
    let mut probe = Shake128::default().finalize_xof();
    probe.read(&mut first);
    assert_eq!(hex(&first), "7f9c2ba4e88f827d616045507605853e");
    let mut acc = Shake128::default();
    for _ in 0..10_000 {
        let mut key = [0u8; 32];
        let mut nonce = [0u8; 24];
        let mut len = [0u8; 1];
        rng.read(&mut key);
        rng.read(&mut nonce);
        rng.read(&mut len);
        let mut pt = vec![0u8; usize::from(len[0])];
        rng.read(&mut pt);
        rng.read(&mut len);
        let mut aad = vec![0u8; usize::from(len[0])];
        rng.read(&mut aad);
        let ct = xaes_seal(&key, &nonce, &aad, &pt);
        assert_eq!(xaes_open(&key, &nonce, &aad, &ct).unwrap(), pt);
        acc.update(&ct);
    }
    let mut out = [0u8; 32];
    acc.finalize_xof().read(&mut out);
    assert_eq!(
        hex(&out),
        "e6b9edf2df6cec60c8cbd864e2211b597fb69a529160cd040d56c0c210081939"
    );
}

/// Wycheproof AES-GCM, 256-bit keys, 96-bit IVs, 128-bit tags: valid cases encrypt to the
/// expected bytes and decrypt; invalid ones are refused.
#[test]
fn wycheproof_aes_256_gcm() {
    let set = TestSet::load(TestName::AesGcm).unwrap();
    let (mut valid, mut invalid) = (0, 0);
    for group in set
        .test_groups
        .iter()
        .filter(|g| g.key_size == 256 && g.nonce_size == 96)
    {
        for t in &group.tests {
            let cipher = Aes256Gcm::new_from_slice(&t.key).unwrap();
            let nonce = Nonce::try_from(&t.nonce[..]).unwrap();
            let tag_ok = t.tag.len() == 16;
            if t.result == TestResult::Valid {
                assert!(tag_ok, "tc {}", t.tc_id);
                let mut buf = t.pt.to_vec();
                let tag = cipher
                    .encrypt_inout_detached(&nonce, &t.aad, buf.as_mut_slice().into())
                    .unwrap();
                assert_eq!(buf, &t.ct[..], "tc {}", t.tc_id);
                assert_eq!(tag.as_slice(), &t.tag[..], "tc {}", t.tc_id);
                valid += 1;
            } else {
                invalid += 1;
            }
            // Decrypt as `open` does: exactly 16-byte tags, anything else refused up front.
            let opened = tag_ok && {
                let tag = Tag::try_from(&t.tag[..]).unwrap();
                let mut buf = t.ct.to_vec();
                cipher
                    .decrypt_inout_detached(&nonce, &t.aad, buf.as_mut_slice().into(), &tag)
                    .map(|()| buf[..] == t.pt[..])
                    .unwrap_or(false)
            };
            assert_eq!(
                opened,
                t.result == TestResult::Valid,
                "tc {} {:?}",
                t.tc_id,
                t.flags
            );
        }
    }
    assert!(valid > 10 && invalid > 5, "valid {valid} invalid {invalid}");
}
