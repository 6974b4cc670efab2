/** Browser-side helpers for the console's own API (used by client components). */

/** A refused API call, with the problem's detail (and field errors) in a readable message. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** The problem details as received (e.g. a 409's `current` state), when the answer was JSON. */
    readonly problem: Record<string, unknown> | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/**
 * fetch() against the console's own API with the session cookie, JSON in and
 * out. Errors (RFC 9457 problem details) become an ApiError whose message is
 * the problem's detail (which names the offending fields on a 400).
 */
export async function apiFetch<T>(url: string, init: { method?: string; body?: unknown; idempotencyKey?: string } = {}): Promise<T> {
  let res: Response;
  const headers: Record<string, string> = { accept: "application/json" };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  // Operator actions require one: make it once per user intent (newIdempotencyKey) and reuse it when retrying that intent.
  if (init.idempotencyKey) headers["idempotency-key"] = init.idempotencyKey;
  try {
    res = await fetch(url, {
      method: init.method ?? "GET",
      credentials: "same-origin",
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      cache: "no-store",
    });
  } catch {
    throw new ApiError("The console could not be reached; check your connection and try again.", 0);
  }
  const text = await res.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: fall through
  }
  if (!res.ok) {
    const p = (data ?? {}) as { title?: string; detail?: string };
    const problem = data && typeof data === "object" && !Array.isArray(data) ? (data as Record<string, unknown>) : null;
    throw new ApiError(p.detail ?? p.title ?? `The request failed (HTTP ${res.status}).`, res.status, problem);
  }
  return data as T;
}

/** The TanStack Query retry policy of every screen: a refusal or bad input (4xx) will not change on a retry; anything else gets one more try. */
export function retryUnlessClientError(failures: number, error: Error): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false;
  return failures < 1;
}

/** A fresh Idempotency-Key for one user intent (a form submission); a retry of the same intent reuses it. */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}
