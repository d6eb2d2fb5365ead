//! How each provider authenticates its event webhooks, checked in constant time:
//! Postmark with HTTP basic auth, Mailgun with an HMAC-SHA256 over timestamp and token,
//! SendGrid with ECDSA P-256 over timestamp and raw body. Freshness is the caller's (it owns
//! the clock); each function says only whether the credential matches.

use base64::Engine as _;
use ring::{hmac, rand, signature};

/// Why a delivery is not authentic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejected(pub String);

fn rejected(why: &str) -> Rejected {
    Rejected(why.to_owned())
}

/// Constant-time equality (both sides are MACed under a one-off key, the tags compared by
/// `hmac::verify`).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let Ok(key) = hmac::Key::generate(hmac::HMAC_SHA256, &rand::SystemRandom::new()) else {
        return false;
    };
    let tag = hmac::sign(&key, a);
    hmac::verify(&key, b, tag.as_ref()).is_ok()
}

/// `Authorization: Basic base64(user:password)` whose password is `secret` (the user name is
/// not checked: Postmark's webhook URL carries both, the secret is the credential).
pub fn verify_basic_auth(authorization: Option<&str>, secret: &str) -> Result<(), Rejected> {
    let encoded = authorization
        .and_then(|v| {
            v.strip_prefix("Basic ")
                .or_else(|| v.strip_prefix("basic "))
        })
        .ok_or_else(|| rejected("no basic authorization"))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| rejected("basic authorization is not base64"))?;
    let password = decoded
        .iter()
        .position(|b| *b == b':')
        .map(|i| &decoded[i + 1..])
        .ok_or_else(|| rejected("basic authorization without a password"))?;
    if constant_time_eq(password, secret.as_bytes()) {
        Ok(())
    } else {
        Err(rejected("wrong credentials"))
    }
}

/// Hex SHA-256 of a body: the receipt id of a provider whose events carry none of their own.
pub fn digest(body: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, body)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Mailgun: `signature` is hex HMAC-SHA256(signing key, timestamp ‖ token).
pub fn verify_mailgun(
    signing_key: &str,
    timestamp: &str,
    token: &str,
    signature: &str,
) -> Result<(), Rejected> {
    let tag = hex_decode(signature).ok_or_else(|| rejected("the signature is not hex"))?;
    let key = hmac::Key::new(hmac::HMAC_SHA256, signing_key.as_bytes());
    let message = format!("{timestamp}{token}");
    hmac::verify(&key, message.as_bytes(), &tag).map_err(|_| rejected("bad signature"))
}

/// The DER prefix of a P-256 SubjectPublicKeyInfo (id-ecPublicKey, prime256v1, a 65-byte
/// uncompressed point in the bit string).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The uncompressed point of a SendGrid verification key (base64 DER SubjectPublicKeyInfo,
/// PEM armour tolerated), or why it is not a P-256 public key.
pub fn sendgrid_public_key(text: &str) -> Result<Vec<u8>, Rejected> {
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>()
        .split_whitespace()
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| rejected("the public key is not base64"))?;
    match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
        Some(point) if point.len() == 65 && point[0] == 4 => Ok(point.to_vec()),
        _ => Err(rejected("the public key is not an ECDSA P-256 key")),
    }
}

/// SendGrid's Signed Event Webhook: `signature` (base64 DER ECDSA) over timestamp ‖ body.
pub fn verify_sendgrid(
    public_key: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
) -> Result<(), Rejected> {
    let point = sendgrid_public_key(public_key)?;
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature.trim())
        .map_err(|_| rejected("the signature is not base64"))?;
    let mut message = Vec::with_capacity(timestamp.len() + body.len());
    message.extend_from_slice(timestamp.as_bytes());
    message.extend_from_slice(body);
    signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, point)
        .verify(&message, &signature)
        .map_err(|_| rejected("bad signature"))
}

/// Signers with test keys, for tests that play the provider.
#[cfg(feature = "testing")]
pub mod signing {
    use super::*;

    pub fn basic_auth(user: &str, password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    }

    pub fn mailgun(signing_key: &str, timestamp: &str, token: &str) -> String {
        let key = hmac::Key::new(hmac::HMAC_SHA256, signing_key.as_bytes());
        hmac::sign(&key, format!("{timestamp}{token}").as_bytes())
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// A fresh P-256 key as SendGrid would show it: the key pair and its base64 public key.
    pub struct SendgridKey {
        pair: signature::EcdsaKeyPair,
        pub public_key: String,
    }

    impl SendgridKey {
        pub fn generate() -> Self {
            let rng = rand::SystemRandom::new();
            let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(
                &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                &rng,
            )
            .expect("a P-256 key");
            let pair = signature::EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                pkcs8.as_ref(),
                &rng,
            )
            .expect("the key parses");
            use signature::KeyPair as _;
            let mut der = P256_SPKI_PREFIX.to_vec();
            der.extend_from_slice(pair.public_key().as_ref());
            Self {
                pair,
                public_key: base64::engine::general_purpose::STANDARD.encode(der),
            }
        }

        /// `X-Twilio-Email-Event-Webhook-Signature` for `timestamp` and `body`.
        pub fn sign(&self, timestamp: &str, body: &[u8]) -> String {
            let mut message = timestamp.as_bytes().to_vec();
            message.extend_from_slice(body);
            let sig = self
                .pair
                .sign(&rand::SystemRandom::new(), &message)
                .expect("signing");
            base64::engine::general_purpose::STANDARD.encode(sig.as_ref())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_compares_the_password() {
        let good = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("postmark:s3cret")
        );
        assert!(verify_basic_auth(Some(&good), "s3cret").is_ok());
        assert!(verify_basic_auth(Some(&good), "s3cres").is_err());
        assert!(verify_basic_auth(None, "s3cret").is_err());
        assert!(verify_basic_auth(Some("Bearer s3cret"), "s3cret").is_err());
    }

    #[test]
    fn mailgun_signatures_verify() {
        // HMAC-SHA256("key", "1529006854" ‖ "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0")
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"key");
        let good: String = hmac::sign(
            &key,
            b"1529006854a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0",
        )
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
        let token = "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0";
        assert!(verify_mailgun("key", "1529006854", token, &good).is_ok());
        assert!(verify_mailgun("key", "1529006855", token, &good).is_err());
        assert!(verify_mailgun("other", "1529006854", token, &good).is_err());
        assert!(verify_mailgun("key", "1529006854", token, "zz").is_err());
    }

    #[test]
    fn a_non_p256_key_is_refused() {
        assert!(sendgrid_public_key("bm90IGEga2V5").is_err());
        assert!(sendgrid_public_key("***").is_err());
    }
}
