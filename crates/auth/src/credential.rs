//! Credential formats. A credential is a service prefix followed by 64 lowercase hex digits
//! (256 random bits). Only its SHA-256 is ever stored.

use ring::rand::{SecureRandom as _, SystemRandom};

use crate::AuthError;

const BODY_LEN: usize = 64;

/// The credential families the two services accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CredentialKind {
    /// `mem_live_…`: memory API key acting on the live environment.
    MemoryLive,
    /// `mem_test_…`: memory API key acting on the separate test environment.
    MemoryTest,
    /// `memo_…`: memory OAuth access token.
    MemoryOAuth,
    /// `mail_…`: project-scoped mail API key.
    Mail,
    /// `mailo_…`: mail OAuth access token (remote MCP clients).
    MailOAuth,
}

impl CredentialKind {
    pub const MEMORY: &'static [Self] = &[Self::MemoryLive, Self::MemoryTest, Self::MemoryOAuth];
    pub const MAIL: &'static [Self] = &[Self::Mail, Self::MailOAuth];

    pub fn prefix(self) -> &'static str {
        match self {
            Self::MemoryLive => "mem_live_",
            Self::MemoryTest => "mem_test_",
            Self::MemoryOAuth => "memo_",
            Self::Mail => "mail_",
            Self::MailOAuth => "mailo_",
        }
    }

    fn all() -> [Self; 5] {
        [
            Self::MemoryLive,
            Self::MemoryTest,
            Self::MemoryOAuth,
            Self::Mail,
            Self::MailOAuth,
        ]
    }
}

/// A syntactically valid credential, reduced to what the store is asked with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCredential {
    pub kind: CredentialKind,
    pub hash: [u8; 32],
}

/// A freshly minted credential: show `plaintext` once, store `hash` and `display_prefix`.
#[derive(Debug, Clone)]
pub struct NewCredential {
    pub kind: CredentialKind,
    pub plaintext: String,
    pub hash: [u8; 32],
    /// The prefix and first 8 digits, safe to list (`mem_live_3f9a01bc…`).
    pub display_prefix: String,
}

pub fn generate(kind: CredentialKind) -> NewCredential {
    let mut bytes = [0u8; BODY_LEN / 2];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system random source is available");
    let plaintext = format!("{}{}", kind.prefix(), hex::encode(bytes));
    let hash = store::sha256(plaintext.as_bytes());
    let display_prefix = format!("{}…", &plaintext[..kind.prefix().len() + 8]);
    NewCredential {
        kind,
        plaintext,
        hash,
        display_prefix,
    }
}

/// Parses a bearer token of one of the `accepted` kinds.
pub fn parse(token: &str, accepted: &[CredentialKind]) -> Result<ParsedCredential, AuthError> {
    let kind = CredentialKind::all()
        .into_iter()
        .find(|k| token.starts_with(k.prefix()))
        .filter(|k| accepted.contains(k))
        .ok_or(AuthError::Malformed)?;
    let body = &token[kind.prefix().len()..];
    if body.len() != BODY_LEN || !body.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(AuthError::Malformed);
    }
    Ok(ParsedCredential {
        kind,
        hash: store::sha256(token.as_bytes()),
    })
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer_token(header: Option<&str>) -> Result<&str, AuthError> {
    let value = header.ok_or(AuthError::Missing)?.trim();
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed);
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

/// Equality of two hashes in time that does not depend on where they differ. Lengths are not
/// secret (every stored hash is 32 bytes).
pub fn hashes_equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_credentials_parse_back_to_their_hash() {
        for kind in CredentialKind::all() {
            let new = generate(kind);
            assert!(new.plaintext.starts_with(kind.prefix()));
            assert_eq!(new.plaintext.len(), kind.prefix().len() + BODY_LEN);
            let parsed = parse(&new.plaintext, &[kind]).unwrap();
            assert_eq!(parsed.kind, kind);
            assert_eq!(parsed.hash, new.hash);
            assert!(
                !new.display_prefix
                    .contains(&new.plaintext[kind.prefix().len() + 8..])
            );
        }
    }

    #[test]
    fn memory_prefixes_are_told_apart() {
        let live = generate(CredentialKind::MemoryLive).plaintext;
        let test = generate(CredentialKind::MemoryTest).plaintext;
        let oauth = generate(CredentialKind::MemoryOAuth).plaintext;
        let m = CredentialKind::MEMORY;
        assert_eq!(parse(&live, m).unwrap().kind, CredentialKind::MemoryLive);
        assert_eq!(parse(&test, m).unwrap().kind, CredentialKind::MemoryTest);
        assert_eq!(parse(&oauth, m).unwrap().kind, CredentialKind::MemoryOAuth);
    }

    #[test]
    fn wrong_service_and_bad_bodies_are_malformed() {
        let mail = generate(CredentialKind::Mail).plaintext;
        assert_eq!(
            parse(&mail, CredentialKind::MEMORY),
            Err(AuthError::Malformed)
        );
        let live = generate(CredentialKind::MemoryLive).plaintext;
        assert_eq!(
            parse(&live, CredentialKind::MAIL),
            Err(AuthError::Malformed)
        );
        for bad in [
            "mem_live_",
            "mem_live_abc",
            &format!("mem_live_{}", "G".repeat(64)),
            &format!("mem_live_{}", "A".repeat(64)),
            &format!("{live}0"),
            "sk_live_whatever",
        ] {
            assert_eq!(
                parse(bad, CredentialKind::MEMORY),
                Err(AuthError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer_token(None), Err(AuthError::Missing));
        assert_eq!(bearer_token(Some("Bearer abc")), Ok("abc"));
        assert_eq!(bearer_token(Some("bearer  abc ")), Ok("abc"));
        assert_eq!(bearer_token(Some("Basic abc")), Err(AuthError::Malformed));
        assert_eq!(bearer_token(Some("Bearer")), Err(AuthError::Malformed));
        assert_eq!(bearer_token(Some("Bearer ")), Err(AuthError::Malformed));
    }

    #[test]
    fn hash_comparison() {
        assert!(hashes_equal(&[1, 2, 3], &[1, 2, 3]));
        assert!(!hashes_equal(&[1, 2, 3], &[1, 2, 4]));
        assert!(!hashes_equal(&[1, 2, 3], &[1, 2]));
    }
}
