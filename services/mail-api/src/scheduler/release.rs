//! Releasing held campaign mail as the delivery policy allows, one site at a time: a replica
//! releases a site only while it holds that site's lock (tried, never waited for), reads the
//! site's policy and its counts under row locks, releases what the policy allows (outbox jobs
//! and counts in the same transaction), holds the rest with its reason, commits, then
//! publishes the jobs to the send queue (what fails to publish is left to the outbox relay).

use std::str::FromStr as _;

use chrono::{DateTime, TimeDelta, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use rate_limit::policy::Plan;
use uuid::Uuid;

use super::Scheduler;
use crate::db::scheduler as db;
use crate::db::{abuse_monitor, send_policy};
use crate::domain::send_policy::{Allowance, HoldReason, Room, SitePolicy, allowance, minute_of};
use crate::sending::SendEmail;

/// How long mail the abuse monitor holds waits before the pause is looked at again (an
/// override or a recovery makes it due at once).
const ABUSE_RECHECK_SECS: i64 = 900;

/// Releases the due mail of every site that has some: (released, held).
pub async fn release_due(scheduler: &Scheduler) -> anyhow::Result<(usize, usize)> {
    let now = scheduler.clock.now();
    let sites = {
        let mut conn = store::conn(&scheduler.pool).await?;
        db::sites_with_due_mail(&mut conn, now).await?
    };
    let (mut released, mut held) = (0, 0);
    for site_id in sites {
        let (r, h) = release_site(scheduler, site_id, now).await?;
        released += r;
        held += h;
    }
    Ok((released, held))
}

/// What a site's policy and counts allow now.
pub struct SiteRoom {
    pub policy: SitePolicy,
    pub allowance: Allowance,
}

/// Reads the site's policy and (locking them) its counts, and works out its allowance at
/// `now`; `None` when the site is gone.
pub async fn site_room(
    conn: &mut AsyncPgConnection,
    quotas: &crate::domain::plans::SendQuotas,
    site_id: Uuid,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<SiteRoom>> {
    let (policy, warmup) = send_policy::of_site(conn, site_id).await?;
    let policy = policy.map(|p| p.policy()).unwrap_or_default();
    let today = policy.local_date(now);
    let Some(counts) = db::lock_counts(conn, site_id, today, minute_of(now)).await? else {
        return Ok(None);
    };
    let plan = Plan::from_str(&counts.plan).unwrap_or(Plan::Free);
    let left = |limit: Option<i64>, used: i64| limit.map(|limit| limit - used);
    let as_i64 = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let room = Room {
        warmup: left(warmup.and_then(|w| w.warmup().cap(today)), counts.today),
        batch: left(as_i64(quotas.batch_per_minute(plan)), counts.this_minute),
        monthly: left(as_i64(quotas.monthly_sends(plan)), counts.this_month),
    };
    let allowance = allowance(&policy, now, room);
    Ok(Some(SiteRoom { policy, allowance }))
}

/// Releases one site's due mail: (released, held).
async fn release_site(
    scheduler: &Scheduler,
    site_id: Uuid,
    now: DateTime<Utc>,
) -> anyhow::Result<(usize, usize)> {
    let queue = scheduler.dispatcher.queue_name();
    let quotas = scheduler.quotas.clone();
    let batch = scheduler.release_batch;
    let mut conn = store::conn(&scheduler.pool).await?;
    let (jobs, held) = conn
        .transaction::<_, anyhow::Error, _>(async |conn| {
            if !db::try_lock_site(conn, site_id).await? {
                return Ok((Vec::new(), 0));
            }
            if abuse_monitor::holds(conn, None, site_id, now, true).await? {
                let until = now + TimeDelta::seconds(ABUSE_RECHECK_SECS);
                let reason = HoldReason::AbusePaused.as_str();
                let held = db::hold_rest(conn, site_id, now, reason, until).await?;
                return Ok((Vec::new(), held));
            }
            let Some(room) = site_room(conn, &quotas, site_id, now).await? else {
                return Ok((Vec::new(), 0));
            };
            let counters = (room.policy.local_date(now), minute_of(now));
            let limit = room.allowance.release.min(batch);
            let jobs = db::release(conn, site_id, now, limit, counters, &queue, task_value).await?;
            let mut held = 0;
            let filled = i64::try_from(jobs.len()).unwrap_or(i64::MAX) >= room.allowance.release;
            if let (Some((reason, until)), true) = (room.allowance.hold, filled) {
                held = db::hold_rest(conn, site_id, now, reason.as_str(), until).await?;
            }
            Ok((jobs, held))
        })
        .await?;
    let released = jobs.len();
    scheduler
        .dispatcher
        .publish_committed(&scheduler.pool, jobs)
        .await;
    Ok((released, held))
}

fn task_value(email_log_id: Uuid, project_id: Uuid) -> serde_json::Value {
    queue::to_value(&SendEmail {
        email_log_id,
        project_id,
    })
}
