//! PKCE (RFC 7636), S256 only.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A verifier or an S256 challenge: 43 to 128 unreserved characters.
pub fn well_formed(value: &str) -> bool {
    (43..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// BASE64URL(SHA256(verifier)) == challenge, compared in constant time.
pub fn verify(verifier: &str, challenge: &str) -> bool {
    if !well_formed(verifier) {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(store::sha256(verifier.as_bytes()));
    auth::credential::hashes_equal(computed.as_bytes(), challenge.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(verify(verifier, challenge));
        assert!(!verify(challenge, challenge));
        assert!(!verify("short", challenge));
    }
}
