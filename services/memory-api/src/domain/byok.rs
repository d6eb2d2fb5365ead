//! Credentials supplied by the user (BYOK): sealed under the key-encryption key, bound to
//! their row's id, and shown only as a hint.

use secrets::{Kek, SecretError};
use uuid::Uuid;

/// The hint shows at most this many of the key's last characters.
const HINT_CHARS: usize = 4;

/// What identifies a key to its owner without revealing it: `…` and its last characters, a
/// quarter of the key at most (so a short key keeps three quarters hidden), never more than
/// [`HINT_CHARS`].
pub fn key_hint(key: &str) -> String {
    let count = key.chars().count();
    let shown = (count / 4).min(HINT_CHARS);
    let tail: String = key.chars().skip(count - shown).collect();
    format!("…{tail}")
}

fn context(credential_id: Uuid) -> Vec<u8> {
    format!("byok-credential:{credential_id}").into_bytes()
}

pub fn seal(kek: &Kek, credential_id: Uuid, key: &str) -> Vec<u8> {
    kek.seal(key.as_bytes(), &context(credential_id))
}

pub fn open(kek: &Kek, credential_id: Uuid, sealed: &[u8]) -> Result<String, SecretError> {
    kek.open_text(sealed, &context(credential_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_show_a_quarter_at_most_and_never_more_than_four_characters() {
        assert_eq!(key_hint("sk-proj-abcdefghijklmnop1234"), "…1234");
        assert_eq!(key_hint("abcdefgh"), "…gh");
        assert_eq!(key_hint("abcdefghijkl"), "…jkl");
        assert_eq!(key_hint("abc"), "…");
        assert_eq!(key_hint("ééééééééé"), "…éé");
    }

    #[test]
    fn a_sealed_key_opens_only_for_its_row() {
        let kek = Kek::from_base64(&Kek::generate_base64()).unwrap();
        let (id, other) = (Uuid::now_v7(), Uuid::now_v7());
        let sealed = seal(&kek, id, "sk-secret-key-1234");
        assert_eq!(open(&kek, id, &sealed).unwrap(), "sk-secret-key-1234");
        assert_eq!(open(&kek, other, &sealed), Err(SecretError::Unopenable));
    }
}
