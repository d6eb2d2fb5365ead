//! The crate's error type for broker operations.

/// What can go wrong talking to the broker.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// No usable connection (or the operation did not finish) before the deadline. The
    /// operation may be retried later; nothing was confirmed.
    #[error("broker unavailable: {0}")]
    Unavailable(String),
    /// [`Broker::close`](crate::Broker::close) was called.
    #[error("broker handle closed")]
    Closed,
    /// An error from the AMQP client: the broker refused an operation (a missing exchange, a
    /// queue declared with other arguments, ...) or the connection failed and the deadline
    /// left no time to try again.
    #[error("amqp: {0}")]
    Amqp(#[from] lapin::Error),
    /// The broker negatively acknowledged the publish: it did not take responsibility for it.
    #[error("the broker refused the message (nack)")]
    Nacked,
    /// The message could not be routed to any queue (the topology is not declared).
    #[error("the broker returned the message as unroutable: {0}")]
    Unroutable(String),
    /// A setting is wrong (an unreadable CA file, ...); retrying does not help.
    #[error("broker configuration: {0}")]
    Config(String),
    /// The task could not be serialized.
    #[error("encoding the task failed: {0}")]
    Encode(#[from] serde_json::Error),
}

impl QueueError {
    /// Whether the same operation may succeed on a fresh connection or channel.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Self::Unavailable(_) => true,
            // Soft errors are the broker refusing this particular operation (404, 406, ...);
            // everything else (I/O, forced connection close, a channel that died with its
            // connection) goes away with a reconnect.
            Self::Amqp(err) => !err.is_amqp_soft_error(),
            Self::Closed
            | Self::Config(_)
            | Self::Nacked
            | Self::Unroutable(_)
            | Self::Encode(_) => false,
        }
    }
}
