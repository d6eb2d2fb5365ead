//! The sms group: texts through the project's provider. Each handler calls the function of
//! its route in `http::sms`.

use http_kit::PageParams;
use rate_limit::policy::RouteClass;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, NoArguments, Paged, Params, Tool, declare};
use crate::ops::approvals::gate::send_sms_campaign_gated;
use crate::ops::idempotency::IdempotencyKey;
use crate::ops::sms::{
    SendSmsCampaign, SendSmsRequest, SetContactSmsConsent, SmsCostRequest, SmsLogFilter,
    get_sms_provider_status, list_sms_inbound, list_sms_log, preview_sms_cost, send_sms,
    set_contact_sms_consent,
};

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "get_sms_provider_status",
            Group::Sms,
            "The project's SMS provider (Twilio): whether one is configured, its account SID \
             and sending number (never the auth token), whether Twilio accepts the \
             credentials now, the inbound and status callback URLs to give Twilio, and the \
             last 24 hours' texts by status.",
        )
        .reads(|ctx, NoArguments| async move {
            get_sms_provider_status(&ctx.state, ctx.project_id()).await
        }),
        declare(
            "list_sms_inbound",
            Group::Sms,
            "List the texts the project's number received, oldest first, a page at a time; \
             each says whether it was a STOP, START or HELP keyword.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_sms_inbound(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "list_sms_log",
            Group::Sms,
            "List the project's texts, oldest first, a page at a time (optionally one \
             campaign_id's, one contact_id's or one status's): number, body, encoding, \
             segments, status, why it waits or failed, and Twilio's SID.",
        )
        .reads(|ctx, Paged(page, filter): Paged<SmsLogFilter>| async move {
            let page: PageParams = page;
            list_sms_log(&ctx.state, ctx.project_id(), &page, &filter).await
        }),
        declare(
            "preview_sms_cost",
            Group::Sms,
            "Count a text's segments as carriers do (GSM-7 with its extension table: 160 \
             septets alone, 153 per part; else UCS-2: 70 units alone, 67 per part, emoji two \
             units) and price them for a destination number (to) or country from the \
             deployment's price table.",
        )
        .reads(|ctx, Body(req): Body<SmsCostRequest>| async move {
            Ok::<_, http_kit::ApiError>(preview_sms_cost(&ctx.state, &req))
        })
        .counted_as(RouteClass::Write),
        declare(
            "send_sms",
            Group::Sms,
            "Text one contact that consented, by contact_id or by its number (to; exactly \
             one of them). Queued and sent once by the worker through the project's provider; \
             an idempotency_key makes retries answer the same text. Answers 422 \
             SMS_NO_CONSENT for a number without consent.",
        )
        .sends(|ctx, Body(req): Body<SendSmsRequest>| async move {
            send_sms(&ctx.state, ctx.project_id(), &req)
                .await
                .map(|sent| sent.message)
        }),
        declare(
            "send_sms_campaign",
            Group::Sms,
            "Text a site's subscribers whose number consented, each once; a contact in its \
             quiet hours (in its time zone) gets the text when they end. An agent's campaign \
             waits for a person's approval like a campaign launch (answers the approval).",
        )
        .sends(|ctx, Body(req): Body<SendSmsCampaign>| async move {
            let key = IdempotencyKey::default();
            let view = ctx.state.gates.view(None);
            send_sms_campaign_gated(&ctx.state, view, &ctx.caller, &key, &req)
                .await
                .map(crate::ops::idempotency::Answer::into_body)
        }),
        declare(
            "set_contact_sms_consent",
            Group::Sms,
            "Set a contact's SMS consent (status granted or revoked), and its mobile number \
             (phone, international format; required the first time) and time zone for quiet \
             hours. Only contacts with consent are texted; a STOP texted back revokes it.",
        )
        .writes(|ctx, Body(args): Body<SetContactSmsConsent>| async move {
            let req = args.request();
            set_contact_sms_consent(&ctx.state, ctx.project_id(), args.contact_id, &req).await
        }),
    ]
}
