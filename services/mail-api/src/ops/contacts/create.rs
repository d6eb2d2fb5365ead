//! Creating contacts: the one write every creation goes through ([`create_contact`], counted
//! against the plan's contact limit), `POST /contacts` and `add_subscriber`
//! ([`insert_contact`]), and `/identify` ([`identify`]: create or update, by email).

use auth::Caller;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::request::{trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Validate};
use rate_limit::policy::Plan;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{Contact, ContactAttribution};
use crate::db::contacts::{self, ContactData};
use crate::db::usage;
use crate::domain::error_code::MailErrorCode;
use crate::domain::plans;
use crate::flows;
use crate::ops::input::{normalize_email, optional_site_schema, tags_schema};

/// The project holds as many contacts as its plan allows: 422 `PLAN_LIMIT` as an answer.
#[derive(Debug, Clone, Copy)]
pub struct ContactLimitReached {
    pub plan: Plan,
    pub limit: i64,
}

impl From<ContactLimitReached> for ApiError {
    fn from(reached: ContactLimitReached) -> Self {
        let ContactLimitReached { plan, limit } = reached;
        ApiError::unprocessable(format!(
            "contact limit reached: the {plan} plan allows {limit} contacts"
        ))
        .with_code(MailErrorCode::PlanLimit)
        .with_details(serde_json::json!({"limit": "contacts", "plan": plan.as_str(), "max": limit}))
    }
}

/// Why [`create_contact`] failed: the plan's limit (the caller's transaction or savepoint
/// must roll back, taking the inserted row with it), or anything else.
#[derive(Debug)]
pub enum CreateError {
    LimitReached(ContactLimitReached),
    Failed(ApiError),
}

impl From<ApiError> for CreateError {
    fn from(err: ApiError) -> Self {
        Self::Failed(err)
    }
}

impl From<diesel::result::Error> for CreateError {
    fn from(err: diesel::result::Error) -> Self {
        Self::Failed(err.into())
    }
}

impl From<CreateError> for ApiError {
    fn from(err: CreateError) -> Self {
        match err {
            CreateError::LimitReached(reached) => reached.into(),
            CreateError::Failed(err) => err,
        }
    }
}

/// Creates the contact, counted against the plan's contact limit
/// ([`CreateError::LimitReached`] at the limit: roll back); `None` when the project already
/// has this email (the existing row is left alone).
pub async fn create_contact(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    email: &str,
    source: &str,
    data: &ContactData<'_>,
) -> Result<Option<contacts::Contact>, CreateError> {
    let plan = flows::plan_of(caller);
    create_contact_in(conn, caller.owner_id, plan, email, source, data).await
}

/// [`create_contact`] for a project named by id and plan (a signup has no caller).
pub async fn create_contact_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    plan: Plan,
    email: &str,
    source: &str,
    data: &ContactData<'_>,
) -> Result<Option<contacts::Contact>, CreateError> {
    let Some(contact) = contacts::insert(conn, project_id, email, source, data).await? else {
        return Ok(None);
    };
    let limit = plans::contact_limit(plan);
    if !usage::add_contact(conn, project_id, limit).await? {
        return Err(CreateError::LimitReached(ContactLimitReached {
            plan,
            limit: limit.unwrap_or(i64::MAX),
        }));
    }
    Ok(Some(contact))
}

/// The contact with this email, created with nothing but the email when missing
/// (`contact_created` of `/events`).
pub async fn find_or_create_minimal(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    email: &str,
) -> Result<(contacts::Contact, bool), ApiError> {
    if let Some(contact) =
        create_contact(conn, caller, email, "api", &ContactData::default()).await?
    {
        return Ok((contact, true));
    }
    let contact = contacts::find_by_email(conn, caller.owner_id, email)
        .await?
        .ok_or_else(|| ApiError::internal("a contact vanished between insert and read"))?;
    Ok((contact, false))
}

// ---- POST /contacts ----------------------------------------------------------------------

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateContact {
    /// Required; stored trimmed and lowercased.
    #[schema(format = Email)]
    pub email: String,
    /// At most 200 characters, trimmed (blank is absent).
    #[schema(max_length = 200)]
    pub first_name: Option<String>,
    /// As `first_name`.
    #[schema(max_length = 200)]
    pub last_name: Option<String>,
    /// A site of the project; see `optional_site_schema`.
    #[schema(schema_with = optional_site_schema)]
    pub site_id: Option<Uuid>,
    /// Each 1..=100 characters, at most 100; duplicates dropped.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// Free-form object, stored as given.
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Value>,
    /// Attribution fields, each at most 500 characters.
    #[serde(flatten)]
    pub attribution: ContactAttribution,
}

impl Validate for CreateContact {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        trim_optional(&mut self.first_name);
        trim_optional(&mut self.last_name);
        trim_and_dedupe(&mut self.tags);
        self.attribution.trim();
        Ok(())
    }
}

/// Creates a contact (`POST /contacts`, `add_subscriber`): 409 `CONTACT_EXISTS` when the
/// email is the project's already.
pub async fn insert_contact(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    req: &CreateContact,
) -> Result<Contact, ApiError> {
    let project_id = caller.owner_id;
    if let Some(site_id) = req.site_id {
        flows::require_site(conn, project_id, site_id).await?;
    }
    let attribution = serde_json::to_value(&req.attribution)?;
    let attribution = strip_nulls(attribution);
    let data = ContactData {
        first_name: req.first_name.as_deref(),
        last_name: req.last_name.as_deref(),
        properties: req.properties.as_ref(),
        tags: &req.tags,
        attribution: Some(&attribution),
    };
    let Some(row) = create_contact(conn, caller, &req.email, "contacts", &data).await? else {
        let existing = contacts::find_by_email(conn, project_id, &req.email).await?;
        return Err(ApiError::conflict("a contact with this email exists")
            .with_code(MailErrorCode::ContactExists)
            .with_details(serde_json::json!({
                "contact_id": existing.map(|c| c.id),
            })));
    };
    let mut site_ids = Vec::new();
    if let Some(site_id) = req.site_id {
        flows::join_site(conn, project_id, row.id, site_id, true).await?;
        site_ids.push(site_id);
    }
    Ok(Contact::new(row, site_ids))
}

/// `add_subscriber`: [`insert_contact`] on a connection of its own.
pub async fn add_contact(
    pool: &Pool,
    caller: &Caller,
    req: &CreateContact,
) -> Result<Contact, ApiError> {
    let mut conn = store::conn(pool).await?;
    insert_contact(&mut conn, caller, req).await
}

fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

// ---- POST /identify ----------------------------------------------------------------------

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IdentifyRequest {
    /// Required. Stored trimmed and lowercased; it identifies the contact in the project.
    #[schema(format = Email)]
    pub email: String,
    /// Replaces the stored value only when a non-empty string is given (at most 200
    /// characters, trimmed).
    #[schema(max_length = 200)]
    pub first_name: Option<String>,
    /// As `first_name`.
    #[schema(max_length = 200)]
    pub last_name: Option<String>,
    /// Deep-merged into the stored properties: new keys are added, keys given again are
    /// replaced (objects merge key by key), keys not given are kept.
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Value>,
    /// Appended to the stored tags in order; tags already present are not repeated. Each tag
    /// 1..=100 characters, at most 100 per request.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// A site of the project; see `optional_site_schema`.
    #[schema(schema_with = optional_site_schema)]
    pub site_id: Option<Uuid>,
}

impl Validate for IdentifyRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        trim_optional(&mut self.first_name);
        trim_optional(&mut self.last_name);
        trim_and_dedupe(&mut self.tags);
        Ok(())
    }
}

impl IdentifyRequest {
    fn data(&self) -> ContactData<'_> {
        ContactData {
            first_name: self.first_name.as_deref(),
            last_name: self.last_name.as_deref(),
            properties: self.properties.as_ref(),
            tags: &self.tags,
            attribution: None,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Identified {
    pub contact_id: Uuid,
    /// `true` when this call created the contact (status 201).
    pub created: bool,
}

/// Creates or updates the contact of `req.email` (`POST /identify`), in one transaction.
pub async fn identify(
    pool: &Pool,
    caller: &Caller,
    req: &IdentifyRequest,
) -> Result<Identified, ApiError> {
    let plan = flows::plan_of(caller);
    let mut conn = store::conn(pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        identify_in(conn, caller.owner_id, plan, "identify", req).await
    })
    .await
}

/// [`identify`] in the caller's transaction, for a project named by id and plan; a contact
/// it creates has `source`.
pub async fn identify_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    plan: Plan,
    source: &str,
    req: &IdentifyRequest,
) -> Result<Identified, ApiError> {
    if let Some(site_id) = req.site_id {
        flows::require_site(conn, project_id, site_id).await?;
    }
    let data = req.data();
    let (contact, created) =
        match create_contact_in(conn, project_id, plan, &req.email, source, &data).await? {
            Some(contact) => (contact, true),
            None => {
                let merged = contacts::merge(conn, project_id, &req.email, &data)
                    .await?
                    .ok_or_else(|| ApiError::internal("identify: the contact vanished"))?;
                (merged, false)
            }
        };
    if let Some(site_id) = req.site_id {
        flows::join_site(conn, project_id, contact.id, site_id, created).await?;
    }
    Ok(Identified {
        contact_id: contact.id,
        created,
    })
}
