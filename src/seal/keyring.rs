//! The key ring: one sealing key, any number of open-only keys, selected by kid.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::key::{Key, KeyError, Kid};
use crate::time::Timestamp;

/// One key that seals plus any number of keys that only open, each selected by its kid.
///
/// A token names its kid in clear; `open` uses exactly the key with that kid and
/// never tries the others, so rotation never costs trial decryptions and no key
/// acts as an oracle for another. Two keys with one kid are refused.
///
/// The ring is built from bytes and text only ([`Keyring::parse_keys`],
/// [`Keyring::parse_key_file`]): reading `MRTR_KEYS` or a key file is the edge's
/// job (`mrtr_server::keys::KeySource`).
///
/// # Rotation runbook
///
/// 1. Add the new key as open-only on every instance (`MRTR_KEYS=old,new`).
/// 2. Once all instances have it, make it the sealing key (`MRTR_KEYS=new,old`).
/// 3. Once no instance seals with the old key any more, wait the longest flow
///    lifetime plus clock skew (1 h and 60 s by default), then remove the old key
///    (`MRTR_KEYS=new`): its tokens then fail with `unknown_key`.
///
/// Each step can be a deploy or, without a restart, [`Sealer::try_replace_keyring`]
/// (`mrtr serve --keys-file` does it on SIGHUP), which refuses a ring that drops
/// a key whose states this sealer may still have in flight; phase 3 passes it
/// once the wait is over.
///
/// [`Sealer::try_replace_keyring`]: super::Sealer::try_replace_keyring
///
/// Why this is enough, the key file format and how to check a rotation: the
/// `mrtr` binary's rotation chapter (`mrtr_cli::manual::rotation`).
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
    /// Until when a state sealed with `keys[0]` under this ring may still open, in
    /// Unix seconds (0 while it sealed none). Shared with the sealer's record of
    /// the keys it sealed with, which outlives the ring
    /// ([`Sealer::try_replace_keyring`](super::Sealer::try_replace_keyring)).
    sealed_until: Arc<AtomicU64>,
}

impl Keyring {
    /// A ring whose only key, `sealing`, seals and opens.
    pub fn new(sealing: Key) -> Keyring {
        Keyring::from_keys(vec![sealing], false)
    }

    fn from_keys(keys: Vec<Key>, ephemeral: bool) -> Keyring {
        Keyring {
            keys,
            ephemeral,
            sealed_until: Arc::new(AtomicU64::new(0)),
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
        Keyring::from_keys(vec![Key::generate()], true)
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

    /// Records that the sealing key sealed a state that may open until `until`
    /// (Unix seconds). One relaxed load per seal; a write only when `until` grows,
    /// about once a second.
    pub(super) fn note_sealed(&self, until: u64) {
        if self.sealed_until.load(Ordering::Relaxed) < until {
            self.sealed_until.fetch_max(until, Ordering::Relaxed);
        }
    }

    /// The record [`Keyring::note_sealed`] writes, to share with the sealer.
    pub(super) fn sealed_record(&self) -> &Arc<AtomicU64> {
        &self.sealed_until
    }

    /// Makes this ring write its seals into `record` (the one an earlier ring with
    /// the same sealing key wrote into), so the record of that key goes on.
    pub(super) fn adopt_sealed_record(&mut self, record: Arc<AtomicU64>) {
        record.fetch_max(self.sealed_until.load(Ordering::Relaxed), Ordering::Relaxed);
        self.sealed_until = record;
    }
}

/// A new key ring refused because it would drop keys whose states may still be
/// in flight ([`Sealer::try_replace_keyring`](super::Sealer::try_replace_keyring)).
///
/// Names kids only (public: every token carries its kid in clear), never key bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysInUse {
    keys: Vec<KeyInUse>,
}

/// One key a new ring would drop, or hold with another secret, while states it
/// sealed may still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyInUse {
    /// The key's id.
    pub kid: Kid,
    /// Whether it is the key the ring in force seals with.
    pub sealing: bool,
    /// The last second a state it sealed may open (the latest flow deadline it
    /// sealed, plus the clock skew); `None` when it has sealed nothing yet (then
    /// it is in use only because it seals).
    pub until: Option<Timestamp>,
    /// Whether the new ring has a key with this kid but another secret (a kid is
    /// 4 bytes and can collide), rather than no key with this kid.
    pub changed: bool,
}

impl KeysInUse {
    pub(super) fn new(keys: Vec<KeyInUse>) -> KeysInUse {
        KeysInUse { keys }
    }

    /// The keys in use that the new ring would drop, in the order of the ring in
    /// force (the sealing key first). Never empty.
    pub fn keys(&self) -> &[KeyInUse] {
        &self.keys
    }

    /// Their kids, in the same order.
    pub fn kids(&self) -> Vec<Kid> {
        self.keys.iter().map(|k| k.kid).collect()
    }
}

impl fmt::Display for KeysInUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the new key ring drops ")?;
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "key {}", k.kid)?;
            if k.changed {
                f.write_str(" (its secret differs)")?;
            }
            match (k.sealing, k.until) {
                (true, _) => f.write_str(" (it seals now)")?,
                (false, Some(until)) => write!(
                    f,
                    " (its states may open until {} Unix time)",
                    until.unix_secs()
                )?,
                (false, None) => {}
            }
        }
        f.write_str(
            ": flows in flight under them would fail; keep each in the ring (open-only once \
             another key seals) until its states can no longer open",
        )
    }
}

impl std::error::Error for KeysInUse {}

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
    use std::time::Duration;

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

    // ------------------------------------------------ replacing the ring of a sealer

    use super::super::{Binding, BindingInput, Claims, Entropy, SealConfig, Sealer};
    use crate::principal::Principal;
    use std::sync::atomic::AtomicU8;

    /// Distinct bytes on every draw: these tests need no operating system.
    #[derive(Debug, Default)]
    struct Counting(AtomicU8);

    impl Entropy for Counting {
        fn fill(&self, dest: &mut [u8]) {
            let n = self.0.fetch_add(1, Ordering::Relaxed);
            dest.iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = n ^ i as u8);
        }
    }

    const T0: u64 = 1_800_000_000;

    fn at(secs: u64) -> Timestamp {
        Timestamp::from_unix_secs(T0 + secs)
    }

    fn sealer(ring: Keyring, config: SealConfig) -> Sealer {
        Sealer::with_entropy(ring, config, Arc::new(Counting::default()))
    }

    fn binding() -> Binding {
        Binding::new(&BindingInput {
            method: "tools/call",
            target: "t",
            arguments: None,
            principal: &Principal::anonymous(),
            audience: "a",
            protocol_version: "2026-07-28",
        })
    }

    /// Seals a first round at `now` and returns its token.
    fn seal_at(s: &Sealer, now: Timestamp) -> String {
        s.seal(&Claims::first_round(binding(), now, s.config(), 1u8))
            .unwrap()
    }

    fn opens(s: &Sealer, token: &str, now: Timestamp) -> bool {
        let token = super::super::UntrustedState::new(token.to_owned());
        s.open::<u8>(&token, &binding(), now).is_ok()
    }

    fn ring(sealing: u8, open_only: &[u8]) -> Keyring {
        open_only.iter().fold(Keyring::new(key(sealing)), |r, &b| {
            r.with_open_only(key(b)).unwrap()
        })
    }

    #[test]
    fn a_keyring_without_the_sealing_key_is_refused_even_before_it_seals() {
        let s = sealer(ring(1, &[]), SealConfig::default());
        let e = s.try_replace_keyring(ring(2, &[]), at(0)).unwrap_err();
        assert_eq!(
            e.keys(),
            [KeyInUse {
                kid: key(1).kid(),
                sealing: true,
                until: None,
                changed: false
            }]
        );
        assert_eq!(
            s.keyring().kids(),
            vec![key(1).kid()],
            "the ring in force is kept"
        );
        // Kept as an open-only key, it may stop sealing.
        s.try_replace_keyring(ring(2, &[1]), at(0)).unwrap();
        assert_eq!(s.keyring().sealing_kid(), key(2).kid());
    }

    #[test]
    fn a_keyring_caught_after_its_first_line_is_refused_and_states_still_open() {
        let s = sealer(ring(1, &[]), SealConfig::default());
        let token = seal_at(&s, at(0));
        // The rotation file `k2\nk1\n` read after its first line.
        let e = s.try_replace_keyring(ring(2, &[]), at(5)).unwrap_err();
        assert_eq!(e.kids(), vec![key(1).kid()]);
        assert!(e.keys()[0].sealing);
        assert_eq!(e.keys()[0].until, Some(at(3600 + 60)), "deadline + skew");
        assert!(opens(&s, &token, at(6)), "the flow goes on");
        let text = e.to_string();
        assert!(text.starts_with("the new key ring drops key "), "{text}");
        assert!(text.contains(&key(1).kid().to_string()), "{text}");
        assert!(!text.contains("AQEB") && !text.ends_with('.'), "{text}");
        // The whole file is taken, and the old state still opens.
        s.try_replace_keyring(ring(2, &[1]), at(5)).unwrap();
        assert!(opens(&s, &token, at(6)));
    }

    #[test]
    fn a_key_goes_once_its_last_flow_deadline_and_the_skew_are_past() {
        // A short flow lifetime and skew, as explicit time: the config decides.
        let config = SealConfig::default()
            .with_ttl(Duration::from_secs(50))
            .unwrap()
            .with_flow_lifetime(Duration::from_secs(100))
            .unwrap()
            .with_clock_skew(Duration::from_secs(10));
        let s = sealer(ring(1, &[]), config);
        seal_at(&s, at(0));
        // A later round of another flow, started at 20: its deadline is 120.
        let first = Claims::first_round(binding(), at(20), s.config(), 1u8);
        let t = super::super::UntrustedState::new(s.seal(&first).unwrap());
        let verified = s.open::<u8>(&t, &binding(), at(30)).unwrap();
        s.seal(&Claims::next_round(&verified, at(90), s.config(), 2u8))
            .unwrap();
        // Phase 2: key 2 seals, key 1 opens.
        s.try_replace_keyring(ring(2, &[1]), at(95)).unwrap();
        for now in [95, 110, 130] {
            let e = s.try_replace_keyring(ring(2, &[]), at(now)).unwrap_err();
            let k = e.keys()[0];
            assert_eq!(
                (k.kid, k.sealing, k.until),
                (key(1).kid(), false, Some(at(130)))
            );
        }
        // Past 120 + 10, key 1 may go; key 2 seals, so it stays.
        s.try_replace_keyring(ring(2, &[]), at(131)).unwrap();
        assert_eq!(s.keyring().kids(), vec![key(2).kid()]);
    }

    #[test]
    fn the_record_of_a_sealing_key_goes_on_across_rings() {
        let s = sealer(ring(1, &[]), SealConfig::default());
        // Phase 1 (key 2 added open-only), then key 1 seals under the new ring.
        s.try_replace_keyring(ring(1, &[2]), at(0)).unwrap();
        seal_at(&s, at(1000));
        s.try_replace_keyring(ring(2, &[1]), at(1001)).unwrap();
        // The seal at 1000 under the second ring counts: deadline 4600, skew 60.
        let e = s.try_replace_keyring(ring(2, &[]), at(4660)).unwrap_err();
        assert_eq!(e.keys()[0].until, Some(at(4660)));
        s.try_replace_keyring(ring(2, &[]), at(4661)).unwrap();
        // An open-only key it never sealed with may go at any time.
        let s = sealer(ring(1, &[3]), SealConfig::default());
        seal_at(&s, at(0));
        s.try_replace_keyring(ring(1, &[]), at(1)).unwrap();
    }

    #[test]
    fn the_same_kid_with_another_secret_does_not_open_those_states() {
        // Two secrets whose kids collide (a 4-byte kid can): found by a search over
        // 24 zero bytes followed by a big-endian counter.
        let secret = |n: u64| {
            let mut s = [0u8; 32];
            s[24..].copy_from_slice(&n.to_be_bytes());
            Key::from_secret(&s).unwrap()
        };
        let (a, b) = (secret(61_652), secret(83_741));
        assert_eq!(a.kid(), b.kid());
        assert!(a.same_secret(&secret(61_652)) && !a.same_secret(&b));
        let s = sealer(Keyring::new(a.clone()), SealConfig::default());
        let token = seal_at(&s, at(0));
        let e = s
            .try_replace_keyring(Keyring::new(b.clone()), at(1))
            .unwrap_err();
        assert!(e.keys()[0].changed, "{e}");
        assert!(e.to_string().contains("its secret differs"), "{e}");
        assert!(opens(&s, &token, at(2)));
        // The unchecked replacement does what it is told.
        s.replace_keyring(Keyring::new(b));
        assert!(!opens(&s, &token, at(2)));
    }
}
