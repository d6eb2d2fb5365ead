//! The ab-testing group: A/B tests of a campaign's first step, their statistics and the
//! promotion of a winner. Each calls the function its REST route calls; promoting goes through
//! the approval policy that holds campaign launches (202 with an approval for a credential it
//! holds).

use http_kit::{ApiError, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::ops::ab_tests::{
    AbTestFilter, CreateAbTest, PromoteAbWinner, check_ab_significance, create_ab_test,
    list_ab_tests,
};
use crate::ops::approvals::gate::promote_ab_winner_gated;
use crate::ops::idempotency::{Answer, IdempotencyKey};

/// One A/B test of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TestArgument {
    pub test_id: Uuid,
}

impl Validate for TestArgument {}

/// A test and, optionally, the variant to promote.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PromoteArguments {
    pub test_id: Uuid,
    #[serde(flatten)]
    pub target: PromoteAbWinner,
}

impl Validate for PromoteArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.target.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "check_ab_significance",
            Group::AbTesting,
            "An A/B test's results: each variant's recipients, successes (opens, clicks or \
             conversions), rate and Wilson confidence interval; the leader; Pearson's \
             chi-squared test of independence (statistic, degrees of freedom, p-value) and \
             whether the decision rule (minimum recipients per variant, confidence level) is \
             met.",
        )
        .reads(|ctx, Body(args): Body<TestArgument>| async move {
            check_ab_significance(&ctx.state, ctx.project_id(), args.test_id).await
        }),
        declare(
            "create_ab_test",
            Group::AbTesting,
            "Create an A/B test of a campaign's first step before the campaign sends: 2 to 4 \
             variants (each may override subject, html, from_name), the share of the audience \
             tested (0.05..0.5, default 0.2, split evenly among the variants), the metric \
             (opens, clicks, conversions) and the decision rule (min_recipients, confidence \
             0.8..=0.999, auto_promote). The rest of the audience waits for the winner.",
        )
        .writes(|ctx, Body(req): Body<CreateAbTest>| async move {
            let key = IdempotencyKey::default();
            Ok(create_ab_test(&ctx.state, ctx.project_id(), &key, &req)
                .await?
                .into_body())
        }),
        declare(
            "list_ab_tests",
            Group::AbTesting,
            "List the project's A/B tests (optionally one campaign's), a page at a time.",
        )
        .reads(|ctx, Paged(page, filter): Paged<AbTestFilter>| async move {
            list_ab_tests(&ctx.state, ctx.project_id(), &page, &filter).await
        }),
        declare(
            "promote_ab_winner",
            Group::AbTesting,
            "Send an A/B test's winner (the leader unless variant is named) to the contacts \
             held back, once each; a second promotion answers 409 AB_TEST_PROMOTED. Under the \
             project's approval policy it may wait for a person (an approval id is answered \
             and nothing is sent until approved).",
        )
        .writes(|ctx, Body(args): Body<PromoteArguments>| async move {
            promote_ab_winner_gated(
                &ctx.state,
                ctx.state.gates.view(None),
                &ctx.caller,
                args.test_id,
                &args.target,
            )
            .await
            .map(Answer::into_body)
        }),
    ]
}
