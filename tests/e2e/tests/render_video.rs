//! Marketing video renders across the real binaries: memory-api and render-worker as
//! processes, the real PostgreSQL and RabbitMQ, ffmpeg encoding, and ffprobe reading the
//! result.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use store::testing::TestDatabase;

use common::{Proc, free_port, run, wait_ready};

const KEK: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// memory-api and a render-worker sharing a database, a queue prefix and an object store.
struct Stack {
    api: String,
    key: String,
    http: reqwest::Client,
    env: Vec<(&'static str, String)>,
    scratch: PathBuf,
    _db: TestDatabase,
    _api: Proc,
}

impl Stack {
    async fn start() -> Self {
        let db = TestDatabase::empty("memory").await.unwrap();
        let db_env = ("MEMORY_DATABASE__URL", db.url.clone());
        run("memory-api", &["migrate"], std::slice::from_ref(&db_env));
        let admin = |args: &[&str]| {
            let mut all = vec!["memory"];
            all.extend_from_slice(args);
            run("admin", &all, std::slice::from_ref(&db_env))
        };
        let user = admin(&[
            "create-user",
            "--email",
            "video@example.com",
            "--tier",
            "pro",
        ]);
        let user_id = user["user_id"].as_str().unwrap().to_owned();
        let key = admin(&["create-key", "--user", &user_id, "--scopes", "read,write"]);
        let key = key["key"].as_str().unwrap().to_owned();
        let scratch = std::env::temp_dir().join(format!("e2e-video-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&scratch).unwrap();
        let port = free_port();
        let api = format!("http://127.0.0.1:{port}");
        let env = vec![
            db_env,
            (
                "MEMORY_BROKER__QUEUE_PREFIX",
                format!("e2e-{}.", uuid::Uuid::new_v4().simple()),
            ),
            ("MEMORY_SECRETS__KEK", KEK.to_owned()),
            ("MEMORY_HTTP__BIND", format!("127.0.0.1:{port}")),
            ("MEMORY_OBJECTS__PUBLIC_URL", api.clone()),
            (
                "MEMORY_OBJECTS__DIR",
                scratch.join("objects").display().to_string(),
            ),
            // Few frames: the tests check the encoding, not the smoothness.
            ("MEMORY_RENDER_VIDEO__FPS", "4".to_owned()),
            ("MEMORY_RENDER_VIDEO__PRESET", "ultrafast".to_owned()),
            ("MEMORY_RENDER_VIDEO__WAIT_SECS", "60".to_owned()),
        ];
        let api_proc = Proc::start("memory-api", &["serve"], &env);
        wait_ready(&api).await;
        Self {
            api,
            key,
            http: common::http(),
            env,
            scratch,
            _db: db,
            _api: api_proc,
        }
    }

    async fn worker(&self) -> Proc {
        let port = free_port();
        let mut env = self.env.clone();
        env.push(("MEMORY_WORKER__BIND", format!("127.0.0.1:{port}")));
        let worker = Proc::start("render-worker", &[], &env);
        wait_ready(&format!("http://127.0.0.1:{port}")).await;
        worker
    }

    async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let res = self
            .http
            .post(format!("{}/api/v1{path}", self.api))
            .bearer_auth(&self.key)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap())
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap())
    }

    /// Downloads the video at `url` (no credential: the URL is signed) into the scratch dir.
    async fn download(&self, url: &str) -> PathBuf {
        let res = common::http().get(url).send().await.unwrap();
        assert_eq!(res.status(), 200, "{url}");
        let bytes = res.bytes().await.unwrap();
        let path = self
            .scratch
            .join(format!("{}.mp4", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, &bytes).unwrap();
        path
    }

    /// Polls a job until it has finished.
    async fn finished(&self, location: &str) -> Value {
        for _ in 0..600 {
            let (status, job) = self.get(location).await;
            assert_eq!(status, 200, "{job}");
            if job["status"] == "completed" || job["status"] == "failed" {
                return job;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{location} did not finish");
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// What ffprobe says of a video: duration (s), width, height, codec, pixel format.
fn probe(path: &Path) -> (f64, u64, u64, String, String) {
    let out = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-print_format",
            "json",
            "-show_format",
            "-show_streams",
        ])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    let streams = info["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1, "one video stream, no audio: {info}");
    let video = &streams[0];
    (
        info["format"]["duration"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
        video["width"].as_u64().unwrap(),
        video["height"].as_u64().unwrap(),
        video["codec_name"].as_str().unwrap().to_owned(),
        video["pix_fmt"].as_str().unwrap().to_owned(),
    )
}

const BRIEF: &str = "Meet Acme Notes. Your team's memory, always at hand!\n\n\
    Decisions, drafts and briefs in one place. Start free today.";

#[tokio::test(flavor = "multi_thread")]
async fn a_video_is_rendered_to_the_format_and_duration_and_a_second_render_of_the_run_is_free() {
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    let run_id = uuid::Uuid::new_v4();
    let body = json!({
        "brief": BRIEF,
        "duration": 5,
        "run_id": run_id,
        "brand": {"primary": "#ff5500", "colors": {"background": "#0a0a0a"}},
        "product_id": "acme-notes",
    });
    let (status, first) = stack.post("/render/video", &body).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["cost_cents"], 5, "every second is new: {first}");
    let video = stack.download(first["asset_url"].as_str().unwrap()).await;
    let (duration, width, height, codec, pix_fmt) = probe(&video);
    assert!((duration - 5.0).abs() < 0.3, "duration {duration}");
    assert_eq!((width, height), (1080, 1920), "short_video by default");
    assert_eq!((codec.as_str(), pix_fmt.as_str()), ("h264", "yuv420p"));

    let (status, second) = stack.post("/render/video", &body).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["cost_cents"], 0, "every scene reused: {second}");
    assert_ne!(second["render_id"], first["render_id"]);
    let (status, job) = stack
        .get(&format!(
            "/api/v1/render/video/jobs/{}/status",
            second["render_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["status"], "completed");
    assert!(job["scenes"].as_i64().unwrap() >= 2, "{job}");
    assert_eq!(job["scenes_reused"], job["scenes"], "{job}");
    let again = stack.download(second["asset_url"].as_str().unwrap()).await;
    let (duration, ..) = probe(&again);
    assert!((duration - 5.0).abs() < 0.3, "duration {duration}");

    // Another colour is another scene: rendered and charged again.
    let mut recoloured = body.clone();
    recoloured["brand"] = json!({"primary": "#00aaff"});
    let (status, third) = stack.post("/render/video", &recoloured).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(third["cost_cents"], 5, "{third}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queued_job_is_polled_to_its_video_and_survives_its_worker_dying() {
    let stack = Stack::start().await;
    let body = json!({"brief": BRIEF, "format": "wide_video", "duration": 6});
    // Queued with no worker running: it waits.
    let (status, queued) = stack.post("/render/video/jobs", &body).await;
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued["status"], "queued");
    let location = format!(
        "/api/v1/render/video/jobs/{}/status",
        queued["jobId"].as_str().unwrap()
    );
    // A worker picks it up and is killed mid-render: the job is delivered again to the next
    // worker and completes.
    let doomed = stack.worker().await;
    for _ in 0..200 {
        let (_, job) = stack.get(&location).await;
        if job["status"] != "queued" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    doomed.kill9();
    let (_, job) = stack.get(&location).await;
    if job["status"] == "rendering" {
        assert!(job["asset_url"].is_null(), "{job}");
    }
    let _worker = stack.worker().await;
    let job = stack.finished(&location).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["cost_cents"], 6, "{job}");
    let video = stack.download(job["asset_url"].as_str().unwrap()).await;
    let (duration, width, height, codec, _) = probe(&video);
    assert!((duration - 6.0).abs() < 0.3, "duration {duration}");
    assert_eq!((width, height, codec.as_str()), (1920, 1080, "h264"));
}
