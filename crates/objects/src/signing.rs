//! Time-limited download URLs: `…/{key}?expires={unix seconds}&signature={hex}`, where the
//! signature is HMAC-SHA256 over the key and the expiry. Verification is constant-time
//! (`ring::hmac::verify`) and checks the expiry after the signature, so a tampered URL and an
//! expired one are told apart only once the URL is known to be ours.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::hmac;

use crate::ObjectKey;

/// What a download URL carries besides its key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct SignedQuery {
    pub expires: u64,
    pub signature: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the download link is invalid")]
    Invalid,
    #[error("the download link has expired")]
    Expired,
}

/// Signs and verifies download URLs.
#[derive(Clone)]
pub struct UrlSigner {
    key: hmac::Key,
    ttl: Duration,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlSigner")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Labels the key derived from another secret, so it signs nothing else.
const DERIVATION_LABEL: &[u8] = b"objects: download url signing key v1";

impl UrlSigner {
    /// Signs with `secret` (at least 32 bytes); URLs live `ttl`.
    pub fn new(secret: &[u8], ttl: Duration) -> Result<Self, &'static str> {
        if secret.len() < 32 {
            return Err("the URL signing key must be at least 32 bytes");
        }
        Ok(Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            ttl,
        })
    }

    /// Signs with a key derived from another service secret (used when no signing key of its
    /// own is configured).
    pub fn derived_from(secret: &[u8], ttl: Duration) -> Result<Self, &'static str> {
        if secret.len() < 32 {
            return Err("the secret to derive the URL signing key from is too short");
        }
        let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret), DERIVATION_LABEL);
        Self::new(tag.as_ref(), ttl)
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn message(key: &ObjectKey, expires: u64) -> Vec<u8> {
        format!("{}\n{expires}", key.as_str()).into_bytes()
    }

    /// The query of a URL for `key` valid for the signer's lifetime from `now`.
    pub fn sign(&self, key: &ObjectKey, now: SystemTime) -> SignedQuery {
        let expires = unix(now) + self.ttl.as_secs();
        let tag = hmac::sign(&self.key, &Self::message(key, expires));
        SignedQuery {
            expires,
            signature: hex::encode(tag.as_ref()),
        }
    }

    /// The full download URL: `{base}/{key}?expires=…&signature=…` (`base` without a trailing
    /// slash, e.g. `https://api.example.com/render/downloads`).
    pub fn url(&self, base: &str, key: &ObjectKey, now: SystemTime) -> String {
        let q = self.sign(key, now);
        format!(
            "{}/{}?expires={}&signature={}",
            base.trim_end_matches('/'),
            key.as_str(),
            q.expires,
            q.signature
        )
    }

    /// Whether `query` is this signer's, for `key`, and not expired at `now`.
    pub fn verify(
        &self,
        key: &ObjectKey,
        query: &SignedQuery,
        now: SystemTime,
    ) -> Result<(), VerifyError> {
        let tag = hex::decode(&query.signature).map_err(|_| VerifyError::Invalid)?;
        hmac::verify(&self.key, &Self::message(key, query.expires), &tag)
            .map_err(|_| VerifyError::Invalid)?;
        if unix(now) >= query.expires {
            return Err(VerifyError::Expired);
        }
        Ok(())
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> UrlSigner {
        UrlSigner::new(&[7u8; 32], Duration::from_secs(60)).unwrap()
    }

    #[test]
    fn a_url_verifies_until_it_expires() {
        let s = signer();
        let key = ObjectKey::parse("producibles/a.pdf").unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let q = s.sign(&key, now);
        assert_eq!(q.expires, 1_000_060);
        assert_eq!(s.verify(&key, &q, now), Ok(()));
        assert_eq!(
            s.verify(&key, &q, now + Duration::from_secs(60)),
            Err(VerifyError::Expired)
        );
        let url = s.url("https://h/render/downloads/", &key, now);
        assert!(url.starts_with(
            "https://h/render/downloads/producibles/a.pdf?expires=1000060&signature="
        ));
    }

    #[test]
    fn tampering_is_refused() {
        let s = signer();
        let key = ObjectKey::parse("producibles/a.pdf").unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let q = s.sign(&key, now);
        let other = ObjectKey::parse("producibles/b.pdf").unwrap();
        assert_eq!(s.verify(&other, &q, now), Err(VerifyError::Invalid));
        let later = SignedQuery {
            expires: q.expires + 3600,
            ..q.clone()
        };
        assert_eq!(s.verify(&key, &later, now), Err(VerifyError::Invalid));
        let garbage = SignedQuery {
            signature: "zz".into(),
            ..q.clone()
        };
        assert_eq!(s.verify(&key, &garbage, now), Err(VerifyError::Invalid));
        let foreign = UrlSigner::new(&[8u8; 32], Duration::from_secs(60)).unwrap();
        assert_eq!(foreign.verify(&key, &q, now), Err(VerifyError::Invalid));
        assert!(UrlSigner::new(&[1u8; 31], Duration::from_secs(1)).is_err());
    }
}
