/**
 * Every operation of mail-api's document through the typed client (the generated-client
 * scenario of tests/clients/scenario.py, in TypeScript). An operation of the document that no
 * step calls, and that is not listed in PENDING, fails the test.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';

import { createMailClient, MailApi, type Mail } from '../src/index.js';
import { env, sleep } from './env.js';
import { Coverage, expect, methodName } from './scenario.js';

/** Operations not yet driven by a step here (each one still callable: see the first test). */
const PENDING: string[] = [];

const coverage = new Coverage('mail-api', 'mail-api.openapi.json');
const options = { baseUrl: env('MAIL_URL'), apiKey: env('MAIL_KEY'), fetch: coverage.recording() };
const m = createMailClient(options);
const anonymous = createMailClient({ ...options, apiKey: undefined });

after(() => {
  const missing = coverage.operations.filter((o) => !coverage.called.has(o.id) && !PENDING.includes(o.id));
  const stale = PENDING.filter((id) => coverage.called.has(id) || !coverage.operations.some((o) => o.id === id));
  console.log(`mail-api: ${coverage.called.size} of ${coverage.operations.length} operations called, ${PENDING.length} pending`);
  assert.deepEqual(missing.map((o) => `${o.id} (${o.method} ${o.path})`), [], 'operations no step calls');
  assert.deepEqual(stale, [], 'PENDING lists operations that are called or gone');
});

function b64url(raw: Buffer): string {
  return raw.toString('base64url');
}

/** The open and click tokens of a sent email (from the send worker's outbox), and an unsubscribe token signed as mail-api signs it. */
async function trackingTokens(emailId: string): Promise<{ o: string; c: string; u: string }> {
  const file = path.join(env('STACK_DIR'), 'outbox', `${emailId}.eml`);
  let raw = '';
  for (let i = 0; i < 600 && raw === ''; i++) {
    raw = await readFile(file, 'utf8').catch(() => '');
    if (raw === '') await sleep(100);
  }
  assert.ok(raw, `the send worker wrote no ${file}`);
  // Quoted-printable bodies, and base64 ones, decoded well enough to find the links.
  const qp = raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  const b64 = (raw.match(/^[A-Za-z0-9+/=]{20,}$(?:\r?\n^[A-Za-z0-9+/=]+$)*/gm) ?? [])
    .map((block) => Buffer.from(block.replace(/\s+/g, ''), 'base64').toString('utf8'))
    .join('\n');
  const text = qp + '\n' + b64;
  const found = (kind: string) => {
    const match = new RegExp(`/t/${kind}/([A-Za-z0-9_.-]+)`).exec(text);
    assert.ok(match, `no /t/${kind}/ link in ${file}`);
    return match[1]!;
  };
  const payload = Buffer.concat([Buffer.from([1]), Buffer.from('u'), Buffer.from(emailId.replace(/-/g, ''), 'hex')]);
  const tag = createHmac('sha256', env('TRACKING_SECRET')).update(payload).digest();
  return { o: found('o'), c: found('c'), u: `${b64url(payload)}.${b64url(tag)}` };
}

/** `body` signed as a provider signs its events (Standard Webhooks), as the client sends it. */
function signed(secret: string, body: unknown): Record<string, string> {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const id = `msg_${crypto.randomUUID().replace(/-/g, '')}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const tag = createHmac('sha256', key).update(`${id}.${timestamp}.${JSON.stringify(body)}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${tag}` };
}

test('every operation of the document is a method of MailApi', () => {
  for (const operation of coverage.operations) {
    const name = methodName(operation.id) as keyof MailApi;
    assert.equal(typeof MailApi.prototype[name], 'function', operation.id);
  }
});

test('mail-api: every operation', async () => {
  await expect(m.healthz(), 200);
  await expect(m.readyz(), 200);
  await expect(m.healthDetails(), 200);
  await expect(m.serve(), 200);
  await expect(m.openapiJson(), 200);
  await expect(m.oauthServerMetadata(), 200);
  await expect(m.oauthResourceMetadata(), 200);
  await expect(m.oauthMcpResourceMetadata(), 200);
  const client = (await expect(
    m.registerOauthClient({
      body: { redirect_uris: ['http://127.0.0.1:33418/callback'], client_name: 'ts-scenario', token_endpoint_auth_method: 'none' },
    }),
    201,
  )).data.client_id;
  await expect(
    m.oauthToken({
      body: {
        grant_type: 'authorization_code',
        code: 'not-issued',
        client_id: client,
        redirect_uri: 'http://127.0.0.1:33418/callback',
        code_verifier: 'v'.repeat(43),
      },
    }),
    400,
  );
  await expect(m.revokeOauthToken({ body: { token: 'not-issued', client_id: client } }), 200);

  const site = (await expect(m.createSite({ body: { name: 'Shop', slug: 'shop', from_name: 'Shop' } }), 201)).data.id;
  await expect(m.listSites({ query: { limit: 10 } }), 200);
  await expect(m.getSite({ path: { id: site } }), 200);
  await expect(m.updateSite({ path: { id: site }, body: { from_name: 'The Shop' } }), 200);
  await expect(m.putBrandVoice({ path: { id: site }, body: { tone: 'warm', words_to_avoid: ['cheap'] } }), 200);
  await expect(m.getBrandVoice({ path: { id: site } }), 200);
  const domain = (await expect(m.registerDomain({ body: { site_id: site, domain: 'mail.shop.example' } }), 201)).data.id;
  await expect(m.listDomains({ query: { limit: 10 } }), 200);
  await expect(m.getDomain({ path: { id: domain } }), 200);
  assert.equal((await expect(m.refreshDomainDns({ path: { id: domain } }), 200)).data.status, 'pending');

  await expect(m.identify({ body: { email: 'ada@example.com', first_name: 'Ada', site_id: site, tags: ['vip'] } }), 201);
  const bob = (await expect(
    m.createContact({ headers: { 'Idempotency-Key': 'contact-1' }, body: { email: 'bob@example.com', utm_source: 'news' } }),
    201,
  )).data.contact_id;
  await expect(m.listContacts({ query: { limit: 10 } }), 200);
  const ada = (await expect(m.getContact({ path: { id: 'ada@example.com' } }), 200)).data.contact_id;
  await expect(
    m.updateContact({ path: { id: ada }, body: { last_name: 'Lovelace', properties: { plan: { tier: 'pro' } }, tags: ['beta'] } }),
    200,
  );
  await expect(m.setContactTags({ body: { contact_ids: [ada], add: ['news'], remove: ['beta'] } }), 200);
  const imported = (await expect(
    m.importContacts({ body: { site_id: site, contacts: [{ email: 'ada+list@example.com', first_name: 'Ada' }, { email: 'nope' }] } }),
    200,
  )).data;
  await expect(m.findDuplicateContacts({ query: { limit: 10 } }), 200);
  await expect(m.mergeContacts({ body: { target_id: ada, source_ids: [imported.rows[0]!.contact_id!] } }), 200);
  await expect(m.getContactSchema({ query: { site_id: site } }), 200);
  await expect(m.listInactiveContacts({ query: { days: 30 } }), 200);
  await expect(m.getHygieneConfig(), 200);
  await expect(m.updateHygieneConfig({ body: { inactive_days: 365, suppress_role_addresses: true } }), 200);
  await expect(m.runListHygiene({ body: { site_id: site, dry_run: true } }), 200);
  await expect(m.listHygieneAudit({ query: { site_id: site } }), 200);
  await expect(m.unsubscribeContact({ body: { email: 'bob@example.com' } }), 200);

  const campaign = (await expect(
    m.createCampaign({
      headers: { 'Idempotency-Key': 'campaign-1' },
      body: { name: 'Welcome', site_id: site, type: 'triggered', trigger_event_name: 'signup' },
    }),
    201,
  )).data.id;
  await expect(m.listCampaigns({ query: { site_id: site } }), 200);
  await expect(m.trackEvent({ body: { email: 'ada@example.com', event: 'signup', data: { plan: 'pro' } } }), 200);

  // The campaign engine.
  await expect(m.getSendPolicy({ path: { id: site } }), 200);
  const window: Mail.SendWindowSpec = { start: '08:00', end: '20:00', days: ['mon', 'tue', 'wed', 'thu', 'fri'] };
  await expect(m.putSendPolicy({ path: { id: site }, body: { timezone: 'Europe/Berlin', send_window: window, blackout_dates: ['2030-12-25'] } }), 200);
  await expect(m.updateWarmupSchedule({ path: { id: site }, body: { daily_limits: [100, 200], provider_daily_cap: 500 } }), 200);
  await expect(m.pauseWarmup({ path: { id: site } }), 200);
  await expect(m.resumeWarmup({ path: { id: site } }), 200);
  await expect(m.getWarmupStatus({ path: { id: site } }), 200);
  const step = (await expect(
    m.addCampaignStep({ path: { id: campaign }, body: { subject: 'Welcome', html: '<p>Hi</p>', delay_minutes: 60 } }),
    201,
  )).data.id;
  await expect(m.listCampaignSteps({ path: { id: campaign } }), 200);
  await expect(m.getCampaignStep({ path: { id: step } }), 200);
  await expect(m.updateCampaignStep({ path: { id: step }, body: { subject: 'Welcome!', step_order: 1 } }), 200);
  await expect(m.updateCampaign({ path: { id: campaign }, body: { name: 'Welcome series' } }), 200);
  await expect(m.updateCampaignStatus({ path: { id: campaign }, body: { status: 'active' } }), 200);
  await expect(m.getCampaign({ path: { id: campaign } }), 200);
  await expect(m.enrollContact({ path: { id: campaign }, body: { contact_id: bob } }), 201);
  await expect(m.getEnrollment({ path: { id: campaign, contact_id: bob } }), 200);
  await expect(m.listEnrollments({ path: { id: campaign }, query: { limit: 10 } }), 200);
  await expect(m.unenrollContact({ path: { id: campaign, contact_id: bob } }), 200);
  await expect(m.previewCampaignAudience({ path: { id: campaign } }), 200);
  const now = new Date();
  await expect(m.getCampaignCalendar({ query: { year: now.getUTCFullYear(), month: now.getUTCMonth() + 1 } }), 200);
  await expect(m.getSchedule({ path: { id: site } }), 200);
  const copy = (await expect(m.cloneCampaign({ path: { id: campaign }, body: { new_name: 'Welcome copy' } }), 201)).data;
  await expect(m.deleteCampaignStep({ path: { id: copy.steps[0]!.id } }), 204);
  await expect(m.deleteCampaign({ path: { id: copy.id } }), 204);
  await expect(
    m.launchCampaign({ body: { name: 'News', site_id: site, emails: [{ subject: 'News', html: '<p>News</p>', text: 'News' }] } }),
    201,
  );
  // No model is configured for this deployment: nothing is invented.
  await expect(m.generateEmail({ body: { site_id: site, brief: 'Spring seeds' } }), 422);

  // Drafts: written, approved or rejected, promoted to a campaign once.
  const draft = (await expect(
    m.createDraft({
      body: { site_id: site, subject: 'Spring', body_html: '<p>Spring</p>', text: 'Spring' },
      headers: { 'Idempotency-Key': 'ts-draft-1' },
    }),
    201,
  )).data.id;
  await expect(m.listDrafts({ query: { status: 'pending', limit: 10 } }), 200);
  await expect(m.getDraft({ path: { id: draft } }), 200);
  await expect(m.approveDraft({ path: { id: draft } }), 200);
  const promoted = (await expect(m.promoteDraft({ path: { id: draft }, body: { name: 'Spring', delay_minutes: 0 } }), 200)).data;
  const loud = (await expect(m.createDraft({ body: { site_id: site, subject: 'Loud', body_html: '<p>!</p>' } }), 201)).data.id;
  await expect(m.rejectDraft({ path: { id: loud }, body: { reason: 'Off-brand' } }), 200);

  // A/B tests: a draft campaign's first step in two variants, its statistics, the winner promoted once.
  const tested = (await expect(
    m.createCampaign({ body: { name: 'Subjects', site_id: site, steps: [{ subject: 'Base', html: '<p>Base</p>' }] } }),
    201,
  )).data.id;
  const abTest = (await expect(
    m.createAbTest({
      body: {
        campaign_id: tested,
        name: 'Subjects',
        variants: [{ subject: 'Spring A' }, { subject: 'Spring B', from_name: 'The garden' }],
        test_share: 0.2,
        metric: 'opens',
        min_recipients: 50,
        confidence: 0.95,
        auto_promote: false,
      },
      headers: { 'Idempotency-Key': 'ts-ab-test-1' },
    }),
    201,
  )).data.id;
  await expect(m.listAbTests({ query: { campaign_id: tested, limit: 10 } }), 200);
  await expect(m.getAbTest({ path: { id: abTest } }), 200);
  await expect(m.checkAbSignificance({ path: { id: abTest } }), 200);
  await expect(m.promoteAbWinner({ path: { id: abTest }, body: { variant: 1 } }), 200);
  await expect(m.promoteAbWinner({ path: { id: abTest }, body: {} }), 409);

  // Approvals: an action held back by the policy, approved and rejected with a key holding the approve right.
  const policy = (await expect(m.getApprovalPolicy(), 200)).data;
  await expect(m.putApprovalPolicy({ body: { ...policy, applies_to: 'everyone', expires_after_minutes: 60 } }), 200);
  const approver = (await expect(m.createApiKey({ body: { name: 'approver', scope: 'write', approve: true } }), 201)).data;
  const approving = createMailClient({ ...options, apiKey: approver.secret });
  const held = (await expect(m.updateCampaignStatus({ path: { id: promoted.campaign.id }, body: { status: 'active' } }), 202)).data as {
    approval_id: string;
  };
  await expect(m.listPendingApprovals({ query: { limit: 10 } }), 200);
  await expect(m.checkApproval({ path: { id: held.approval_id } }), 200);
  await expect(approving.approveApproval({ path: { id: held.approval_id } }), 200);
  const later = (await expect(
    m.launchCampaign({ body: { name: 'Later', site_id: site, emails: [{ subject: 'Later', html: '<p>Later</p>' }], audience: 'none' } }),
    202,
  )).data as { approval_id: string };
  await expect(approving.rejectApproval({ path: { id: later.approval_id }, body: { reason: 'Not now' } }), 200);
  await expect(m.putApprovalPolicy({ body: policy }), 200);

  const template = (await expect(m.createTemplate({ body: { name: 'Welcome', brief: 'Say hello' } }), 201)).data.id;
  await expect(m.listTemplates(), 200);
  await expect(m.getTemplate({ path: { id: template } }), 200);
  await expect(m.updateTemplate({ path: { id: template }, body: { subject_hint: 'Hello', tags: ['onboarding'] } }), 200);
  // No model in the stack: the translation is refused, nothing is made.
  await expect(m.translateTemplate({ path: { id: template }, body: { language: 'de' } }), 422);
  await expect(m.deleteTemplate({ path: { id: template } }), 204);

  const vip: Mail.SegmentRules = {
    all: [
      { field: 'tag', op: 'eq', value: 'vip' },
      {
        any: [
          { field: 'opened_within_days', op: 'exists', value: true },
          { field: 'properties.plan.tier', op: 'eq', value: 'pro' },
        ],
      },
    ],
  };
  const segment = (await expect(m.createSegment({ body: { name: 'VIPs', rules: vip } }), 201)).data.id;
  await expect(m.listSegments({ query: { limit: 10 } }), 200);
  await expect(m.getSegment({ path: { id: segment } }), 200);
  await expect(m.updateSegment({ path: { id: segment }, body: { description: 'Our best', rules: vip } }), 200);
  await expect(m.listSegmentContacts({ path: { id: segment }, query: { limit: 10 } }), 200);
  await expect(m.previewSegment({ body: { segment_id: segment, sample_size: 5 } }), 200);
  await expect(m.estimateSegmentSize({ body: { rules: vip, site_id: site } }), 200);
  await expect(m.winBackDraft({ query: { site_id: site, inactive_days: 30 } }), 200);
  await expect(m.enrollSegment({ path: { id: campaign }, body: { site_id: site, segment_id: segment } }), 200);
  await expect(m.createSegmentFromDescription({ body: { name: 'Buyers', description: 'People who bought' } }), 422);
  await expect(m.deleteSegment({ path: { id: segment } }), 204);
  await expect(m.addSuppression({ body: { email: 'gone@example.com', note: 'asked' } }), 201);
  await expect(m.listSuppressions(), 200);
  await expect(m.removeSuppression({ path: { email: 'gone@example.com' } }), 204);

  const answer = (await expect(
    m.send({
      body: { to: 'ada@example.com', site_id: site, subject: 'Hello', html: '<p>Hi <a href="https://example.com/start">start</a></p>', text: 'Hi' },
    }),
    200,
    202,
  )).data;
  // A 202 may also be an approval (an agent's send past the day's allowance): not this key's.
  if (!('id' in answer)) throw new Error(`send held for approval: ${JSON.stringify(answer)}`);
  const sent = answer;
  const tokens = await trackingTokens(sent.id);
  await expect(anonymous.trackOpen({ path: { token: tokens.o }, parseAs: 'blob' }), 200);
  // The click answers a redirect, not followed here.
  await expect(anonymous.trackClick({ path: { token: tokens.c }, redirect: 'manual' }), 302);
  await expect(m.recordConversion({ body: { email: 'ada@example.com', revenue: 12.5, currency: 'EUR', order_id: 'o-1' } }), 200);
  await expect(m.listEmails({ query: { limit: 10 } }), 200);
  await expect(m.getEmail({ path: { id: sent.id } }), 200);
  await expect(m.listEmailEvents({ path: { id: sent.id } }), 200);
  await expect(m.previewEmail({ body: { site_id: site, subject: 'Hello', html: '<p>Hi <a href="https://example.com/">go</a></p>' } }), 200);
  await expect(m.validateTemplate({ body: { html: '<p>Hi {{name}}</p>', kind: 'transactional' } }), 200);
  await expect(m.listEvents({ query: { limit: 10, event: 'signup' } }), 200);
  await expect(m.getContactTimeline({ path: { id: ada }, query: { limit: 10 } }), 200);
  await expect(m.exportContact({ path: { id: ada } }), 200);

  await expect(m.analyticsOverview({ query: { site_id: site } }), 200);
  await expect(m.analyticsCampaigns(), 200);
  await expect(m.analyticsConversion({ query: { campaign_id: campaign } }), 200);
  await expect(m.getSiteInsights({ path: { id: site }, query: { days: 30 } }), 200);
  await expect(m.getAbuseMonitorStatus({ path: { id: site } }), 200);
  await expect(m.overrideAbuseMonitor({ path: { id: site }, body: { reason: 'list cleaned', ttl_hours: 24 } }), 200);
  await expect(m.dnsblCheck({ path: { id: site } }), 200);
  await expect(m.dnsblDelistingDraft({ path: { id: site }, query: { zone: 'dbl.example.invalid' } }), 200);
  await expect(m.suggestSendTime({ path: { id: site }, query: { days: 30 } }), 200);
  await expect(m.campaignAdvisor({ query: { campaign_id: campaign } }), 200);
  await expect(m.runPortfolioAnalysis({ query: { days: 30 } }), 200);
  await expect(m.recoveryPlan({ path: { id: site } }), 200);
  await expect(m.diagnoseDeliveryIssue({ query: { site_id: site } }), 200);
  // No model is configured for this deployment: nothing is invented.
  await expect(m.optimizeSubjectLines({ body: { campaign_id: campaign, site_id: site } }), 422);
  await expect(m.suggestContentTopics({ body: { site_id: site } }), 422);
  await expect(m.createTemplateFromBrief({ body: { site_id: site, name: 'Spring', brief: 'Spring seeds' } }), 422);
  await expect(m.setupCampaignFromBrief({ body: { site_id: site, campaign_name: 'Spring', brief: 'Spring seeds' } }), 422);
  const onboarding = { name: 'Garden', domain: 'news.garden.example' };
  await expect(m.onboardNewSite({ body: onboarding }), 201);
  await expect(m.onboardNewSite({ body: onboarding }), 200);
  await expect(m.getDomainHealth({ path: { id: site } }), 200);
  await expect(m.deliverabilityCheck({ path: { id: site } }), 200);
  await expect(m.getScoringRules(), 200);
  await expect(m.updateScoringRules({ body: { open_points: 2, half_life_days: 14 } }), 200);
  await expect(m.explainContactScore({ path: { id: ada } }), 200);
  const form = (await expect(
    m.createForm({ body: { site_id: site, name: 'Newsletter', tags: ['news'], fields: [{ name: 'first_name', label: 'First name' }] } }),
    201,
  )).data;
  await expect(m.listForms({ query: { site_id: site, limit: 10 } }), 200);
  await expect(m.getForm({ path: { id: form.id } }), 200);
  await expect(anonymous.signupFormPage({ path: { id: form.id }, parseAs: 'text' }), 200);
  // Without the page's signed render time (as the embedded snippet posts): the page again.
  await expect(anonymous.submitSignupForm({ path: { id: form.id }, parseAs: 'text' }), 200);
  await expect(anonymous.confirmSignup({ path: { token: 'not-a-signed-token' } }), 404);
  await expect(m.getFormStats({ path: { id: form.id } }), 200);
  await expect(m.deleteForm({ path: { id: form.id } }), 204);
  // Social publishing: no platform is configured in the stack, so nothing leaves it.
  const post = (await expect(
    m.createSocialPost({ body: { title: 'Launch', content: 'We launched.', platforms: ['mastodon', 'x'] } }),
    201,
  )).data;
  await expect(m.listSocialPosts({ query: { limit: 10 } }), 200);
  await expect(m.getSocialPost({ path: { id: post.id } }), 200);
  await expect(m.updateSocialPost({ path: { id: post.id }, body: { content: 'We launched today.' } }), 200);
  await expect(m.adaptSocialPost({ body: { email_campaign_id: campaign, platforms: ['x', 'bluesky'] } }), 200);
  const socialCampaign = (await expect(
    m.createSocialCampaign({ body: { name: 'Spring', platform: 'x', destination_url: 'https://example.com/spring' } }),
    201,
  )).data;
  await expect(m.listSocialCampaigns({ query: { limit: 10 } }), 200);
  await expect(m.scheduleSocialPost({ path: { id: socialCampaign.id }, body: { content: 'Spring is here', publisher: 'Ana' } }), 422);
  await expect(m.listSocialAccounts(), 200);
  await expect(m.connectSocialAccount({ path: { platform: 'mastodon' }, body: {} }), 422);
  await expect(m.connectSocialPlatform({ path: { platform: 'mastodon' } }), 422);
  await expect(anonymous.socialConnectCallback({ path: { platform: 'mastodon' }, query: { code: 'c', state: 'not-a-state' } }), 400);
  await expect(m.deleteSocialPost({ path: { id: post.id } }), 204);
  await expect(m.getSmsProviderStatus(), 200);
  await expect(
    m.setContactSmsConsent({ path: { id: ada }, body: { status: 'granted', phone: '+1 415 867 5311', timezone: 'Europe/London' } }),
    200,
  );
  await expect(m.previewSmsCost({ body: { body: 'Sale: 5€ off 😀', country: 'US' } }), 200);
  await expect(
    m.setSmsProvider({ body: { provider: 'twilio', account_sid: 'AC' + '0'.repeat(32), auth_token: 'a'.repeat(32), from_number: '+14158675309' } }),
    200,
  );
  await expect(m.sendSms({ body: { contact_id: ada, body: 'Hello', idempotency_key: 'ts-sms-1' } }), 201);
  await expect(m.sendSmsCampaign({ body: { site_id: site, name: 'Sale', body: 'Sale today' } }), 201);
  await expect(m.listSmsLog({ query: { limit: 10 } }), 200);
  await expect(m.listSmsInbound({ query: { limit: 10 } }), 200);
  // Twilio's callbacks are signed with the project's auth token: a wrong signature answers 401.
  await expect(
    anonymous.receiveTwilioInbound({
      path: { project_id: env('MAIL_PROJECT_ID') },
      headers: { 'X-Twilio-Signature': 'invalid' },
      body: { MessageSid: 'SM1', From: '+14158675311', Body: 'STOP' },
    }),
    401,
  );
  await expect(
    anonymous.receiveTwilioStatus({
      path: { project_id: env('MAIL_PROJECT_ID') },
      headers: { 'X-Twilio-Signature': 'invalid' },
      body: { MessageSid: 'SM1', MessageStatus: 'delivered' },
    }),
    401,
  );
  const block = (await expect(
    m.createContentBlock({ body: { name: 'scenario_footer', html: '<p>Bye</p>' } }),
    201,
  )).data;
  await expect(m.listContentBlocks({ query: { limit: 10 } }), 200);
  await expect(m.getContentBlock({ path: { id: block.id } }), 200);
  await expect(m.updateContentBlock({ path: { id: block.id }, body: { html: '<p>Bye now</p>' } }), 200);
  // A public name that does not resolve: stored; the pipeline reports its read failed.
  const source = (await expect(
    m.createContentSource({ body: { site_id: site, url: 'https://feeds.invalid/scenario.xml' } }),
    201,
  )).data;
  await expect(m.listContentSources({ query: { site_id: site, limit: 10 } }), 200);
  await expect(m.triggerContentPipeline({ body: { source_id: source.id } }), 200);
  await expect(m.deleteContentSource({ path: { id: source.id } }), 204);
  await expect(m.deleteContentBlock({ path: { id: block.id } }), 200);
  const flow = (await expect(
    m.createAutomation({
      body: {
        site_id: site,
        name: 'Welcome flow',
        trigger: { type: 'event', event: 'signed_up' },
        steps: [
          { type: 'send_email', subject: 'Welcome', html: '<p>Hi</p>' },
          { type: 'wait', minutes: 60 },
          { type: 'branch', condition: { type: 'opened_previous' }, else_skip: 1 },
          { type: 'add_tag', tag: 'engaged' },
        ],
      },
    }),
    201,
  )).data;
  await expect(m.listAutomations({ query: { site_id: site, limit: 10 } }), 200);
  await expect(m.getAutomation({ path: { id: flow.id } }), 200);
  await expect(m.updateAutomation({ path: { id: flow.id }, body: { name: 'Welcome flow 2' } }), 200);
  await expect(m.activateAutomation({ path: { id: flow.id } }), 200);
  await expect(m.enrollAutomation({ path: { id: flow.id }, body: { subscriber_id: ada } }), 201);
  await expect(m.triggerAutomation({ path: { id: flow.id } }), 200);
  await expect(m.previewAutomation({ path: { id: flow.id } }), 200);
  await expect(m.pauseAutomation({ path: { id: flow.id } }), 200);
  await expect(m.deleteAutomation({ path: { id: flow.id } }), 204);
  await expect(m.analyticsPerformance({ query: { days: 30 } }), 200);
  await expect(m.analyticsPortfolio({ query: { rank_by: 'sent' } }), 200);
  await expect(m.analyticsTotals(), 200);
  await expect(m.analyticsEngagement({ query: { site_id: site } }), 200);
  await expect(m.listSendDeadLetters({ query: { state: 'failed' } }), 200);
  await expect(m.listCronRuns({ query: { job: 'housekeeping' } }), 200);
  await expect(m.exportData({ query: { format: 'json' }, parseAs: 'text' }), 200);
  await expect(m.exportFull({ query: { site_id: site }, parseAs: 'text' }), 200);

  await expect(m.setProvider({ body: { kind: 'resend', api_key: 're_123456789' } }), 200);
  await expect(m.clearProvider(), 204);
  await expect(m.getLanguageModel(), 200);
  await expect(m.setLanguageModel({ body: { base_url: 'https://llm.invalid/v1', model: 'm', api_key: 'sk-1' } }), 200);
  await expect(m.clearLanguageModel(), 200);
  // Without a provider of its own the project tests the deployment's default: 200.
  await expect(m.testProvider(), 200);
  const secret = (await expect(m.rotateWebhookSecret(), 201)).data.secret;
  const event = { type: 'email.delivered', data: { email_id: 'unknown-message' } };
  await expect(
    anonymous.receiveProjectProviderWebhook({
      path: { provider: 'resend', project_id: env('MAIL_PROJECT_ID') },
      body: event,
      headers: signed(secret, event),
    }),
    200,
  );
  await expect(
    anonymous.receiveProviderWebhook({ path: { provider: 'resend' }, body: event, headers: signed(env('WEBHOOK_SECRET'), event) }),
    200,
  );
  await expect(m.getProject(), 200);
  await expect(m.getPlan(), 200);
  const key = (await expect(m.createApiKey({ body: { name: 'agent', scope: 'read', tool_groups: ['contacts'] } }), 201)).data;
  await expect(m.listApiKeys(), 200);
  await expect(m.revokeApiKey({ path: { id: key.id } }), 200);
  // No platform answers in the stack: a Mailchimp key without its data center is refused first.
  await expect(m.connectPlatform({ body: { platform: 'mailchimp', credentials: { api_key: 'no-data-center' } } }), 422);
  await expect(m.listPlatformConnections({ query: { limit: 10 } }), 200);
  await expect(m.disconnectPlatform({ path: { id: crypto.randomUUID() } }), 404);
  // No connection and no platform in the stack: the migration routes answer their 404s.
  await expect(m.startPlatformMigration({ path: { id: crypto.randomUUID() }, body: { site_id: site } }), 404);
  await expect(
    m.migrateCampaignsFrom({ body: { provider: 'mailchimp', oauth_token: 'probe', site_id: crypto.randomUUID() } }),
    404,
  );
  // A generic CSV export through a column mapping: queued at once, then read back.
  const csvRun = (
    await expect(
      m.importPlatformCsv({
        body: {
          site_id: site,
          layout: 'generic',
          csv: 'Email,Name,City\nada@example.com,Ada,Paris\n',
          mapping: { email: 'Email', first_name: 'Name', properties: { city: 'City' } },
        },
      }),
      202,
    )
  ).data.id;
  await expect(m.listImportHistory({ query: { limit: 10 } }), 200);
  await expect(m.getPlatformImport({ path: { id: csvRun } }), 200);
  await expect(m.getPlatformImport({ path: { id: crypto.randomUUID() } }), 404);
  // Commerce platforms: a Stripe source and its triggers; no platform signs here, so a wrong
  // signature is 401 and an unknown source 404.
  const commerceSource = (await expect(
    m.addCommerceSource({ body: { platform: 'stripe', signing_secret: 'whsec_ts', site_id: site } }),
    201,
  )).data;
  await expect(m.listCommerceSources({ query: { limit: 10 } }), 200);
  const trigger = (await expect(
    m.configurePlatformTrigger({
      body: { platform: 'stripe', event_type: 'checkout.session.completed', action: 'tag', tag: 'buyer' },
    }),
    201,
  )).data;
  await expect(m.listPlatformTriggers({ query: { platform: 'stripe' } }), 200);
  await expect(m.listPlatformEvents({ query: { limit: 10 } }), 200);
  await expect(
    anonymous.receiveStripeWebhook({
      path: { source_id: commerceSource.id },
      headers: { 'Stripe-Signature': 't=1,v1=00' },
      body: { id: 'evt_ts', type: 'checkout.session.completed', data: { object: {} } },
    }),
    401,
  );
  await expect(
    anonymous.receiveShopifyWebhook({
      path: { source_id: crypto.randomUUID() },
      headers: { 'X-Shopify-Hmac-Sha256': 'AA==', 'X-Shopify-Topic': 'orders/create', 'X-Shopify-Webhook-Id': 'w1' },
      body: { id: 1 },
    }),
    404,
  );
  await expect(m.deletePlatformTrigger({ path: { id: trigger.id } }), 204);
  await expect(m.deleteCommerceSource({ path: { id: commerceSource.id } }), 204);
  await expect(m.inviteTeamMember({ body: { email: 'grace@example.com', role: 'viewer' } }), 201);
  await expect(m.listTeamMembers(), 200);
  await expect(m.listNotifications({ query: { unread: true } }), 200);
  await expect(m.markNotificationsRead({ body: {} }), 200);
  await expect(m.erasePersonalData({ path: { id: bob } }), 200);
  await expect(m.listDeletionLog(), 200);
  const hook = (await expect(
    m.subscribeWebhook({ body: { url: 'https://hooks.example.com/in', events: ['contact.unsubscribed', 'email.bounced'] } }),
    201,
  )).data;
  assert.ok(hook.secret?.startsWith('whsec_'), JSON.stringify(hook));
  await expect(anonymous.unsubscribePage({ path: { token: tokens.u }, parseAs: 'text' }), 200);
  await expect(anonymous.unsubscribe({ path: { token: tokens.u }, parseAs: 'text' }), 200);

  await expect(m.listWebhookSubscriptions({ query: { limit: 10 } }), 200);
  await expect(m.getWebhookSubscription({ path: { id: hook.id } }), 200);
  await expect(m.updateWebhookSubscription({ path: { id: hook.id }, body: { rotate_secret: true, description: 'CRM' } }), 200);
  const deliveries = (await expect(m.listWebhookDeliveries({ query: { subscription_id: hook.id, limit: 10 } }), 200)).data.data;
  assert.ok(deliveries.length > 0, 'the unsubscribe made no delivery');
  await expect(m.replayWebhookDelivery({ path: { id: deliveries[0]!.id } }), 200, 409);
  await expect(m.deleteWebhookSubscription({ path: { id: hook.id } }), 204);
  await expect(m.putChatAlerts({ body: { url: 'https://chat.example.com/services/T0/B0/token' } }), 200);
  await expect(m.getChatAlerts(), 200);
  await expect(m.deleteChatAlerts(), 204);
});
