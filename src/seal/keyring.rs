//! The key ring: one sealing key, any number of open-only keys, selected by kid.

use std::fmt;

use super::key::{Key, KeyError, Kid};

/// One key that seals plus any number of keys that only open, each selected by its kid.
///
/// A token names its kid in clear; `open` uses exactly the key with that kid and
/// never tries the others, so rotation never costs trial decryptions and no key
/// acts as an oracle for another. Two keys with one kid are refused.
///
/// The ring is built from bytes and text only ([`Keyring::parse_keys`],
/// [`Keyring::parse_key_file`]): reading `MRTR_KEYS` or a key file is the edge's
/// job (with the `server` feature, `mrtr::server::KeySource`).
///
/// # Rotation runbook
///
/// 1. Add the new key as open-only on every instance (`MRTR_KEYS=old,new`).
/// 2. Once all instances have it, make it the sealing key (`MRTR_KEYS=new,old`).
/// 3. Once no instance seals with the old key any more, wait the longest flow
///    lifetime plus clock skew (1 h and 60 s by default), then remove the old key
///    (`MRTR_KEYS=new`): its tokens then fail with `unknown_key`.
///
/// Each step can be a deploy or, without a restart, [`Sealer::replace_keyring`]
/// (`mrtr serve --keys-file` does it on SIGHUP).
///
/// [`Sealer::replace_keyring`]: super::Sealer::replace_keyring
///
/// Why this is enough, the key file format and how to check a rotation:
/// [`crate::manual::rotation`].
///
/// ```
/// use mrtr::seal::{Key, Keyring};
/// let old = Key::from_secret(&[1u8; 32]).unwrap();
/// let new = Key::from_secret(&[2u8; 32]).unwrap();
/// let (old_kid, new_kid) = (old.kid(), new.kid());
/// let ring = Keyring::new(new).with_open_only(old).unwrap();
/// assert_eq!(ring.sealing_kid(), new_kid);
/// assert_eq!(ring.kids(), vec![new_kid, old_kid]);
/// ```
#[derive(Clone)]
pub struct Keyring {
    /// `keys[0]` seals; all open.
    keys: Vec<Key>,
    ephemeral: bool,
}

impl Keyring {
    /// A ring whose only key, `sealing`, seals and opens.
    pub fn new(sealing: Key) -> Keyring {
        Keyring {
            keys: vec![sealing],
            ephemeral: false,
        }
    }

    /// Adds a key that opens tokens but never seals.
    ///
    /// # Errors
    ///
    /// [`KeyError::DuplicateKid`] if a key with the same kid is already in the ring.
    pub fn with_open_only(mut self, key: Key) -> Result<Keyring, KeyError> {
        if self.get(key.kid()).is_some() {
            return Err(KeyError::DuplicateKid { kid: key.kid() });
        }
        self.keys.push(key);
        Ok(self)
    }

    /// A ring with one fresh random key from the operating system, for a single process.
    ///
    /// Tokens do not survive a restart and other instances cannot open them:
    /// use `MRTR_KEYS` or a key file for fleets. Available with the `os-rng`
    /// feature (on by default).
    #[cfg(feature = "os-rng")]
    pub fn ephemeral() -> Keyring {
        Keyring {
            keys: vec![Key::generate()],
            ephemeral: true,
        }
    }

    /// Whether this ring came from [`Keyring::ephemeral`].
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// A ring from comma-separated base64url secrets; the first seals, the rest only open.
    ///
    /// Whitespace around entries is ignored, and so are empty entries.
    ///
    /// ```
    /// use mrtr::seal::{generate_key_string, Keyring};
    /// let (a, b) = (generate_key_string(), generate_key_string());
    /// let ring = Keyring::parse_keys(&format!("{a}, {b}")).unwrap();
    /// assert_eq!(ring.kids().len(), 2);
    /// assert!(Keyring::parse_keys(" , ").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`KeyError::NoKeys`] when no entry is present; [`KeyError::Entry`] naming the
    /// position (from 1) of an entry that is not a valid key, or that repeats a kid.
    pub fn parse_keys(list: &str) -> Result<Keyring, KeyError> {
        Keyring::from_entries(list.split(',').map(str::trim).filter(|e| !e.is_empty()))
    }

    /// A ring from the text of a key file: the format of [`Keyring::parse_keys`],
    /// where newlines separate entries as commas do and `#` starts a comment that
    /// runs to the end of the line.
    ///
    /// Pure parsing: the caller reads the file (and should wipe the text after,
    /// e.g. with `zeroize::Zeroizing`).
    ///
    /// ```
    /// use mrtr::seal::{Key, Keyring};
    /// let text = "# sealing key first\nAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE  # k1\n";
    /// let ring = Keyring::parse_key_file(text).unwrap();
    /// assert_eq!(ring.sealing_kid(), Key::from_secret(&[1u8; 32]).unwrap().kid());
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Keyring::parse_keys`].
    pub fn parse_key_file(text: &str) -> Result<Keyring, KeyError> {
        let entries = text
            .lines()
            .map(|line| line.split_once('#').map_or(line, |(before, _)| before))
            .flat_map(|line| line.split(','))
            .map(str::trim)
            .filter(|e| !e.is_empty());
        Keyring::from_entries(entries)
    }

    fn from_entries<'a>(entries: impl Iterator<Item = &'a str>) -> Result<Keyring, KeyError> {
        let mut ring: Option<Keyring> = None;
        for (i, entry) in entries.enumerate() {
            let wrap = |e: KeyError| KeyError::Entry {
                entry: i + 1,
                source: Box::new(e),
            };
            let key = Key::from_base64url(entry).map_err(wrap)?;
            ring = Some(match ring {
                None => Keyring::new(key),
                Some(r) => r.with_open_only(key).map_err(wrap)?,
            });
        }
        ring.ok_or(KeyError::NoKeys)
    }

    /// The kid of the key that seals.
    pub fn sealing_kid(&self) -> Kid {
        self.keys[0].kid()
    }

    /// Every kid in the ring, the sealing one first.
    pub fn kids(&self) -> Vec<Kid> {
        self.keys.iter().map(Key::kid).collect()
    }

    pub(super) fn sealing(&self) -> &Key {
        &self.keys[0]
    }

    /// The one key with this kid. Linear: rings hold a handful of keys.
    pub(super) fn get(&self, kid: Kid) -> Option<&Key> {
        self.keys.iter().find(|k| k.kid() == kid)
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("sealing", &self.sealing_kid())
            .field(
                "open_only",
                &self.keys[1..].iter().map(Key::kid).collect::<Vec<_>>(),
            )
            .field("ephemeral", &self.ephemeral)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn key(b: u8) -> Key {
        Key::from_secret(&[b; 32]).unwrap()
    }

    /// The key string of `key(b)`: these tests need no randomness.
    fn key_string(b: u8) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([b; 32])
    }

    #[test]
    fn duplicate_kid_refused() {
        let e = Keyring::new(key(1)).with_open_only(key(1)).unwrap_err();
        assert!(matches!(e, KeyError::DuplicateKid { .. }));
        let ring = Keyring::new(key(1)).with_open_only(key(2)).unwrap();
        assert!(ring.with_open_only(key(2)).is_err());
    }

    #[test]
    fn kid_selects_one_key() {
        let ring = Keyring::new(key(1)).with_open_only(key(2)).unwrap();
        assert_eq!(ring.get(key(2).kid()).unwrap().kid(), key(2).kid());
        assert!(ring.get(key(3).kid()).is_none());
        assert_eq!(ring.sealing().kid(), key(1).kid());
        assert!(!ring.is_ephemeral());
    }

    #[test]
    #[cfg(feature = "os-rng")]
    fn ephemeral_rings_are_flagged_and_fresh() {
        let (a, b) = (Keyring::ephemeral(), Keyring::ephemeral());
        assert!(a.is_ephemeral());
        assert_ne!(a.sealing_kid(), b.sealing_kid());
    }

    #[test]
    fn parse_list() {
        let (a, b, c) = (key_string(1), key_string(2), key_string(3));
        let ring = Keyring::parse_keys(&format!(" {a} ,{b},\n{c} ,")).unwrap();
        let want: Vec<Kid> = [&a, &b, &c]
            .iter()
            .map(|s| Key::from_base64url(s).unwrap().kid())
            .collect();
        assert_eq!(ring.kids(), want);
        assert_eq!(ring.sealing_kid(), want[0]);
        assert!(matches!(Keyring::parse_keys(""), Err(KeyError::NoKeys)));
        let e = Keyring::parse_keys(&format!("{a},short")).unwrap_err();
        assert!(matches!(e, KeyError::Entry { entry: 2, .. }), "{e:?}");
        assert!(!e.to_string().contains("short"));
        let e = Keyring::parse_keys(&format!("{a},{a}")).unwrap_err();
        assert!(e.to_string().contains("duplicate key id"), "{e}");
    }

    #[test]
    fn parse_file_with_comments() {
        let (a, b, c) = (key_string(1), key_string(2), key_string(3));
        let text = format!("# mrtr keys\n{a}   # sealing\n\n{b}, {c}\n# old: none\n");
        let ring = Keyring::parse_key_file(&text).unwrap();
        assert_eq!(ring.kids().len(), 3);
        assert_eq!(ring.sealing_kid(), Key::from_base64url(&a).unwrap().kid());
        assert!(matches!(
            Keyring::parse_key_file("# nothing\n"),
            Err(KeyError::NoKeys)
        ));
    }

    #[test]
    fn debug_shows_kids_only() {
        let ring = Keyring::new(key(0xab)).with_open_only(key(0xcd)).unwrap();
        let d = format!("{ring:?}");
        assert!(d.contains(&key(0xab).kid().to_string()));
        assert!(!d.contains("171") && !d.contains("abab"));
    }
}
