import type { Principal } from "../auth/permissions";
import type { Database } from "../db";
import { MissingKeyError } from "../idempotency/errors";
import { responseForNonOwner } from "../idempotency/http";
import { idempotencyKeySchema, parseInput } from "../idempotency/schemas";
import { IdempotencyStore, type HeaderPairs } from "../idempotency/store";
import { problemResponse, ProblemError, toProblem } from "./problem";

/**
 * The console's own mutations are made idempotent with the writers' protocol
 * library, on the same shared table (docs/decisions/0005): the key is scoped to
 * the user (`console:user:<id>`, a token acts for its user) and the operation is
 * `console.<audit action>`. So a retried POST replays the stored answer with
 * `Idempotent-Replayed: true`, the same key with another payload is a 422, a
 * retry while the first is still running is a 409, and a missing key is a 400.
 *
 * Like Stripe, every answer the action produced is stored, refusals and 500s
 * included: a key names one attempt, and a new attempt needs a new key.
 */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
/** How long a console key protects its action (retries come within minutes). */
export const CONSOLE_KEY_TTL_SECONDS = 24 * 3600;
/** Response headers worth replaying; per-request ones (x-request-id) are not stored. */
const STORED_HEADERS = ["content-type", "location", "retry-after", "cache-control"];

export function consoleScope(principal: Pick<Principal, "userId">): string {
  return `console:user:${principal.userId}`;
}

export function consoleOperation(action: string): string {
  return `console.${action}`;
}

export interface IdempotentCall {
  database: Database;
  principal: Principal;
  request: Request;
  /** The route's audit action, e.g. "records.resolve". */
  action: string;
  /** The path (it names the target) and the body as received: together they are the payload hashed. */
  path: string;
  rawBody: unknown;
  /**
   * Top-level fields of the JSON answer never stored (a new token's plaintext, revealed
   * data): a replay answers them as null and lists them under `withheld`.
   */
  withhold?: readonly string[];
}

/** The answer as stored: without the withheld fields. */
function storableBody(body: string, withhold: readonly string[] | undefined): string {
  if (!withhold?.length) return body;
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return body;
    const present = withhold.filter((f) => f in parsed);
    if (!present.length) return body;
    return JSON.stringify({ ...parsed, ...Object.fromEntries(present.map((f) => [f, null])), withheld: present });
  } catch {
    return body;
  }
}

/** Runs `execute` at most once per (user, action, key); every other call replays, refuses or waits. */
export async function runIdempotently(call: IdempotentCall, execute: () => Promise<Response>): Promise<Response> {
  const raw = call.request.headers.get(IDEMPOTENCY_KEY_HEADER);
  if (raw === null || raw.trim() === "") throw new MissingKeyError();
  const key = parseInput(idempotencyKeySchema, raw.trim(), "Idempotency-Key header");
  const store = new IdempotencyStore(call.database.prisma);
  const begun = await store.begin({
    scope: consoleScope(call.principal),
    operation: consoleOperation(call.action),
    key,
    payload: { method: call.request.method, path: call.path, body: call.rawBody ?? null },
    ttlSeconds: CONSOLE_KEY_TTL_SECONDS,
  });
  const answer = responseForNonOwner(begun);
  if (answer) return answer;

  let response: Response;
  try {
    response = await execute();
  } catch (err) {
    if (!(err instanceof ProblemError)) console.error(`${call.request.method} ${call.path} (Idempotency-Key ${key}):`, err);
    response = problemResponse(toProblem(err, call.path));
  }
  const body = await response.clone().text();
  const headers: HeaderPairs = [];
  for (const name of STORED_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers.push([name, value]);
  }
  const stored = { code: response.status, headers, body: storableBody(body, call.withhold) };
  if (response.ok) await store.complete(begun.record.id, stored);
  else await store.fail(begun.record.id, { ...stored, error: `answered ${response.status}` });
  return response;
}
