//! Connected agents: each holds a connector token of its own, minted by the credential that
//! connected it (never broader, see `domain::minting`), whose active workspace is the agent's.

use auth::{CredentialKind, Environment, Origin, Scope};
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::credentials::{self, KeyError, NewKey};
use super::owner::Owner;
use super::schema::{agents as a, api_keys};
use super::workspaces;

/// How many agents an owner may connect.
pub const MAX_PER_OWNER: i64 = 50;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = a)]
pub struct Agent {
    pub id: Uuid,
    pub name: String,
    pub kind: String,
    pub context_file: String,
    pub workspace_id: Option<Uuid>,
    pub connected_at: DateTime<Utc>,
}

pub struct NewAgent<'a> {
    pub name: &'a str,
    pub kind: &'a str,
    pub context_file: &'a str,
    pub workspace_id: Option<Uuid>,
}

/// The token an agent gets: its scopes and expiry, and the API key that mints it (`None` for
/// a dashboard session, which acts as the user itself).
pub struct TokenTerms {
    pub scopes: Vec<Scope>,
    pub expires_at: DateTime<Utc>,
    pub creator: Option<Uuid>,
}

/// A connection made: the agent, its token (shown once) and whether it replaced an earlier
/// connection of the same name.
pub struct Connected {
    pub agent: Agent,
    pub expires_at: DateTime<Utc>,
    pub token: String,
    pub token_prefix: String,
    pub reconnected: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("at most {MAX_PER_OWNER} agents may be connected")]
    TooMany,
    #[error("no such workspace")]
    NoWorkspace,
    #[error("{0}")]
    Key(#[from] KeyError),
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Connects an agent, or reconnects the owner's agent of that name: a new token is made, the
/// previous one (if any) is revoked at once, and the token's active workspace is set.
pub async fn connect(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    environment: Environment,
    new: NewAgent<'_>,
    terms: &TokenTerms,
) -> Result<Connected, ConnectError> {
    conn.transaction(async |conn| {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(format!("agents:{}:{}", owner.user_id, owner.environment))
            .execute(conn)
            .await?;
        let existing: Option<(Uuid, Option<Uuid>)> = mine(owner)
            .filter(a::name.eq(new.name))
            .select((a::id, a::key_id))
            .first(conn)
            .await
            .optional()?;
        if existing.is_none() && mine(owner).count().get_result::<i64>(conn).await? >= MAX_PER_OWNER
        {
            return Err(ConnectError::TooMany);
        }
        let name = format!("agent: {}", new.name);
        let key = NewKey {
            user_id: owner.user_id,
            name: &name,
            kind: CredentialKind::MemoryOAuth,
            origin: Origin::Connector,
            environment,
            scopes: &terms.scopes,
            expires_at: Some(terms.expires_at),
        };
        let (key, credential) = credentials::mint_key_in(conn, &key, terms.creator).await?;
        if !workspaces::set_active(conn, owner, key.id, new.workspace_id).await? {
            return Err(ConnectError::NoWorkspace);
        }
        let values = (
            a::kind.eq(new.kind),
            a::context_file.eq(new.context_file),
            a::workspace_id.eq(new.workspace_id),
            a::key_id.eq(key.id),
            a::connected_at.eq(diesel::dsl::now),
        );
        let agent = match existing {
            Some((id, old_key)) => {
                if let Some(old_key) = old_key {
                    revoke(conn, old_key).await?;
                }
                diesel::update(a::table.find(id))
                    .set(values)
                    .returning(Agent::as_returning())
                    .get_result(conn)
                    .await?
            }
            None => {
                diesel::insert_into(a::table)
                    .values((
                        a::id.eq(Uuid::now_v7()),
                        a::user_id.eq(owner.user_id),
                        a::environment.eq(owner.environment),
                        a::name.eq(new.name),
                        values,
                    ))
                    .returning(Agent::as_returning())
                    .get_result(conn)
                    .await?
            }
        };
        Ok(Connected {
            agent,
            expires_at: terms.expires_at,
            token: credential.plaintext,
            token_prefix: credential.display_prefix,
            reconnected: existing.is_some(),
        })
    })
    .await
}

/// The owner's agents by connection order, each with whether its token still works.
pub async fn list(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
) -> QueryResult<Vec<(Agent, bool)>> {
    let rows: Vec<(Agent, Option<Uuid>)> = mine(owner)
        .order(a::id)
        .select((Agent::as_select(), a::key_id))
        .load(conn)
        .await?;
    let keys: Vec<Uuid> = rows.iter().filter_map(|r| r.1).collect();
    let working: Vec<Uuid> = api_keys::table
        .filter(api_keys::id.eq_any(&keys))
        .filter(api_keys::revoked_at.is_null())
        .select(api_keys::id)
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(agent, key)| (agent, key.is_some_and(|k| working.contains(&k))))
        .collect())
}

/// Disconnects the owner's agent: its token is revoked at once and the agent forgotten.
/// `false` when the owner has no such agent.
pub async fn disconnect(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<bool> {
    conn.transaction(async |conn| {
        let target = a::table
            .filter(a::id.eq(id))
            .filter(a::user_id.eq(owner.user_id))
            .filter(a::environment.eq(owner.environment));
        let deleted: Option<Option<Uuid>> = diesel::delete(target)
            .returning(a::key_id)
            .get_result(conn)
            .await
            .optional()?;
        let Some(key) = deleted else {
            return Ok(false);
        };
        if let Some(key) = key {
            revoke(conn, key).await?;
        }
        Ok(true)
    })
    .await
}

/// The workspace the credential `key_id` is bound to, when it is an agent's token of a
/// workspace.
pub async fn bound_workspace(
    conn: &mut AsyncPgConnection,
    key_id: Uuid,
) -> QueryResult<Option<Uuid>> {
    Ok(a::table
        .filter(a::key_id.eq(key_id))
        .select(a::workspace_id)
        .first::<Option<Uuid>>(conn)
        .await
        .optional()?
        .flatten())
}

fn mine(owner: Owner<'_>) -> a::BoxedQuery<'_, diesel::pg::Pg> {
    a::table
        .filter(a::user_id.eq(owner.user_id))
        .filter(a::environment.eq(owner.environment))
        .into_boxed()
}

async fn revoke(conn: &mut AsyncPgConnection, key: Uuid) -> QueryResult<()> {
    match store::revoke_api_key(conn, key).await {
        Ok(_) => Ok(()),
        Err(store::StoreError::Query(e)) => Err(e),
        Err(other) => Err(diesel::result::Error::QueryBuilderError(
            other.to_string().into(),
        )),
    }
}
