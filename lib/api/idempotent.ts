import type { Principal } from "../auth/permissions";
import type { Database } from "../db";
import { txExecutor } from "../db/sql";
import { InProgressError, MissingKeyError, PayloadMismatchError } from "../idempotency/errors";
import { payloadHash } from "../idempotency/hash";
import { replayResponse } from "../idempotency/http";
import { idempotencyKeySchema } from "../idempotency/schemas";
import type { HeaderPairs } from "../idempotency/store";
import { parseInput } from "../kernel/input";
import { problemResponse, ProblemError, toProblem } from "../kernel/problem";
import { consoleRequestStore } from "./store";

/**
 * The console's own mutations are idempotent the way the writers' are (the protocol of
 * DESIGN.md), but their keys live in the console's own table, console_requests — never in
 * the writers' idempotency_records (ADR 0005, revised by issue 10): nothing the console
 * does for itself shows up as writers' traffic or can be acted on as a writer's record.
 * A key is scoped to the user (a token acts for its user) and the action. A retried POST
 * replays the stored answer with `Idempotent-Replayed: true`, the same key with another
 * payload is a 422, a retry while the first is still running is a 409, and a missing key
 * is a 400.
 *
 * Like Stripe, every answer the action produced is stored, refusals and 500s included: a
 * key names one attempt, and a new attempt needs a new key. An expired key (after
 * CONSOLE_KEY_TTL_SECONDS), or one left processing past CONSOLE_KEY_LEASE_SECONDS, is
 * taken over by the next request that names it.
 */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
/** How long a console key protects its action (retries come within minutes). */
export const CONSOLE_KEY_TTL_SECONDS = 24 * 3600;
/**
 * A key still `processing` this long after its request began was left by a process that
 * died between the action and storing its answer: the next request under the key takes it
 * over (the action's own preconditions — record version, compensation state — keep a
 * re-run from applying twice). Console keys are not in the writers' queue, so nothing else
 * could free them.
 */
export const CONSOLE_KEY_LEASE_SECONDS = 300;
/** Response headers worth replaying; per-request ones (x-request-id) are not stored. */
const STORED_HEADERS = ["content-type", "location", "retry-after", "cache-control"];

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
  const hash = payloadHash({ method: call.request.method, path: call.path, body: call.rawBody ?? null });
  const store = consoleRequestStore(txExecutor(call.database.prisma, call.database.dialect));
  const named = { userId: BigInt(call.principal.userId), action: call.action, key };

  // Reserve (or take over an expired key) in one statement; `owner` says which row we got.
  const row = await store.reserve(named, hash, CONSOLE_KEY_TTL_SECONDS, CONSOLE_KEY_LEASE_SECONDS);
  // ON CONFLICT waited for a concurrent first request to commit; its row is then newer than
  // this statement's snapshot, so it is read again in a new one.
  const found = row ?? (await store.find(named));
  if (!found)
    throw new ProblemError(
      409,
      "idempotency-request-in-progress",
      "Request in progress",
      "The first request under this key is being recorded; retry in a moment.",
    );
  if (!found.owner) {
    const row = found;
    if (row.payloadHash !== hash) return problemResponse(new PayloadMismatchError(row.payloadHash, hash).toProblem());
    if (row.status === "processing") return problemResponse(new InProgressError(row.status).toProblem(), { "retry-after": "1" });
    return replayResponse({ code: row.responseCode ?? 200, headers: (row.responseHeaders as HeaderPairs | null) ?? [], body: row.responseBody });
  }
  const owned = found;

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
  await store.finish(owned.id, { status: response.ok ? "completed" : "failed", code: response.status, headers, body: storableBody(body, call.withhold) });
  return response;
}
