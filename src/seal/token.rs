//! The token format v1: constants, the AAD, and the AEAD calls both directions share.

use xaes_256_gcm::aead::AeadInOut;
use xaes_256_gcm::{Nonce, Tag, Xaes256Gcm};

/// Version byte 0x01: XAES-256-GCM, 24-byte nonce, 16-byte tag, AAD scheme v1.
pub(super) const VERSION: u8 = 0x01;
/// Bytes of the key id.
pub(super) const KID_LEN: usize = 4;
/// Bytes of the XAES-256-GCM nonce.
pub(super) const NONCE_LEN: usize = 24;
/// Bytes of the authentication tag; no other length is ever produced or accepted.
pub(super) const TAG_LEN: usize = 16;
/// version ‖ kid ‖ nonce.
pub(super) const HEADER_LEN: usize = 1 + KID_LEN + NONCE_LEN;
/// The shortest decodable token: a header and a tag around an empty ciphertext.
pub(super) const MIN_TOKEN_BYTES: usize = HEADER_LEN + TAG_LEN;
/// Domain label, the first AAD piece.
pub(super) const AAD_LABEL: &[u8] = b"mrtr/request-state/v1";
/// Length of the AAD: count, then length-prefixed label and header.
pub(super) const AAD_LEN: usize = 8 + 8 + AAD_LABEL.len() + 8 + HEADER_LEN;

/// AAD scheme v1: `u64le(2) ‖ u64le(len(label)) ‖ label ‖ u64le(29) ‖ header`,
/// the PASETO PAE encoding of the domain label and the 29 header bytes.
pub(super) fn aad(header: &[u8; HEADER_LEN]) -> [u8; AAD_LEN] {
    const LABEL_END: usize = 16 + AAD_LABEL.len();
    let mut out = [0u8; AAD_LEN];
    out[..8].copy_from_slice(&2u64.to_le_bytes());
    out[8..16].copy_from_slice(&(AAD_LABEL.len() as u64).to_le_bytes());
    out[16..LABEL_END].copy_from_slice(AAD_LABEL);
    out[LABEL_END..LABEL_END + 8].copy_from_slice(&(HEADER_LEN as u64).to_le_bytes());
    out[LABEL_END + 8..].copy_from_slice(header);
    out
}

/// A byte buffer that is wiped when dropped: whole allocation, spare capacity included.
///
/// `Zeroizing<Vec<u8>>` wipes byte by byte with volatile writes; wiping the slices in
/// bulk (a fill plus an optimization barrier) costs a fraction of that at 4 KiB.
pub(super) struct Scratch(pub(super) Vec<u8>);

impl Drop for Scratch {
    fn drop(&mut self) {
        use zeroize::Zeroize as _;
        self.0.as_mut_slice().zeroize();
        self.0.spare_capacity_mut().zeroize();
    }
}

/// Base64url characters for `n` bytes without padding.
pub(super) const fn encoded_len(n: usize) -> usize {
    (n / 3) * 4
        + match n % 3 {
            0 => 0,
            1 => 2,
            _ => 3,
        }
}

/// Encrypts `buf[start..]` in place and appends the 16-byte tag.
pub(super) fn encrypt_append(
    cipher: &Xaes256Gcm,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    buf: &mut Vec<u8>,
    start: usize,
) -> Result<(), xaes_256_gcm::aead::Error> {
    let nonce = Nonce::from(*nonce);
    let tag = cipher.encrypt_inout_detached(&nonce, aad, buf[start..].as_mut().into())?;
    buf.extend_from_slice(tag.as_slice());
    Ok(())
}

/// Verifies and decrypts `ct_and_tag` (ciphertext ‖ exactly 16-byte tag) in place.
/// On success the first `len - 16` bytes hold the plaintext; on failure the buffer
/// content is unspecified and must not be read.
pub(super) fn decrypt_in_place(
    cipher: &Xaes256Gcm,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    ct_and_tag: &mut [u8],
) -> Result<(), xaes_256_gcm::aead::Error> {
    let Some(ct_len) = ct_and_tag.len().checked_sub(TAG_LEN) else {
        return Err(xaes_256_gcm::aead::Error);
    };
    let (ct, tag) = ct_and_tag.split_at_mut(ct_len);
    let tag = Tag::try_from(&*tag).map_err(|_| xaes_256_gcm::aead::Error)?;
    let nonce = Nonce::from(*nonce);
    cipher.decrypt_inout_detached(&nonce, aad, ct.into(), &tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use xaes_256_gcm::aead::KeyInit;

    #[test]
    fn encoded_len_matches_base64() {
        for n in 0..100 {
            let v = vec![0u8; n];
            assert_eq!(
                encoded_len(n),
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(&v)
                    .len()
            );
        }
    }

    #[test]
    fn aad_layout() {
        let mut header = [0u8; HEADER_LEN];
        header[0] = VERSION;
        header[28] = 0xee;
        let a = aad(&header);
        assert_eq!(&a[..8], &2u64.to_le_bytes());
        assert_eq!(&a[8..16], &21u64.to_le_bytes());
        assert_eq!(&a[16..37], AAD_LABEL);
        assert_eq!(&a[37..45], &29u64.to_le_bytes());
        assert_eq!(&a[45..], &header);
    }

    #[test]
    fn encrypt_decrypt_in_place() {
        let cipher = Xaes256Gcm::new(&[1u8; 32].into());
        let nonce = [2u8; NONCE_LEN];
        let mut buf = b"head".to_vec();
        buf.extend_from_slice(b"secret");
        encrypt_append(&cipher, &nonce, b"aad", &mut buf, 4).unwrap();
        assert_eq!(buf.len(), 4 + 6 + TAG_LEN);
        assert_ne!(&buf[4..10], b"secret");
        let mut body = buf[4..].to_vec();
        assert!(decrypt_in_place(&cipher, &nonce, b"aax", &mut body.clone()).is_err());
        decrypt_in_place(&cipher, &nonce, b"aad", &mut body).unwrap();
        assert_eq!(&body[..6], b"secret");
        assert!(decrypt_in_place(&cipher, &nonce, b"aad", &mut [0u8; 15]).is_err());
    }
}
