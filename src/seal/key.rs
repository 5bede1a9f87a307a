//! Sealing keys: 32 secret bytes, their key id, and the cipher state built once.

use std::fmt;

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use xaes_256_gcm::Xaes256Gcm;
use zeroize::Zeroizing;

/// Length of a key, in bytes.
pub(crate) const KEY_LEN: usize = 32;

/// The label whose HMAC under a key gives the key id.
const KID_LABEL: &[u8] = b"mrtr/request-state/v1/kid";
/// HKDF-SHA256 salt used when a secret longer than 32 bytes is given.
const HKDF_SALT: &[u8] = b"mrtr/request-state/v1";
/// HKDF-SHA256 info used when a secret longer than 32 bytes is given.
const HKDF_INFO: &[u8] = b"mrtr/request-state/v1/xaes-256-gcm key";
/// HKDF-SHA256 salt of the list cursors' MAC key (`super::cursor`).
const CURSOR_SALT: &[u8] = b"mrtr/list-cursor/v1";
/// HKDF-SHA256 info of the list cursors' MAC key: a label of its own, so the
/// cursor key is independent of the sealing key it comes from.
const CURSOR_INFO: &[u8] = b"mrtr/list-cursor/v1/hmac-sha256 key";

/// How to make a key: part of every "too short" and "not base64url" message.
const HOW_TO_MAKE: &str =
    "make one with `mrtr keygen` or `head -c 32 /dev/urandom | basenc --base64url`";

/// Key strings are base64url; padding is optional because `basenc --base64url` emits it.
const KEY_B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A key id: the first 4 bytes (big-endian) of HMAC-SHA256(key, `"mrtr/request-state/v1/kid"`).
///
/// It travels in clear in every token and selects exactly one key of the
/// ring. It reveals nothing about the key, and operators need not assign it.
///
/// ```
/// use mrtr::seal::Kid;
/// assert_eq!(Kid(0x0a0b0c0d).to_string(), "0a0b0c0d");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kid(pub u32);

impl fmt::Debug for Kid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kid({:08x})", self.0)
    }
}

impl Kid {
    /// The kid as it appears in the token header.
    pub const fn to_be_bytes(self) -> [u8; 4] {
        self.0.to_be_bytes()
    }

    /// The kid from the 4 header bytes.
    pub const fn from_be_bytes(b: [u8; 4]) -> Kid {
        Kid(u32::from_be_bytes(b))
    }
}

impl fmt::Display for Kid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

/// A problem with key material or its configuration. Never shows secret bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The secret is shorter than 32 bytes.
    #[error("secret is {len} bytes but at least 32 random bytes are required; {HOW_TO_MAKE}")]
    TooShort {
        /// Length of the refused secret, in bytes.
        len: usize,
    },
    /// A key string is not base64url.
    #[error("key is not valid base64url; {HOW_TO_MAKE}")]
    NotBase64Url,
    /// A key list (environment variable or file) holds no key.
    #[error("no key found in the key list; {HOW_TO_MAKE}")]
    NoKeys,
    /// Two keys of one ring have the same key id (usually the same key twice).
    #[error("duplicate key id {kid} in the key ring (the same key given twice?)")]
    DuplicateKid {
        /// The repeated key id (public: it is in every token).
        kid: Kid,
    },
    /// One entry of a key list is bad; `entry` counts from 1.
    #[error("key entry {entry}: {source}")]
    Entry {
        /// Position of the entry in the list, from 1.
        entry: usize,
        /// What is wrong with it.
        #[source]
        source: Box<KeyError>,
    },
}

/// A 32-byte XAES-256-GCM key with its key id and its cipher state.
///
/// The cipher state (AES-256 key schedule and the XAES subkey) is built once,
/// here, and never per seal or open. The secret is zeroized on drop (the
/// cipher's state too, through the `zeroize` feature of the AES crates), and
/// `Debug` shows only the key id. There is no `PartialEq`: compare kids.
///
/// ```
/// use mrtr::seal::Key;
/// let key = Key::from_secret(&[7u8; 32]).unwrap();
/// assert_eq!(format!("{key:?}"), format!("Key {{ kid: {} }}", key.kid()));
/// assert!(Key::from_secret(&[7u8; 16]).is_err());
/// ```
#[derive(Clone)]
pub struct Key {
    kid: Kid,
    /// The whole HMAC whose first 4 bytes are the kid: tells two keys with one kid
    /// apart ([`Key::same_secret`]) without keeping the secret. Reveals nothing
    /// about the key, as the kid does not.
    check: [u8; 32],
    cipher: Xaes256Gcm,
    /// The HMAC-SHA256 key of the list cursors (`super::cursor`), derived from
    /// the secret with HKDF-SHA256 under labels of its own; wiped on drop.
    cursor: Zeroizing<[u8; KEY_LEN]>,
}

impl Key {
    /// A fresh random key from the operating system's random source.
    ///
    /// Available with the `os-rng` feature (on by default). Without it, make the
    /// 32 secret bytes with the host's CSPRNG and use [`Key::from_secret`].
    ///
    /// # Panics
    ///
    /// If the operating system cannot supply randomness (a broken host).
    #[cfg(feature = "os-rng")]
    pub fn generate() -> Key {
        let secret = os_random_secret();
        Key::from_exact(&secret)
    }

    /// A key from secret bytes.
    ///
    /// Exactly 32 bytes are used as they are. A longer secret is condensed with
    /// HKDF-SHA256 (salt `"mrtr/request-state/v1"`, info
    /// `"mrtr/request-state/v1/xaes-256-gcm key"`), so a 64-byte secret from a
    /// secret manager works. Never use a password: the secret must be random.
    ///
    /// # Errors
    ///
    /// [`KeyError::TooShort`] when `secret` has fewer than 32 bytes; the
    /// message says how to make a proper one.
    pub fn from_secret(secret: &[u8]) -> Result<Key, KeyError> {
        match secret.len() {
            n if n < KEY_LEN => Err(KeyError::TooShort { len: n }),
            KEY_LEN => {
                let mut exact = Zeroizing::new([0u8; KEY_LEN]);
                exact.copy_from_slice(secret);
                Ok(Key::from_exact(&exact))
            }
            _ => {
                let hk = hkdf::Hkdf::<Sha256>::new(Some(HKDF_SALT), secret);
                let mut okm = Zeroizing::new([0u8; KEY_LEN]);
                hk.expand(HKDF_INFO, okm.as_mut_slice())
                    .expect("32 bytes is a valid HKDF-SHA256 output length");
                Ok(Key::from_exact(&okm))
            }
        }
    }

    /// A key from a base64url string (padding optional; surrounding whitespace ignored),
    /// as printed by [`generate_key_string`] or `mrtr keygen`.
    ///
    /// # Errors
    ///
    /// [`KeyError::NotBase64Url`] if the string does not decode (the input is never
    /// echoed), or [`KeyError::TooShort`] if it decodes to fewer than 32 bytes.
    pub fn from_base64url(s: &str) -> Result<Key, KeyError> {
        let bytes = Zeroizing::new(
            KEY_B64
                .decode(s.trim().as_bytes())
                .map_err(|_| KeyError::NotBase64Url)?,
        );
        Key::from_secret(&bytes)
    }

    /// This key's id.
    pub fn kid(&self) -> Kid {
        self.kid
    }

    pub(super) fn cipher(&self) -> &Xaes256Gcm {
        &self.cipher
    }

    /// The HMAC-SHA256 key of the list cursors: HKDF-SHA256 of the 32 key bytes
    /// (salt `"mrtr/list-cursor/v1"`, info `"mrtr/list-cursor/v1/hmac-sha256 key"`).
    pub(super) fn cursor_key(&self) -> &[u8; KEY_LEN] {
        &self.cursor
    }

    /// Whether `other` is this very key (the same secret), not merely one with the
    /// same kid: a 4-byte kid can collide. Compares the whole 32-byte HMAC the kid
    /// is cut from, in constant time.
    pub(super) fn same_secret(&self, other: &Key) -> bool {
        let diff = self
            .check
            .iter()
            .zip(other.check.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }

    fn from_exact(secret: &[u8; KEY_LEN]) -> Key {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC accepts any key length");
        mac.update(KID_LABEL);
        let tag = mac.finalize().into_bytes();
        let kid = Kid::from_be_bytes([tag[0], tag[1], tag[2], tag[3]]);
        let mut check = [0u8; 32];
        check.copy_from_slice(&tag);
        let cipher = <Xaes256Gcm as KeyInit>::new(secret.into());
        let mut cursor = Zeroizing::new([0u8; KEY_LEN]);
        hkdf::Hkdf::<Sha256>::new(Some(CURSOR_SALT), secret)
            .expand(CURSOR_INFO, cursor.as_mut_slice())
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        Key {
            kid,
            check,
            cipher,
            cursor,
        }
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key {{ kid: {} }}", self.kid)
    }
}

/// 32 bytes from the operating system (one system call: keys are rare).
#[cfg(feature = "os-rng")]
fn os_random_secret() -> Zeroizing<[u8; KEY_LEN]> {
    use rand::TryRng as _;
    let mut secret = Zeroizing::new([0u8; KEY_LEN]);
    rand::rngs::SysRng
        .try_fill_bytes(secret.as_mut_slice())
        .expect("the operating system random source failed");
    secret
}

/// A fresh random secret, base64url without padding (43 characters), for `MRTR_KEYS`.
///
/// ```
/// use mrtr::seal::{generate_key_string, Key};
/// let s = generate_key_string();
/// assert_eq!(s.len(), 43);
/// assert!(Key::from_base64url(&s).is_ok());
/// ```
///
/// Available with the `os-rng` feature (on by default).
///
/// # Panics
///
/// If the operating system cannot supply randomness.
#[cfg(feature = "os-rng")]
pub fn generate_key_string() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(os_random_secret().as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kid_is_hmac_prefix_and_stable() {
        // HMAC-SHA256(key = 32 zero bytes, "mrtr/request-state/v1/kid"), first 4 bytes.
        let a = Key::from_secret(&[0u8; 32]).unwrap();
        let b = Key::from_secret(&[0u8; 32]).unwrap();
        assert_eq!(a.kid(), b.kid());
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&[0u8; 32]).unwrap();
        mac.update(b"mrtr/request-state/v1/kid");
        let t = mac.finalize().into_bytes();
        assert_eq!(a.kid().to_be_bytes(), [t[0], t[1], t[2], t[3]]);
        assert_ne!(a.kid(), Key::from_secret(&[1u8; 32]).unwrap().kid());
    }

    #[test]
    fn short_secret_refused_with_advice() {
        let e = Key::from_secret(&[1u8; 31]).unwrap_err();
        assert!(matches!(e, KeyError::TooShort { len: 31 }));
        let msg = e.to_string();
        assert!(msg.contains("mrtr keygen"), "{msg}");
        assert!(msg.contains("basenc --base64url"), "{msg}");
    }

    #[test]
    fn long_secret_is_derived_not_truncated() {
        let mut long = [9u8; 64];
        let derived = Key::from_secret(&long).unwrap();
        let truncated = Key::from_secret(&long[..32]).unwrap();
        assert_ne!(derived.kid(), truncated.kid());
        long[63] = 0;
        assert_ne!(Key::from_secret(&long).unwrap().kid(), derived.kid());
    }

    #[test]
    #[cfg(feature = "os-rng")]
    fn base64url_keys() {
        let s = generate_key_string();
        assert_eq!(s.len(), 43);
        assert!(!s.contains('='));
        let k1 = Key::from_base64url(&s).unwrap();
        let k2 = Key::from_base64url(&format!("  {s}=\n")).unwrap();
        assert_eq!(k1.kid(), k2.kid());
        let e = Key::from_base64url("not base64 !!secret!!").unwrap_err();
        assert!(matches!(e, KeyError::NotBase64Url));
        assert!(!e.to_string().contains("secret!!"));
        assert!(matches!(
            Key::from_base64url("AAAA").unwrap_err(),
            KeyError::TooShort { len: 3 }
        ));
    }

    #[test]
    #[cfg(feature = "os-rng")]
    fn generated_keys_differ() {
        assert_ne!(Key::generate().kid(), Key::generate().kid());
        assert_ne!(generate_key_string(), generate_key_string());
    }

    #[test]
    fn debug_is_redacted() {
        let k = Key::from_secret(&[0xabu8; 32]).unwrap();
        let d = format!("{k:?} {k:#?}");
        assert!(
            !d.contains("ab, ab") && !d.contains("abab") && !d.contains("171"),
            "{d}"
        );
        assert!(d.starts_with("Key { kid: "));
    }
}
