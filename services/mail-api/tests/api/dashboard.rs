//! The first-party dashboard, driven as a browser would (cookies, CSRF tokens, form posts):
//! a person approves an agent's launch once; keys are made within the person's role and shown
//! once; an invitation's link becomes a sign-in with the invited role, once; another project's
//! ids are 404.

use reqwest::StatusCode;
use serde_json::{Value, json};
use test_support::oauth_client::{Browser, hidden};

use crate::common::*;
use crate::oauth::{EMAIL, PASSWORD, mcp_rpc, mcp_token, setup};

/// Signs `browser` in as `email` through the sign-in page that `page` (a dashboard path)
/// sends it to, and comes back to `page`.
async fn sign_in(h: &Harness, browser: &mut Browser, email: &str, password: &str, page: &str) {
    let res = browser.get(&h.server.url(page)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{page} signed out");
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("/dashboard/sign-in?next="),
        "{location}"
    );
    let form = browser
        .get(&h.server.url(&location))
        .await
        .text()
        .await
        .unwrap();
    let res = browser
        .post_form(
            &h.server.url("/dashboard/sign-in"),
            &[
                ("csrf", &hidden(&form, "csrf")),
                ("next", &hidden(&form, "next")),
                ("email", email),
                ("password", password),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "sign-in of {email}");
    assert_eq!(res.headers()["location"], page);
}

/// The page at `path` (200) and its text.
async fn page(h: &Harness, browser: &mut Browser, path: &str) -> String {
    let res = browser.get(&h.server.url(path)).await;
    let status = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{path}: {text}");
    text
}

/// Posts the form at `path` with the CSRF token of `from`: the status and the page.
async fn post(
    h: &Harness,
    browser: &mut Browser,
    from: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, String) {
    let csrf = hidden(from, "csrf");
    let mut form = vec![("csrf", csrf.as_str())];
    form.extend_from_slice(fields);
    let res = browser.post_form(&h.server.url(path), &form).await;
    (res.status(), res.text().await.unwrap())
}

async fn count(h: &Harness, sql: &str) -> usize {
    h.query(sql).await[0].parse().unwrap()
}

/// The text of the element with `id` (a `code` or `pre` of the page), unescaped.
fn text_of(page: &str, id: &str) -> String {
    let start = page
        .find(&format!(r#"id="{id}""#))
        .unwrap_or_else(|| panic!("no #{id} in {page}"));
    let rest = &page[start..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest[open..].find('<').unwrap();
    rest[open..open + close].replace("&amp;", "&")
}

/// An agent's pending launch of a campaign to the site's one subscriber: (site, approval id).
async fn agents_launch(h: &Harness, admin: &str) -> (String, String) {
    let site = h.site(admin, "dashboard").await;
    let contact = json!({"email": "reader@example.com", "site_id": site});
    let res = h.post_json(admin, "/api/v1/contacts", &contact).await;
    assert_eq!(res.status(), 201);
    let token = mcp_token(h).await;
    let launch = json!({"name": "Agent launch", "site_id": site,
        "emails": [{"subject": "Hello {{ first_name | default('there') }}",
                    "html": "<p>Hi {{ first_name | default('there') }}</p><p><a href=\"{{ unsubscribe_url }}\">Unsubscribe</a></p>"}]});
    let (status, _, body) = mcp_rpc(
        h,
        &token,
        "tools/call",
        json!({"name": "launch_campaign", "arguments": launch}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let pending = &body["result"]["structuredContent"];
    assert_eq!(pending["approval_required"], true, "{body}");
    (site, pending["approval_id"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_person_approves_an_agents_launch_on_the_dashboard_once() {
    let (h, project) = setup().await;
    let (_, admin) = h.key(project, auth::Scope::Admin).await;
    let (_, id) = agents_launch(&h, &admin).await;
    let campaigns = format!("SELECT count(*) FROM campaigns WHERE project_id = '{project}'");
    assert_eq!(count(&h, &campaigns).await, 0);

    let mut browser = Browser::new();
    sign_in(&h, &mut browser, EMAIL, PASSWORD, "/dashboard/approvals").await;
    let listed = page(&h, &mut browser, "/dashboard/approvals").await;
    assert!(
        listed.contains(&format!(r#"id="approval-{id}""#)),
        "{listed}"
    );
    assert!(listed.contains("launch the campaign"), "{listed}");
    assert!(listed.contains("an OAuth client"), "{listed}");
    assert!(
        listed.contains("Reaches <strong>1</strong> contact now."),
        "{listed}"
    );
    // The first email, personalized for the sample contact (Ada).
    assert!(listed.contains("Hello Ada"), "{listed}");

    // A post without the page's CSRF token does nothing.
    let approve = format!("/dashboard/approvals/{id}/approve");
    let res = browser
        .post_form(&h.server.url(&approve), &[("csrf", "forged")])
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(count(&h, &campaigns).await, 0);

    let (status, _) = post(&h, &mut browser, &listed, &approve, &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(count(&h, &campaigns).await, 1);
    let enrolled = format!("SELECT count(*) FROM enrollments WHERE project_id = '{project}'");
    assert_eq!(count(&h, &enrolled).await, 1);
    let decided = h
        .query(&format!(
            "SELECT concat_ws('|', status, decided_by) FROM approvals WHERE id = '{id}'"
        ))
        .await;
    let account = h
        .query(&format!(
            "SELECT id::text FROM oauth_accounts WHERE email = '{EMAIL}'"
        ))
        .await;
    assert_eq!(decided, [format!("approved|{}", account[0])]);

    // Approving it again changes nothing.
    let (status, text) = post(&h, &mut browser, &listed, &approve, &[]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{text}");
    assert!(text.contains("was decided already"), "{text}");
    assert_eq!(count(&h, &campaigns).await, 1);
    let after = page(&h, &mut browser, "/dashboard/approvals").await;
    assert!(after.contains(r#"id="no-approvals""#), "{after}");
}

#[tokio::test]
async fn a_rejection_on_the_dashboard_says_why_and_runs_nothing() {
    let (h, project) = setup().await;
    let (_, admin) = h.key(project, auth::Scope::Admin).await;
    let (_, id) = agents_launch(&h, &admin).await;
    let mut browser = Browser::new();
    sign_in(&h, &mut browser, EMAIL, PASSWORD, "/dashboard/approvals").await;
    let listed = page(&h, &mut browser, "/dashboard/approvals").await;
    let reject = format!("/dashboard/approvals/{id}/reject");
    let (status, text) = post(&h, &mut browser, &listed, &reject, &[("reason", "  ")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let (status, _) = post(
        &h,
        &mut browser,
        &listed,
        &reject,
        &[("reason", "Not this week")],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let checked = h
        .api(&admin)
        .get(&format!("/api/v1/approvals/{id}"))
        .expect(200)
        .await;
    assert_eq!(checked["status"], "rejected", "{checked}");
    assert_eq!(checked["reason"], "Not this week");
    let campaigns = format!("SELECT count(*) FROM campaigns WHERE project_id = '{project}'");
    assert_eq!(count(&h, &campaigns).await, 0);
}

#[tokio::test]
async fn keys_made_on_the_dashboard_are_shown_once_and_work_at_once() {
    let (h, _project) = setup().await;
    let mut browser = Browser::new();
    sign_in(&h, &mut browser, EMAIL, PASSWORD, "/dashboard/keys").await;
    let form = page(&h, &mut browser, "/dashboard/keys").await;
    let (status, made) = post(
        &h,
        &mut browser,
        &form,
        "/dashboard/keys",
        &[
            ("name", "Agent of the newsletter"),
            ("scope", "write"),
            ("tool_groups", "campaigns"),
            ("tool_groups", "drafts"),
            ("agent", "true"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{made}");
    let secret = text_of(&made, "new-key-secret");
    assert!(secret.starts_with("mail_"), "{secret}");
    let keys = h.api(&secret).get("/api/v1/api-keys").await;
    // A write key limited to campaigns and drafts cannot list keys (admin)…
    assert_eq!(keys.status(), 403);
    // …and drafts answer it.
    h.api(&secret).get("/api/v1/drafts").expect(200).await;
    // The secret is not shown again.
    let again = page(&h, &mut browser, "/dashboard/keys").await;
    assert!(!again.contains(&secret), "the secret is shown once");
    assert!(again.contains("Agent of the newsletter"), "{again}");
    assert!(again.contains(" · agent"), "{again}");

    // An agent's key never holds the approve right.
    let (status, text) = post(
        &h,
        &mut browser,
        &again,
        "/dashboard/keys",
        &[("name", "both"), ("agent", "true"), ("approve", "true")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");

    // Revoked at once.
    let id = h
        .query("SELECT id::text FROM api_keys WHERE name = 'Agent of the newsletter'")
        .await;
    let (status, _) = post(
        &h,
        &mut browser,
        &again,
        &format!("/dashboard/keys/{}/revoke", id[0]),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let res = h.api(&secret).get("/api/v1/drafts").await;
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn an_invitation_link_makes_a_sign_in_with_its_role_once() {
    let (h, project) = setup().await;
    let mut owner = Browser::new();
    sign_in(&h, &mut owner, EMAIL, PASSWORD, "/dashboard/team").await;
    let team = page(&h, &mut owner, "/dashboard/team").await;
    let (status, invited) = post(
        &h,
        &mut owner,
        &team,
        "/dashboard/team",
        &[("email", "Viewer@Example.com"), ("role", "viewer")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{invited}");
    let link = text_of(&invited, "join-link");
    let path = link[link.find("/dashboard/join?token=").expect(&link)..].to_owned();

    let mut newcomer = Browser::new();
    let join = page(&h, &mut newcomer, &path).await;
    assert!(join.contains("viewer@example.com"), "{join}");
    let token = hidden(&join, "token");
    let fields = |password: &'static str, again: &'static str| {
        vec![
            ("token", token.clone()),
            ("password", password.to_owned()),
            ("password_again", again.to_owned()),
        ]
    };
    for (password, again, expected) in [
        (
            "a long enough password",
            "another long password",
            StatusCode::BAD_REQUEST,
        ),
        ("short", "short", StatusCode::BAD_REQUEST),
    ] {
        let f = fields(password, again);
        let f: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, text) = post(&h, &mut newcomer, &join, "/dashboard/join", &f).await;
        assert_eq!(status, expected, "{text}");
    }
    let f = fields("a long enough password", "a long enough password");
    let f: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, text) = post(&h, &mut newcomer, &join, "/dashboard/join", &f).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        text.contains("You joined the project as <strong>viewer</strong>"),
        "{text}"
    );
    // Once.
    let (status, text) = post(&h, &mut newcomer, &join, "/dashboard/join", &f).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    let members = h
        .query(&format!(
            "SELECT concat_ws('|', email, role, status) FROM team_members WHERE project_id = '{project}'"
        ))
        .await;
    assert_eq!(members, ["viewer@example.com|viewer|active"]);

    // The viewer signs in: reads approvals, decides nothing, manages no key.
    let mut viewer = Browser::new();
    sign_in(
        &h,
        &mut viewer,
        "viewer@example.com",
        "a long enough password",
        "/dashboard/approvals",
    )
    .await;
    let approvals = page(&h, &mut viewer, "/dashboard/approvals").await;
    assert!(
        approvals.contains("Only an admin of the project approves"),
        "{approvals}"
    );
    let res = viewer.get(&h.server.url("/dashboard/keys")).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let (status, _) = post(
        &h,
        &mut viewer,
        &approvals,
        "/dashboard/team",
        &[("email", "more@example.com")],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn another_projects_ids_are_not_found_on_the_dashboard() {
    let (h, project) = setup().await;
    let (_, admin) = h.key(project, auth::Scope::Admin).await;
    let (_, id) = agents_launch(&h, &admin).await;
    let key_id = h
        .query(&format!(
            "SELECT id::text FROM api_keys WHERE project_id = '{project}' LIMIT 1"
        ))
        .await;
    // A person of another project.
    let other = h.project(rate_limit::policy::Plan::Managed).await;
    oauth::db::create_account(&mut h.conn().await, "other@example.com", PASSWORD, other)
        .await
        .unwrap();
    let mut browser = Browser::new();
    sign_in(
        &h,
        &mut browser,
        "other@example.com",
        PASSWORD,
        "/dashboard/approvals",
    )
    .await;
    let listed = page(&h, &mut browser, "/dashboard/approvals").await;
    assert!(
        !listed.contains(&id),
        "another project's approval is listed: {listed}"
    );
    for path in [
        format!("/dashboard/approvals/{id}/approve"),
        format!("/dashboard/keys/{}/revoke", key_id[0]),
    ] {
        let (status, text) = post(&h, &mut browser, &listed, &path, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {text}");
    }
    let status: Value = h
        .api(&admin)
        .get(&format!("/api/v1/approvals/{id}"))
        .expect(200)
        .await;
    assert_eq!(status["status"], "pending");
}
