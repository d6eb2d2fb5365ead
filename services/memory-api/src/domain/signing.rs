//! Signing secrets of products: the HMAC key a source uses to sign project signals. Stored
//! sealed under the key-encryption key, bound to the product's id.

use ring::rand::{SecureRandom as _, SystemRandom};
use secrets::{Kek, SecretError};
use uuid::Uuid;

pub const PREFIX: &str = "msig_";

/// A new secret: the prefix and 256 random bits in hex.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system random source is available");
    format!("{PREFIX}{}", hex::encode(bytes))
}

fn context(product_id: Uuid) -> Vec<u8> {
    format!("product-signing-secret:{product_id}").into_bytes()
}

pub fn seal(kek: &Kek, product_id: Uuid, secret: &str) -> Vec<u8> {
    kek.seal(secret.as_bytes(), &context(product_id))
}

pub fn open(kek: &Kek, product_id: Uuid, sealed: &[u8]) -> Result<String, SecretError> {
    let plain = kek.open(sealed, &context(product_id))?;
    String::from_utf8(plain).map_err(|_| SecretError::Unopenable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_opens_only_for_its_product() {
        let kek = Kek::from_base64(&Kek::generate_base64()).unwrap();
        let secret = new_secret();
        assert!(secret.starts_with(PREFIX) && secret.len() == PREFIX.len() + 64);
        let id = Uuid::now_v7();
        let sealed = seal(&kek, id, &secret);
        assert_eq!(open(&kek, id, &sealed).unwrap(), secret);
        assert!(open(&kek, Uuid::now_v7(), &sealed).is_err());
    }
}
