#!/usr/bin/env bash
# `make fuzz`: schemathesis against both APIs, started here on fresh databases with seeded
# data (see api-stack.sh), every check on, the stateful phase on, warnings counted as
# failures, a fixed seed. Prints a summary per service; exits 1 when either has a failure.
# Run after `cargo build --bins` (the debug binaries of the target directory are used).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/fuzz.sh [-h]
  Fuzz memory-api and mail-api with schemathesis (scripts/tools.sh installs it). Environment:
    FUZZ_EXAMPLES=40   examples per operation and phase
    FUZZ_SEED=1        schemathesis' random seed (the same seed generates the same requests)
    FUZZ_ONLY=memory|mail   fuzz one service only
    FUZZ_OUT=target/fuzz    reports: junit XML and the full output per service
EOF
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"
# shellcheck source=scripts/api-stack.sh
. "$ROOT/scripts/api-stack.sh"
cd "$ROOT"

FUZZ_EXAMPLES="${FUZZ_EXAMPLES:-40}"
FUZZ_SEED="${FUZZ_SEED:-1}"
FUZZ_ONLY="${FUZZ_ONLY:-}"
OUT="${FUZZ_OUT:-target/fuzz}"
[[ $FUZZ_EXAMPLES =~ ^[1-9][0-9]*$ ]] || die "FUZZ_EXAMPLES must be a positive integer"
[[ $FUZZ_SEED =~ ^[0-9]+$ ]] || die "FUZZ_SEED must be a non-negative integer"
case "$FUZZ_ONLY" in "" | memory | mail) ;; *) die "FUZZ_ONLY must be memory or mail (or unset)" ;; esac

ST="$CACHE_DIR/venv-api-tests/bin/st"
[[ -x $ST ]] || bash "$ROOT/scripts/tools.sh" >&2
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

trap 'stack_stop $?' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
stack_start fuzz
stack_seed

# The warnings schemathesis shows by default (the pinned version's list), but missing_auth and
# missing_test_data.
ST_WARNINGS_COMMON='"base_url_mismatch", "missing_deserializer", "unused_openapi_auth",
    "unsupported_regex", "method_not_allowed", "constants_extraction", "unmatched_filter",
    "unresolvable_reference", "rate_limited", "dictionary_mismatch", "timeout_units"'
ST_WARNINGS_BUT_AUTH="\"validation_mismatch\", $ST_WARNINGS_COMMON"

# The read routes that take an id get the seeded one, so that their 200 answers are checked
# against the document too (with random ids they would only ever answer 404).
cat >"$STACK_DIR/memory.toml" <<EOF
[warnings]
fail-on = true

[[operations]]
include-path = "/api/v1/products/{name}"
parameters = { "path.name" = "$SEED_PRODUCT" }

# The OAuth endpoints: generated codes, tokens and client ids name nothing that was issued, and
# a redirect URI must also be one the server would redirect to (https, loopback http): a
# schema-valid request is answered with the RFCs' 400 or 401 errors.
[[operations]]
include-operation-id-regex = "^(oauthToken|revokeOauthToken|registerOauthClient)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

# (Filters of one entry are alternatives: an entry naming a path and a method would apply to
# every operation of that method. Entries are matched in order; the first one's settings win.)
[[operations]]
include-operation-id = "getProductState"
parameters = { "path.name" = "$SEED_PRODUCT" }
[[operations]]
include-operation-id = "getDataset"
parameters = { "path.name" = "$SEED_DATASET" }
[[operations]]
include-operation-id = "listDatasetRows"
parameters = { "path.name" = "$SEED_DATASET" }

[[operations]]
include-path = "/api/v1/ai/costs/{product}"
parameters = { "path.product" = "$SEED_PRODUCT" }

# An event's occurred_at must lie between 1970 and 24 hours after the server's clock, and an
# ai_cost event's payload has rules of its own (both stated in the document's descriptions):
# neither a clock nor a rule that depends on event_type is a JSON Schema, so a 400 is among
# the answers expected to a request the document allows.
[[operations]]
include-operation-id = "ingestEvent"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
# A producible's table rows must have as many cells as its header: a rule stated in the tree
# schema's description, which no JSON Schema can state, so a 400 is among the answers expected
# to a request the document allows.
[[operations]]
include-operation-id = "createProducibleJob"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
# Generated trees mostly break that rule: validation_mismatch is off (with it
# missing_test_data, as for uploadDataset); the other warnings stay on.
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
# A job's status needs a job id, and a download a signed link made by the service: generated
# ones answer the documented 404 and 403, so their missing_test_data warning is off (and with
# it validation_mismatch, as above).
[[operations]]
include-operation-id = "getProducibleJobStatus"
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
[[operations]]
include-operation-id = "getVideoJobStatus"
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
[[operations]]
include-operation-id = "downloadRenderedFile"
warnings = { fail-on = true, display = [$ST_WARNINGS_COMMON] }
# An uploaded file must read as CSV, a JSON array of objects or NDJSON: that is its content,
# which a binary schema cannot state, so for this operation a 400 is among the answers
# expected to a request the document allows, and generated files (random bytes) are mostly
# refused: its validation_mismatch warning is off, and with it missing_test_data (the pinned
# version shows either when one is on; the route takes no id), the other warnings stay on.
[[operations]]
include-operation-id = "uploadDataset"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A confirm's overrides must name columns of the upload (else 400) and its values must fit the
# chosen types (else 422): the uploaded file's content again, reached when the stateful phase
# confirms an upload it made.
[[operations]]
include-operation-id = "confirmUpload"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
# Project signals go to the seeded product (by id).
[[operations]]
include-operation-id = "ingestProjectSignal"
parameters = { "path.project_id" = "$SEED_PRODUCT_ID" }

# The seeded proposal, so that its read answers it and its decisions reach past the lookup
# (the first decision answers 200, every later one the documented 409).
[[operations]]
include-operation-id = "getProposal"
parameters = { "path.id" = "$SEED_PROPOSAL" }
[[operations]]
include-operation-id = "approveProposal"
parameters = { "path.id" = "$SEED_PROPOSAL" }
[[operations]]
include-operation-id = "rejectProposal"
parameters = { "path.id" = "$SEED_PROPOSAL" }
# The seeded lead, likewise: the first resolution answers 200, every later one 409.
[[operations]]
include-operation-id = "acceptLead"
parameters = { "path.id" = "$SEED_LEAD" }
[[operations]]
include-operation-id = "dismissLead"
parameters = { "path.id" = "$SEED_LEAD" }
# The seeded draft set's account and thread, so that the lookup's three answers are reached
# (the other parameters vary). A lookup needs one of the two thread ids, which a query's
# schema cannot say: a 400 is among the answers expected to a request the document allows.
[[operations]]
include-operation-id = "getInboxDrafts"
parameters = { "query.account_email" = "$SEED_DRAFT_ACCOUNT", "query.legacy_thread_id" = "$SEED_DRAFT_THREAD" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
# Each thread id once per body (compared as hexadecimal numbers) is a rule across items that
# a JSON Schema cannot state: a 400 is among the expected answers.
[[operations]]
include-operation-id = "replaceInboxDrafts"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
# The seeded drift event: open until the first resolve, later ones answer the documented 409.
# The stateful phase deletes workspaces it finds (a drift event goes with its workspace), after
# which the seeded event answers the documented 404: its missing_test_data warning is off, and
# with it validation_mismatch (the pinned version shows either when one is on, as for
# uploadDataset); the other warnings stay on.
[[operations]]
include-operation-id = "resolveWorkspaceDrift"
parameters = { "path.id" = "$SEED_DRIFT" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
# Generated related_decisions name no decision of the caller, and a batch whose every signal
# does is the documented 422 (semantic: ownership), not a refusal of schema-valid data.
# Each signal of a batch is validated on its own (ruled): a batch some of whose signals break
# the schema is partly accepted, with the documented 207 naming the refused ones.
[[operations]]
include-operation-id = "ingestProducerSignals"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
checks.negative_data_rejection.expected-statuses = ["207", "400", "401", "403", "404", "405", "406", "409", "415", "422", "428", "429", "5xx"]
# A model run needs the caller's model credential (422 without one): one is seeded, but the
# stateful phase deletes the credentials it finds. Whether the caller stored one is the
# caller's data, which no JSON Schema can state, so a 422 is among the answers expected to a
# request the document allows. (The runs then fail, as documented: this stack's model endpoint
# does not answer; their tests drive them against a chat-completions server.)
[[operations]]
include-operation-id-regex = "^(createContentBrief|runAutonomousMarketing)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
# A competitor watch also answers 400 to a URL whose host is an address the deployment does not
# allow (loopback, private, link-local, localhost): which addresses those are is the
# deployment's policy, which the schema's URL pattern cannot state.
[[operations]]
include-operation-id-regex = "^(runCompetitorWatch|createCompetitorWatch)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
# The seeded watch, and another to delete: a DELETE acts once on what it names, so its
# missing_test_data warning is off (and with it validation_mismatch, as above).
[[operations]]
include-operation-id-regex = "^(getCompetitorWatch|updateCompetitorWatch)$"
parameters = { "path.id" = "$SEED_WATCH" }
[[operations]]
include-operation-id = "deleteCompetitorWatch"
parameters = { "path.id" = "$SEED_SPARE_WATCH" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
# The seeded runs, so that their reads answer them.
[[operations]]
include-operation-id = "getContentBriefStatus"
parameters = { "path.requestId" = "$SEED_BRIEF" }
[[operations]]
include-operation-id = "getAutonomousMarketingRun"
parameters = { "path.runId" = "$SEED_AUTONOMOUS_RUN" }
[[operations]]
include-operation-id = "getCompetitorWatchRun"
parameters = { "path.runId" = "$SEED_WATCH_RUN" }
EOF
cat >"$STACK_DIR/mail.toml" <<EOF
[warnings]
fail-on = true

# The OAuth endpoints: generated codes, tokens and client ids name nothing that was issued, and
# a redirect URI must also be one the server would redirect to (https, loopback http): a
# schema-valid request is answered with the RFCs' 400 or 401 errors.
[[operations]]
include-operation-id-regex = "^(oauthToken|revokeOauthToken|registerOauthClient)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

# Rules the flat request schemas state in descriptions only (a promoted draft's name only
# without campaign_id; a draft's body fields' blank checks; an A/B test's template syntax), and
# the pinned version counts a bare JSON scalar as a valid draft body: such requests get the
# documented 400, and the operations' validation_mismatch warning is off. To do: state these
# rules in the schemas.
[[operations]]
include-operation-id-regex = "^(createDraft|promoteDraft|createAbTest)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# Deciding an approval needs a key with the approve right, which the fuzzing key lacks on
# purpose: its documented 403 is the answer, so missing_auth is off for these two.
[[operations]]
include-operation-id-regex = "^(approveApproval|rejectApproval)$"
warnings = { fail-on = true, display = [$ST_WARNINGS_BUT_AUTH] }

[[operations]]
include-path = "/api/v1/emails/{id}"
parameters = { "path.id" = "$SEED_EMAIL" }

# A create route's Idempotency-Key replays its first answer (ruled), also once what it made
# was deleted since: the stateful phase, which reuses keys, then finds the "created" resource
# gone. That is the ruled behaviour, not a lost resource.
[[operations]]
include-operation-id-regex = "^(createTemplate|createContact)$"
checks.ensure_resource_availability.enabled = false

[[operations]]
include-path = "/api/v1/emails/{id}/events"
parameters = { "path.id" = "$SEED_EMAIL" }

# The seeded contact (by id), so that its routes answer with data.
[[operations]]
include-path = "/api/v1/contacts/{id}"
parameters = { "path.id" = "$SEED_CONTACT" }

[[operations]]
include-path = "/api/v1/contacts/{id}/export"
parameters = { "path.id" = "$SEED_CONTACT" }

[[operations]]
include-path = "/api/v1/contacts/{id}/timeline"
parameters = { "path.id" = "$SEED_CONTACT" }

[[operations]]
include-path = "/api/v1/contacts/{id}/score"
parameters = { "path.id" = "$SEED_CONTACT" }

# The seeded campaigns, steps, contacts and site, so that the campaign routes answer with data
# (never a DELETE of what other operations read). Operations
# are named by id: filters of one entry are alternatives, so a path with a method would take
# in every operation of that method; and an operation takes the first entry that names it
# (hence the replayed-creation exception again here, for clones and steps).
[[operations]]
include-operation-id-regex = "^(updateCampaign|updateCampaignStatus|cloneCampaign|listCampaignSteps|addCampaignStep|previewCampaignAudience)$"
parameters = { "path.id" = "$SEED_CAMPAIGN" }
checks.ensure_resource_availability.enabled = false

[[operations]]
include-operation-id = "listEnrollments"
parameters = { "path.id" = "$SEED_ENROLLING" }

[[operations]]
include-operation-id = "getEnrollment"
parameters = { "path.id" = "$SEED_ENROLLING", "path.contact_id" = "$SEED_CONTACT" }

# The seeded step, and another to delete: a DELETE acts once on what it names, so its
# missing_test_data warning is off (and with it validation_mismatch, as above).
[[operations]]
include-operation-id-regex = "^(getCampaignStep|updateCampaignStep)$"
parameters = { "path.id" = "$SEED_STEP" }

[[operations]]
include-operation-id = "deleteCampaignStep"
parameters = { "path.id" = "$SEED_SPARE_STEP" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# The seeded draft and the approval waiting (api-stack.sh): decisions after the first answer
# the documented 409, and the run's key lacks the approve right (the documented 403).
[[operations]]
include-operation-id-regex = "^(getDraft|approveDraft|rejectDraft|promoteDraft)$"
parameters = { "path.id" = "$SEED_DRAFT" }

[[operations]]
include-operation-id-regex = "^(checkApproval|approveApproval|rejectApproval)$"
parameters = { "path.id" = "$SEED_APPROVAL" }

# The seeded A/B test (api-stack.sh): a promotion after the first answers the documented 409,
# and one naming a variant past the test's last the documented 400 (stated in its description
# only, as above).
[[operations]]
include-operation-id-regex = "^(getAbTest|checkAbSignificance)$"
parameters = { "path.id" = "$SEED_AB_TEST" }

[[operations]]
include-operation-id = "promoteAbWinner"
parameters = { "path.id" = "$SEED_AB_TEST" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A delisting draft names one of the deployment's configured blocklists (its setting, not a
# JSON Schema): the seeded site and the stack's zone (api-stack.sh), so that the draft is
# written.
[[operations]]
include-operation-id = "dnsblDelistingDraft"
parameters = { "path.id" = "$SEED_SITE", "query.zone" = "bl.example.invalid" }

[[operations]]
include-path-regex = "^/api/v1/sites/[{]id[}]/(send-policy|warmup|warmup/pause|warmup/resume|schedule|abuse-monitor|abuse-monitor/override|dnsbl|dnsbl/delisting-draft|send-time|recovery-plan|deliverability|domain-health)$"
parameters = { "path.id" = "$SEED_SITE" }

# The seeded signup forms (api-stack.sh), so that their routes and public page answer with
# data; a DELETE acts once on what it names (the spare form), so its missing_test_data warning
# is off (and with it validation_mismatch, as above). The seeded signup's confirmation link:
# confirmed once, then confirmed already.
[[operations]]
include-operation-id-regex = "^(getForm|getFormStats|signupFormPage|submitSignupForm)$"
parameters = { "path.id" = "$SEED_FORM" }

# The seeded social posts and campaign (api-stack.sh). No platform account is connected in the
# stack, and whether one is, is the caller's data that no JSON Schema can state: asking to
# publish (a publish_at, a campaign's post) answers the documented 422. A change must leave the
# post with what its platforms need (a video for youtube, a board for pinterest, ...): a rule
# across fields and the stored post that the schema's descriptions state and no flat JSON
# Schema can, answered with the documented 400 as on creating. A DELETE acts once on what it
# names (the spare post), so its missing_test_data warning is off.
[[operations]]
include-operation-id = "getSocialPost"
parameters = { "path.id" = "$SEED_SOCIAL_POST" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]

[[operations]]
include-operation-id = "updateSocialPost"
parameters = { "path.id" = "$SEED_SOCIAL_POST" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]

[[operations]]
include-operation-id = "deleteSocialPost"
parameters = { "path.id" = "$SEED_SPARE_SOCIAL_POST" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "scheduleSocialPost"
parameters = { "path.id" = "$SEED_SOCIAL_CAMPAIGN" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "createSocialPost"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]

# A campaign's destination must parse as an http(s) address with a host, which the schema's
# URL pattern cannot state: the documented 400 otherwise.
[[operations]]
include-operation-id = "createSocialCampaign"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]

# Adapting names the seeded email campaign.
[[operations]]
include-operation-id = "adaptSocialPost"
parameters = { "body.email_campaign_id" = "$SEED_CAMPAIGN" }

# Connecting names a platform: Mastodon (no OAuth client in the stack: the documented 422,
# and no request leaves it). A callback's state names nothing issued: the documented 400.
# These, and scheduling above, answer every schema-valid request with their documented
# refusal here, so their validation_mismatch warning is off.
[[operations]]
include-operation-id-regex = "^(connectSocialPlatform|connectSocialAccount)$"
parameters = { "path.platform" = "mastodon" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "socialConnectCallback"
parameters = { "path.platform" = "mastodon" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = [$ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "deleteForm"
parameters = { "path.id" = "$SEED_SPARE_FORM" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "confirmSignup"
parameters = { "path.token" = "$SEED_FORM_CONFIRMATION" }

# The seeded content blocks and source (api-stack.sh): a DELETE acts once on what it names
# (the spare ones), so its missing_test_data warning is off (and with it validation_mismatch,
# as above).
[[operations]]
include-operation-id-regex = "^(getContentBlock|updateContentBlock)$"
parameters = { "path.id" = "$SEED_BLOCK" }

[[operations]]
include-operation-id = "deleteContentBlock"
parameters = { "path.id" = "$SEED_SPARE_BLOCK" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "deleteContentSource"
parameters = { "path.id" = "$SEED_SPARE_SOURCE" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# The seeded automations (api-stack.sh): the id routes name the active one, the delete the
# spare one. A pause makes the seeded one refuse enrollments and triggers (409), and a
# generated subscriber_id names no contact (404); segment rules past 100 conditions in all
# and rules naming another site are refused (400, 404), which no JSON Schema states.
[[operations]]
include-operation-id-regex = "^(getAutomation|previewAutomation|activateAutomation|pauseAutomation)$"
parameters = { "path.id" = "$SEED_AUTOMATION" }

[[operations]]
include-operation-id-regex = "^(updateAutomation|triggerAutomation)$"
parameters = { "path.id" = "$SEED_AUTOMATION" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

# An enrollment names the seeded contact: enrolled once, then 409 (already enrolled, or the
# automation paused). Most of its generated requests still name other contacts or automations
# (the documented 404), so its missing_test_data warning is off (and with it
# validation_mismatch, as above).
[[operations]]
include-operation-id = "enrollAutomation"
parameters = { "path.id" = "$SEED_AUTOMATION", "body.subscriber_id" = "$SEED_CONTACT" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "createAutomation"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

[[operations]]
include-operation-id = "deleteAutomation"
parameters = { "path.id" = "$SEED_SPARE_AUTOMATION" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# The tracking links of the seeded email, so that they answer as for a real recipient.
[[operations]]
include-path = "/t/o/{token}"
parameters = { "path.token" = "$SEED_OPEN_TOKEN" }

[[operations]]
include-path = "/t/c/{token}"
parameters = { "path.token" = "$SEED_CLICK_TOKEN" }

[[operations]]
include-path = "/t/u/{token}"
parameters = { "path.token" = "$SEED_UNSUBSCRIBE_TOKEN" }

# A known provider and the seeded project: the generated events carry no valid signature, so
# these answer the documented 401 (every time: hence no missing_auth warning), and the coverage
# phase's other provider names the documented 404 (hence no missing_test_data warning); the
# other warnings stay on.
[[operations]]
include-operation-id = "receiveProviderWebhook"
parameters = { "path.provider" = "resend" }
warnings = { fail-on = true, display = [$ST_WARNINGS_BUT_AUTH] }

[[operations]]
include-operation-id = "receiveProjectProviderWebhook"
parameters = { "path.provider" = "resend", "path.project_id" = "$MAIL_PROJECT_ID" }
warnings = { fail-on = true, display = [$ST_WARNINGS_BUT_AUTH] }

# An SMTP host must be a public server (SSRF): a name that resolves to a loopback, private or
# unspecified address answers 400, which no JSON Schema can state, so for this operation alone
# a 400 is among the answers expected to a request the document allows.
# (By operation id: an entry's filters are alternatives, so a path with a method would name
# every PUT.) Most generated hosts are such names: its validation_mismatch warning is off, and
# with it missing_test_data (the pinned version shows either when one is on).
[[operations]]
include-operation-id = "setProvider"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A webhook or chat-alert URL must be a public target (SSRF): an address literal outside the
# public internet answers 400 (and, behind the deployment's setting, private ones are let
# through), which no JSON Schema can state, so a 400 is among the answers expected to a
# request the document allows; most generated URLs are not URLs at all, so their
# validation_mismatch warning is off (with it missing_test_data, as for setProvider). The seeded subscriptions and delivery (api-stack.sh) are the
# ones the id routes name; the delete takes the spare subscription.
[[operations]]
include-operation-id = "subscribeWebhook"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
[[operations]]
include-operation-id = "putChatAlerts"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
[[operations]]
include-operation-id = "updateWebhookSubscription"
parameters = { "path.id" = "$SEED_WEBHOOK" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
[[operations]]
include-operation-id = "getWebhookSubscription"
parameters = { "path.id" = "$SEED_WEBHOOK" }
# The first delete takes the spare subscription; every later one answers the documented 404:
# its missing_test_data warning is off (the other warnings stay on).
[[operations]]
include-operation-id = "deleteWebhookSubscription"
parameters = { "path.id" = "$SEED_SPARE_WEBHOOK" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
[[operations]]
include-operation-id = "replayWebhookDelivery"
parameters = { "path.id" = "$SEED_DELIVERY" }

# A preview needs a subject and HTML unless the template it names holds them (a subject hint,
# HTML): whether it does is the project's data, which no JSON Schema can state, so a 400 is
# among the answers expected to a request the document allows.
[[operations]]
include-operation-id = "previewEmail"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }


# A model-backed route answers the ruled 422 LLM_NOT_CONFIGURED when the deployment has no
# language model (this stack has none): whether one is configured is the deployment's, which
# no JSON Schema can state. So every valid request is refused here: its validation_mismatch
# warning is off (the other warnings stay on). Its tests drive it against a chat-completions
# endpoint.
[[operations]]
include-operation-id = "createSegmentFromDescription"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A translation needs a template with HTML or a subject to translate, and the deployment's
# language model (this stack has none): the project's data and the deployment's
# configuration, neither a JSON Schema, so a 422 is among the answers expected to a request
# the document allows, and nearly every request gets it: its validation_mismatch warning is
# off (the other warnings stay on).
[[operations]]
include-operation-id = "translateTemplate"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A language model's base URL must be a public target (SSRF), as for setProvider: an address
# outside the public internet answers 400, which no JSON Schema can state; most generated
# URLs are such: its validation_mismatch warning is off (the other warnings stay on).
[[operations]]
include-operation-id = "setLanguageModel"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A content source's URL must be a public target (SSRF), as for setLanguageModel: an address
# outside the public internet answers 400, which no JSON Schema can state; most generated
# URLs are such: its validation_mismatch warning is off (the other warnings stay on).
[[operations]]
include-operation-id = "createContentSource"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A form's field names must be unique: a rule across the array's items (uniqueItems compares
# whole objects), which no JSON Schema can state, so a 400 is among the answers expected to a
# request the document allows (stated in the member's description).
[[operations]]
include-operation-id = "createForm"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# Connecting an email platform checks its API key against the platform: whether the platform
# accepts a key (and can be reached from the stack) is the platform's, which no JSON Schema can
# state, so the documented 422 PLATFORM_REFUSED is among the answers expected to a request the
# document allows, and every generated key gets it: its validation_mismatch warning is off
# (the other warnings stay on).
[[operations]]
include-operation-id = "connectPlatform"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# SMS: a number must be a valid one of its country (the phone-number library's metadata), a
# text names exactly one of contact_id and to, and a time zone is an IANA name: rules no JSON
# Schema can state, so a 400 is among the answers expected to a request the document allows.
# The seeded contact, so that its consent answers with data.
[[operations]]
include-operation-id-regex = "^(sendSms|setSmsProvider|previewSmsCost)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "setContactSmsConsent"
parameters = { "path.id" = "$SEED_CONTACT" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# Twilio's callbacks for the seeded project: generated requests carry no valid signature, so
# they answer the documented 401 (hence no missing_auth warning).
[[operations]]
include-operation-id-regex = "^(receiveTwilioInbound|receiveTwilioStatus)$"
parameters = { "path.project_id" = "$MAIL_PROJECT_ID" }
warnings = { fail-on = true, display = [$ST_WARNINGS_BUT_AUTH] }

# A platform trigger's action requires its own field and refuses the others', a rule across
# members the flat schema states in their descriptions only: a schema-valid body without it is
# answered the documented 400 naming the field (its validation_mismatch warning is off), and a
# generated campaign_id names no campaign of the project (404).
[[operations]]
include-operation-id = "configurePlatformTrigger"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# Stripe's and Shopify's webhooks name the seeded sources: generated requests carry no valid
# signature, so they answer the documented 401 (hence no missing_auth warning).
[[operations]]
include-operation-id = "receiveStripeWebhook"
parameters = { "path.source_id" = "$SEED_STRIPE_SOURCE" }
warnings = { fail-on = true, display = [$ST_WARNINGS_BUT_AUTH] }

[[operations]]
include-operation-id = "receiveShopifyWebhook"
parameters = { "path.source_id" = "$SEED_SHOPIFY_SOURCE" }
warnings = { fail-on = true, display = [$ST_WARNINGS_BUT_AUTH] }

# The deletes act once on what they name (the spare source and trigger), so their
# missing_test_data warning is off (and with it validation_mismatch, as above).
[[operations]]
include-operation-id = "deleteCommerceSource"
parameters = { "path.id" = "$SEED_SPARE_COMMERCE_SOURCE" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "deletePlatformTrigger"
parameters = { "path.id" = "$SEED_SPARE_TRIGGER" }
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# No email platform answers in the stack, so no connection, and no migration run, can be made
# there: the routes that name one answer the documented 404 (their missing_test_data warning is
# off), and a campaigns import's token cannot be checked (the documented 422 PLATFORM_REFUSED).
[[operations]]
include-operation-id-regex = "^(disconnectPlatform|startPlatformMigration|getPlatformImport)$"
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

[[operations]]
include-operation-id = "migrateCampaignsFrom"
parameters = { "body.site_id" = "$SEED_SITE" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

EOF

# The operations whose bodies name a seeded resource, fuzzed in a pass of their own: in the
# pinned version a body parameter of one operation makes every other operation's parameters
# ignored. Whether a recipient is suppressed is the project's state, and the generator's
# smallest address (0@0.com), the recipient of most generated sends, is the first one
# POST /suppressions suppresses: this pass runs first, so that valid sends are not refused
# with the documented 422 SUPPRESSED_CONTACT.
cat >"$STACK_DIR/mail-seeded.toml" <<EOF
[warnings]
fail-on = true

# A send takes exactly one of html and template_id, a rule the flat schema states in its
# descriptions only: a schema-valid body with neither is answered the documented 400, and
# the validation_mismatch warning is off. To do: state the rule in the schema.
[[operations]]
include-operation-id = "send"
parameters = { "body.site_id" = "$SEED_SITE" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# The stateful phase follows a created campaign into enrollSegment with a generated segment
# id, whose documented 404 SEGMENT_NOT_FOUND names the segment, not the campaign it made.
[[operations]]
include-operation-id = "createCampaign"
parameters = { "body.site_id" = "$SEED_SITE" }
checks.ensure_resource_availability.enabled = false

# The pinned version, overriding body.site_id, counts a body it mutated into a non-object as
# valid again (the override "undoes" the mutation of its parent) and expects it accepted: the
# route's 400 to such a body is right, so a 400 is among the answers expected here, and the
# operation's validation_mismatch warning is off (with it missing_test_data, as above).
[[operations]]
include-operation-id = "launchCampaign"
parameters = { "body.site_id" = "$SEED_SITE" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# An SMS campaign to the seeded site (the project has no SMS provider in the stack unless a
# generated one was set: the documented 422 otherwise).
[[operations]]
include-operation-id = "sendSmsCampaign"
parameters = { "body.site_id" = "$SEED_SITE" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# Enrolling the seeded contact in the seeded active campaign, and taking it out (each can act
# again after the other).
[[operations]]
include-operation-id = "enrollContact"
parameters = { "path.id" = "$SEED_ENROLLING", "body.contact_id" = "$SEED_CONTACT" }

[[operations]]
include-operation-id = "unenrollContact"
parameters = { "path.id" = "$SEED_ENROLLING", "path.contact_id" = "$SEED_CONTACT" }

# Enrolling the seeded site's subscribers (or a segment of them) in the seeded active
# campaign, whose site it is. Generated segment ids answer the documented 404
# SEGMENT_NOT_FOUND: a 404 here names the segment, not a resource the stateful phase made.
[[operations]]
include-operation-id = "enrollSegment"
parameters = { "path.id" = "$SEED_ENROLLING", "body.site_id" = "$SEED_SITE" }
checks.ensure_resource_availability.enabled = false

# Writing an email needs the deployment's language model, which the fuzzed stack has none of
# (ruled: 422 LLM_NOT_CONFIGURED, nothing invented): a configuration, not a JSON Schema. So a
# 422 is among the answers expected to a request the document allows, and the operation
# answers its 422 to nearly every request: its validation_mismatch warning is off, and with it
# missing_test_data (the pinned version shows either when one is on); the others stay on.
[[operations]]
include-operation-id = "generateEmail"
parameters = { "body.site_id" = "$SEED_SITE" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# The model-backed advice and compound tools (subject lines, content topics, a template or a
# draft campaign from a brief) need the language model too, as generateEmail: 422
# LLM_NOT_CONFIGURED to nearly every request the document allows, so their validation_mismatch
# warning is off (the others stay on). The seeded site (and its campaign) get them past the
# 404s to that 422.
[[operations]]
include-operation-id-regex = "^(optimizeSubjectLines|suggestContentTopics|createTemplateFromBrief|setupCampaignFromBrief)$"
parameters = { "body.site_id" = "$SEED_SITE", "body.campaign_id" = "$SEED_ENROLLING" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }

# A tag change and a merge name contacts of the project in a body list, which generated ids
# never are: here they name the seeded contact (merged with itself, which changes nothing).
[[operations]]
include-operation-id = "setContactTags"
parameters = { "body.contact_ids" = ["$SEED_CONTACT"] }

[[operations]]
include-operation-id = "mergeContacts"
parameters = { "body.target_id" = "$SEED_CONTACT", "body.source_ids" = ["$SEED_CONTACT"] }

# A CSV import into the seeded site: what a file holds (its header naming the layout's email
# column or the mapping's columns, a ZIP that opens) is its content, which no JSON Schema can
# state, and so is the rule that exactly one of csv and zip_base64 is given (stated in the
# descriptions of the flat schema): a 400 naming the field is among the answers expected to a
# request the document allows, and generated files are mostly refused, so the operation's
# validation_mismatch warning is off (with it missing_test_data, as above).
[[operations]]
include-operation-id = "importPlatformCsv"
parameters = { "body.site_id" = "$SEED_SITE" }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
warnings = { fail-on = true, display = ["missing_auth", $ST_WARNINGS_COMMON] }
EOF

# fuzz NAME CONFIG URL KEY [ST-ARGS...]: run schemathesis, keep its output, print the summary;
# 1 on failures.
# One worker: with two, schemathesis' generator (hypothesis describing its strategies through
# Python 3.11's `ast`, which is not thread-safe) now and then stops an operation with
# "AST constructor recursion depth mismatch", a runtime error of the tool, not of the API.
# No NUL character is generated: every string holding one is refused with a 400 naming the
# field (ruled, and covered by tests/api/nul.rs in both services), which a JSON Schema cannot
# state for the keys of free-form objects.
# The health check `filter_too_much` is off: segment rules state per field which operators and
# values are allowed (if/then/else), which the generator can only meet by filtering; it is a
# check of the generator, not of the API.
# The response-time limit is the request timeout (30 s), not the 10 s `--checks all` sets: how
# fast an answer comes depends on what else the machine runs (a 5 MB generated body took 11 s
# on a loaded machine); speed is `make bench`'s to measure, not a pass/fail check of the suite.
# ensure_resource_availability is left out: in the stateful phase it follows a created resource
# into the operations whose ids this file pins to seeded rows (a spare to DELETE, a seeded
# segment), and a pinned row that an earlier step deleted answers 404, which it takes for the
# created resource lost. Which steps run depends on the ids the run makes, so it failed some
# runs and not others. A created resource being readable is the HTTP tests' to prove.
fuzz() {
    local service=$1 config=$2 url=$3 key=$4 rc=0
    shift 4
    log ""
    log "== $service: schemathesis, $FUZZ_EXAMPLES examples per operation, seed $FUZZ_SEED"
    "$ST" --config-file "$STACK_DIR/$config.toml" run "$url/api/v1/openapi.json" "$@" \
        --url "$url" \
        --header "Authorization: Bearer $key" \
        --checks all \
        --exclude-checks ensure_resource_availability \
        --max-response-time 30 \
        --phases examples,coverage,fuzzing,stateful \
        --max-examples "$FUZZ_EXAMPLES" \
        --seed "$FUZZ_SEED" \
        --generation-allow-x00 false \
        --suppress-health-check filter_too_much \
        --workers 1 \
        --request-timeout 30 \
        --report junit,har --report-junit-path "$OUT/$service.junit.xml" \
        --report-har-path "$OUT/$service.har" \
        >"$OUT/$service.txt" 2>&1 || rc=$?
    python3 "$ROOT/tests/fuzz/summary.py" "$service" "$OUT/$service.junit.xml" "$OUT/$service.txt" "$rc"
}

fuzz_memory() {
    fuzz memory memory "$MEMORY_URL" "$MEMORY_KEY"
}

fuzz_mail() {
    local rc=0
    local seeded=(--include-operation-id send --include-operation-id createCampaign
        --include-operation-id setContactTags --include-operation-id mergeContacts
        --include-operation-id launchCampaign --include-operation-id enrollContact
        --include-operation-id unenrollContact --include-operation-id generateEmail
        --include-operation-id enrollSegment --include-operation-id optimizeSubjectLines
        --include-operation-id suggestContentTopics --include-operation-id createTemplateFromBrief
        --include-operation-id setupCampaignFromBrief --include-operation-id sendSmsCampaign
        --include-operation-id importPlatformCsv)
    fuzz mail-seeded mail-seeded "$MAIL_URL" "$MAIL_KEY" "${seeded[@]}" || rc=1
    # revokeApiKey is left out: the stateful phase would revoke the fuzzer's own key (its id is
    # in GET /api-keys) and every later request would be a 401. Its tests cover it.
    fuzz mail mail "$MAIL_URL" "$MAIL_KEY" --exclude-operation-id send \
        --exclude-operation-id createCampaign --exclude-operation-id setContactTags \
        --exclude-operation-id mergeContacts --exclude-operation-id launchCampaign \
        --exclude-operation-id enrollContact --exclude-operation-id unenrollContact \
        --exclude-operation-id generateEmail --exclude-operation-id enrollSegment \
        --exclude-operation-id optimizeSubjectLines --exclude-operation-id suggestContentTopics \
        --exclude-operation-id createTemplateFromBrief \
        --exclude-operation-id setupCampaignFromBrief \
        --exclude-operation-id sendSmsCampaign \
        --exclude-operation-id importPlatformCsv \
        --exclude-operation-id revokeApiKey || rc=1
    return "$rc"
}

# The two services are fuzzed at once, each by its own schemathesis process (one worker
# each, see above): one run mostly waits on its server or generates in Python, so two share
# the machine's cores instead of taking turns. Each prints its summaries when it is done.
pids=() services=()
if [[ $FUZZ_ONLY != mail ]]; then
    fuzz_memory >"$OUT/memory.summary" 2>&1 &
    pids+=($!) services+=(memory)
fi
if [[ $FUZZ_ONLY != memory ]]; then
    fuzz_mail >"$OUT/mail.summary" 2>&1 &
    pids+=($!) services+=(mail)
fi
failed=()
for i in "${!pids[@]}"; do
    rc=0
    wait "${pids[$i]}" || rc=$?
    cat "$OUT/${services[$i]}.summary"
    ((rc == 0)) || failed+=("${services[$i]}-api")
done
log ""
if ((${#failed[@]} > 0)); then
    log "fuzz: FAILED: ${failed[*]} (full output in $OUT/<service>.txt)"
    exit 1
fi
log "fuzz: 0 failures"
