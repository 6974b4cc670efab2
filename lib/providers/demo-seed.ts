/**
 * Tells the demo payment provider (the local service `npm start` runs; PROVIDER_URL)
 * what the demo data says happened, so the console's provider actions behave:
 *
 * (a) every completed record with provider + provider_reference + amount_minor +
 *     currency becomes a charge at the provider (so compensating a demo charge,
 *     the planted double charges included, succeeds) — except refund records,
 *     whose reference names a refund, not a charge. One charge per reference
 *     (the oldest record wins);
 * (b) every pending record's provider_request_id gets an outcome chosen from a
 *     hash of the request id, so it is the same on every start: ~50% succeeded
 *     (a charge with the record's amount and currency, reference derived from the
 *     request id), ~25% failed (a decline reason), ~25% unknown (still processing).
 *
 * With `answersFrom` (what `npm start` passes: the server's start), the provider answers
 * later: each final outcome is held back until answersFrom + 2 min … 3 h (from the same
 * hash), so the background reconciler does not settle every pending record within its
 * first tick — the queue stays worth looking at while the demo runs.
 *
 * Seeding again changes nothing (the provider upserts and reports unchanged rows).
 * The calls are batched (one POST per kind, per 5000 items). Bounded: at most the
 * newest SEED_LIMIT rows of each kind, so a big Postgres database never floods the
 * in-memory demo provider.
 */
import { createHash } from "node:crypto";
import type { Database } from "../db/client";
import { ProviderControl, type SeedCharge, type SeedRequest, type SeedResult } from "./control";
import { providerSeedStore } from "./store";

export const SEED_LIMIT = 50_000;
const BATCH = 5_000;
const DECLINE_REASONS = ["card_declined", "insufficient_funds", "expired_card", "do_not_honor"];

/** How long after `answersFrom` the provider holds a request's answer back: 2 min … 3 h, stable per request id. */
export function demoAnswerDelayMs(requestId: string): number {
  const h = createHash("sha256").update(`demo-delay:${requestId}`).digest();
  return 120_000 + (h.readUInt32BE(0) % (178 * 60)) * 1000;
}

/** The outcome the demo provider reports for a pending request: stable per request id. */
export function demoOutcomeFor(requestId: string): { status: "succeeded" | "failed" | "unknown"; reason?: string } {
  const h = createHash("sha256").update(`demo-outcome:${requestId}`).digest();
  const bucket = h.readUInt32BE(0) % 4;
  if (bucket <= 1) return { status: "succeeded" };
  if (bucket === 2) return { status: "failed", reason: DECLINE_REASONS[h[4] % DECLINE_REASONS.length] };
  return { status: "unknown" };
}

export interface DemoSeedSummary {
  charges: SeedResult;
  requests: SeedResult & { succeeded: number; failed: number; unknown: number };
}

export async function seedDemoProvider(db: Database, opts: { url?: string; log?: (line: string) => void; answersFrom?: Date } = {}): Promise<DemoSeedSummary> {
  const url = opts.url ?? process.env.PROVIDER_URL;
  if (!url) throw new Error("PROVIDER_URL is not set: no demo provider to seed");
  const log = opts.log ?? ((line: string) => console.log(line));
  const control = new ProviderControl(url);

  // Newest first for the limit; then oldest first so the oldest record of a reference wins.
  const store = providerSeedStore(db.sql);
  const chargeRows = (await store.completedCharges(SEED_LIMIT)).reverse();
  const charges = new Map<string, SeedCharge>();
  for (const r of chargeRows) {
    if (!charges.has(r.provider_reference)) {
      charges.set(r.provider_reference, { reference: r.provider_reference, amountMinor: r.amount_minor, currency: r.currency.trim() });
    }
  }

  const pendingRows = await store.pendingRequests(SEED_LIMIT);
  const requests = new Map<string, SeedRequest>();
  const tally = { succeeded: 0, failed: 0, unknown: 0 };
  for (const r of pendingRows) {
    if (requests.has(r.provider_request_id)) continue;
    const outcome = demoOutcomeFor(r.provider_request_id);
    tally[outcome.status]++;
    const later =
      opts.answersFrom && outcome.status !== "unknown"
        ? { answerAt: new Date(opts.answersFrom.getTime() + demoAnswerDelayMs(r.provider_request_id)).toISOString() }
        : {};
    requests.set(
      r.provider_request_id,
      outcome.status === "succeeded"
        ? { requestId: r.provider_request_id, status: "succeeded", amountMinor: r.amount_minor ?? 1000n, currency: r.currency?.trim() || "EUR", ...later }
        : { requestId: r.provider_request_id, ...outcome, ...later },
    );
  }

  const sum = (a: SeedResult, b: SeedResult): SeedResult => ({
    created: a.created + b.created,
    updated: a.updated + b.updated,
    unchanged: a.unchanged + b.unchanged,
  });
  let chargeResult: SeedResult = { created: 0, updated: 0, unchanged: 0 };
  const chargeList = [...charges.values()];
  for (let i = 0; i < chargeList.length; i += BATCH) chargeResult = sum(chargeResult, await control.seedCharges(chargeList.slice(i, i + BATCH)));
  let requestResult: SeedResult = { created: 0, updated: 0, unchanged: 0 };
  const requestList = [...requests.values()];
  for (let i = 0; i < requestList.length; i += BATCH) requestResult = sum(requestResult, await control.seedRequests(requestList.slice(i, i + BATCH)));

  log(
    `demo provider: ${chargeList.length} charges (${chargeResult.created} new), ${requestList.length} pending requests ` +
      `(${tally.succeeded} succeeded, ${tally.failed} failed, ${tally.unknown} unknown; ${requestResult.created} new) at ${url}`,
  );
  return { charges: chargeResult, requests: { ...requestResult, ...tally } };
}
