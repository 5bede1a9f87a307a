//! The key ring of a running [`Sealer`]: read, replaced whole while seals and
//! opens go on (rotation), and the refusal of a replacement that would drop a
//! key still sealing live flows.

use super::*;

impl Sealer {
    /// The key ring in force now.
    ///
    /// A snapshot: a later [`Sealer::replace_keyring`] does not change it, and its
    /// keys stay in memory while it is held, so do not keep it longer than needed.
    pub fn keyring(&self) -> Arc<Keyring> {
        self.inner.keyring.load_full()
    }

    /// Puts `keyring` in force, atomically, for this sealer and all its clones:
    /// rotation without a restart.
    ///
    /// Seals and opens already under way finish with the ring they started with;
    /// every one that starts afterwards uses `keyring`. No operation ever sees a
    /// mix of the two. The replaced ring is dropped, and its keys zeroized, once no
    /// operation and no [`Sealer::keyring`] snapshot holds it. The per-reason
    /// counters, the configuration and the entropy are kept.
    ///
    /// Keep a key that sealed tokens still in flight in the new ring (open-only)
    /// until those tokens expire, or they fail as `unknown_key`: the three phases
    /// of the `mrtr` binary's rotation chapter (`mrtr_cli::manual::rotation`). This one does not check that:
    /// [`Sealer::try_replace_keyring`] does, and is what `mrtr serve` uses.
    ///
    /// ```
    /// use mrtr::seal::{Key, Keyring, SealConfig, Sealer};
    /// let old = Key::from_secret(&[1u8; 32]).unwrap();
    /// let new = Key::from_secret(&[2u8; 32]).unwrap();
    /// let (old_kid, new_kid) = (old.kid(), new.kid());
    /// let sealer = Sealer::new(Keyring::new(old.clone()), SealConfig::default());
    /// let clone = sealer.clone();
    /// // Phase 2 of the rotation: the new key seals, the old one still opens.
    /// sealer.replace_keyring(Keyring::new(new).with_open_only(old).unwrap());
    /// assert_eq!(clone.keyring().sealing_kid(), new_kid);
    /// assert_eq!(clone.keyring().kids(), vec![new_kid, old_kid]);
    /// ```
    pub fn replace_keyring(&self, mut keyring: Keyring) {
        let mut sealed_with = self.sealed_with();
        // A key the new ring lacks opens nothing from now on: its record goes.
        sealed_with.retain(|(kid, _)| keyring.get(*kid).is_some());
        Sealer::carry_record(&mut sealed_with, &mut keyring);
        self.inner.keyring.store(Arc::new(keyring));
    }

    /// Puts `keyring` in force as [`Sealer::replace_keyring`] does, unless that
    /// would break flows in flight: it refuses a ring that drops the key sealing
    /// now, or a key this sealer sealed with whose states may still open at `now`
    /// (their flow deadline plus the clock skew), unless the new ring holds that
    /// very key (the same kid with the same secret, as sealing or open-only key).
    /// A key that last sealed longer ago than that may go.
    ///
    /// What this sealer sealed with is recorded in memory as it seals (one
    /// relaxed atomic load per seal): a new process, or a new sealer, starts with
    /// no record but its ring's sealing key. Keys it holds only to open another
    /// instance's states are not protected: the operator's rotation keeps those
    /// (phase 3 of the rotation in `mrtr_cli::manual::rotation`).
    ///
    /// This is what `mrtr serve` runs on SIGHUP, so that a key file caught half
    /// written (the new sealing key on its first line, the old key not yet
    /// written) is refused rather than put in force.
    ///
    /// ```
    /// use mrtr::seal::{Binding, BindingInput, Claims, Key, Keyring, SealConfig, Sealer};
    /// use mrtr::principal::Principal;
    /// use mrtr::Timestamp;
    /// let (old, new) = (Key::from_secret(&[1u8; 32])?, Key::from_secret(&[2u8; 32])?);
    /// let sealer = Sealer::new(Keyring::new(old.clone()), SealConfig::default());
    /// let binding = Binding::new(&BindingInput {
    ///     method: "tools/call", target: "t", arguments: None, principal: &Principal::anonymous(),
    ///     audience: "a", protocol_version: "2026-07-28",
    /// });
    /// let now = Timestamp::from_unix_secs(1_800_000_000);
    /// sealer.seal(&Claims::first_round(binding, now, sealer.config(), ()))?;
    ///
    /// // Half a rotation file: the new key without the old one. Refused.
    /// let refused = sealer.try_replace_keyring(Keyring::new(new.clone()), now).unwrap_err();
    /// assert_eq!(refused.kids(), vec![old.kid()]);
    /// // The whole file: the new key seals, the old one still opens.
    /// let ring = Keyring::new(new.clone()).with_open_only(old.clone())?;
    /// sealer.try_replace_keyring(ring, now)?;
    /// // Once the old key's last flow deadline (1 h) and the skew (60 s) are past, it may go.
    /// let later = now.add_secs(3600 + 60 + 1);
    /// sealer.try_replace_keyring(Keyring::new(new), later)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`KeysInUse`] naming each such key (by kid); the ring in force is kept.
    pub fn try_replace_keyring(
        &self,
        mut keyring: Keyring,
        now: Timestamp,
    ) -> Result<(), KeysInUse> {
        let mut sealed_with = self.sealed_with();
        let current = self.inner.keyring.load_full();
        let now = now.unix_secs();
        let until = |kid: Kid| {
            sealed_with
                .iter()
                .find(|(k, _)| *k == kid)
                .map(|(_, r)| r.load(Ordering::Relaxed))
                .filter(|&u| u > 0)
        };
        let mut in_use = Vec::new();
        for kid in current.kids() {
            let sealing = kid == current.sealing_kid();
            let until = until(kid);
            if !sealing && until.is_none_or(|u| u < now) {
                continue;
            }
            let changed = match (keyring.get(kid), current.get(kid)) {
                (Some(new), Some(old)) if new.same_secret(old) => continue,
                (Some(_), _) => true,
                (None, _) => false,
            };
            in_use.push(KeyInUse {
                kid,
                sealing,
                until: until.map(Timestamp::from_unix_secs),
                changed,
            });
        }
        if !in_use.is_empty() {
            return Err(KeysInUse::new(in_use));
        }
        let sealing = keyring.sealing_kid();
        sealed_with.retain(|(kid, r)| *kid == sealing || r.load(Ordering::Relaxed) >= now);
        Sealer::carry_record(&mut sealed_with, &mut keyring);
        self.inner.keyring.store(Arc::new(keyring));
        Ok(())
    }

    fn sealed_with(&self) -> std::sync::MutexGuard<'_, Vec<(Kid, Arc<AtomicU64>)>> {
        // Nothing panics while it is held; a poisoned lock still holds a sound list.
        self.inner
            .sealed_with
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The new ring's sealing key goes on writing the record its kid has, or
    /// starts one.
    fn carry_record(sealed_with: &mut Vec<(Kid, Arc<AtomicU64>)>, keyring: &mut Keyring) {
        let kid = keyring.sealing_kid();
        match sealed_with.iter().find(|(k, _)| *k == kid) {
            Some((_, record)) => keyring.adopt_sealed_record(record.clone()),
            None => sealed_with.push((kid, keyring.sealed_record().clone())),
        }
    }
}
