//! The raw statements of this service's `db` modules, each in `sql/<module>/<name>.sql` and read
//! at build time; `statements()` lists them all for the test that prepares each one against the
//! migrated schema (`tests/api/sql.rs`). A new file is declared here (that test fails on a file
//! not declared). See docs/CONTRIBUTING.md, "Add a raw SQL statement".

/// A `SCORE_CONTRIBUTIONS` fragment, given the test of whose emails and conversions count.
macro_rules! score_contributions {
    ($email_contacts:literal, $conversion_contacts:literal) => {
        concat!(
            "SELECT e.contact_id, ev.kind, min(ev.created_at) AS at, e.id AS email_log_id, \
                    NULL::uuid AS conversion_id \
               FROM email_log e \
               JOIN email_events ev ON ev.project_id = e.project_id AND ev.email_log_id = e.id \
              WHERE e.project_id = $1::uuid AND e.contact_id IS NOT NULL AND ",
            $email_contacts,
            " AND ev.kind IN ('opened', 'clicked', 'unsubscribed', 'bounced', 'complained') \
              GROUP BY e.contact_id, e.id, ev.kind \
             UNION ALL \
             SELECT c.contact_id, 'converted', c.attributed_at, c.email_log_id, c.id \
               FROM conversions c \
              WHERE c.project_id = $1 AND c.contact_id IS NOT NULL AND ",
            $conversion_contacts
        )
    };
}

/// Fragments several statements (and the Rust code assembling others) share: a statement file
/// names one as `{NAME}`, filled when the statement is rendered.
pub mod fragments {
    /// The delivery counts of a set of email log rows. A row's `status` is its latest state, so
    /// each count says how many emails reached at least that state.
    pub const DELIVERY_COUNTS: &str = "\
        count(*) FILTER (WHERE status IN ('sent', 'delivered', 'opened', 'clicked', 'bounced', \
                                          'complained')) AS sent, \
        count(*) FILTER (WHERE status IN ('delivered', 'opened', 'clicked', 'complained')) AS delivered, \
        count(*) FILTER (WHERE status IN ('opened', 'clicked') \
                            OR (open_count > 0 AND status NOT IN ('bounced', 'failed', 'suppressed'))) \
            AS opened, \
        count(*) FILTER (WHERE status = 'clicked' \
                            OR (last_clicked_at IS NOT NULL \
                                AND status NOT IN ('bounced', 'failed', 'suppressed'))) AS clicked, \
        count(*) FILTER (WHERE status = 'bounced') AS bounced, \
        count(*) FILTER (WHERE status = 'complained') AS complained";

    pub const CONVERSION_SCOPE: &str = "\
        v.project_id = $1 AND v.attributed_at >= $2 AND v.attributed_at < $3 \
        AND ($4::uuid IS NULL OR EXISTS ( \
            SELECT 1 FROM email_log l \
             WHERE l.project_id = v.project_id AND l.id = v.email_log_id AND l.site_id = $4)) \
        AND ($5::uuid IS NULL OR v.campaign_id = $5)";

    /// The projected sends of the project (`$1`), of one site when `$2` is not null: rows
    /// `(campaign_id, step_order, subject, due)`.
    pub const PROJECTED: &str = "\
        WITH enrolled AS ( \
          SELECT e.campaign_id, e.current_step, \
                 coalesce(e.next_step_at, now() + coalesce(next_step_delay(e.campaign_id, \
                   e.current_step), 0) * interval '1 minute') AS first_due \
          FROM enrollments e JOIN campaigns c ON c.id = e.campaign_id \
          WHERE e.project_id = $1 AND e.status = 'active' AND c.status = 'active' \
            AND ($2::uuid IS NULL OR c.site_id = $2)), \
        steps AS ( \
          SELECT campaign_id, step_order, subject, \
                 sum(delay_minutes) OVER (PARTITION BY campaign_id ORDER BY step_order) AS reach \
          FROM campaign_steps WHERE project_id = $1), \
        projected AS ( \
          SELECT s.campaign_id, s.step_order, s.subject, \
                 e.first_due + (s.reach - f.reach) * interval '1 minute' AS due \
          FROM enrolled e \
          JOIN steps f ON f.campaign_id = e.campaign_id AND f.step_order = e.current_step + 1 \
          JOIN steps s ON s.campaign_id = e.campaign_id AND s.step_order > e.current_step \
          UNION ALL \
          SELECT l.campaign_id, st.step_order, l.subject, \
                 CASE WHEN isfinite(l.held_until) THEN greatest(l.held_until, now()) \
                      ELSE now() END AS due \
          FROM email_log l LEFT JOIN campaign_steps st ON st.id = l.step_id \
          WHERE l.project_id = $1 AND l.held_until IS NOT NULL AND l.held_until < 'infinity' \
            AND l.campaign_id IS NOT NULL AND ($2::uuid IS NULL OR l.site_id = $2))";

    /// The first step is due `delay_minutes` of step 1 after enrollment (now, without steps).
    pub const FIRST_DUE: &str =
        "now() + (SELECT coalesce(next_step_delay($2, 0), 0)) * interval '1 minute'";

    /// What counts toward the scores of the project's (`$1`) contacts, of one when `$2` is not
    /// null: rows `(contact_id, kind, at, email_log_id, conversion_id)`. An email counts once
    /// per kind of engagement (its first open, click, unsubscribe, bounce, complaint, however
    /// often the provider and the tracking links report it); every conversion of a contact counts
    /// (one recorded without a contact scores nobody).
    pub const SCORE_CONTRIBUTIONS: &str = score_contributions!(
        "($2::uuid IS NULL OR e.contact_id = $2)",
        "($2::uuid IS NULL OR c.contact_id = $2)"
    );

    /// [`SCORE_CONTRIBUTIONS`] of the one contact `$2`: a statement kept prepared gets a plan
    /// that reads that contact's rows by index, where the `$2 IS NULL` test would not let it.
    pub const CONTACT_SCORE_CONTRIBUTIONS: &str =
        score_contributions!("e.contact_id = $2", "c.contact_id = $2");

    /// What replaces an erased text (recipient, subject, clicked link) in the email log.
    pub const ERASED: &str = "[erased]";

    /// The emails of the project sent to the contact `$2` or to its address `$3`.
    pub const EMAILS: &str = "SELECT id FROM email_log \
                          WHERE project_id = $1 AND (contact_id = $2 OR to_email = $3)";

    /// The stored idempotent answers of the project (`$1`) naming the contact (`$2`), its address
    /// (`$3`, as a JSON string) or one of the emails `$4`.
    pub const IDEMPOTENT_ANSWERS: &str = "FROM idempotency_keys WHERE project_id = $1 \
        AND response_body IS NOT NULL \
        AND (strpos(response_body::text, $2::text) > 0 \
             OR strpos(response_body::text, to_json($3::text)::text) > 0 \
             OR EXISTS (SELECT 1 FROM unnest($4::uuid[]) e WHERE strpos(response_body::text, e::text) > 0))";
}

store::statements! {
    ab_tests {
        DUE_FOR_RULE = "due_for_rule";
        RELEASE_HELD = "release_held";
        TO_ASSIGN = "to_assign";
        UNASSIGNED = "unassigned";
        VARIANT_COUNTS = "variant_counts";
    }
    abuse_monitor {
        MEASURE = "measure";
    }
    advisor {
        ENGAGEMENT_SLOTS = "engagement_slots";
        PROVIDER_ERRORS = "provider_errors";
    }
    analytics {
        CAMPAIGN_STEPS = "campaign_steps" with {
            DELIVERY_COUNTS = crate::db::sql::fragments::DELIVERY_COUNTS,
        };
        CAMPAIGNS = "campaigns" with {
            DELIVERY_COUNTS = crate::db::sql::fragments::DELIVERY_COUNTS,
        };
        SITE_GROWTH = "site_growth";
        TOP_CAMPAIGNS = "top_campaigns" with {
            CONVERSION_SCOPE = crate::db::sql::fragments::CONVERSION_SCOPE,
        };
    }
    campaign_schedule {
        BY_DAY = "by_day" with {
            PROJECTED = crate::db::sql::fragments::PROJECTED,
        };
        UPCOMING = "upcoming" with {
            PROJECTED = crate::db::sql::fragments::PROJECTED,
        };
    }
    campaigns {
        CLONE_STEPS = "clone_steps";
    }
    chat_alerts {
        DUE = "due";
    }
    contact_tools {
        DUPLICATE_GROUPS = "duplicate_groups";
        PROPERTY_STATS = "property_stats";
        RECORDS_OF = "records_of";
        TIMELINE = "timeline";
    }
    conversions {
        ATTRIBUTE = "attribute";
        INSERT = "insert";
    }
    cron {
        RUNS = "runs";
    }
    enrollments {
        COUNT_SITE_SUBSCRIBERS = "count_site_subscribers";
        INSERT_MANY = "insert_many" with {
            FIRST_DUE = crate::db::sql::fragments::FIRST_DUE,
        };
        INSERT_SITE_SUBSCRIBERS = "insert_site_subscribers" with {
            FIRST_DUE = crate::db::sql::fragments::FIRST_DUE,
        };
    }
    gdpr {
        ERASE_EMAILS = "erase_emails" with {
            EMAILS = crate::db::sql::fragments::EMAILS,
            ERASED = crate::db::sql::fragments::ERASED,
        };
        PREVIEW = "preview" with {
            IDEMPOTENT_ANSWERS = crate::db::sql::fragments::IDEMPOTENT_ANSWERS,
        };
        RECORD_DELETION = "record_deletion";
    }
    hygiene {
        RECORD = "record";
        UPDATE_CONFIG = "update_config";
    }
    idempotency {
        CLAIM = "claim";
        PURGE_EXPIRED_BY_PROJECT = "purge_expired_by_project";
    }
    insights {
        CAMPAIGNS = "campaigns" with {
            DELIVERY_COUNTS = crate::db::sql::fragments::DELIVERY_COUNTS,
        };
        DEAD_EMAILS = "dead_emails";
        EVENTS = "events";
        HOLDINGS = "holdings";
        OPEN_SLOTS = "open_slots";
        PROJECT_DELIVERY = "project_delivery" with {
            DELIVERY_COUNTS = crate::db::sql::fragments::DELIVERY_COUNTS,
        };
        RECENCY = "recency";
        SITES = "sites" with {
            DELIVERY_COUNTS = crate::db::sql::fragments::DELIVERY_COUNTS,
        };
        TOP_TAGS = "top_tags" with {
            DELIVERY_COUNTS = crate::db::sql::fragments::DELIVERY_COUNTS,
        };
    }
    outbound_events {
        CAMPAIGN_COMPLETED = "campaign_completed";
        CHECK_BOUNCE_RATE = "check_bounce_rate";
        CONTACT_UNSUBSCRIBED_EVERYWHERE = "contact_unsubscribed_everywhere";
        EMAIL_EVENT = "email_event";
    }
    platform_imports {
        ADD_SUPPRESSIONS = "add_suppressions";
        UPSERT_CONTACTS = "upsert_contacts";
    }
    scheduler {
        ADVANCE = "advance";
        COMPLETE_FINISHED = "complete_finished";
        COUNT_RELEASED = "count_released";
        ENSURE_COUNTERS = "ensure_counters";
        LOCK_COUNTS = "lock_counts";
        RELEASE = "release";
        SITES_WITH_DUE_MAIL = "sites_with_due_mail";
    }
    scoring {
        CONTRIBUTIONS = "contributions" with {
            SCORE_CONTRIBUTIONS = crate::db::sql::fragments::CONTACT_SCORE_CONTRIBUTIONS,
        };
        REFRESH = "refresh" with {
            SCORE_CONTRIBUTIONS = crate::db::sql::fragments::SCORE_CONTRIBUTIONS,
        };
        REFRESH_CONTACT = "refresh" with {
            SCORE_CONTRIBUTIONS = crate::db::sql::fragments::CONTACT_SCORE_CONTRIBUTIONS,
        };
    }
    webhook_deliveries {
        JOB = "job";
    }
}
