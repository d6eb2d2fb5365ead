//! The first-party pages: sign-in and consent, plain HTML forms, each with a CSRF token.

use maud::{DOCTYPE, Markup, html};

fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) }
                style { "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}\
                         label{display:block;margin-top:1rem}input{display:block;width:100%;padding:.4rem}\
                         button{margin-top:1.2rem;padding:.5rem 1.2rem}.error{color:#a00}" }
            }
            body { main { (body) } }
        }
    }
}

pub struct SignIn<'a> {
    pub service: &'a str,
    pub client_name: &'a str,
    pub action: &'a str,
    pub csrf: &'a str,
    pub request: &'a str,
    pub error: Option<&'a str>,
}

pub fn sign_in(p: &SignIn<'_>) -> Markup {
    layout(
        &format!("Sign in to {}", p.service),
        html! {
            h1 { "Sign in to " (p.service) }
            p { (p.client_name) " asks for access to your account. Sign in to continue." }
            @if let Some(error) = p.error {
                p.error role="alert" { (error) }
            }
            form method="post" action=(p.action) {
                input type="hidden" name="csrf" value=(p.csrf);
                input type="hidden" name="request" value=(p.request);
                label for="email" { "Email" }
                input id="email" type="email" name="email" autocomplete="username" required;
                label for="password" { "Password" }
                input id="password" type="password" name="password" autocomplete="current-password" required;
                button type="submit" { "Sign in" }
            }
        },
    )
}

pub struct Consent<'a> {
    pub service: &'a str,
    pub client_name: &'a str,
    pub account: &'a str,
    pub scopes: &'a [String],
    pub resource: &'a str,
    pub action: &'a str,
    pub csrf: &'a str,
    pub request: &'a str,
}

pub fn consent(p: &Consent<'_>) -> Markup {
    layout(
        &format!("Allow {}?", p.client_name),
        html! {
            h1 { "Allow " strong { (p.client_name) } "?" }
            p { "Signed in as " (p.account) "." }
            p { strong { (p.client_name) } " asks for these permissions on " (p.service) ":" }
            ul id="scopes" {
                @for scope in p.scopes { li { code { (scope) } } }
            }
            p { "Resource: " code id="resource" { (p.resource) } }
            form method="post" action=(p.action) {
                input type="hidden" name="csrf" value=(p.csrf);
                input type="hidden" name="request" value=(p.request);
                button type="submit" name="decision" value="approve" { "Allow" }
                " "
                button type="submit" name="decision" value="deny" { "Deny" }
            }
        },
    )
}

pub fn message(title: &str, text: &str) -> Markup {
    layout(title, html! { h1 { (title) } p { (text) } })
}
