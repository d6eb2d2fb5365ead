//! The outbound hook of approved autonomous marketing actions (`MEMORY_ACTION_HOOK__…`): an
//! approval writes the hook's row (`action_hooks`) in the decision's transaction and publishes
//! its task on `action.hook` (see [`crate::run_queue`]); every memory-api process consumes that
//! queue and POSTs the body fixed at approval to the configured URL through the SSRF-safe
//! client, signed as mail's outbound webhooks are (Standard Webhooks headers with the hook's
//! id, and `X-Memory-Signature` in the `X-Mail-Signature` scheme). A 2xx answer completes the
//! hook, which is never sent again; anything else is retried with the queue's growing delays,
//! and recorded failed after the last attempt. The service carries nothing out itself: the
//! team's own automation does, on the hook.

use std::sync::Arc;
use std::time::Duration;

use delivery::safe_http::{SafeClient, TargetPolicy};
use queue::{Broker, DeliveryInfo, HandlerResult};
use serde::Deserialize;
use store::Pool;
use uuid::Uuid;

use crate::db::action_proposals as db;
use crate::run_queue::{RunKind, RunQueue};

/// `action_hooks`, queued on `action.hook`.
pub static ACTION_HOOKS: RunKind = RunKind {
    table: "action_hooks",
    queue: "action.hook",
    kind: "action_hook",
    id_field: "hook_id",
    name: "action hook",
};

/// The hooks' publisher.
pub fn action_hook_queue(broker: &Broker, prefix: &str) -> RunQueue {
    RunQueue::new(&ACTION_HOOKS, broker, prefix)
}

/// Bytes of a target's answer kept.
const MAX_ANSWER_BYTES: usize = 2_048;

/// `MEMORY_ACTION_HOOK__URL`, `__SECRET`, `__ALLOW_PRIVATE_TARGETS`, `__TIMEOUT_MS`.
#[derive(Clone, Deserialize)]
#[serde(default)]
pub struct ActionHookSettings {
    /// Where approved marketing actions are POSTed; empty (default): no hook, and an
    /// approval records its decision only.
    pub url: String,
    /// The signing secret, `whsec_<base64>` (required with `url`).
    pub secret: String,
    /// Lets a URL on loopback and private ranges through (an on-premises receiver, tests);
    /// never the metadata addresses. Off by default.
    pub allow_private_targets: bool,
    /// Each attempt's time limit (connect, send, answer), in milliseconds.
    pub timeout_ms: u64,
}

impl Default for ActionHookSettings {
    fn default() -> Self {
        Self {
            url: String::new(),
            secret: String::new(),
            allow_private_targets: false,
            timeout_ms: 10_000,
        }
    }
}

impl std::fmt::Debug for ActionHookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionHookSettings")
            .field("allow_private_targets", &self.allow_private_targets)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

/// A configured hook: where to, and how it is signed.
#[derive(Clone)]
pub struct Target {
    url: String,
    secret: String,
    client: SafeClient,
}

impl ActionHookSettings {
    /// The configured target (`None` without a URL), its URL and secret checked.
    pub fn target(&self) -> anyhow::Result<Option<Target>> {
        let url = self.url.trim();
        if url.is_empty() {
            return Ok(None);
        }
        let policy = TargetPolicy::new(self.allow_private_targets);
        delivery::safe_http::check_url(url, policy).map_err(|e| {
            anyhow::anyhow!("MEMORY_ACTION_HOOK__URL is not an allowed target: {e}")
        })?;
        webhook_signature::Secret::parse(&self.secret).map_err(|_| {
            anyhow::anyhow!(
                "MEMORY_ACTION_HOOK__SECRET must be whsec_<base64> with MEMORY_ACTION_HOOK__URL"
            )
        })?;
        let client = SafeClient::new(
            policy,
            Duration::from_millis(self.timeout_ms.max(1)),
            MAX_ANSWER_BYTES,
        )?;
        Ok(Some(Target {
            url: url.to_owned(),
            secret: self.secret.clone(),
            client,
        }))
    }
}

/// What the hook consumer needs.
#[derive(Clone)]
pub struct HookWorker {
    pub pool: Pool,
    /// `None`: no hook configured (a task then fails: its row was written when one was).
    pub target: Option<Arc<Target>>,
}

/// Handles one `action_hook` job: delivers the hook unless it finished.
pub async fn handle(worker: &HookWorker, hook_id: Uuid, info: &DeliveryInfo) -> HandlerResult {
    let handled = deliver(worker, hook_id).await;
    ACTION_HOOKS
        .answer(
            &worker.pool,
            hook_id,
            info,
            handled,
            "the hook could not be delivered",
        )
        .await
}

/// Delivers hook `hook_id`; answers its status (`None` when it is gone). `Err`: an attempt
/// that failed, worth another.
async fn deliver(worker: &HookWorker, hook_id: Uuid) -> Result<Option<String>, String> {
    let mut conn = store::conn(&worker.pool).await.map_err(|e| e.to_string())?;
    let Some(hook) = db::hook(&mut conn, hook_id)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    if matches!(hook.status.as_str(), "completed" | "failed") {
        return Ok(Some(hook.status));
    }
    let Some(target) = worker.target.as_deref() else {
        ACTION_HOOKS
            .fail(&mut conn, hook_id, "no hook is configured any more")
            .await
            .map_err(|e| e.to_string())?;
        return Ok(Some("failed".to_owned()));
    };
    ACTION_HOOKS
        .start(&mut conn, hook_id)
        .await
        .map_err(|e| e.to_string())?;
    drop(conn);
    let body = serde_json::to_vec(&hook.payload).map_err(|e| e.to_string())?;
    let headers = sign(&hook_id.to_string(), &target.secret, &body)?;
    let answer = target.client.post(&target.url, &headers, body).await;
    let mut conn = store::conn(&worker.pool).await.map_err(|e| e.to_string())?;
    match answer {
        Ok(answer) if (200..300).contains(&answer.status) => {
            db::delivered(&mut conn, hook_id, answer.status)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some("completed".to_owned()))
        }
        Ok(answer) => {
            let error = format!("the target answered {}", answer.status);
            let _ = db::attempt_failed(&mut conn, hook_id, Some(answer.status), &error).await;
            Err(error)
        }
        Err(err) => {
            // The cause may name the target's address: the row keeps it, the log does not.
            let error = err.to_string();
            let _ = db::attempt_failed(&mut conn, hook_id, None, &error).await;
            Err("the target could not be reached".to_owned())
        }
    }
}

/// The signature headers of one attempt, signed now.
fn sign(id: &str, secret: &str, body: &[u8]) -> Result<Vec<(&'static str, String)>, String> {
    let now = chrono::Utc::now().timestamp();
    let key = webhook_signature::Secret::parse(secret).map_err(|e| e.to_string())?;
    Ok(vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", now.to_string()),
        ("webhook-signature", key.sign(id, now, body)),
        (
            "x-memory-signature",
            webhook_signature::mail_signature(&[secret], now, body),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_verify_as_standard_webhooks_and_the_mail_scheme() {
        let secret = webhook_signature::Secret::generate();
        let body = br#"{"type":"marketing.action.approved"}"#;
        let headers = sign("hook-1", &secret, body).unwrap();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let read = webhook_signature::Headers::read(get).unwrap();
        let key = webhook_signature::Secret::parse(&secret).unwrap();
        let now = chrono::Utc::now().timestamp();
        key.verify(&read, body, now).unwrap();
        let mail = get("x-memory-signature").unwrap();
        let t = get("webhook-timestamp").unwrap();
        assert_eq!(
            mail,
            webhook_signature::mail_signature(&[secret.as_str()], t.parse().unwrap(), body)
        );
    }

    #[test]
    fn a_hook_needs_an_allowed_url_and_a_secret() {
        let mut settings = ActionHookSettings::default();
        assert!(settings.target().unwrap().is_none());
        settings.url = "http://127.0.0.1:9/hook".into();
        settings.secret = webhook_signature::Secret::generate();
        settings.allow_private_targets = true;
        assert!(settings.target().unwrap().is_some());
        settings.secret = "whsec_not*base64".into();
        assert!(settings.target().is_err());
        assert!(!format!("{settings:?}").contains("not*base64"));
    }
}
