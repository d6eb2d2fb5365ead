//! The signed values of signup forms, under a key derived from the tracking-link key (a
//! token of one kind never passes for the other): the time a form page was rendered (the
//! minimum fill time) and the link that confirms a signup, with its expiry.

use data_encoding::BASE64URL_NOPAD;
use ring::hmac;
use uuid::Uuid;

/// Signs and checks the forms' values; links are served under `base_url`.
pub struct FormLinks {
    base_url: String,
    key: hmac::Key,
}

impl std::fmt::Debug for FormLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormLinks")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl FormLinks {
    /// Links under `base_url`, signed with a key derived from the tracking secret.
    pub fn new(base_url: &str, tracking_secret: &[u8]) -> Self {
        let parent = hmac::Key::new(hmac::HMAC_SHA256, tracking_secret);
        let derived = hmac::sign(&parent, b"mail-api signup forms v1");
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            key: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
        }
    }

    fn sign(&self, payload: &str) -> String {
        BASE64URL_NOPAD.encode(hmac::sign(&self.key, payload.as_bytes()).as_ref())
    }

    fn verified<'a>(&self, token: &'a str, context: &str) -> Option<&'a str> {
        let (payload, signature) = token.rsplit_once('.')?;
        let signature = BASE64URL_NOPAD.decode(signature.as_bytes()).ok()?;
        hmac::verify(
            &self.key,
            format!("{context}|{payload}").as_bytes(),
            &signature,
        )
        .ok()?;
        Some(payload)
    }

    /// The hosted page of form `form_id`.
    pub fn form_url(&self, form_id: Uuid) -> String {
        format!("{}/f/{form_id}", self.base_url)
    }

    /// The render stamp of form `form_id` at `millis` (Unix time in milliseconds).
    pub fn stamp_at(&self, form_id: Uuid, millis: i64) -> String {
        let signature = self.sign(&format!("stamp {form_id}|{millis}"));
        format!("{millis}.{signature}")
    }

    /// When the page holding `stamp` was rendered for form `form_id`; `None` unless signed.
    pub fn rendered_at(&self, form_id: Uuid, stamp: &str) -> Option<i64> {
        self.verified(stamp, &format!("stamp {form_id}"))?
            .parse()
            .ok()
    }

    /// The confirmation link of signup `submission_id`, valid until `expires_at` (Unix time in
    /// seconds).
    pub fn confirm_url(&self, submission_id: Uuid, expires_at: i64) -> String {
        let payload = format!("{}{expires_at:x}", submission_id.simple());
        let signature = self.sign(&format!("confirm|{payload}"));
        format!("{}/f/confirm/{payload}.{signature}", self.base_url)
    }

    /// The signup and expiry (Unix time in seconds) of a confirmation token; `None` unless
    /// signed.
    pub fn confirmation(&self, token: &str) -> Option<(Uuid, i64)> {
        let payload = self.verified(token, "confirm")?;
        let (id, expires_at) = payload.split_at_checked(32)?;
        Some((
            Uuid::parse_str(id).ok()?,
            i64::from_str_radix(expires_at, 16).ok()?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_holds_for_its_form_only_and_a_link_for_its_signup() {
        let links = FormLinks::new("https://mail.example/", b"0123456789abcdef0123456789abcdef");
        let (form, other) = (Uuid::new_v4(), Uuid::new_v4());
        let stamp = links.stamp_at(form, 1_700_000_000_123);
        assert_eq!(links.rendered_at(form, &stamp), Some(1_700_000_000_123));
        assert_eq!(links.rendered_at(other, &stamp), None);
        assert_eq!(
            links.rendered_at(form, &stamp.replace("123.", "124.")),
            None
        );
        let url = links.confirm_url(form, 1_800_000_000);
        let token = url.strip_prefix("https://mail.example/f/confirm/").unwrap();
        assert_eq!(links.confirmation(token), Some((form, 1_800_000_000)));
        assert_eq!(links.confirmation(&format!("{token}x")), None);
        assert_eq!(links.confirmation(&stamp), None);
    }
}
