//! Parameters that several routes read the same way.

use http_kit::ApiError;
use uuid::Uuid;

/// The optional `workspace_id` of a MIF import: a UUID in its hyphenated form, as the
/// documents' pattern for it says (36 characters leave no other form `Uuid` reads).
pub(crate) fn parse_workspace(raw: Option<&str>) -> Result<Option<Uuid>, ApiError> {
    raw.map(|s| {
        Some(s)
            .filter(|s| s.len() == 36)
            .and_then(|s| Uuid::try_parse(s).ok())
            .ok_or_else(|| ApiError::invalid_field("workspace_id", "must be a UUID"))
    })
    .transpose()
}
