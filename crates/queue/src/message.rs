//! AMQP properties and headers of task messages, and confirmed publishing on a channel.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use lapin::options::BasicPublishOptions;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Confirmation};

use crate::QueueError;

/// Header holding the 1-based attempt number of a task message.
pub const ATTEMPT_HEADER: &str = "x-attempt";
/// Header holding the error of the last failed attempt (retry and dead-letter copies).
pub const LAST_ERROR_HEADER: &str = "x-last-error";
/// Header on RPC replies: `ok` (body is the handler's JSON value) or `error` (body is
/// `{"error": "..."}`).
pub(crate) const REPLY_STATUS_HEADER: &str = "x-reply-status";
pub(crate) const JSON: &str = "application/json";
const PERSISTENT: u8 = 2;
/// Error texts are cut to this many bytes so a huge error cannot bloat every copy.
const MAX_ERROR_LEN: usize = 2048;

/// Seconds since the Unix epoch, the AMQP timestamp unit.
pub(crate) fn now_timestamp() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Properties of a freshly published task.
pub(crate) fn task_properties(message_id: &str, headers: FieldTable) -> BasicProperties {
    let mut headers = headers;
    headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongLongInt(1));
    BasicProperties::default()
        .with_content_type(JSON.into())
        .with_delivery_mode(PERSISTENT)
        .with_message_id(message_id.into())
        .with_timestamp(now_timestamp())
        .with_headers(headers)
}

/// Properties of a copy of `original` sent to a retry queue, the dead-letter queue or back
/// to the main queue. Keeps the identity (message id, publish time, trace headers), replaces
/// the attempt counter and the last error, and drops the broker's own `x-death` bookkeeping
/// (the attempt header is the source of truth). `keep_reply` keeps `reply_to`/`correlation_id`
/// so a later attempt can still answer a waiting RPC caller.
pub(crate) fn forwarded_properties(
    original: &BasicProperties,
    attempt: u32,
    last_error: Option<&str>,
    keep_reply: bool,
) -> BasicProperties {
    let mut headers: BTreeMap<ShortString, AMQPValue> = original
        .headers()
        .as_ref()
        .map(|h| {
            h.inner()
                .iter()
                .filter(|(k, _)| !is_bookkeeping(k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    headers.insert(
        ATTEMPT_HEADER.into(),
        AMQPValue::LongLongInt(i64::from(attempt)),
    );
    if let Some(err) = last_error {
        headers.insert(
            LAST_ERROR_HEADER.into(),
            AMQPValue::LongString(truncate(err).into()),
        );
    }

    let message_id = original
        .message_id()
        .clone()
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string().into());
    let mut props = BasicProperties::default()
        .with_content_type(
            original
                .content_type()
                .clone()
                .unwrap_or_else(|| JSON.into()),
        )
        .with_delivery_mode(PERSISTENT)
        .with_message_id(message_id)
        .with_timestamp(original.timestamp().unwrap_or_else(now_timestamp))
        .with_headers(FieldTable::from(headers));
    if let Some(kind) = original.kind() {
        props = props.with_type(kind.clone());
    }
    if keep_reply {
        if let Some(reply_to) = original.reply_to() {
            props = props.with_reply_to(reply_to.clone());
        }
        if let Some(correlation_id) = original.correlation_id() {
            props = props.with_correlation_id(correlation_id.clone());
        }
    }
    props
}

fn is_bookkeeping(key: &str) -> bool {
    key == ATTEMPT_HEADER
        || key == LAST_ERROR_HEADER
        || key == "x-death"
        || key.starts_with("x-first-death-")
        || key.starts_with("x-last-death-")
}

fn truncate(text: &str) -> &str {
    if text.len() <= MAX_ERROR_LEN {
        return text;
    }
    let mut end = MAX_ERROR_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The attempt number of a delivery (1 when the header is missing or unreadable).
pub(crate) fn attempt(props: &BasicProperties) -> u32 {
    header(props, ATTEMPT_HEADER)
        .and_then(as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n >= 1)
        .unwrap_or(1)
}

pub(crate) fn header<'a>(props: &'a BasicProperties, key: &str) -> Option<&'a AMQPValue> {
    props.headers().as_ref()?.inner().get(key)
}

pub(crate) fn header_string(props: &BasicProperties, key: &str) -> Option<String> {
    header(props, key).and_then(as_string)
}

pub(crate) fn as_string(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

fn as_u64(value: &AMQPValue) -> Option<u64> {
    let signed = match value {
        AMQPValue::ShortShortInt(n) => i64::from(*n),
        AMQPValue::ShortShortUInt(n) => i64::from(*n),
        AMQPValue::ShortInt(n) => i64::from(*n),
        AMQPValue::ShortUInt(n) => i64::from(*n),
        AMQPValue::LongInt(n) => i64::from(*n),
        AMQPValue::LongUInt(n) => i64::from(*n),
        AMQPValue::LongLongInt(n) => *n,
        AMQPValue::Timestamp(n) => return Some(*n),
        other => return as_string(other)?.trim().parse().ok(),
    };
    u64::try_from(signed).ok()
}

/// Publishes on a channel in confirm mode and resolves once the broker has acknowledged it.
/// A nack or (with `mandatory`) a return is an error.
pub(crate) async fn publish_confirmed(
    channel: &Channel,
    exchange: &str,
    routing_key: &str,
    payload: &[u8],
    properties: BasicProperties,
    mandatory: bool,
) -> Result<(), QueueError> {
    let confirmation = channel
        .basic_publish(
            exchange.into(),
            routing_key.into(),
            BasicPublishOptions {
                mandatory,
                ..BasicPublishOptions::default()
            },
            payload,
            properties,
        )
        .await?
        .await?;
    match confirmation {
        Confirmation::Ack(None) | Confirmation::NotRequested => Ok(()),
        Confirmation::Ack(Some(returned)) => Err(QueueError::Unroutable(format!(
            "{} (exchange `{exchange}`, routing key `{routing_key}`)",
            returned.reply_text
        ))),
        Confirmation::Nack(_) => Err(QueueError::Nacked),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarding_resets_bookkeeping_and_keeps_identity() {
        let mut headers = FieldTable::default();
        headers.insert("traceparent".into(), AMQPValue::LongString("tp".into()));
        headers.insert("x-death".into(), AMQPValue::Void);
        headers.insert(
            LAST_ERROR_HEADER.into(),
            AMQPValue::LongString("old".into()),
        );
        let original = task_properties("mid-1", headers)
            .with_reply_to("amq.rabbitmq.reply-to.x".into())
            .with_correlation_id("c1".into());
        assert_eq!(attempt(&original), 1);

        let copy = forwarded_properties(&original, 3, Some("boom"), false);
        assert_eq!(attempt(&copy), 3);
        assert_eq!(copy.message_id().as_ref().unwrap().as_str(), "mid-1");
        assert_eq!(copy.delivery_mode(), &Some(PERSISTENT));
        assert_eq!(
            header_string(&copy, LAST_ERROR_HEADER).as_deref(),
            Some("boom")
        );
        assert_eq!(header_string(&copy, "traceparent").as_deref(), Some("tp"));
        assert!(header(&copy, "x-death").is_none());
        assert!(copy.reply_to().is_none());

        let kept = forwarded_properties(&original, 2, None, true);
        assert_eq!(kept.correlation_id().as_ref().unwrap().as_str(), "c1");
        assert!(header(&kept, LAST_ERROR_HEADER).is_none());
    }

    #[test]
    fn long_errors_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_ERROR_LEN);
        let cut = truncate(&long);
        assert!(cut.len() <= MAX_ERROR_LEN);
        assert!(long.starts_with(cut));
    }
}
