//! Signup forms: creating, listing, reading and deleting them and their numbers (this module),
//! the signed values of their pages and links ([`links`]), the embeddable snippet
//! ([`snippet`]), and what the public page and its posts do ([`signup`]).

pub mod links;
pub mod signup;
pub mod snippet;

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use http_kit::request::{trim, trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::forms::{self, NewForm};
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use crate::ops::input::tags_schema;

/// How many fields a form may ask for besides the address.
pub const FIELDS_MAX: usize = 20;
/// Field names the page itself uses: the address, the honeypot and the render stamp.
pub const RESERVED_FIELDS: &[&str] = &[signup::EMAIL, signup::HONEYPOT, signup::STAMP];

/// A field a form asks for besides the address (always asked, and required).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FormField {
    /// 1..=40 characters: a lowercase letter, then lowercase letters, digits or `_`; unique in
    /// the form, and none of `email`, `website` and `rendered` (the page's own). `first_name`
    /// and `last_name` fill the contact's names; any other is stored in its `properties`.
    #[schema(min_length = 1, max_length = 40, pattern = "^[a-z][a-z0-9_]*$")]
    pub name: String,
    /// The text next to the input, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub label: String,
    /// Default false (null too): a required field left blank sends the page back with a
    /// message.
    #[serde(default)]
    #[schema(required = false, default = false, value_type = Option<bool>)]
    pub required: bool,
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateForm {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): confirmed signups are subscribed
    /// to it, and the confirmation email is sent as it.
    pub site_id: Uuid,
    /// 1..=200 characters, not blank (stored trimmed): the page's title.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// The fields asked besides the address, in page order, at most 20, names unique (null
    /// or absent: none).
    #[serde(default)]
    #[schema(required = false, max_items = 20, value_type = Option<Vec<FormField>>)]
    pub fields: Vec<FormField>,
    /// Added to the contact's tags when the signup is confirmed; each 1..=100 characters, at
    /// most 100, duplicates dropped.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// The consent shown above the button and recorded with each signup, 1..=1000 characters
    /// (stored trimmed); default: "I agree to receive emails from <site name>. I can
    /// unsubscribe at any time."
    #[schema(min_length = 1, max_length = 1000, pattern = r"[^\s\x85\uFEFF]")]
    pub consent_text: Option<String>,
}

impl Validate for CreateForm {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        trim_and_dedupe(&mut self.tags);
        trim_optional(&mut self.consent_text);
        let mut seen = HashSet::new();
        for (i, field) in self.fields.iter_mut().enumerate() {
            trim(&mut field.label);
            if RESERVED_FIELDS.contains(&field.name.as_str()) {
                return Err(ApiError::invalid_field(
                    &format!("fields[{i}].name"),
                    "is one of the page's own fields (email, website, rendered)",
                ));
            }
            if !seen.insert(field.name.clone()) {
                return Err(ApiError::invalid_field(
                    &format!("fields[{i}].name"),
                    "is the name of an earlier field",
                ));
            }
        }
        Ok(())
    }
}

/// A signup form.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignupForm {
    pub id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    pub fields: Vec<FormField>,
    pub tags: Vec<String>,
    pub consent_text: String,
    /// The hosted page (public).
    pub url: String,
    /// An HTML form to paste into a page: it posts to the hosted page's address, which asks
    /// the person to check and send their details once more (the page carries the render
    /// time the minimum fill time is measured from).
    pub embed_html: String,
    pub created_at: DateTime<Utc>,
}

impl SignupForm {
    fn new(state: &AppState, row: forms::Form) -> Self {
        let fields = fields_of(&row);
        let url = state.form_links.form_url(row.id);
        let embed_html = snippet::embed_html(&url, &fields, &row.consent_text);
        Self {
            id: row.id,
            site_id: row.site_id,
            name: row.name,
            fields,
            tags: row.tags,
            consent_text: row.consent_text,
            url,
            embed_html,
            created_at: row.created_at,
        }
    }
}

/// The fields stored with a form.
pub(crate) fn fields_of(row: &forms::Form) -> Vec<FormField> {
    serde_json::from_value(row.fields.clone()).unwrap_or_default()
}

pub fn form_not_found() -> ApiError {
    ApiError::not_found("no such form").with_code(MailErrorCode::FormNotFound)
}

/// Creates a form (`POST /forms`, `create_form`).
pub async fn create_form(
    state: &AppState,
    project_id: Uuid,
    req: &CreateForm,
) -> Result<SignupForm, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let site = crate::db::sites::get(&mut conn, project_id, req.site_id)
        .await?
        .ok_or_else(|| flows::site_not_found(req.site_id))?;
    let consent_text = req.consent_text.clone().unwrap_or_else(|| {
        format!(
            "I agree to receive emails from {}. I can unsubscribe at any time.",
            site.name
        )
    });
    let fields = serde_json::to_value(&req.fields)?;
    let row = forms::insert(
        &mut conn,
        &NewForm {
            id: Uuid::now_v7(),
            project_id,
            site_id: req.site_id,
            name: &req.name,
            fields: &fields,
            tags: &req.tags,
            consent_text: &consent_text,
            created_at: Utc::now(),
        },
    )
    .await?;
    Ok(SignupForm::new(state, row))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FormFilter {
    /// Only this site's forms (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
}

impl Validate for FormFilter {}

/// A page of the project's forms, oldest first (`GET /forms`, `list_forms`).
pub async fn list_forms(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &FormFilter,
) -> Result<Page<SignupForm>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = filter.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let rows = forms::list(
        &mut conn,
        project_id,
        filter.site_id,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(|row| SignupForm::new(state, row))
        .collect();
    Ok(Page::from_rows(rows, limit, |f| f.id))
}

/// The project's form `id` (`GET /forms/{id}`): 404 `FORM_NOT_FOUND` otherwise.
pub async fn get_form(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<SignupForm, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = forms::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(form_not_found)?;
    Ok(SignupForm::new(state, row))
}

/// Deletes the project's form `id` and its signups (`DELETE /forms/{id}`); contacts already
/// confirmed stay.
pub async fn delete_form(state: &AppState, project_id: Uuid, id: Uuid) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if !forms::delete(&mut conn, project_id, id).await? {
        return Err(form_not_found());
    }
    Ok(())
}

/// Posts refused before anything was stored, by reason.
#[derive(Debug, Serialize, ToSchema)]
pub struct FormRefusals {
    /// The hidden field a person never sees was filled.
    pub honeypot: i64,
    /// Sent less than a second after the page was rendered.
    pub too_fast: i64,
    /// Past the per-address or per-IP limit.
    pub rate_limited: i64,
    pub total: i64,
}

/// A form's numbers.
#[derive(Debug, Serialize, ToSchema)]
pub struct FormStats {
    pub form_id: Uuid,
    /// Renders of the hosted page.
    pub views: i64,
    /// Signups taken (a confirmation email was sent for each).
    pub submissions: i64,
    /// Signups whose address was confirmed (the contact subscribed).
    pub confirmations: i64,
    pub refusals: FormRefusals,
    /// `confirmations / views`, 0 without views.
    #[schema(minimum = 0.0)]
    pub conversion_rate: f64,
    /// `confirmations / submissions`, 0 without submissions.
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub confirmation_rate: f64,
}

fn ratio(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The numbers of the project's form `id` (`GET /forms/{id}/stats`, `get_form_stats`).
pub async fn form_stats(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<FormStats, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = forms::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(form_not_found)?;
    let (submissions, confirmations) = forms::submission_counts(&mut conn, project_id, id).await?;
    let total = row.refused_honeypot + row.refused_too_fast + row.refused_rate_limited;
    Ok(FormStats {
        form_id: row.id,
        views: row.views,
        submissions,
        confirmations,
        refusals: FormRefusals {
            honeypot: row.refused_honeypot,
            too_fast: row.refused_too_fast,
            rate_limited: row.refused_rate_limited,
            total,
        },
        conversion_rate: ratio(confirmations, row.views),
        confirmation_rate: ratio(confirmations, submissions),
    })
}
