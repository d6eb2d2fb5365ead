//! DKIM (RFC 6376) for mail sent from a project's own domain: a 2048-bit RSA key per domain,
//! the TXT record that publishes it, and the signature lettre adds to the message
//! (`rsa-sha256`, `relaxed/relaxed`).

use lettre::Message;
use lettre::message::dkim::{
    DkimCanonicalization, DkimCanonicalizationType, DkimConfig, DkimSigningAlgorithm,
    DkimSigningKey,
};
use lettre::message::header::HeaderName;

use crate::EmailError;

/// The size of the RSA keys made for domains.
pub const KEY_BITS: u32 = 2048;

/// The headers signed: what a receiver shows or threads by, and what our unsubscribe relies
/// on. A header the message lacks is signed as absent (nobody can add it later). Not
/// `Content-Type`: lettre writes a multipart's type with the body, after signing, so it is
/// not among the headers it signs (the body hash covers the parts all the same).
const SIGNED_HEADERS: [&str; 9] = [
    "From",
    "To",
    "Subject",
    "Date",
    "Message-ID",
    "Reply-To",
    "MIME-Version",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
];

/// A domain's new key: the private half (PKCS#1 PEM, to be sealed) and the public half as the
/// DKIM record's `p=` (base64 of the DER SubjectPublicKeyInfo).
pub struct KeyPair {
    pub private_pem: String,
    pub public_base64: String,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("public_base64", &self.public_base64)
            .finish_non_exhaustive()
    }
}

/// Makes a [`KEY_BITS`]-bit RSA key.
pub fn generate_key() -> Result<KeyPair, rsa::Error> {
    use base64::Engine as _;
    use rsa::pkcs1::EncodeRsaPrivateKey as _;
    use rsa::pkcs8::EncodePublicKey as _;
    let private = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, KEY_BITS as usize)?;
    let private_pem = private
        .to_pkcs1_pem(rsa::pkcs1::LineEnding::LF)
        .map_err(rsa::Error::Pkcs1)?
        .as_str()
        .to_owned();
    let public = private
        .to_public_key()
        .to_public_key_der()
        .map_err(|e| rsa::Error::Pkcs8(rsa::pkcs8::Error::PublicKey(e)))?;
    Ok(KeyPair {
        private_pem,
        public_base64: base64::engine::general_purpose::STANDARD.encode(public.as_bytes()),
    })
}

/// A private key read from PEM text, PKCS#1 (`BEGIN RSA PRIVATE KEY`) or PKCS#8
/// (`BEGIN PRIVATE KEY`, what `openssl genpkey` writes), as the PKCS#1 PEM [`DkimKey`] takes,
/// and the public half as a DKIM record's `p=`.
pub fn key_from_pem(pem: &str) -> Result<KeyPair, rsa::Error> {
    use base64::Engine as _;
    use rsa::pkcs1::{DecodeRsaPrivateKey as _, EncodeRsaPrivateKey as _};
    use rsa::pkcs8::{DecodePrivateKey as _, EncodePublicKey as _};
    let private = match rsa::RsaPrivateKey::from_pkcs1_pem(pem) {
        Ok(key) => key,
        Err(_) => rsa::RsaPrivateKey::from_pkcs8_pem(pem).map_err(rsa::Error::Pkcs8)?,
    };
    let private_pem = private
        .to_pkcs1_pem(rsa::pkcs1::LineEnding::LF)
        .map_err(rsa::Error::Pkcs1)?
        .as_str()
        .to_owned();
    let public = private
        .to_public_key()
        .to_public_key_der()
        .map_err(|e| rsa::Error::Pkcs8(rsa::pkcs8::Error::PublicKey(e)))?;
    Ok(KeyPair {
        private_pem,
        public_base64: base64::engine::general_purpose::STANDARD.encode(public.as_bytes()),
    })
}

/// The DKIM record's text for a public key.
pub fn record_text(public_base64: &str) -> String {
    format!("v=DKIM1; k=rsa; p={public_base64}")
}

/// What signs a message: the domain (`d=`), the selector (`s=`) and the private key.
#[derive(Clone, PartialEq, Eq)]
pub struct DkimKey {
    pub domain: String,
    pub selector: String,
    /// PKCS#1 PEM.
    pub private_pem: String,
}

impl std::fmt::Debug for DkimKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DkimKey")
            .field("domain", &self.domain)
            .field("selector", &self.selector)
            .finish_non_exhaustive()
    }
}

impl DkimKey {
    /// Adds the `DKIM-Signature` header to `message`.
    pub fn sign(&self, message: &mut Message) -> Result<(), EmailError> {
        let key =
            DkimSigningKey::new(&self.private_pem, DkimSigningAlgorithm::Rsa).map_err(|_| {
                EmailError::Invalid {
                    field: "dkim",
                    message: "the domain's DKIM key does not parse".to_owned(),
                }
            })?;
        let config = DkimConfig::new(
            self.selector.clone(),
            self.domain.clone(),
            key,
            SIGNED_HEADERS
                .iter()
                .map(|h| HeaderName::new_from_ascii_str(h))
                .collect(),
            DkimCanonicalization {
                header: DkimCanonicalizationType::Relaxed,
                body: DkimCanonicalizationType::Relaxed,
            },
        );
        message.sign(&config);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::email::sample;

    #[test]
    fn a_signed_message_carries_a_relaxed_rsa_signature() {
        let pair = generate_key().unwrap();
        assert!(
            pair.private_pem
                .starts_with("-----BEGIN RSA PRIVATE KEY-----")
        );
        assert!(record_text(&pair.public_base64).starts_with("v=DKIM1; k=rsa; p=MIIBIjAN"));
        let mut email = sample();
        email.headers.push((
            "List-Unsubscribe".into(),
            "<https://track.acme.test/u/abc>".into(),
        ));
        email.dkim = Some(DkimKey {
            domain: "mail.acme.test".into(),
            selector: "s1".into(),
            private_pem: pair.private_pem,
        });
        let raw = String::from_utf8(crate::mime::render(&email).unwrap()).unwrap();
        assert!(
            raw.contains("\r\nDKIM-Signature: v=1; a=rsa-sha256; d=mail.acme.test; s=s1;"),
            "{raw}"
        );
        assert!(raw.contains("c=relaxed/relaxed;"), "{raw}");
        assert!(!format!("{:?}", email.dkim).contains("PRIVATE"));
    }

    #[test]
    fn a_pkcs8_key_reads_as_the_same_key() {
        use rsa::pkcs1::DecodeRsaPrivateKey as _;
        use rsa::pkcs8::EncodePrivateKey as _;
        let pair = generate_key().unwrap();
        let pkcs8 = rsa::RsaPrivateKey::from_pkcs1_pem(&pair.private_pem)
            .unwrap()
            .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
            .unwrap();
        let read = key_from_pem(&pkcs8).unwrap();
        assert_eq!(read.private_pem, pair.private_pem);
        assert_eq!(read.public_base64, pair.public_base64);
        assert!(key_from_pem("not a key").is_err());
    }
}
