/**
 * Typed clients of mail-api, memory-api and mail-api's MCP tool mirror, generated from the
 * committed OpenAPI documents (`src/generated/`, by `scripts/generate.mjs`), with what the
 * generated code leaves to its user done once here:
 *
 * - the base URL (given with or without the `/api/v1` or `/api/mcp` the documents' paths
 *   already carry) and the API key (sent as `Authorization: Bearer …`);
 * - the published retry policy (see `retry.ts`);
 * - an idempotency key on every operation that takes one, generated when the caller gave
 *   none, the same on every attempt (see `keys.ts`);
 * - every answer outside 2xx thrown as an `ApiError` carrying the error envelope.
 */
import { ApiError } from './errors.js';
import { keyRequests, type Keyed } from './keys.js';
import { DEFAULT_RETRY_POLICY, retryingFetch, type RetryPolicy } from './retry.js';
import { KEYED_OPERATIONS } from './generated/keyed.gen.js';
import { MailApi } from './generated/mail/sdk.gen.js';
import { createClient as createMailHttp, createConfig as mailConfig } from './generated/mail/client/index.js';
import { MemoryApi } from './generated/memory/sdk.gen.js';
import {
  createClient as createMemoryHttp,
  createConfig as memoryConfig,
} from './generated/memory/client/index.js';
import { MailToolsApi } from './generated/mail-tools/sdk.gen.js';
import {
  createClient as createToolsHttp,
  createConfig as toolsConfig,
} from './generated/mail-tools/client/index.js';

export { ApiError, readEnvelope } from './errors.js';
export {
  DEFAULT_RETRY_POLICY,
  isRetryableStatus,
  retryAfterMs,
  retryingFetch,
  type RetryEvent,
  type RetryPolicy,
} from './retry.js';
export { IDEMPOTENCY_HEADER } from './keys.js';
export { MailApi, MemoryApi, MailToolsApi };
/** The request and answer types of each document. */
export type * as Mail from './generated/mail/types.gen.js';
export type * as Memory from './generated/memory/types.gen.js';
export type * as MailTools from './generated/mail-tools/types.gen.js';

export interface ClientOptions {
  /**
   * The service's origin, e.g. `https://mail.example.com`; a trailing `/api/v1` (or
   * `/api/mcp`) is taken off, since every path of the documents starts with it.
   */
  baseUrl: string;
  /** The API key (`mail_…`, `mem_live_…`, `mem_test_…`) or OAuth access token; none for the public routes. */
  apiKey?: string;
  /** The retry policy, or `false` for one attempt. Default: `DEFAULT_RETRY_POLICY`. */
  retry?: Partial<RetryPolicy> | false;
  /** The `fetch` to send with (default: the global one). */
  fetch?: typeof fetch;
  /** Headers sent on every request. */
  headers?: Record<string, string>;
}

/** `baseUrl` without trailing slashes and without the prefix the documents' paths carry. */
export function normalizeBaseUrl(baseUrl: string): string {
  let url = baseUrl.trim().replace(/\/+$/, '');
  for (const prefix of ['/api/v1', '/api/mcp']) {
    if (url.endsWith(prefix)) url = url.slice(0, -prefix.length);
  }
  return url.replace(/\/+$/, '');
}

function policyOf(retry: ClientOptions['retry']): RetryPolicy {
  if (retry === false) return { ...DEFAULT_RETRY_POLICY, attempts: 1 };
  return { ...DEFAULT_RETRY_POLICY, ...retry };
}

/** What each generated client exposes that is configured here. */
interface HttpClient {
  interceptors: {
    request: { use(fn: (request: Request, options: { url: string; body?: unknown }) => Request | Promise<Request>): unknown };
    error: { use(fn: (error: unknown, response: Response, request: Request, options: unknown) => unknown): unknown };
  };
}

function configure<C extends HttpClient>(client: C, keyed: readonly Keyed[]): C {
  client.interceptors.request.use(keyRequests(keyed));
  client.interceptors.error.use((error, response) =>
    // No answer (a network error after the last attempt, an abort): thrown as it came.
    response === undefined ? error : new ApiError(response, error),
  );
  return client;
}

function settings(options: ClientOptions) {
  const { apiKey } = options;
  return {
    baseUrl: normalizeBaseUrl(options.baseUrl),
    // Only the bearer scheme carries the key (memory's signed ingest route also lists a
    // signature header, which the caller sets itself).
    auth: (auth: { scheme?: string }) => (auth.scheme === 'bearer' ? apiKey : undefined),
    fetch: retryingFetch(policyOf(options.retry), options.fetch ?? globalThis.fetch),
    headers: options.headers,
    throwOnError: true as const,
  };
}

/** A client of mail-api: one method per operation of `proto-docs/mail-api.openapi.json`. */
export function createMailClient(options: ClientOptions): MailApi {
  const http = configure(createMailHttp(mailConfig(settings(options))), KEYED_OPERATIONS.mail);
  return new MailApi({ client: http });
}

/** A client of memory-api: one method per operation of `proto-docs/memory-api.openapi.json`. */
export function createMemoryClient(options: ClientOptions): MemoryApi {
  const http = configure(createMemoryHttp(memoryConfig(settings(options))), KEYED_OPERATIONS.memory);
  return new MemoryApi({ client: http });
}

/**
 * A client of mail-api's MCP tool mirror (`POST /api/mcp/tools/{name}`, typed from
 * `proto-docs/mail-mcp-tools.openapi.json`, the document `GET /api/mcp/openapi.json` serves):
 * one method per tool, its input schema as the body type.
 */
export function createMailToolsClient(options: ClientOptions): MailToolsApi {
  const http = configure(createToolsHttp(toolsConfig(settings(options))), KEYED_OPERATIONS['mail-tools']);
  return new MailToolsApi({ client: http });
}
