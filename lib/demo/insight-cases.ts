import { createHash } from "node:crypto";
import type { Database } from "../db/client";
import { IdempotencyStore, type BeginInput } from "../idempotency";
import { TTL_SECONDS } from "./bulk";

/**
 * The demo's planted cases for the insights (issue 17), one of each, written through the
 * writers' protocol library like the rest of the demo (lib/demo/traffic.ts calls this with
 * `insightCases: true`):
 *
 * 1. A client with a counter — scope `tenant:vandelay`: its checkout names create_order keys
 *    `ord-000001` … `ord-000048` from a counter, one order every 90 minutes over the last three
 *    days, while its payment SDK makes random keys (UUIDs) for the captures. Key quality flags
 *    that scope (and only it).
 * 2. A conflict spike — the same client was redeployed in the last hour and its counter started
 *    again at 1: 14 new orders under `ord-000001` … `ord-000014` carry other carts and are refused
 *    as conflicts (422), against a baseline of none. The record page of `ord-000001` tells it.
 * 3. Retries after expiry — scope `tenant:globex`: a mobile app queued three create_order
 *    requests offline and sent them again 26–28 h after the first attempt, past the 24 h expiry;
 *    they were replayed only because the records were still held.
 *
 * Deterministic like the rest of the demo: keys and payloads from SHA-256 of (seed, case, n),
 * times relative to `now`. A re-run with the same seed reaches existing keys: replays and the
 * same conflicts again, no new record.
 */

export const COUNTER_SCOPE = "tenant:vandelay";
export const LATE_SCOPE = "tenant:globex";
export const COUNTER_ORDERS = 48;
export const COUNTER_RESET = 14;
export const LATE_RETRIES = 3;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export interface InsightCasesSummary {
  counter: { scope: string; operation: string; keys: string[]; recordIds: string[] };
  conflictSpike: { scope: string; operation: string; conflicts: number; from: string; to: string };
  lateRetries: { scope: string; operation: string; recordIds: string[]; keys: string[] };
  /** The record whose story the demo is meant to show: the counter's first key, reused after the reset. */
  storyRecordId: string;
}

const hex = (seed: number, ...parts: (string | number)[]) =>
  createHash("sha256")
    .update([seed, ...parts].join(":"))
    .digest("hex");
const uuidOf = (seed: number, ...parts: (string | number)[]) => {
  const h = hex(seed, ...parts);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
};
const int = (seed: number, lo: number, hi: number, ...parts: (string | number)[]) => lo + (parseInt(hex(seed, ...parts).slice(0, 8), 16) % (hi - lo + 1));

export async function plantInsightCases(db: Pick<Database, "prisma">, opts: { seed: number; now: Date }): Promise<InsightCasesSummary> {
  const { seed } = opts;
  const nowMs = opts.now.getTime();
  const storeAt = (t: number) => new IdempotencyStore(db.prisma, { clock: () => new Date(t) });
  const order = (scope: string, key: string, n: number, variant: string, currency: string): BeginInput & { payload: Record<string, unknown> } => {
    const amount = int(seed, 5, 250, variant, n) * 100 - 1;
    return {
      scope,
      operation: "create_order",
      key,
      payload: {
        customer_id: `cus_${hex(seed, variant, n, "c").slice(0, 10)}`,
        cart: { items: int(seed, 1, 4, variant, n, "i"), total_minor: amount, currency },
      },
      ttlSeconds: TTL_SECONDS.create_order,
      correlationId: `cor_${hex(seed, variant, n, "cor").slice(0, 24)}`,
      resourceType: "order",
      amountMinor: amount,
      currency,
    };
  };
  const complete = async (id: bigint, at: number, body: Record<string, unknown>) =>
    storeAt(at).complete(id, { code: 201, headers: [["Content-Type", "application/json"]], body: JSON.stringify(body), resourceId: String(body.id) });

  // 1. The counter client.
  const counterKeys: string[] = [];
  const counterIds: string[] = [];
  const start = nowMs - 73 * HOUR;
  for (let n = 1; n <= COUNTER_ORDERS; n++) {
    const at = start + (n - 1) * 90 * MINUTE + int(seed, 0, 20 * MINUTE, "vandelay-at", n);
    const key = `ord-${String(n).padStart(6, "0")}`;
    const input = order(COUNTER_SCOPE, key, n, "vandelay", "USD");
    const r = await storeAt(at).begin(input);
    counterKeys.push(key);
    counterIds.push(r.record.id.toString());
    if (r.outcome !== "owner") continue;
    const orderId = `ord_${hex(seed, "vandelay-order", n).slice(0, 14)}`;
    await complete(r.record.id, at + int(seed, 80, 900, "vandelay-lat", n), { id: orderId, status: "created" });
    // Its payment SDK makes random keys.
    const captureAt = at + int(seed, 5, 60, "vandelay-cap", n) * 1000;
    const capture = await storeAt(captureAt).begin({
      scope: COUNTER_SCOPE,
      operation: "capture_payment",
      key: uuidOf(seed, "vandelay-capture", n),
      payload: { order_id: orderId, amount_minor: input.amountMinor, currency: "USD", capture: true },
      ttlSeconds: TTL_SECONDS.capture_payment,
      correlationId: input.correlationId,
      resourceType: "payment",
      provider: "acmepay",
      amountMinor: input.amountMinor,
      currency: "USD",
    });
    if (capture.outcome === "owner") {
      await storeAt(captureAt + 1200).complete(capture.record.id, {
        code: 201,
        headers: [["Content-Type", "application/json"]],
        body: JSON.stringify({ id: `pay_${hex(seed, "vandelay-pay", n).slice(0, 14)}`, status: "captured" }),
        providerReference: `acp_chg_${hex(seed, "vandelay-ref", n).slice(0, 18)}`,
      });
    }
  }

  // 2. The redeploy: the counter starts at 1 again, with new carts under the old keys.
  const resetFrom = nowMs - 50 * MINUTE;
  let resetTo = resetFrom;
  for (let n = 1; n <= COUNTER_RESET; n++) {
    const at = resetFrom + (n - 1) * 3 * MINUTE + int(seed, 0, 60_000, "reset-at", n);
    resetTo = at;
    await storeAt(at).begin(order(COUNTER_SCOPE, `ord-${String(n).padStart(6, "0")}`, n, "vandelay-after-redeploy", "USD"));
  }

  // 3. Retries after the key expired.
  const lateIds: string[] = [];
  const lateKeys: string[] = [];
  for (let n = 1; n <= LATE_RETRIES; n++) {
    const at = nowMs - (29 + n) * HOUR;
    const key = uuidOf(seed, "globex-offline", n);
    const input = order(LATE_SCOPE, key, n, "globex-offline", "USD");
    const r = await storeAt(at).begin(input);
    if (r.outcome === "owner") await complete(r.record.id, at + 400, { id: `ord_${hex(seed, "globex-order", n).slice(0, 14)}`, status: "created" });
    // Sent again, unchanged, 26–28 h after the first attempt: past the 24 h expiry.
    await storeAt(at + (25 + n) * HOUR).begin(input);
    lateIds.push(r.record.id.toString());
    lateKeys.push(key);
  }

  return {
    counter: { scope: COUNTER_SCOPE, operation: "create_order", keys: counterKeys, recordIds: counterIds },
    conflictSpike: {
      scope: COUNTER_SCOPE,
      operation: "create_order",
      conflicts: COUNTER_RESET,
      from: new Date(resetFrom).toISOString(),
      to: new Date(resetTo).toISOString(),
    },
    lateRetries: { scope: LATE_SCOPE, operation: "create_order", recordIds: lateIds, keys: lateKeys },
    storyRecordId: counterIds[0],
  };
}
