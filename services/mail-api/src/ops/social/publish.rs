//! Publishing (the `social.publish` job, run by send-worker): each pending publication of a
//! post is held by one worker at a time, sent with the platform's idempotency key where it has
//! one, and marked published with the platform's post id at once, so a retried or duplicated
//! job publishes nothing twice. Tokens about to expire are refreshed first; a token refused
//! (401) is refreshed and the publication tried once more. A 429 (or the per-account limit
//! of the worker) puts the post back in the outbox, due after the platform's `Retry-After`;
//! a platform unreachable or failing (5xx) is retried on the queue's backoff; a refusal (4xx)
//! fails the publication for good, its reason kept.
//!
//! The outbox's relay (mail-api) publishes due rows to the queue ([`PublishOutbox`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use queue::{HandlerError, HandlerResult, Publisher};
use secrets::Kek;
use serde_json::json;
use service_kit::outbox::{self, Outbox, Relayed, Schedule};
use store::Pool;
use uuid::Uuid;

use super::connect::seal_context;
use crate::db::social::{self as db, AccountRow};
use crate::social::{
    self, Account, Draft, Platform, PlatformError, PublishSocialPost, SocialClient, Tokens,
};

/// How long a worker holds a publication it is sending.
const HOLD: TimeDelta = TimeDelta::minutes(2);

pub struct SocialPublisher {
    pool: Pool,
    kek: Arc<Kek>,
    client: SocialClient,
    /// Publications per account in the current minute: `(minute start, count)`.
    windows: Mutex<HashMap<(Uuid, Platform), (Instant, u32)>>,
}

/// What one publication came to.
enum Outcome {
    Published,
    Later(Duration),
    Retry(String),
    Failed,
    Skipped,
}

impl SocialPublisher {
    pub fn new(pool: Pool, kek: Arc<Kek>, client: SocialClient) -> Self {
        Self {
            pool,
            kek,
            client,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// How long `(project, platform)` must wait for its per-minute budget (zero: go, counted).
    fn budget(&self, project_id: Uuid, platform: Platform) -> Duration {
        let per_minute = self.client.settings.per_account_per_minute.max(1);
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let window = windows.entry((project_id, platform)).or_insert((now, 0));
        if now.duration_since(window.0) >= Duration::from_secs(60) {
            *window = (now, 0);
        }
        if window.1 >= per_minute {
            return Duration::from_secs(60).saturating_sub(now.duration_since(window.0));
        }
        window.1 += 1;
        Duration::ZERO
    }

    pub async fn handle(&self, job: PublishSocialPost) -> HandlerResult {
        let PublishSocialPost {
            post_id,
            project_id,
        } = job;
        let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
        let Some(post) = db::post(&mut conn, project_id, post_id)
            .await
            .map_err(HandlerError::retry)?
        else {
            return Ok(None);
        };
        if post.approval_id.is_some() || post.publish_at.is_none() {
            return Ok(None);
        }
        let publications = db::publications(&mut conn, project_id, &[post_id])
            .await
            .map_err(HandlerError::retry)?;
        let mut later: Option<Duration> = None;
        let mut retry: Option<String> = None;
        let mut published = 0;
        for publication in publications.iter().filter(|p| p.status == "pending") {
            let outcome = self
                .publish_one(&mut conn, project_id, publication, &post)
                .await
                .map_err(HandlerError::retry)?;
            match outcome {
                Outcome::Published => published += 1,
                Outcome::Later(wait) => later = Some(later.map_or(wait, |l| l.max(wait))),
                Outcome::Retry(error) => retry = Some(error),
                Outcome::Failed | Outcome::Skipped => {}
            }
        }
        if let Some(wait) = later {
            let cap = Duration::from_secs(self.client.settings.max_retry_after_secs);
            let due = Utc::now() + TimeDelta::from_std(wait.min(cap)).unwrap_or(TimeDelta::MAX);
            db::enqueue(&mut conn, project_id, post_id, due)
                .await
                .map_err(HandlerError::retry)?;
        }
        if let Some(error) = retry {
            return Err(HandlerError::retry(error));
        }
        Ok(Some(
            json!({"published": published, "later": later.is_some()}),
        ))
    }

    async fn publish_one(
        &self,
        conn: &mut AsyncPgConnection,
        project_id: Uuid,
        publication: &db::PublicationRow,
        post: &db::PostRow,
    ) -> QueryResult<Outcome> {
        let Some(platform) = Platform::parse(&publication.platform) else {
            db::release(
                conn,
                publication.id,
                true,
                "not a platform the service knows",
            )
            .await?;
            return Ok(Outcome::Failed);
        };
        let wait = self.budget(project_id, platform);
        if !wait.is_zero() {
            return Ok(Outcome::Later(wait));
        }
        if !db::claim_publication(conn, publication.id, Utc::now() + HOLD).await? {
            return Ok(Outcome::Skipped);
        }
        let Some(row) = db::account(conn, project_id, platform.as_str()).await? else {
            db::release(
                conn,
                publication.id,
                true,
                "no account of this platform is connected",
            )
            .await?;
            return Ok(Outcome::Failed);
        };
        let text = social::adapt(&post.content, None, platform.rules());
        let media = super::media_of(post);
        let options = super::options_of(post);
        let draft = Draft {
            title: &post.title,
            text: &text,
            media: &media,
            options: &options,
        };
        let outcome = self
            .send(conn, project_id, platform, &row, &draft, publication.id)
            .await?;
        Ok(match outcome {
            Ok(published) => {
                db::mark_published(conn, publication.id, &published.id).await?;
                Outcome::Published
            }
            Err(PlatformError::RateLimited(wait)) => {
                db::release(conn, publication.id, false, "rate limited by the platform").await?;
                Outcome::Later(wait)
            }
            Err(PlatformError::Unavailable(error)) => {
                db::release(conn, publication.id, false, &error).await?;
                Outcome::Retry(error)
            }
            Err(PlatformError::Unauthorized) => {
                let reason = "the platform refused the account's token: connect it again";
                db::release(conn, publication.id, true, reason).await?;
                Outcome::Failed
            }
            Err(PlatformError::Rejected(reason) | PlatformError::NotConfigured(reason)) => {
                db::release(conn, publication.id, true, &reason).await?;
                Outcome::Failed
            }
        })
    }

    /// Publishes with the account's token, refreshed first when it is about to expire and once
    /// more when the platform refuses it.
    async fn send(
        &self,
        conn: &mut AsyncPgConnection,
        project_id: Uuid,
        platform: Platform,
        row: &AccountRow,
        draft: &Draft<'_>,
        key: Uuid,
    ) -> QueryResult<Result<social::Published, PlatformError>> {
        let context = seal_context(project_id, platform);
        let open = |sealed: &[u8]| self.kek.open_text(sealed, &context).ok();
        let Some(access) = open(&row.access_sealed) else {
            return Ok(Err(PlatformError::Unauthorized));
        };
        let mut account = Account {
            access,
            refresh: row.refresh_sealed.as_deref().and_then(open),
            handle: row.handle.clone(),
        };
        let margin = TimeDelta::seconds(self.client.settings.refresh_margin_secs);
        if account.refresh.is_some() && row.expires_at.is_some_and(|at| at - margin <= Utc::now()) {
            match self.client.refresh(platform, &account).await {
                Ok(tokens) => account = self.store(conn, project_id, platform, tokens).await?,
                Err(PlatformError::Unauthorized) => {}
                Err(other) => return Ok(Err(other)),
            }
        }
        match self.client.publish(platform, &account, draft, key).await {
            Err(PlatformError::Unauthorized) if account.refresh.is_some() => {
                let tokens = match self.client.refresh(platform, &account).await {
                    Ok(tokens) => tokens,
                    Err(err) => return Ok(Err(err)),
                };
                let account = self.store(conn, project_id, platform, tokens).await?;
                Ok(self.client.publish(platform, &account, draft, key).await)
            }
            other => Ok(other),
        }
    }

    /// Stores refreshed tokens (sealed): the account as it now is.
    async fn store(
        &self,
        conn: &mut AsyncPgConnection,
        project_id: Uuid,
        platform: Platform,
        tokens: Tokens,
    ) -> QueryResult<Account> {
        let context = seal_context(project_id, platform);
        let access = self.kek.seal(tokens.access.as_bytes(), &context);
        let refresh = tokens
            .refresh
            .as_ref()
            .map(|r| self.kek.seal(r.as_bytes(), &context));
        db::update_tokens(
            conn,
            project_id,
            platform.as_str(),
            &access,
            refresh,
            tokens.expires_at,
        )
        .await?;
        Ok(Account {
            access: tokens.access,
            refresh: tokens.refresh,
            handle: tokens.handle,
        })
    }
}

/// Rows relayed per transaction.
const BATCH: i64 = 200;

/// The due rows of `social_publish_outbox`.
pub struct PublishOutbox {
    pub publisher: Publisher,
}

impl Outbox for PublishOutbox {
    /// `(outbox id, post id, project id)`
    type Row = (Uuid, Uuid, Uuid);

    fn name(&self) -> &'static str {
        "social_publish_outbox"
    }

    async fn claim(&self, conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<Self::Row>> {
        db::claim_due(conn, limit).await
    }

    async fn publish(&self, &(_, post_id, project_id): &Self::Row) -> Result<Relayed, String> {
        self.publisher
            .publish(&PublishSocialPost {
                post_id,
                project_id,
            })
            .await
            .map(|_| Relayed::Published)
            .map_err(|e| e.to_string())
    }

    async fn done(&self, conn: &mut AsyncPgConnection, rows: &[&Self::Row]) -> QueryResult<()> {
        let ids: Vec<Uuid> = rows.iter().map(|(id, _, _)| *id).collect();
        db::mark_relayed(conn, &ids).await
    }
}

/// Relays due rows every `period`.
pub fn spawn_publish_relay(pool: Pool, publisher: Publisher, period: Duration) {
    let schedule = Schedule {
        period: period.max(Duration::from_millis(20)),
        batch: BATCH,
    };
    outbox::spawn_relay(pool, PublishOutbox { publisher }, schedule);
}

/// One pass: how many rows were relayed.
pub async fn relay_once(pool: &Pool, publisher: &Publisher) -> anyhow::Result<usize> {
    let outbox = PublishOutbox {
        publisher: publisher.clone(),
    };
    Ok(outbox::relay_once(pool, &outbox, BATCH).await?.len())
}
