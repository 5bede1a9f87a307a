//! List cursors: the `nextCursor` of a paginated list (MCP 2026-07-28
//! §Pagination), authenticated so a client cannot forge one.
//!
//! A cursor names the position of the next page's first item. It is not secret
//! (the client can count the items it has seen), so it is MACed, not encrypted:
//! HMAC-SHA256 under a key of the ring derived for cursors alone
//! ([`Key::cursor_key`](super::key::Key)), over the cursor's bytes and what it
//! is bound to, which it does not carry ("implicit assertions"):
//!
//! - the list method (`tools/list`, ...), so a cursor of one list is refused by
//!   another;
//! - the principal (its binding component, [`principal_component`]), so one
//!   caller's cursor is refused for another;
//! - the audience, so a cursor does not move between services sharing keys;
//! - a digest of the listing (its keys in order, [`ListingDigest`]), so a
//!   cursor issued for one listing is refused once the listing changed, rather
//!   than skipping or repeating items.
//!
//! A cursor does not expire: it opens as long as its key is in the ring and the
//! listing, principal and audience are the same. Replaying one reads the same
//! page again, which the client could do anyway.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::Sealer;
use super::binding::{pae_count, pae_len, principal_component};
use super::key::Kid;
use crate::principal::Principal;

// Cursor format v1. Integers big-endian.
//
//   offset  len  field
//   0       1    version = 0x01 (HMAC-SHA256 truncated to 16 bytes, MAC input v1)
//   1       4    kid of the key whose cursor key made the tag
//   5       8    position (u64): index of the next page's first item
//   13      16   tag: the first 16 bytes of HMAC-SHA256(cursor key, M)
//
// then base64url without padding (39 characters); only that length and the
// canonical encoding are read.
//
// M = PAE("mrtr/list-cursor/v1", bytes 0..13, method, principal component,
//         audience, listing digest), with PAE as in `Binding::new`.

/// The version byte of cursor format v1.
const VERSION: u8 = 0x01;
/// version ‖ kid ‖ position.
const HEADER_LEN: usize = 1 + 4 + 8;
/// Bytes of the truncated tag.
const TAG_LEN: usize = 16;
/// Bytes of a cursor.
const CURSOR_BYTES: usize = HEADER_LEN + TAG_LEN;
/// Characters of a cursor (base64url, no padding): the only length read.
pub(crate) const CURSOR_LEN: usize = (CURSOR_BYTES * 8).div_ceil(6);
/// Domain label, the first piece of the MAC input.
const MAC_LABEL: &[u8] = b"mrtr/list-cursor/v1";
/// Domain label of the listing digest.
const LISTING_LABEL: &[u8] = b"mrtr/list-cursor/v1/listing";

/// SHA-256 of a listing's keys (tool and prompt names, resource URIs) in list
/// order: PAE("mrtr/list-cursor/v1/listing", key₁, …, keyₙ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListingDigest([u8; 32]);

impl ListingDigest {
    /// The digest of the listing whose keys, in order, are `keys`.
    pub(crate) fn of<'k>(keys: impl ExactSizeIterator<Item = &'k str>) -> Self {
        let mut h = Sha256::new();
        h.update(pae_count(1 + keys.len()));
        h.update(pae_len(LISTING_LABEL.len()));
        h.update(LISTING_LABEL);
        for key in keys {
            h.update(pae_len(key.len()));
            h.update(key.as_bytes());
        }
        Self(h.finalize().into())
    }
}

/// What a cursor is bound to; none of it travels in the cursor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CursorScope<'a> {
    /// The list method.
    pub(crate) method: &'a str,
    /// The caller.
    pub(crate) principal: &'a Principal,
    /// The service's audience.
    pub(crate) audience: &'a str,
    /// The listing the positions index.
    pub(crate) listing: ListingDigest,
}

/// Why a cursor was refused, for the private log only: the client is told
/// `invalid cursor` whatever the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CursorRejected {
    /// Not 39 characters of canonical base64url.
    Malformed,
    /// A version byte this build does not know.
    UnknownVersion,
    /// A kid that names no key of the ring (a retired key, or forged).
    UnknownKey,
    /// The tag does not match: forged, tampered, or bound to another method,
    /// principal, audience or listing.
    Tag,
}

impl CursorRejected {
    /// The reason as a log label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::UnknownVersion => "unknown_version",
            Self::UnknownKey => "unknown_key",
            Self::Tag => "tag",
        }
    }
}

/// The MAC of `header` in `scope`, keyed for cursors by the key `cursor_key`.
fn mac(cursor_key: &[u8], header: &[u8; HEADER_LEN], scope: &CursorScope<'_>) -> Hmac<Sha256> {
    let mut m =
        <Hmac<Sha256> as KeyInit>::new_from_slice(cursor_key).expect("HMAC accepts any key length");
    let principal = principal_component(scope.principal);
    let parts: [&[u8]; 6] = [
        MAC_LABEL,
        header,
        scope.method.as_bytes(),
        &principal,
        scope.audience.as_bytes(),
        &scope.listing.0,
    ];
    m.update(&pae_count(parts.len()));
    for part in parts {
        m.update(&pae_len(part.len()));
        m.update(part);
    }
    m
}

impl Sealer {
    /// A cursor for `position` in `scope`, under the ring's sealing key.
    pub(crate) fn issue_cursor(&self, scope: &CursorScope<'_>, position: u64) -> String {
        // One load: the kid and the key come from the same ring.
        let ring = self.inner.keyring.load();
        let key = ring.sealing();
        let mut bytes = [0u8; CURSOR_BYTES];
        bytes[0] = VERSION;
        bytes[1..5].copy_from_slice(&key.kid().to_be_bytes());
        bytes[5..HEADER_LEN].copy_from_slice(&position.to_be_bytes());
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&bytes[..HEADER_LEN]);
        let tag = mac(key.cursor_key(), &header, scope)
            .finalize()
            .into_bytes();
        bytes[HEADER_LEN..].copy_from_slice(&tag[..TAG_LEN]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a cursor names, if this ring made it for `scope`.
    ///
    /// Checks, in order: the length (before any decoding), canonical base64url,
    /// the version, the kid (exactly one key), then the tag in constant time.
    ///
    /// # Errors
    ///
    /// [`CursorRejected`] with the reason, for the private log; it is logged here
    /// (never the cursor).
    pub(crate) fn open_cursor(
        &self,
        scope: &CursorScope<'_>,
        cursor: &str,
    ) -> Result<u64, CursorRejected> {
        self.open_cursor_checked(scope, cursor).inspect_err(|r| {
            tracing::debug!(target: "mrtr::seal", reason = r.as_str(), method = scope.method, "list cursor rejected");
        })
    }

    fn open_cursor_checked(
        &self,
        scope: &CursorScope<'_>,
        cursor: &str,
    ) -> Result<u64, CursorRejected> {
        if cursor.len() != CURSOR_LEN {
            return Err(CursorRejected::Malformed);
        }
        let mut bytes = [0u8; CURSOR_BYTES];
        match URL_SAFE_NO_PAD.decode_slice(cursor.as_bytes(), &mut bytes) {
            Ok(CURSOR_BYTES) => {}
            _ => return Err(CursorRejected::Malformed),
        }
        if bytes[0] != VERSION {
            return Err(CursorRejected::UnknownVersion);
        }
        let kid = Kid::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        let ring = self.inner.keyring.load();
        let key = ring.get(kid).ok_or(CursorRejected::UnknownKey)?;
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&bytes[..HEADER_LEN]);
        mac(key.cursor_key(), &header, scope)
            .verify_truncated_left(&bytes[HEADER_LEN..])
            .map_err(|_| CursorRejected::Tag)?;
        let mut position = [0u8; 8];
        position.copy_from_slice(&bytes[5..HEADER_LEN]);
        Ok(u64::from_be_bytes(position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::{Key, Keyring, SealConfig};

    fn sealer(secret: u8) -> Sealer {
        Sealer::new(
            Keyring::new(Key::from_secret(&[secret; 32]).unwrap()),
            SealConfig::default(),
        )
    }

    fn scope<'a>(method: &'a str, principal: &'a Principal, keys: &[&str]) -> CursorScope<'a> {
        CursorScope {
            method,
            principal,
            audience: "aud",
            listing: ListingDigest::of(keys.iter().copied()),
        }
    }

    #[test]
    fn a_cursor_opens_in_its_scope_only() {
        let s = sealer(1);
        let anon = Principal::anonymous();
        let alice = Principal::subject("alice");
        let here = scope("tools/list", &anon, &["a", "b", "c"]);
        let c = s.issue_cursor(&here, 2);
        assert_eq!(c.len(), CURSOR_LEN);
        assert_eq!(s.open_cursor(&here, &c), Ok(2));
        for other in [
            scope("prompts/list", &anon, &["a", "b", "c"]),
            scope("tools/list", &alice, &["a", "b", "c"]),
            scope("tools/list", &anon, &["a", "b"]),
            scope("tools/list", &anon, &["a", "c", "b"]),
            CursorScope {
                audience: "other",
                ..here
            },
        ] {
            assert_eq!(s.open_cursor(&other, &c), Err(CursorRejected::Tag));
        }
        // Another ring's key: unknown kid; the same key in another sealer: opens.
        assert_eq!(
            sealer(2).open_cursor(&here, &c),
            Err(CursorRejected::UnknownKey)
        );
        assert_eq!(sealer(1).open_cursor(&here, &c), Ok(2));
    }

    #[test]
    fn every_changed_byte_is_refused() {
        let s = sealer(1);
        let anon = Principal::anonymous();
        let here = scope("tools/list", &anon, &["a", "b"]);
        let mut bytes = URL_SAFE_NO_PAD.decode(s.issue_cursor(&here, 1)).unwrap();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                bytes[i] ^= 1 << bit;
                let forged = URL_SAFE_NO_PAD.encode(&bytes);
                assert!(s.open_cursor(&here, &forged).is_err(), "byte {i} bit {bit}");
                bytes[i] ^= 1 << bit;
            }
        }
        assert_eq!(s.open_cursor(&here, &URL_SAFE_NO_PAD.encode(&bytes)), Ok(1));
    }

    #[test]
    fn garbage_and_wrong_lengths_are_malformed() {
        let s = sealer(1);
        let anon = Principal::anonymous();
        let here = scope("tools/list", &anon, &["a"]);
        let good = s.issue_cursor(&here, 0);
        for bad in [
            String::new(),
            "x".into(),
            "!".repeat(CURSOR_LEN),
            format!("{good}A"),
            good[..CURSOR_LEN - 1].to_owned(),
            "A".repeat(1 << 20),
        ] {
            assert_eq!(s.open_cursor(&here, &bad), Err(CursorRejected::Malformed));
        }
        // The last character carries 2 spare bits: a non-canonical spelling is refused.
        let mut noncanonical = good.clone().into_bytes();
        let last = noncanonical.last_mut().unwrap();
        *last = if *last == b'A' { b'B' } else { b'A' };
        let noncanonical = String::from_utf8(noncanonical).unwrap();
        assert!(s.open_cursor(&here, &noncanonical).is_err());
    }

    #[test]
    fn a_rotated_ring_opens_the_cursors_of_its_open_only_keys() {
        let old = Key::from_secret(&[1; 32]).unwrap();
        let new = Key::from_secret(&[2; 32]).unwrap();
        let before = sealer(1);
        let anon = Principal::anonymous();
        let here = scope("resources/list", &anon, &["file:///a", "file:///b"]);
        let c = before.issue_cursor(&here, 1);
        let after = Sealer::new(
            Keyring::new(new).with_open_only(old).unwrap(),
            SealConfig::default(),
        );
        assert_eq!(after.open_cursor(&here, &c), Ok(1));
        assert_ne!(after.issue_cursor(&here, 1), c);
    }

    #[test]
    fn the_cursor_key_is_not_the_sealing_key() {
        // HKDF-SHA256(key, salt "mrtr/list-cursor/v1", info "mrtr/list-cursor/v1/hmac-sha256 key").
        let key = Key::from_secret(&[0u8; 32]).unwrap();
        let mut okm = [0u8; 32];
        hkdf::Hkdf::<Sha256>::new(Some(b"mrtr/list-cursor/v1"), &[0u8; 32])
            .expand(b"mrtr/list-cursor/v1/hmac-sha256 key", &mut okm)
            .unwrap();
        assert_eq!(key.cursor_key(), &okm);
        assert_ne!(key.cursor_key(), &[0u8; 32]);
    }
}
