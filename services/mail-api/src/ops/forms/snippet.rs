//! The embeddable snippet: a plain HTML form (escaped by the template library) that posts to
//! the hosted page's address.

use maud::html;

use super::FormField;
use super::signup::{EMAIL, HONEYPOT};

/// The snippet of the form served at `url`.
pub fn embed_html(url: &str, fields: &[FormField], consent_text: &str) -> String {
    html! {
        form method="post" action=(url) accept-charset="utf-8" {
            p { label { "Email " input type="email" name=(EMAIL) required autocomplete="email"; } }
            @for field in fields {
                p { label { (field.label) " " input type="text" name=(field.name) required[field.required]; } }
            }
            // The honeypot: people never see it, form-filling bots fill it.
            div hidden aria-hidden="true" {
                label { "Leave this empty " input type="text" name=(HONEYPOT) tabindex="-1" autocomplete="off"; }
            }
            p { (consent_text) }
            button type="submit" { "Subscribe" }
        }
    }
    .into_string()
}
