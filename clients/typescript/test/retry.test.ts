/**
 * The published retry policy against the scratch stack, through a fault proxy: a 503 then a
 * 200, a 429 with Retry-After, a 400, network errors, and a connection reset after the
 * service accepted a `/send` or a create (the retry replays the first answer; one email).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  ApiError,
  createMailClient,
  createMemoryClient,
  normalizeBaseUrl,
  readEnvelope,
  retryAfterMs,
  type RetryEvent,
} from '../src/index.js';
import { env, sleep } from './env.js';
import { FaultProxy } from './proxy.js';

const proxy = new FaultProxy(env('MAIL_URL'));
const direct = createMailClient({ baseUrl: env('MAIL_URL'), apiKey: env('MAIL_KEY') });
const retries: RetryEvent[] = [];
let viaProxy = direct;
let site = '';

before(async () => {
  await proxy.start();
  viaProxy = createMailClient({
    // With the prefix and a trailing slash: taken off once.
    baseUrl: `${proxy.url}/api/v1/`,
    apiKey: env('MAIL_KEY'),
    retry: { onRetry: (event) => retries.push(event) },
  });
  const { data } = await direct.createSite({ body: { name: 'Retries', slug: 'retries', from_name: 'Retries' } });
  site = data.id;
});

after(async () => {
  await proxy.stop();
});

function gaps(arrivals: { at: number }[]): number[] {
  return arrivals.slice(1).map((a, i) => a.at - arrivals[i]!.at);
}

/** The emails of the send worker's outbox addressed to `to`. */
async function outboxFor(to: string): Promise<string[]> {
  const dir = path.join(env('STACK_DIR'), 'outbox');
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.eml'));
  const found: string[] = [];
  for (const name of names) {
    if ((await readFile(path.join(dir, name), 'utf8')).includes(to)) found.push(name);
  }
  return found;
}

describe('the retry policy', () => {
  test('a 503 is tried again after at least 100 ms, and the 200 answered', async () => {
    proxy.script('GET', '/api/v1/project', { kind: 'status', status: 503, body: { error: 'down', code: 'SERVICE_UNAVAILABLE' } });
    const { data, response } = await viaProxy.getProject();
    assert.equal(response.status, 200);
    assert.ok(data, "a body");
    const arrivals = proxy.to('GET', '/api/v1/project');
    assert.deepEqual(arrivals.map((a) => a.answered), [503, 200]);
    assert.ok(gaps(arrivals)[0]! >= 100, `waited ${gaps(arrivals)[0]} ms`);
  });

  test('a 429 with Retry-After: 1 waits about a second', async () => {
    proxy.script('GET', '/api/v1/plan', {
      kind: 'status',
      status: 429,
      headers: { 'retry-after': '1' },
      body: { error: 'slow down', code: 'RATE_LIMITED' },
    });
    const { response } = await viaProxy.getPlan();
    assert.equal(response.status, 200);
    const arrivals = proxy.to('GET', '/api/v1/plan');
    assert.deepEqual(arrivals.map((a) => a.answered), [429, 200]);
    assert.ok(gaps(arrivals)[0]! >= 900, `waited ${gaps(arrivals)[0]} ms`);
    assert.equal(retries.at(-1)?.waitMs, 1000);
  });

  test('a 5xx three times: three attempts, then the typed error', async () => {
    const down = { kind: 'status', status: 500, body: { error: 'broken', code: 'INTERNAL' } } as const;
    proxy.script('GET', '/api/v1/team', down, down, down);
    await assert.rejects(viaProxy.listTeamMembers(), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 500);
      assert.equal(e.code, 'INTERNAL');
      assert.equal(e.message, 'broken');
      return true;
    });
    const arrivals = proxy.to('GET', '/api/v1/team');
    assert.equal(arrivals.length, 3);
    const [first, second] = gaps(arrivals);
    assert.ok(first! >= 100 && second! >= 200, `waited ${gaps(arrivals)} ms`);
  });

  test('a 400 is not tried again, and carries the envelope', async () => {
    const before = proxy.to('POST', '/api/v1/send').length;
    await assert.rejects(
      viaProxy.send({ body: { to: 'not an address', site_id: site, subject: 'Hi', html: '<p>Hi</p>' } }),
      (e: unknown) => {
        assert.ok(e instanceof ApiError, String(e));
        assert.equal(e.status, 400);
        assert.equal(e.code, 'VALIDATION_ERROR');
        assert.match(e.message, /to/);
        assert.deepEqual(e.details, { field: 'to' });
        return true;
      },
    );
    assert.equal(proxy.to('POST', '/api/v1/send').length - before, 1);
  });

  test('memory-api errors carry their envelope too', async () => {
    const memory = createMemoryClient({ baseUrl: `${env('MEMORY_URL')}/api/v1`, apiKey: env('MEMORY_KEY') });
    await assert.rejects(memory.getProduct({ path: { name: 'no-such-product' } }), (e: unknown) => {
      assert.ok(e instanceof ApiError, String(e));
      assert.equal(e.status, 404);
      assert.equal(typeof e.code, 'string');
      assert.ok(e.message.length > 0);
      return true;
    });
  });

  test('network errors: three attempts, then the error', async () => {
    const dead = new FaultProxy(env('MAIL_URL'));
    await dead.start();
    const url = dead.url;
    await dead.stop();
    const events: RetryEvent[] = [];
    const client = createMailClient({ baseUrl: url, apiKey: env('MAIL_KEY'), retry: { onRetry: (e) => events.push(e) } });
    const started = performance.now();
    await assert.rejects(client.getProject());
    assert.deepEqual(events.map((e) => [e.attempt, e.waitMs, e.status]), [
      [1, 100, undefined],
      [2, 200, undefined],
    ]);
    assert.ok(performance.now() - started >= 300);
  });

  test('a /send whose answer was lost is retried with the same key: one email', async () => {
    const to = `reset-${crypto.randomUUID()}@example.com`;
    proxy.script('POST', '/api/v1/send', { kind: 'reset-after-forward' });
    const before = proxy.to('POST', '/api/v1/send').length;
    const { data, response } = await viaProxy.send({
      body: { to, site_id: site, subject: 'Once', html: '<p>Only once</p>' },
    });
    const arrivals = proxy.to('POST', '/api/v1/send').slice(before);
    assert.equal(arrivals.length, 2);
    const keys = arrivals.map((a) => JSON.parse(a.body).idempotency_key as string);
    assert.ok(keys[0], 'the first attempt carries a key');
    assert.equal(keys[1], keys[0]);
    assert.equal(response.headers.get('idempotent-replayed'), 'true');
    let status = data.status;
    for (let i = 0; i < 600 && status === 'queued'; i++) {
      await sleep(100);
      status = (await direct.getEmail({ path: { id: (data as { id: string }).id } })).data.status;
    }
    assert.equal(status, 'sent');
    assert.equal((await outboxFor(to)).length, 1);
    const listed = await direct.listEmails({ query: { limit: 100 } });
    assert.equal(listed.data.data.filter((e) => e.to === to).length, 1);
  });

  test('a create whose answer was lost is retried with the same Idempotency-Key: one contact', async () => {
    const email = `create-${crypto.randomUUID()}@example.com`;
    proxy.script('POST', '/api/v1/contacts', { kind: 'reset-after-forward' });
    const { data, response } = await viaProxy.createContact({ body: { email } });
    const arrivals = proxy.to('POST', '/api/v1/contacts');
    assert.equal(arrivals.length, 2);
    const keys = arrivals.map((a) => a.headers['idempotency-key']);
    assert.ok(keys[0]);
    assert.equal(keys[1], keys[0]);
    assert.equal(response.status, 201);
    assert.equal(response.headers.get('idempotent-replayed'), 'true');
    const shown = await direct.getContact({ path: { id: email } });
    assert.equal(shown.data.contact_id, data.contact_id);
  });

  test('a key the caller gave is kept', async () => {
    const to = `keyed-${crypto.randomUUID()}@example.com`;
    const key = `caller-${crypto.randomUUID()}`;
    const before = proxy.to('POST', '/api/v1/send').length;
    await viaProxy.send({ body: { to, site_id: site, subject: 'Keyed', html: '<p>k</p>', idempotency_key: key } });
    const [arrival] = proxy.to('POST', '/api/v1/send').slice(before);
    assert.equal(JSON.parse(arrival!.body).idempotency_key, key);
  });
});

describe('helpers', () => {
  test('Retry-After as seconds or a date', () => {
    assert.equal(retryAfterMs('2'), 2000);
    assert.equal(retryAfterMs(null), undefined);
    assert.equal(retryAfterMs('soon'), undefined);
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:03 GMT', now), 3000);
  });

  test('base URLs', () => {
    assert.equal(normalizeBaseUrl('https://m.example.com/'), 'https://m.example.com');
    assert.equal(normalizeBaseUrl('https://m.example.com/api/v1'), 'https://m.example.com');
    assert.equal(normalizeBaseUrl('https://m.example.com/api/mcp/'), 'https://m.example.com');
  });

  test('envelopes', () => {
    assert.deepEqual(readEnvelope({ error: 'bad', code: 'VALIDATION_ERROR', details: { field: 'to' } }), {
      code: 'VALIDATION_ERROR',
      message: 'bad',
      details: { field: 'to' },
    });
    assert.deepEqual(readEnvelope({ error: { code: 'NOT_FOUND', message: 'no' } }), {
      code: 'NOT_FOUND',
      message: 'no',
      details: undefined,
    });
    assert.deepEqual(readEnvelope({ error: 'invalid_grant', error_description: 'expired' }), {
      code: 'invalid_grant',
      message: 'expired',
      details: undefined,
    });
  });
});
