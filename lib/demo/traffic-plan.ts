import type { BeginInput } from "../idempotency";
import { HOURLY_WEIGHTS, TTL_SECONDS } from "./bulk";

/**
 * The plan of the demo's traffic: what a month of checkouts looks like, decided before
 * anything is written (lib/demo/traffic.ts writes it through the protocol library).
 * Checkouts (create_order → capture_payment → provider webhook → issue_invoice, later
 * some refund_payment) for five tenants, with a daily and hourly rhythm, and every
 * situation the console exists for:
 *
 * - normal completions, with outbox messages on most payments;
 * - retries that replay the stored response (webhook redeliveries, client retries);
 * - concurrent duplicates (several begin() on one key at once, one owner);
 * - key reuse with a different payload (conflict, 422);
 * - failed requests (card declined, 402 …) that the client later retries → replay;
 * - provider timeouts leaving `pending` records with an open reconciliation item
 *   (some from the last hours, some days old);
 * - workers that died leaving records stuck in `processing` (hours/days old), plus a
 *   few genuinely in-flight ones from the last minute (not stuck);
 * - expired records and records expiring in the next 24 h (TTL per operation);
 * - the same purchase captured twice under DIFFERENT keys minutes apart (same scope,
 *   operation, payload hash and amount): the double charge a key cannot catch.
 *
 * Deterministic: everything (keys, payloads, times relative to `now`, outcomes) comes
 * from a seeded PRNG (mulberry32); the only inputs are `seed`, `days`, `requests` and
 * `now`. Keys and payloads come from seed-derived streams that do not depend on `now`,
 * so a re-run with the same seed plans the same requests (and only replays).
 */

// ---------------------------------------------------------------------------
// Seeded randomness

/** mulberry32: tiny, fast, good enough for demo data; 32-bit state. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Rng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  float(min = 0, max = 1): number {
    return min + (max - min) * this.next();
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((s, [, w]) => s + w, 0);
    let x = this.next() * total;
    for (const [item, w] of items) {
      x -= w;
      if (x < 0) return item;
    }
    return items[items.length - 1][0];
  }
  hex(n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += Math.floor(this.next() * 16).toString(16);
    return s;
  }
  base62(n: number): string {
    const abc = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let s = "";
    for (let i = 0; i < n; i++) s += abc[Math.floor(this.next() * 62)];
    return s;
  }
  uuid(): string {
    const b = Array.from({ length: 16 }, () => Math.floor(this.next() * 256));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = b.map((x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
  /** Fisher–Yates on a copy. */
  shuffle<T>(items: readonly T[]): T[] {
    const a = [...items];
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  }
}

// ---------------------------------------------------------------------------
// The shape of the traffic

/** Sunday … Saturday. */
const WEEKDAY_WEIGHTS = [0.7, 1.0, 1.0, 1.0, 1.0, 1.05, 0.78];

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How long each operation's record protects its intent (24 h for orders … 30 days for payments). */
export const DEMO_TTL_SECONDS = TTL_SECONDS;

interface Tenant {
  scope: string;
  weight: number;
  currencies: readonly (readonly [string, number])[];
  providers: readonly (readonly [string, number])[];
  invoicePrefix: string;
}

export const DEMO_TENANTS: readonly Tenant[] = [
  { scope: "tenant:acme", weight: 35, currencies: [["EUR", 1]], providers: [["mockpay", 1]], invoicePrefix: "ACME" },
  { scope: "tenant:globex", weight: 25, currencies: [["USD", 1]], providers: [["acmepay", 1]], invoicePrefix: "GLX" },
  {
    scope: "tenant:initech",
    weight: 18,
    currencies: [
      ["GBP", 0.85],
      ["EUR", 0.15],
    ],
    providers: [["mockpay", 1]],
    invoicePrefix: "INI",
  },
  {
    scope: "tenant:umbrella",
    weight: 12,
    currencies: [
      ["EUR", 0.7],
      ["CHF", 0.3],
    ],
    providers: [["acmepay", 1]],
    invoicePrefix: "UMB",
  },
  {
    scope: "tenant:hooli",
    weight: 10,
    currencies: [
      ["USD", 0.8],
      ["CAD", 0.2],
    ],
    providers: [
      ["mockpay", 0.5],
      ["acmepay", 0.5],
    ],
    invoicePrefix: "HOO",
  },
];

export const PROVIDER_PREFIX: Record<string, { charge: string; refund: string; request: string; event: string }> = {
  mockpay: { charge: "mp_ch_", refund: "mp_re_", request: "mp_req_", event: "evt_" },
  acmepay: { charge: "acp_chg_", refund: "acp_rfd_", request: "acp_rq_", event: "acme_evt_" },
};

const JSON_HEADERS: [string, string][] = [["Content-Type", "application/json"]];

const DECLINES = [
  ["card_declined", "Your card was declined."],
  ["insufficient_funds", "Your card has insufficient funds."],
  ["expired_card", "Your card has expired."],
  ["authentication_required", "3-D Secure authentication failed."],
] as const;

// ---------------------------------------------------------------------------
// What services really leave in stored responses: customers' emails, card details
// (a legacy checkout echoes the whole card), client secrets and session cookies —
// what the console masks (lib/records/mask.ts) and reveals only with a reason.

const FIRST_NAMES = ["jane", "omar", "li", "maria", "kofi", "anna", "raj", "sofia", "tom", "yuki", "lena", "diego"];
const LAST_NAMES = ["doe", "haddad", "wei", "garcia", "mensah", "novak", "patel", "rossi", "baker", "tanaka", "fischer", "lopez"];
const MAIL_DOMAINS = ["example.com", "mail.example.org", "example.net", "shop.example"];
export const TEST_CARDS: readonly (readonly [string, string])[] = [
  ["visa", "4"],
  ["mastercard", "51"],
  ["amex", "37"],
  ["discover", "6011"],
];

/** A Luhn-valid test card number of the brand's length, grouped as printed. */
export function cardNumber(rng: Rng, prefix: string, brand: string): string {
  const length = brand === "amex" ? 15 : 16;
  let digits = prefix;
  while (digits.length < length - 1) digits += String(rng.int(0, 9));
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  digits += String((10 - (sum % 10)) % 10);
  return brand === "amex" ? `${digits.slice(0, 4)} ${digits.slice(4, 10)} ${digits.slice(10)}` : digits.replace(/(\d{4})(?=\d)/g, "$1 ");
}

interface Customer {
  email: string;
  name: string;
}

export function customerOf(rng: Rng): Customer {
  const first = rng.pick(FIRST_NAMES);
  const last = rng.pick(LAST_NAMES);
  return {
    email: `${first}.${last}${rng.int(1, 99)}@${rng.pick(MAIL_DOMAINS)}`,
    name: `${first[0].toUpperCase()}${first.slice(1)} ${last[0].toUpperCase()}${last.slice(1)}`,
  };
}

/** Response headers a service stores with its answer: a session cookie and a request id beside the content type. */
export function responseHeaders(rng: Rng, location?: string): [string, string][] {
  return [
    ...JSON_HEADERS,
    ...(location ? ([["Location", location]] as [string, string][]) : []),
    ["Set-Cookie", `checkout_session=${rng.base62(32)}; Path=/; HttpOnly; Secure; SameSite=Lax`],
    ["X-Request-Id", `req_${rng.hex(16)}`],
  ];
}

// ---------------------------------------------------------------------------
// Plan

/** What the (simulated) execution of one request ends in. */
export type Outcome =
  | {
      type: "complete";
      at: number;
      code: number;
      headers: [string, string][];
      body: string;
      resourceType?: string;
      resourceId?: string;
      providerReference?: string;
      outbox: { topic: string; payload: unknown }[];
    }
  | { type: "fail"; at: number; code: number; headers: [string, string][]; body: string; error: string }
  | { type: "pending"; at: number; providerRequestId: string; error: string }
  | { type: "stuck" }
  | { type: "in_flight" };

/** One business request: its begin() input, when it is sent, what happens to it and what is sent again later. */
export interface Intent {
  seq: number;
  at: number;
  input: BeginInput & { payload: Record<string, unknown>; ttlSeconds: number };
  outcome: Outcome;
  /** Total begin() calls at `at`, all at once (1 = an ordinary single request). */
  concurrent: number;
  /** Later begin() calls with the same key and payload. */
  retries: number[];
  conflict?: { at: number; payload: Record<string, unknown> };
  doubleSubmit?: number;
  /** Invoices get their number once the plan is in time order. */
  invoice?: { prefix: string };
  /** Outbox dispatcher fate per message, decided at plan time (see dispatchOutbox). */
  outboxFate: OutboxFate[];
}

/** What the outbox dispatcher did with one message since it was written. */
export interface OutboxFate {
  status: "pending" | "sent" | "failed";
  attempts: number;
  sentAt?: number;
  nextAttemptAt?: number;
  lastError?: string;
}

type CheckoutFate = "normal" | "pending_recent" | "pending_old" | "stuck" | "declined" | "double_submit";

export interface Plan {
  intents: Intent[];
  doubleSubmitPairs: number;
}

/** Mixes integers into one 32-bit seed (murmur3's finaliser per part). */
export function mix(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    let k = Math.imul(p | 0, 0xcc9e2d51);
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
    h ^= k;
    h = Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Plans the whole run before anything is written. Identities (keys, ids, payloads,
 * what happens to each checkout) come from per-checkout streams that depend on the
 * seed only; times come from a separate stream relative to `now`. So the same seed
 * always produces the same keys and payloads, whatever `now` is: a re-run only
 * replays.
 */
export function planTraffic(seed: number, days: number, requests: number, nowMs: number): Plan {
  const planRng = new Rng(mix(seed, 0x5eed));
  const timeRng = new Rng(mix(seed, 0x71e));
  const startMs = nowMs - days * DAY;

  // Rejection sampling against the daily/weekly rhythm, with slight growth towards now.
  const weightAt = (t: number) => {
    const d = new Date(t);
    const growth = 0.8 + 0.2 * ((t - startMs) / (nowMs - startMs || 1));
    return HOURLY_WEIGHTS[d.getUTCHours()] * WEEKDAY_WEIGHTS[d.getUTCDay()] * growth;
  };
  const sampleTime = (from: number, to: number) => {
    for (let i = 0; i < 1000; i++) {
      const t = from + timeRng.next() * (to - from);
      if (timeRng.next() * 1.05 < weightAt(t)) return Math.round(t);
    }
    return Math.round(from + (to - from) / 2);
  };

  // ~3.3 records per checkout (order, capture, webhook, invoice, the odd refund).
  const checkouts = Math.max(20, Math.round(requests / 3.3));
  const starts = Array.from({ length: checkouts }, () => sampleTime(startMs, nowMs));
  const fates: CheckoutFate[] = starts.map(() => "normal");

  // Planted situations: quotas (not probabilities), so every run has each of them,
  // placed in the time window that makes them what they are.
  const quota = (rate: number, min: number) => Math.max(min, Math.round(rate * checkouts));
  const slots = planRng.shuffle(starts.map((_, i) => i));
  let slot = 0;
  const plant = (fate: CheckoutFate, n: number, from: number, to: number) => {
    from = Math.max(startMs, from);
    to = Math.max(from + MINUTE, to);
    for (let k = 0; k < n && slot < slots.length; k++) {
      const i = slots[slot++];
      fates[i] = fate;
      starts[i] = sampleTime(from, to);
    }
  };
  const oldBoundary = days > 2 ? nowMs - 2 * DAY : nowMs - (days * DAY) / 2;
  plant("pending_recent", quota(0.005, 2), nowMs - 6 * HOUR, nowMs - 15 * MINUTE);
  plant("pending_old", quota(0.005, 2), startMs, oldBoundary);
  plant("stuck", quota(0.005, 2), startMs, nowMs - 2 * HOUR);
  plant("double_submit", Math.max(3, Math.round(requests / 600)), startMs, nowMs - 30 * MINUTE);
  plant("declined", quota(0.04, 3), startMs, nowMs - 2 * HOUR);
  // The rest are ordinary checkouts, a share of which decline, fail or time out by chance.

  const intents: Intent[] = [];
  let doubleSubmitPairs = 0;
  const add = (i: Omit<Intent, "seq" | "concurrent" | "retries" | "outboxFate">) => {
    const intent: Intent = { ...i, seq: intents.length, concurrent: 1, retries: [], outboxFate: [] };
    intents.push(intent);
    return intent;
  };

  for (let c = 0; c < checkouts; c++) {
    // Every draw below comes from this checkout's own stream and happens whatever
    // the times turn out to be (steps in the future are dropped afterwards).
    const rng = new Rng(mix(seed, c, 0xc0));
    const fate = fates[c];
    const t0 = starts[c];
    const tenant = rng.weighted(DEMO_TENANTS.map((t) => [t, t.weight] as const));
    const currency = rng.weighted(tenant.currencies);
    const provider = rng.weighted(tenant.providers);
    const px = PROVIDER_PREFIX[provider];
    const correlationId = `cor_${rng.hex(24)}`;
    const orderId = `ord_${rng.base62(14)}`;
    const customerId = `cus_${rng.base62(10)}`;
    // Sensitive details from a stream of their own, so every other draw stays as it was.
    const secrets = new Rng(mix(seed, c, 0x5ec));
    const customer = customerOf(secrets);
    const [brand, cardPrefix] = secrets.pick(TEST_CARDS);
    const card = cardNumber(secrets, cardPrefix, brand);
    const expiry = `${String(secrets.int(1, 12)).padStart(2, "0")}/${secrets.int(27, 31)}`;
    const legacyEcho = secrets.chance(0.35);
    // Log-normal-ish basket, priced the way shops price: …99.
    const amountMinor = Math.max(199, Math.round(Math.exp(rng.float(6.4, 10.3)) / 100) * 100 - 1);
    const items = rng.int(1, 4);

    const webhook = (at: number, type: string, reference: string, amount: number) => {
      const eventId = PROVIDER_PREFIX[provider].event + rng.base62(24);
      add({
        at,
        input: {
          scope: tenant.scope,
          operation: "accept_webhook",
          key: eventId,
          payload: { id: eventId, type, data: { object: reference, amount, currency: currency.toLowerCase() } },
          ttlSeconds: DEMO_TTL_SECONDS.accept_webhook,
          correlationId: `whd_${rng.hex(20)}`,
          resourceType: "provider_event",
          resourceId: eventId,
          provider,
          amountMinor: amount,
          currency,
        },
        outcome: completion(at + rng.int(5, 120), 200, { received: true }, { providerReference: reference }),
      });
    };

    // 1. create_order
    const orderAt = t0;
    const orderRoll = rng.next();
    const orderStuck = fate === "stuck" && orderRoll < 0.35;
    const orderFails = fate === "normal" && orderRoll < 0.015;
    const orderLatency = rng.int(40, 600);
    const orderOutbox = rng.chance(0.5);
    add({
      at: orderAt,
      input: {
        scope: tenant.scope,
        operation: "create_order",
        key: rng.uuid(),
        payload: { customer_id: customerId, cart: { items, total_minor: amountMinor, currency }, order_ref: orderId },
        ttlSeconds: DEMO_TTL_SECONDS.create_order,
        correlationId,
        resourceType: "order",
        amountMinor,
        currency,
      },
      outcome: orderStuck
        ? { type: "stuck" }
        : orderFails
          ? {
              type: "fail",
              at: orderAt + orderLatency,
              code: 422,
              headers: JSON_HEADERS,
              body: JSON.stringify({ error: "out_of_stock", message: "One or more items are no longer available." }),
              error: "validation failed: out_of_stock",
            }
          : completion(
              orderAt + orderLatency,
              201,
              { id: orderId, status: "created", amount_minor: amountMinor, currency, customer: { id: customerId, email: customer.email, name: customer.name } },
              {
                resourceId: orderId,
                location: `/v1/orders/${orderId}`,
                headers: responseHeaders(secrets, `/v1/orders/${orderId}`),
                outbox: orderOutbox ? [{ topic: "order.created", payload: { order_id: orderId, amount_minor: amountMinor, currency } }] : [],
              },
            ),
    });
    if (orderStuck || orderFails) continue;
    if (fate === "normal" && rng.chance(0.1)) continue; // abandoned cart

    // 2. capture_payment (possibly declined first, then retried with another card under a new key)
    let captureAt = orderAt + rng.int(4 * SECOND, 90 * SECOND);
    const captureInput = (key: string, pm: string): Intent["input"] => ({
      scope: tenant.scope,
      operation: "capture_payment",
      key,
      payload: { order_id: orderId, amount_minor: amountMinor, currency, payment_method: pm, capture: true },
      ttlSeconds: DEMO_TTL_SECONDS.capture_payment,
      correlationId,
      resourceType: "payment",
      provider,
      amountMinor,
      currency,
    });
    const captureCompletion = (at: number) => {
      const paymentId = `pay_${rng.base62(14)}`;
      const reference = px.charge + rng.base62(18);
      const outbox: { topic: string; payload: unknown }[] = [];
      if (rng.chance(0.75)) {
        outbox.push({
          topic: "payment.captured",
          payload: { payment_id: paymentId, order_id: orderId, amount_minor: amountMinor, currency, provider, provider_reference: reference },
        });
        if (rng.chance(0.4)) outbox.push({ topic: "email.receipt", payload: { customer_id: customerId, order_id: orderId } });
      }
      const outcome = completion(
        at,
        201,
        {
          id: paymentId,
          status: "captured",
          order_id: orderId,
          amount_minor: amountMinor,
          currency,
          provider,
          provider_reference: reference,
          receipt_email: customer.email,
          client_secret: `${paymentId}_secret_${secrets.base62(24)}`,
          payment_method: legacyEcho
            ? { type: "card", card: { brand, number: card, exp: expiry, cvc: String(secrets.int(100, 999)) } }
            : { type: "card", card: { brand, last4: card.slice(-4), exp: expiry } },
        },
        {
          resourceId: paymentId,
          providerReference: reference,
          location: `/v1/payments/${paymentId}`,
          outbox,
          headers: responseHeaders(secrets, `/v1/payments/${paymentId}`),
        },
      );
      return { at, paymentId, reference, outcome };
    };

    const randomRoll = rng.next();
    if (fate === "declined" || (fate === "normal" && randomRoll < 0.03)) {
      const [code, message] = rng.pick(DECLINES);
      const failedAt = captureAt + rng.int(300, 2500);
      add({
        at: captureAt,
        input: captureInput(rng.uuid(), `pm_${rng.base62(16)}`),
        outcome: {
          type: "fail",
          at: failedAt,
          code: 402,
          headers: JSON_HEADERS,
          body: JSON.stringify({ type: "https://errors.example.com/card-declined", title: "Card declined", status: 402, decline_code: code, detail: message }),
          error: `provider ${provider} declined: ${code}`,
        },
      });
      const declineRef = px.charge + rng.base62(18);
      if (rng.chance(0.45)) webhook(failedAt + rng.int(2 * SECOND, 40 * SECOND), "charge.failed", declineRef, amountMinor);
      if (!rng.chance(0.6)) continue; // the customer gave up
      captureAt = failedAt + rng.int(40 * SECOND, 8 * MINUTE); // another card: a changed intent, so a new key
    }

    const captureKey = rng.uuid();
    const pm = `pm_${rng.base62(16)}`;
    if (fate === "pending_recent" || fate === "pending_old" || (fate === "normal" && randomRoll > 0.998)) {
      add({
        at: captureAt,
        input: captureInput(captureKey, pm),
        outcome: {
          type: "pending",
          at: captureAt + 10 * SECOND + rng.int(0, 900),
          providerRequestId: px.request + rng.base62(20),
          error: `timeout after 10000 ms waiting for ${provider} POST /v1/charges`,
        },
      });
      continue;
    }
    if (fate === "stuck") {
      add({ at: captureAt, input: captureInput(captureKey, pm), outcome: { type: "stuck" } });
      continue;
    }
    const captured = captureCompletion(captureAt + rng.int(400, 3500));
    const captureIntent = add({ at: captureAt, input: captureInput(captureKey, pm), outcome: captured.outcome });

    if (fate === "double_submit") {
      // The UI made a fresh key per click: same payload, another key, minutes apart. Both succeed.
      const pair = doubleSubmitPairs++;
      captureIntent.doubleSubmit = pair;
      const againAt = captureAt + rng.int(20 * SECOND, 4 * MINUTE);
      const again = captureCompletion(againAt + rng.int(400, 3500));
      add({ at: againAt, input: captureInput(rng.uuid(), pm), outcome: again.outcome }).doubleSubmit = pair;
      webhook(again.at + rng.int(2 * SECOND, 30 * SECOND), "charge.succeeded", again.reference, amountMinor);
    }

    // 3. the provider's webhook
    if (rng.chance(0.8)) webhook(captured.at + rng.int(1 * SECOND, 25 * SECOND), "charge.succeeded", captured.reference, amountMinor);

    // 4. the invoice (its number is assigned in time order once the plan is sorted)
    if (rng.chance(0.7)) {
      const invoiceAt = captured.at + rng.int(2 * SECOND, 60 * SECOND);
      const invoiceId = `inv_${rng.base62(14)}`;
      const fails = rng.chance(0.01);
      const latency = rng.int(150, 2000);
      add({
        at: invoiceAt,
        input: {
          scope: tenant.scope,
          operation: "issue_invoice",
          key: rng.uuid(),
          payload: { order_id: orderId, payment_id: captured.paymentId, amount_minor: amountMinor, currency, customer_id: customerId },
          ttlSeconds: DEMO_TTL_SECONDS.issue_invoice,
          correlationId,
          resourceType: "invoice",
          amountMinor,
          currency,
        },
        outcome: fails
          ? {
              type: "fail",
              at: invoiceAt + latency,
              code: 422,
              headers: JSON_HEADERS,
              body: JSON.stringify({ error: "missing_tax_id", message: "A VAT number is required for business customers." }),
              error: "validation failed: missing_tax_id",
            }
          : completion(
              invoiceAt + latency,
              201,
              { id: invoiceId, number: "", order_id: orderId, amount_minor: amountMinor, currency },
              {
                resourceId: invoiceId,
                location: `/v1/invoices/${invoiceId}`,
                outbox: [{ topic: "invoice.issued", payload: { invoice_id: invoiceId, number: "", customer_id: customerId } }],
              },
            ),
        invoice: { prefix: tenant.invoicePrefix },
      });
    }

    // 5. a refund, hours or days later, for some (dropped if that moment has not come yet)
    if (rng.chance(0.1)) {
      const refundAt = captured.at + rng.int(2 * HOUR, 10 * DAY);
      const refundAmount = rng.chance(0.3) ? Math.max(100, Math.round(amountMinor * rng.float(0.2, 0.8))) : amountMinor;
      const reason = rng.pick(["requested_by_customer", "duplicate", "damaged_goods", "not_delivered"]);
      const refundId = `re_${rng.base62(14)}`;
      const refundRef = px.refund + rng.base62(18);
      const latency = rng.int(300, 3000);
      const roll = rng.next();
      add({
        at: refundAt,
        input: {
          scope: tenant.scope,
          operation: "refund_payment",
          key: rng.uuid(),
          payload: { payment_id: captured.paymentId, amount_minor: refundAmount, currency, reason },
          ttlSeconds: DEMO_TTL_SECONDS.refund_payment,
          correlationId: `cor_${rng.hex(24)}`,
          resourceType: "refund",
          provider,
          amountMinor: refundAmount,
          currency,
        },
        outcome:
          roll < 0.03
            ? {
                type: "fail",
                at: refundAt + latency,
                code: 422,
                headers: JSON_HEADERS,
                body: JSON.stringify({ error: "charge_already_refunded", message: "The charge has already been refunded." }),
                error: `provider ${provider} refused: charge_already_refunded`,
              }
            : roll < 0.05
              ? {
                  type: "pending",
                  at: refundAt + 10 * SECOND + (latency % 900),
                  providerRequestId: px.request + rng.base62(20),
                  error: `timeout after 10000 ms waiting for ${provider} POST /v1/refunds`,
                }
              : completion(
                  refundAt + latency,
                  201,
                  { id: refundId, status: "succeeded", payment_id: captured.paymentId, amount_minor: refundAmount, currency },
                  {
                    resourceId: refundId,
                    providerReference: refundRef,
                    outbox: [
                      { topic: "payment.refunded", payload: { refund_id: refundId, payment_id: captured.paymentId, amount_minor: refundAmount, currency } },
                    ],
                  },
                ),
      });
      if (roll >= 0.05 && rng.chance(0.7)) webhook(refundAt + latency + rng.int(5 * SECOND, 2 * MINUTE), "refund.succeeded", refundRef, refundAmount);
    }
  }

  // A few requests in flight right now: processing, but not stuck.
  for (let k = 0; k < 3; k++) {
    const rng = new Rng(mix(seed, k, 0xf1));
    const tenant = rng.weighted(DEMO_TENANTS.map((t) => [t, t.weight] as const));
    const currency = rng.weighted(tenant.currencies);
    const amountMinor = rng.int(5, 300) * 100 - 1;
    add({
      at: nowMs - rng.int(5 * SECOND, 90 * SECOND),
      input: {
        scope: tenant.scope,
        operation: "create_order",
        key: rng.uuid(),
        payload: {
          customer_id: `cus_${rng.base62(10)}`,
          cart: { items: rng.int(1, 3), total_minor: amountMinor, currency },
          order_ref: `ord_${rng.base62(14)}`,
        },
        ttlSeconds: DEMO_TTL_SECONDS.create_order,
        correlationId: `cor_${rng.hex(24)}`,
        resourceType: "order",
        amountMinor,
        currency,
      },
      outcome: { type: "in_flight" },
    });
  }

  // What has not happened yet is dropped; what is still running at `now` ends at `now`.
  const past = intents.filter((i) => i.at <= nowMs);
  for (const i of past) if ("at" in i.outcome) i.outcome.at = Math.min(i.outcome.at, nowMs);
  decorate(new Rng(mix(seed, 0xdec)), past, nowMs);
  past.sort((a, b) => a.at - b.at || a.seq - b.seq);
  numberInvoices(past);
  const pairsComplete = new Set(past.filter((i) => i.doubleSubmit !== undefined).map((i) => i.doubleSubmit));
  return { intents: past, doubleSubmitPairs: pairsComplete.size };
}

function completion(
  at: number,
  code: number,
  body: Record<string, unknown>,
  extra: { resourceId?: string; providerReference?: string; location?: string; headers?: [string, string][]; outbox?: { topic: string; payload: unknown }[] },
): Outcome {
  return {
    type: "complete",
    at,
    code,
    headers: extra.headers ?? (extra.location ? [...JSON_HEADERS, ["Location", extra.location]] : JSON_HEADERS),
    body: JSON.stringify(body),
    resourceId: extra.resourceId,
    providerReference: extra.providerReference,
    outbox: extra.outbox ?? [],
  };
}

/** Invoice numbers run per tenant and year, in time order. */
function numberInvoices(sorted: Intent[]): void {
  const seq = new Map<string, number>();
  for (const i of sorted) {
    if (!i.invoice || i.outcome.type !== "complete") continue;
    const year = new Date(i.at).getUTCFullYear();
    const k = `${i.input.scope}/${year}`;
    const n = (seq.get(k) ?? 0) + 1;
    seq.set(k, n);
    const number = `${i.invoice.prefix}-${year}-${String(n).padStart(6, "0")}`;
    const body = JSON.parse(i.outcome.body) as Record<string, unknown>;
    i.outcome.body = JSON.stringify({ ...body, number });
    i.outcome.outbox = i.outcome.outbox.map((m) => ({ ...m, payload: { ...(m.payload as object), number } }));
  }
}

/** Retries, concurrent duplicates, conflicting key reuse and outbox fates, by quota. */
function decorate(rng: Rng, intents: Intent[], nowMs: number): void {
  const n = intents.length;
  const outcomeAt = (i: Intent) => ("at" in i.outcome ? i.outcome.at : i.at);
  const clamp = (t: number) => Math.min(Math.round(t), nowMs);
  // Keep retries well within the record's lifetime (an expired record is a different story).
  const within = (i: Intent, delay: number) => Math.min(delay, (i.input.ttlSeconds * 1000) / 2);
  const taken = new Set<number>();
  const pickFrom = (eligible: Intent[], count: number) => {
    const out: Intent[] = [];
    for (const i of rng.shuffle(eligible)) {
      if (out.length >= count) break;
      if (taken.has(i.seq)) continue;
      taken.add(i.seq);
      out.push(i);
    }
    return out;
  };
  const completed = intents.filter((i) => i.outcome.type === "complete" && i.doubleSubmit === undefined);

  // Concurrent duplicates: a double-clicked button, a webhook delivered twice at once.
  const concurrentOps = new Set(["create_order", "capture_payment", "accept_webhook"]);
  for (const i of pickFrom(
    completed.filter((i) => concurrentOps.has(i.input.operation)),
    Math.max(3, Math.round(0.015 * n)),
  )) {
    i.concurrent = rng.int(2, 5);
  }

  // Conflicts: a client reusing a key for a changed intent (new amount, another cart).
  for (const i of pickFrom(
    completed.filter((i) => i.input.operation !== "accept_webhook"),
    Math.max(3, Math.round(0.01 * n)),
  )) {
    const payload = structuredClone(i.input.payload) as Record<string, unknown>;
    if (typeof payload.amount_minor === "number") payload.amount_minor = payload.amount_minor + rng.int(1, 40) * 100;
    else if (payload.cart && typeof payload.cart === "object") {
      const cart = payload.cart as { items: number; total_minor: number };
      payload.cart = { ...cart, items: cart.items + 1, total_minor: cart.total_minor + rng.int(1, 40) * 100 };
    } else payload.note = `changed-${rng.hex(6)}`;
    i.conflict = { at: clamp(outcomeAt(i) + within(i, rng.int(5 * SECOND, 2 * DAY))), payload };
  }

  // Retries that replay: network retries seconds later, webhook redeliveries up to hours later.
  for (const i of pickFrom(completed, Math.max(5, Math.round(0.08 * n)))) {
    const count = rng.weighted([
      [1, 6],
      [2, 3],
      [3, 1],
    ] as const);
    const webhookish = i.input.operation === "accept_webhook";
    let t = outcomeAt(i);
    for (let k = 0; k < count; k++) {
      t = clamp(t + within(i, webhookish ? rng.int(30 * SECOND, 6 * HOUR) : rng.int(1 * SECOND, 10 * MINUTE)));
      i.retries.push(t);
    }
  }

  // A failed request retried unchanged: the stored error is replayed, nothing re-executed.
  const failed = intents.filter((i) => i.outcome.type === "fail");
  for (const i of pickFrom(failed, Math.max(1, Math.round(0.4 * failed.length)))) {
    i.retries.push(clamp(outcomeAt(i) + within(i, rng.int(2 * SECOND, 2 * HOUR))));
  }

  // Retries that hit a pending or a stuck record: rejected as in progress.
  const pending = intents.filter((i) => i.outcome.type === "pending");
  for (const i of pickFrom(pending, Math.max(1, Math.round(0.4 * pending.length)))) {
    i.retries.push(clamp(outcomeAt(i) + rng.int(30 * SECOND, 5 * MINUTE)));
  }
  const stuck = intents.filter((i) => i.outcome.type === "stuck");
  for (const i of pickFrom(stuck, Math.max(1, Math.round(0.5 * stuck.length)))) {
    i.retries.push(clamp(i.at + rng.int(20 * SECOND, 10 * MINUTE)));
  }

  // What the outbox dispatcher did with each message since.
  for (const i of intents) {
    if (i.outcome.type !== "complete") continue;
    const created = i.outcome.at;
    for (let k = 0; k < i.outcome.outbox.length; k++) {
      const roll = rng.next();
      if (created > nowMs - 2 * MINUTE) i.outboxFate.push({ status: "pending", attempts: 0 });
      else if (roll < 0.96) {
        i.outboxFate.push({ status: "sent", attempts: roll < 0.93 ? 1 : 2, sentAt: clamp(created + rng.int(50, 4000)) });
      } else if (roll < 0.985) {
        i.outboxFate.push({
          status: "pending",
          attempts: rng.int(1, 6),
          nextAttemptAt: nowMs + rng.int(1, 30) * MINUTE,
          lastError: "HTTP 503 from subscriber https://hooks.internal.example/erp",
        });
      } else {
        i.outboxFate.push({ status: "failed", attempts: 10, lastError: "gave up after 10 attempts: connect ECONNREFUSED 10.0.3.17:443" });
      }
    }
  }
}
