-- A/B tests: 2..4 variants of a campaign's first step (subject, HTML, from name). A share of
-- the audience is split evenly among the variants; the rest is held back until a winner is
-- promoted and then gets the winner's content.
CREATE TABLE ab_tests (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    campaign_id     uuid NOT NULL,
    -- The step the variants replace: the campaign's first at creation.
    step_id         uuid NOT NULL,
    name            text NOT NULL,
    -- [{"subject"?, "html"?, "from_name"?}, ...]: what each variant overrides.
    variants        jsonb NOT NULL,
    test_share      double precision NOT NULL CHECK (test_share > 0 AND test_share < 1),
    metric          text NOT NULL CHECK (metric IN ('opens', 'clicks', 'conversions')),
    min_recipients  integer NOT NULL CHECK (min_recipients > 0),
    confidence      double precision NOT NULL CHECK (confidence IN (0.9, 0.95, 0.99)),
    auto_promote    boolean NOT NULL,
    status          text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'promoted')),
    -- The promoted variant (0-based), and how it was chosen.
    winner          smallint,
    promoted_by     text CHECK (promoted_by IN ('hand', 'rule')),
    promoted_at     timestamptz,
    -- When the scheduler last checked the rule (auto_promote).
    checked_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ab_tests_project_id_id_key UNIQUE (project_id, id),
    CONSTRAINT ab_tests_campaign_key UNIQUE (campaign_id),
    CONSTRAINT ab_tests_same_project_campaign
        FOREIGN KEY (project_id, campaign_id) REFERENCES campaigns (project_id, id)
        ON DELETE CASCADE
);

CREATE INDEX ab_tests_project_idx ON ab_tests (project_id, id);
CREATE INDEX ab_tests_running_idx ON ab_tests (id) WHERE status = 'running';

-- Each enrollment of the campaign once: its variant (0-based) in the test group, or NULL when
-- held back for the winner.
CREATE TABLE ab_assignments (
    test_id        uuid NOT NULL,
    enrollment_id  uuid NOT NULL,
    project_id     uuid NOT NULL,
    variant        smallint CHECK (variant BETWEEN 0 AND 3),
    PRIMARY KEY (test_id, enrollment_id),
    CONSTRAINT ab_assignments_same_project_test
        FOREIGN KEY (project_id, test_id) REFERENCES ab_tests (project_id, id) ON DELETE CASCADE,
    CONSTRAINT ab_assignments_same_project_enrollment
        FOREIGN KEY (project_id, enrollment_id) REFERENCES enrollments (project_id, id)
        ON DELETE CASCADE
);

CREATE INDEX ab_assignments_enrollment_idx ON ab_assignments (enrollment_id);

-- The variant an email carries (test group and winner alike), and the from name it overrides.
ALTER TABLE email_log ADD COLUMN ab_variant smallint, ADD COLUMN from_name text;
