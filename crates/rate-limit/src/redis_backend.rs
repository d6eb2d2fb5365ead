//! Redis backend: one atomic script per check, shared by every replica.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::{Decision, Error, Quota, RedisConfig, Usage, Window, decide, micros, now_micros};

static CHECK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("check.lua")));

#[derive(Clone)]
pub(crate) struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    conn: ConnectionManager,
    key_prefix: String,
    timeout: Duration,
    /// Random per limiter; with `seq`, makes sliding-log members unique
    /// across replicas.
    instance: u64,
    seq: AtomicU64,
}

impl RedisStore {
    pub(crate) fn new(config: RedisConfig) -> Result<Self, Error> {
        let client = config.client()?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout))
            .set_response_timeout(Some(config.timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(config.timeout);
        // Connects on first use; a failed connection is retried by later calls.
        let conn = ConnectionManager::new_lazy_with_config(client, manager_config)?;
        let instance = RandomState::new().hash_one((std::process::id(), now_micros()));
        Ok(RedisStore {
            inner: Arc::new(Inner {
                conn,
                key_prefix: config.key_prefix,
                timeout: config.timeout,
                instance,
                seq: AtomicU64::new(0),
            }),
        })
    }

    fn storage_key(&self, key: &str, window: Window) -> String {
        let (kind, len) = match window {
            Window::Fixed(d) => ('f', d),
            Window::Sliding(d) => ('s', d),
        };
        // The braces make every key of one check hash to the same cluster slot.
        format!("{}:{{{key}}}:{kind}{}", self.inner.key_prefix, micros(len))
    }

    /// Quotas are already validated.
    pub(crate) async fn check(&self, key: &str, quotas: &[Quota]) -> Result<Decision, Error> {
        if quotas.is_empty() {
            return Ok(decide(now_micros(), true, &[]));
        }
        let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed);
        let mut invocation = CHECK.prepare_invoke();
        invocation.arg(format!("{:016x}:{seq}", self.inner.instance));
        for q in quotas {
            let kind = match q.window {
                Window::Fixed(_) => "f",
                Window::Sliding(_) => "s",
            };
            let limit = q.limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
            invocation
                .key(self.storage_key(key, q.window))
                .arg(kind)
                .arg(micros(q.window.length()))
                .arg(limit);
        }

        let mut conn = self.inner.conn.clone();
        let reply: Vec<i64> =
            tokio::time::timeout(self.inner.timeout, invocation.invoke_async(&mut conn))
                .await
                .map_err(|_| Error::Timeout(self.inner.timeout))?
                .inspect_err(|e| tracing::debug!(error = %e, "rate-limit script failed"))?;

        parse_reply(&reply, quotas)
    }

    pub(crate) async fn ping(&self) -> Result<(), Error> {
        let mut conn = self.inner.conn.clone();
        tokio::time::timeout(
            self.inner.timeout,
            redis::cmd("PING").query_async::<String>(&mut conn),
        )
        .await
        .map_err(|_| Error::Timeout(self.inner.timeout))??;
        Ok(())
    }
}

fn parse_reply(reply: &[i64], quotas: &[Quota]) -> Result<Decision, Error> {
    let bad = || Error::BadReply(format!("{reply:?}"));
    let [allowed, now, rest @ ..] = reply else {
        return Err(bad());
    };
    if rest.len() != 2 * quotas.len() {
        return Err(bad());
    }
    let to_u64 = |v: i64| u64::try_from(v).map_err(|_| bad());
    let usages = quotas
        .iter()
        .zip(rest.chunks_exact(2))
        .map(|(q, pair)| {
            Ok(Usage {
                limit: q.limit,
                used: to_u64(pair[0])?,
                reset_us: to_u64(pair[1])?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(decide(to_u64(*now)?, *allowed == 1, &usages))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_parsing() {
        let q = [Quota::fixed(2, Duration::from_secs(60))];
        let d = parse_reply(&[1, 30_000_000, 1, 60_000_000], &q).unwrap();
        assert!(d.allowed);
        assert_eq!(d.remaining, crate::Limit::Count(1));
        assert_eq!(d.reset_at, 60);
        assert!(matches!(
            parse_reply(&[1, 30_000_000], &q),
            Err(Error::BadReply(_))
        ));
        assert!(matches!(
            parse_reply(&[1, -1, 1, 2], &q),
            Err(Error::BadReply(_))
        ));
    }
}
