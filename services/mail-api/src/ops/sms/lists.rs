//! The SMS log and the inbound texts.

use super::*;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SmsLogFilter {
    /// Only this SMS campaign's texts.
    pub campaign_id: Option<Uuid>,
    /// Only texts to this contact.
    pub contact_id: Option<Uuid>,
    /// Only texts in this status.
    #[param(inline)]
    pub status: Option<SmsStatus>,
}

impl Validate for SmsLogFilter {}

/// The project's texts, oldest first (`GET /sms/log`, `list_sms_log`).
pub async fn list_sms_log(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &SmsLogFilter,
) -> Result<Page<SmsMessage>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let filter = LogFilter {
        campaign_id: filter.campaign_id,
        contact_id: filter.contact_id,
        status: filter.status.map(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        }),
    };
    let rows =
        db::list_messages(&mut conn, project_id, &filter, after, i64::from(limit) + 1).await?;
    let rows = rows.into_iter().map(SmsMessage::from).collect();
    Ok(Page::from_rows(rows, limit, |m| m.id))
}

/// A text received.
#[derive(Debug, Serialize, ToSchema)]
pub struct SmsInboundMessage {
    pub id: Uuid,
    /// Twilio's message SID.
    pub message_sid: String,
    pub from: String,
    pub to: String,
    pub body: String,
    /// `stop`, `start` or `help` when the text was one of their keywords (and changed the
    /// consent of the contacts with the number, or was answered).
    pub keyword: Option<String>,
    pub received_at: DateTime<Utc>,
}

/// The texts the project's number received, oldest first (`GET /sms/inbound`,
/// `list_sms_inbound`).
pub async fn list_sms_inbound(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<SmsInboundMessage>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = db::list_inbound(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(|r| SmsInboundMessage {
            id: r.id,
            message_sid: r.message_sid,
            from: r.from_phone,
            to: r.to_phone,
            body: r.body,
            keyword: r.keyword,
            received_at: r.received_at,
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |m| m.id))
}
