//! Signing secrets of products: the HMAC key a source uses to sign project signals. Stored
//! sealed under the key-encryption key, bound to the product's id.
//!
//! A signed request carries `X-Memory-Timestamp: <Unix seconds>` and
//! `X-Memory-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`, the key
//! being the secret's text exactly as shown (`msig_…`). The timestamp must be within
//! [`TOLERANCE_SECS`] of the server's clock.

use ring::hmac;
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
    kek.open_text(sealed, &context(product_id))
}

/// How far a signed request's timestamp may be from the server's clock, either way.
pub const TOLERANCE_SECS: i64 = 300;

/// How long a replaced secret keeps verifying after a rotation.
pub const PREVIOUS_SECRET_GRACE_HOURS: i64 = 24;

/// Why a signed request is refused (each is a 401; the message never names the secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("X-Memory-Signature must be sha256=<64 hexadecimal digits>")]
    Malformed,
    #[error("X-Memory-Timestamp must be a whole number of Unix seconds")]
    BadTimestamp,
    #[error("X-Memory-Timestamp is more than 300 seconds away from the server's clock")]
    Stale,
    #[error("the signature does not match")]
    Mismatch,
}

/// The 32 bytes of a `sha256=<hex>` header value.
pub fn parse_signature(header: &str) -> Result<[u8; 32], SignatureError> {
    let hex_digits = header
        .trim()
        .strip_prefix("sha256=")
        .ok_or(SignatureError::Malformed)?;
    let mut tag = [0u8; 32];
    hex::decode_to_slice(hex_digits, &mut tag).map_err(|_| SignatureError::Malformed)?;
    Ok(tag)
}

/// The timestamp, when it is within [`TOLERANCE_SECS`] of `now` (Unix seconds).
pub fn check_timestamp(header: &str, now: i64) -> Result<i64, SignatureError> {
    let header = header.trim();
    if header.is_empty() || !header.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SignatureError::BadTimestamp);
    }
    let timestamp: i64 = header.parse().map_err(|_| SignatureError::BadTimestamp)?;
    let near = now
        .checked_sub(timestamp)
        .and_then(i64::checked_abs)
        .is_some_and(|distance| distance <= TOLERANCE_SECS);
    if near {
        Ok(timestamp)
    } else {
        Err(SignatureError::Stale)
    }
}

/// Until when a signature made at `signed_at` (Unix seconds) must be remembered to refuse its
/// replay: the end of its tolerance, plus a minute for replicas' clocks.
pub fn replayable_until(signed_at: i64) -> chrono::DateTime<chrono::Utc> {
    let until = signed_at.saturating_add(TOLERANCE_SECS + 60);
    chrono::DateTime::from_timestamp(until, 0).unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
}

/// `sha256=<hex>` of `"<timestamp>.<body>"` under `secret` (what a source sends).
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, &signed_content(timestamp, body));
    format!("sha256={}", hex::encode(tag.as_ref()))
}

/// Whether `tag` is the HMAC of `"<timestamp>.<body>"` under any of `secrets`. Every secret
/// is tried (no early exit), each comparison in constant time.
pub fn verify_any<'a>(
    secrets: impl IntoIterator<Item = &'a str>,
    timestamp: &str,
    body: &[u8],
    tag: &[u8; 32],
) -> bool {
    let content = signed_content(timestamp, body);
    secrets.into_iter().fold(false, |matched, secret| {
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
        hmac::verify(&key, &content, tag).is_ok() | matched
    })
}

fn signed_content(timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut content = Vec::with_capacity(timestamp.len() + 1 + body.len());
    content.extend_from_slice(timestamp.as_bytes());
    content.push(b'.');
    content.extend_from_slice(body);
    content
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_under_its_secret_only() {
        let (a, b) = (new_secret(), new_secret());
        let header = sign(&a, "1700000000", b"{}");
        let tag = parse_signature(&header).unwrap();
        assert!(verify_any([a.as_str()], "1700000000", b"{}", &tag));
        assert!(verify_any(
            [b.as_str(), a.as_str()],
            "1700000000",
            b"{}",
            &tag
        ));
        assert!(!verify_any([b.as_str()], "1700000000", b"{}", &tag));
        assert!(!verify_any([a.as_str()], "1700000001", b"{}", &tag));
        assert!(!verify_any([a.as_str()], "1700000000", b"{ }", &tag));
        assert_eq!(parse_signature("sha256=zz"), Err(SignatureError::Malformed));
        assert_eq!(
            parse_signature(&header[1..]),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn timestamps_are_seconds_within_five_minutes() {
        assert_eq!(check_timestamp("1000", 1300), Ok(1000));
        assert_eq!(check_timestamp("1600", 1300), Ok(1600));
        assert_eq!(check_timestamp("999", 1300), Err(SignatureError::Stale));
        assert_eq!(check_timestamp("1601", 1300), Err(SignatureError::Stale));
        assert_eq!(check_timestamp("-5", 0), Err(SignatureError::BadTimestamp));
        assert_eq!(
            check_timestamp("1e3", 1000),
            Err(SignatureError::BadTimestamp)
        );
        assert_eq!(
            check_timestamp("99999999999999999999", 0),
            Err(SignatureError::BadTimestamp)
        );
    }

    #[test]
    fn a_signature_is_remembered_past_its_tolerance() {
        assert_eq!(
            replayable_until(1000).timestamp(),
            1000 + TOLERANCE_SECS + 60
        );
        assert_eq!(
            replayable_until(i64::MAX),
            chrono::DateTime::<chrono::Utc>::MAX_UTC
        );
    }

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
