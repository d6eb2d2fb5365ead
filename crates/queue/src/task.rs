//! The typed, versioned task carried in every work-queue message.
//!
//! Wire format: `{"v":1,"type":"<snake_case variant>","data":{...}}`. Decoding checks the
//! version first, then the type, then the data, so that each failure has its own error: the
//! consumer treats every [`DecodeError`] as permanent and dead-letters the message.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The envelope version this build writes and understands.
pub const TASK_VERSION: u32 = 1;

/// One unit of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Task {
    /// Answers with its own message; used by health checks and tests.
    Echo { message: String },
    /// Send the e-mail recorded in the mail service's email log.
    SendEmail {
        email_log_id: Uuid,
        project_id: Uuid,
    },
    /// Run a render job for a user.
    Render { job_id: Uuid, user_id: Uuid },
    /// Apply a provider webhook the mail service received (its `webhook_receipts` row) whose
    /// first, inline application failed.
    ProviderEvent { receipt_id: Uuid },
    /// Write the agent context file of a memory agent-bridge run (its `bridge_runs` row).
    BridgeGenerate { run_id: Uuid, user_id: Uuid },
    /// Deliver one outbound webhook of the mail service (its `webhook_deliveries` row).
    WebhookDeliver { delivery_id: Uuid, project_id: Uuid },
    /// Ask the model for a memory model run (its `model_runs` row: a content brief, an
    /// autonomous marketing cycle or a competitor watch).
    ModelRun { run_id: Uuid, user_id: Uuid },
    /// Render a marketing video (its `render_video_jobs` row in the memory database).
    RenderVideo { job_id: Uuid, user_id: Uuid },
}

/// The `type` of every variant, in declaration order (kept in sync by a unit test).
pub const KINDS: &[&str] = &[
    "echo",
    "send_email",
    "render",
    "provider_event",
    "bridge_generate",
    "webhook_deliver",
    "model_run",
    "render_video",
];

/// Why a payload is not a task this build can run.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or not an object with a numeric `v` and a string `type`.
    #[error("payload is not a task envelope: {0}")]
    Malformed(serde_json::Error),
    /// A version this build does not understand.
    #[error("unsupported task version {0} (this build understands {TASK_VERSION})")]
    UnsupportedVersion(u64),
    /// A `type` this build does not know.
    #[error("unknown task type `{0}`")]
    UnknownType(String),
    /// A known `type` whose `data` does not match its schema.
    #[error("invalid data for task type `{kind}`: {source}")]
    InvalidData {
        kind: String,
        source: serde_json::Error,
    },
}

#[derive(Serialize)]
struct EnvelopeRef<'a> {
    v: u32,
    #[serde(flatten)]
    task: &'a Task,
}

#[derive(Deserialize)]
struct RawEnvelope {
    v: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: serde_json::Value,
}

impl Task {
    /// The wire `type` of this task (`"echo"`, `"send_email"`, `"render"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Echo { .. } => "echo",
            Self::SendEmail { .. } => "send_email",
            Self::Render { .. } => "render",
            Self::ProviderEvent { .. } => "provider_event",
            Self::BridgeGenerate { .. } => "bridge_generate",
            Self::WebhookDeliver { .. } => "webhook_deliver",
            Self::ModelRun { .. } => "model_run",
            Self::RenderVideo { .. } => "render_video",
        }
    }

    /// The envelope as a JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        // Serializing plain strings and UUIDs into a `Value` cannot fail.
        serde_json::to_value(EnvelopeRef {
            v: TASK_VERSION,
            task: self,
        })
        .unwrap_or(serde_json::Value::Null)
    }

    /// The envelope as JSON bytes, ready to publish.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&EnvelopeRef {
            v: TASK_VERSION,
            task: self,
        })
    }

    /// Decodes an envelope, rejecting unknown versions and types.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let raw: RawEnvelope = serde_json::from_slice(bytes).map_err(DecodeError::Malformed)?;
        if raw.v != u64::from(TASK_VERSION) {
            return Err(DecodeError::UnsupportedVersion(raw.v));
        }
        if !KINDS.contains(&raw.kind.as_str()) {
            return Err(DecodeError::UnknownType(raw.kind));
        }
        let tagged = serde_json::json!({ "type": raw.kind, "data": raw.data });
        serde_json::from_value(tagged).map_err(|source| DecodeError::InvalidData {
            kind: raw.kind,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_format_is_versioned_envelope() {
        let task = Task::Echo {
            message: "hello".into(),
        };
        let value: serde_json::Value = serde_json::from_slice(&task.to_json().unwrap()).unwrap();
        assert_eq!(
            value,
            json!({"v": 1, "type": "echo", "data": {"message": "hello"}})
        );
        assert_eq!(task.to_value(), value);
    }

    #[test]
    fn unknown_version_is_a_clear_error() {
        let err = Task::from_json(br#"{"v":2,"type":"echo","data":{"message":"x"}}"#).unwrap_err();
        assert!(matches!(err, DecodeError::UnsupportedVersion(2)), "{err}");
    }

    #[test]
    fn unknown_type_is_a_clear_error() {
        let err = Task::from_json(br#"{"v":1,"type":"launch_rocket","data":{}}"#).unwrap_err();
        assert!(
            matches!(err, DecodeError::UnknownType(ref k) if k == "launch_rocket"),
            "{err}"
        );
    }

    #[test]
    fn bad_data_and_garbage_are_errors() {
        let err = Task::from_json(br#"{"v":1,"type":"echo","data":{"msg":1}}"#).unwrap_err();
        assert!(matches!(err, DecodeError::InvalidData { .. }), "{err}");
        let err = Task::from_json(b"not json").unwrap_err();
        assert!(matches!(err, DecodeError::Malformed(_)), "{err}");
        let err = Task::from_json(br#"{"type":"echo"}"#).unwrap_err();
        assert!(matches!(err, DecodeError::Malformed(_)), "{err}");
    }
}
