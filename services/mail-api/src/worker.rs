//! The send worker's work (run by the `send-worker` binary, and in-process by the tests):
//! one `send_email` job ([`crate::jobs::send_email`]) sends one email-log row through the project's provider, exactly once
//! as far as the provider allows.
//!
//! - The row is read and claimed by one statement, shared by the jobs that start at the same
//!   time ([`claims`]). A row already past sending (a redelivery, a relay duplicate) sends
//!   nothing and answers the stored result; so does another delivery of the same job that
//!   finds the claim held, and is acknowledged. The broker's redelivery of the claiming
//!   message itself (its worker died) takes the claim over at once; otherwise a claim
//!   expires after [`emails::CLAIM_SECS`] and the outbox relay publishes the job again, so a
//!   worker killed after claiming loses nothing.
//! - Suppression is checked again (the list may have changed since the API accepted it).
//! - No connection is held while the provider is called: the provider answers, then one
//!   statement records the outcome and counts the attempt (only if the row is still unsent).
//!   That statement records the outcomes of all the jobs finished within a few milliseconds
//!   ([`outcomes`]); each job is acknowledged after its batch committed.
//! - The email id is the provider's idempotency key (Resend's `Idempotency-Key`), so a crash
//!   between the provider's acceptance and the database write is harmless there: the
//!   redelivered job gets the first answer back instead of a second email.

mod claims;
mod outcomes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use delivery::dkim::DkimKey;
use delivery::tracking::Tracker;
use delivery::{DefaultProviderConfig, OutgoingEmail, Provider, SendError};
use prometheus::{Histogram, IntCounterVec, Opts};
use queue::{DeliveryInfo, HandlerError};
use secrets::Kek;
use serde::Deserialize;
use store::Pool;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::bounces::{self, Report, Verp};
use crate::db::delivery as settings_db;
use crate::db::emails::{self, Claim, Email, Finishing, ForSending, Outcome};
use crate::db::webhooks::Taken;
use crate::domain::personalize;
use crate::sending::SendResult;

use claims::ClaimTaker;
pub use outcomes::OutcomeBatchSettings;
use outcomes::OutcomeWriter;

/// The worker's own settings (`MAIL_DELIVERY__…`).
#[derive(Debug, Clone, Deserialize)]
pub struct DeliverySettings {
    /// Used by projects without a provider of their own (`make dev`: the file provider); an
    /// SMTP relay may be given a CA file (`…__DEFAULT_PROVIDER__CA_FILE`).
    pub default_provider: DefaultProviderConfig,
    /// Resend's API address (the deployment's, never the project's).
    pub resend_base_url: String,
    /// Postmark's, Mailgun's and SendGrid's API addresses (`MAIL_DELIVERY__PROVIDER_URLS__…`).
    #[serde(default)]
    pub provider_urls: delivery::providers::ProviderUrls,
    /// Lets projects name SMTP hosts on internal addresses (loopback, private ranges): off by
    /// default, so that a project cannot reach the deployment's own network.
    #[serde(default)]
    pub allow_private_smtp_hosts: bool,
}

/// A project's provider and the sealed configuration it was built from.
type Built = (Vec<u8>, Arc<dyn Provider>);

pub struct SendWorker {
    pool: Pool,
    kek: Arc<Kek>,
    tracker: Tracker,
    shared_domain: String,
    settings: DeliverySettings,
    /// Providers by project.
    providers: Mutex<HashMap<Uuid, Built>>,
    default_provider: Mutex<Option<Arc<dyn Provider>>>,
    /// `emails_finished_total{status}`: emails this worker brought to a final state.
    finished: IntCounterVec,
    batching: OutcomeBatchSettings,
    /// `send_outcome_batch_size`.
    batch_sizes: Histogram,
    /// Started by the first outcome (inside the runtime that runs the jobs).
    outcomes: OnceLock<OutcomeWriter>,
    /// Started by the first job.
    claims: OnceLock<ClaimTaker>,
    /// Keeps the templates it compiled: a campaign step's is compiled once for its recipients.
    renderer: personalize::Renderer,
    /// Per-email return paths (`MAIL_BOUNCES__DOMAIN`).
    verp: Option<Verp>,
    /// The deployment's key for the shared sending domain (`MAIL_SHARED_DKIM__…`).
    shared_dkim: Option<DkimKey>,
}

impl SendWorker {
    /// The worker's metrics, for the binary's `/metrics`.
    pub fn collectors(&self) -> Vec<Box<dyn prometheus::core::Collector>> {
        vec![
            Box::new(self.finished.clone()),
            Box::new(self.batch_sizes.clone()),
        ]
    }

    pub fn new(
        pool: Pool,
        kek: Arc<Kek>,
        tracker: Tracker,
        shared_domain: String,
        settings: DeliverySettings,
    ) -> Self {
        Self {
            pool,
            kek,
            tracker,
            shared_domain,
            settings,
            finished: IntCounterVec::new(
                Opts::new(
                    "emails_finished_total",
                    "Emails the send worker brought to a final state, by that state",
                ),
                &["status"],
            )
            .expect("static metric definition"),
            providers: Mutex::new(HashMap::new()),
            default_provider: Mutex::new(None),
            batching: OutcomeBatchSettings::default(),
            batch_sizes: outcomes::batch_sizes(),
            outcomes: OnceLock::new(),
            claims: OnceLock::new(),
            renderer: personalize::Renderer::default(),
            verp: None,
            shared_dkim: None,
        }
    }

    /// Gives every email its own return path at the bounce domain.
    pub fn with_return_paths(mut self, verp: Option<Verp>) -> Self {
        self.verp = verp;
        self
    }

    /// Signs mail from the shared sending domain with the deployment's key for it.
    pub fn with_shared_dkim(mut self, key: Option<DkimKey>) -> Self {
        self.shared_dkim = key;
        self
    }

    /// How outcomes are batched (before the first job).
    pub fn with_outcome_batching(mut self, batching: OutcomeBatchSettings) -> Self {
        self.batching = batching;
        self
    }

    fn outcomes(&self) -> &OutcomeWriter {
        self.outcomes.get_or_init(|| {
            OutcomeWriter::start(self.pool.clone(), self.batching, self.batch_sizes.clone())
        })
    }

    /// Claims the email with the jobs starting at the same time, or alone if the batch handed
    /// the claim back.
    async fn claim(&self, claim: Claim) -> Result<Option<ForSending>, HandlerError> {
        let claims = self
            .claims
            .get_or_init(|| ClaimTaker::start(self.pool.clone()));
        if let Ok(found) = claims.claim(claim).await {
            return Ok(found);
        }
        let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
        emails::claim_for_sending(&mut conn, claim)
            .await
            .map_err(HandlerError::retry)
    }

    /// Sends email `id` of `project_id` (a `send_email` job, see [`crate::jobs::send_email`])
    /// and answers what became of it.
    pub async fn send(
        &self,
        project_id: Uuid,
        id: Uuid,
        info: &DeliveryInfo,
    ) -> Result<SendResult, HandlerError> {
        let claim = Claim {
            project_id,
            id,
            take_over: info.redelivered,
        };
        let Some(job) = self.claim(claim).await? else {
            return Err(HandlerError::permanent(format!("no email {id}")));
        };
        let row = job.email;
        if row.status.is_final_for_sending() {
            return Ok(SendResult::of(&row));
        }
        if !job.claimed {
            // Another delivery is sending it (or has just finished): nothing to do here.
            let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
            let current = emails::get(&mut conn, project_id, id)
                .await
                .map_err(HandlerError::retry)?
                .ok_or_else(|| HandlerError::permanent("the email vanished"))?;
            return Ok(SendResult::of(&current));
        }
        if job.suppressed {
            return self.finish(&row, Outcome::Suppressed).await;
        }
        let own = match self.own_domain(
            row.project_id,
            job.own_domain_id,
            job.own_domain,
            job.dkim_selector,
            job.dkim_private_key.as_deref(),
        ) {
            Ok(own) => own,
            Err(reason) => {
                let outcome = Outcome::Failed {
                    provider: "none",
                    reason: &reason,
                };
                return self.finish(&row, outcome).await;
            }
        };
        let (Some(slug), Some(from_name)) = (job.site_slug, job.site_from_name) else {
            // No outcome is recorded: the claim goes, or its expiry would publish the job again.
            let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
            emails::release_claim(&mut conn, project_id, id)
                .await
                .map_err(HandlerError::retry)?;
            return Err(HandlerError::permanent("the email's site is gone"));
        };
        let tracking_host = job.site_tracking_host.as_deref();
        let variables = job.recipient.variables(&row, &slug);
        let email = match self.build(&row, &slug, &from_name, own, tracking_host, variables) {
            Ok(email) => email,
            Err(reason) => {
                let outcome = Outcome::Failed {
                    provider: "none",
                    reason: &reason,
                };
                return self.finish(&row, outcome).await;
            }
        };
        let provider = match self.provider(project_id, job.provider_config) {
            Ok(provider) => provider,
            Err(reason) => {
                let outcome = Outcome::Failed {
                    provider: "none",
                    reason: &reason,
                };
                return self.finish(&row, outcome).await;
            }
        };
        let span = tracing::info_span!(
            "provider.send",
            otel.kind = "client",
            provider = provider.name(),
            email_id = %id,
            outcome = tracing::field::Empty,
        );
        let answer = provider.send(&email).instrument(span.clone()).await;
        span.record(
            "outcome",
            match &answer {
                Ok(_) => "accepted",
                Err(SendError::Permanent(_)) => "refused",
                Err(SendError::Rejected(_)) => "bounced",
                Err(SendError::Temporary(_)) => "failed",
            },
        );
        match answer {
            Ok(accepted) => {
                let outcome = Outcome::Sent {
                    provider: provider.name(),
                    provider_message_id: &accepted.provider_message_id,
                };
                self.finish(&row, outcome).await
            }
            Err(SendError::Permanent(reason)) => {
                let outcome = Outcome::Failed {
                    provider: provider.name(),
                    reason: &reason,
                };
                self.finish(&row, outcome).await
            }
            Err(SendError::Rejected(reason)) => {
                let outcome = Outcome::Failed {
                    provider: provider.name(),
                    reason: &reason,
                };
                let result = self.finish(&row, outcome).await?;
                self.bounce(row.id, &reason).await;
                Ok(result)
            }
            Err(SendError::Temporary(reason)) => {
                if info.is_last_attempt() {
                    let reason = format!("gave up after {} attempts: {reason}", info.attempt);
                    let outcome = Outcome::Failed {
                        provider: provider.name(),
                        reason: &reason,
                    };
                    return self.finish(&row, outcome).await;
                }
                let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
                emails::note_error(&mut conn, project_id, id, &reason)
                    .await
                    .map_err(HandlerError::retry)?;
                Err(HandlerError::retry(reason))
            }
        }
    }

    /// Records the outcome (with the batch of outcomes finished at the same time) unless
    /// another delivery of the job recorded one first; answers what the row says in the end.
    async fn finish(&self, row: &Email, outcome: Outcome<'_>) -> Result<SendResult, HandlerError> {
        let finishing = Finishing::new(row.project_id, row.id, outcome);
        let moved = match self.outcomes().record(finishing).await {
            Ok(moved) => moved,
            Err(outcomes::NotWritten) => {
                let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
                emails::finish(&mut conn, row.project_id, row.id, outcome)
                    .await
                    .map_err(HandlerError::retry)?
            }
        };
        if let Some(updated) = moved {
            self.finished
                .with_label_values(&[updated.status.as_str()])
                .inc();
            return Ok(SendResult::of_finished(updated));
        }
        let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
        let current = emails::get(&mut conn, row.project_id, row.id)
            .await
            .map_err(HandlerError::retry)?
            .ok_or_else(|| HandlerError::permanent("the email vanished"))?;
        Ok(SendResult::of(&current))
    }

    /// A refusal in the SMTP conversation is a hard bounce: recorded as the `smtp` provider's
    /// `email.bounced` and applied at once with the provider webhooks' effects (status bounced,
    /// suppression, outbound `email.bounced`, chat alert). The send's own answer stays the
    /// refusal. A failure to apply it is logged and left on the receipt (status `failed`).
    async fn bounce(&self, id: Uuid, reason: &str) {
        let applied = async {
            let mut conn = store::conn(&self.pool).await?;
            match bounces::record_and_apply(&mut conn, id, &Report::refused(reason)).await? {
                Taken::Owed { error, .. } => Err(anyhow::anyhow!(error)),
                _ => Ok::<(), anyhow::Error>(()),
            }
        }
        .await;
        if let Err(err) = applied {
            tracing::warn!(email_id = %id, error = %err, "the refused send's bounce was not applied");
        }
    }

    /// The site's verified own domain and its opened DKIM key (`None`: the shared domain).
    fn own_domain(
        &self,
        project_id: Uuid,
        id: Option<Uuid>,
        domain: Option<String>,
        selector: Option<String>,
        sealed: Option<&[u8]>,
    ) -> Result<Option<DkimKey>, String> {
        let (Some(id), Some(domain), Some(selector), Some(sealed)) = (id, domain, selector, sealed)
        else {
            return Ok(None);
        };
        let private_pem = crate::db::domains::open_key(&self.kek, project_id, id, sealed)
            .map_err(|e| e.to_string())?;
        Ok(Some(DkimKey {
            domain,
            selector,
            private_pem,
        }))
    }

    /// The message as the provider gets it ([`compose`]): from the site's verified own domain
    /// and signed with its key, or from the shared domain; its links under the site's own
    /// tracking host when it has one (and its domain is verified).
    fn build(
        &self,
        row: &Email,
        slug: &str,
        from_name: &str,
        own: Option<DkimKey>,
        tracking_host: Option<&str>,
        variables: Option<serde_json::Value>,
    ) -> Result<OutgoingEmail, String> {
        let own_tracker = tracking_host.map(|host| self.tracker.on_host(host));
        let tracker = own_tracker.as_ref().unwrap_or(&self.tracker);
        let html = row.html.as_deref().unwrap_or_default();
        let personal = match variables {
            Some(variables) => Some(
                personalize(
                    &self.renderer,
                    tracker,
                    row.id,
                    variables,
                    &row.subject,
                    html,
                    row.text_body.as_deref(),
                )
                .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        let (subject, html, text) = match &personal {
            Some(p) => (p.subject.as_str(), p.html.as_str(), p.text.as_deref()),
            None => (row.subject.as_str(), html, row.text_body.as_deref()),
        };
        let draft = Draft {
            id: row.id,
            to: &row.to_email,
            reply_to: row.reply_to.as_deref(),
            subject,
            html,
            text,
            headers: row.header_pairs(),
            tags: &row.tags,
            tracking: row.tracking,
            campaign: row.campaign_id.is_some() || row.enrollment_id.is_some(),
        };
        let domain = own
            .as_ref()
            .map_or(self.shared_domain.as_str(), |k| &k.domain);
        let mut email =
            compose(tracker, domain, slug, from_name, &draft).map_err(|e| e.to_string())?;
        email.dkim = own.or_else(|| self.shared_dkim.clone());
        email.return_path = self.verp.as_ref().map(|v| v.return_path(row.id));
        Ok(email)
    }

    /// The provider of projects without their own, built at the first call: send-worker makes
    /// it at start, so that a wrong setting (an unreadable CA file, say) stops it there.
    pub fn default_provider(&self) -> Result<Arc<dyn Provider>, String> {
        let mut default = self
            .default_provider
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(provider) = default.as_ref() {
            return Ok(Arc::clone(provider));
        }
        let provider = self
            .settings
            .default_provider
            .build(&self.settings.resend_base_url, &self.settings.provider_urls)
            .map_err(|e| format!("the default provider: {e}"))?;
        *default = Some(Arc::clone(&provider));
        Ok(provider)
    }

    fn provider(
        &self,
        project_id: Uuid,
        sealed: Option<Vec<u8>>,
    ) -> Result<Arc<dyn Provider>, String> {
        let Some(sealed) = sealed else {
            return self.default_provider();
        };
        let mut cache = self.providers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((bytes, provider)) = cache.get(&project_id)
            && *bytes == sealed
        {
            return Ok(Arc::clone(provider));
        }
        let config = settings_db::open_provider(&self.kek, project_id, &sealed)
            .map_err(|e| e.to_string())?;
        let provider = config
            .build(
                &self.settings.resend_base_url,
                &self.settings.provider_urls,
                crate::config::project_smtp_hosts(self.settings.allow_private_smtp_hosts),
            )
            .map_err(|e| format!("the project's provider: {e}"))?;
        cache.insert(project_id, (sealed, Arc::clone(&provider)));
        Ok(provider)
    }
}

/// A personalized email's subject, HTML and text, rendered for its recipient.
pub struct Personal {
    pub subject: String,
    pub html: String,
    pub text: Option<String>,
}

/// Renders an email's subject, HTML and text for its recipient (`variables`, see
/// [`crate::domain::personalize`]), with `unsubscribe_url` the email's unsubscribe link.
/// The send worker renders once per recipient; `POST /emails/preview` shows the same.
pub fn personalize(
    renderer: &personalize::Renderer,
    tracker: &Tracker,
    id: Uuid,
    mut variables: serde_json::Value,
    subject: &str,
    html: &str,
    text: Option<&str>,
) -> Result<Personal, personalize::RenderError> {
    // The link is signed: made only for sources that may read it.
    let reads_unsubscribe = [Some(subject), Some(html), text]
        .into_iter()
        .flatten()
        .any(|s| s.contains("unsubscribe_url"));
    if let Some(members) = variables.as_object_mut().filter(|_| reads_unsubscribe) {
        members.insert(
            "unsubscribe_url".to_owned(),
            tracker.unsubscribe_url(id).into(),
        );
    }
    let context = personalize::context(&variables);
    Ok(Personal {
        // A subject is one line: a value holding a line break cannot break it.
        subject: renderer
            .render("subject", subject, &context)?
            .replace(['\r', '\n'], " "),
        html: renderer.render("html", html, &context)?,
        text: text
            .map(|t| renderer.render("text", t, &context))
            .transpose()?,
    })
}

/// An email as written, before it is made into the message the provider gets.
pub struct Draft<'a> {
    /// The email log id (the tracking links name it).
    pub id: Uuid,
    pub to: &'a str,
    pub reply_to: Option<&'a str>,
    pub subject: &'a str,
    pub html: &'a str,
    pub text: Option<&'a str>,
    pub headers: Vec<(String, String)>,
    pub tags: &'a [String],
    /// Open pixel and click links.
    pub tracking: bool,
    /// Campaign mail: the one-click unsubscribe headers.
    pub campaign: bool,
}

/// Why a draft cannot be made into a message.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error(transparent)]
    Tracking(#[from] delivery::tracking::TrackingError),
    #[error(transparent)]
    Invalid(#[from] delivery::EmailError),
}

/// The message as the provider gets it: from `<slug>@<domain>` (the shared sending domain, or
/// the site's verified own domain) with the site's name,
/// tracking injected unless the request turned it off, and on campaign mail the one-click
/// unsubscribe headers (RFC 8058) and an unsubscribe link at the end of the body (and text). The send worker sends what this makes; `POST /emails/preview`
/// shows it.
pub fn compose(
    tracker: &Tracker,
    domain: &str,
    slug: &str,
    from_name: &str,
    draft: &Draft<'_>,
) -> Result<OutgoingEmail, ComposeError> {
    let unsubscribe = draft.campaign.then(|| tracker.unsubscribe_url(draft.id));
    let footer = unsubscribe
        .as_deref()
        .map_or_else(String::new, unsubscribe_footer);
    let html = tracker.prepare(draft.html, draft.id, draft.tracking, &footer)?;
    let text = match (draft.text, &unsubscribe) {
        (Some(text), Some(url)) => Some(format!("{text}\n\nUnsubscribe: {url}")),
        (text, _) => text.map(str::to_owned),
    };
    let mut headers = draft.headers.clone();
    if let Some(url) = &unsubscribe {
        headers.push(("List-Unsubscribe".to_owned(), format!("<{url}>")));
        headers.push((
            "List-Unsubscribe-Post".to_owned(),
            "List-Unsubscribe=One-Click".to_owned(),
        ));
    }
    let email = OutgoingEmail {
        id: draft.id,
        from_name: from_name.to_owned(),
        from_address: format!("{slug}@{domain}"),
        to: draft.to.to_owned(),
        reply_to: draft.reply_to.map(str::to_owned),
        subject: draft.subject.to_owned(),
        html,
        text,
        headers,
        tags: draft.tags.to_vec(),
        dkim: None,
        return_path: None,
    };
    email.validate()?;
    Ok(email)
}

/// The unsubscribe link at the end of campaign mail's body (the token is URL-safe: nothing to
/// escape).
fn unsubscribe_footer(url: &str) -> String {
    format!(
        "<p style=\"font-size:12px;color:#666\">You receive this because you subscribed. \
         <a href=\"{url}\">Unsubscribe</a></p>"
    )
}
