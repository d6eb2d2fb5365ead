/**
 * Idempotency keys: an operation that takes one (an `Idempotency-Key` header, or an
 * `idempotency_key` member of its JSON body, as the documents say) gets a random one when the
 * caller gave none. The key is set once, before the first attempt, so every retry of the call
 * carries it and the service answers a retry with the first answer instead of sending or
 * creating again.
 */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

export interface Keyed {
  readonly method: string;
  readonly path: string;
  readonly in: 'header' | 'body';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A request interceptor that keys the calls of the `keyed` operations. */
export function keyRequests(keyed: readonly Keyed[]) {
  return async (request: Request, options: { url: string; body?: unknown }): Promise<Request> => {
    const operation = keyed.find((k) => k.method === request.method && k.path === options.url);
    if (operation === undefined) return request;
    if (operation.in === 'header') {
      if (!request.headers.has(IDEMPOTENCY_HEADER)) request.headers.set(IDEMPOTENCY_HEADER, crypto.randomUUID());
      return request;
    }
    const body = options.body;
    if (!isObject(body) || (body['idempotency_key'] !== undefined && body['idempotency_key'] !== null)) {
      return request;
    }
    return new Request(request, {
      body: JSON.stringify({ ...body, idempotency_key: crypto.randomUUID() }),
    });
  };
}
