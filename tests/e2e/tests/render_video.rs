//! Marketing video renders across the real binaries: memory-api and render-worker as
//! processes, the real PostgreSQL and RabbitMQ, ffmpeg encoding, espeak-ng speaking, and
//! ffprobe and ffmpeg's silence detection reading the result.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use store::testing::TestDatabase;

use common::{Proc, free_port, run, wait_ready};

const KEK: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// memory-api and a render-worker sharing a database, a queue prefix and an object store.
struct Stack {
    api: String,
    key: String,
    user_id: String,
    http: reqwest::Client,
    env: Vec<(&'static str, String)>,
    scratch: PathBuf,
    _db: TestDatabase,
    _api: Proc,
}

impl Stack {
    async fn start() -> Self {
        require_espeak();
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
            user_id,
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

    /// A stored object of the render (the local object store's directory).
    fn object(&self, key: &str) -> Option<Vec<u8>> {
        std::fs::read(self.scratch.join("objects").join(key)).ok()
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

/// The render worker narrates with espeak-ng: without it the worker does not start.
fn require_espeak() {
    let found = std::process::Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "espeak-ng is missing from PATH: install it (scripts/tools.sh) to run the video tests"
    );
}

/// What ffprobe says of a video.
#[derive(Debug)]
struct Probe {
    duration: f64,
    width: u64,
    height: u64,
    codec: String,
    pix_fmt: String,
    /// The audio stream's codec and duration, if there is one.
    audio: Option<(String, f64)>,
}

fn probe(path: &Path) -> Probe {
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
    let of = |kind: &str| {
        streams
            .iter()
            .filter(|s| s["codec_type"] == kind)
            .collect::<Vec<_>>()
    };
    let (videos, audios) = (of("video"), of("audio"));
    assert_eq!(videos.len(), 1, "one video stream: {info}");
    assert!(audios.len() <= 1, "at most one audio stream: {info}");
    assert_eq!(streams.len(), videos.len() + audios.len(), "{info}");
    let seconds = |v: &Value| v.as_str().unwrap().parse::<f64>().unwrap();
    let video = videos[0];
    Probe {
        duration: seconds(&info["format"]["duration"]),
        width: video["width"].as_u64().unwrap(),
        height: video["height"].as_u64().unwrap(),
        codec: video["codec_name"].as_str().unwrap().to_owned(),
        pix_fmt: video["pix_fmt"].as_str().unwrap().to_owned(),
        audio: audios.first().map(|a| {
            (
                a["codec_name"].as_str().unwrap().to_owned(),
                seconds(&a["duration"]),
            )
        }),
    }
}

/// The silences ffmpeg's silencedetect finds in the audio of `path` (quieter than -35 dB for
/// at least 0.3 s), as (start, end) in seconds; one running to the end ends at `duration`.
fn silences(path: &Path, duration: f64) -> Vec<(f64, f64)> {
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-i"])
        .arg(path)
        .args([
            "-map",
            "0:a",
            "-af",
            "silencedetect=n=-35dB:d=0.3",
            "-f",
            "null",
            "-",
        ])
        .output()
        .expect("ffmpeg runs");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let value = |line: &str, key: &str| -> Option<f64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    let mut found = Vec::new();
    let mut open = None;
    for line in log.lines() {
        if let Some(start) = value(line, "silence_start: ") {
            open = Some(start);
        } else if let Some(end) = value(line, "silence_end: ") {
            found.push((open.take().unwrap_or(0.0), end));
        }
    }
    if let Some(start) = open {
        found.push((start, duration));
    }
    found
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
    let video = probe(&stack.download(first["asset_url"].as_str().unwrap()).await);
    assert!((video.duration - 5.0).abs() < 0.3, "{video:?}");
    assert_eq!(
        (video.width, video.height),
        (1080, 1920),
        "short_video by default"
    );
    assert_eq!(
        (video.codec.as_str(), video.pix_fmt.as_str()),
        ("h264", "yuv420p")
    );
    assert_eq!(
        video.audio.as_ref().map(|a| a.0.as_str()),
        Some("aac"),
        "narrated: {video:?}"
    );

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
    let again = probe(&stack.download(second["asset_url"].as_str().unwrap()).await);
    assert!((again.duration - 5.0).abs() < 0.3, "{again:?}");

    // Another colour is another scene: rendered and charged again.
    let mut recoloured = body.clone();
    recoloured["brand"] = json!({"primary": "#00aaff"});
    let (status, third) = stack.post("/render/video", &recoloured).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(third["cost_cents"], 5, "{third}");

    // Without narration: another scene too, silent and without captions.
    let mut silent = body.clone();
    silent["brand"]["narration"] = json!(false);
    let (status, fourth) = stack.post("/render/video", &silent).await;
    assert_eq!(status, 200, "{fourth}");
    assert_eq!(fourth["cost_cents"], 5, "{fourth}");
    let quiet = probe(&stack.download(fourth["asset_url"].as_str().unwrap()).await);
    assert!(quiet.audio.is_none(), "no narration, no music: {quiet:?}");
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
    let video = probe(&stack.download(job["asset_url"].as_str().unwrap()).await);
    assert!((video.duration - 6.0).abs() < 0.3, "{video:?}");
    assert_eq!(
        (video.width, video.height, video.codec.as_str()),
        (1920, 1080, "h264")
    );
}

/// A four-paragraph brief: a title, a bullet list, a quote and a call to action.
const FOUR_PARAGRAPHS: &str = "Meet Acme Notes, the memory your team never loses.\n\n\
    - Decisions recorded where the work happens\n\
    - Drafts and briefs found by meaning\n\
    - One place for every product\n\n\
    \"We stopped asking who decided what.\" \u{2014} Ada, head of product\n\n\
    Your first workspace is free. Start today at acme dot example.";

#[tokio::test(flavor = "multi_thread")]
async fn a_narrated_video_has_an_audio_track_of_its_length_and_captions_inside_the_voice() {
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    let body = json!({"brief": FOUR_PARAGRAPHS, "duration": 30, "format": "square_video"});
    let (status, done) = stack.post("/render/video", &body).await;
    assert_eq!(status, 200, "{done}");
    let path = stack.download(done["asset_url"].as_str().unwrap()).await;
    let video = probe(&path);
    assert_eq!(video.codec, "h264", "{video:?}");
    let (audio_codec, audio_seconds) = video.audio.clone().expect("an audio track");
    assert_eq!(audio_codec, "aac", "{video:?}");
    assert!(
        (audio_seconds - 30.0).abs() <= 0.5,
        "audio of 30 s: {video:?}"
    );
    assert!((video.duration - 30.0).abs() <= 0.5, "{video:?}");

    let key = format!(
        "videos/{}/{}.captions.json",
        stack.user_id,
        done["render_id"].as_str().unwrap()
    );
    let timeline: Value =
        serde_json::from_slice(&stack.object(&key).expect("the caption timeline is stored"))
            .unwrap();
    let captions = timeline["captions"].as_array().unwrap();
    assert!(
        captions.len() >= 6,
        "every sentence and item captioned: {timeline}"
    );
    let silent = silences(&path, audio_seconds);
    assert!(!silent.is_empty(), "pauses between the scenes: {silent:?}");
    // AAC blurs the edges of the voice by a few milliseconds.
    const EDGE: f64 = 0.05;
    let mut last_end = 0.0;
    for caption in captions {
        let (start, end) = (
            caption["start"].as_f64().unwrap(),
            caption["end"].as_f64().unwrap(),
        );
        assert!(
            start >= last_end && end > start && end <= 30.0,
            "{caption} in {timeline}"
        );
        last_end = end;
        let overlapping: Vec<_> = silent
            .iter()
            .filter(|(s, e)| *s < end - EDGE && *e > start + EDGE)
            .collect();
        assert!(
            overlapping.is_empty(),
            "caption {caption} overlaps the silences {overlapping:?} (all: {silent:?})"
        );
    }
}

/// A red square, as PNG (made by ffmpeg).
fn png() -> Vec<u8> {
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i"])
        .args([
            "color=c=red:s=64x48",
            "-frames:v",
            "1",
            "-c:v",
            "png",
            "-f",
            "image2pipe",
            "-",
        ])
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Two seconds of a 440 Hz tone, as WAV (made by ffmpeg).
fn tone() -> Vec<u8> {
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i"])
        .args(["sine=frequency=440:duration=2", "-f", "wav", "-"])
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[tokio::test(flavor = "multi_thread")]
async fn the_brands_logo_and_music_are_used_and_not_kept() {
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    let b64 = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
    let body = json!({
        "brief": FOUR_PARAGRAPHS,
        "duration": 8,
        "format": "wide_video",
        "template": "product",
        "brand": {
            "logo": format!("data:image/png;base64,{}", b64(png())),
            "music": format!("data:audio/wav;base64,{}", b64(tone())),
            "cta": "Start free",
            "narration": false,
        },
    });
    let (status, done) = stack.post("/render/video", &body).await;
    assert_eq!(status, 200, "{done}");
    let path = stack.download(done["asset_url"].as_str().unwrap()).await;
    let video = probe(&path);
    let (codec, seconds) = video.audio.clone().expect("the music, without a voice");
    assert_eq!(codec, "aac", "{video:?}");
    assert!(
        (seconds - 8.0).abs() <= 0.5,
        "looped to the video's length: {video:?}"
    );
    // Looped, the music never stops before its fade-out.
    let silent = silences(&path, seconds);
    assert!(silent.iter().all(|(s, _)| *s > 6.5), "{silent:?}");
    let inputs = stack.scratch.join("objects/video-inputs");
    let left: Vec<_> = walk(&inputs);
    assert!(
        left.is_empty(),
        "the brand's media are removed once rendered: {left:?}"
    );

    let (status, refused) = stack
        .post(
            "/render/video",
            &json!({"brief": "A brief.", "brand": {"logo": "https://example.com/logo.png"}}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("brand.logo"), "{refused}");
}

/// The files under `dir` (none when it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}
