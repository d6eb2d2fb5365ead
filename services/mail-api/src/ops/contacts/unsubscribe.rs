//! Unsubscribing an address from one site, or from every site and suppressing it
//! (`POST /contacts/unsubscribe`, `unsubscribe_subscriber`).

use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{ContactKey, find_contact};
use crate::AppState;
use crate::db::{contact_tools, contacts};
use crate::flows;
use crate::ops::input::normalize_email;

fn unsubscribe_site_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "Unsubscribe from this site of the project only (404 `SITE_NOT_FOUND` otherwise; the \
         address must be a contact's, 404 `CONTACT_NOT_FOUND`). Absent: from every site, and \
         the address is suppressed (reason `unsubscribed`), as the one-click link does.",
    )
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UnsubscribeContact {
    /// Required; matched in its stored form (trimmed, lowercased).
    #[schema(format = Email)]
    pub email: String,
    #[schema(schema_with = unsubscribe_site_schema)]
    pub site_id: Option<Uuid>,
}

impl Validate for UnsubscribeContact {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContactUnsubscribed {
    pub email: String,
    /// The project's contact with this address; null when there is none (the address is
    /// suppressed all the same).
    pub contact_id: Option<Uuid>,
    /// The sites whose subscription this call ended (empty when none was live).
    pub unsubscribed_site_ids: Vec<Uuid>,
    /// Whether the project suppresses the address now.
    pub suppressed: bool,
}

/// Unsubscribes an address from one site or from all (`POST /contacts/unsubscribe`,
/// `unsubscribe_subscriber`).
pub async fn unsubscribe_contact(
    state: &AppState,
    project_id: Uuid,
    req: &UnsubscribeContact,
) -> Result<ContactUnsubscribed, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let address = req.email.as_str();
        let (contact_id, sites) = match req.site_id {
            Some(site_id) => {
                flows::require_site(conn, project_id, site_id).await?;
                let contact =
                    find_contact(conn, project_id, &ContactKey::Email(address.to_owned())).await?;
                let sites =
                    contact_tools::unsubscribe(conn, project_id, address, Some(site_id)).await?;
                (Some(contact.id), sites)
            }
            None => {
                let (_, sites) = flows::unsubscribe_everywhere(
                    conn,
                    project_id,
                    address,
                    "unsubscribed through the API",
                )
                .await?;
                let contact = contacts::find_by_email(conn, project_id, address).await?;
                (contact.map(|c| c.id), sites)
            }
        };
        let suppressed = !contact_tools::suppressed_among(conn, project_id, &[address.to_owned()])
            .await?
            .is_empty();
        Ok(ContactUnsubscribed {
            email: address.to_owned(),
            contact_id,
            unsubscribed_site_ids: sites,
            suppressed,
        })
    })
    .await
}
