/**
 * Every operation of memory-api's document through the typed client (the generated-client
 * scenario of tests/clients/scenario.py, in TypeScript). An operation of the document that no
 * step calls, and that is not listed in PENDING, fails the test.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, test } from 'node:test';

import { createMemoryClient, MemoryApi, type Memory } from '../src/index.js';
import { env, sleep } from './env.js';
import { Coverage, expect, methodName } from './scenario.js';

/** Operations not yet driven by a step here (each one still callable: see the last test). */
const PENDING: string[] = [];

const coverage = new Coverage('memory-api', 'memory-api.openapi.json');
const options = { baseUrl: env('MEMORY_URL'), apiKey: env('MEMORY_KEY'), fetch: coverage.recording() };
const m = createMemoryClient(options);
const anonymous = createMemoryClient({ ...options, apiKey: undefined });

after(() => {
  const missing = coverage.operations.filter((o) => !coverage.called.has(o.id) && !PENDING.includes(o.id));
  const stale = PENDING.filter((id) => coverage.called.has(id) || !coverage.operations.some((o) => o.id === id));
  console.log(`memory-api: ${coverage.called.size} of ${coverage.operations.length} operations called, ${PENDING.length} pending`);
  assert.deepEqual(missing.map((o) => `${o.id} (${o.method} ${o.path})`), [], 'operations no step calls');
  assert.deepEqual(stale, [], 'PENDING lists operations that are called or gone');
});

test('every operation of the document is a method of MemoryApi', () => {
  for (const operation of coverage.operations) {
    const name = methodName(operation.id) as keyof MemoryApi;
    assert.equal(typeof MemoryApi.prototype[name], 'function', operation.id);
  }
});

test('memory-api: health, documents, OAuth', async () => {
  await expect(m.healthz(), 200);
  await expect(m.readyz(), 200);
  await expect(m.healthDetails(), 200);
  await expect(m.serve(), 200);
  await expect(m.openapiJson(), 200);
  await expect(m.openapiYaml(), 200);
  await expect(m.openapiYamlRoot(), 200);
  await expect(m.oauthServerMetadata(), 200);
  await expect(m.oauthResourceMetadata(), 200);
  await expect(m.oauthApiResourceMetadata(), 200);
  const registered = await expect(
    m.registerOauthClient({
      body: { redirect_uris: ['http://127.0.0.1:33418/callback'], client_name: 'ts-scenario', token_endpoint_auth_method: 'none' },
    }),
    201,
  );
  const client = registered.data.client_id;
  const refused = await expect(
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
  assert.equal((refused.data as unknown as { error: string }).error, 'invalid_grant');
  await expect(m.revokeOauthToken({ body: { token: 'not-issued', client_id: client } }), 200);
});

test('memory-api: products, memory, signals, events, datasets', async () => {
  const product = (await expect(m.createProduct({ body: { name: 'atlas', description: 'The atlas', status: 'active' } }), 201)).data;
  await expect(m.listProducts({ query: { limit: 10 } }), 200);
  await expect(m.getProduct({ path: { name: 'atlas' } }), 200);
  const secret = (await expect(m.rotateProductSigningSecret({ path: { name: 'atlas' } }), 200)).data.signing_secret;
  await expect(m.updateProductState({ path: { name: 'atlas' }, body: { status: 'beta', summary: 'first' } }), 200);
  await expect(m.getProductState({ path: { name: 'atlas' } }), 200);

  await expect(m.putIdentity({ body: { identity: { name: 'Ada' }, products: ['atlas'], constraints: ['short'] } }), 200);
  await expect(m.getIdentity(), 200);

  const decision = (await expect(
    m.createDecision({ body: { decision: 'Use PostgreSQL', product_name: 'atlas', reasoning: 'It is there' } }),
    201,
  )).data;
  await expect(m.searchDecisions({ query: { q: 'PostgreSQL', limit: 5 } }), 200);
  const entry = (await expect(m.createFreeForm({ body: { content: 'Prefers short answers', tags: ['style'] } }), 201)).data;
  await expect(m.listFreeForm({ query: { limit: 10 } }), 200);
  await expect(m.searchMemory({ query: { q: 'PostgreSQL' } }), 200);

  // A signal with the key, then the same signal signed with the product's secret, without a
  // key: a duplicate of the first.
  const signal = { event_type: 'deploy', title: 'v2 shipped', severity: 'error', external_id: 'evt-1' } as const;
  const first = (await expect(m.ingestProjectSignal({ path: { project_id: product.id }, body: signal }), 200)).data;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const tag = createHmac('sha256', secret).update(`${timestamp}.${JSON.stringify(signal)}`).digest('hex');
  const again = (await expect(
    anonymous.ingestProjectSignal({
      path: { project_id: product.id },
      body: signal,
      headers: { 'X-Memory-Signature': `sha256=${tag}`, 'X-Memory-Timestamp': timestamp },
    }),
    200,
  )).data;
  assert.equal(again.duplicate, true);
  assert.equal(again.signal_id, first.signal_id);
  const producer: Memory.ProducerSignal = {
    source: 'api',
    signal_type: 'latency_spike',
    dedup_key: 'p99',
    severity: 'warning',
    title: 'p99 above budget',
    related_decisions: [decision.id],
    payload: { triggered_at: '2026-01-01T00:00:00Z', metric_key: 'p99_ms', current_value: 480.5 },
  };
  await expect(m.ingestProducerSignals({ body: { signals: [producer, producer] } }), 201);
  await expect(m.listFeed({ query: { limit: 10 } }), 200);
  await expect(m.listMemoryConfidence({ query: { limit: 10 } }), 200);

  const run = (await expect(m.consolidateMemory({ body: { compute_budget_tokens: 1000 } }), 200)).data;
  await expect(m.getConsolidationRun({ path: { runId: run.runId } }), 200);

  const exported = (await expect(m.exportMif({ query: { scope: 'full' } }), 200)).data;
  const staged = (await expect(m.importMif({ body: { mif: exported, merge_strategy: 'merge' } }), 200)).data;
  assert.ok(staged.id, JSON.stringify(staged));
  await expect(m.applyMifImport({ path: { id: staged.id! } }), 200);

  const event = { event_type: 'signup', idempotency_key: 'ts-signup-1', payload: { plan: 'pro' } };
  const created = (await expect(m.ingestEvent({ body: event }), 201)).data;
  const repeat = (await expect(m.ingestEvent({ body: event }), 200)).data;
  assert.equal(repeat.event_id, created.event_id);
  for (const cost of [0.1, 0.2]) {
    await expect(
      m.ingestEvent({
        body: { event_type: 'ai_cost', payload: { product: 'atlas', model: 'small', cost_usd: cost, input_tokens: 10, output_tokens: 2 } },
      }),
      201,
    );
  }
  const costs = (await expect(m.getAiCosts({ query: { days: 7 } }), 200)).data;
  assert.equal(costs.event_count, 2);
  await expect(m.getProductAiCosts({ path: { product: 'atlas' }, query: { days: 7 } }), 200);

  const rows = { rows: [{ id: 1, visits: 10 }, { id: 2, visits: 12.5 }], idempotency_key: 'ts-rows-1' };
  await expect(m.ingestDatasetRows({ path: { name: 'atlas-metrics' }, body: rows }), 201);
  await expect(m.ingestDatasetRows({ path: { name: 'atlas-metrics' }, body: rows }), 200);
  const file = new Blob(['id,visits\n3,7\n4,\n'], { type: 'text/csv' });
  const preview = (await expect(m.uploadDataset({ body: { file, dataset_name: 'atlas-metrics' } }), 201)).data;
  assert.equal(preview.row_count, 2);
  await expect(m.confirmUpload({ body: { upload_id: preview.upload_id, schema_overrides: { visits: { type: 'number' } } } }), 201);
  await expect(m.listDatasets({ query: { limit: 10 } }), 200);
  const dataset = (await expect(m.getDataset({ path: { name: 'atlas-metrics' } }), 200)).data;
  assert.equal(dataset.row_count, 4);
  const page = (await expect(m.listDatasetRows({ path: { name: 'atlas-metrics' }, query: { limit: 3 } }), 200)).data;
  await expect(m.listDatasetRows({ path: { name: 'atlas-metrics' }, query: { limit: 3, cursor: page.next_cursor ?? undefined } }), 200);

  await expect(m.deleteDecision({ path: { id: decision.id } }), 200);
  await expect(m.deleteFreeForm({ path: { id: entry.id } }), 200);
});

test('memory-api: workspaces, the bridge, agents', async () => {
  const workspace = (await expect(m.registerWorkspace({ body: { name: 'atlas-repo', location: 'git@example.com:acme/atlas.git' } }), 201)).data;
  const spare = (await expect(m.registerWorkspace({ body: { name: 'spare' } }), 201)).data;
  await expect(m.listWorkspaces({ query: { limit: 10 } }), 200);
  await expect(m.setScope({ body: { workspace_id: workspace.id } }), 200);
  await expect(m.getScope(), 200);
  const synced = (await expect(m.syncWorkspace({ path: { id: workspace.id }, body: { budget_tokens: 2000 } }), 200)).data;
  const edited = synced.file.content + '- A rule written by hand\n';
  const ingested = (await expect(
    m.ingestWorkspaceSnapshot({ path: { id: workspace.id }, body: { files: [{ path: 'AGENTS.md', content: edited }] } }),
    200,
  )).data;
  assert.equal(ingested.drift.length, 1);
  await expect(m.listWorkspaceDrift({ query: { workspace_id: workspace.id, status: 'open' } }), 200);
  await expect(m.resolveWorkspaceDrift({ path: { id: ingested.drift[0]!.id }, body: { resolution: 'accept', note: 'keep it' } }), 200);
  await expect(m.listWorkspaceSyncLog({ query: { workspace_id: workspace.id, limit: 10 } }), 200);
  await expect(m.deleteWorkspace({ path: { id: spare.id } }), 200);

  await expect(m.exportKernel(), 200);
  await expect(m.exportKernelMarkdown({ query: { download: true }, parseAs: 'text' }), 200);
  let job = (await expect(m.generateAgentContext({ body: { wait: true, budget_tokens: 1000 } }), 200, 202)).data;
  for (let i = 0; i < 100; i++) {
    const polled = (await expect(m.getAgentContextJob({ path: { jobId: job.job_id } }), 200)).data;
    job = polled;
    if (polled.status === 'completed' || polled.status === 'failed') break;
    await sleep(100);
  }
  assert.equal(job.status, 'completed');
  await expect(m.getBridgeStatus(), 200);
  await expect(m.getLinkedAccount(), 200);
  const agent = (await expect(m.connectAgent({ body: { name: 'ts-agent', kind: 'codex' } }), 201)).data;
  await expect(m.disconnectAgent({ path: { id: agent.agent.id } }), 200);
  await expect(m.setScope({ body: {} }), 200);
});

test('memory-api: connectors, drafts, model credentials and runs, renders', async () => {
  const command = { raw_content: 'Remember: the user prefers tea', ai_vendor: 'claude', requested_capability: 'memory.write' } as const;
  const first = (await expect(m.submitConnectorIntake({ body: command, headers: { 'Idempotency-Key': 'ts-intake-1' } }), 200)).data;
  const retry = (await expect(m.submitConnectorIntake({ body: command, headers: { 'Idempotency-Key': 'ts-intake-1' } }), 200)).data;
  assert.deepEqual(retry, first);
  await expect(m.listProposals({ query: { status: 'pending', limit: 10 } }), 200);
  await expect(m.getProposal({ path: { id: first.proposal_id! } }), 200);
  await expect(m.approveProposal({ path: { id: first.proposal_id! } }), 200);
  await expect(m.approveProposal({ path: { id: first.proposal_id! } }), 409);
  const other = (await expect(m.submitConnectorIntake({ body: { raw_content: 'Forget the tea' } }), 200)).data;
  await expect(m.rejectProposal({ path: { id: other.proposal_id! } }), 200);

  // Leads: queued without a proposal, listed, accepted once; another dismissed.
  const lead = (await expect(m.submitConnectorIntake({ body: { raw_content: 'Jane wants a demo', requested_capability: 'lead.capture' } }), 200)).data;
  assert.equal(lead.outcome, 'lead_queued', JSON.stringify(lead));
  const leads = (await expect(m.listLeads({ query: { status: 'pending', limit: 10 } }), 200)).data;
  assert.ok(leads.data.some((l) => l.id === lead.lead_id), JSON.stringify(leads));
  await expect(m.acceptLead({ path: { id: lead.lead_id! } }), 200);
  await expect(m.dismissLead({ path: { id: lead.lead_id! } }), 409);
  const another = (await expect(m.submitConnectorIntake({ body: { raw_content: 'Bob wants pricing', requested_capability: 'lead' } }), 200)).data;
  await expect(m.dismissLead({ path: { id: another.lead_id! } }), 200);

  const account = 'owner@example.com';
  const thread: Memory.ThreadDraft = {
    thread_id: '18B83766F0BCBAC0',
    latest_message_id: 'ffee01',
    latest_message_at: '2026-03-01T10:00:00Z',
    generated_at: '2026-03-01T10:05:00Z',
    why: 'They asked about pricing',
    drafts: [{ tone: 'warm', text: 'Happy to help.' }],
  };
  await expect(m.replaceInboxDrafts({ body: { account: { email: account }, replace: true, drafts: [thread] } }), 200);
  const state = (await expect(
    m.getInboxDrafts({ query: { account_email: account, thread_perm_id: 'thread-f:1781234567890123456', latest_message_at: '2026-03-01T10:00:00Z' } }),
    200,
  )).data;
  assert.equal(state.state, 'draft_available');

  await expect(m.createContentBrief({ body: { topic: 'Spring seeds' } }), 422);
  const stored = (await expect(m.createByok({ body: { service: 'openai', label: 'Mine', key: 'sk-ts-scenario-0123456789abcdef' } }), 201)).data;
  await expect(m.listByok({ query: { limit: 10 } }), 200);
  const brief = (await expect(m.createContentBrief({ body: { topic: 'Spring seeds', format: 'newsletter', audience: 'gardeners' } }), 202)).data;
  await expect(m.getContentBriefStatus({ path: { requestId: brief.id } }), 200);
  const marketing = (await expect(m.runAutonomousMarketing({ body: { goal: 'More signups', channels: ['email'], horizon_days: 14 } }), 202)).data;
  await expect(m.getAutonomousMarketingRun({ path: { runId: marketing.id } }), 200);
  const watch = (await expect(m.runCompetitorWatch({ body: { competitors: [{ name: 'Acme', notes: 'cheaper' }], focus: 'pricing' } }), 202)).data;
  await expect(m.getCompetitorWatchRun({ path: { runId: watch.id } }), 200);
  // A watched URL at the cloud metadata address is refused under any policy.
  await expect(m.runCompetitorWatch({ body: { competitors: [{ name: 'Acme', urls: ['http://169.254.169.254/latest/meta-data/'] }] } }), 400);
  // A stored watch: created, listed, read, paused and rescheduled, deleted.
  const storedWatch = (await expect(
    m.createCompetitorWatch({
      body: { name: 'Acme weekly', interval_minutes: 1440, focus: 'pricing', competitors: [{ name: 'Acme', urls: ['https://acme.example/pricing'] }] },
    }),
    201,
  )).data;
  const watches = (await expect(m.listCompetitorWatches({ query: { limit: 100 } }), 200)).data;
  assert.ok(watches.data.some((w) => w.id === storedWatch.id));
  await expect(m.getCompetitorWatch({ path: { id: storedWatch.id } }), 200);
  const changed = (await expect(m.updateCompetitorWatch({ path: { id: storedWatch.id }, body: { paused: true, interval_minutes: 120 } }), 200)).data;
  assert.equal(changed.paused, true);
  await expect(m.deleteCompetitorWatch({ path: { id: storedWatch.id } }), 200);
  await expect(m.getCompetitorWatch({ path: { id: storedWatch.id } }), 404);

  const producible = (await expect(
    m.createProducibleJob({
      body: { format: 'csv', ir: { title: 'T', blocks: [{ type: 'paragraph', runs: [{ text: 'hello' }] }] } },
    }),
    202,
  )).data;
  await expect(m.getProducibleJobStatus({ path: { jobId: producible.jobId } }), 200);
  await expect(
    anonymous.downloadRenderedFile({
      path: { key: `producibles/${producible.jobId}.csv` },
      query: { expires: 1, signature: '0'.repeat(64) },
    }),
    403,
  );
  const brief5 = { brief: 'Launch day for the new plan', duration: 5 };
  const waited = (await expect(m.renderVideo({ body: brief5 }), 202)).data;
  const queued = (await expect(m.createVideoJob({ body: brief5 }), 202)).data;
  for (const job of [waited, queued]) {
    assert.ok('jobId' in job, JSON.stringify(job));
    await expect(m.getVideoJobStatus({ path: { jobId: job.jobId } }), 200);
  }
  await expect(m.deleteByok({ path: { id: stored.id } }), 200);
});
