import type { z } from "zod";
import { csvHeaderLine, csvRowLines, type CsvColumn } from "../kernel/csv";
import type { Access } from "../auth/permissions";
import type { DatabaseHandle } from "../db/client";
import { findDuplicates, duplicatesQuerySchema, MAX_CLUSTERS, type DuplicateCluster } from "../records/duplicates";
import { queueQuerySchema, stuckAndPending, type QueueItem } from "../records/queue";
import type { RecordSummary } from "../records/row";
import { searchQuerySchema, searchRecords, type SearchHit } from "../records/search";
import { conflictsQuerySchema, conflictStats, type ConflictEvent } from "../stats/conflicts";
import { NotFoundError } from "../kernel/errors";
import { parseInput } from "../kernel/input";
import { decodeCursor, MAX_PAGE, type KeysetPosition } from "../db/paging";

/**
 * CSV export of the console's lists: records (search), queue, duplicates, conflicts.
 * Each export takes exactly the query parameters of its list API (GET /api/v1/<list>),
 * parsed by the same zod schema, and reads its rows through the same lib function,
 * following the keyset cursor page by page — so the file holds the rows the list shows,
 * in the same order. `limit` and `cursor` are ignored: an export starts at the first row
 * and runs to the end, or to MAX_EXPORT_ROWS (then `truncated`).
 *
 * The rows are read completely (bounded by the cap) BEFORE the caller returns any of
 * them, so the response can say whether it was truncated (a header goes before the
 * body) and the audit entry can carry the exact row count before any data leaves.
 * Stored responses are never exported: the record columns are RecordSummary, which
 * does not hold response headers or bodies (lib/records/row.ts).
 */

export const MAX_EXPORT_ROWS = 100_000;
/** Ignored by exports (positions and page sizes of the interactive list). */
const IGNORED_PARAMS = ["limit", "cursor"];

export const EXPORT_LISTS = ["records", "queue", "duplicates", "conflicts"] as const;
export type ExportListName = (typeof EXPORT_LISTS)[number];

export function isExportList(name: string): name is ExportListName {
  return (EXPORT_LISTS as readonly string[]).includes(name);
}

interface Page<Row> {
  rows: Row[];
  /** The next page's position (keyset lists), null otherwise. */
  next: KeysetPosition | null;
  /** More rows follow this page. */
  more: boolean;
}

interface ExportList<Q, Row> {
  /** The list API's own permission; an export needs it as well as records.export. */
  access: Access;
  schema: z.ZodType<Q>;
  columns: readonly CsvColumn<Row>[];
  /** Not keyset-paginated: one call returns every row (page() gets the rows still allowed as limit). */
  unpaged?: boolean;
  /** One page of at most `limit` rows starting at `cursor` (null: the first). */
  page(db: DatabaseHandle, query: Q, limit: number, cursor: KeysetPosition | null, now: Date): Promise<Page<Row>>;
}

const keysetPage = <Row>(rows: Row[], nextCursor: string | null): Page<Row> => {
  const next = nextCursor === null ? null : decodeCursor(nextCursor);
  return { rows, next, more: next !== null };
};

// --- Columns ------------------------------------------------------------------------

const recordColumns: CsvColumn<RecordSummary>[] = [
  { name: "id", value: (r) => r.id },
  { name: "created_at", value: (r) => r.createdAt },
  { name: "updated_at", value: (r) => r.updatedAt },
  { name: "expires_at", value: (r) => r.expiresAt },
  { name: "status", value: (r) => r.status },
  { name: "scope", value: (r) => r.scope },
  { name: "operation", value: (r) => r.operation },
  { name: "idempotency_key", value: (r) => r.idempotencyKey },
  { name: "payload_hash", value: (r) => r.payloadHash },
  { name: "response_code", value: (r) => r.responseCode },
  { name: "amount_minor", value: (r) => r.amountMinor },
  { name: "currency", value: (r) => r.currency },
  { name: "resource_type", value: (r) => r.resourceType },
  { name: "resource_id", value: (r) => r.resourceId },
  { name: "correlation_id", value: (r) => r.correlationId },
  { name: "provider", value: (r) => r.provider },
  { name: "provider_request_id", value: (r) => r.providerRequestId },
  { name: "provider_reference", value: (r) => r.providerReference },
  { name: "last_error", value: (r) => r.lastError },
  { name: "version", value: (r) => r.version },
  { name: "legal_hold", value: (r) => r.legalHold },
];

const searchColumns: CsvColumn<SearchHit>[] = [...recordColumns, { name: "matched", value: (r) => r.matched }];

const queueColumns: CsvColumn<QueueItem>[] = [
  { name: "kind", value: (r) => r.kind },
  { name: "age_seconds", value: (r) => r.ageSeconds },
  { name: "threshold_seconds", value: (r) => r.thresholdSeconds },
  ...recordColumns,
  { name: "reconciliation_id", value: (r) => r.reconciliation?.id },
  { name: "reconciliation_state", value: (r) => r.reconciliation?.state },
  { name: "reconciliation_attempts", value: (r) => r.reconciliation?.attempts },
  { name: "reconciliation_last_checked_at", value: (r) => r.reconciliation?.lastCheckedAt },
  { name: "reconciliation_next_check_at", value: (r) => r.reconciliation?.nextCheckAt },
  { name: "reconciliation_last_error", value: (r) => r.reconciliation?.lastError },
];

/** One row per record of a cluster; the cluster's own facts repeat on each of its rows. */
export interface DuplicateRow {
  cluster: number;
  c: DuplicateCluster;
  record: RecordSummary;
}

const duplicateColumns: CsvColumn<DuplicateRow>[] = [
  { name: "cluster", value: (r) => r.cluster },
  { name: "cluster_basis", value: (r) => r.c.basis },
  { name: "cluster_size", value: (r) => r.c.records.length },
  { name: "cluster_completed", value: (r) => r.c.completed },
  { name: "cluster_span_seconds", value: (r) => r.c.spanSeconds },
  ...recordColumns.map((col) => ({ name: col.name, value: (r: DuplicateRow) => col.value(r.record) })),
];

const conflictColumns: CsvColumn<ConflictEvent>[] = [
  { name: "event_id", value: (e) => e.id },
  { name: "occurred_at", value: (e) => e.occurredAt },
  { name: "operation", value: (e) => e.operation },
  { name: "scope", value: (e) => e.scope },
  { name: "idempotency_key", value: (e) => e.idempotencyKey },
  { name: "record_id", value: (e) => e.recordId },
  { name: "expected_payload_hash", value: (e) => e.expectedPayloadHash },
  { name: "received_payload_hash", value: (e) => e.receivedPayloadHash },
];

// --- The lists ------------------------------------------------------------------------

type SearchQ = z.output<typeof searchQuerySchema>;
type QueueQ = z.output<typeof queueQuerySchema>;
type DuplicatesQ = z.output<typeof duplicatesQuerySchema>;
type ConflictsQ = z.output<typeof conflictsQuerySchema>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each list has its own query and row types
const LISTS: { [K in ExportListName]: ExportList<any, any> } = {
  records: {
    access: "records.read",
    schema: searchQuerySchema,
    columns: searchColumns,
    async page(db, q: SearchQ, limit, cursor) {
      const r = await searchRecords(db.sql, { ...q, limit, cursor: cursor ?? undefined });
      return keysetPage(r.items, r.nextCursor);
    },
  } satisfies ExportList<SearchQ, SearchHit>,
  queue: {
    access: "records.read",
    schema: queueQuerySchema,
    columns: queueColumns,
    async page(db, q: QueueQ, limit, cursor, now) {
      // One `now` for the whole export: which processing records count as stuck stays fixed across pages.
      const r = await stuckAndPending(db.sql, { ...q, limit, cursor: cursor ?? undefined }, { now });
      return keysetPage(r.items, r.nextCursor);
    },
  } satisfies ExportList<QueueQ, QueueItem>,
  duplicates: {
    access: "records.read",
    schema: duplicatesQuerySchema,
    columns: duplicateColumns,
    // Clusters are not keyset-paginated: one call with the largest cluster limit. The
    // finder's own truncation (more clusters or pairs than it reads) truncates the export.
    unpaged: true,
    async page(db, q: DuplicatesQ, limit) {
      const r = await findDuplicates(db.sql, { ...q, limit: MAX_CLUSTERS });
      const rows = r.clusters.flatMap((c, i) => c.records.map((record) => ({ cluster: i + 1, c, record })));
      return { rows: rows.slice(0, limit), next: null, more: r.truncated || rows.length > limit };
    },
  } satisfies ExportList<DuplicatesQ, DuplicateRow>,
  conflicts: {
    access: "stats.read",
    schema: conflictsQuerySchema,
    columns: conflictColumns,
    async page(db, q: ConflictsQ, limit, cursor) {
      const r = await db.withSession((s) => conflictStats(s, { ...q, limit, cursor: cursor ?? undefined }));
      return keysetPage(r.events.items, r.events.nextCursor);
    },
  } satisfies ExportList<ConflictsQ, ConflictEvent>,
};

/** The list's definition (404 for a name that is not one). */
export function exportList(name: string): ExportList<unknown, unknown> & { name: ExportListName } {
  if (!isExportList(name)) throw new NotFoundError(`There is no list "${name}" to export; use one of ${EXPORT_LISTS.join(", ")}.`);
  return { ...LISTS[name], name };
}

/** The list's filters from the raw query parameters (limit and cursor dropped), as given — for links and the audit entry. */
export function exportFilters(raw: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) if (!IGNORED_PARAMS.includes(k) && v.trim() !== "") out[k] = v;
  return out;
}

export interface CollectedExport {
  list: ExportListName;
  /** CSV text: the header, then one chunk per page read. */
  chunks: string[];
  rows: number;
  /** More rows matched than were exported (maxRows reached, or the duplicate finder's own limits). */
  truncated: boolean;
  filters: Record<string, string>;
  maxRows: number;
}

/**
 * Reads the whole list (up to maxRows) as CSV chunks. Throws 400 (problem) for filters
 * the list API would refuse, 404 for an unknown list.
 */
export async function collectExport(
  db: DatabaseHandle,
  listName: string,
  raw: Record<string, string>,
  opts: { maxRows?: number; pageSize?: number; now?: Date } = {},
): Promise<CollectedExport> {
  const list = exportList(listName);
  const filters = exportFilters(raw);
  const query = parseInput(list.schema, filters, "query");
  const maxRows = opts.maxRows ?? MAX_EXPORT_ROWS;
  const pageSize = Math.min(opts.pageSize ?? MAX_PAGE, MAX_PAGE);
  const now = opts.now ?? new Date();
  const chunks = [csvHeaderLine(list.columns)];
  let rows = 0;
  let cursor: KeysetPosition | null = null;
  let truncated = false;
  for (;;) {
    const limit = list.unpaged ? maxRows - rows : Math.min(pageSize, maxRows - rows);
    const page = await list.page(db, query, limit, cursor, now);
    if (page.rows.length) chunks.push(csvRowLines(list.columns, page.rows));
    rows += page.rows.length;
    if (!page.more) break;
    if (rows >= maxRows || page.next === null) {
      truncated = true;
      break;
    }
    if (page.rows.length === 0) break; // defensive: a cursor without rows would loop forever
    cursor = page.next;
  }
  return { list: list.name, chunks, rows, truncated, filters, maxRows };
}

/** The column names of a list's CSV (documentation and tests). */
export function exportColumns(listName: ExportListName): string[] {
  return LISTS[listName].columns.map((c: CsvColumn<unknown>) => c.name);
}
