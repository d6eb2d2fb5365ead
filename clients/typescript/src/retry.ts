/**
 * The published retry policy, as a `fetch` the generated clients call: network errors, 429
 * and 5xx are tried again, 3 attempts in all, after waits of 100, 200 (and, with a fourth
 * attempt configured, 400) ms, or after the `Retry-After` the server gave when that is longer,
 * capped at `maxRetryAfterMs` (30 s by default). Other answers (2xx, 3xx, other 4xx) are
 * returned at once.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included (1 turns retrying off). Default 3. */
  attempts: number;
  /** The wait before the second, third, … attempt; the last one repeats. Default 100, 200, 400 ms. */
  delaysMs: readonly number[];
  /** The longest `Retry-After` honoured; a longer one waits this long. Default 30,000 ms. */
  maxRetryAfterMs: number;
  /** Told of each retry before its wait (for logs and metrics). */
  onRetry?: (retry: RetryEvent) => void;
}

export interface RetryEvent {
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** How long the client waits before the next attempt. */
  waitMs: number;
  /** The answer's status, or undefined when the request failed on the network. */
  status: number | undefined;
  /** The network error, when there was no answer. */
  error: unknown;
  request: Request;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 3,
  delaysMs: Object.freeze([100, 200, 400]),
  maxRetryAfterMs: 30_000,
});

/** Whether an answer of this status is tried again. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * `Retry-After` in milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined
 * when absent or unreadable.
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A `fetch` that applies `policy` around `base`. Each attempt sends a copy of the same
 * request (same headers, same body: an idempotency key set before the first attempt is on
 * every one). An aborted request is not retried.
 */
export function retryingFetch(
  policy: Readonly<RetryPolicy> = DEFAULT_RETRY_POLICY,
  base: typeof fetch = globalThis.fetch,
): typeof fetch {
  const attempts = Math.max(1, Math.floor(policy.attempts));
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= attempts;
      // The original is kept unsent so that every attempt can copy it (a body is read once).
      const sent = last ? request : request.clone();
      let response: Response | undefined;
      let error: unknown;
      try {
        response = await base(sent);
      } catch (e) {
        if (request.signal.aborted || last) throw e;
        error = e;
      }
      if (response !== undefined && (last || !isRetryableStatus(response.status))) return response;
      const delays = policy.delaysMs.length > 0 ? policy.delaysMs : DEFAULT_RETRY_POLICY.delaysMs;
      let waitMs = delays[Math.min(attempt - 1, delays.length - 1)] ?? 0;
      if (response !== undefined) {
        const asked = retryAfterMs(response.headers.get('retry-after'));
        if (asked !== undefined) waitMs = Math.max(waitMs, Math.min(asked, policy.maxRetryAfterMs));
        // The answer is dropped: free its connection.
        await response.body?.cancel().catch(() => undefined);
      }
      policy.onRetry?.({ attempt, waitMs, status: response?.status, error, request });
      await sleep(waitMs, request.signal);
    }
  };
}
