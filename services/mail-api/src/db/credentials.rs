//! Project API keys: the lookup the authenticator uses, and the management the admin CLI uses.
//! Only SHA-256 hashes are stored; revoking fires the NOTIFY that empties every replica's
//! cache (trigger in the migration).

use std::sync::Arc;

use auth::{
    Caller, CredentialKind, CredentialStore, Environment, Grade, LookupError, NewCredential,
    Origin, Scope, Scopes, StoredCredential,
};
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rate_limit::policy::Plan;
use store::Pool;
use uuid::Uuid;

use super::schema::{api_keys, projects};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = api_keys)]
pub struct ApiKey {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: String,
    pub scope: String,
    pub tool_groups: Option<Vec<String>>,
    pub key_hash: Vec<u8>,
    pub key_prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// An agent's key: it acts like an OAuth client (its actions follow the approval policy,
    /// it decides nothing).
    pub agent: bool,
    /// The `approve` right: it may decide approvals.
    pub approve: bool,
}

/// The authenticator's view of the mail database.
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
        let mut conn = self
            .pool
            .get()
            .await
            .map_err(|e| LookupError::database(&e))?;
        match kind {
            CredentialKind::Mail => find_api_key(&mut conn, hash).await,
            CredentialKind::MailOAuth => find_oauth_token(&mut conn, hash).await,
            _ => Ok(None),
        }
    }
}

async fn plan_of(conn: &mut AsyncPgConnection, project: Uuid) -> Result<Plan, LookupError> {
    let plan: String = projects::table
        .find(project)
        .select(projects::plan)
        .first(conn)
        .await
        .map_err(|e| LookupError::database(&e))?;
    Ok(plan.parse().map_err(|e| format!("{e}"))?)
}

/// An OAuth access token (`mailo_`): its grant's project and scopes; revoked with its grant.
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
    let plan = plan_of(conn, grant.owner_id).await?;
    let scope = if grant.scopes.iter().any(|s| s == "write") {
        Scope::Write
    } else {
        Scope::Read
    };
    Ok(Some(StoredCredential {
        caller: Caller {
            key_id: token.id,
            owner_id: grant.owner_id,
            scopes: Scopes::mail(scope),
            grade: Grade::Plan(plan),
            origin: Origin::Connector,
            environment: Environment::Live,
            tool_groups: None,
            // A grant's token works on the resource it was issued for only (RFC 8707).
            audience: Some(Arc::from(oauth::resource_path(&grant.resource))),
        },
        key_hash: token.key_hash,
        expires_at: Some(token.expires_at),
        revoked: token.revoked_at.is_some() || grant.revoked_at.is_some(),
    }))
}

/// A project API key (`mail_`).
async fn find_api_key(
    conn: &mut AsyncPgConnection,
    hash: [u8; 32],
) -> Result<Option<StoredCredential>, LookupError> {
    let row: Option<(ApiKey, String)> = api_keys::table
        .inner_join(projects::table)
        .filter(api_keys::key_hash.eq(&hash[..]))
        .select((ApiKey::as_select(), projects::plan))
        .first(conn)
        .await
        .optional()
        .map_err(|e| LookupError::database(&e))?;
    let Some((key, plan)) = row else {
        return Ok(None);
    };
    let plan: Plan = plan.parse().map_err(|e| format!("{e}"))?;
    let scope = Scope::parse(&key.scope).ok_or_else(|| format!("bad scope {}", key.scope))?;
    Ok(Some(StoredCredential {
        caller: Caller {
            key_id: key.id,
            owner_id: key.project_id,
            scopes: Scopes::mail(scope),
            grade: Grade::Plan(plan),
            // An agent's key decides nothing a person decides (approvals, drafts).
            origin: if key.agent {
                Origin::Connector
            } else {
                Origin::FirstParty
            },
            environment: Environment::Live,
            tool_groups: key.tool_groups.map(Arc::from),
            audience: None,
        },
        key_hash: key.key_hash,
        expires_at: key.expires_at,
        revoked: key.revoked_at.is_some(),
    }))
}

/// Creates a project key; the plaintext in the answer is shown once, never stored.
pub async fn create_key(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    name: &str,
    scope: Scope,
    tool_groups: Option<Vec<String>>,
    expires_at: Option<DateTime<Utc>>,
) -> QueryResult<(ApiKey, NewCredential)> {
    let credential = auth::credential::generate(CredentialKind::Mail);
    let key = diesel::insert_into(api_keys::table)
        .values((
            api_keys::id.eq(Uuid::now_v7()),
            api_keys::project_id.eq(project_id),
            api_keys::name.eq(name),
            api_keys::scope.eq(scope.as_str()),
            api_keys::tool_groups.eq(tool_groups),
            api_keys::key_hash.eq(&credential.hash[..]),
            api_keys::key_prefix.eq(&credential.display_prefix),
            api_keys::expires_at.eq(expires_at),
        ))
        .returning(ApiKey::as_returning())
        .get_result(conn)
        .await?;
    Ok((key, credential))
}

/// The project's key `id`, revoked or not.
pub async fn find_key(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<ApiKey>> {
    api_keys::table
        .filter(api_keys::project_id.eq(project_id))
        .filter(api_keys::id.eq(id))
        .select(ApiKey::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn list_keys(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<Vec<ApiKey>> {
    api_keys::table
        .filter(api_keys::project_id.eq(project_id))
        .order(api_keys::id)
        .select(ApiKey::as_select())
        .load(conn)
        .await
}
