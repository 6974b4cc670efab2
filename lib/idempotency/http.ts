import { InProgressError } from "./errors";
import type { BeginResult, StoredResponse } from "./store";
import { problemResponse } from "../kernel/problem";

/** Replays a stored response exactly, marked as a replay (Stripe's header). */
export function replayResponse(stored: StoredResponse): Response {
  const headers = new Headers();
  for (const [name, value] of stored.headers) headers.append(name, value);
  headers.set("idempotent-replayed", "true");
  return new Response(stored.body, { status: stored.code, headers });
}

/**
 * The HTTP answer for a request that did not become the owner: replay, 422 for a
 * different payload, 409 while the original is in progress. Owners get null and
 * go on to execute.
 */
export function responseForNonOwner(result: BeginResult): Response | null {
  switch (result.outcome) {
    case "owner":
      return null;
    case "replay":
      return replayResponse(result.response);
    case "conflict":
      return problemResponse(result.error.toProblem());
    case "in_progress":
      return problemResponse(new InProgressError(result.record.status).toProblem(), { "retry-after": "1" });
  }
}
