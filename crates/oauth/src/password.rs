//! Sign-in passwords: argon2id in the PHC string format.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};

pub fn hash(password: &str) -> String {
    let salt = SaltString::encode_b64(&crate::random_hex().as_bytes()[..32])
        .expect("16 bytes make a valid salt");
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 with default parameters hashes any password")
        .to_string()
}

pub fn verify(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// Checked against when the account does not exist, so the answer takes as long either way.
pub fn dummy_verify(password: &str) {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let stored = DUMMY.get_or_init(|| hash("not a password anyone has"));
    let _ = verify(password, stored);
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let stored = super::hash("correct horse");
        assert!(stored.starts_with("$argon2id$"));
        assert!(super::verify("correct horse", &stored));
        assert!(!super::verify("wrong", &stored));
        assert!(!super::verify("x", "not a hash"));
    }
}
