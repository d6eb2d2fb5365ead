//! Names and declaration of a work queue's topology.
//!
//! For a queue `<prefix><name>` the topology is:
//! - one durable direct exchange `<prefix>tasks`, shared by all work queues with that prefix;
//!   every queue below is bound to it with its own name as the routing key;
//! - the durable main queue `<prefix><name>`;
//! - one durable retry queue `<prefix><name>.retry.<i>` per delay, with `x-message-ttl` set to
//!   the i-th delay and dead-lettering back to the exchange with the main queue's name as the
//!   routing key, so an expired message lands in the main queue again;
//! - the durable dead-letter queue `<prefix><name>.dlq`, which nothing consumes: operators list
//!   and replay it.
//!
//! Declaring is idempotent as long as the arguments do not change. Changing the retry delays of
//! an existing queue makes the broker refuse the declaration (`PRECONDITION_FAILED`); the old
//! retry queues must be deleted first (they may hold messages: drain them before).

use std::time::Duration;

use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, ExchangeKind};

/// How long a failed message waits before each new attempt. A message is tried
/// `delays.len() + 1` times before it is dead-lettered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    pub delays: Vec<Duration>,
}

impl Default for RetryPolicy {
    /// 1 s, 5 s, 30 s, 2 min, 10 min: six attempts spread over about 13 minutes.
    fn default() -> Self {
        Self {
            delays: [1, 5, 30, 120, 600]
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
        }
    }
}

impl RetryPolicy {
    pub fn new(delays: Vec<Duration>) -> Self {
        Self { delays }
    }

    /// No retries: the first failure dead-letters.
    pub fn none() -> Self {
        Self { delays: Vec::new() }
    }

    /// Total number of attempts, the first one included.
    pub fn max_attempts(&self) -> u32 {
        u32::try_from(self.delays.len())
            .unwrap_or(u32::MAX - 1)
            .saturating_add(1)
    }
}

/// A named work queue with its retry queues and dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkQueue {
    prefix: String,
    name: String,
    retry: RetryPolicy,
}

impl WorkQueue {
    /// A queue with no prefix and the default retry policy.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            prefix: String::new(),
            name: name.into(),
            retry: RetryPolicy::default(),
        }
    }

    /// Prepends `prefix` to every name (exchange and queues); tests use a unique one each.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The logical name, without prefix.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// `<prefix>tasks`
    pub fn exchange(&self) -> String {
        format!("{}tasks", self.prefix)
    }

    /// `<prefix><name>`
    pub fn queue(&self) -> String {
        format!("{}{}", self.prefix, self.name)
    }

    /// `<prefix><name>.retry.<index>` (0-based: index 0 holds messages waiting for attempt 2).
    pub fn retry_queue(&self, index: usize) -> String {
        format!("{}{}.retry.{index}", self.prefix, self.name)
    }

    /// `<prefix><name>.dlq`
    pub fn dead_letter_queue(&self) -> String {
        format!("{}{}.dlq", self.prefix, self.name)
    }

    /// Every queue of the topology: main, retries, dead-letter.
    pub fn all_queues(&self) -> Vec<String> {
        let mut names = vec![self.queue()];
        names.extend((0..self.retry.delays.len()).map(|i| self.retry_queue(i)));
        names.push(self.dead_letter_queue());
        names
    }
}

fn durable() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    }
}

fn ttl_millis(delay: Duration) -> i64 {
    i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)
}

/// Declares the whole topology on `channel`. Idempotent.
pub(crate) async fn declare(channel: &Channel, queue: &WorkQueue) -> lapin::Result<()> {
    let exchange = queue.exchange();
    channel
        .exchange_declare(
            exchange.as_str().into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?;

    let main = queue.queue();
    let mut plain = vec![(main.clone(), FieldTable::default())];
    plain.push((queue.dead_letter_queue(), FieldTable::default()));
    for (i, delay) in queue.retry.delays.iter().enumerate() {
        let mut args = FieldTable::default();
        args.insert(
            "x-message-ttl".into(),
            AMQPValue::LongLongInt(ttl_millis(*delay)),
        );
        args.insert(
            "x-dead-letter-exchange".into(),
            AMQPValue::LongString(exchange.as_str().into()),
        );
        args.insert(
            "x-dead-letter-routing-key".into(),
            AMQPValue::LongString(main.as_str().into()),
        );
        plain.push((queue.retry_queue(i), args));
    }

    for (name, args) in plain {
        channel
            .queue_declare(name.as_str().into(), durable(), args)
            .await?;
        channel
            .queue_bind(
                name.as_str().into(),
                exchange.as_str().into(),
                name.as_str().into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;
    }
    Ok(())
}

/// Deletes every queue of the topology (with their messages), then the exchange if no other
/// queue is bound to it.
pub(crate) async fn delete(channel: &Channel, queue: &WorkQueue) -> lapin::Result<()> {
    for name in queue.all_queues() {
        channel
            .queue_delete(name.as_str().into(), QueueDeleteOptions::default())
            .await?;
    }
    // `if_unused` makes the broker close the channel when other queues still use the exchange;
    // that is the expected outcome for a shared prefix, so the error is ignored.
    let _ = channel
        .exchange_delete(
            queue.exchange().as_str().into(),
            ExchangeDeleteOptions {
                if_unused: true,
                ..ExchangeDeleteOptions::default()
            },
        )
        .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_convention() {
        let q = WorkQueue::new("send.email")
            .with_prefix("t1.")
            .with_retry_policy(RetryPolicy::new(vec![Duration::from_millis(10); 2]));
        assert_eq!(q.exchange(), "t1.tasks");
        assert_eq!(q.queue(), "t1.send.email");
        assert_eq!(q.retry_queue(1), "t1.send.email.retry.1");
        assert_eq!(q.dead_letter_queue(), "t1.send.email.dlq");
        assert_eq!(
            q.all_queues(),
            [
                "t1.send.email",
                "t1.send.email.retry.0",
                "t1.send.email.retry.1",
                "t1.send.email.dlq"
            ]
        );
        assert_eq!(q.retry_policy().max_attempts(), 3);
        assert_eq!(RetryPolicy::default().max_attempts(), 6);
        assert_eq!(RetryPolicy::none().max_attempts(), 1);
    }
}
