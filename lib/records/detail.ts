import { z } from "zod";
import { actorOf, audit, type RequestMeta } from "../audit";
import { can, type Principal } from "../auth/permissions";
import { leaseSeconds } from "../compensations/config";
import { compensationsOfRecord, type CompensationRow } from "../compensations/model";
import type { Database } from "../db/client";
import type { SqlExecutor } from "../db/sql";
import { compensability } from "../compensations/compensable";
import { checkAvailability, type CheckAvailability } from "../reconcile/apply";
import { readSideConfig, type StuckThresholds } from "./config";
import { duplicatesOfRecord, type SuspectedDuplicate } from "./duplicates";
import { DEFAULT_WINDOW_SECONDS, MAX_WINDOW_SECONDS, MIN_WINDOW_SECONDS } from "./vocabulary";
import { buildMaskRules, maskBody, maskResponse, type HeaderPairs, type MaskedField, type MaskRules } from "./mask";
import type { RecordSummary } from "./row";
import { detailStore } from "./detail-store";
import { bodyText, readHeaders } from "../idempotency/stored-response";
import { ForbiddenError, NotFoundError } from "../kernel/errors";
import { durationParam, optional } from "../kernel/input";

/**
 * Everything about one record: every field, the event timeline, reconciliation items,
 * outbox messages, the audit entries that touch it and its suspected duplicates — and
 * the stored response at the level the viewer may see:
 * - "none"     (no records.read_body): no headers, no body;
 * - "masked"   (records.read_body): sensitive fields masked (lib/records/mask.ts), with where;
 * - "revealed" (records.reveal, via POST …/reveal, audited by the caller): as stored, plus
 *   where the masks would have been.
 * Outbox payloads follow the same levels (absent / masked / as stored).
 * Every list comes from an index on record id (detail-store.postgres.ts). Compensations come
 * without the viewer's allowed actions: GET /api/v1/compensations?recordId= adds those.
 */

export const AUDIT_TARGET_TABLE = "idempotency_records";
/** Timeline rows returned at most (newest kept); a webhook redelivered all day has many. */
export const MAX_TIMELINE_EVENTS = 500;
export const MAX_AUDIT_ENTRIES = 200;

export const detailQuerySchema = z
  .object({
    /** Window for suspected duplicates (default 10m; 1m … 24h). */
    window: optional(durationParam(MIN_WINDOW_SECONDS, MAX_WINDOW_SECONDS)),
  })
  .strict();

export type BodyAccess = "none" | "masked" | "revealed";

export interface RecordFull extends RecordSummary {
  responseHeaders: HeaderPairs | null;
  /** How the writer stored the headers, and any part of them that is not a header (as text). */
  responseHeadersShape: ReturnType<typeof readHeaders>["shape"];
  responseHeadersUnreadable: string | null;
  responseBody: string | null;
}

export interface TimelineEvent {
  id: bigint;
  kind: string;
  occurredAt: Date;
  payloadHash: string | null;
  responseCode: number | null;
  detail: unknown;
}

export interface StoredResponseOut {
  access: Exclude<BodyAccess, "none">;
  code: number | null;
  headers: HeaderPairs | null;
  /** How the writer stored the headers (pairs, an object, lines …) and what of them is not a header (text, masked like a body). */
  headersShape: RecordFull["responseHeadersShape"];
  headersUnreadable: string | null;
  body: string | null;
  /** Masked ("masked") or maskable ("revealed") places. */
  masked: MaskedField[];
}

export interface RecordDetail {
  record: RecordSummary;
  /** null when the viewer may not read response bodies. */
  response: StoredResponseOut | null;
  bodyAccess: BodyAccess;
  timeline: { events: TimelineEvent[]; total: number; truncated: boolean };
  reconciliationItems: Record<string, unknown>[];
  outboxMessages: Record<string, unknown>[];
  audit: Record<string, unknown>[];
  suspectedDuplicates: SuspectedDuplicate[];
  duplicateWindowSeconds: number;
  /** Refunds/voids/cancels of this record's charge, oldest first. */
  compensations: CompensationRow[];
  /** Whether "Check with provider" can work now, and why not (the record page disables it with this reason). */
  checkWithProvider: CheckAvailability;
  /** Whether its charge can be compensated at all, and why not. */
  compensation: { allowed: boolean; reason: string | null };
}

export async function loadRecord(sql: SqlExecutor, id: bigint): Promise<RecordFull> {
  const row = await detailStore(sql).record(id);
  if (!row) throw new NotFoundError(`There is no record ${id} (it may have been purged).`);
  // Headers as the writer stored them (pairs, an object, lines …), read as pairs; what is not a header is kept as text.
  const headers = readHeaders(row.responseHeaders);
  return {
    ...row,
    responseHeaders: headers.pairs,
    responseHeadersUnreadable: headers.unreadable,
    responseHeadersShape: headers.shape,
    responseBody: bodyText(row.responseBody),
  };
}

/** The stored response at the given access level (null for "none"). */
export function responseView(record: RecordFull, access: BodyAccess, rules?: MaskRules): StoredResponseOut | null {
  if (access === "none") return null;
  const r = rules ?? buildMaskRules();
  const stored = { code: record.responseCode, headers: record.responseHeaders, body: record.responseBody };
  const masked = maskResponse(stored, r);
  const odd = record.responseHeadersUnreadable === null ? null : maskBody(record.responseHeadersUnreadable, r);
  const oddMasks = (odd?.masked ?? []).map((m) => ({ ...m, path: `headersUnreadable${m.path.slice("body".length)}` }));
  const shape = { headersShape: record.responseHeadersShape };
  return access === "masked"
    ? {
        access,
        code: masked.code,
        headers: masked.headers,
        ...shape,
        headersUnreadable: odd?.body ?? null,
        body: masked.body,
        masked: [...masked.masked, ...oddMasks],
      }
    : { access, ...stored, ...shape, headersUnreadable: record.responseHeadersUnreadable, masked: [...masked.masked, ...oddMasks] };
}

export async function recordDetail(
  sql: SqlExecutor,
  id: bigint,
  opts: { bodyAccess: BodyAccess; windowSeconds?: number; rules?: MaskRules; now?: Date; stuck?: StuckThresholds },
): Promise<RecordDetail> {
  const record = await loadRecord(sql, id);
  const windowSeconds = opts.windowSeconds ?? DEFAULT_WINDOW_SECONDS;
  const now = opts.now ?? new Date();
  const store = detailStore(sql);
  const [events, total, reconciliationItems, outboxMessages, audit, suspectedDuplicates, compensations] = await Promise.all([
    store.timeline(id, MAX_TIMELINE_EVENTS),
    store.eventCount(id),
    store.reconciliationItems(id),
    store.outboxMessages(id),
    store.auditTrail({ table: AUDIT_TARGET_TABLE, id }, MAX_AUDIT_ENTRIES),
    duplicatesOfRecord(sql, record, windowSeconds),
    compensationsOfRecord(sql, id, leaseSeconds()),
  ]);
  const { responseHeaders: _h, responseBody: _b, responseHeadersShape: _s, responseHeadersUnreadable: _u, ...summary } = record;
  const n = Number(total);
  const rules = opts.rules ?? buildMaskRules();
  const items = reconciliationItems as { state: string; nextCheckAt: Date | null }[];
  return {
    record: summary,
    response: responseView(record, opts.bodyAccess, rules),
    bodyAccess: opts.bodyAccess,
    timeline: { events, total: n, truncated: n > events.length },
    reconciliationItems,
    outboxMessages: outboxMessages.map((m) => outboxView(m, opts.bodyAccess, rules)),
    audit,
    suspectedDuplicates,
    duplicateWindowSeconds: windowSeconds,
    compensations,
    checkWithProvider: checkAvailability(
      record,
      {
        openItem: items.some(
          (i) => i.state === "open" || i.state === "needs_manual" || (i.state === "checking" && i.nextCheckAt !== null && i.nextCheckAt <= now),
        ),
        checking: items.some((i) => i.state === "checking" && i.nextCheckAt !== null && i.nextCheckAt > now),
      },
      now,
      opts.stuck ?? readSideConfig().stuck,
    ),
    compensation: compensability(record),
  };
}

/** An outbox message's payload at the viewer's level (it is a message body like any other). */
function outboxView(message: Record<string, unknown>, access: BodyAccess, rules: MaskRules): Record<string, unknown> {
  if (access === "none") return { ...message, payload: null, payloadHidden: true };
  const text = JSON.stringify(message.payload ?? null);
  const m = maskBody(text, rules);
  const masked = m.masked.map((f) => ({ ...f, path: f.path.replace(/^body/, "payload") }));
  return access === "masked" ? { ...message, payload: JSON.parse(m.body), masked } : { ...message, masked };
}

export interface RevealResult {
  recordId: bigint;
  response: StoredResponseOut;
  /** The audit entry that records this reveal. */
  auditId: bigint;
}

/**
 * Reveal: the stored response unmasked, for a principal holding records.reveal (the
 * route checks it) and records.read_body. Nothing changes, but the reveal is an action:
 * the audit entry (who, which record, the reason, which fields were masked — never
 * their values) is written BEFORE the data is returned; no entry, no data.
 */
export async function revealResponse(
  database: Pick<Database, "sql" | "prisma">,
  principal: Principal,
  id: bigint,
  reason: string,
  request: RequestMeta,
  rules?: MaskRules,
): Promise<RevealResult> {
  const target = { table: AUDIT_TARGET_TABLE, id };
  if (!can(principal, "records.read_body")) {
    await audit(database.prisma, {
      actor: actorOf(principal),
      action: "records.reveal",
      target,
      reason,
      request,
      outcome: "refused",
      detail: { reason: "missing permission records.read_body" },
    });
    throw new ForbiddenError("Revealing a response also needs the permission records.read_body.");
  }
  const record = await loadRecord(database.sql, id);
  const response = responseView(record, "revealed", rules)!;
  const entry = await audit(database.prisma, {
    actor: actorOf(principal),
    action: "records.reveal",
    target,
    reason,
    request,
    outcome: "done",
    detail: {
      scope: record.scope,
      operation: record.operation,
      idempotencyKey: record.idempotencyKey,
      revealed: response.masked.map((m) => `${m.path} (${m.rule})`),
    },
  });
  return { recordId: id, response, auditId: entry.id };
}
