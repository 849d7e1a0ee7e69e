/**
 * Every error code the service produces, with its HTTP status and whether a client may retry
 * the same request unchanged. Each surface (HTTP body, MCP `isError`, CLI exit code, SDK error
 * class) translates errors through this one table; nothing branches on message text.
 */
export const ERROR_CODES = {
  invalid_json: { status: 400, retryable: false },
  validation_failed: { status: 400, retryable: false },
  bad_request: { status: 400, retryable: false },
  unauthorized: { status: 401, retryable: false },
  insufficient_credit: { status: 402, retryable: false },
  forbidden: { status: 403, retryable: false },
  insufficient_scope: { status: 403, retryable: false },
  not_found: { status: 404, retryable: false },
  method_not_allowed: { status: 405, retryable: false },
  conflict: { status: 409, retryable: false },
  /** Existed but is over, e.g. an expired device-login user code. */
  gone: { status: 410, retryable: false },
  payload_too_large: { status: 413, retryable: false },
  unsupported_media_type: { status: 415, retryable: false },
  /** A blob download's `Range` asks for no byte of the blob; `Content-Range: bytes *\/size` gives its length. */
  range_not_satisfiable: { status: 416, retryable: false },
  /** runs.node: the one-node run failed; the body carries `runId` and `runError` ({ code, message }). */
  run_failed: { status: 422, retryable: false },
  /** An `Idempotency-Key` sent again within 24 h with a different request; `details.runId` is the run it belongs to. */
  idempotency_key_reused: { status: 422, retryable: false },
  rate_limited: { status: 429, retryable: true },
  internal: { status: 500, retryable: true },
  not_implemented: { status: 501, retryable: false },
  /**
   * A provider answered 2xx with something that is not what its API promises (another content
   * type, a body or stream event that is not JSON, a stream without its final event, a body
   * without the expected fields). The service does not call it again (the answered call is paid);
   * running it again later may succeed.
   */
  malformed_provider_response: { status: 502, retryable: true },
  unavailable: { status: 503, retryable: true },
} as const satisfies Record<string, { status: number; retryable: boolean }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** HTTP status of an error code. */
export function statusOf(code: ErrorCode): number {
  return ERROR_CODES[code].status;
}

/** Whether repeating the same request unchanged may succeed. */
export function isRetryable(code: ErrorCode): boolean {
  return ERROR_CODES[code].retryable;
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}
