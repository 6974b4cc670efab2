/**
 * The local payment provider service (`npm run provider`): a small Stripe-like
 * HTTP API of our own, for the demo, the tests and the end-to-end runs. Plain
 * node:http, state in memory (optionally persisted to a JSON file, written
 * atomically by rename), with a fault-injection control API.
 *
 * Public API (amounts are integers in minor units; JSON numbers, or strings when
 * beyond 2^53):
 *   GET  /v1/requests/{requestId}   what became of a charge request:
 *        200 {id, status:"succeeded", charge:{id, amount_minor, currency}}
 *        200 {id, status:"failed", reason}
 *        200 {id, status:"processing"}
 *        404 {error:{type, code:"resource_missing", message}}
 *   POST /v1/charges   {amount_minor, currency, request_id?}  → 200 charge
 *   GET  /v1/charges/{id}
 *   POST /v1/refunds   {charge, amount_minor, currency?, kind: refund|void|cancel, reason?}
 *        200 {id, object:"refund", charge, amount_minor, currency, kind, status:"succeeded"}
 *        404 charge unknown; 422 more than the charge has left / other currency
 *   GET  /v1/refunds?charge=ch_…   → {data:[refund…]}
 *   GET  /health
 * POSTs honour an Idempotency-Key header (optional, ≤ 255 characters), scoped to
 * the route: the same key with the same body replays the first answer
 * (`Idempotent-Replayed: true`), the same key with another body is a 422
 * `idempotency_error`. Like Stripe, every answer the route produced is kept
 * (refusals included); malformed bodies (400) and injected faults are not.
 *
 * Control API (no faults apply to it):
 *   POST   /_control/requests {requests:[{requestId, status:"succeeded"|"failed"|"unknown"|"processing",
 *                               amountMinor?, currency?, reason?, reference?}]}
 *          "unknown" is stored as "processing" (the provider has no final answer);
 *          answerAt (ISO 8601, succeeded/failed only): the provider "answers later" — lookups
 *          say processing until then (a slow bank, a 3-D Secure challenge still open);
 *          a succeeded request without `reference` gets a charge id derived from its
 *          request id, so seeding twice changes nothing.  → {created, updated, unchanged}
 *   POST   /_control/charges  {charges:[{reference, amountMinor, currency, requestId?}]} → {created, updated, unchanged}
 *   POST   /_control/faults   {route:"lookup"|"compensate"|"charge"|"*", mode:"latency"|"timeout"|"fail"|"lose", ms?, times?}
 *   GET    /_control/faults ; DELETE /_control/faults or POST /_control/clear (removes every fault)
 *   POST   /_control/reset    (everything: state, idempotency keys, faults)
 *   GET    /_control/state    → {requests, charges, refunds}
 *
 * Faults (route lookup = GET /v1/requests/…, compensate = POST /v1/refunds,
 * charge = POST /v1/charges; "*" = all three), the first matching one applies,
 * `times` calls (default: every call):
 *   latency  wait `ms` (default 1000), then answer normally
 *   timeout  do the effect now, answer only after `ms` (default 120000)
 *   fail     503 without any effect
 *   lose     do the effect, then destroy the socket without an answer
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";

export type RequestStatus = "succeeded" | "failed" | "processing";
export type FaultRoute = "lookup" | "compensate" | "charge" | "*";
export type FaultMode = "latency" | "timeout" | "fail" | "lose";
export type RefundKind = "refund" | "void" | "cancel";

export interface ChargeRequestRecord {
  requestId: string;
  status: RequestStatus;
  /** The charge it created (succeeded only). */
  charge: string | null;
  reason: string | null;
  /** The final answer is known only from this time on (ISO 8601); lookups before it say "processing". */
  answerAt?: string | null;
}
export interface ChargeRecord {
  id: string;
  amountMinor: bigint;
  currency: string;
  requestId: string | null;
  createdAt: string;
}
export interface RefundRecord {
  id: string;
  charge: string;
  amountMinor: bigint;
  currency: string;
  kind: RefundKind;
  reason: string | null;
  idempotencyKey: string | null;
  createdAt: string;
}
export interface Fault {
  id: number;
  route: FaultRoute;
  mode: FaultMode;
  ms: number | null;
  /** Calls left; null = unlimited. */
  times: number | null;
}
interface StoredAnswer {
  hash: string;
  status: number;
  body: unknown;
}

interface State {
  requests: Map<string, ChargeRequestRecord>;
  charges: Map<string, ChargeRecord>;
  refunds: RefundRecord[];
  /** `${route} ${key}` → the first answer. */
  keys: Map<string, StoredAnswer>;
}

const emptyState = (): State => ({ requests: new Map(), charges: new Map(), refunds: [], keys: new Map() });

export interface ProviderServiceOptions {
  port?: number;
  host?: string;
  /** Persist state to this JSON file (loaded at start, rewritten atomically after each change). */
  dataFile?: string;
  /** One line per request on stderr. */
  log?: boolean;
}

export interface RunningProviderService {
  url: string;
  port: number;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const MAX_PUBLIC_BODY = 1 << 20;
const MAX_CONTROL_BODY = 64 << 20;

/** A charge id derived from a request id: seeding the same request twice names the same charge. */
export function chargeIdForRequest(requestId: string): string {
  return `ch_${createHash("sha256").update(`charge:${requestId}`).digest("hex").slice(0, 24)}`;
}

/** Amounts on the wire: a JSON number when exact, else a decimal string. */
export function wireAmount(v: bigint): number | string {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

function parseAmount(v: unknown, field: string, { positive = true } = {}): bigint {
  let out: bigint | null = null;
  if (typeof v === "number" && Number.isSafeInteger(v)) out = BigInt(v);
  else if (typeof v === "string" && /^-?\d{1,19}$/.test(v)) out = BigInt(v);
  if (out === null || (positive ? out <= 0n : out < 0n)) {
    throw new HttpError(
      400,
      "invalid_request_error",
      "parameter_invalid",
      `${field} must be a ${positive ? "positive" : "non-negative"} integer (minor units)`,
    );
  }
  return out;
}

function parseCurrency(v: unknown, field = "currency"): string {
  if (typeof v !== "string" || !/^[A-Za-z]{3}$/.test(v)) {
    throw new HttpError(400, "invalid_request_error", "parameter_invalid", `${field} must be a 3-letter ISO 4217 code`);
  }
  return v.toUpperCase();
}

function parseString(v: unknown, field: string, { optional = false, max = 255 } = {}): string | null {
  if (v === undefined || v === null) {
    if (optional) return null;
    throw new HttpError(400, "invalid_request_error", "parameter_missing", `${field} is required`);
  }
  if (typeof v !== "string" || v.length === 0 || v.length > max) {
    throw new HttpError(400, "invalid_request_error", "parameter_invalid", `${field} must be a non-empty string of at most ${max} characters`);
  }
  return v;
}

function objectBody(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw new HttpError(400, "invalid_request_error", "parameter_invalid", "the body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString("hex")}`;

/** The provider's state and rules, without HTTP. */
export class ProviderLedger {
  state: State = emptyState();
  faults: Fault[] = [];
  private nextFaultId = 1;

  constructor(private readonly dataFile?: string) {
    if (dataFile && existsSync(dataFile)) this.load(dataFile);
  }

  // --- public API ---

  lookup(requestId: string): { status: number; body: unknown } {
    const r = this.state.requests.get(requestId);
    if (!r) {
      throw new HttpError(404, "invalid_request_error", "resource_missing", `no such request: ${requestId}`);
    }
    const later = r.answerAt && Date.now() < Date.parse(r.answerAt);
    if (r.status === "succeeded" && !later) {
      const c = r.charge ? this.state.charges.get(r.charge) : undefined;
      return {
        status: 200,
        body: {
          id: r.requestId,
          object: "charge_request",
          status: "succeeded",
          charge: c ? this.chargeJson(c) : { id: r.charge, amount_minor: null, currency: null },
        },
      };
    }
    if (r.status === "failed" && !later) return { status: 200, body: { id: r.requestId, object: "charge_request", status: "failed", reason: r.reason } };
    return { status: 200, body: { id: r.requestId, object: "charge_request", status: "processing" } };
  }

  createCharge(raw: unknown): { status: number; body: unknown } {
    const body = objectBody(raw);
    const amountMinor = parseAmount(body.amount_minor, "amount_minor");
    const currency = parseCurrency(body.currency);
    const requestId = parseString(body.request_id, "request_id", { optional: true });
    if (requestId && this.state.requests.has(requestId)) {
      return errorAnswer(409, "invalid_request_error", "request_exists", `request ${requestId} already exists`);
    }
    const charge: ChargeRecord = { id: newId("ch"), amountMinor, currency, requestId, createdAt: new Date().toISOString() };
    this.state.charges.set(charge.id, charge);
    if (requestId) this.state.requests.set(requestId, { requestId, status: "succeeded", charge: charge.id, reason: null });
    return { status: 200, body: this.chargeJson(charge) };
  }

  getCharge(id: string): { status: number; body: unknown } {
    const c = this.state.charges.get(id);
    if (!c) throw new HttpError(404, "invalid_request_error", "resource_missing", `no such charge: ${id}`);
    return { status: 200, body: this.chargeJson(c) };
  }

  createRefund(raw: unknown, idempotencyKey: string | null): { status: number; body: unknown } {
    const body = objectBody(raw);
    const chargeId = parseString(body.charge, "charge")!;
    const amountMinor = parseAmount(body.amount_minor, "amount_minor");
    const currency = body.currency === undefined ? null : parseCurrency(body.currency);
    const kind = (body.kind ?? "refund") as RefundKind;
    if (!["refund", "void", "cancel"].includes(kind)) {
      throw new HttpError(400, "invalid_request_error", "parameter_invalid", "kind must be refund, void or cancel");
    }
    const reason = parseString(body.reason, "reason", { optional: true, max: 2000 });
    const charge = this.state.charges.get(chargeId);
    if (!charge) return errorAnswer(404, "invalid_request_error", "resource_missing", `no such charge: ${chargeId}`);
    if (currency && currency !== charge.currency) {
      return errorAnswer(422, "invalid_request_error", "currency_mismatch", `charge ${chargeId} is in ${charge.currency}, not ${currency}`);
    }
    const left = charge.amountMinor - this.refundedOf(chargeId);
    if (amountMinor > left) {
      return left === 0n
        ? errorAnswer(422, "invalid_request_error", "charge_already_refunded", `charge ${chargeId} has already been refunded in full`)
        : errorAnswer(
            422,
            "invalid_request_error",
            "amount_too_large",
            `${kind} of ${amountMinor} exceeds the ${left} ${charge.currency} left on charge ${chargeId}`,
          );
    }
    const refund: RefundRecord = {
      id: newId(kind === "refund" ? "re" : kind === "void" ? "vo" : "cn"),
      charge: chargeId,
      amountMinor,
      currency: charge.currency,
      kind,
      reason,
      idempotencyKey,
      createdAt: new Date().toISOString(),
    };
    this.state.refunds.push(refund);
    return { status: 200, body: this.refundJson(refund) };
  }

  listRefunds(chargeId: string | null): { status: number; body: unknown } {
    const data = this.state.refunds.filter((r) => chargeId === null || r.charge === chargeId).map((r) => this.refundJson(r));
    return { status: 200, body: { object: "list", data } };
  }

  /** Runs a POST under its Idempotency-Key: same key + same body → the first answer, other body → 422. */
  idempotent(
    route: string,
    key: string | null,
    body: unknown,
    run: () => { status: number; body: unknown },
  ): { status: number; body: unknown; replayed: boolean } {
    if (key === null) return { ...run(), replayed: false };
    if (key.length > 255) throw new HttpError(400, "invalid_request_error", "idempotency_key_invalid", "Idempotency-Key must be at most 255 characters");
    const id = `${route} ${key}`;
    const hash = sha256(canonical(body));
    const stored = this.state.keys.get(id);
    if (stored) {
      if (stored.hash !== hash) {
        return {
          status: 422,
          body: { error: { type: "idempotency_error", code: "idempotency_key_reused", message: `Idempotency-Key ${key} was used with another request body` } },
          replayed: false,
        };
      }
      return { status: stored.status, body: stored.body, replayed: true };
    }
    const answer = run();
    this.state.keys.set(id, { hash, status: answer.status, body: answer.body });
    return { ...answer, replayed: false };
  }

  // --- control API ---

  seedRequests(raw: unknown): { created: number; updated: number; unchanged: number } {
    const list = objectBody(raw).requests;
    if (!Array.isArray(list)) throw new HttpError(400, "invalid_request_error", "parameter_invalid", "requests must be an array");
    const counts = { created: 0, updated: 0, unchanged: 0 };
    // Validate everything first: a bad item changes nothing.
    const parsed = list.map((item, i) => {
      const o = objectBody(item);
      const requestId = parseString(o.requestId, `requests[${i}].requestId`)!;
      const s = o.status;
      if (!["succeeded", "failed", "unknown", "processing"].includes(s as string)) {
        throw new HttpError(400, "invalid_request_error", "parameter_invalid", `requests[${i}].status must be succeeded, failed or unknown`);
      }
      const status: RequestStatus = s === "unknown" ? "processing" : (s as RequestStatus);
      let answerAt: string | null = null;
      if (o.answerAt !== undefined && o.answerAt !== null) {
        if (typeof o.answerAt !== "string" || Number.isNaN(Date.parse(o.answerAt)) || status === "processing") {
          throw new HttpError(
            400,
            "invalid_request_error",
            "parameter_invalid",
            `requests[${i}].answerAt must be an ISO 8601 time, for a succeeded or failed request`,
          );
        }
        answerAt = new Date(o.answerAt).toISOString();
      }
      if (status !== "succeeded") {
        return {
          requestId,
          status,
          answerAt,
          reason: status === "failed" ? (parseString(o.reason, `requests[${i}].reason`, { optional: true, max: 2000 }) ?? "declined") : null,
          charge: null,
        };
      }
      const reference = parseString(o.reference, `requests[${i}].reference`, { optional: true }) ?? chargeIdForRequest(requestId);
      const amountMinor = parseAmount(o.amountMinor ?? 1000, `requests[${i}].amountMinor`, { positive: false });
      const currency = parseCurrency(o.currency ?? "EUR", `requests[${i}].currency`);
      return { requestId, status, answerAt, reason: null, charge: { id: reference, amountMinor, currency } };
    });
    for (const p of parsed) {
      const before = this.state.requests.get(p.requestId);
      const next: ChargeRequestRecord = {
        requestId: p.requestId,
        status: p.status,
        charge: p.charge?.id ?? null,
        reason: p.reason,
        ...(p.answerAt ? { answerAt: p.answerAt } : {}),
      };
      let changed =
        !before ||
        before.status !== next.status ||
        before.charge !== next.charge ||
        before.reason !== next.reason ||
        (before.answerAt ?? null) !== (next.answerAt ?? null);
      if (p.charge) changed = this.upsertCharge({ ...p.charge, requestId: p.requestId }) || changed;
      if (!before) counts.created++;
      else if (changed) counts.updated++;
      else counts.unchanged++;
      if (changed) this.state.requests.set(p.requestId, next);
    }
    return counts;
  }

  seedCharges(raw: unknown): { created: number; updated: number; unchanged: number } {
    const list = objectBody(raw).charges;
    if (!Array.isArray(list)) throw new HttpError(400, "invalid_request_error", "parameter_invalid", "charges must be an array");
    const parsed = list.map((item, i) => {
      const o = objectBody(item);
      return {
        id: parseString(o.reference, `charges[${i}].reference`)!,
        amountMinor: parseAmount(o.amountMinor, `charges[${i}].amountMinor`, { positive: false }),
        currency: parseCurrency(o.currency, `charges[${i}].currency`),
        requestId: parseString(o.requestId, `charges[${i}].requestId`, { optional: true }),
      };
    });
    const counts = { created: 0, updated: 0, unchanged: 0 };
    for (const p of parsed) {
      const existed = this.state.charges.has(p.id);
      const changed = this.upsertCharge(p);
      if (!existed) counts.created++;
      else if (changed) counts.updated++;
      else counts.unchanged++;
    }
    return counts;
  }

  addFault(raw: unknown): Fault {
    const o = objectBody(raw);
    if (!["lookup", "compensate", "charge", "*"].includes(o.route as string)) {
      throw new HttpError(400, "invalid_request_error", "parameter_invalid", "route must be lookup, compensate, charge or *");
    }
    if (!["latency", "timeout", "fail", "lose"].includes(o.mode as string)) {
      throw new HttpError(400, "invalid_request_error", "parameter_invalid", "mode must be latency, timeout, fail or lose");
    }
    const int = (v: unknown, field: string, min: number) => {
      if (v === undefined || v === null) return null;
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) {
        throw new HttpError(400, "invalid_request_error", "parameter_invalid", `${field} must be an integer ≥ ${min}`);
      }
      return v;
    };
    const fault: Fault = {
      id: this.nextFaultId++,
      route: o.route as FaultRoute,
      mode: o.mode as FaultMode,
      ms: int(o.ms, "ms", 0),
      times: int(o.times, "times", 1),
    };
    this.faults.push(fault);
    return fault;
  }

  /** The fault that applies to this call (consuming one of its `times`), if any. */
  takeFault(route: Exclude<FaultRoute, "*">): Fault | null {
    const f = this.faults.find((x) => (x.route === route || x.route === "*") && (x.times === null || x.times > 0));
    if (!f) return null;
    if (f.times !== null) {
      f.times--;
      if (f.times === 0) this.faults = this.faults.filter((x) => x !== f);
    }
    return { ...f };
  }

  reset(): void {
    this.state = emptyState();
    this.faults = [];
  }

  snapshot() {
    return {
      requests: [...this.state.requests.values()].map((r) => {
        const c = r.charge ? this.state.charges.get(r.charge) : undefined;
        return {
          requestId: r.requestId,
          status: r.status,
          reference: r.charge,
          amountMinor: c ? wireAmount(c.amountMinor) : null,
          currency: c?.currency ?? null,
          reason: r.reason,
          ...(r.answerAt ? { answerAt: r.answerAt } : {}),
        };
      }),
      charges: [...this.state.charges.values()].map((c) => ({
        reference: c.id,
        amountMinor: wireAmount(c.amountMinor),
        currency: c.currency,
        requestId: c.requestId,
        refundedMinor: wireAmount(this.refundedOf(c.id)),
      })),
      refunds: this.state.refunds.map((r) => ({
        id: r.id,
        charge: r.charge,
        amountMinor: wireAmount(r.amountMinor),
        currency: r.currency,
        kind: r.kind,
        reason: r.reason,
        idempotencyKey: r.idempotencyKey,
        createdAt: r.createdAt,
      })),
    };
  }

  // --- persistence ---

  persist(): void {
    if (!this.dataFile) return;
    const data = {
      version: 1,
      requests: [...this.state.requests.values()],
      charges: [...this.state.charges.values()].map((c) => ({ ...c, amountMinor: c.amountMinor.toString() })),
      refunds: this.state.refunds.map((r) => ({ ...r, amountMinor: r.amountMinor.toString() })),
      keys: [...this.state.keys.entries()],
    };
    const tmp = `${this.dataFile}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(data));
    renameSync(tmp, this.dataFile);
  }

  private load(file: string): void {
    const data = JSON.parse(readFileSync(file, "utf8"));
    const s = emptyState();
    for (const r of data.requests ?? []) s.requests.set(r.requestId, r);
    for (const c of data.charges ?? []) s.charges.set(c.id, { ...c, amountMinor: BigInt(c.amountMinor) });
    s.refunds = (data.refunds ?? []).map((r: RefundRecord & { amountMinor: string }) => ({ ...r, amountMinor: BigInt(r.amountMinor) }));
    s.keys = new Map(data.keys ?? []);
    this.state = s;
  }

  // --- helpers ---

  private upsertCharge(c: { id: string; amountMinor: bigint; currency: string; requestId: string | null }): boolean {
    const before = this.state.charges.get(c.id);
    const requestId = c.requestId ?? before?.requestId ?? null;
    if (before && before.amountMinor === c.amountMinor && before.currency === c.currency && before.requestId === requestId) return false;
    this.state.charges.set(c.id, {
      id: c.id,
      amountMinor: c.amountMinor,
      currency: c.currency,
      requestId,
      createdAt: before?.createdAt ?? new Date().toISOString(),
    });
    return true;
  }

  private refundedOf(chargeId: string): bigint {
    return this.state.refunds.reduce((sum, r) => (r.charge === chargeId ? sum + r.amountMinor : sum), 0n);
  }

  private chargeJson(c: ChargeRecord) {
    return {
      id: c.id,
      object: "charge",
      amount_minor: wireAmount(c.amountMinor),
      amount_refunded_minor: wireAmount(this.refundedOf(c.id)),
      currency: c.currency,
      request_id: c.requestId,
      created_at: c.createdAt,
    };
  }

  private refundJson(r: RefundRecord) {
    return {
      id: r.id,
      object: "refund",
      charge: r.charge,
      amount_minor: wireAmount(r.amountMinor),
      currency: r.currency,
      kind: r.kind,
      reason: r.reason,
      status: "succeeded",
      created_at: r.createdAt,
    };
  }
}

function errorAnswer(status: number, type: string, code: string, message: string) {
  return { status, body: { error: { type, code, message } } };
}

async function readJson(req: http.IncomingMessage, max: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new HttpError(413, "invalid_request_error", "body_too_large", `the body exceeds ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, "invalid_request_error", "body_invalid", "the body is not valid JSON");
  }
}

/** Starts the service; resolves once it listens. */
export async function startProviderService(opts: ProviderServiceOptions = {}): Promise<RunningProviderService> {
  const ledger = new ProviderLedger(opts.dataFile);
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
    return t;
  };
  const sleep = (ms: number) => new Promise<void>((resolve) => later(ms, resolve));

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    if (res.destroyed || res.writableEnded) return;
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://provider.local");
    const method = req.method ?? "GET";
    const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);

    // --- control API ---
    if (parts[0] === "_control") {
      const what = parts.slice(1).join("/");
      const body = method === "POST" ? await readJson(req, MAX_CONTROL_BODY) : undefined;
      let answer: unknown;
      if (method === "POST" && what === "requests") answer = ledger.seedRequests(body);
      else if (method === "POST" && what === "charges") answer = ledger.seedCharges(body);
      else if (method === "POST" && what === "faults") answer = ledger.addFault(body);
      else if (method === "GET" && what === "faults") answer = { faults: ledger.faults };
      else if ((method === "DELETE" && what === "faults") || (method === "POST" && what === "clear")) {
        ledger.faults = [];
        answer = { faults: [] };
      } else if (method === "POST" && what === "reset") {
        ledger.reset();
        answer = { ok: true };
      } else if (method === "GET" && what === "state") answer = ledger.snapshot();
      else throw new HttpError(404, "invalid_request_error", "route_missing", `no control route ${method} ${url.pathname}`);
      if (method !== "GET") ledger.persist();
      return send(res, 200, answer);
    }

    if (method === "GET" && url.pathname === "/health") return send(res, 200, { status: "ok" });

    // --- public API ---
    let route: Exclude<FaultRoute, "*"> | null = null;
    let run: (body: unknown) => { status: number; body: unknown; replayed?: boolean };
    const key = req.headers["idempotency-key"] === undefined ? null : String(req.headers["idempotency-key"]);
    if (method === "GET" && parts[0] === "v1" && parts[1] === "requests" && parts.length === 3) {
      route = "lookup";
      run = () => ledger.lookup(parts[2]);
    } else if (method === "POST" && url.pathname === "/v1/charges") {
      route = "charge";
      run = (body) => ledger.idempotent("charges", key, body, () => ledger.createCharge(body));
    } else if (method === "GET" && parts[0] === "v1" && parts[1] === "charges" && parts.length === 3) {
      run = () => ledger.getCharge(parts[2]);
    } else if (method === "POST" && url.pathname === "/v1/refunds") {
      route = "compensate";
      run = (body) => ledger.idempotent("refunds", key, body, () => ledger.createRefund(body, key));
    } else if (method === "GET" && url.pathname === "/v1/refunds") {
      run = () => ledger.listRefunds(url.searchParams.get("charge"));
    } else {
      throw new HttpError(404, "invalid_request_error", "route_missing", `no route ${method} ${url.pathname}`);
    }

    let gone = false; // the caller hung up (e.g. its own timeout) before we answered
    res.on("close", () => {
      gone = !res.writableFinished;
    });
    const body = method === "POST" ? await readJson(req, MAX_PUBLIC_BODY) : undefined;
    const fault = route ? ledger.takeFault(route) : null;
    if (fault?.mode === "fail") {
      return send(res, 503, { error: { type: "api_error", code: "service_unavailable", message: "injected fault: the provider is unavailable" } });
    }
    if (fault?.mode === "latency") await sleep(fault.ms ?? 1000);
    if (gone || res.destroyed) return; // the caller gave up while we waited: nothing happened

    const answer = run(body);
    if (method === "POST") ledger.persist();
    const headers: Record<string, string> = answer.replayed ? { "idempotent-replayed": "true" } : {};

    if (fault?.mode === "lose") {
      req.socket.destroy();
      return;
    }
    if (fault?.mode === "timeout") {
      const t = later(fault.ms ?? 120_000, () => send(res, answer.status, answer.body, headers));
      res.on("close", () => {
        clearTimeout(t);
        timers.delete(t);
      });
      return;
    }
    send(res, answer.status, answer.body, headers);
  };

  const server = http.createServer((req, res) => {
    const started = Date.now();
    if (opts.log) res.on("finish", () => console.error(`${req.method} ${req.url} → ${res.statusCode} (${Date.now() - started} ms)`));
    handle(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) return send(res, err.status, { error: { type: err.type, code: err.code, message: err.message } });
      console.error("provider: internal error:", err);
      send(res, 500, { error: { type: "api_error", code: "internal", message: "internal error" } });
    });
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 4010, opts.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host ?? "127.0.0.1";
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
