//! [Standard Webhooks](https://www.standardwebhooks.com/) signatures, as Resend, Svix and
//! others send them and as our own outbound webhooks are signed.
//!
//! The signed content is `<webhook-id>.<webhook-timestamp>.<raw body>`; the signature is
//! HMAC-SHA256 under the secret's key, sent as `v1,<base64>`. One header may carry several
//! space-separated signatures (during a secret rotation); any one valid signature is enough.
//! The timestamp (Unix seconds) must be within [`TOLERANCE_SECS`] of the verifier's clock, so a
//! captured request cannot be replayed later; replays inside the window are the receiver's to
//! refuse by `webhook-id`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;

/// How far the timestamp may be from the verifier's clock, either way.
pub const TOLERANCE_SECS: i64 = 5 * 60;

/// The prefix of a serialized secret.
const SECRET_PREFIX: &str = "whsec_";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the secret is not whsec_<base64>")]
    BadSecret,
    #[error("the {0} header is missing")]
    MissingHeader(&'static str),
    #[error("the timestamp is not a number of seconds")]
    BadTimestamp,
    #[error("the timestamp is more than five minutes away")]
    Stale,
    #[error("no signature matches")]
    Mismatch,
}

/// A signing key.
#[derive(Clone)]
pub struct Secret {
    key: hmac::Key,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl Secret {
    /// `whsec_<base64 of the key>` (the prefix is optional, as the reference libraries allow).
    pub fn parse(text: &str) -> Result<Self, SignatureError> {
        let encoded = text.strip_prefix(SECRET_PREFIX).unwrap_or(text);
        let raw = STANDARD
            .decode(encoded.trim())
            .map_err(|_| SignatureError::BadSecret)?;
        if raw.is_empty() {
            return Err(SignatureError::BadSecret);
        }
        Ok(Self::from_bytes(&raw))
    }

    pub fn from_bytes(raw: &[u8]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, raw),
        }
    }

    /// A new random secret, serialized as `whsec_<base64>` (24 random bytes, as Svix makes
    /// them).
    pub fn generate() -> String {
        let mut raw = [0u8; 24];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut raw)
            .expect("the system random source works");
        format!("{SECRET_PREFIX}{}", STANDARD.encode(raw))
    }

    /// The `webhook-signature` value for a message: `v1,<base64>`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = hmac::sign(&self.key, &signed_content(id, timestamp, body));
        format!("v1,{}", STANDARD.encode(tag.as_ref()))
    }

    /// Checks one message: the timestamp against `now` (Unix seconds), then every `v1`
    /// signature of the header (in constant time) until one matches.
    pub fn verify(
        &self,
        headers: &Headers<'_>,
        body: &[u8],
        now: i64,
    ) -> Result<(), SignatureError> {
        let timestamp: i64 = headers
            .timestamp
            .trim()
            .parse()
            .map_err(|_| SignatureError::BadTimestamp)?;
        if !within_tolerance(now, timestamp) {
            return Err(SignatureError::Stale);
        }
        let content = signed_content(headers.id, timestamp, body);
        let matched = headers
            .signature
            .split_whitespace()
            .filter_map(|s| s.strip_prefix("v1,"))
            .filter_map(|b64| STANDARD.decode(b64).ok())
            .any(|tag| hmac::verify(&self.key, &content, &tag).is_ok());
        if matched {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }
}

/// The three headers of a signed message.
#[derive(Debug, Clone, Copy)]
pub struct Headers<'a> {
    pub id: &'a str,
    pub timestamp: &'a str,
    pub signature: &'a str,
}

impl<'a> Headers<'a> {
    /// Reads `webhook-id`, `webhook-timestamp`, `webhook-signature`, or else their `svix-`
    /// twins, through `get` (a case-insensitive header lookup).
    pub fn read(get: impl Fn(&str) -> Option<&'a str>) -> Result<Self, SignatureError> {
        let pick = |name: &'static str| {
            get(&format!("webhook-{name}"))
                .or_else(|| get(&format!("svix-{name}")))
                .ok_or(SignatureError::MissingHeader(match name {
                    "id" => "webhook-id",
                    "timestamp" => "webhook-timestamp",
                    _ => "webhook-signature",
                }))
        };
        Ok(Self {
            id: pick("id")?,
            timestamp: pick("timestamp")?,
            signature: pick("signature")?,
        })
    }
}

/// Whether `timestamp` is within [`TOLERANCE_SECS`] of `now`; a distance that does not fit in
/// an `i64` (a timestamp near `i64::MIN` or `i64::MAX`) is simply too far.
fn within_tolerance(now: i64, timestamp: i64) -> bool {
    now.checked_sub(timestamp)
        .and_then(i64::checked_abs)
        .is_some_and(|distance| distance <= TOLERANCE_SECS)
}

/// The `X-Mail-Signature` header of an outbound webhook (the project's own scheme, next to the
/// Standard Webhooks headers): `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, one `v1`
/// per secret (the current one first, then one still valid after a rotation). The HMAC key is
/// the secret's text as shown to the subscriber (`whsec_…`).
pub fn mail_signature(secrets: &[&str], timestamp: i64, body: &[u8]) -> String {
    let mut content = Vec::with_capacity(body.len() + 24);
    content.extend_from_slice(timestamp.to_string().as_bytes());
    content.push(b'.');
    content.extend_from_slice(body);
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
        let tag = hmac::sign(&key, &content);
        header.push_str(",v1=");
        for byte in tag.as_ref() {
            header.push_str(&format!("{byte:02x}"));
        }
    }
    header
}

fn signed_content(id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut content = Vec::with_capacity(id.len() + body.len() + 24);
    content.extend_from_slice(id.as_bytes());
    content.push(b'.');
    content.extend_from_slice(timestamp.to_string().as_bytes());
    content.push(b'.');
    content.extend_from_slice(body);
    content
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mail_signature_is_hex_hmac_of_timestamp_dot_body_per_secret() {
        // HMAC-SHA256("key", "1.{}") computed independently (Python's hmac module).
        let header = mail_signature(&["key", "key"], 1, b"{}");
        let v1 = "v1=1ba6b8171186efc613e8bcc0cbdab2748f24984d7c5a84faa2637afa0e40d224";
        assert_eq!(header, format!("t=1,{v1},{v1}"));
    }

    // The test vector of the Standard Webhooks specification.
    const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    const ID: &str = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk";
    const TIMESTAMP: i64 = 1_649_367_553;
    const BODY: &[u8] = br#"{"email":"test@example.com","username":"test_user"}"#;
    const SIGNATURE: &str = "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=";

    fn headers<'a>(timestamp: &'a str, signature: &'a str) -> Headers<'a> {
        Headers {
            id: ID,
            timestamp,
            signature,
        }
    }

    #[test]
    fn the_specification_vector_verifies_and_signs() {
        let secret = Secret::parse(SECRET).unwrap();
        assert_eq!(secret.sign(ID, TIMESTAMP, BODY), SIGNATURE);
        let ts = TIMESTAMP.to_string();
        assert_eq!(
            secret.verify(&headers(&ts, SIGNATURE), BODY, TIMESTAMP),
            Ok(())
        );
    }

    #[test]
    fn altered_messages_are_refused() {
        let secret = Secret::parse(SECRET).unwrap();
        let ts = TIMESTAMP.to_string();
        let altered_body = br#"{"email":"test@example.com","username":"test_user2"}"#;
        assert_eq!(
            secret.verify(&headers(&ts, SIGNATURE), altered_body, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
        let other_ts = (TIMESTAMP + 1).to_string();
        assert_eq!(
            secret.verify(&headers(&other_ts, SIGNATURE), BODY, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
        let altered_sig = "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkx=";
        assert!(
            secret
                .verify(&headers(&ts, altered_sig), BODY, TIMESTAMP)
                .is_err()
        );
        let other = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert!(
            other
                .verify(&headers(&ts, SIGNATURE), BODY, TIMESTAMP)
                .is_err()
        );
    }

    #[test]
    fn the_clock_must_be_within_five_minutes() {
        let secret = Secret::parse(SECRET).unwrap();
        let ts = TIMESTAMP.to_string();
        let h = headers(&ts, SIGNATURE);
        assert_eq!(secret.verify(&h, BODY, TIMESTAMP + TOLERANCE_SECS), Ok(()));
        assert_eq!(secret.verify(&h, BODY, TIMESTAMP - TOLERANCE_SECS), Ok(()));
        assert_eq!(
            secret.verify(&h, BODY, TIMESTAMP + TOLERANCE_SECS + 1),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            secret.verify(&headers("soon", SIGNATURE), BODY, TIMESTAMP),
            Err(SignatureError::BadTimestamp)
        );
    }

    #[test]
    fn extreme_timestamps_are_refused_without_overflow() {
        let secret = Secret::parse(SECRET).unwrap();
        let huge = "9".repeat(40);
        let extremes = [i64::MAX, i64::MIN, i64::MIN + 1, -1, 0, TIMESTAMP];
        for ts in extremes {
            for now in extremes {
                let verdict = secret.verify(&headers(&ts.to_string(), SIGNATURE), BODY, now);
                assert!(verdict.is_err() || (ts, now) == (TIMESTAMP, TIMESTAMP));
            }
        }
        for (ts, now) in [
            (i64::MIN, TIMESTAMP),
            (i64::MAX, TIMESTAMP),
            (i64::MIN, i64::MAX),
            (i64::MAX, i64::MIN),
            (i64::MIN + 1, 1),
            (-1, TIMESTAMP),
        ] {
            assert_eq!(
                secret.verify(&headers(&ts.to_string(), SIGNATURE), BODY, now),
                Err(SignatureError::Stale),
                "timestamp {ts}, now {now}"
            );
        }
        for ts in [huge.as_str(), "-99999999999999999999999", "1e9", ""] {
            assert_eq!(
                secret.verify(&headers(ts, SIGNATURE), BODY, TIMESTAMP),
                Err(SignatureError::BadTimestamp),
                "timestamp {ts}"
            );
        }
    }

    #[test]
    fn any_one_of_several_signatures_is_enough() {
        let secret = Secret::parse(SECRET).unwrap();
        let ts = TIMESTAMP.to_string();
        let several = format!("v1,bm90IGl0 v2,whatever {SIGNATURE}");
        assert_eq!(
            secret.verify(&headers(&ts, &several), BODY, TIMESTAMP),
            Ok(())
        );
        assert_eq!(
            secret.verify(&headers(&ts, "v1,bm90IGl0 garbage"), BODY, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn headers_fall_back_to_svix_names() {
        let map = [
            ("svix-id", ID),
            ("svix-timestamp", "1649367553"),
            ("webhook-signature", SIGNATURE),
        ];
        let h =
            Headers::read(|name| map.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)).unwrap();
        assert_eq!(
            (h.id, h.timestamp, h.signature),
            (ID, "1649367553", SIGNATURE)
        );
        let missing = Headers::read(|_| None).unwrap_err();
        assert_eq!(missing, SignatureError::MissingHeader("webhook-id"));
    }

    #[test]
    fn secrets_parse_and_generate() {
        assert!(Secret::parse("whsec_!!!").is_err());
        assert!(Secret::parse("whsec_").is_err());
        let generated = Secret::generate();
        assert!(generated.starts_with("whsec_"));
        let secret = Secret::parse(&generated).unwrap();
        let sig = secret.sign("msg_1", 10, b"{}");
        let h = Headers {
            id: "msg_1",
            timestamp: "10",
            signature: &sig,
        };
        assert_eq!(secret.verify(&h, b"{}", 10), Ok(()));
        assert!(!format!("{secret:?}").contains(&generated[6..]));
    }
}
