//! Cursor pagination as ruled: `limit` (default 50, max 100) and an opaque `cursor`; answers
//! are `{ "data": [...], "next_cursor": string|null }`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::error::ApiError;

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 100;

/// What a cursor looks like: a UUID's 16 bytes in unpadded base64url (22 characters, the last
/// carrying 2 bits and 4 zero bits), or empty for the first page. Every string of this shape is
/// a cursor the API accepts, so the document and the server agree on which are valid.
pub const CURSOR_PATTERN: &str = "^([A-Za-z0-9_-]{21}[AQgw])?$";

/// The documented schema of a `cursor` query parameter.
pub fn cursor_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(CURSOR_PATTERN))
        .description(Some(
            "The `next_cursor` of the previous page; an empty `cursor=` is the first page.",
        ))
        .build()
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Items per page, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page; an empty `cursor=` is the first page.
    #[param(schema_with = cursor_schema)]
    pub cursor: Option<String>,
}

impl crate::request::Validate for PageParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        crate::request::trim_optional(&mut self.cursor);
        Ok(())
    }
}

impl PageParams {
    pub fn limit(&self) -> u32 {
        self.limit.unwrap_or(DEFAULT_LIMIT)
    }

    pub fn cursor(&self) -> Result<Option<Cursor>, ApiError> {
        self.cursor.as_deref().map(Cursor::decode).transpose()
    }
}

/// The position after which the next page starts: the id of the last item (ids are UUID v7,
/// so id order is creation order). Opaque to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(pub Uuid);

impl Cursor {
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0.as_bytes())
    }

    pub fn decode(raw: &str) -> Result<Self, ApiError> {
        URL_SAFE_NO_PAD
            .decode(raw)
            .ok()
            .and_then(|bytes| Uuid::from_slice(&bytes).ok())
            .map(Self)
            .ok_or_else(|| ApiError::invalid_field("cursor", "is not a cursor this API issued"))
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub data: Vec<T>,
    /// Pass as `cursor` to get the next page; null on the last page.
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows fetched in id order: the extra row only says
    /// that another page exists.
    pub fn from_rows(mut rows: Vec<T>, limit: u32, id_of: impl Fn(&T) -> Uuid) -> Self {
        let limit = limit as usize;
        let next_cursor = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|last| Cursor(id_of(last)).encode())
        } else {
            None
        };
        Self {
            data: rows,
            next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        let id = Uuid::now_v7();
        let c = Cursor(id).encode();
        assert_eq!(Cursor::decode(&c).unwrap(), Cursor(id));
        assert!(Cursor::decode("not-a-cursor!").is_err());
        assert!(Cursor::decode("AAAA").is_err());
    }

    #[test]
    fn the_documented_pattern_admits_exactly_the_cursors_the_api_decodes() {
        let pattern = regex::Regex::new(CURSOR_PATTERN).unwrap();
        assert!(pattern.is_match(""));
        for _ in 0..1000 {
            assert!(pattern.is_match(&Cursor(Uuid::new_v4()).encode()));
        }
        let body = "Zz-_09aAbB".repeat(3)[..21].to_owned();
        for last in 'A'..='z' {
            let candidate = format!("{body}{last}");
            if !last.is_ascii_alphanumeric() {
                continue;
            }
            assert_eq!(
                pattern.is_match(&candidate),
                Cursor::decode(&candidate).is_ok(),
                "{candidate}"
            );
        }
        assert!(!pattern.is_match("not-a-cursor!"));
    }

    #[test]
    fn limit_defaults() {
        assert_eq!(PageParams::default().limit(), DEFAULT_LIMIT);
    }

    #[test]
    fn page_sets_cursor_only_when_more_rows_exist() {
        let ids: Vec<Uuid> = (0..3).map(|_| Uuid::now_v7()).collect();
        let page = Page::from_rows(ids.clone(), 2, |id| *id);
        assert_eq!(page.data.len(), 2);
        assert_eq!(page.next_cursor, Some(Cursor(ids[1]).encode()));
        let last = Page::from_rows(ids[..2].to_vec(), 2, |id| *id);
        assert_eq!(last.next_cursor, None);
    }
}
