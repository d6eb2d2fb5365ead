//! Amazon SNS HTTP(S) deliveries, which carry Amazon SES's events: the message's signature
//! checked against Amazon's signing certificate (RSA PKCS #1 v1.5 over the documented string to
//! sign; SHA1 for `SignatureVersion` 1, SHA256 for 2), and the addresses a certificate or a
//! subscription confirmation may be fetched from. Which topic a project accepts, fetching and
//! the caller's; [`Fetcher`] fetches certificates (kept per process) and confirmations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use ring::signature;
use serde_json::Value;

use crate::provider_webhooks::Rejected;

fn rejected(why: &str) -> Rejected {
    Rejected(why.to_owned())
}

/// The fields of a delivery that matter before it is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `Notification`, `SubscriptionConfirmation` or `UnsubscribeConfirmation`.
    pub kind: String,
    pub message_id: String,
    pub topic_arn: String,
    pub message: String,
    pub signing_cert_url: String,
    /// Confirmations only.
    pub subscribe_url: Option<String>,
}

fn field<'a>(body: &'a Value, name: &str) -> Result<&'a str, Rejected> {
    body.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Rejected(format!("no {name}")))
}

/// The documented string to sign: the named fields, each as `Name\nvalue\n`, in this order
/// (`Subject` only when present).
fn string_to_sign(body: &Value, kind: &str) -> Result<String, Rejected> {
    let names: &[&str] = match kind {
        "Notification" => &[
            "Message",
            "MessageId",
            "Subject",
            "Timestamp",
            "TopicArn",
            "Type",
        ],
        "SubscriptionConfirmation" | "UnsubscribeConfirmation" => &[
            "Message",
            "MessageId",
            "SubscribeURL",
            "Timestamp",
            "Token",
            "TopicArn",
            "Type",
        ],
        other => return Err(Rejected(format!("unknown SNS message type {other}"))),
    };
    let mut out = String::new();
    for name in names {
        match body.get(*name).and_then(Value::as_str) {
            Some(value) => {
                out.push_str(name);
                out.push('\n');
                out.push_str(value);
                out.push('\n');
            }
            None if *name == "Subject" => {}
            None => return Err(Rejected(format!("no {name}"))),
        }
    }
    Ok(out)
}

/// Reads a delivery's envelope (nothing verified yet).
pub fn envelope(body: &Value) -> Result<Envelope, Rejected> {
    let kind = field(body, "Type")?.to_owned();
    Ok(Envelope {
        message_id: field(body, "MessageId")?.to_owned(),
        topic_arn: field(body, "TopicArn")?.to_owned(),
        message: field(body, "Message")?.to_owned(),
        signing_cert_url: field(body, "SigningCertURL")?.to_owned(),
        subscribe_url: body
            .get("SubscribeURL")
            .and_then(Value::as_str)
            .map(str::to_owned),
        kind,
    })
}

/// The region of a topic ARN (`arn:aws:sns:eu-west-1:123456789012:name`), when it is one.
pub fn topic_region(arn: &str) -> Option<&str> {
    let mut parts = arn.split(':');
    let (Some("arn"), Some(_partition), Some("sns"), Some(region)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let valid = !region.is_empty()
        && region.len() <= 30
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    valid.then_some(region)
}

/// Whether `url` lies under the deployment's SNS address for `region` (`base` holds
/// `{region}`): a signing certificate must also end in `.pem`.
pub fn is_amazon_url(url: &str, base: &str, region: &str, certificate: bool) -> bool {
    let prefix = format!(
        "{}/",
        base.replace("{region}", region).trim_end_matches('/')
    );
    url.starts_with(&prefix)
        && !url[prefix.len()..].contains("..")
        && !url.contains(['@', '\\', '#'])
        && (!certificate || url.split('?').next().is_some_and(|p| p.ends_with(".pem")))
}

/// The RSA public key (PKCS #1) of a PEM certificate.
pub fn certificate_key(pem: &[u8]) -> Result<Vec<u8>, Rejected> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem)
        .map_err(|_| rejected("the signing certificate is not PEM"))?;
    let cert = pem
        .parse_x509()
        .map_err(|_| rejected("the signing certificate does not parse"))?;
    Ok(cert.public_key().subject_public_key.data.to_vec())
}

/// Checks `body`'s signature with the certificate's key (see [`certificate_key`]).
pub fn verify(body: &Value, public_key: &[u8]) -> Result<(), Rejected> {
    let kind = field(body, "Type")?;
    let algorithm: &dyn signature::VerificationAlgorithm = match field(body, "SignatureVersion")? {
        "1" => &signature::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
        "2" => &signature::RSA_PKCS1_2048_8192_SHA256,
        other => return Err(Rejected(format!("unknown SignatureVersion {other}"))),
    };
    let signature = base64::engine::general_purpose::STANDARD
        .decode(field(body, "Signature")?)
        .map_err(|_| rejected("the signature is not base64"))?;
    let message = string_to_sign(body, kind)?;
    signature::UnparsedPublicKey::new(algorithm, public_key)
        .verify(message.as_bytes(), &signature)
        .map_err(|_| rejected("bad signature"))
}

/// Certificates kept per process (SNS signs with a handful; the bound keeps a flood of distinct
/// URLs from growing the map).
const CACHED_CERTIFICATES: usize = 32;
/// A signing certificate is a couple of kilobytes.
const FETCHED_MAX_BYTES: usize = 16 * 1024;

/// Why a certificate or a confirmation could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// Not an address of the deployment's SNS, or not a certificate: never fetched.
    #[error("{0}")]
    Refused(Rejected),
    /// SNS could not be reached or answered an error (SNS retries a delivery answered 5xx).
    #[error("SNS could not be reached: {0}")]
    Unreachable(String),
}

/// Fetches SNS signing keys (kept) and subscription confirmations from the deployment's SNS
/// address only (rustls, no redirects, bounded time and size).
pub struct Fetcher {
    client: reqwest::Client,
    /// `{region}` stands for the topic's region.
    base: String,
    keys: Mutex<HashMap<String, Arc<Vec<u8>>>>,
}

impl Fetcher {
    pub fn new(base: &str) -> Result<Self, reqwest::Error> {
        tls_kit::install();
        Ok(Self {
            client: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            base: base.to_owned(),
            keys: Mutex::new(HashMap::new()),
        })
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        let failed = FetchError::Unreachable;
        let mut response = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| failed(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(failed(format!("it answered {}", response.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failed(e.without_url().to_string()))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > FETCHED_MAX_BYTES {
                return Err(failed("the answer is too large".to_owned()));
            }
        }
        Ok(body)
    }

    /// The key of the certificate at `url`, which must lie under SNS's address for `region`.
    pub async fn key(&self, url: &str, region: &str) -> Result<Arc<Vec<u8>>, FetchError> {
        if !is_amazon_url(url, &self.base, region, true) {
            return Err(FetchError::Refused(rejected(
                "SigningCertURL is not an SNS certificate address",
            )));
        }
        if let Some(key) = self.keys.lock().expect("certificate cache").get(url) {
            return Ok(Arc::clone(key));
        }
        let pem = self.get(url).await?;
        let key = Arc::new(certificate_key(&pem).map_err(FetchError::Refused)?);
        let mut keys = self.keys.lock().expect("certificate cache");
        if keys.len() >= CACHED_CERTIFICATES {
            keys.clear();
        }
        keys.insert(url.to_owned(), Arc::clone(&key));
        Ok(key)
    }

    /// Confirms a subscription: fetches its `SubscribeURL` (under SNS's address for `region`).
    pub async fn confirm(&self, url: &str, region: &str) -> Result<(), FetchError> {
        if !is_amazon_url(url, &self.base, region, false) {
            return Err(FetchError::Refused(rejected(
                "SubscribeURL is not an SNS address",
            )));
        }
        self.get(url).await.map(|_| ())
    }
}

/// A signing certificate and key, for tests that play SNS.
#[cfg(feature = "testing")]
pub mod signing {
    use rsa::pkcs8::EncodePrivateKey as _;

    use super::*;

    pub struct SnsKey {
        key: rsa::RsaPrivateKey,
        /// The self-signed certificate, PEM, as SNS serves it at `SigningCertURL`.
        pub certificate: String,
    }

    impl SnsKey {
        pub fn generate() -> Self {
            let key = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 2048).expect("an RSA key");
            let pem = key
                .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                .expect("PKCS #8");
            let pair = rcgen::KeyPair::from_pem_and_sign_algo(&pem, &rcgen::PKCS_RSA_SHA256)
                .expect("rcgen takes the key");
            let params = rcgen::CertificateParams::new(vec!["sns.amazonaws.com".to_owned()])
                .expect("parameters");
            let certificate = params.self_signed(&pair).expect("a certificate").pem();
            Self { key, certificate }
        }

        /// Signs `body` (its `Type` and fields set) with `SignatureVersion` `version`.
        pub fn sign(&self, body: &mut Value, version: &str) {
            body["SignatureVersion"] = Value::from(version);
            let kind = body["Type"].as_str().expect("a Type").to_owned();
            let message = string_to_sign(body, &kind).expect("the fields to sign");
            let (algorithm, prefix): (&'static ring::digest::Algorithm, &[u8]) = match version {
                "1" => (
                    &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
                    &[
                        0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05,
                        0x00, 0x04, 0x14,
                    ],
                ),
                _ => (
                    &ring::digest::SHA256,
                    &[
                        0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
                        0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20,
                    ],
                ),
            };
            let digest = ring::digest::digest(algorithm, message.as_bytes());
            let scheme = rsa::Pkcs1v15Sign {
                hash_len: Some(digest.as_ref().len()),
                prefix: prefix.into(),
            };
            let signature = self.key.sign(scheme, digest.as_ref()).expect("signing");
            body["Signature"] =
                Value::from(base64::engine::general_purpose::STANDARD.encode(signature));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_regions_are_read_strictly() {
        assert_eq!(
            topic_region("arn:aws:sns:eu-west-1:123456789012:ses-events"),
            Some("eu-west-1")
        );
        assert_eq!(topic_region("arn:aws:sns:evil.test/x:1:t"), None);
        assert_eq!(topic_region("arn:aws:sqs:eu-west-1:1:t"), None);
    }

    #[test]
    fn only_amazons_addresses_are_fetched() {
        let base = crate::providers::SNS_BASE_URL;
        let good = "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-abc.pem";
        assert!(is_amazon_url(good, base, "eu-west-1", true));
        assert!(!is_amazon_url(good, base, "us-east-1", true));
        for bad in [
            "http://sns.eu-west-1.amazonaws.com/x.pem",
            "https://sns.eu-west-1.amazonaws.com.evil.test/x.pem",
            "https://sns.eu-west-1.amazonaws.com@evil.test/x.pem",
            "https://sns.eu-west-1.amazonaws.com/x.txt",
        ] {
            assert!(!is_amazon_url(bad, base, "eu-west-1", true), "{bad}");
        }
        assert!(is_amazon_url(
            "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=t",
            base,
            "eu-west-1",
            false
        ));
    }

    #[test]
    fn the_string_to_sign_follows_the_documented_order() {
        let body = serde_json::json!({"Type": "Notification", "MessageId": "m", "TopicArn": "t",
            "Message": "hello", "Timestamp": "2026-12-03T10:00:00.000Z", "Subject": "s"});
        assert_eq!(
            string_to_sign(&body, "Notification").unwrap(),
            "Message\nhello\nMessageId\nm\nSubject\ns\nTimestamp\n2026-12-03T10:00:00.000Z\nTopicArn\nt\nType\nNotification\n"
        );
    }

    #[cfg(feature = "testing")]
    #[test]
    fn both_signature_versions_verify_and_a_changed_message_does_not() {
        let key = signing::SnsKey::generate();
        let public = certificate_key(key.certificate.as_bytes()).unwrap();
        for version in ["1", "2"] {
            let mut body = serde_json::json!({"Type": "Notification", "MessageId": "m",
                "TopicArn": "arn:aws:sns:eu-west-1:123456789012:t", "Message": "{}",
                "Timestamp": "2026-12-03T10:00:00.000Z", "SigningCertURL": "x"});
            key.sign(&mut body, version);
            verify(&body, &public).unwrap();
            body["Message"] = serde_json::json!("{\"forged\": true}");
            assert!(verify(&body, &public).is_err(), "version {version}");
        }
        let other = signing::SnsKey::generate();
        let mut body = serde_json::json!({"Type": "SubscriptionConfirmation", "MessageId": "m",
            "TopicArn": "t", "Message": "confirm", "Timestamp": "2026", "Token": "tok",
            "SubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription"});
        other.sign(&mut body, "2");
        assert!(verify(&body, &public).is_err());
    }
}
