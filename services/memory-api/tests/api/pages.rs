//! The pages a browser finds without a credential: the landing page at `/`, the API reference
//! and its vendored files; JSON clients still get the JSON 404 at `/`.

use test_support::pages::{BROWSER_ACCEPT, check_landing, check_reference};

use crate::common::*;

const OPENAPI: &str = "/api/v1/openapi.json";

#[tokio::test]
async fn a_browser_finds_the_landing_page_and_the_api_reference() {
    let h = Harness::new().await;
    let page = check_landing(
        &h.anonymous(),
        OPENAPI,
        &[
            "/dashboard/sign-in",
            "/dashboard/proposals",
            "/api/v1/openapi.yaml",
        ],
    )
    .await;
    assert!(page.contains("<title>memory-api</title>"), "{page}");
    check_reference(&h.anonymous(), OPENAPI).await;
}

#[tokio::test]
async fn other_clients_still_get_the_json_404_at_the_root() {
    let h = Harness::new().await;
    for accept in [
        None,
        Some("*/*"),
        Some("application/json"),
        Some("application/json, text/html"),
    ] {
        let mut call = h.anonymous().get("/");
        if let Some(accept) = accept {
            call = call.header("accept", accept);
        }
        let err = expect_error(call.await, 404, "NOT_FOUND").await;
        assert_eq!(err, "no such route", "{accept:?}");
    }
    // Only GET is the page.
    let post = h
        .http
        .post(h.server.url("/"))
        .header("accept", BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    expect_error(post, 404, "NOT_FOUND").await;
}
