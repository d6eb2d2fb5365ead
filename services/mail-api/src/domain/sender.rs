//! Sender addresses on the shared sending domain: `<slug>@<shared domain>`.

/// Local parts that receivers and abuse desks expect to reach the operator of a domain
/// (RFC 2142 and common practice), so no site may send as them (ruled).
pub const RESERVED_SLUGS: [&str; 12] = [
    "postmaster",
    "abuse",
    "hostmaster",
    "webmaster",
    "admin",
    "root",
    "security",
    "noreply",
    "no-reply",
    "mailer-daemon",
    "billing",
    "support",
];

pub const SLUG_MAX: usize = 63;

/// Why a slug cannot be a sender address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlugProblem {
    Malformed,
    Reserved,
}

/// Checks the syntax (1..=63 lowercase letters, digits and inner hyphens) and the reserved
/// list; whether another site holds the slug is the database's to say.
pub fn check_slug(slug: &str) -> Result<(), SlugProblem> {
    let well_formed = !slug.is_empty()
        && slug.len() <= SLUG_MAX
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !well_formed {
        return Err(SlugProblem::Malformed);
    }
    if RESERVED_SLUGS.contains(&slug) {
        return Err(SlugProblem::Reserved);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_and_malformed_slugs_are_refused() {
        assert_eq!(check_slug("shop"), Ok(()));
        assert_eq!(check_slug("no-reply"), Err(SlugProblem::Reserved));
        assert_eq!(check_slug("postmaster"), Err(SlugProblem::Reserved));
        assert_eq!(check_slug("Postmaster"), Err(SlugProblem::Malformed));
        assert_eq!(check_slug("-shop"), Err(SlugProblem::Malformed));
        assert_eq!(check_slug(""), Err(SlugProblem::Malformed));
    }
}
