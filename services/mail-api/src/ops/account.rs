//! The use cases of the account: the caller's project, its plan and usage, and its API keys.
//!
//! The project a key belongs to, its plan, and its API keys: `GET /api/v1/project`,
//! `GET /api/v1/plan`, `GET|POST /api/v1/api-keys`, `DELETE /api/v1/api-keys/{id}`. Key
//! management needs the admin scope: a write key must not mint an admin key.

use auth::{Caller, Scope};
use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
use http_kit::request::trim;
use http_kit::{ApiError, Validate};
use rate_limit::policy::{Plan, RouteClass, mail_quota};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::approvals;
use crate::db::credentials::{self, ApiKey as ApiKeyRow};
use crate::db::notifications::{self, kind};
use crate::db::tenants;
use crate::domain::error_code::MailErrorCode;
use crate::domain::plans::contact_limit;
use crate::domain::tool_group::Group;
use crate::flows::plan_of;

#[derive(Debug, Serialize, ToSchema)]
pub struct Project {
    pub id: Uuid,
    pub name: String,
    /// `free`, `byod`, `managed`, `agency_plus` or `enterprise`.
    pub plan: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Projects {
    /// The key's project (a key belongs to one project).
    pub projects: Vec<Project>,
}

/// The projects the key reaches (`list_projects`).
pub async fn list_projects(state: &AppState, project_id: Uuid) -> Result<Projects, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = tenants::find_project(&mut conn, project_id)
        .await?
        .ok_or_else(|| ApiError::not_found("the key's project is gone"))?;
    Ok(Projects {
        projects: vec![Project {
            id: row.id,
            name: row.name,
            plan: row.plan,
            created_at: row.created_at,
        }],
    })
}

/// A limit and how much of it is used; `limit` is null when unlimited.
#[derive(Debug, Serialize, ToSchema)]
pub struct Allowance {
    pub used: i64,
    pub limit: Option<i64>,
}

/// Requests per five-minute sliding window, by route class.
#[derive(Debug, Serialize, ToSchema)]
pub struct RateLimits {
    pub window_seconds: u32,
    pub send: Option<u64>,
    pub read: Option<u64>,
    pub write: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlanReport {
    pub plan: String,
    /// Contacts held, and the plan's limit.
    pub contacts: Allowance,
    /// Emails sent this calendar month (UTC), and the plan's monthly quota.
    pub monthly_sends: Allowance,
    pub rate_limits: RateLimits,
}

fn per_window(plan: Plan, class: RouteClass) -> Option<u64> {
    mail_quota(plan, class).limit
}

#[derive(diesel::QueryableByName)]
struct Used {
    #[diesel(sql_type = BigInt)]
    contacts: i64,
    #[diesel(sql_type = BigInt)]
    sends: i64,
}

/// The plan's limits and the project's use of them (`get_plan_limits`, `get_plan_usage`).
pub async fn plan_report(state: &AppState, caller: &Caller) -> Result<PlanReport, ApiError> {
    let plan = plan_of(caller);
    let mut conn = store::conn(&state.pool).await?;
    let used: Used = diesel::sql_query(
        "SELECT coalesce((SELECT contacts FROM project_usage WHERE project_id = $1), 0) \
             AS contacts, \
         coalesce((SELECT sends::bigint FROM project_monthly_sends WHERE project_id = $1 \
             AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date), 0) AS sends",
    )
    .bind::<SqlUuid, _>(caller.owner_id)
    .get_result(&mut conn)
    .await?;
    Ok(PlanReport {
        plan: plan.as_str().to_owned(),
        contacts: Allowance {
            used: used.contacts,
            limit: contact_limit(plan),
        },
        monthly_sends: Allowance {
            used: used.sends,
            limit: state
                .send
                .quotas
                .monthly_sends(plan)
                .and_then(|n| i64::try_from(n).ok()),
        },
        rate_limits: RateLimits {
            window_seconds: 300,
            send: per_window(plan, RouteClass::Send),
            read: per_window(plan, RouteClass::Read),
            write: per_window(plan, RouteClass::Write),
        },
    })
}

/// An API key, without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKey {
    pub id: Uuid,
    pub name: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    /// The tool groups the key is limited to; null: every group.
    pub tool_groups: Option<Vec<String>>,
    /// The first characters of the key, to recognise it.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// An agent's key: its actions follow the approval policy like an OAuth client's, and it
    /// approves nothing.
    pub agent: bool,
    /// The `approve` right: the key may approve or reject the project's pending approvals.
    pub approve: bool,
}

impl From<ApiKeyRow> for ApiKey {
    fn from(row: ApiKeyRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            scope: row.scope,
            tool_groups: row.tool_groups,
            prefix: row.key_prefix,
            created_at: row.created_at,
            expires_at: row.expires_at,
            revoked_at: row.revoked_at,
            agent: row.agent,
            approve: row.approve,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeys {
    pub keys: Vec<ApiKey>,
}

/// The project's keys, revoked ones included (`list_api_keys`).
pub async fn list_api_keys(state: &AppState, project_id: Uuid) -> Result<ApiKeys, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let rows = credentials::list_keys(&mut conn, project_id).await?;
    Ok(ApiKeys {
        keys: rows.into_iter().map(ApiKey::from).collect(),
    })
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyScope {
    Read,
    Write,
    Admin,
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateApiKey {
    /// 1..=100 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Default `read`.
    pub scope: Option<KeyScope>,
    /// Limit the key to these MCP tool groups (on REST routes as on MCP tools); absent: the
    /// creating key's groups (all when it has none).
    #[schema(max_items = 22, min_items = 1)]
    pub tool_groups: Option<Vec<Group>>,
    #[schema(schema_with = expires_at_schema)]
    pub expires_at: Option<DateTime<Utc>>,
    /// Mark the key as an agent's (default false; a key made by an agent's key is always one):
    /// its actions follow the approval policy, and it decides no approval nor draft.
    pub agent: Option<bool>,
    /// Give the key the `approve` right (default false): it may approve or reject pending
    /// approvals. Only a person's admin key or a key with the right gives it; never with
    /// `agent`.
    pub approve: Option<bool>,
}

fn expires_at_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::DateTime,
        "When the key stops working, at the latest the creating key's own expiry; absent: the \
         creating key's expiry (never when it has none). A past time makes a key that is \
         expired from the start.",
    )
}

impl Validate for CreateApiKey {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        if let Some(groups) = &mut self.tool_groups {
            groups.sort();
            groups.dedup();
        }
        Ok(())
    }
}

/// A new key: its secret is in this answer only.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedApiKey {
    #[serde(flatten)]
    pub key: ApiKey,
    /// The key itself (`mail_…`), shown once.
    pub secret: String,
}

/// What a new key may hold: never more than the key creating it.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyLimits {
    pub scope: Scope,
    pub tool_groups: Option<Vec<String>>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// The limits of the key `req` asks for, created by a key holding `creator_scopes`, limited to
/// `creator_groups` and expiring at `creator_expiry`. What the request leaves out is inherited
/// from the creator (its groups, its expiry); what it asks beyond the creator is refused with
/// 403: a higher scope, a group outside the creator's, no expiry or a later one.
pub fn key_limits(
    creator_scopes: auth::Scopes,
    creator_groups: Option<&[String]>,
    creator_expiry: Option<DateTime<Utc>>,
    req: &CreateApiKey,
) -> Result<KeyLimits, ApiError> {
    let scope = match req.scope.unwrap_or(KeyScope::Read) {
        KeyScope::Read => Scope::Read,
        KeyScope::Write => Scope::Write,
        KeyScope::Admin => Scope::Admin,
    };
    if !creator_scopes.contains(scope) {
        return Err(broader(format!(
            "a key cannot create a key of a scope it lacks ({})",
            scope.as_str()
        )));
    }
    let asked: Option<Vec<String>> = req
        .tool_groups
        .as_ref()
        .map(|groups| groups.iter().map(|g| g.as_str().to_owned()).collect());
    let tool_groups = match (creator_groups, asked) {
        (None, asked) => asked,
        (Some(own), None) => Some(own.to_vec()),
        (Some(own), Some(asked)) => {
            if let Some(outside) = asked.iter().find(|g| !own.contains(g)) {
                return Err(broader(format!(
                    "this key is limited to tool groups; it cannot create a key for {outside:?}"
                )));
            }
            Some(asked)
        }
    };
    let expires_at = match (creator_expiry, req.expires_at) {
        (None, asked) => asked,
        (Some(own), None) => Some(own),
        (Some(own), Some(asked)) if asked > own => {
            return Err(broader(
                "expires_at is after this key's own expiry; a key cannot outlive its creator",
            ));
        }
        (Some(_), Some(asked)) => Some(asked),
    };
    Ok(KeyLimits {
        scope,
        tool_groups,
        expires_at,
    })
}

/// The `agent` mark and `approve` right of a new key made by the key `own`: an agent's key
/// makes agents' keys only; the right comes from a person's admin key or a key that has it.
fn key_marks(
    own: &ApiKeyRow,
    creator_scopes: auth::Scopes,
    req: &CreateApiKey,
) -> Result<(bool, bool), ApiError> {
    let agent = match (own.agent, req.agent) {
        (true, Some(false)) => {
            return Err(broader("an agent's key makes agents' keys only"));
        }
        (true, _) => true,
        (false, asked) => asked.unwrap_or(false),
    };
    let approve = req.approve.unwrap_or(false);
    if approve && agent {
        return Err(ApiError::invalid_field(
            "approve",
            "an agent's key cannot hold the approve right",
        ));
    }
    if approve && !(own.approve || creator_scopes.contains(Scope::Admin)) {
        return Err(broader(
            "only an admin key or a key with the approve right gives the approve right",
        ));
    }
    Ok((agent, approve))
}

fn broader(message: impl Into<String>) -> ApiError {
    ApiError::forbidden(message.into()).with_code(MailErrorCode::KeyBroaderThanCreator)
}

/// Creates a key (`POST /api-keys`, `create_api_key`) for `creator`'s project, never broader
/// than `creator` ([`key_limits`]).
pub async fn create_api_key(
    state: &AppState,
    creator: &Caller,
    req: &CreateApiKey,
) -> Result<CreatedApiKey, ApiError> {
    let project_id = creator.owner_id;
    let mut conn = store::conn(&state.pool).await?;
    let own = credentials::find_key(&mut conn, project_id, creator.key_id)
        .await?
        .ok_or_else(|| ApiError::forbidden("only a project API key may create API keys"))?;
    let limits = key_limits(
        creator.scopes,
        creator.tool_groups.as_deref(),
        own.expires_at,
        req,
    )?;
    let (agent, approve) = key_marks(&own, creator.scopes, req)?;
    insert_key(&mut conn, project_id, req, limits, agent, approve).await
}

/// Creates a key for the project of the signed-in `person` on the dashboard: never broader
/// than their role (a viewer makes read keys, an editor read or write keys, an admin any), and
/// the approve right only from an admin. Unlike a key's, the person's groups and expiry do not
/// bound it: a person has none.
pub async fn create_api_key_as_person(
    state: &AppState,
    person: &crate::ops::people::Person,
    req: &CreateApiKey,
) -> Result<CreatedApiKey, ApiError> {
    let caller = person.caller();
    let limits = key_limits(caller.scopes, None, None, req)?;
    let agent = req.agent.unwrap_or(false);
    let approve = req.approve.unwrap_or(false);
    if approve && agent {
        return Err(ApiError::invalid_field(
            "approve",
            "an agent's key cannot hold the approve right",
        ));
    }
    if approve && !caller.scopes.contains(Scope::Admin) {
        return Err(broader("only an admin gives the approve right"));
    }
    let mut conn = store::conn(&state.pool).await?;
    insert_key(&mut conn, person.project_id, req, limits, agent, approve).await
}

/// Stores a new key of `project_id` within `limits`, with its marks and the notification.
async fn insert_key(
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
    req: &CreateApiKey,
    limits: KeyLimits,
    agent: bool,
    approve: bool,
) -> Result<CreatedApiKey, ApiError> {
    let (row, credential) = conn
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            let (row, credential) = credentials::create_key(
                conn,
                project_id,
                &req.name,
                limits.scope,
                limits.tool_groups.clone(),
                limits.expires_at,
            )
            .await?;
            if agent || approve {
                approvals::mark_key(conn, project_id, row.id, agent, approve).await?;
            }
            let row = ApiKeyRow {
                agent,
                approve,
                ..row
            };
            notifications::add(
                conn,
                project_id,
                kind::API_KEY_CREATED,
                &format!("API key \"{}\" ({}) was created", row.name, row.scope),
                serde_json::json!({"key_id": row.id, "name": row.name, "scope": row.scope}),
            )
            .await?;
            Ok((row, credential))
        })
        .await?;
    Ok(CreatedApiKey {
        key: ApiKey::from(row),
        secret: credential.plaintext,
    })
}

/// The project's key `id`: 404 when it is not one (another project's included).
pub async fn find_api_key(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<ApiKey, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    credentials::find_key(&mut conn, project_id, id)
        .await?
        .map(ApiKey::from)
        .ok_or_else(|| ApiError::not_found("no API key of this project has this id"))
}

/// Revokes the project's key `id` at once, on every replica (`DELETE /api-keys/{id}`,
/// `revoke_api_key`): 404 when it is not a key of the project or is revoked already.
pub async fn revoke_api_key(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<ApiKey, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let key = credentials::find_key(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("no API key of this project has this id"))?;
    let revoked = conn
        .transaction::<_, ApiError, _>(async |conn| {
            if key.revoked_at.is_some() || !store::revoke_api_key(conn, id).await? {
                return Ok(false);
            }
            notifications::add(
                conn,
                project_id,
                kind::API_KEY_REVOKED,
                &format!("API key \"{}\" was revoked", key.name),
                serde_json::json!({"key_id": key.id, "name": key.name, "scope": key.scope}),
            )
            .await?;
            Ok(true)
        })
        .await?;
    if !revoked {
        return Err(ApiError::not_found("this API key is revoked already"));
    }
    let revoked = credentials::find_key(&mut conn, project_id, id).await?;
    Ok(ApiKey::from(revoked.unwrap_or(key)))
}
