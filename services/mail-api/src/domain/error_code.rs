//! The machine-readable codes of mail-api's error envelope: one closed list, stated in the
//! OpenAPI document (`MailErrorCode`). Errors get theirs with `ApiError::with_code`; an error
//! given none shows its kind's (`http_kit::MailKindCode`).

http_kit::error_codes! {
    /// A machine-readable error code of the mail service.
    pub enum MailErrorCode {
        AbTestExists = "AB_TEST_EXISTS",
        AbTestNotFound = "AB_TEST_NOT_FOUND",
        AbTestPromoted = "AB_TEST_PROMOTED",
        AutomationNotActive = "AUTOMATION_NOT_ACTIVE",
        AutomationNotFound = "AUTOMATION_NOT_FOUND",
        ApprovalDecided = "APPROVAL_DECIDED",
        ApprovalExpired = "APPROVAL_EXPIRED",
        ApprovalNotFound = "APPROVAL_NOT_FOUND",
        BrokerUnavailable = "BROKER_UNAVAILABLE",
        CampaignClosed = "CAMPAIGN_CLOSED",
        CampaignNotActive = "CAMPAIGN_NOT_ACTIVE",
        CampaignNotFound = "CAMPAIGN_NOT_FOUND",
        CampaignNotReady = "CAMPAIGN_NOT_READY",
        CampaignTypeMismatch = "CAMPAIGN_TYPE_MISMATCH",
        CommerceSourceNotFound = "COMMERCE_SOURCE_NOT_FOUND",
        Conflict = "CONFLICT",
        ContactExists = "CONTACT_EXISTS",
        ContactNotFound = "CONTACT_NOT_FOUND",
        ContentBlockInUse = "CONTENT_BLOCK_IN_USE",
        ContentBlockNameTaken = "CONTENT_BLOCK_NAME_TAKEN",
        ContentBlockNotFound = "CONTENT_BLOCK_NOT_FOUND",
        ContentSourceExists = "CONTENT_SOURCE_EXISTS",
        ContentSourceNotFound = "CONTENT_SOURCE_NOT_FOUND",
        DeliveryPending = "DELIVERY_PENDING",
        DomainNotFound = "DOMAIN_NOT_FOUND",
        DomainNotVerified = "DOMAIN_NOT_VERIFIED",
        DomainTaken = "DOMAIN_TAKEN",
        DraftNotApproved = "DRAFT_NOT_APPROVED",
        DraftNotFound = "DRAFT_NOT_FOUND",
        DuplicateOrderId = "DUPLICATE_ORDER_ID",
        EmailNotFound = "EMAIL_NOT_FOUND",
        EnrollmentNotFound = "ENROLLMENT_NOT_FOUND",
        ExportBusy = "EXPORT_BUSY",
        ExportTooLarge = "EXPORT_TOO_LARGE",
        Forbidden = "FORBIDDEN",
        FormNotFound = "FORM_NOT_FOUND",
        IdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED",
        InternalError = "INTERNAL_ERROR",
        InvalidConfirmationToken = "INVALID_CONFIRMATION_TOKEN",
        InvalidSignature = "INVALID_SIGNATURE",
        InvalidTransition = "INVALID_TRANSITION",
        KeyBroaderThanCreator = "KEY_BROADER_THAN_CREATOR",
        LlmFailed = "LLM_FAILED",
        LlmInvalidOutput = "LLM_INVALID_OUTPUT",
        LlmInvalidRules = "LLM_INVALID_RULES",
        LlmNotConfigured = "LLM_NOT_CONFIGURED",
        MethodNotAllowed = "METHOD_NOT_ALLOWED",
        NotFound = "NOT_FOUND",
        PayloadTooLarge = "PAYLOAD_TOO_LARGE",
        PlanLimit = "PLAN_LIMIT",
        PlatformConnectionNotFound = "PLATFORM_CONNECTION_NOT_FOUND",
        PlatformImportNotFound = "PLATFORM_IMPORT_NOT_FOUND",
        PlatformRefused = "PLATFORM_REFUSED",
        PlatformTriggerNotFound = "PLATFORM_TRIGGER_NOT_FOUND",
        ProjectNotFound = "PROJECT_NOT_FOUND",
        ProviderRejected = "PROVIDER_REJECTED",
        RateLimited = "RATE_LIMITED",
        SegmentNotFound = "SEGMENT_NOT_FOUND",
        SenderSuspended = "SENDER_SUSPENDED",
        ServiceUnavailable = "SERVICE_UNAVAILABLE",
        SiteNotFound = "SITE_NOT_FOUND",
        SlugTaken = "SLUG_TAKEN",
        SmsNoConsent = "SMS_NO_CONSENT",
        SmsProviderNotConfigured = "SMS_PROVIDER_NOT_CONFIGURED",
        SocialAccountNotConnected = "SOCIAL_ACCOUNT_NOT_CONNECTED",
        SocialCampaignNotFound = "SOCIAL_CAMPAIGN_NOT_FOUND",
        SocialConnectStateInvalid = "SOCIAL_CONNECT_STATE_INVALID",
        SocialPlatformNotConfigured = "SOCIAL_PLATFORM_NOT_CONFIGURED",
        SocialPlatformRefused = "SOCIAL_PLATFORM_REFUSED",
        SocialPostNotFound = "SOCIAL_POST_NOT_FOUND",
        StepNotFound = "STEP_NOT_FOUND",
        SuppressedContact = "SUPPRESSED_CONTACT",
        TeamMemberExists = "TEAM_MEMBER_EXISTS",
        TemplateInUse = "TEMPLATE_IN_USE",
        TemplateNotFound = "TEMPLATE_NOT_FOUND",
        TemplateSyntax = "TEMPLATE_SYNTAX",
        ToolGroupForbidden = "TOOL_GROUP_FORBIDDEN",
        ToolNotFound = "TOOL_NOT_FOUND",
        TooManySteps = "TOO_MANY_STEPS",
        Unauthorized = "UNAUTHORIZED",
        Unprocessable = "UNPROCESSABLE",
        ValidationError = "VALIDATION_ERROR",
        WarmupNotActive = "WARMUP_NOT_ACTIVE",
        WebhookDeliveryNotFound = "WEBHOOK_DELIVERY_NOT_FOUND",
        WebhookSubscriptionNotFound = "WEBHOOK_SUBSCRIPTION_NOT_FOUND",
    }
}

#[cfg(test)]
mod tests {
    use http_kit::ErrorCode;

    use super::MailErrorCode;

    fn listed(code: &str) -> bool {
        MailErrorCode::ALL
            .iter()
            .any(|listed| listed.as_str() == code)
    }

    #[test]
    fn the_list_holds_every_code_the_envelope_and_the_model_client_give() {
        for code in http_kit::MailKindCode::ALL {
            assert!(listed(code.as_str()), "{} is not listed", code.as_str());
        }
        for code in llm::LlmErrorCode::ALL {
            assert!(listed(code.as_str()), "{} is not listed", code.as_str());
        }
    }
}
