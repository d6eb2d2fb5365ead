//! An HTTP server in the test standing in for Facebook, Instagram, Threads, Reddit, Pinterest,
//! TikTok and YouTube: each one's documented endpoints (the code exchange and what follows it,
//! refresh, publishing and its media step) answering their documented JSON, and an error
//! answer of each in its own shape. It also serves a video's bytes (`/media/…`), which the
//! service fetches for YouTube.

use std::sync::{Arc, Mutex};

use data_encoding::{BASE64URL_NOPAD, HEXLOWER};
use serde_json::{Value, json};

use crate::social_platforms::{Request, read};

/// The bytes of the video the server serves.
pub const VIDEO: &[u8] = b"\x00\x00\x00\x18ftypmp42 not really a video";

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    /// The PKCE challenges the authorization pages were sent, by platform.
    challenges: Vec<(String, String)>,
}

#[derive(Clone)]
pub struct More {
    port: u16,
    state: Arc<Mutex<State>>,
}

/// status, headers, body (JSON, or raw bytes with their content type).
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    content_type: &'static str,
}

fn ok(body: Value) -> Answer {
    answer(200, body)
}

fn answer(status: u16, body: Value) -> Answer {
    Answer {
        status,
        headers: vec![],
        body: body.to_string().into_bytes(),
        content_type: "application/json",
    }
}

/// Meta's Graph API error envelope.
fn graph_error(status: u16, code: i64, message: &str) -> Answer {
    answer(
        status,
        json!({"error": {"message": message, "type": "OAuthException", "code": code,
                          "fbtrace_id": "AbCdEf"}}),
    )
}

impl More {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    let Some(request) = read(&mut socket).await else {
                        return;
                    };
                    let reply = {
                        let mut state = state.lock().unwrap();
                        state.requests.push(request.clone());
                        respond(&mut state, port, &request)
                    };
                    let mut head = format!(
                        "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n",
                        reply.status,
                        reply.content_type,
                        reply.body.len()
                    );
                    for (name, value) in reply.headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    let mut bytes = head.into_bytes();
                    bytes.extend_from_slice(&reply.body);
                    let _ = socket.write_all(&bytes).await;
                });
            }
        });
        Self { port, state }
    }

    pub fn url(&self, platform: &str) -> String {
        format!("http://127.0.0.1:{}/{platform}", self.port)
    }

    /// The requests whose method is `method` and whose path (without its query) ends with
    /// `path_end`, in order.
    pub fn requests(&self, method: &str, path_end: &str) -> Vec<Request> {
        self.state
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|r| {
                r.method == method && r.path.split('?').next().unwrap_or("").ends_with(path_end)
            })
            .cloned()
            .collect()
    }

    /// Remembers the PKCE challenge `platform`'s authorization page was sent.
    pub fn challenge(&self, platform: &str, challenge: &str) {
        self.state
            .lock()
            .unwrap()
            .challenges
            .push((platform.to_owned(), challenge.to_owned()));
    }
}

/// The query of a request as pairs.
pub fn query(req: &Request) -> std::collections::HashMap<String, String> {
    let query = req.path.split_once('?').map(|(_, q)| q).unwrap_or("");
    url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

fn verifier_matches(state: &State, platform: &str, verifier: &str, hex: bool) -> bool {
    let digest = store::sha256(verifier.as_bytes());
    let expected = if hex {
        HEXLOWER.encode(&digest)
    } else {
        BASE64URL_NOPAD.encode(&digest)
    };
    state
        .challenges
        .iter()
        .any(|(p, c)| p == platform && *c == expected)
}

fn respond(state: &mut State, port: u16, req: &Request) -> Answer {
    let auth = req.header("authorization").unwrap_or("").to_owned();
    let path = req.path.split('?').next().unwrap_or("").to_owned();
    let q = query(req);
    let form = req.form();
    match (req.method.as_str(), path.as_str()) {
        // --- Facebook (Graph API) ---
        ("GET", "/facebook/v21.0/oauth/access_token") => {
            if q.get("client_secret").map(String::as_str) != Some("facebook-secret") {
                return graph_error(400, 1, "Error validating client secret.");
            }
            match (
                q.get("code"),
                q.get("grant_type"),
                q.get("fb_exchange_token"),
            ) {
                (Some(code), None, _) if code == "good-code" => ok(
                    json!({"access_token": "fb-short", "token_type": "bearer", "expires_in": 5_183_944}),
                ),
                (None, Some(g), Some(t)) if g == "fb_exchange_token" && t == "fb-short" => ok(
                    json!({"access_token": "fb-long", "token_type": "bearer", "expires_in": 5_183_944}),
                ),
                _ => graph_error(400, 100, "Invalid verification code format."),
            }
        }
        ("GET", "/facebook/v21.0/me/accounts") if auth == "Bearer fb-long" => ok(json!({
            "data": [{"access_token": "fb-page", "category": "Brand", "name": "Acme",
                      "id": "1111", "tasks": ["ANALYZE", "ADVERTISE", "MODERATE", "CREATE_CONTENT"]}],
            "paging": {"cursors": {"before": "QVFIUk", "after": "QVFIUk"}}
        })),
        ("POST", "/facebook/v21.0/1111/photos") if auth == "Bearer fb-page" => {
            ok(json!({"id": "2222", "post_id": "1111_3333"}))
        }
        ("POST", "/facebook/v21.0/1111/feed") if auth == "Bearer fb-page" => {
            if form.get("message").is_some_and(|m| m.contains("twice")) {
                return graph_error(400, 506, "(#506) Duplicate status message");
            }
            ok(json!({"id": "1111_4444"}))
        }
        (_, p) if p.starts_with("/facebook/") => graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        ),

        // --- Instagram (Instagram Login) ---
        ("POST", "/instagram/oauth/access_token") => {
            if form.get("code").is_some_and(|c| c == "good-code")
                && form
                    .get("grant_type")
                    .is_some_and(|g| g == "authorization_code")
            {
                ok(
                    json!({"data": [{"access_token": "ig-short", "user_id": "17841400000",
                         "permissions": "instagram_business_basic,instagram_business_content_publish"}]}),
                )
            } else {
                answer(
                    400,
                    json!({"error_type": "OAuthException", "code": 400,
                           "error_message": "Invalid authorization code"}),
                )
            }
        }
        ("GET", "/instagram/access_token")
            if q.get("grant_type")
                .is_some_and(|g| g == "ig_exchange_token")
                && q.get("access_token").is_some_and(|t| t == "ig-short") =>
        {
            ok(json!({"access_token": "ig-long", "token_type": "bearer", "expires_in": 5_183_944}))
        }
        ("GET", "/instagram/refresh_access_token")
            if q.get("grant_type").is_some_and(|g| g == "ig_refresh_token")
                && q.get("access_token").is_some_and(|t| t == "ig-long") =>
        {
            ok(
                json!({"access_token": "ig-long-2", "token_type": "bearer", "expires_in": 5_183_944}),
            )
        }
        ("POST", "/instagram/v21.0/17841400000/media") if auth == "Bearer ig-long-2" => {
            if form
                .get("image_url")
                .is_some_and(|u| u.contains("not-an-image"))
            {
                return graph_error(
                    400,
                    9004,
                    "Only photo or video can be accepted as media type.",
                );
            }
            ok(json!({"id": "17889455560051444"}))
        }
        ("POST", "/instagram/v21.0/17841400000/media_publish") if auth == "Bearer ig-long-2" => {
            if form
                .get("creation_id")
                .is_some_and(|c| c == "17889455560051444")
            {
                ok(json!({"id": "17920238422030506"}))
            } else {
                graph_error(400, 9007, "Media ID is not available")
            }
        }
        (_, p) if p.starts_with("/instagram/") => graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        ),

        // --- Threads ---
        ("POST", "/threads/oauth/access_token") => {
            if form.get("code").is_some_and(|c| c == "good-code")
                && form
                    .get("client_secret")
                    .is_some_and(|c| c == "threads-secret")
            {
                ok(json!({"access_token": "th-short", "user_id": 2_570_000}))
            } else {
                graph_error(400, 100, "Invalid code")
            }
        }
        ("GET", "/threads/access_token")
            if q.get("grant_type")
                .is_some_and(|g| g == "th_exchange_token")
                && q.get("access_token").is_some_and(|t| t == "th-short") =>
        {
            ok(json!({"access_token": "th-long", "token_type": "bearer", "expires_in": 5_183_944}))
        }
        ("GET", "/threads/refresh_access_token")
            if q.get("grant_type").is_some_and(|g| g == "th_refresh_token")
                && q.get("access_token").is_some_and(|t| t == "th-long") =>
        {
            ok(
                json!({"access_token": "th-long-2", "token_type": "bearer", "expires_in": 5_183_944}),
            )
        }
        // `th-long` is found expired when publishing (error 190): only the refreshed token works.
        ("POST", "/threads/v1.0/2570000/threads") if auth == "Bearer th-long-2" => {
            ok(json!({"id": "th-container-1"}))
        }
        ("POST", "/threads/v1.0/2570000/threads_publish") if auth == "Bearer th-long-2" => {
            ok(json!({"id": "18050206876707110"}))
        }
        (_, p) if p.starts_with("/threads/") => graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        ),

        // --- Reddit ---
        ("POST", "/reddit/api/v1/access_token") => {
            if auth
                != format!(
                    "Basic {}",
                    data_encoding::BASE64.encode(b"reddit-client:reddit-secret")
                )
            {
                return answer(401, json!({"message": "Unauthorized", "error": 401}));
            }
            match form.get("grant_type").map(String::as_str) {
                Some("authorization_code")
                    if form.get("code").is_some_and(|c| c == "good-code") =>
                {
                    ok(
                        json!({"access_token": "r-1", "token_type": "bearer", "expires_in": 86400,
                           "refresh_token": "r-r", "scope": "identity submit"}),
                    )
                }
                Some("refresh_token") if form.get("refresh_token").is_some_and(|r| r == "r-r") => {
                    ok(
                        json!({"access_token": "r-2", "token_type": "bearer", "expires_in": 86400,
                           "scope": "identity submit"}),
                    )
                }
                _ => ok(json!({"error": "invalid_grant"})),
            }
        }
        ("GET", "/reddit/api/v1/me") if auth == "Bearer r-1" => {
            ok(json!({"name": "tester", "id": "abc"}))
        }
        ("POST", "/reddit/api/submit") if auth == "Bearer r-2" => {
            if form.get("sr").is_some_and(|s| s == "nosuchsub") {
                return ok(json!({"json": {"errors": [["SUBREDDIT_NOEXIST",
                    "Hmm, that community doesn't exist. Try checking the spelling.", "sr"]]}}));
            }
            ok(json!({"json": {"errors": [], "data": {
                "url": "https://www.reddit.com/r/rust/comments/abc123/launch/",
                "drafts_count": 0, "id": "abc123", "name": "t3_abc123"}}}))
        }
        (_, p) if p.starts_with("/reddit/") => {
            answer(401, json!({"message": "Unauthorized", "error": 401}))
        }

        // --- Pinterest (API v5) ---
        ("POST", "/pinterest/v5/oauth/token") => {
            if auth
                != format!(
                    "Basic {}",
                    data_encoding::BASE64.encode(b"pinterest-client:pinterest-secret")
                )
            {
                return answer(401, json!({"code": 2, "message": "Authentication failed."}));
            }
            match form.get("grant_type").map(String::as_str) {
                Some("authorization_code")
                    if form.get("code").is_some_and(|c| c == "good-code") =>
                {
                    ok(json!({
                    "access_token": "pina-1", "refresh_token": "pinr-1",
                    "response_type": "authorization_code", "token_type": "bearer",
                    "expires_in": 2_592_000, "refresh_token_expires_in": 31_536_000,
                    "scope": "boards:read,pins:read,pins:write,user_accounts:read"}))
                }
                Some("refresh_token")
                    if form.get("refresh_token").is_some_and(|r| r == "pinr-1") =>
                {
                    ok(json!({
                    "access_token": "pina-2", "response_type": "refresh_token",
                    "token_type": "bearer", "expires_in": 2_592_000,
                    "scope": "boards:read,pins:read,pins:write,user_accounts:read"}))
                }
                _ => answer(400, json!({"code": 1, "message": "Invalid request"})),
            }
        }
        ("GET", "/pinterest/v5/user_account") if auth == "Bearer pina-1" => {
            ok(json!({"account_type": "BUSINESS", "username": "acme"}))
        }
        ("POST", "/pinterest/v5/pins") if auth == "Bearer pina-2" => {
            let pin = req.json();
            if pin["board_id"] != "549755885175" {
                return answer(404, json!({"code": 2, "message": "Board not found."}));
            }
            answer(
                201,
                json!({"id": "813744226420795884", "created_at": "2027-01-11T00:00:00",
                               "board_id": pin["board_id"], "title": pin["title"],
                               "description": pin["description"], "link": pin["link"]}),
            )
        }
        (_, p) if p.starts_with("/pinterest/") => {
            answer(401, json!({"code": 2, "message": "Authentication failed."}))
        }

        // --- TikTok (Content Posting API) ---
        ("POST", "/tiktok/v2/oauth/token/") => {
            let secret = form
                .get("client_secret")
                .is_some_and(|s| s == "tiktok-secret")
                && form.get("client_key").is_some_and(|k| k == "tiktok-client");
            match form.get("grant_type").map(String::as_str) {
                Some("authorization_code")
                    if secret
                        && form.get("code").is_some_and(|c| c == "good-code")
                        && form
                            .get("code_verifier")
                            .is_some_and(|v| verifier_matches(state, "tiktok", v, true)) =>
                {
                    ok(
                        json!({"access_token": "act.1", "expires_in": 86400, "open_id": "open-1",
                              "refresh_expires_in": 31_536_000, "refresh_token": "rft.1",
                              "scope": "user.info.basic,video.publish", "token_type": "Bearer"}),
                    )
                }
                Some("refresh_token")
                    if secret && form.get("refresh_token").is_some_and(|r| r == "rft.1") =>
                {
                    ok(
                        json!({"access_token": "act.2", "expires_in": 86400, "open_id": "open-1",
                              "refresh_expires_in": 31_536_000, "refresh_token": "rft.2",
                              "scope": "user.info.basic,video.publish", "token_type": "Bearer"}),
                    )
                }
                _ => ok(json!({"error": "invalid_grant",
                               "error_description": "Authorization code is expired.", "log_id": "x"})),
            }
        }
        ("POST", "/tiktok/v2/post/publish/creator_info/query/") if auth == "Bearer act.2" => {
            ok(json!({
            "data": {"creator_avatar_url": "https://p16.example/a.jpeg", "creator_username": "tester",
                     "creator_nickname": "Tester",
                     "privacy_level_options": ["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"],
                     "comment_disabled": false, "duet_disabled": false, "stitch_disabled": true,
                     "max_video_post_duration_sec": 300},
            "error": {"code": "ok", "message": "", "log_id": "20270111"}}))
        }
        ("POST", "/tiktok/v2/post/publish/video/init/") if auth == "Bearer act.2" => {
            let body = req.json();
            if body["source_info"]["video_url"]
                .as_str()
                .is_some_and(|u| u.contains("unverified"))
            {
                return answer(
                    403,
                    json!({"error": {"code": "url_ownership_unverified",
                    "message": "Please review our URL ownership verification rules.",
                    "log_id": "20270111"}}),
                );
            }
            ok(json!({"data": {"publish_id": "v_pub_url~v2.7431"},
                      "error": {"code": "ok", "message": "", "log_id": "20270111"}}))
        }
        (_, p) if p.starts_with("/tiktok/") => answer(
            401,
            json!({"error": {"code": "access_token_invalid",
            "message": "The access token is invalid or not found in the request.", "log_id": "x"}}),
        ),

        // --- Google OAuth and YouTube Data API v3 ---
        ("POST", "/google/token") => {
            let client = form.get("client_id").is_some_and(|c| c == "youtube-client")
                && form
                    .get("client_secret")
                    .is_some_and(|c| c == "youtube-secret");
            match form.get("grant_type").map(String::as_str) {
                Some("authorization_code")
                    if client
                        && form.get("code").is_some_and(|c| c == "good-code")
                        && form
                            .get("code_verifier")
                            .is_some_and(|v| verifier_matches(state, "youtube", v, false)) =>
                {
                    ok(
                        json!({"access_token": "ya29.a", "expires_in": 3599, "refresh_token": "1//r",
                              "scope": "https://www.googleapis.com/auth/youtube.upload",
                              "token_type": "Bearer"}),
                    )
                }
                Some("refresh_token")
                    if client && form.get("refresh_token").is_some_and(|r| r == "1//r") =>
                {
                    ok(json!({"access_token": "ya29.b", "expires_in": 3599,
                              "scope": "https://www.googleapis.com/auth/youtube.upload",
                              "token_type": "Bearer"}))
                }
                _ => answer(
                    400,
                    json!({"error": "invalid_grant", "error_description": "Bad Request"}),
                ),
            }
        }
        ("GET", "/youtube/youtube/v3/channels") if auth == "Bearer ya29.a" => ok(json!({
            "kind": "youtube#channelListResponse",
            "items": [{"kind": "youtube#channel", "id": "UC123", "snippet": {"title": "Acme Videos"}}]})),
        // `ya29.a` is refused when uploading: only the refreshed token works.
        ("POST", "/youtube/upload/youtube/v3/videos") if auth == "Bearer ya29.b" => Answer {
            status: 200,
            headers: vec![(
                "location",
                format!(
                    "http://127.0.0.1:{port}/youtube/upload/youtube/v3/videos?uploadType=resumable&upload_id=xa298sd_f"
                ),
            )],
            body: Vec::new(),
            content_type: "text/plain",
        },
        ("PUT", "/youtube/upload/youtube/v3/videos") if auth == "Bearer ya29.b" => ok(json!({
            "kind": "youtube#video", "id": "dQw4w9WgXcQ",
            "snippet": {"title": "Launch"}, "status": {"uploadStatus": "uploaded"}})),
        (_, p) if p.starts_with("/youtube/") => answer(
            401,
            json!({"error": {"code": 401,
            "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}),
        ),

        // --- media ---
        ("GET", "/media/launch.mp4") => Answer {
            status: 200,
            headers: vec![],
            body: VIDEO.to_vec(),
            content_type: "video/mp4",
        },
        _ => answer(404, json!({"error": "not found"})),
    }
}
