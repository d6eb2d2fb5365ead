//! The abuse monitor's pass: once per interval across the replicas (the lease), each site's
//! bounce and complaint rates over the rolling window are measured and judged against the
//! thresholds ([`crate::domain::abuse`]). A site that gets worse fires `bounce_rate.warning`
//! (which the chat alerts report too); a site that stops holding campaign mail has its held
//! mail due again at once. The releases read the state ([`super::release`]).

use chrono::{DateTime, Utc};
use diesel_async::AsyncConnection as _;
use serde_json::json;

use super::Scheduler;
use crate::db::abuse_monitor as db;
use crate::db::outbound_events;
use crate::domain::abuse::{AbuseState, evaluate, rate};

/// The name of the lease in `scheduler_leases`.
const LEASE: &str = "abuse_monitor";

/// `bounce_rate.warning`.
pub const BOUNCE_RATE_WARNING: &str = "bounce_rate.warning";

/// Measures and judges every site if this replica takes the interval's lease: how many sites
/// changed state.
pub async fn check(scheduler: &Scheduler) -> anyhow::Result<usize> {
    let now = scheduler.clock.now();
    let settings = scheduler.abuse.clone();
    let thresholds = settings.thresholds();
    let mut conn = store::conn(&scheduler.pool).await?;
    let changed = conn
        .transaction::<_, anyhow::Error, _>(async |conn| {
            if !db::take_lease(conn, LEASE, now, settings.interval_secs).await? {
                return Ok(0);
            }
            let mut changed = 0;
            for m in db::measure(conn, now, settings.window_days).await? {
                let state = evaluate(
                    &thresholds,
                    settings.min_sends,
                    m.sends,
                    m.bounces,
                    m.complaints,
                );
                let previous = db::record(conn, &m, state, now).await?;
                if previous == state {
                    continue;
                }
                changed += 1;
                if state > previous {
                    let data = warning(&m, state, previous, settings.window_days, now);
                    outbound_events::record(conn, m.project_id, BOUNCE_RATE_WARNING, &data).await?;
                }
                if previous.holds_campaigns() && !state.holds_campaigns() {
                    db::release_held(conn, m.site_id).await?;
                }
            }
            Ok(changed)
        })
        .await?;
    Ok(changed)
}

/// The event's data: the site, the states, the window's figures and the thresholds.
fn warning(
    m: &db::Measured,
    state: AbuseState,
    previous: AbuseState,
    window_days: u32,
    now: DateTime<Utc>,
) -> serde_json::Value {
    json!({
        "site_id": m.site_id,
        "source": "abuse_monitor",
        "state": state,
        "previous_state": previous,
        "window_hours": window_days * 24,
        "sends": m.sends,
        "hard_bounces": m.bounces,
        "complaints": m.complaints,
        "bounce_rate": round4(rate(m.bounces, m.sends)),
        "complaint_rate": round4(rate(m.complaints, m.sends)),
        "occurred_at": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    })
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
