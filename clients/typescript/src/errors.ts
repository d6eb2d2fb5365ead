/**
 * The typed error of every answer outside 2xx (after the retries, for the statuses that are
 * retried): the HTTP status and the service's error envelope, read into one shape.
 *
 * - mail-api: `{ "error": "<message>", "code": "<CODE>", "details": … }`
 * - memory-api: `{ "error": { "code": "<CODE>", "message": "<message>" } }`
 * - OAuth endpoints: `{ "error": "<error>", "error_description": "<message>" }`
 */
export class ApiError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The machine-readable code (`VALIDATION_ERROR`, `invalid_grant`, …), when the body has one. */
  readonly code: string | undefined;
  /** `details` of the mail envelope (the field at fault, the limit, …), when present. */
  readonly details: unknown;
  /** The parsed body (JSON), or its text. */
  readonly body: unknown;
  /** The answer, its body already read. */
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const { code, message, details } = readEnvelope(body);
    super(message ?? `HTTP ${response.status}`);
    this.name = 'ApiError';
    this.status = response.status;
    this.code = code;
    this.details = details;
    this.body = body;
    this.response = response;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The code, message and details of either service's envelope (or an OAuth error). */
export function readEnvelope(body: unknown): {
  code: string | undefined;
  message: string | undefined;
  details: unknown;
} {
  if (!isObject(body)) {
    return { code: undefined, message: text(body) || undefined, details: undefined };
  }
  const error = body['error'];
  if (isObject(error)) {
    // memory-api
    return { code: text(error['code']), message: text(error['message']), details: error['details'] };
  }
  if (text(body['code']) !== undefined) {
    // mail-api
    return { code: text(body['code']), message: text(error) ?? text(body['message']), details: body['details'] };
  }
  // OAuth (RFC 6749 §5.2)
  return { code: text(error), message: text(body['error_description']) ?? text(error), details: undefined };
}
