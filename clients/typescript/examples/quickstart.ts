// The README's quickstart (type-checked with the package; run it with `make dev` running:
// `. ../../.dev/keys.env && node dist/examples/quickstart.js`).
import { ApiError, createMailClient, createMemoryClient } from '../src/index.js';

const mail = createMailClient({ baseUrl: process.env['MAIL_URL']!, apiKey: process.env['MAIL_KEY'] });
const memory = createMemoryClient({ baseUrl: process.env['MEMORY_URL']!, apiKey: process.env['MEMORY_LIVE_KEY'] });

// Identify a contact, then send them a first email (the dev site writes it to .dev/mail-outbox/).
const site_id = process.env['MAIL_SITE_ID']!;
await mail.identify({ body: { email: 'ada@example.com', first_name: 'Ada', site_id } });
const { data: sent } = await mail.send({
  body: { to: 'ada@example.com', site_id, subject: 'Hello', html: '<p>It works.</p>' },
});
if (!("id" in sent)) throw new Error(`held for approval: ${sent.approval_id}`);
console.log(sent.id, sent.status); // "sent" (200), or "queued" (202) when the provider is slow

// Record a decision, then find it by meaning.
await memory.createProduct({ body: { name: 'quickstart' } });
await memory.createDecision({
  body: { product_name: 'quickstart', decision: 'Every service keeps its data in PostgreSQL.' },
});
const { data: found } = await memory.searchDecisions({ query: { q: 'which database do we use' } });
console.log(found);

// Errors: every answer outside 2xx is thrown as an ApiError carrying the envelope.
try {
  await mail.send({ body: { to: 'not an address', site_id, subject: 'Hi', html: '<p>Hi</p>' } });
} catch (e) {
  if (e instanceof ApiError) console.log(e.status, e.code, e.message, e.details); // 400 VALIDATION_ERROR "to: …" { field: 'to' }
}
