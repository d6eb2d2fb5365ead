//! Reading requests one way: a typed JSON body ([`crate::Json`]) or query string
//! ([`crate::Query`]) is checked against the rules its OpenAPI schema states ([`rules`]),
//! deserialized with the failing field's path, then [`Validate`]d.

pub mod formats;
pub mod rules;
pub mod validate;

pub use rules::{NOT_BLANK, ONE_LINE_NOT_BLANK};
pub use validate::{Validate, nullable_format, text_list, trim, trim_and_dedupe, trim_optional};
