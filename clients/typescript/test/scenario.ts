/**
 * Support of the operations test: each client's calls recorded as the documents' operations,
 * answers checked for their status.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ApiError } from '../src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));

interface Operation {
  id: string;
  method: string;
  path: string;
  pattern: RegExp;
  literals: number;
}

/** The operations of a committed document, and those a client's requests reached. */
export class Coverage {
  readonly operations: Operation[] = [];
  readonly called = new Set<string>();

  constructor(readonly name: string, document: string) {
    // The package's generated clients are compared with proto-docs/ by the test script; the
    // documents are read from the repository the package sits in.
    const file = path.resolve(process.env['PROTO_DOCS'] ?? path.join(here, '../../../../proto-docs'), document);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    for (const [route, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const segments = route.split('/');
        const pattern = new RegExp(
          '^' + segments.map((s) => (/^\{.+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/') + '$',
        );
        this.operations.push({
          id: operation.operationId,
          method: method.toUpperCase(),
          path: route,
          pattern,
          literals: segments.filter((s) => !s.startsWith('{')).length,
        });
      }
    }
  }

  /** A `fetch` that records which operation each request is (the most literal match). */
  recording(base: typeof fetch = globalThis.fetch): typeof fetch {
    return (input: RequestInfo | URL, init?: RequestInit) => {
      const request = input instanceof Request ? input : new Request(input, init);
      const { pathname } = new URL(request.url);
      const matches = this.operations
        .filter((o) => o.method === request.method && o.pattern.test(pathname))
        .sort((a, b) => b.literals - a.literals);
      if (matches[0] !== undefined) this.called.add(matches[0].id);
      return base(request);
    };
  }
}

/** The generated method name of an operation id. */
export function methodName(operationId: string): string {
  return operationId.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

export interface Answer<T> {
  data: T;
  response: Response;
}

/**
 * The answer of a call that should answer one of `statuses`: a 2xx is returned as the client
 * gave it; another status must come as an `ApiError` (its body as `data`).
 */
export async function expect<T>(call: Promise<Answer<T>>, ...statuses: number[]): Promise<Answer<T>> {
  try {
    const answer = await call;
    assert.ok(statuses.includes(answer.response.status), `answered ${answer.response.status}, expected ${statuses}: ${JSON.stringify(answer.data)?.slice(0, 300)}`);
    return answer;
  } catch (e) {
    if (e instanceof ApiError && statuses.includes(e.status)) {
      return { data: e.body as T, response: e.response };
    }
    if (e instanceof ApiError) {
      assert.fail(`answered ${e.status} ${e.code} ${e.message}, expected ${statuses}`);
    }
    throw e;
  }
}
