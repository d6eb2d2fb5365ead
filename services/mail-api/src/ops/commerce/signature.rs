//! The platforms' webhook signatures, checked over the raw body with the source's secret,
//! compared in constant time (`ring::hmac::verify`):
//! - Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "{t}.{body}">` (any
//!   `v1` may match: Stripe sends several while a secret is rolled), refused when `t` is older
//!   than [`STRIPE_TOLERANCE_SECS`], as Stripe's libraries do;
//! - Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body>`.

use base64::Engine as _;
use ring::hmac;

/// How old a Stripe signature's timestamp may be (Stripe's libraries' default).
pub const STRIPE_TOLERANCE_SECS: i64 = 300;

/// Why a signature was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Missing, malformed or not made with the secret.
    Wrong,
    /// Made with the secret, but older than the tolerance (a replay).
    Stale,
}

/// Checks a `Stripe-Signature` header against the body at `now` (unix seconds).
pub fn verify_stripe(secret: &str, header: &str, body: &[u8], now: i64) -> Result<(), Refused> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", sig)) => signatures.extend(hex_decode(sig)),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(Refused::Wrong)?;
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut signed = format!("{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    if !signatures
        .iter()
        .any(|sig| hmac::verify(&key, &signed, sig).is_ok())
    {
        return Err(Refused::Wrong);
    }
    if now - timestamp > STRIPE_TOLERANCE_SECS {
        return Err(Refused::Stale);
    }
    Ok(())
}

/// Checks an `X-Shopify-Hmac-Sha256` header against the body.
pub fn verify_shopify(secret: &str, header: &str, body: &[u8]) -> Result<(), Refused> {
    let signature = base64::engine::general_purpose::STANDARD
        .decode(header.trim())
        .map_err(|_| Refused::Wrong)?;
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    hmac::verify(&key, body, &signature).map_err(|_| Refused::Wrong)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stripe_header(secret: &str, t: i64, body: &[u8]) -> String {
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
        let mut signed = format!("{t}.").into_bytes();
        signed.extend_from_slice(body);
        let tag = hmac::sign(&key, &signed);
        let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("t={t},v1={hex},v0=ignored")
    }

    #[test]
    fn a_stripe_signature_is_checked_with_its_timestamp_and_tolerance() {
        let body = br#"{"id":"evt_1"}"#;
        let header = stripe_header("whsec_test", 1_000, body);
        assert_eq!(verify_stripe("whsec_test", &header, body, 1_000), Ok(()));
        assert_eq!(verify_stripe("whsec_test", &header, body, 1_300), Ok(()));
        assert_eq!(
            verify_stripe("whsec_test", &header, body, 1_301),
            Err(Refused::Stale)
        );
        assert_eq!(
            verify_stripe("whsec_other", &header, body, 1_000),
            Err(Refused::Wrong)
        );
        assert_eq!(
            verify_stripe("whsec_test", &header, br#"{"id":"evt_2"}"#, 1_000),
            Err(Refused::Wrong)
        );
        // The timestamp is signed: changing it breaks the signature.
        let moved = header.replace("t=1000", "t=2000");
        assert_eq!(
            verify_stripe("whsec_test", &moved, body, 2_000),
            Err(Refused::Wrong)
        );
        assert_eq!(
            verify_stripe("whsec_test", "v1=zz", body, 1_000),
            Err(Refused::Wrong)
        );
        // A second v1 (a rolled secret) may be the one that matches.
        let rolled = format!("t=1000,v1=00ff,{}", &header["t=1000,".len()..]);
        assert_eq!(verify_stripe("whsec_test", &rolled, body, 1_000), Ok(()));
    }

    #[test]
    fn a_shopify_signature_is_the_base64_hmac_of_the_body() {
        let body = br#"{"id":820982911946154508}"#;
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"shpss_test");
        let header =
            base64::engine::general_purpose::STANDARD.encode(hmac::sign(&key, body).as_ref());
        assert_eq!(verify_shopify("shpss_test", &header, body), Ok(()));
        assert_eq!(
            verify_shopify("shpss_other", &header, body),
            Err(Refused::Wrong)
        );
        assert_eq!(
            verify_shopify("shpss_test", "not base64!", body),
            Err(Refused::Wrong)
        );
    }
}
