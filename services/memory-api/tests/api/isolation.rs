//! Cross-tenant isolation, driven by the committed OpenAPI document.
//!
//! Three owners (user A's live environment, user A's test environment, user B's live
//! environment) each seed one of every resource, with a marker of their own in every text
//! field, and plant the same client-chosen ids and names (MIF decision and corpus ids, a product
//! name). Then every GET, PUT, PATCH and DELETE operation of
//! `proto-docs/memory-api.openapi.json`, and every POST acting on a path id, is called by each
//! owner with every other owner's ids: the answer is 404, or names none of the other owner's
//! markers nor ids that are not also the caller's. A parameter this file cannot fill fails the
//! suite, so a new route is covered (or mapped) the day it lands.

use std::collections::BTreeSet;

use auth::{CredentialKind, Scope};
use rate_limit::policy::Tier;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use test_support::document::{self, Operation, Param, Phase, probed};
use test_support::ids::{collect_ids, id_of};
use test_support::{excerpt, with_query};

use crate::common::*;

/// Routes served without a credential, so there is no owner to isolate: the OpenAPI documents
/// (a reference) and the probes (`/healthz`, `/readyz`, `/healthz/details`, `/metrics`, no tenant data). The suite
/// checks that the document declares them without a credential, so this list cannot hide a
/// tenant route.
const PUBLIC: &[&str] = &[
    "/api/v1/openapi.json",
    "/api/v1/openapi.yaml",
    "/openapi.yaml",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/api/v1",
    "/healthz",
    "/readyz",
    "/healthz/details",
    "/metrics",
    // Signed download links: the signature is the credential (see downloads.rs).
    "/api/v1/render/downloads/{key}",
];

/// Writes to these paths create the named resource in the caller's own namespace (a dataset
/// is made by its first write), so another owner's name there names nothing of theirs: the
/// write must land in the caller's own dataset, which `still_intact` checks.
const CREATED_ON_WRITE: &[(&str, &str)] = &[("POST", "/api/v1/ingest/datasets/{name}/rows")];

/// Words every owner's planted decisions share, so a search matches the caller's own planted
/// rows (whose ids another owner also holds).
const SHARED_WORDS: &str = "shared planted decision";

#[tokio::test]
async fn owners_and_environments_see_nothing_of_each_other_in_keyword_mode() {
    run(Harness::with(|url| with_unanswering_model(settings(url))).await).await;
}

/// Semantic search ranks ids before reading rows, where a join on an id another owner reuses
/// can pick up that owner's row.
#[tokio::test]
async fn owners_and_environments_see_nothing_of_each_other_in_semantic_mode() {
    run(Harness::with(|url| with_unanswering_model(semantic_settings(url))).await).await;
}

async fn run(h: Harness) {
    let planted = Planted {
        product: format!("shared-{}", Uuid::new_v4().simple()),
        dataset: format!("shared-dataset-{}", Uuid::new_v4().simple()),
        decisions: [Uuid::now_v7(), Uuid::now_v7()],
        entry: Uuid::now_v7(),
        event_key: format!("shared-event-{}", Uuid::new_v4().simple()),
        account: format!("shared-{}@example.com", Uuid::new_v4().simple()),
        thread: "5ba7ed".to_owned(),
        workspace: format!("shared-workspace-{}", Uuid::new_v4().simple()),
    };
    let user_a = h.user(Tier::Pro).await;
    let user_b = h.user(Tier::Pro).await;
    let all = [Scope::Read, Scope::Write, Scope::Propose];
    let (_, a_live) = h.key(user_a, CredentialKind::MemoryLive, &all).await;
    let (_, a_test) = h.key(user_a, CredentialKind::MemoryTest, &all).await;
    let (_, b_live) = h.key(user_b, CredentialKind::MemoryLive, &all).await;
    let owners = [
        seed(&h, "a-live", user_a, a_live, &planted).await,
        seed(&h, "a-test", user_a, a_test, &planted).await,
        seed(&h, "b-live", user_b, b_live, &planted).await,
    ];
    let operations = operations();
    let mut violations = Vec::new();
    let mut calls = 0;
    for phase in [Phase::Read, Phase::Write, Phase::Delete] {
        for caller in &owners {
            for victim in owners.iter().filter(|o| o.label != caller.label) {
                for op in operations.iter().filter(|op| op.phase() == phase) {
                    for probe in probes(op, caller, victim, &planted) {
                        check(&h, op, &probe, caller, victim, &mut violations).await;
                        calls += 1;
                    }
                }
            }
        }
    }
    // Six directions, each calling every operation at least once.
    assert!(calls >= 6 * operations.len(), "{calls} calls");
    // Uploads are confirmed by an id in the body: another owner's is not found.
    for caller in &owners {
        for victim in owners.iter().filter(|o| o.label != caller.label) {
            let body = json!({"upload_id": victim.upload, "dataset_name": caller.dataset});
            let (status, answer) = send(
                &h,
                &caller.key,
                Method::POST,
                "/api/v1/ingest/upload/confirm",
                Some(body),
            )
            .await;
            if status != 404 || answer["error"]["code"] != "NOT_FOUND" {
                violations.push(format!(
                    "confirming {}'s upload as {}: {status} {}",
                    victim.label,
                    caller.label,
                    excerpt(&answer.to_string())
                ));
            }
        }
    }
    for owner in &owners {
        violations.extend(still_intact(&h, owner, &planted).await);
    }
    assert!(
        violations.is_empty(),
        "{} isolation violation(s):\n{}",
        violations.len(),
        violations.join("\n")
    );
    h.stop().await;
}

/// Values planted identically under every owner.
struct Planted {
    product: String,
    /// A dataset name every owner writes to.
    dataset: String,
    decisions: [Uuid; 2],
    entry: Uuid,
    /// An event `idempotency_key` and `external_id` every owner uses.
    event_key: String,
    /// A mail account and a thread id every owner stores drafts under.
    account: String,
    thread: String,
    /// A workspace name and an agent name every owner uses.
    workspace: String,
}

/// One owner (a user in one environment) and what it seeded.
struct Owner {
    label: &'static str,
    key: String,
    marker: String,
    /// Every id the owner's seeding answers named, and its user id.
    ids: BTreeSet<String>,
    /// A product name of its own (it carries the marker), and its id.
    product: String,
    product_id: String,
    decision: String,
    entry: String,
    run: String,
    /// An import staged and never applied by its owner.
    staged_import: String,
    /// A dataset name of its own (it carries the marker).
    dataset: String,
    /// An upload previewed and not confirmed by its owner.
    upload: String,
    /// A connector proposal left pending by its owner.
    proposal: String,
    /// A connector lead left pending by its owner.
    lead: String,
    /// A stored BYOK credential.
    credential: String,
    /// A workspace (registered under a name every owner uses), with an open drift event.
    workspace: String,
    drift: String,
    /// An agent bridge run of the workspace, and a connected agent.
    bridge_job: String,
    render_job: String,
    agent: String,
    /// A content brief, an autonomous marketing run and a competitor watch (failed: the model
    /// endpoint configured here does not answer).
    brief: String,
    autonomous_run: String,
    watch_run: String,
    /// A stored competitor watch.
    watch: String,
    /// A queued video render job (no worker runs here).
    video_job: String,
}

async fn seed(h: &Harness, label: &'static str, user: Uuid, key: String, p: &Planted) -> Owner {
    let marker = format!("secret-{label}-{}", Uuid::new_v4().simple());
    let mut ids = BTreeSet::from([user.to_string()]);
    let mut call = async |method: Method, path: &str, body: Value| -> Value {
        let (status, answer) = send(h, &key, method, path, Some(body)).await;
        assert!(
            (200..300).contains(&status),
            "{label} {path}: {status} {answer}"
        );
        collect_ids(&answer, &mut ids);
        answer
    };
    let product = format!("own-{marker}");
    let mut product_id = String::new();
    for name in [&p.product, &product] {
        let body =
            json!({"name": name, "description": format!("{marker} product"), "status": "beta"});
        product_id = id_of(&call(Method::POST, "/api/v1/products", body).await, "id");
        let state = json!({"status": marker, "what_works": [marker], "open_questions": [marker]});
        call(
            Method::POST,
            &format!("/api/v1/memory/product/{name}/state"),
            state,
        )
        .await;
    }
    let kernel = json!({"identity": {"name": marker}, "constraints": [format!("{marker} rule")]});
    call(Method::PUT, "/api/v1/memory/identity", kernel).await;

    // The planted ids, through an import applied at once.
    let planted_decision = |id: Uuid, n: &str| {
        json!({"id": id, "decision": format!("{SHARED_WORDS} {n} {marker}"),
               "reasoning": format!("{marker} reasoning"), "product_name": p.product})
    };
    let document = mif(json!({
        "decisions": [planted_decision(p.decisions[0], "one"), planted_decision(p.decisions[1], "two")],
        "user_corpus": [{"id": p.entry, "content": format!("shared planted entry {marker}"),
                         "tags": ["planted"], "source": marker}],
    }));
    let body = json!({"mif": document, "merge_strategy": "merge", "apply_immediately": true});
    let imported = call(Method::POST, "/api/v1/memory/import-mif", body).await;
    assert_eq!(imported["decisions_imported"], 2, "{label}: {imported}");

    // An import staged then applied, and one left staged.
    let staged = |n: &str| {
        let entry = json!({"content": format!("{n} staged entry {marker}")});
        json!({"mif": mif(json!({"user_corpus": [entry]})), "merge_strategy": "merge"})
    };
    let applied = call(Method::POST, "/api/v1/memory/import-mif", staged("first")).await;
    let applied = applied["id"]
        .as_str()
        .expect("a staged import id")
        .to_owned();
    call(
        Method::POST,
        &format!("/api/v1/memory/imports/{applied}/apply"),
        json!({}),
    )
    .await;
    let pending = call(Method::POST, "/api/v1/memory/import-mif", staged("second")).await;
    let staged_import = pending["id"]
        .as_str()
        .expect("a staged import id")
        .to_owned();

    // Twice each, so consolidation records duplicate candidates.
    let mut decision = String::new();
    let mut entry = String::new();
    for _ in 0..2 {
        let body = json!({"decision": format!("Duplicate decision {marker}"), "product_name": product,
                          "reasoning": marker, "affects_products": [p.product]});
        decision = id_of(
            &call(Method::POST, "/api/v1/memory/decisions", body).await,
            "id",
        );
        let body = json!({"content": format!("duplicate note {marker}"), "tags": ["isolation"],
                          "source": marker, "metadata": {"marker": marker}});
        entry = id_of(
            &call(Method::POST, "/api/v1/memory/free-form", body).await,
            "id",
        );
    }
    // AI cost events, for its own product and the planted one (a model named with the
    // marker), and an event under the planted keys: new for every owner, never deduplicated
    // against another owner's.
    for name in [&p.product, &product] {
        let body = json!({"event_type": "ai_cost", "payload": {"product": name, "model": format!("model-{marker}"),
                          "cost_usd": "0.1", "input_tokens": 7, "output_tokens": 3, "note": marker}});
        call(Method::POST, "/api/v1/ingest/events", body).await;
    }
    let body = json!({"event_type": format!("planted {marker}"), "idempotency_key": p.event_key,
                      "external_id": p.event_key, "payload": {"marker": marker}});
    let event = call(Method::POST, "/api/v1/ingest/events", body).await;
    assert_eq!(event["deduplicated"], false, "{label}: {event}");

    // Signals: an anomaly in the feed, and a producer signal referencing the owner's decision.
    let signal = json!({"event_type": "incident", "title": format!("{marker} outage"),
                        "severity": "critical", "external_id": "shared-external-id"});
    call(
        Method::POST,
        &format!("/api/v1/ingest/{product_id}"),
        signal,
    )
    .await;
    let signals = json!({"signals": [producer_signal(&marker, &[decision.as_str()])]});
    call(Method::POST, "/api/v1/signals/ingest", signals).await;
    let consolidated = call(Method::POST, "/api/v1/memory/consolidate", json!({})).await;
    let run = id_of(&consolidated, "runId");

    // A workspace under the name every owner uses: its context file synced, then a snapshot
    // whose copy drifted; a bridge run of it; a connected agent.
    let body = json!({"name": p.workspace, "description": format!("{marker} workspace")});
    let workspace = id_of(&call(Method::POST, "/api/v1/workspaces", body).await, "id");
    call(
        Method::POST,
        &format!("/api/v1/workspaces/{workspace}/sync"),
        json!({}),
    )
    .await;
    let snapshot = json!({"files": [{"path": "AGENTS.md", "content": format!("{marker} edit")}]});
    let ingested = call(
        Method::POST,
        &format!("/api/v1/workspaces/{workspace}/ingest"),
        snapshot,
    )
    .await;
    let drift = ingested["drift"][0]["id"]
        .as_str()
        .expect("drift")
        .to_owned();
    let body = json!({"workspace_id": workspace, "wait": true});
    let bridge_job = id_of(
        &call(Method::POST, "/api/v1/bridge/generate", body).await,
        "job_id",
    );
    let body = json!({"format": "csv", "ir": {"title": marker, "blocks": []}});
    let render_job = id_of(
        &call(Method::POST, "/api/v1/render/producibles/jobs", body).await,
        "jobId",
    );
    let body = json!({"name": p.workspace, "workspace_id": workspace});
    let connected = call(Method::POST, "/api/v1/agents/connect", body).await;
    let agent = connected["agent"]["id"].as_str().expect("agent").to_owned();

    // Datasets: one of its own, and the name every owner writes to, each with a marked row;
    // and an upload waiting for its confirm.
    let dataset = format!("own-{marker}");
    for name in [&dataset, &p.dataset] {
        let rows = json!({"rows": [{"id": 1, "marker": marker}], "idempotency_key": "seed"});
        call(
            Method::POST,
            &format!("/api/v1/ingest/datasets/{name}/rows"),
            rows,
        )
        .await;
    }
    // A connector's proposal and a lead, a BYOK credential, and drafts for the shared
    // account and thread.
    let intake = json!({"raw_content": format!("{marker} proposal"), "ai_vendor": "claude",
                        "requested_capability": format!("memory {marker}")});
    let submitted = call(Method::POST, "/api/v1/connectors/intake", intake).await;
    let proposal = id_of(&submitted, "proposal_id");
    let lead = json!({"raw_content": format!("{marker} lead"), "requested_capability": "lead"});
    let lead = id_of(
        &call(Method::POST, "/api/v1/connectors/intake", lead).await,
        "lead_id",
    );
    let byok = json!({"service": "openai", "label": marker, "key": format!("sk-{marker}")});
    let credential = id_of(&call(Method::POST, "/api/v1/byok", byok).await, "id");
    let body = json!({"topic": format!("{marker} brief")});
    let brief = id_of(
        &call(Method::POST, "/api/v1/content/brief", body).await,
        "id",
    );
    let body = json!({"goal": format!("{marker} goal")});
    let autonomous_run = id_of(
        &call(Method::POST, "/api/v1/marketing/autonomous/run", body).await,
        "id",
    );
    let body = json!({"competitors": [{"name": format!("{marker} rival")}]});
    let watch_run = id_of(
        &call(Method::POST, "/api/v1/marketing/competitor-watch/run", body).await,
        "id",
    );
    let body = json!({"name": marker, "interval_minutes": 60,
                      "competitors": [{"name": format!("{marker} rival")}]});
    let watch = id_of(
        &call(Method::POST, "/api/v1/marketing/competitor-watches", body).await,
        "id",
    );
    call(
        Method::PUT,
        "/api/v1/inbox/drafts",
        drafts_body(&p.account, &p.thread, &marker),
    )
    .await;

    let body = json!({"brief": format!("{marker} video"), "duration": 5});
    let video_job = id_of(
        &call(Method::POST, "/api/v1/render/video/jobs", body).await,
        "jobId",
    );

    let csv = format!("note\n{marker}\n");
    let res = crate::uploads::upload(
        h,
        &key,
        &[crate::uploads::Part::file("seed.csv", None, csv)],
    )
    .await;
    assert_eq!(res.status(), 201, "{label}: upload");
    let preview = json(res).await;
    collect_ids(&preview, &mut ids);
    let upload = id_of(&preview, "upload_id");

    let export = full_export(h, &key).await;
    for id in [p.decisions[0], p.decisions[1], p.entry] {
        assert!(
            export.contains(&id.to_string()),
            "{label}: planted {id} kept"
        );
    }
    Owner {
        label,
        key,
        marker,
        ids,
        product,
        product_id,
        decision,
        entry,
        run,
        staged_import,
        dataset,
        upload,
        proposal,
        lead,
        credential,
        workspace,
        drift,
        bridge_job,
        render_job,
        agent,
        brief,
        autonomous_run,
        watch_run,
        watch,
        video_job,
    }
}

/// A `PUT /inbox/drafts` body: one thread of `account`, its reason carrying `marker`.
fn drafts_body(account: &str, thread: &str, marker: &str) -> Value {
    json!({"account": {"email": account}, "drafts": [{
        "thread_id": thread, "latest_message_id": "ab12", "latest_message_at": "2026-01-01T00:00:00Z",
        "generated_at": "2026-01-01T00:01:00Z", "why": marker,
        "drafts": [{"tone": "plain", "text": format!("{marker} draft")}]}]})
}

/// A producer signal carrying `marker`, with a `dedup_key` every owner shares.
fn producer_signal(marker: &str, related: &[&str]) -> Value {
    json!({"source": "api", "signal_type": "probe", "dedup_key": "shared-dedup-key",
           "severity": "warning", "title": format!("{marker} signal"),
           "payload": {"triggered_at": "2026-01-01T00:00:00Z", "metadata": {"marker": marker}},
           "related_decisions": related})
}

fn mif(extra: Value) -> Value {
    let mut document = json!({"mif_version": "0.1", "provenance": {}, "identity_kernel": {}});
    for (k, v) in extra.as_object().unwrap() {
        document[k] = v.clone();
    }
    document
}

async fn send(
    h: &Harness,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    test_support::call(&h.http, h.server.url(path), key, method, body).await
}

async fn full_export(h: &Harness, key: &str) -> String {
    let (status, body) = send(
        h,
        key,
        Method::GET,
        "/api/v1/memory/export-mif?scope=full",
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body.to_string()
}

/// The operations the suite calls, from the committed document.
pub(crate) fn operations() -> Vec<Operation> {
    probed(
        &document::load(env!("CARGO_MANIFEST_DIR"), "memory-api.openapi.json"),
        PUBLIC,
    )
}

/// One call of an operation.
struct Probe {
    path: String,
    /// The query string's values, to tell an echo of the query from a leak.
    query: Vec<(String, String)>,
    body: Option<Value>,
    /// The path names the victim's own resource (not a value planted under every owner).
    foreign_path_id: Option<ForeignRow>,
    /// The path names a planted value, so it is the caller's own resource too.
    shared_path_id: Option<ForeignRow>,
}

/// A row of the victim that a probe must leave alone.
#[derive(Clone)]
enum ForeignRow {
    /// A decision or free-form entry, visible in the victim's full export.
    Exported(String),
    /// Rows with nothing of their own to look at afterwards (checked at the end).
    Other,
}

/// The victim's value for a path parameter, and the value planted under every owner if any.
/// Panics for a parameter it does not know: map a new route here.
fn path_value(path: &str, name: &str, victim: &Owner, p: &Planted) -> (String, Option<String>) {
    let collection = path
        .split('/')
        .take_while(|segment| *segment != format!("{{{name}}}"))
        .last()
        .unwrap_or_default();
    match (name, collection) {
        ("name", "datasets") => (victim.dataset.clone(), Some(p.dataset.clone())),
        ("name", _) => (victim.product.clone(), Some(p.product.clone())),
        ("runId", "consolidate") => (victim.run.clone(), None),
        ("id", "decisions") => (victim.decision.clone(), Some(p.decisions[1].to_string())),
        ("id", "free-form") => (victim.entry.clone(), Some(p.entry.to_string())),
        ("id", "imports") => (victim.staged_import.clone(), None),
        ("product", "costs") => (victim.product.clone(), Some(p.product.clone())),
        ("project_id", "ingest") => (victim.product_id.clone(), None),
        ("id", "proposals") => (victim.proposal.clone(), None),
        ("id", "leads") => (victim.lead.clone(), None),
        ("id", "byok") => (victim.credential.clone(), None),
        ("id", "workspaces") => (victim.workspace.clone(), None),
        ("id", "drift") => (victim.drift.clone(), None),
        ("jobId", "generate") => (victim.bridge_job.clone(), None),
        ("jobId", "jobs") if path.starts_with("/api/v1/render/video/") => {
            (victim.video_job.clone(), None)
        }
        ("jobId", "jobs") => (victim.render_job.clone(), None),
        ("requestId", "content") => (victim.brief.clone(), None),
        ("runId", "run") if path.contains("/autonomous/") => (victim.autonomous_run.clone(), None),
        ("runId", "run") if path.contains("/competitor-watch/") => (victim.watch_run.clone(), None),
        ("id", "competitor-watches") => (victim.watch.clone(), None),
        ("id", "agents") => (victim.agent.clone(), None),
        _ => panic!("{path}: no value for path parameter `{name}`; map it in the isolation suite"),
    }
}

/// Values to try for a query parameter (each in a call of its own), `None` for parameters that
/// select nothing of an owner's (paging, limits, formats). Panics for an unknown required one.
fn query_values(param: &Param, victim: &Owner, p: &Planted) -> Option<Vec<String>> {
    match param.name.as_str() {
        "account_email" => Some(vec![p.account.clone()]),
        "legacy_thread_id" | "thread_perm_id" => Some(vec![p.thread.clone()]),
        "q" => Some(vec![victim.marker.clone(), SHARED_WORDS.to_owned()]),
        "product" => Some(vec![victim.product.clone()]),
        "scope" => Some(vec!["full".to_owned()]),
        "workspace_id" => Some(vec![victim.workspace.clone()]),
        _ if param.required => panic!("no value for required query parameter `{}`", param.name),
        _ => None,
    }
}

/// A minimal valid body for operations that take one, carrying the caller's own marker (a
/// producer signal batch also names the victim's decision, which must be refused).
fn body_for(op: &Operation, caller: &Owner, victim: &Owner, p: &Planted) -> Option<Value> {
    if !op.has_body {
        return None;
    }
    Some(match (op.method.as_str(), op.path.as_str()) {
        ("PUT", "/api/v1/memory/identity") => json!({"identity": {"name": caller.marker}}),
        ("POST", "/api/v1/memory/product/{name}/state") => json!({"status": caller.marker}),
        // No idempotency key: a write that reached another owner's dataset must show there.
        ("POST", "/api/v1/ingest/datasets/{name}/rows") => {
            json!({"rows": [{"marker": caller.marker}]})
        }
        ("POST", "/api/v1/ingest/{project_id}") => json!({"event_type": "probe",
            "title": caller.marker, "severity": "error", "external_id": "shared-external-id"}),
        // Replacing: a write that reached another owner's drafts would delete them.
        ("PUT", "/api/v1/inbox/drafts") => drafts_body(&p.account, &p.thread, &caller.marker),
        ("POST", "/api/v1/signals/ingest") => json!({"signals": [
            producer_signal(&caller.marker, &[]),
            producer_signal(&caller.marker, &[victim.decision.as_str()]),
        ]}),
        ("PATCH", "/api/v1/scope") => json!({"workspace_id": victim.workspace}),
        ("POST", "/api/v1/workspaces/{id}/ingest") => {
            json!({"files": [{"path": "AGENTS.md", "content": caller.marker}]})
        }
        ("POST", "/api/v1/workspaces/{id}/sync") => json!({"force": true}),
        ("POST", "/api/v1/workspaces/drift/{id}/resolve") => json!({"resolution": "accept"}),
        ("POST", "/api/v1/content/brief") => json!({"topic": caller.marker}),
        ("POST", "/api/v1/render/producibles/jobs") => {
            json!({"format": "html", "ir": {"title": caller.marker, "blocks": []}})
        }
        ("POST", "/api/v1/marketing/autonomous/run") => json!({"goal": caller.marker}),
        ("POST", "/api/v1/marketing/competitor-watch/run") => {
            json!({"competitors": [{"name": caller.marker}]})
        }
        ("PATCH", "/api/v1/marketing/competitor-watches/{id}") => {
            json!({"name": caller.marker, "paused": true})
        }
        _ => panic!(
            "{} {}: no body; add one to the isolation suite",
            op.method, op.path
        ),
    })
}

fn probes(op: &Operation, caller: &Owner, victim: &Owner, p: &Planted) -> Vec<Probe> {
    if let Some(param) = op
        .params
        .iter()
        .find(|p| p.required && p.location == "header")
    {
        panic!(
            "{} {}: no value for header `{}`",
            op.method, op.path, param.name
        );
    }
    let mut foreign = op.path.clone();
    let mut shared = Some(op.path.clone());
    let mut foreign_row = None;
    let mut shared_row = None;
    for param in op.params.iter().filter(|p| p.location == "path") {
        let (own, planted) = path_value(&op.path, &param.name, victim, p);
        let placeholder = format!("{{{}}}", param.name);
        foreign = foreign.replace(&placeholder, &own);
        let created = CREATED_ON_WRITE.contains(&(op.method.as_str(), op.path.as_str()));
        foreign_row = (!created).then(|| row_of(&op.path, own));
        shared = shared
            .zip(planted.clone())
            .map(|(path, v)| path.replace(&placeholder, &v));
        shared_row = planted.map(|value| row_of(&op.path, value));
    }
    // Required query parameters are in every call, with the victim's first value.
    let query_params: Vec<(&Param, Vec<String>)> = op
        .params
        .iter()
        .filter(|p| p.location == "query")
        .filter_map(|param| query_values(param, victim, p).map(|values| (param, values)))
        .collect();
    let base: Vec<(String, String)> = query_params
        .iter()
        .filter(|(param, _)| param.required)
        .map(|(param, values)| (param.name.clone(), values[0].clone()))
        .collect();
    let body = body_for(op, caller, victim, p);
    let probe = |path: &str, query: Vec<(String, String)>, foreign_row, shared_row| Probe {
        path: path.to_owned(),
        query,
        body: body.clone(),
        foreign_path_id: foreign_row,
        shared_path_id: shared_row,
    };
    let mut probes = vec![probe(&foreign, base.clone(), foreign_row, None)];
    if let (Some(path), Some(row)) = (shared.filter(|s| *s != op.path), shared_row) {
        probes.push(probe(&path, base.clone(), None, Some(row)));
    }
    // Every other value of each parameter in a call of its own (a required one's first value
    // is already in `base`).
    for (param, values) in &query_params {
        for value in values.iter().skip(usize::from(param.required)) {
            let mut query = base.clone();
            query.retain(|(k, _)| *k != param.name);
            query.push((param.name.clone(), value.clone()));
            probes.push(probe(&foreign, query, None, None));
        }
    }
    probes
}

fn row_of(path: &str, id: String) -> ForeignRow {
    if path.starts_with("/api/v1/memory/decisions/")
        || path.starts_with("/api/v1/memory/free-form/")
    {
        ForeignRow::Exported(id)
    } else {
        ForeignRow::Other
    }
}

async fn check(
    h: &Harness,
    op: &Operation,
    probe: &Probe,
    caller: &Owner,
    victim: &Owner,
    violations: &mut Vec<String>,
) {
    let url = probe_url(probe);
    let seen_before = match (&probe.foreign_path_id, &probe.shared_path_id) {
        (Some(ForeignRow::Exported(id)), _) | (_, Some(ForeignRow::Exported(id))) => Some((
            id.clone(),
            full_export(h, &victim.key).await.contains(id.as_str()),
        )),
        _ => None,
    };
    let (status, body) = send(h, &caller.key, op.method.clone(), &url, probe.body.clone()).await;
    let what = format!(
        "{} {} as {} with {}'s ids",
        op.method, url, caller.label, victim.label
    );
    if status == 404 {
        if body["error"]["code"] != "NOT_FOUND" {
            violations.push(format!("{what}: 404 outside the envelope: {body}"));
        }
    } else if status >= 500 {
        violations.push(format!("{what}: {status} {body}"));
    } else {
        let mut body = body;
        drop_query_echo(&mut body, &probe.query);
        let text = body.to_string();
        let leaked: Vec<&str> = std::iter::once(victim.marker.as_str())
            .chain(victim.ids.difference(&caller.ids).map(String::as_str))
            .filter(|s| text.contains(s))
            .collect();
        if !leaked.is_empty() {
            violations.push(format!(
                "{what}: {status} shows {leaked:?}: {}",
                excerpt(&text)
            ));
        }
        let mutating = op.method != Method::GET;
        if mutating && probe.foreign_path_id.is_some() {
            violations.push(format!(
                "{what}: {status} (404 expected): {}",
                excerpt(&text)
            ));
        }
    }
    if let Some((id, true)) = seen_before
        && !full_export(h, &victim.key).await.contains(id.as_str())
    {
        violations.push(format!("{what}: {}'s row {id} is gone", victim.label));
    }
}

fn probe_url(probe: &Probe) -> String {
    with_query(&probe.path, &probe.query)
}

/// Search answers echo the query (`query`): that is the caller's own words, not a leak.
fn drop_query_echo(body: &mut Value, query: &[(String, String)]) {
    if let Some(map) = body.as_object_mut() {
        map.retain(|_, v| !query.iter().any(|(_, q)| v.as_str() == Some(q.as_str())));
    }
}

/// After every probe: the owner's marker and planted rows are all still there, and its staged
/// import was applied by nobody else.
async fn still_intact(h: &Harness, owner: &Owner, p: &Planted) -> Vec<String> {
    let mut violations = Vec::new();
    let export = full_export(h, &owner.key).await;
    // The other planted ids were the targets of each owner's own deletes.
    let id = p.decisions[0];
    if !export.contains(&id.to_string()) {
        violations.push(format!("{}: planted {id} is gone", owner.label));
    }
    for id in [&owner.decision, &owner.entry] {
        if !export.contains(id.as_str()) {
            violations.push(format!("{}: {id} is gone", owner.label));
        }
    }
    let path = format!("/api/v1/memory/imports/{}/apply", owner.staged_import);
    let (status, body) = send(h, &owner.key, Method::POST, &path, None).await;
    if status != 200 {
        violations.push(format!(
            "{}: its staged import: {status} {body}",
            owner.label
        ));
    }
    // Its datasets hold only its own rows: the seeded one, and (under the shared name) those
    // its own probes appended.
    for name in [&owner.dataset, &p.dataset] {
        let path = format!("/api/v1/ingest/datasets/{name}/rows?limit=100");
        let (status, body) = send(h, &owner.key, Method::GET, &path, None).await;
        let rows = body["data"].as_array().cloned().unwrap_or_default();
        if status != 200 || rows.is_empty() {
            violations.push(format!("{}: {path}: {status} {body}", owner.label));
        }
        for row in rows {
            if row["row"]["marker"] != owner.marker.as_str() {
                violations.push(format!(
                    "{}: {name} holds a foreign row: {row}",
                    owner.label
                ));
            }
        }
    }
    let own = format!("/api/v1/ingest/datasets/{}", owner.dataset);
    let (_, body) = send(h, &owner.key, Method::GET, &own, None).await;
    if body["row_count"] != 1 {
        violations.push(format!("{}: {own}: {body}", owner.label));
    }
    let body = json!({"upload_id": owner.upload});
    let (status, body) = send(
        h,
        &owner.key,
        Method::POST,
        "/api/v1/ingest/upload/confirm",
        Some(body),
    )
    .await;
    if status != 201 {
        violations.push(format!("{}: its upload: {status} {body}", owner.label));
    }
    // Its proposal is still pending (nobody else decided it), and it alone can approve it.
    let path = format!("/api/v1/proposals/{}", owner.proposal);
    let (status, body) = send(h, &owner.key, Method::GET, &path, None).await;
    if status != 200 || body["status"] != "pending" {
        violations.push(format!("{}: {path}: {status} {body}", owner.label));
    }
    let (status, body) = send(
        h,
        &owner.key,
        Method::POST,
        &format!("{path}/approve"),
        None,
    )
    .await;
    if status != 200 {
        violations.push(format!(
            "{}: approving its proposal: {status} {body}",
            owner.label
        ));
    }
    // Its lead is still pending, and it alone can accept it.
    let (_, body) = send(h, &owner.key, Method::GET, "/api/v1/leads", None).await;
    let leads: Vec<&Value> = body["data"].as_array().into_iter().flatten().collect();
    if leads.len() != 1 || leads[0]["id"] != owner.lead.as_str() || leads[0]["status"] != "pending"
    {
        violations.push(format!("{}: /api/v1/leads: {body}", owner.label));
    }
    let path = format!("/api/v1/leads/{}/accept", owner.lead);
    let (status, body) = send(h, &owner.key, Method::POST, &path, None).await;
    if status != 200 {
        violations.push(format!(
            "{}: accepting its lead: {status} {body}",
            owner.label
        ));
    }
    // Its credential and its drafts (the last written under the shared account and thread
    // by its own probes) are its own.
    let (_, body) = send(h, &owner.key, Method::GET, "/api/v1/byok", None).await;
    if body["data"][0]["id"] != owner.credential.as_str() {
        violations.push(format!("{}: /api/v1/byok: {body}", owner.label));
    }
    let lookup = format!(
        "/api/v1/inbox/drafts?account_email={}&legacy_thread_id={}",
        p.account, p.thread
    );
    let (_, body) = send(h, &owner.key, Method::GET, &lookup, None).await;
    if body["why"] != owner.marker.as_str() {
        violations.push(format!("{}: {lookup}: {body}", owner.label));
    }
    // Its workspace, drift event, bridge run and agent are still there, untouched.
    let drift = format!("/api/v1/workspaces/drift?workspace_id={}", owner.workspace);
    let (_, open) = send(h, &owner.key, Method::GET, &drift, None).await;
    if open["data"][0]["id"] != owner.drift.as_str() {
        violations.push(format!("{}: its open drift: {open}", owner.label));
    }
    let (_, status) = send(h, &owner.key, Method::GET, "/api/v1/bridge/status", None).await;
    if status["agents"][0]["id"] != owner.agent.as_str()
        || status["agents"][0]["token_active"] != true
    {
        violations.push(format!("{}: its agent: {status}", owner.label));
    }
    for path in [
        format!("/api/v1/products/{}", owner.product),
        format!("/api/v1/memory/consolidate/{}", owner.run),
        format!("/api/v1/ai/costs/{}", owner.product),
        format!("/api/v1/bridge/generate/{}", owner.bridge_job),
        format!(
            "/api/v1/render/producibles/jobs/{}/status",
            owner.render_job
        ),
        format!("/api/v1/content/{}/status", owner.brief),
        format!("/api/v1/marketing/autonomous/run/{}", owner.autonomous_run),
        format!("/api/v1/marketing/competitor-watch/run/{}", owner.watch_run),
        format!("/api/v1/marketing/competitor-watches/{}", owner.watch),
    ] {
        let (status, body) = send(h, &owner.key, Method::GET, &path, None).await;
        if status != 200 {
            violations.push(format!("{}: {path}: {status} {body}", owner.label));
        }
    }
    // Its watch was renamed and paused by nobody else.
    let path = format!("/api/v1/marketing/competitor-watches/{}", owner.watch);
    let (_, watch) = send(h, &owner.key, Method::GET, &path, None).await;
    if watch["name"] != owner.marker.as_str() || watch["paused"] != false {
        violations.push(format!("{}: {path}: {watch}", owner.label));
    }
    violations
}
