//! First-party JWTs (the dashboard's session credential): signed by a configured issuer with
//! HS256 or RS256, the key chosen by the header's `kid` among several configured ones (so keys
//! rotate without downtime). Accepted by the same gate as API keys, as
//! `Authorization: Bearer <jwt>`.
//!
//! Each configured key is bound to one algorithm: a token whose header names another (`none`,
//! or HS256 against an RSA key's material) is refused before any signature check.

use std::collections::HashMap;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use uuid::Uuid;

use crate::{AuthError, Scope, Scopes};

/// The deployment's settings (`MEMORY_DASHBOARD_JWT__…`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct JwtSettings {
    /// The `iss` every accepted token carries; empty: no JWT is accepted.
    #[serde(default)]
    pub issuer: String,
    /// The `aud` every accepted token carries.
    #[serde(default = "default_audience")]
    pub audience: String,
    /// The verification keys, comma-separated `kid=ALG:material`: `HS256` with the shared
    /// secret in base64 (at least 32 bytes), `RS256` with the public key's PEM in base64.
    #[serde(default)]
    pub keys: String,
}

fn default_audience() -> String {
    "memory-api".to_owned()
}

/// How long after `exp` a token is still taken, for clocks slightly apart.
const LEEWAY_SECS: u64 = 30;

#[derive(Debug, thiserror::Error)]
pub enum JwtConfigError {
    #[error("dashboard JWT key entry {0:?} is not kid=ALG:material")]
    Entry(String),
    #[error("dashboard JWT key {kid}: algorithm {alg} is not HS256 or RS256")]
    Algorithm { kid: String, alg: String },
    #[error("dashboard JWT key {kid}: {reason}")]
    Material { kid: String, reason: String },
    #[error("a dashboard JWT issuer is configured but no key")]
    NoKeys,
}

/// Verifies first-party JWTs.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    keys: HashMap<String, (Algorithm, DecodingKey)>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("kids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What a verified token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedJwt {
    /// `sub`: the user the dashboard acts for.
    pub subject: Uuid,
    /// `scope` (space-separated) when the token names one; `None`: the user's full scopes.
    pub scopes: Option<Scopes>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    exp: i64,
    #[serde(default)]
    scope: Option<String>,
}

impl JwtVerifier {
    /// `None` when no issuer is configured.
    pub fn from_settings(settings: &JwtSettings) -> Result<Option<Self>, JwtConfigError> {
        if settings.issuer.trim().is_empty() {
            return Ok(None);
        }
        let mut keys = HashMap::new();
        for entry in settings
            .keys
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (kid, rest) = entry
                .split_once('=')
                .ok_or_else(|| JwtConfigError::Entry(entry.chars().take(20).collect()))?;
            let (alg, material) = rest
                .split_once(':')
                .ok_or_else(|| JwtConfigError::Entry(kid.to_owned()))?;
            let kid = kid.trim().to_owned();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(material.trim())
                .map_err(|_| JwtConfigError::Material {
                    kid: kid.clone(),
                    reason: "the material is not base64".into(),
                })?;
            let key = match alg.trim() {
                "HS256" => {
                    if bytes.len() < 32 {
                        return Err(JwtConfigError::Material {
                            kid,
                            reason: "an HS256 secret has at least 32 bytes".into(),
                        });
                    }
                    (Algorithm::HS256, DecodingKey::from_secret(&bytes))
                }
                "RS256" => {
                    let key = DecodingKey::from_rsa_pem(&bytes).map_err(|e| {
                        JwtConfigError::Material {
                            kid: kid.clone(),
                            reason: format!("not an RSA public key in PEM: {e}"),
                        }
                    })?;
                    (Algorithm::RS256, key)
                }
                other => {
                    return Err(JwtConfigError::Algorithm {
                        kid,
                        alg: other.to_owned(),
                    });
                }
            };
            keys.insert(kid, key);
        }
        if keys.is_empty() {
            return Err(JwtConfigError::NoKeys);
        }
        Ok(Some(Self {
            issuer: settings.issuer.trim().to_owned(),
            audience: settings.audience.trim().to_owned(),
            keys,
        }))
    }

    /// Whether `token` has the shape of a JWT (three base64url parts), so it is never
    /// mistaken for a malformed API key.
    pub fn looks_like_jwt(token: &str) -> bool {
        let parts: Vec<&str> = token.split('.').collect();
        parts.len() == 3
            && parts[..2].iter().all(|p| !p.is_empty())
            && parts.iter().all(|p| {
                p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
    }

    pub fn verify(&self, token: &str) -> Result<VerifiedJwt, AuthError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Malformed)?;
        let kid = header.kid.as_deref().ok_or(AuthError::Unknown)?;
        let (alg, key) = self.keys.get(kid).ok_or(AuthError::Unknown)?;
        if header.alg != *alg {
            return Err(AuthError::Unknown);
        }
        let mut validation = Validation::new(*alg);
        validation.leeway = LEEWAY_SECS;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, key, &validation).map_err(|e| match e
            .kind()
        {
            jsonwebtoken::errors::ErrorKind::ExpiredSignature => AuthError::Expired,
            _ => AuthError::Unknown,
        })?;
        let claims = data.claims;
        let subject = Uuid::parse_str(&claims.sub).map_err(|_| AuthError::Unknown)?;
        let scopes = match claims.scope {
            None => None,
            Some(scope) => {
                let mut parsed = Scopes::default();
                for name in scope.split(' ').filter(|s| !s.is_empty()) {
                    // `admin` is not a memory scope: a token naming it is not ours.
                    match Scope::parse(name) {
                        Some(s) if s != Scope::Admin => parsed = parsed.with(s),
                        _ => return Err(AuthError::Unknown),
                    }
                }
                Some(parsed)
            }
        };
        let expires_at =
            chrono::DateTime::from_timestamp(claims.exp, 0).ok_or(AuthError::Unknown)?;
        Ok(VerifiedJwt {
            subject,
            scopes,
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn verifier() -> JwtVerifier {
        let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
        JwtVerifier::from_settings(&JwtSettings {
            issuer: "https://dash.example".into(),
            audience: "memory-api".into(),
            keys: format!("k1=HS256:{b64}"),
        })
        .unwrap()
        .unwrap()
    }

    fn token(kid: Option<&str>, claims: serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(SECRET)).unwrap()
    }

    fn claims(exp_offset: i64) -> serde_json::Value {
        json!({"iss": "https://dash.example", "aud": "memory-api",
               "sub": Uuid::nil().to_string(), "exp": chrono::Utc::now().timestamp() + exp_offset})
    }

    #[test]
    fn checks_kid_issuer_audience_expiry_and_scopes() {
        let v = verifier();
        let ok = v.verify(&token(Some("k1"), claims(600))).unwrap();
        assert_eq!(ok.subject, Uuid::nil());
        assert_eq!(ok.scopes, None);
        assert_eq!(
            v.verify(&token(Some("k1"), claims(-600))),
            Err(AuthError::Expired)
        );
        assert_eq!(
            v.verify(&token(Some("k2"), claims(600))),
            Err(AuthError::Unknown)
        );
        assert_eq!(v.verify(&token(None, claims(600))), Err(AuthError::Unknown));
        let mut wrong_iss = claims(600);
        wrong_iss["iss"] = json!("https://evil.example");
        assert_eq!(
            v.verify(&token(Some("k1"), wrong_iss)),
            Err(AuthError::Unknown)
        );
        let mut wrong_aud = claims(600);
        wrong_aud["aud"] = json!("mail-api");
        assert_eq!(
            v.verify(&token(Some("k1"), wrong_aud)),
            Err(AuthError::Unknown)
        );
        let mut scoped = claims(600);
        scoped["scope"] = json!("read");
        let s = v
            .verify(&token(Some("k1"), scoped))
            .unwrap()
            .scopes
            .unwrap();
        assert!(s.contains(Scope::Read) && !s.contains(Scope::Write));
        assert!(JwtVerifier::looks_like_jwt(&token(Some("k1"), claims(1))));
        assert!(!JwtVerifier::looks_like_jwt("mem_live_abc"));
    }

    #[test]
    fn refuses_alg_none() {
        let v = verifier();
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims(600).to_string());
        assert!(v.verify(&format!("{header}.{body}.")).is_err());
    }
}
