//! Conversions and their attribution to email. `revenue` is `numeric` in the table (sums stay
//! exact); it crosses the wire as float8.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Double, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::sql;

/// The rule that attributed a conversion (ruled cascade, first match wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The contact's most recent click within 72 hours.
    Click,
    /// Else the most recent open within 72 hours.
    Open,
    /// Else the most recent email sent within 7 days.
    Send,
    Unattributed,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Click => "click",
            Self::Open => "open",
            Self::Send => "send",
            Self::Unattributed => "unattributed",
        }
    }
}

#[derive(QueryableByName)]
struct Touch {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    campaign_id: Option<Uuid>,
    #[diesel(sql_type = Text)]
    rule: String,
}

/// The email a conversion of `contact_id` at `at` is attributed to.
pub async fn attribute(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    at: DateTime<Utc>,
) -> QueryResult<(Rule, Option<(Uuid, Option<Uuid>)>)> {
    // Each branch reads the contact's few log rows through email_log_contact_idx.
    let touch: Option<Touch> = diesel::sql_query(sql::conversions::ATTRIBUTE)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(contact_id)
        .bind::<Timestamptz, _>(at)
        .get_result(conn)
        .await
        .optional()?;
    Ok(match touch {
        None => (Rule::Unattributed, None),
        Some(t) => {
            let rule = match t.rule.as_str() {
                "click" => Rule::Click,
                "open" => Rule::Open,
                _ => Rule::Send,
            };
            (rule, Some((t.id, t.campaign_id)))
        }
    })
}

pub struct NewConversion<'a> {
    pub project_id: Uuid,
    pub contact_id: Uuid,
    pub email_log_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub event: &'a str,
    pub revenue: f64,
    pub currency: &'a str,
    pub order_id: Option<&'a str>,
    pub metadata: &'a Value,
    pub rule: Rule,
    pub at: DateTime<Utc>,
}

#[derive(Debug, QueryableByName)]
pub struct Conversion {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub contact_id: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub email_log_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub campaign_id: Option<Uuid>,
    #[diesel(sql_type = Text)]
    pub event: String,
    #[diesel(sql_type = Double)]
    pub revenue: f64,
    #[diesel(sql_type = Text)]
    pub currency: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub order_id: Option<String>,
    #[diesel(sql_type = Text)]
    pub attribution: String,
    #[diesel(sql_type = Timestamptz)]
    pub attributed_at: DateTime<Utc>,
}

/// Records the conversion; `None` when the project already has one with this `order_id`.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    new: NewConversion<'_>,
) -> QueryResult<Option<Conversion>> {
    diesel::sql_query(sql::conversions::INSERT)
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .bind::<SqlUuid, _>(new.project_id)
        .bind::<SqlUuid, _>(new.contact_id)
        .bind::<Nullable<SqlUuid>, _>(new.email_log_id)
        .bind::<Nullable<SqlUuid>, _>(new.campaign_id)
        .bind::<Text, _>(new.event)
        .bind::<Double, _>(new.revenue)
        .bind::<Text, _>(new.currency)
        .bind::<Nullable<Text>, _>(new.order_id)
        .bind::<Jsonb, _>(new.metadata)
        .bind::<Text, _>(new.rule.as_str())
        .bind::<Timestamptz, _>(new.at)
        .get_result(conn)
        .await
        .optional()
}
