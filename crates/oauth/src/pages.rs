//! The first-party pages: sign-in, consent and connected apps, plain HTML forms, each with a
//! CSRF token. A service's own pages use [`layout`] and [`nav`] too.

use maud::{DOCTYPE, Markup, html};

/// A whole page: `title` and `body`, in the pages' plain style.
pub fn layout(title: &str, body: Markup) -> Markup {
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
                         button{margin-top:1.2rem;padding:.5rem 1.2rem}.error{color:#a00}\
                         nav ul{list-style:none;padding:0;display:flex;gap:1rem;align-items:center}nav button{margin-top:0}\
                         .item{border-top:1px solid #ccc;padding:.5rem 0}.item form{display:inline}\
                         pre{white-space:pre-wrap;background:#f4f4f4;padding:.5rem}" }
            }
            body { main { (body) } }
        }
    }
}

pub struct SignIn<'a> {
    pub service: &'a str,
    /// The client of the authorization request (none: the service's own pages).
    pub client_name: Option<&'a str>,
    pub action: &'a str,
    pub csrf: &'a str,
    /// The authorization request to come back to.
    pub request: Option<&'a str>,
    /// The page of the service's own to come back to.
    pub next: Option<&'a str>,
    pub error: Option<&'a str>,
}

pub fn sign_in(p: &SignIn<'_>) -> Markup {
    layout(
        &format!("Sign in to {}", p.service),
        html! {
            h1 { "Sign in to " (p.service) }
            @if let Some(client) = p.client_name {
                p { (client) " asks for access to your account. Sign in to continue." }
            }
            @if let Some(error) = p.error {
                p.error role="alert" { (error) }
            }
            form method="post" action=(p.action) {
                input type="hidden" name="csrf" value=(p.csrf);
                @if let Some(request) = p.request {
                    input type="hidden" name="request" value=(request);
                }
                @if let Some(next) = p.next {
                    input type="hidden" name="next" value=(next);
                }
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

/// The links between a service's own pages, and the sign-out form.
pub fn nav(links: &[(&str, &str)], sign_out: &str, csrf: &str) -> Markup {
    html! {
        nav aria-label="Account" {
            ul {
                @for (href, label) in links { li { a href=(href) { (label) } } }
                li {
                    form method="post" action=(sign_out) {
                        input type="hidden" name="csrf" value=(csrf);
                        button type="submit" { "Sign out" }
                    }
                }
            }
        }
    }
}

/// One connected app (a grant the person gave) on the connected-apps page.
pub struct ConnectedApp {
    pub grant_id: String,
    pub client_name: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub granted_at: String,
}

pub struct ConnectedApps<'a> {
    pub service: &'a str,
    pub account: &'a str,
    pub nav: Markup,
    pub apps: &'a [ConnectedApp],
    /// The revoke form's action, with `{id}` in place of the grant's id.
    pub revoke_action: &'a str,
    pub csrf: &'a str,
}

pub fn connected_apps(p: &ConnectedApps<'_>) -> Markup {
    layout(
        &format!("Connected apps · {}", p.service),
        html! {
            (p.nav)
            h1 { "Connected apps" }
            p { "Signed in as " (p.account) ". These apps may act on your " (p.service) " account." }
            @if p.apps.is_empty() {
                p id="no-apps" { "No app is connected." }
            }
            @for app in p.apps {
                section.item aria-label=(app.client_name) {
                    h2 { (app.client_name) }
                    p { "Permissions: "
                        @for scope in &app.scopes { code { (scope) } " " }
                    }
                    p { "Resource: " code { (app.resource) } }
                    p { "Connected " time { (app.granted_at) } }
                    form method="post" action=(p.revoke_action.replace("{id}", &app.grant_id)) {
                        input type="hidden" name="csrf" value=(p.csrf);
                        button type="submit" { "Revoke access of " (app.client_name) }
                    }
                }
            }
        },
    )
}
