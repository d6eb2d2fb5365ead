//! Producible render jobs at the API: the pro tier, the tree's validation naming the path,
//! the queued job and its status, a completed job's signed URL. (The render worker producing
//! the files is tested end to end in tests/e2e/tests/producibles.rs.)

use objects::{ObjectKey, Objects};
use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

const JOBS: &str = "/api/v1/render/producibles/jobs";

fn tree() -> Value {
    json!({"title": "Report", "blocks": [
        {"type": "paragraph", "runs": [{"text": "Hello"}]},
        {"type": "table", "header": [[{"text": "A"}], [{"text": "B"}]], "rows": [[[{"text": "1"}], [{"text": "2"}]]]}
    ]})
}

#[tokio::test]
async fn a_job_is_queued_and_polled_then_downloads_once_completed() {
    let (h, _user, key) = Harness::with_writer(Tier::Pro).await;
    let res = h
        .api(&key)
        .post(
            JOBS,
            &json!({"format": "pdf", "ir": tree(), "output_id": uuid::Uuid::new_v4()}),
        )
        .await;
    assert_eq!(res.status(), 202);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let job = json(res).await;
    let id = job["jobId"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("{JOBS}/{id}/status"));
    assert_eq!(job["status"], "queued");
    assert_eq!(job["signedUrl"], Value::Null);
    assert_eq!(job["format"], "pdf");
    assert_eq!(job["producibleKind"], "document");
    assert_eq!(job["error"], Value::Null);
    let polled = h.api(&key).get(&location).expect(200).await;
    assert_eq!(polled, job);

    // The worker's part, done by hand: running, then completed with its file stored.
    h.exec(&format!(
        "UPDATE render_jobs SET status = 'running' WHERE id = '{id}'"
    ))
    .await;
    assert_eq!(
        h.api(&key).get(&location).expect(200).await["status"],
        "rendering"
    );
    let object = ObjectKey::parse(&format!("producibles/{id}.pdf")).unwrap();
    Objects::from_settings(&h.settings.objects)
        .unwrap()
        .put(&object, b"%PDF-1.4 test".to_vec())
        .await
        .unwrap();
    h.exec(&format!(
        "UPDATE render_jobs SET status = 'completed', object_key = '{object}' WHERE id = '{id}'"
    ))
    .await;
    let done = h.api(&key).get(&location).expect(200).await;
    assert_eq!(done["status"], "completed");
    let url = done["signedUrl"].as_str().unwrap();
    assert!(
        url.starts_with(&format!(
            "{}/api/v1/render/downloads/producibles/{id}.pdf?expires=",
            h.server.base
        )),
        "{url}"
    );
    let file = test_support::http().get(url).send().await.unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(file.headers()["content-type"], "application/pdf");
    assert_eq!(&file.bytes().await.unwrap()[..], b"%PDF-1.4 test");

    // A failed job says why.
    let job = json(
        h.api(&key)
            .post(JOBS, &json!({"format": "svg", "ir": tree()}))
            .await,
    )
    .await;
    let id = job["jobId"].as_str().unwrap();
    assert_eq!(job["producibleKind"], "image");
    h.exec(&format!(
        "UPDATE render_jobs SET status = 'failed', error = 'boom' WHERE id = '{id}'"
    ))
    .await;
    let failed = h
        .api(&key)
        .get(&format!("{JOBS}/{id}/status"))
        .expect(200)
        .await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"], "boom");
    assert_eq!(failed["signedUrl"], Value::Null);
    h.stop().await;
}

#[tokio::test]
async fn an_invalid_tree_is_refused_naming_the_path() {
    let (h, _user, key) = Harness::with_writer(Tier::Pro).await;
    let mut ir = tree();
    ir["blocks"][1]["rows"][0][1] = json!("not runs");
    let res = h
        .api(&key)
        .post(JOBS, &json!({"format": "docx", "ir": ir}))
        .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    // The documented schema's rules answer first; a block matching none of its types is named.
    assert!(message.starts_with("ir.blocks[1]"), "{message}");
    // Row width against the header: the rule only the tree's own validation states.
    let mut ir = tree();
    ir["blocks"][1]["rows"][0] = json!([[{"text": "1"}]]);
    let res = h
        .api(&key)
        .post(JOBS, &json!({"format": "docx", "ir": ir}))
        .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.starts_with("ir.blocks[1].rows[0]: "), "{message}");
    let res = h
        .api(&key)
        .post(
            JOBS,
            &json!({"format": "docx", "ir": {"title": "", "blocks": []}}),
        )
        .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.starts_with("ir.title: "), "{message}");
    let res = h
        .api(&key)
        .post(JOBS, &json!({"format": "odt", "ir": tree()}))
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res = h.api(&key).post(JOBS, &json!({"format": "pdf"})).await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let missing = format!("{JOBS}/{}/status", uuid::Uuid::new_v4());
    let res = h.api(&key).get(&missing).await;
    expect_error(res, 404, "NOT_FOUND").await;
    assert_eq!(h.query("SELECT count(*) FROM render_jobs").await, ["0"]);
    h.stop().await;
}

/// A 20×10 PNG and a 16×12 JPEG (made by ffmpeg).
pub const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABQAAAAKCAIAAAA7N+mxAAAACXBIWXMAAAABAAAAAQBPJcTWAAAAFElEQVR4nGNgYPhHARrVPKqZAAIAtSfGceqK5PgAAAAASUVORK5CYII=";
pub const JPEG: &str = "data:image/jpeg;base64,/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgEBAQEBAUFBQUFBQYGBgYGBgYGBgYGBgYHBwcICAgHBwcGBgcHCAgICAkJCQgICAgJCQoKCgwMCwsODg4RERT/xABMAAEBAAAAAAAAAAAAAAAAAAAABgEBAQAAAAAAAAAAAAAAAAAABgcQAQAAAAAAAAAAAAAAAAAAAAARAQAAAAAAAAAAAAAAAAAAAAD/wAARCAAMABADASIAAhEAAxEA/9oADAMBAAIRAxEAPwCLAFF/f//Z";

fn one_paragraph(text: &str) -> Value {
    json!({"title": "Fonts", "blocks": [{"type": "paragraph", "runs": [{"text": text}]}]})
}

#[tokio::test]
async fn a_pdf_with_a_character_its_fonts_lack_is_refused_naming_the_path() {
    let (h, _user, key) = Harness::with_writer(Tier::Pro).await;
    let printable =
        one_paragraph("Ελληνικά, Русский, Ærøskøbing, Łódź, naïve €, 中文, 日本語, 한국어");
    let res = h
        .api(&key)
        .post(JOBS, &json!({"format": "pdf", "ir": printable}))
        .await;
    assert_eq!(
        res.status(),
        202,
        "{} (CJK prints in Debian's fonts-droid-fallback: run scripts/tools.sh)",
        res.text().await.unwrap()
    );
    // An Egyptian hieroglyph: neither DejaVu nor the CJK fallback has one.
    let lacking = one_paragraph("no font has \u{13000}");
    let res = h
        .api(&key)
        .post(JOBS, &json!({"format": "pdf", "ir": lacking}))
        .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(
        message.starts_with("ir.blocks[0].runs[0].text: ") && message.contains("U+13000"),
        "{message}"
    );
    // The other formats carry text for the reader's own fonts.
    let res = h
        .api(&key)
        .post(JOBS, &json!({"format": "docx", "ir": lacking}))
        .await;
    assert_eq!(res.status(), 202, "{}", res.text().await.unwrap());
    assert_eq!(h.query("SELECT count(*) FROM render_jobs").await, ["2"]);
    h.stop().await;
}

#[tokio::test]
async fn a_picture_that_does_not_decode_is_refused_naming_its_source() {
    let (h, _user, key) = Harness::with_writer(Tier::Pro).await;
    for format in ["pdf", "docx", "pptx"] {
        let ir = json!({"title": "Pictures", "blocks": [
            {"type": "image", "src": PNG, "alt": "fine"},
            {"type": "image", "src": JPEG, "alt": "fine too"},
            {"type": "image", "src": "data:image/png;base64,aGVsbG8=", "alt": "not a PNG"}
        ]});
        let res = h
            .api(&key)
            .post(JOBS, &json!({"format": format, "ir": ir}))
            .await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(
            message.starts_with("ir.blocks[2].src: is not a PNG picture"),
            "{format}: {message}"
        );
    }
    assert_eq!(h.query("SELECT count(*) FROM render_jobs").await, ["0"]);
    h.stop().await;
}

#[tokio::test]
async fn purging_finished_renders_deletes_their_files() {
    let (h, user, key) = Harness::with_writer(Tier::Pro).await;
    let objects = Objects::from_settings(&h.settings.objects).unwrap();
    let mut kept = Vec::new();
    let mut purged = Vec::new();
    for age in ["40 days", "1 day"] {
        let res = h
            .api(&key)
            .post(JOBS, &json!({"format": "pdf", "ir": tree()}))
            .await;
        let id = json(res).await["jobId"].as_str().unwrap().to_owned();
        let object = ObjectKey::parse(&format!("producibles/{id}.pdf")).unwrap();
        objects.put(&object, b"%PDF-1.4".to_vec()).await.unwrap();
        h.exec(&format!(
            "UPDATE render_jobs SET status = 'completed', object_key = '{object}', \
             created_at = now() - interval '{age}' WHERE id = '{id}'"
        ))
        .await;
        if age == "1 day" {
            kept.push(object);
        } else {
            purged.push(object);
        }
    }
    // A finished video of the same age, with its reusable scene chunk.
    let user_id = user.to_string();
    let job = uuid::Uuid::new_v4();
    let video = ObjectKey::parse(&format!("videos/{user_id}/{job}.mp4")).unwrap();
    let captions = ObjectKey::parse(&format!("videos/{user_id}/{job}.captions.json")).unwrap();
    let logo = ObjectKey::parse(&format!("video-inputs/{user_id}-live/x/logo.png")).unwrap();
    let scene = ObjectKey::parse(&format!("video-scenes/{user_id}/s.mp4")).unwrap();
    for key in [&video, &captions, &logo, &scene] {
        objects.put(key, b"mp4".to_vec()).await.unwrap();
        purged.push(key.clone());
    }
    let run = uuid::Uuid::new_v4();
    let result = json!({"asset_key": video.as_str()});
    let input = json!({"logo": {"key": logo.as_str(), "format": "png", "sha256": "00"}});
    h.exec(&format!(
        "INSERT INTO render_video_jobs (id, user_id, environment, brief, format, duration, \
         run_id, input, status, result, created_at) VALUES ('{job}', '{user_id}', \
         'live', 'brief', 'short_video', 5, '{run}', '{input}', 'completed', '{result}', \
         now() - interval '40 days')"
    ))
    .await;
    h.exec(&format!(
        "INSERT INTO render_video_scenes (user_id, environment, run_id, scene_hash, object_key, \
         seconds, created_at) VALUES ('{user_id}', 'live', '{run}', 'h', '{scene}', 5, \
         now() - interval '40 days')"
    ))
    .await;
    let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
    memory_api::jobs::purge_once(&pool, &objects).await.unwrap();
    for key in &purged {
        assert!(
            matches!(objects.get(key).await, Err(objects::ObjectsError::NotFound)),
            "{key} is still stored"
        );
    }
    for key in &kept {
        assert!(objects.get(key).await.is_ok(), "{key} was deleted");
    }
    assert_eq!(h.query("SELECT count(*) FROM render_jobs").await, ["1"]);
    assert_eq!(
        h.query("SELECT count(*) FROM render_video_jobs").await,
        ["0"]
    );
    assert_eq!(
        h.query("SELECT count(*) FROM render_video_scenes").await,
        ["0"]
    );
    h.stop().await;
}

#[tokio::test]
async fn render_jobs_need_the_pro_tier_and_the_write_scope() {
    let (h, user, key) = Harness::with_writer(Tier::Free).await;
    let res = h
        .api(&key)
        .post(JOBS, &json!({"format": "csv", "ir": tree()}))
        .await;
    expect_error(res, 403, "TIER_REQUIRED").await;
    let res = h
        .api(&key)
        .get(&format!("{JOBS}/{}/status", uuid::Uuid::new_v4()))
        .await;
    expect_error(res, 403, "TIER_REQUIRED").await;
    let _ = user;
    let (pro, _) = h.writer(Tier::Pro).await;
    let (_, reader) = h.reader(pro).await;
    let res = h
        .api(&reader)
        .post(JOBS, &json!({"format": "csv", "ir": tree()}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    h.stop().await;
}

/// Without a configured public URL, a download link never follows the host the client claims
/// (`Host`, `X-Forwarded-Host`, `Forwarded`): it names the server itself.
#[tokio::test]
async fn download_links_never_follow_a_client_supplied_host() {
    let (h, _user, key) = Harness::with_writer(Tier::Pro).await;
    let job = h
        .api(&key)
        .post(JOBS, &json!({"format": "pdf", "ir": tree()}))
        .expect(202)
        .await;
    let id = job["jobId"].as_str().unwrap().to_owned();
    let object = ObjectKey::parse(&format!("producibles/{id}.pdf")).unwrap();
    Objects::from_settings(&h.settings.objects)
        .unwrap()
        .put(&object, b"%PDF-1.4 test".to_vec())
        .await
        .unwrap();
    h.exec(&format!(
        "UPDATE render_jobs SET status = 'completed', object_key = '{object}' WHERE id = '{id}'"
    ))
    .await;
    let location = format!("{JOBS}/{id}/status");
    let expected = format!(
        "{}/api/v1/render/downloads/producibles/{id}.pdf?",
        h.server.base
    );
    for (name, value) in [
        ("x-forwarded-host", "evil.example"),
        ("forwarded", "host=evil.example;proto=https"),
        ("host", "evil.example"),
    ] {
        let polled = h
            .api(&key)
            .get(&location)
            .header(name, value)
            .expect(200)
            .await;
        let url = polled["signedUrl"].as_str().unwrap_or_default();
        assert!(url.starts_with(&expected), "{name}: {polled}");
    }
    h.stop().await;
}
