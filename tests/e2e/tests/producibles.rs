//! Producible documents end to end: memory-api queues a render over RabbitMQ, the real
//! render-worker produces the file into the object store, and the job's signed URL downloads
//! it; each format is then opened by an independent reader (pdftotext, python-docx,
//! python-pptx, openpyxl, rsvg-convert, an HTML parser, a csv reader) that must find the
//! tree's text. A worker killed mid-job leaves the job to be delivered again and completed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use producible::fonts::DROID_FALLBACK;
use serde_json::{Value, json};
use store::testing::TestDatabase;

use common::{AMQP, Proc, free_port, run, wait_ready};

const KEK: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

struct Stack {
    _db: TestDatabase,
    env: Vec<(&'static str, String)>,
    _api: Proc,
    base: String,
    key: String,
    dir: PathBuf,
    http: reqwest::Client,
}

impl Stack {
    async fn start() -> Self {
        let db = TestDatabase::empty("memory").await.unwrap();
        let dir = std::env::temp_dir().join(format!("e2e-objects-{}", uuid::Uuid::new_v4()));
        let env = vec![
            ("MEMORY_DATABASE__URL", db.url.clone()),
            ("MEMORY_BROKER__URL", AMQP.to_owned()),
            (
                "MEMORY_BROKER__QUEUE_PREFIX",
                format!("e2e{}.", uuid::Uuid::new_v4().simple()),
            ),
            ("MEMORY_SECRETS__KEK", KEK.to_owned()),
            ("MEMORY_OBJECTS__DIR", dir.to_string_lossy().into_owned()),
        ];
        run("memory-api", &["migrate"], &env[..1]);
        let user = run(
            "admin",
            &[
                "memory",
                "create-user",
                "--email",
                "render@example.com",
                "--tier",
                "pro",
            ],
            &env[..1],
        );
        let key = run(
            "admin",
            &[
                "memory",
                "create-key",
                "--user",
                user["user_id"].as_str().unwrap(),
                "--scopes",
                "read,write",
            ],
            &env[..1],
        );
        let port = free_port();
        let mut api_env = env.clone();
        api_env.push(("MEMORY_HTTP__BIND", format!("127.0.0.1:{port}")));
        let api = Proc::start("memory-api", &["serve"], &api_env);
        let base = format!("http://127.0.0.1:{port}");
        wait_ready(&base).await;
        Self {
            _db: db,
            env,
            _api: api,
            base,
            key: key["key"].as_str().unwrap().to_owned(),
            dir,
            http: common::http(),
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

    async fn create(&self, format: &str, ir: &Value) -> Value {
        let res = self
            .http
            .post(format!("{}/api/v1/render/producibles/jobs", self.base))
            .bearer_auth(&self.key)
            .json(&json!({"format": format, "ir": ir}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 202);
        res.json().await.unwrap()
    }

    async fn status(&self, id: &str) -> Value {
        let res = self
            .http
            .get(format!(
                "{}/api/v1/render/producibles/jobs/{id}/status",
                self.base
            ))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.json().await.unwrap()
    }

    /// Polls the job until it finished (bounded).
    async fn finished(&self, id: &str) -> Value {
        for _ in 0..1200 {
            let job = self.status(id).await;
            if job["status"] == "completed" || job["status"] == "failed" {
                return job;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("job {id} did not finish");
    }

    /// Downloads the completed job's file (no credential) into a file of its own.
    async fn download(&self, job: &Value, format: &str) -> PathBuf {
        let url = job["signedUrl"].as_str().expect("signedUrl");
        let res = self.http.get(url).send().await.unwrap();
        assert_eq!(res.status(), 200, "{url}");
        let disposition = res.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            disposition,
            format!(
                "attachment; filename=\"{}.{format}\"",
                job["jobId"].as_str().unwrap()
            )
        );
        let path = self.dir.join(format!("download.{format}"));
        std::fs::write(&path, res.bytes().await.unwrap()).unwrap();
        path
    }

    /// Renders `ir` as a pdf and asserts that each of `expected` is a line of its text
    /// (pdftotext); the downloaded file.
    async fn pdf_with_lines(&self, ir: &Value, expected: &[&str]) -> PathBuf {
        let job = self.create("pdf", ir).await;
        let job = self.finished(job["jobId"].as_str().unwrap()).await;
        assert_eq!(job["status"], "completed", "{job}");
        let path = self.download(&job, "pdf").await;
        let text = read("pdf", &path);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for expected in expected {
            assert!(
                lines.contains(expected),
                "{expected:?} is not a line of {text}"
            );
        }
        path
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tree() -> Value {
    json!({
        "title": "Quarterly Report Alpha",
        "blocks": [
            {"type": "heading", "level": 1, "runs": [{"text": "Summary Bravo"}]},
            {"type": "paragraph", "runs": [{"text": "Revenue grew ", "bold": true}, {"text": "in Charlie <markets> & more", "italic": true}]},
            {"type": "list", "ordered": true, "items": [[{"text": "Delta item"}], [{"text": "Echo item", "link": "https://example.com/e"}]]},
            {"type": "table", "header": [[{"text": "Region"}], [{"text": "Sales"}]], "rows": [[[{"text": "Foxtrot"}], [{"text": "12"}]]]},
            {"type": "page_break"},
            {"type": "heading", "level": 2, "runs": [{"text": "Appendix Golf"}]},
            {"type": "code", "language": "rust", "text": "fn hotel() {}"},
            {"type": "image", "src": "https://example.com/chart.png", "alt": "India chart"}
        ]
    })
}

const WORDS: [&str; 10] = [
    "Quarterly Report Alpha",
    "Summary Bravo",
    "Charlie <markets> & more",
    "Delta item",
    "Echo item",
    "Foxtrot",
    "Region",
    "Appendix Golf",
    "fn hotel() {}",
    "India chart",
];

fn read(format: &str, path: &Path) -> String {
    let out = match format {
        "pdf" => Command::new("pdftotext")
            .args([path.to_str().unwrap(), "-"])
            .output(),
        "svg" => {
            // rsvg-convert must render it; the text is then read from the SVG's XML.
            let png = path.with_extension("png");
            let ok = Command::new("rsvg-convert")
                .args(["-o", png.to_str().unwrap(), path.to_str().unwrap()])
                .status()
                .expect("rsvg-convert (scripts/tools.sh installs it)");
            assert!(ok.success(), "rsvg-convert refused the svg");
            assert!(std::fs::metadata(&png).unwrap().len() > 0);
            Command::new(python())
                .args(["-c", SVG_TEXT, path.to_str().unwrap()])
                .output()
        }
        _ => Command::new(python())
            .args([reader().to_str().unwrap(), format, path.to_str().unwrap()])
            .output(),
    }
    .expect("reader runs (scripts/tools.sh installs them)");
    assert!(
        out.status.success(),
        "{format} reader: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const SVG_TEXT: &str = "import sys, xml.etree.ElementTree as E\n\
print('\\n'.join(''.join(t.itertext()) for t in E.parse(sys.argv[1]).iter() if t.tag.endswith('}text') or t.tag.endswith('}title')))";

fn python() -> PathBuf {
    let cache = std::env::var("CACHE_DIR").map_or_else(
        |_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/memmail"),
        PathBuf::from,
    );
    cache.join("venv-render-tests/bin/python")
}

fn reader() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/readers/read_producible.py")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_format_is_read_back_by_an_independent_reader() {
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    for format in ["pdf", "docx", "pptx", "xlsx", "csv", "svg", "html"] {
        let job = stack.create(format, &tree()).await;
        assert_eq!(job["status"], "queued");
        assert_eq!(job["signedUrl"], Value::Null);
        let job = stack.finished(job["jobId"].as_str().unwrap()).await;
        assert_eq!(job["status"], "completed", "{format}: {job}");
        assert_eq!(job["format"], format);
        let path = stack.download(&job, format).await;
        let text = read(format, &path);
        // pdftotext breaks lines where the layout did; compare without whitespace.
        let flat: String = text.split_whitespace().collect();
        for word in WORDS {
            let word: String = word.split_whitespace().collect();
            assert!(
                flat.contains(&word),
                "{format}: {word:?} missing from {text}"
            );
        }
        if format == "html" {
            let raw = std::fs::read_to_string(&path).unwrap();
            assert!(
                raw.contains("Charlie &lt;markets&gt; &amp; more"),
                "escaped"
            );
        }
    }
}

/// A 20×10 PNG and a 16×12 JPEG (made by ffmpeg).
const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABQAAAAKCAIAAAA7N+mxAAAACXBIWXMAAAABAAAAAQBPJcTWAAAAFElEQVR4nGNgYPhHARrVPKqZAAIAtSfGceqK5PgAAAAASUVORK5CYII=";
const JPEG: &str = "data:image/jpeg;base64,/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgEBAQEBAUFBQUFBQYGBgYGBgYGBgYGBgYHBwcICAgHBwcGBgcHCAgICAkJCQgICAgJCQoKCgwMCwsODg4RERT/xABMAAEBAAAAAAAAAAAAAAAAAAAABgEBAQAAAAAAAAAAAAAAAAAABgcQAQAAAAAAAAAAAAAAAAAAAAARAQAAAAAAAAAAAAAAAAAAAAD/wAARCAAMABADASIAAhEAAxEA/9oADAMBAAIRAxEAPwCLAFF/f//Z";

const SCRIPTS: [&str; 4] = [
    "Ελληνικά: γρήγορη καφέ αλεπού",
    "Русский: съешь же ещё этих булок",
    "Ærøskøbing, Łódź, naïve café, São Paulo",
    "Preis: 12 € · Größe ½ — „Zitat“",
];

#[tokio::test(flavor = "multi_thread")]
async fn a_pdf_of_greek_cyrillic_and_accented_latin_reads_back_identically() {
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    let mut blocks: Vec<Value> = SCRIPTS
        .iter()
        .map(|t| json!({"type": "paragraph", "runs": [{"text": t}]}))
        .collect();
    blocks.push(json!({"type": "code", "text": "λx → x² ≠ ∞"}));
    let ir = json!({"title": "Σύνοψη Отчёт", "blocks": blocks});
    let expected: Vec<&str> = SCRIPTS
        .iter()
        .copied()
        .chain(["Σύνοψη Отчёт", "λx → x² ≠ ∞"])
        .collect();
    let path = stack.pdf_with_lines(&ir, &expected).await;
    embedded_truetype_fonts(&path);
}

/// The pdf's fonts (rows of pdffonts), each asserted to be an embedded TrueType one (no
/// built-in Latin-1 font is left).
fn embedded_truetype_fonts(path: &Path) -> Vec<String> {
    let fonts = Command::new("pdffonts")
        .arg(path)
        .output()
        .expect("pdffonts (poppler-utils, installed by scripts/tools.sh)");
    let fonts = String::from_utf8_lossy(&fonts.stdout);
    let rows: Vec<&str> = fonts.lines().skip(2).collect();
    assert!(!rows.is_empty(), "{fonts}");
    for row in &rows {
        assert!(
            row.contains("CID TrueType") && row.contains(" yes "),
            "{fonts}"
        );
    }
    rows.into_iter().map(str::to_owned).collect()
}

const CJK: [&str; 3] = [
    "Chinese 中文：汉字与漢字",
    "Japanese 日本語：ひらがなとカタカナ",
    "Korean 한국어: 안녕하세요",
];

#[tokio::test(flavor = "multi_thread")]
async fn a_pdf_of_chinese_japanese_and_korean_reads_back_identically() {
    // memory-api's and the worker's default fallback fonts.
    for font in DROID_FALLBACK {
        assert!(
            Path::new(font).exists(),
            "{font} is missing: run scripts/tools.sh (Debian's fonts-droid-fallback)"
        );
    }
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    let blocks: Vec<Value> = CJK
        .iter()
        .map(|t| json!({"type": "paragraph", "runs": [{"text": t}]}))
        .collect();
    let ir = json!({"title": "報告 Report", "blocks": blocks});
    let expected: Vec<&str> = CJK.iter().copied().chain(["報告 Report"]).collect();
    let path = stack.pdf_with_lines(&ir, &expected).await;
    // DejaVu Sans Bold and Sans, and one CJK font: each font is embedded whole, and the full
    // one (4 MB, for CJK Extension A) is not needed here.
    let fonts = embedded_truetype_fonts(&path);
    assert_eq!(fonts.len(), 3, "{fonts:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn pictures_are_embedded_in_pdf_docx_and_pptx() {
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    let ir = json!({"title": "Pictures", "blocks": [
        {"type": "paragraph", "runs": [{"text": "Before"}]},
        {"type": "image", "src": PNG, "alt": "Blue bar"},
        {"type": "image", "src": JPEG, "alt": "Red square"},
        {"type": "image", "src": "https://example.com/never-fetched.png", "alt": "Remote"},
        {"type": "paragraph", "runs": [{"text": "After"}]}
    ]});
    for format in ["pdf", "docx", "pptx"] {
        let job = stack.create(format, &ir).await;
        let job = stack.finished(job["jobId"].as_str().unwrap()).await;
        assert_eq!(job["status"], "completed", "{format}: {job}");
        let path = stack.download(&job, format).await;
        let mut sizes = pictures(format, &path);
        sizes.sort();
        assert_eq!(sizes, ["16x12", "20x10"], "{format}");
        let flat: String = read(format, &path).split_whitespace().collect();
        for caption in ["Bluebar", "Redsquare", "[image:Remote]", "Before", "After"] {
            assert!(
                flat.contains(caption),
                "{format}: {caption} missing from {flat}"
            );
        }
    }
}

/// The pixel sizes (`WxH`) of the pictures an independent reader finds in the file.
fn pictures(format: &str, path: &Path) -> Vec<String> {
    let out = if format == "pdf" {
        Command::new("pdfimages")
            .args(["-list", path.to_str().unwrap()])
            .output()
    } else {
        Command::new(python())
            .args([
                reader().to_str().unwrap(),
                &format!("{format}-pictures"),
                path.to_str().unwrap(),
            ])
            .output()
    }
    .expect("reader runs (scripts/tools.sh installs them)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if format == "pdf" {
        // page num type width height ...: two header lines, then one line per image.
        return text
            .lines()
            .skip(2)
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                format!("{}x{}", f[3], f[4])
            })
            .collect();
    }
    text.lines().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_csv_cell_that_a_spreadsheet_would_run_is_written_as_text() {
    let stack = Stack::start().await;
    let _worker = stack.worker().await;
    let ir = json!({
        "title": "=HYPERLINK(\"https://evil.example/\")",
        "blocks": [
            {"type": "paragraph", "runs": [{"text": "+1"}]},
            {"type": "table", "header": [[{"text": "-a"}], [{"text": "@b"}]],
             "rows": [[[{"text": "safe=1"}], [{"text": "'=quoted"}]]]}
        ]
    });
    let job = stack.create("csv", &ir).await;
    let job = stack.finished(job["jobId"].as_str().unwrap()).await;
    assert_eq!(job["status"], "completed", "{job}");
    let path = stack.download(&job, "csv").await;
    let text = read("csv", &path);
    let cells: Vec<&str> = text.lines().collect();
    assert_eq!(
        cells,
        [
            "'=HYPERLINK(\"https://evil.example/\")",
            "'+1",
            "'-a",
            "'@b",
            "safe=1",
            "'=quoted",
        ],
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_whose_worker_was_killed_is_delivered_again_and_completes() {
    let stack = Stack::start().await;
    // Long enough to be caught rendering: a few hundred pages.
    let paragraph = "lorem ipsum dolor sit amet ".repeat(40);
    let mut blocks: Vec<Value> = (0..2500)
        .map(|i| json!({"type": "paragraph", "runs": [{"text": format!("{i} {paragraph}")}]}))
        .collect();
    blocks.push(json!({"type": "paragraph", "runs": [{"text": "Juliet ends it"}]}));
    let ir = json!({"title": "Long Kilo", "blocks": blocks});
    let worker = stack.worker().await;
    let job = stack.create("pdf", &ir).await;
    let id = job["jobId"].as_str().unwrap().to_owned();
    let mut seen_rendering = false;
    for _ in 0..2000 {
        let job = stack.status(&id).await;
        assert_ne!(
            job["status"], "completed",
            "rendered before it could be killed"
        );
        if job["status"] == "rendering" {
            seen_rendering = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(seen_rendering);
    worker.kill9();
    // Nobody is rendering it now: it stays `rendering` until a worker takes it again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(stack.status(&id).await["status"], "rendering");
    let _again = stack.worker().await;
    let job = stack.finished(&id).await;
    assert_eq!(job["status"], "completed", "{job}");
    let path = stack.download(&job, "pdf").await;
    let text = read("pdf", &path);
    assert!(text.contains("Juliet ends it"));
    assert!(text.contains("Long Kilo"));
}
