//! The versioned envelope carried in every work-queue message.
//!
//! Wire format: `{"v":1,"type":"<kind>","data":{...}}`. Decoding checks the version first,
//! then the type, then the data, so that each failure has its own error: the consumer treats
//! every [`DecodeError`] as permanent and dead-letters the message.

use serde::{Deserialize, Serialize};

use crate::Job;

/// The envelope version this build writes and understands.
pub const TASK_VERSION: u32 = 1;

/// Why a payload is not a job this build can run.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or not an object with a numeric `v` and a string `type`.
    #[error("payload is not a task envelope: {0}")]
    Malformed(serde_json::Error),
    /// A version this build does not understand.
    #[error("unsupported task version {0} (this build understands {TASK_VERSION})")]
    UnsupportedVersion(u64),
    /// A `type` this consumer does not know.
    #[error("unknown task type `{0}`")]
    UnknownType(String),
    /// A known `type` whose `data` does not match its schema.
    #[error("invalid data for task type `{kind}`: {source}")]
    InvalidData {
        kind: String,
        source: serde_json::Error,
    },
}

/// Anything that can be published: a typed [`Job`], or an [`Envelope`] read back from storage.
pub trait Message {
    /// The envelope's `type`.
    fn kind(&self) -> &str;
    /// The whole envelope as JSON bytes.
    fn to_json(&self) -> Result<Vec<u8>, serde_json::Error>;
}

#[derive(Serialize)]
struct EnvelopeRef<'a, D: Serialize + ?Sized> {
    v: u32,
    #[serde(rename = "type")]
    kind: &'a str,
    data: &'a D,
}

impl<J: Job> Message for J {
    fn kind(&self) -> &str {
        J::KIND
    }

    fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        encode(self)
    }
}

/// `job` as envelope bytes, fields in the order of its declaration.
pub fn encode<J: Job>(job: &J) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&EnvelopeRef {
        v: TASK_VERSION,
        kind: J::KIND,
        data: job,
    })
}

/// `job`'s envelope as a JSON value (what an outbox row stores).
pub fn to_value<J: Job>(job: &J) -> serde_json::Value {
    // Serializing plain strings and UUIDs into a `Value` cannot fail.
    serde_json::to_value(EnvelopeRef {
        v: TASK_VERSION,
        kind: J::KIND,
        data: job,
    })
    .unwrap_or(serde_json::Value::Null)
}

/// An envelope whose version was checked, its `data` not yet read as a particular job.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    kind: String,
    data: serde_json::Value,
}

#[derive(Deserialize)]
struct RawEnvelope {
    v: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: serde_json::Value,
}

impl Envelope {
    /// An envelope of `kind` carrying `data` (for probes and tests; services publish jobs).
    pub fn new(kind: impl Into<String>, data: serde_json::Value) -> Self {
        Self {
            kind: kind.into(),
            data,
        }
    }

    /// The envelope of a typed job.
    pub fn of<J: Job>(job: &J) -> Self {
        Self {
            kind: J::KIND.to_owned(),
            data: serde_json::to_value(job).unwrap_or(serde_json::Value::Null),
        }
    }

    /// Reads an envelope, rejecting what is not one and unknown versions.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let raw: RawEnvelope = serde_json::from_slice(bytes).map_err(DecodeError::Malformed)?;
        Self::checked(raw)
    }

    /// [`Envelope::from_json`] of a JSON value (an outbox row's).
    pub fn from_value(value: serde_json::Value) -> Result<Self, DecodeError> {
        let raw: RawEnvelope = serde_json::from_value(value).map_err(DecodeError::Malformed)?;
        Self::checked(raw)
    }

    fn checked(raw: RawEnvelope) -> Result<Self, DecodeError> {
        if raw.v != u64::from(TASK_VERSION) {
            return Err(DecodeError::UnsupportedVersion(raw.v));
        }
        Ok(Self {
            kind: raw.kind,
            data: raw.data,
        })
    }

    /// The envelope's `type`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub fn data(&self) -> &serde_json::Value {
        &self.data
    }

    /// The job it carries, if it is a `J`.
    pub fn decode<J: Job>(self) -> Result<J, DecodeError> {
        if self.kind != J::KIND {
            return Err(DecodeError::UnknownType(self.kind));
        }
        serde_json::from_value(self.data).map_err(|source| DecodeError::InvalidData {
            kind: self.kind,
            source,
        })
    }

    /// The envelope as a JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self.as_ref()).unwrap_or(serde_json::Value::Null)
    }

    fn as_ref(&self) -> EnvelopeRef<'_, serde_json::Value> {
        EnvelopeRef {
            v: TASK_VERSION,
            kind: &self.kind,
            data: &self.data,
        }
    }
}

impl Message for Envelope {
    fn kind(&self) -> &str {
        &self.kind
    }

    fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&self.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Echo;
    use serde_json::json;

    #[test]
    fn wire_format_is_versioned_envelope() {
        let echo = Echo {
            message: "hello".into(),
        };
        let bytes = Message::to_json(&echo).unwrap();
        assert_eq!(
            bytes,
            br#"{"v":1,"type":"echo","data":{"message":"hello"}}"#
        );
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            value,
            json!({"v": 1, "type": "echo", "data": {"message": "hello"}})
        );
        assert_eq!(to_value(&echo), value);
        let envelope = Envelope::from_json(&bytes).unwrap();
        assert_eq!(envelope, Envelope::of(&echo));
        assert_eq!(Message::to_json(&envelope).unwrap(), bytes);
        assert_eq!(envelope.decode::<Echo>().unwrap(), echo);
    }

    #[test]
    fn unknown_version_is_a_clear_error() {
        let err =
            Envelope::from_json(br#"{"v":2,"type":"echo","data":{"message":"x"}}"#).unwrap_err();
        assert!(matches!(err, DecodeError::UnsupportedVersion(2)), "{err}");
    }

    #[test]
    fn unknown_type_is_a_clear_error() {
        let err = Envelope::from_json(br#"{"v":1,"type":"launch_rocket","data":{}}"#)
            .unwrap()
            .decode::<Echo>()
            .unwrap_err();
        assert!(
            matches!(err, DecodeError::UnknownType(ref k) if k == "launch_rocket"),
            "{err}"
        );
    }

    #[test]
    fn bad_data_and_garbage_are_errors() {
        let err = Envelope::from_json(br#"{"v":1,"type":"echo","data":{"msg":1}}"#)
            .unwrap()
            .decode::<Echo>()
            .unwrap_err();
        assert!(matches!(err, DecodeError::InvalidData { .. }), "{err}");
        let err = Envelope::from_json(b"not json").unwrap_err();
        assert!(matches!(err, DecodeError::Malformed(_)), "{err}");
        let err = Envelope::from_json(br#"{"type":"echo"}"#).unwrap_err();
        assert!(matches!(err, DecodeError::Malformed(_)), "{err}");
    }
}
