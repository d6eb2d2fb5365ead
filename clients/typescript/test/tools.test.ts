/**
 * mail-api's MCP tool mirror through the typed client generated from
 * proto-docs/mail-mcp-tools.openapi.json: every tool is a method, and a few are called (the
 * MCP test, scripts/mcp-test.sh, drives every tool group through the MCP SDK).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ApiError, createMailClient, createMailToolsClient, MailToolsApi } from '../src/index.js';
import { env } from './env.js';
import { Coverage, expect, methodName } from './scenario.js';

const coverage = new Coverage('mail-api MCP tools', 'mail-mcp-tools.openapi.json');
// With the mirror's prefix: taken off once, the document's paths carry it.
const tools = createMailToolsClient({ baseUrl: `${env('MAIL_URL')}/api/mcp`, apiKey: env('MAIL_KEY'), fetch: coverage.recording() });
const mail = createMailClient({ baseUrl: env('MAIL_URL'), apiKey: env('MAIL_KEY') });

test('every tool of the document is a method of MailToolsApi', () => {
  assert.ok(coverage.operations.length > 10, `${coverage.operations.length} operations`);
  for (const operation of coverage.operations) {
    const name = methodName(operation.id) as keyof MailToolsApi;
    assert.equal(typeof MailToolsApi.prototype[name], 'function', operation.id);
  }
});

test('tools called through the mirror act as the REST routes do', async () => {
  const listed = (await expect(tools.listTools(), 200)).data as { tools: { name: string }[] };
  const names = listed.tools.map((t) => t.name).sort();
  const documented = coverage.operations.map((o) => o.id).filter((id) => id !== 'listTools').sort();
  assert.deepEqual(names, documented, 'the tools an admin key lists are the documented ones');

  const created = (await expect(tools.createSite({ body: { name: 'Tools', slug: 'tools', from_name: 'Tools' } }), 200)).data as {
    id: string;
  };
  await expect(tools.updateSite({ body: { site_id: created.id, from_name: 'The Tools' } }), 200);
  const site = (await mail.getSite({ path: { id: created.id } })).data;
  assert.equal(site.from_name, 'The Tools');
  await expect(tools.getBrandVoice({ body: { site_id: created.id } }), 200);

  // A misspelled argument: the typed error, the field named.
  await assert.rejects(
    tools.createSite({ body: { name: 'X', slug: 'x', from_name: 'X', colour: 'red' } as never }),
    (e: unknown) => e instanceof ApiError && e.status === 400 && /colour/.test(e.message),
  );
});
