//! Parameters that several routes read the same way.

use http_kit::ApiError;
use uuid::Uuid;

/// The optional `workspace_id` of MIF exports, imports and consolidation: a UUID.
pub(crate) fn parse_workspace(raw: Option<&str>) -> Result<Option<Uuid>, ApiError> {
    raw.map(|s| {
        Uuid::parse_str(s.trim())
            .map_err(|_| ApiError::invalid_field("workspace_id", "must be a UUID"))
    })
    .transpose()
}
