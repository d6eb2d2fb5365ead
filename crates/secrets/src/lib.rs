//! Third-party secrets at rest (signing secrets, BYOK keys, provider credentials): sealed
//! with AES-256-GCM under a key-encryption key from configuration, so a database dump alone
//! reveals none of them. Each sealed value is bound to what it belongs to (`context`, the
//! associated data): a value copied onto another row does not open.
//!
//! Format: `[1: format version][12: random nonce][ciphertext and 16-byte tag]`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom as _, SystemRandom};

const FORMAT: u8 = 1;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretError {
    #[error("the key-encryption key must be 32 bytes, base64-encoded")]
    BadKey,
    #[error("the sealed value is damaged, of another format, or sealed for something else")]
    Unopenable,
}

/// The key-encryption key.
pub struct Kek {
    key: LessSafeKey,
    rng: SystemRandom,
}

impl std::fmt::Debug for Kek {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kek(..)")
    }
}

impl Kek {
    pub fn from_base64(text: &str) -> Result<Self, SecretError> {
        let bytes = STANDARD
            .decode(text.trim())
            .map_err(|_| SecretError::BadKey)?;
        Self::from_bytes(&bytes)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SecretError> {
        if bytes.len() != 32 {
            return Err(SecretError::BadKey);
        }
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| SecretError::BadKey)?;
        Ok(Self {
            key: LessSafeKey::new(key),
            rng: SystemRandom::new(),
        })
    }

    /// A new random key, base64-encoded (for `make dev` and tests).
    pub fn generate_base64() -> String {
        let mut bytes = [0u8; 32];
        SystemRandom::new()
            .fill(&mut bytes)
            .expect("the system random source is available");
        STANDARD.encode(bytes)
    }

    pub fn seal(&self, plaintext: &[u8], context: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng
            .fill(&mut nonce)
            .expect("the system random source is available");
        let mut body = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context),
                &mut body,
            )
            .expect("AES-GCM sealing does not fail for in-memory sizes");
        let mut out = Vec::with_capacity(1 + NONCE_LEN + body.len());
        out.push(FORMAT);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        out
    }

    pub fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, SecretError> {
        let (&format, rest) = sealed.split_first().ok_or(SecretError::Unopenable)?;
        if format != FORMAT || rest.len() < NONCE_LEN {
            return Err(SecretError::Unopenable);
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SecretError::Unopenable)?;
        let mut body = body.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context), &mut body)
            .map_err(|_| SecretError::Unopenable)?;
        Ok(plain.to_vec())
    }

    /// [`Kek::open`] for a value sealed from UTF-8 text.
    pub fn open_text(&self, sealed: &[u8], context: &[u8]) -> Result<String, SecretError> {
        String::from_utf8(self.open(sealed, context)?).map_err(|_| SecretError::Unopenable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kek() -> Kek {
        Kek::from_base64(&Kek::generate_base64()).unwrap()
    }

    #[test]
    fn seals_and_opens_with_its_context_only() {
        let kek = kek();
        let sealed = kek.seal(b"whsec_123", b"product:1");
        assert!(
            !sealed.windows(9).any(|w| w == b"whsec_123"),
            "no plaintext at rest"
        );
        assert_eq!(kek.open(&sealed, b"product:1").unwrap(), b"whsec_123");
        assert_eq!(
            kek.open(&sealed, b"product:2"),
            Err(SecretError::Unopenable)
        );
        assert_ne!(
            kek.seal(b"same", b"c"),
            kek.seal(b"same", b"c"),
            "fresh nonces"
        );
    }

    #[test]
    fn damage_another_key_and_bad_keys_are_refused() {
        let kek = kek();
        let mut sealed = kek.seal(b"secret", b"c");
        let last = sealed.len() - 1;
        sealed[last] ^= 1;
        assert_eq!(kek.open(&sealed, b"c"), Err(SecretError::Unopenable));
        let other = super::Kek::from_base64(&Kek::generate_base64()).unwrap();
        assert_eq!(
            other.open(&kek.seal(b"s", b"c"), b"c"),
            Err(SecretError::Unopenable)
        );
        assert_eq!(kek.open(&[], b"c"), Err(SecretError::Unopenable));
        assert_eq!(kek.open(&[2, 0, 0], b"c"), Err(SecretError::Unopenable));
        assert_eq!(
            Kek::from_base64("not base64!").unwrap_err(),
            SecretError::BadKey
        );
        assert_eq!(Kek::from_base64("AAAA").unwrap_err(), SecretError::BadKey);
    }
}
