//! API keys and OAuth access tokens: the lookup the authenticator uses, and the management the
//! admin CLI uses. Only SHA-256 hashes are stored; revoking fires the NOTIFY that empties every
//! replica's cache (trigger in the migration).

use auth::{
    Caller, CredentialKind, CredentialStore, Environment, Grade, LookupError, NewCredential,
    Origin, Scope, StoredCredential,
};
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rate_limit::policy::Tier;
use store::Pool;
use uuid::Uuid;

use super::schema::{api_keys, users};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = api_keys)]
pub struct ApiKey {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub kind: String,
    pub environment: String,
    pub origin: String,
    pub scopes: Vec<String>,
    pub key_hash: Vec<u8>,
    pub key_prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Insertable)]
#[diesel(table_name = api_keys)]
struct NewApiKey<'a> {
    id: Uuid,
    user_id: Uuid,
    name: &'a str,
    kind: &'a str,
    environment: &'a str,
    origin: &'a str,
    scopes: Vec<String>,
    key_hash: &'a [u8],
    key_prefix: &'a str,
    expires_at: Option<DateTime<Utc>>,
    created_by: Option<Uuid>,
}

/// How a credential kind is stored: (kind column, the environment it is bound to). API keys
/// name their environment in their prefix; an OAuth token's environment is the one stored with
/// it (`None` here).
fn columns(kind: CredentialKind) -> Option<(&'static str, Option<Environment>)> {
    match kind {
        CredentialKind::MemoryLive => Some(("api_key", Some(Environment::Live))),
        CredentialKind::MemoryTest => Some(("api_key", Some(Environment::Test))),
        CredentialKind::MemoryOAuth => Some(("oauth", None)),
        CredentialKind::Mail | CredentialKind::MailOAuth => None,
    }
}

fn parse_environment(s: &str) -> Option<Environment> {
    match s {
        "live" => Some(Environment::Live),
        "test" => Some(Environment::Test),
        _ => None,
    }
}

fn origin_str(origin: Origin) -> &'static str {
    match origin {
        Origin::FirstParty => "first_party",
        Origin::Connector => "connector",
    }
}

/// The authenticator's view of the memory database.
#[derive(Clone)]
pub struct PgCredentials {
    pool: Pool,
}

impl PgCredentials {
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }
}

impl CredentialStore for PgCredentials {
    async fn find(
        &self,
        kind: CredentialKind,
        hash: [u8; 32],
    ) -> Result<Option<StoredCredential>, LookupError> {
        let Some((kind_column, bound)) = columns(kind) else {
            return Ok(None);
        };
        let mut conn = self
            .pool
            .get()
            .await
            .map_err(|e| LookupError::database(&e))?;
        if kind == CredentialKind::MemoryOAuth
            && let Some(found) = find_oauth_token(&mut conn, hash).await?
        {
            return Ok(Some(found));
        }
        let mut query = api_keys::table
            .inner_join(users::table)
            .filter(api_keys::key_hash.eq(&hash[..]))
            .filter(api_keys::kind.eq(kind_column))
            .select((ApiKey::as_select(), users::tier))
            .into_boxed();
        if let Some(bound) = bound {
            query = query.filter(api_keys::environment.eq(bound.as_str()));
        }
        let row: Option<(ApiKey, String)> = query
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| LookupError::database(&e))?;
        let Some((key, tier)) = row else {
            return Ok(None);
        };
        let environment = parse_environment(&key.environment)
            .ok_or_else(|| format!("credential {} has no known environment", key.id))?;
        let tier: Tier = tier.parse().map_err(|e| format!("{e}"))?;
        Ok(Some(StoredCredential {
            caller: Caller {
                key_id: key.id,
                owner_id: key.user_id,
                scopes: key.scopes.iter().filter_map(|s| Scope::parse(s)).collect(),
                grade: Grade::Tier(tier),
                origin: if key.origin == "connector" {
                    Origin::Connector
                } else {
                    Origin::FirstParty
                },
                environment,
                tool_groups: None,
                audience: None,
            },
            key_hash: key.key_hash,
            expires_at: key.expires_at,
            revoked: key.revoked_at.is_some(),
        }))
    }

    async fn find_subject(&self, subject: Uuid) -> Result<Option<Grade>, LookupError> {
        user_grade(&self.pool, subject).await
    }
}

/// The tier of a dashboard JWT's user (`sub`), when the user exists.
async fn user_grade(pool: &Pool, user: Uuid) -> Result<Option<Grade>, LookupError> {
    let mut conn = pool.get().await.map_err(|e| LookupError::database(&e))?;
    let tier: Option<String> = users::table
        .find(user)
        .select(users::tier)
        .first(&mut conn)
        .await
        .optional()
        .map_err(|e| LookupError::database(&e))?;
    tier.map(|t| {
        t.parse::<Tier>()
            .map(Grade::Tier)
            .map_err(|e| LookupError::from(format!("{e}")))
    })
    .transpose()
}

/// An access token the authorization server issued (`oauth_tokens`): a connector's, acting on
/// the live environment with its grant's scopes; revoked with its grant.
async fn find_oauth_token(
    conn: &mut AsyncPgConnection,
    hash: [u8; 32],
) -> Result<Option<StoredCredential>, LookupError> {
    let found = oauth::db::find_access_token(conn, &hash)
        .await
        .map_err(|e| LookupError::database(&e))?;
    let Some((token, grant)) = found else {
        return Ok(None);
    };
    let tier: String = users::table
        .find(grant.owner_id)
        .select(users::tier)
        .first(conn)
        .await
        .map_err(|e| LookupError::database(&e))?;
    let tier: Tier = tier.parse().map_err(|e| format!("{e}"))?;
    Ok(Some(StoredCredential {
        caller: Caller {
            key_id: token.id,
            owner_id: grant.owner_id,
            scopes: grant
                .scopes
                .iter()
                .filter_map(|s| Scope::parse(s))
                .filter(|s| matches!(s, Scope::Read | Scope::Propose))
                .collect(),
            grade: Grade::Tier(tier),
            origin: Origin::Connector,
            environment: Environment::Live,
            tool_groups: None,
            audience: None,
        },
        key_hash: token.key_hash,
        expires_at: Some(token.expires_at),
        revoked: token.revoked_at.is_some() || grant.revoked_at.is_some(),
    }))
}

/// Why a key cannot be created as asked.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("connector credentials may hold only the read and propose scopes")]
    ConnectorScope,
    #[error("a {kind} key acts on the {bound} environment, not on {asked}")]
    EnvironmentMismatch {
        kind: &'static str,
        bound: &'static str,
        asked: &'static str,
    },
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Creates a credential for `user_id`; the plaintext in the answer is shown once, never stored.
/// API keys act on the environment their prefix names; an OAuth token acts on the live
/// environment (see [`create_key_in`] for a test-environment token).
pub async fn create_key(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    name: &str,
    kind: CredentialKind,
    origin: Origin,
    scopes: &[Scope],
    expires_at: Option<DateTime<Utc>>,
) -> Result<(ApiKey, NewCredential), KeyError> {
    let environment = match columns(kind) {
        Some((_, Some(bound))) => bound,
        _ => Environment::Live,
    };
    create_key_in(
        conn,
        user_id,
        name,
        kind,
        origin,
        environment,
        scopes,
        expires_at,
    )
    .await
}

/// [`create_key`] acting on `environment`: any environment for an OAuth token, the one its
/// prefix names for an API key ([`KeyError::EnvironmentMismatch`] otherwise).
#[allow(clippy::too_many_arguments)]
pub async fn create_key_in(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    name: &str,
    kind: CredentialKind,
    origin: Origin,
    environment: Environment,
    scopes: &[Scope],
    expires_at: Option<DateTime<Utc>>,
) -> Result<(ApiKey, NewCredential), KeyError> {
    let new = NewKey {
        user_id,
        name,
        kind,
        origin,
        environment,
        scopes,
        expires_at,
    };
    insert_key(conn, &new, None).await
}

/// What a credential to create is.
pub struct NewKey<'a> {
    pub user_id: Uuid,
    pub name: &'a str,
    pub kind: CredentialKind,
    pub origin: Origin,
    pub environment: Environment,
    pub scopes: &'a [Scope],
    pub expires_at: Option<DateTime<Utc>>,
}

/// Creates a credential minted by the API key `creator` (see `domain::minting` for what it
/// may hold): revoking or deleting the creator revokes it (the `api_keys` triggers). `None`:
/// minted by a dashboard session, the user itself.
pub async fn mint_key_in(
    conn: &mut AsyncPgConnection,
    new: &NewKey<'_>,
    creator: Option<Uuid>,
) -> Result<(ApiKey, NewCredential), KeyError> {
    insert_key(conn, new, creator).await
}

/// The expiry of the API key `id` (`None`: no such key, as for a dashboard session, whose
/// key id is its user's; `Some(None)`: a key that never expires).
pub async fn key_expiry(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> QueryResult<Option<Option<DateTime<Utc>>>> {
    api_keys::table
        .find(id)
        .select(api_keys::expires_at)
        .first(conn)
        .await
        .optional()
}

async fn insert_key(
    conn: &mut AsyncPgConnection,
    new: &NewKey<'_>,
    created_by: Option<Uuid>,
) -> Result<(ApiKey, NewCredential), KeyError> {
    let NewKey {
        user_id,
        name,
        kind,
        origin,
        environment,
        scopes,
        expires_at,
    } = *new;
    let (kind_column, bound) = columns(kind).ok_or(diesel::result::Error::NotFound)?;
    if let Some(bound) = bound.filter(|b| *b != environment) {
        return Err(KeyError::EnvironmentMismatch {
            kind: kind.prefix(),
            bound: bound.as_str(),
            asked: environment.as_str(),
        });
    }
    if origin == Origin::Connector
        && scopes
            .iter()
            .any(|s| !matches!(s, Scope::Read | Scope::Propose))
    {
        return Err(KeyError::ConnectorScope);
    }
    let credential = auth::credential::generate(kind);
    let key = diesel::insert_into(api_keys::table)
        .values(NewApiKey {
            id: Uuid::now_v7(),
            user_id,
            name,
            kind: kind_column,
            environment: environment.as_str(),
            origin: origin_str(origin),
            scopes: scopes.iter().map(|s| s.as_str().to_owned()).collect(),
            key_hash: &credential.hash,
            key_prefix: &credential.display_prefix,
            expires_at,
            created_by,
        })
        .returning(ApiKey::as_returning())
        .get_result(conn)
        .await?;
    Ok((key, credential))
}

pub async fn list_keys(conn: &mut AsyncPgConnection, user_id: Uuid) -> QueryResult<Vec<ApiKey>> {
    api_keys::table
        .filter(api_keys::user_id.eq(user_id))
        .order(api_keys::id)
        .select(ApiKey::as_select())
        .load(conn)
        .await
}

pub async fn find_key(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<ApiKey>> {
    api_keys::table
        .find(id)
        .select(ApiKey::as_select())
        .first(conn)
        .await
        .optional()
}
