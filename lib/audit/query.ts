import { csvCell } from "../kernel/csv";
import { z } from "zod";
import { txExecutor } from "../db/sql";
import type { AuditEntry, PrismaClient } from "../generated/prisma/client";
import { auditStore, type AuditEntryFilter } from "./store";

/**
 * Reading the audit trail: the filters the console and the API accept (zod, from
 * query strings), a keyset-paginated listing (newest first, cursor = the last id
 * seen), the JSON shape entries leave the server in, and CSV for exports.
 */

export const AUDIT_OUTCOMES = ["done", "refused", "failed"] as const;
export const MAX_AUDIT_PAGE = 200;
export const DEFAULT_AUDIT_PAGE = 50;
/** Upper bound of one CSV export (rows); the response says when it was reached. */
export const MAX_AUDIT_EXPORT_ROWS = 100_000;

// A query string says "actor=" for an empty form field: treat it as absent.
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), schema.optional());

/** Date.parse rolls 2026-02-30 over to March; a filter should say it is wrong instead. */
function realDate(v: string): boolean {
  const [y, m, d] = v.slice(0, 10).split("-").map(Number);
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

const isoTime = z
  .string()
  .trim()
  .refine((v) => /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) && !Number.isNaN(Date.parse(v)) && realDate(v), {
    message: "must be an ISO 8601 time such as 2026-01-31T09:00:00Z (UTC when no offset is given)",
  })
  // A time without an offset is UTC (Date.parse would read it as server-local time).
  .transform((v) => new Date(/T/.test(v) && !/(Z|[+-]\d{2}:?\d{2})$/.test(v) ? `${v}Z` : v));

/** The filters shared by the listing and the export. */
export const auditFilterShape = {
  /** A user id (digits) or the start of an actor label (an email, "system: …"). */
  actor: optional(z.string().trim().max(300)),
  /** An exact action ("users.create"), or a prefix ending in "*" ("users.*"). */
  action: optional(
    z
      .string()
      .trim()
      .max(200)
      .regex(/^[\x20-\x7e]+$/, "must be printable ASCII, e.g. users.create or users.*"),
  ),
  targetTable: optional(
    z
      .string()
      .trim()
      .max(63)
      .regex(/^[a-z_][a-z0-9_]*$/, "must be a table name such as console_users"),
  ),
  targetId: optional(z.string().trim().max(200)),
  outcome: optional(z.enum(AUDIT_OUTCOMES)),
  /** occurred_at ≥ from */
  from: optional(isoTime),
  /** occurred_at < to */
  to: optional(isoTime),
};

const fromBeforeTo = (f: { from?: Date; to?: Date }) => !f.from || !f.to || f.from <= f.to;
const fromBeforeToIssue = { message: "from must not be after to", path: ["from"] };

export const auditExportSchema = z.object(auditFilterShape).strict().refine(fromBeforeTo, fromBeforeToIssue);

export const auditQuerySchema = z
  .object({
    ...auditFilterShape,
    limit: optional(
      z
        .string()
        .regex(/^\d{1,4}$/, `must be a whole number from 1 to ${MAX_AUDIT_PAGE}`)
        .transform(Number)
        .pipe(z.number().int().min(1, `must be from 1 to ${MAX_AUDIT_PAGE}`).max(MAX_AUDIT_PAGE, `must be at most ${MAX_AUDIT_PAGE}`)),
    ),
    /** Keyset cursor: the id of the last entry already seen (entries with smaller ids follow). */
    cursor: optional(
      z
        .string()
        .regex(/^\d{1,19}$/, "must be an entry id")
        .transform((v) => BigInt(v)),
    ),
  })
  .strict()
  .refine(fromBeforeTo, fromBeforeToIssue);

/** The filters as they appear in the console's URL and the API query string. */
export const AUDIT_FILTER_KEYS = ["actor", "action", "targetTable", "targetId", "outcome", "from", "to"] as const;
export type AuditFilterKey = (typeof AUDIT_FILTER_KEYS)[number];
export type AuditFilterValues = Partial<Record<AuditFilterKey, string>>;

export type AuditFilters = z.output<typeof auditExportSchema>;
export type AuditQuery = z.output<typeof auditQuerySchema>;

/** The filters as query-string values again (for links, audit details and the export). */
export function filtersToParams(f: AuditFilters): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of ["actor", "action", "targetTable", "targetId", "outcome"] as const) {
    if (f[key] !== undefined) out[key] = f[key]!;
  }
  if (f.from) out.from = f.from.toISOString();
  if (f.to) out.to = f.to.toISOString();
  return out;
}

function filterOf(f: AuditFilters, before?: bigint): AuditEntryFilter {
  // Digits: the user id (index audit_log_actor_id_occurred_at_idx); otherwise the label's start.
  const byId = f.actor !== undefined && /^\d{1,19}$/.test(f.actor);
  const prefix = f.action?.endsWith("*");
  return {
    ...(f.actor !== undefined ? (byId ? { actorId: f.actor } : { actorLabelPrefix: f.actor }) : {}),
    ...(f.action !== undefined ? (prefix ? { actionPrefix: f.action.slice(0, -1) } : { action: f.action }) : {}),
    targetTable: f.targetTable,
    targetId: f.targetId,
    outcome: f.outcome,
    from: f.from,
    to: f.to,
    before,
  };
}

/** One page, newest first; `nextCursor` is null on the last page. */
export async function listAudit(prisma: PrismaClient, q: AuditQuery): Promise<{ entries: AuditEntry[]; nextCursor: string | null }> {
  const limit = q.limit ?? DEFAULT_AUDIT_PAGE;
  const rows = await auditStore(txExecutor(prisma)).entries(filterOf(q, q.cursor), { take: limit + 1 });
  const entries = rows.slice(0, limit);
  return { entries, nextCursor: rows.length > limit ? entries[entries.length - 1].id.toString() : null };
}

/** How an entry leaves the server (bigints as strings, times as ISO strings). */
export interface AuditEntryJson {
  id: string;
  occurredAt: string;
  actorType: string;
  actorId: string | null;
  actorLabel: string | null;
  tokenId: string | null;
  action: string;
  targetTable: string | null;
  targetId: string | null;
  outcome: string;
  reason: string | null;
  before: unknown;
  after: unknown;
  detail: unknown;
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
  prevHash: string;
  hash: string;
}

export function auditEntryJson(e: AuditEntry): AuditEntryJson {
  return {
    id: e.id.toString(),
    occurredAt: e.occurredAt.toISOString(),
    actorType: e.actorType,
    actorId: e.actorId,
    actorLabel: e.actorLabel,
    tokenId: e.tokenId === null ? null : e.tokenId.toString(),
    action: e.action,
    targetTable: e.targetTable,
    targetId: e.targetId,
    outcome: e.outcome,
    reason: e.reason,
    before: e.before ?? null,
    after: e.after ?? null,
    detail: e.detail ?? null,
    requestId: e.requestId,
    ip: e.ip,
    userAgent: e.userAgent,
    prevHash: e.prevHash,
    hash: e.hash,
  };
}

// ---------------------------------------------------------------------------
// CSV

export const AUDIT_CSV_COLUMNS = [
  ["id", (e: AuditEntryJson) => e.id],
  ["occurred_at", (e) => e.occurredAt],
  ["actor_type", (e) => e.actorType],
  ["actor_id", (e) => e.actorId],
  ["actor_label", (e) => e.actorLabel],
  ["token_id", (e) => e.tokenId],
  ["action", (e) => e.action],
  ["target_table", (e) => e.targetTable],
  ["target_id", (e) => e.targetId],
  ["outcome", (e) => e.outcome],
  ["reason", (e) => e.reason],
  ["before", (e) => json(e.before)],
  ["after", (e) => json(e.after)],
  ["detail", (e) => json(e.detail)],
  ["request_id", (e) => e.requestId],
  ["ip", (e) => e.ip],
  ["user_agent", (e) => e.userAgent],
  ["prev_hash", (e) => e.prevHash],
  ["hash", (e) => e.hash],
] as const satisfies readonly (readonly [string, (e: AuditEntryJson) => string | null])[];

function json(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}

export function csvHeader(): string {
  return AUDIT_CSV_COLUMNS.map(([name]) => name).join(",") + "\r\n";
}

/** Rows only (CRLF-terminated), for streaming after `csvHeader()`. */
export function csvRows(entries: readonly (AuditEntry | AuditEntryJson)[]): string {
  let out = "";
  for (const raw of entries) {
    const e = typeof raw.id === "bigint" ? auditEntryJson(raw as AuditEntry) : (raw as AuditEntryJson);
    out += AUDIT_CSV_COLUMNS.map(([, get]) => csvCell(get(e))).join(",") + "\r\n";
  }
  return out;
}

/** A whole CSV document: header line, then one line per entry. */
export function toCsv(entries: readonly (AuditEntry | AuditEntryJson)[]): string {
  return csvHeader() + csvRows(entries);
}

/** True when more than `maxRows` entries match (the export stops at maxRows). */
export async function exportExceeds(prisma: PrismaClient, filters: AuditFilters, beforeId: bigint | undefined, maxRows = MAX_AUDIT_EXPORT_ROWS) {
  const beyond = await auditStore(txExecutor(prisma)).entries(filterOf(filters, beforeId), { skip: maxRows, take: 1 });
  return beyond.length > 0;
}

/**
 * The export, in pages, newest first: CSV text chunks of every entry matching
 * the filters with an id below `beforeId` (the export's own audit entry, so the
 * file is a stable snapshot), at most `maxRows` rows.
 */
export async function* auditCsvChunks(
  prisma: PrismaClient,
  filters: AuditFilters,
  opts: { beforeId?: bigint; maxRows?: number; pageSize?: number } = {},
): AsyncGenerator<string> {
  const maxRows = opts.maxRows ?? MAX_AUDIT_EXPORT_ROWS;
  const pageSize = Math.min(opts.pageSize ?? 500, maxRows);
  yield csvHeader();
  let cursor = opts.beforeId;
  let sent = 0;
  while (sent < maxRows) {
    const take = Math.min(pageSize, maxRows - sent);
    const page = await auditStore(txExecutor(prisma)).entries(filterOf(filters, cursor), { take });
    if (page.length === 0) return;
    yield csvRows(page);
    sent += page.length;
    cursor = page[page.length - 1].id;
    if (page.length < take) return;
  }
}

/** GET /api/v1/audit/verify: optionally a published anchor to check (all three fields, or none). */
export const verifyQuerySchema = z
  .object({
    anchorId: optional(
      z
        .string()
        .regex(/^\d{1,19}$/, "must be an entry id")
        .transform((v) => BigInt(v)),
    ),
    anchorHash: optional(
      z
        .string()
        .trim()
        .regex(/^[0-9a-f]{64}$/, "must be the anchor's hash (64 lowercase hex digits)"),
    ),
    anchorCount: optional(
      z
        .string()
        .regex(/^\d{1,15}$/, "must be the anchor's entry count")
        .transform(Number),
    ),
  })
  .strict()
  .refine(
    (q) => [q.anchorId, q.anchorHash, q.anchorCount].every((v) => v === undefined) || [q.anchorId, q.anchorHash, q.anchorCount].every((v) => v !== undefined),
    {
      message: "give anchorId, anchorHash and anchorCount together (from a published anchor)",
      path: ["anchorId"],
    },
  );
