//! Rendered files behind signed URLs: no credential, the signature is one; an altered,
//! foreign or expired link answers 403.

use std::time::{Duration, SystemTime};

use objects::{ObjectKey, Objects, UrlSigner};

use crate::common::*;

async fn stored(h: &Harness, key: &str, bytes: &[u8]) -> ObjectKey {
    let key = ObjectKey::parse(key).unwrap();
    let objects = Objects::from_settings(&h.settings.objects).unwrap();
    objects.put(&key, bytes.to_vec()).await.unwrap();
    key
}

fn signer(h: &Harness) -> UrlSigner {
    h.settings
        .objects
        .signer(h.settings.secrets.kek.as_bytes())
        .unwrap()
}

fn path(key: &ObjectKey, q: &objects::SignedQuery) -> String {
    format!(
        "/api/v1/render/downloads/{key}?expires={}&signature={}",
        q.expires, q.signature
    )
}

#[tokio::test]
async fn a_signed_link_downloads_the_file_without_a_credential() {
    let h = Harness::new().await;
    let key = stored(&h, "producibles/report.pdf", b"%PDF-1.7 body").await;
    let q = signer(&h).sign(&key, SystemTime::now());
    let res = h.get(&path(&key, &q)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let headers = res.headers().clone();
    assert_eq!(headers["content-type"], "application/pdf");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"report.pdf\""
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["content-length"], "13");
    assert_eq!(&res.bytes().await.unwrap()[..], b"%PDF-1.7 body");

    let csv = stored(&h, "producibles/t.csv", b"a\n").await;
    let q = signer(&h).sign(&csv, SystemTime::now());
    let res = h.get(&path(&csv, &q)).send().await.unwrap();
    assert_eq!(res.headers()["content-type"], "text/csv; charset=utf-8");
    h.stop().await;
}

#[tokio::test]
async fn altered_foreign_and_expired_links_are_refused() {
    let h = Harness::new().await;
    let key = stored(&h, "producibles/a.pdf", b"a").await;
    let other = stored(&h, "producibles/b.pdf", b"b").await;
    let s = signer(&h);
    let q = s.sign(&key, SystemTime::now());

    // The signature of one file does not open another.
    let res = h.get(&path(&other, &q)).send().await.unwrap();
    expect_error(res, 403, "FORBIDDEN").await;
    // A later expiry than signed.
    let longer = objects::SignedQuery {
        expires: q.expires + 1,
        ..q.clone()
    };
    let res = h.get(&path(&key, &longer)).send().await.unwrap();
    expect_error(res, 403, "FORBIDDEN").await;
    // Another service's key.
    let foreign = UrlSigner::new(&[9u8; 32], Duration::from_secs(60)).unwrap();
    let res = h
        .get(&path(&key, &foreign.sign(&key, SystemTime::now())))
        .send()
        .await
        .unwrap();
    expect_error(res, 403, "FORBIDDEN").await;
    // Signed two hours ago for an hour.
    let old = s.sign(&key, SystemTime::now() - Duration::from_secs(7200));
    let res = h.get(&path(&key, &old)).send().await.unwrap();
    let message = expect_error(res, 403, "FORBIDDEN").await;
    assert!(message.contains("expired"), "{message}");
    // No signature at all.
    let res = h
        .get("/api/v1/render/downloads/producibles/a.pdf")
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "VALIDATION_ERROR").await;
    // Keys that would leave the store.
    let res = h
        .get("/api/v1/render/downloads/producibles/..%2F..%2Fetc/passwd?expires=1&signature=00")
        .send()
        .await
        .unwrap();
    assert!([400, 404].contains(&res.status().as_u16()));
    h.stop().await;
}

#[tokio::test]
async fn a_valid_link_to_a_deleted_file_is_not_found() {
    let h = Harness::new().await;
    let key = ObjectKey::parse("producibles/gone.docx").unwrap();
    let q = signer(&h).sign(&key, SystemTime::now());
    let res = h.get(&path(&key, &q)).send().await.unwrap();
    expect_error(res, 404, "NOT_FOUND").await;
    h.stop().await;
}
