import type { Database } from "../db/client";
import { IdempotencyStore, type BeginInput, type IdempotencyRecord } from "../idempotency";
import { ProviderControl } from "../providers/control";
import { demoOutcomeFor } from "../providers/demo-seed";
import { demoStore } from "./store";
import { cardNumber, customerOf, DEMO_TENANTS, DEMO_TTL_SECONDS, mix, PROVIDER_PREFIX, responseHeaders, Rng, TEST_CARDS } from "./traffic-plan";

/**
 * The embedded demo keeps living while it runs (`npm start`): every DEMO_LIVE_SECONDS
 * (default 20) one more thing happens through the writers' protocol library, so the
 * screens keep a steady supply of what they exist for instead of draining:
 *
 * - checkouts: an order, then a capture that is in flight (processing) until the next tick
 *   finishes it — never left to turn stuck — sometimes retried (a replay);
 * - provider timeouts: pending captures with an open reconciliation item, whose outcome the
 *   demo provider answers LATER (3–20 min; a quarter never), so the reconciler settles them
 *   one by one rather than all at its first tick;
 * - workers that die: a capture left processing (stuck once past its threshold);
 * - key reuse with another payload: a conflict (422);
 * - double charges: the same capture under two keys seconds apart, both completed.
 *
 * Also, at its first tick, it finishes the records the generator left in flight minutes
 * ago (they would otherwise turn stuck under the user's eyes). Only in the embedded demo:
 * it never writes to a real (Postgres) database.
 */

export type LiveAction = "checkout" | "pending" | "stuck" | "conflict" | "double" | "replay";

/** How often each happens per tick (weights). */
const MIX: readonly (readonly [LiveAction, number])[] = [
  ["checkout", 50],
  ["replay", 12],
  ["pending", 14],
  ["conflict", 10],
  ["double", 8],
  ["stuck", 3],
];

/** Records the generator left processing this recently are in flight, not stuck: the first tick finishes them. */
const IN_FLIGHT_MS = 4 * 60_000;

export interface LiveTickResult {
  action: LiveAction;
  /** Records this tick created. */
  created: bigint[];
  /** In-flight records this tick finished (completed). */
  finished: number;
}

interface Intent {
  input: BeginInput & { payload: Record<string, unknown> };
  recordId: bigint;
}

export interface DemoLiveOptions {
  /** The demo provider's control API: pending outcomes and new charges are told to it. */
  providerUrl?: string;
  seed?: number;
  clock?: () => Date;
  log?: (line: string) => void;
}

export class DemoLiveTraffic {
  private tickNo = 0;
  private readonly inFlight: { id: bigint; intent: Intent; complete: () => Promise<void> }[] = [];
  /** Captures deliberately left processing (they are to turn stuck). */
  private readonly abandoned = new Set<bigint>();
  private readonly recent: Intent[] = [];
  private readonly control: ProviderControl | null;
  private readonly seed: number;
  private readonly clock: () => Date;
  private readonly log: (line: string) => void;

  constructor(
    private readonly db: Pick<Database, "prisma" | "sql">,
    opts: DemoLiveOptions = {},
  ) {
    this.control = opts.providerUrl ? new ProviderControl(opts.providerUrl) : null;
    this.seed = opts.seed ?? Date.now() % 2 ** 31;
    this.clock = opts.clock ?? (() => new Date());
    this.log = opts.log ?? (() => {});
  }

  /** One step: finish what is in flight, then one more thing happens (or `action`, for tests). */
  async tick(action?: LiveAction): Promise<LiveTickResult> {
    const rng = new Rng(mix(this.seed, this.tickNo, 0x11fe));
    const first = this.tickNo === 0;
    this.tickNo++;
    const finished = (await this.finishInFlight()) + (first ? await this.finishGeneratorsInFlight() : 0);
    const chosen = action ?? rng.weighted(MIX);
    const created = await this.run(chosen, rng);
    return { action: chosen, created, finished };
  }

  private store(at?: Date): IdempotencyStore {
    const now = at ?? this.clock();
    return new IdempotencyStore(this.db.prisma, { clock: () => now });
  }

  private async finishInFlight(): Promise<number> {
    const due = this.inFlight.splice(0);
    for (const f of due) await f.complete().catch((err) => this.log(`demo live: could not finish record ${f.id}: ${err instanceof Error ? err.message : err}`));
    return due.length;
  }

  /** The generator's "requests in flight right now", if they are still that young: completed like the others. */
  private async finishGeneratorsInFlight(): Promise<number> {
    const since = new Date(this.clock().getTime() - IN_FLIGHT_MS);
    const rows = await demoStore(this.db.sql).processingSince(since);
    let n = 0;
    for (const r of rows) {
      if (this.abandoned.has(r.id) || this.inFlight.some((f) => f.id === r.id)) continue;
      const body = JSON.stringify({ status: "created", amount_minor: r.amount_minor === null ? null : Number(r.amount_minor), currency: r.currency });
      await this.store()
        .complete(r.id, { code: 201, headers: [["Content-Type", "application/json"]], body })
        .then(() => n++)
        .catch(() => {}); // finished by someone else meanwhile
    }
    return n;
  }

  private checkout(rng: Rng) {
    const tenant = rng.weighted(DEMO_TENANTS.map((t) => [t, t.weight] as const));
    const currency = rng.weighted(tenant.currencies);
    const provider = rng.weighted(tenant.providers);
    const amountMinor = Math.max(199, Math.round(Math.exp(rng.float(6.4, 10.3)) / 100) * 100 - 1);
    const orderId = `ord_${rng.base62(14)}`;
    const customerId = `cus_${rng.base62(10)}`;
    const customer = customerOf(rng);
    const [brand, prefix] = rng.pick(TEST_CARDS);
    const card = cardNumber(rng, prefix, brand);
    const capture = (key: string): Intent["input"] => ({
      scope: tenant.scope,
      operation: "capture_payment",
      key,
      payload: { order_id: orderId, amount_minor: amountMinor, currency, payment_method: `pm_${rng.base62(16)}`, capture: true },
      ttlSeconds: DEMO_TTL_SECONDS.capture_payment,
      correlationId: `cor_${rng.hex(24)}`,
      resourceType: "payment",
      provider,
      amountMinor,
      currency,
    });
    const completeCapture = async (id: bigint, at?: Date) => {
      const paymentId = `pay_${rng.base62(14)}`;
      const reference = PROVIDER_PREFIX[provider].charge + rng.base62(18);
      await this.store(at).complete(id, {
        code: 201,
        headers: responseHeaders(rng, `/v1/payments/${paymentId}`),
        body: JSON.stringify({
          id: paymentId,
          status: "captured",
          order_id: orderId,
          amount_minor: amountMinor,
          currency,
          provider,
          provider_reference: reference,
          receipt_email: customer.email,
          client_secret: `${paymentId}_secret_${rng.base62(24)}`,
          payment_method: { type: "card", card: { brand, number: card, exp: `0${rng.int(1, 9)}/${rng.int(27, 31)}` } },
        }),
        resourceType: "payment",
        resourceId: paymentId,
        providerReference: reference,
        outbox: [
          {
            topic: "payment.captured",
            payload: { payment_id: paymentId, order_id: orderId, amount_minor: amountMinor, currency, provider_reference: reference },
          },
        ],
      });
      await this.control?.seedCharges([{ reference, amountMinor, currency }]).catch(() => {});
    };
    return { tenant, currency, provider, amountMinor, orderId, customerId, customer, capture, completeCapture };
  }

  private async begin(input: Intent["input"], at?: Date): Promise<IdempotencyRecord | null> {
    const r = await this.store(at).begin(input);
    return r.outcome === "owner" ? r.record : null;
  }

  private remember(intent: Intent) {
    this.recent.push(intent);
    if (this.recent.length > 50) this.recent.shift();
  }

  private async run(action: LiveAction, rng: Rng): Promise<bigint[]> {
    const c = this.checkout(rng);
    const created: bigint[] = [];
    switch (action) {
      case "checkout":
      case "replay": {
        if (action === "replay" && this.recent.length) {
          // A client retry of a finished request: the stored answer is replayed.
          const again = this.recent[rng.int(0, this.recent.length - 1)];
          await this.store().begin(again.input);
          return created;
        }
        const order = await this.begin({
          scope: c.tenant.scope,
          operation: "create_order",
          key: rng.uuid(),
          payload: { customer_id: c.customerId, cart: { items: rng.int(1, 4), total_minor: c.amountMinor, currency: c.currency }, order_ref: c.orderId },
          ttlSeconds: DEMO_TTL_SECONDS.create_order,
          resourceType: "order",
          amountMinor: c.amountMinor,
          currency: c.currency,
        });
        if (order) {
          created.push(order.id);
          await this.store().complete(order.id, {
            code: 201,
            headers: responseHeaders(rng, `/v1/orders/${c.orderId}`),
            body: JSON.stringify({
              id: c.orderId,
              status: "created",
              amount_minor: c.amountMinor,
              currency: c.currency,
              customer: { id: c.customerId, email: c.customer.email },
            }),
            resourceId: c.orderId,
          });
        }
        const input = c.capture(rng.uuid());
        const capture = await this.begin(input);
        if (capture) {
          created.push(capture.id);
          const intent = { input, recordId: capture.id };
          // In flight until the next tick, then completed.
          this.inFlight.push({ id: capture.id, intent, complete: () => c.completeCapture(capture.id).then(() => this.remember(intent)) });
        }
        return created;
      }
      case "pending": {
        const requestId = PROVIDER_PREFIX[c.provider].request + rng.base62(20);
        const capture = await this.begin(c.capture(rng.uuid()));
        if (!capture) return created;
        created.push(capture.id);
        await this.store().markPending(capture.id, {
          providerRequestId: requestId,
          error: `timeout after 10000 ms waiting for ${c.provider} POST /v1/charges`,
          firstCheckInSeconds: 60,
        });
        const outcome = demoOutcomeFor(requestId);
        // The provider has an answer only minutes later (or never: "unknown").
        const answerAt = new Date(this.clock().getTime() + rng.int(3, 20) * 60_000).toISOString();
        await this.control
          ?.seedRequests([
            outcome.status === "succeeded"
              ? { requestId, status: "succeeded", amountMinor: c.amountMinor, currency: c.currency, answerAt }
              : outcome.status === "failed"
                ? { requestId, status: "failed", reason: outcome.reason, answerAt }
                : { requestId, status: "unknown" },
          ])
          .catch((err) => this.log(`demo live: provider not told about ${requestId}: ${err instanceof Error ? err.message : err}`));
        return created;
      }
      case "stuck": {
        // The worker dies after reserving: processing forever (stuck once past its threshold).
        const capture = await this.begin(c.capture(rng.uuid()));
        if (capture) {
          created.push(capture.id);
          this.abandoned.add(capture.id);
        }
        return created;
      }
      case "conflict": {
        // A client reuses a key for a changed intent (another amount): 422, nothing executed.
        const base = this.recent.length ? this.recent[rng.int(0, this.recent.length - 1)] : null;
        if (!base) return this.run("checkout", rng);
        const payload = { ...base.input.payload, amount_minor: Number(base.input.payload.amount_minor ?? 0) + rng.int(1, 40) * 100 };
        await this.store().begin({ ...base.input, payload });
        return created;
      }
      case "double": {
        // The UI made a fresh key per click: the same capture twice, seconds apart, both charged.
        const now = this.clock().getTime();
        const input = c.capture(rng.uuid());
        const firstAt = new Date(now - rng.int(20, 90) * 1000);
        const a = await this.begin(input, firstAt);
        if (a) {
          created.push(a.id);
          await c.completeCapture(a.id, new Date(firstAt.getTime() + rng.int(400, 3000)));
        }
        const b = await this.begin({ ...input, key: rng.uuid() });
        if (b) {
          created.push(b.id);
          await c.completeCapture(b.id);
          this.remember({ input: { ...input }, recordId: b.id });
        }
        return created;
      }
    }
  }
}

/** Starts the ticks (DEMO_LIVE_SECONDS, default 20; 0 = off). Returns a stop function. */
export function startDemoLiveTraffic(getDb: () => Promise<Database>, opts: DemoLiveOptions & { intervalSeconds?: number } = {}): (() => void) | null {
  const seconds = opts.intervalSeconds ?? Number(process.env.DEMO_LIVE_SECONDS ?? 20);
  if (!(seconds > 0)) return null;
  let live: DemoLiveTraffic | null = null;
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      const db = await getDb();
      live ??= new DemoLiveTraffic(db, opts);
      await live.tick();
    } catch (err) {
      console.error("demo live traffic:", err instanceof Error ? err.message : err);
    } finally {
      running = false;
    }
  }, seconds * 1000);
  timer.unref?.();
  console.log(`demo live traffic: one more checkout, timeout, conflict, double charge or dead worker every ${seconds} s (DEMO_LIVE_SECONDS)`);
  return () => clearInterval(timer);
}
