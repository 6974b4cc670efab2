import { Prisma, type IdempotencyRecord, type PrismaClient } from "../generated/prisma/client";
import { MissingKeyError, PayloadMismatchError } from "./errors";
import { idSchema } from "../kernel/input";
import { payloadHash } from "./hash";
import { headerPairs } from "./stored-response";
import { beginInputSchema, completeInputSchema, failInputSchema, pendingInputSchema, type BeginInput, type CompleteInput, type FailInput, type PendingInput } from "./schemas";
import { NotFoundError, StateConflictError } from "../kernel/errors";
import { parseInput } from "../kernel/input";

export type { IdempotencyRecord };
export type HeaderPairs = [string, string][];

export interface StoredResponse {
  code: number;
  headers: HeaderPairs;
  body: string | null;
}

/** What a request under a key turned out to be. */
export type BeginResult =
  | { outcome: "owner"; record: IdempotencyRecord }
  | { outcome: "replay"; record: IdempotencyRecord; response: StoredResponse }
  | { outcome: "conflict"; record: IdempotencyRecord; error: PayloadMismatchError }
  | { outcome: "in_progress"; record: IdempotencyRecord };

export interface StoreOptions {
  /** Injectable clock: demo traffic writes history "in the past" through the same code. */
  clock?: () => Date;
}

// Column list aliased to the Prisma model's field names, so raw CTE results are IdempotencyRecord.
const RECORD_COLUMNS = Prisma.raw(
  `id, scope, operation, idempotency_key AS "idempotencyKey", payload_hash AS "payloadHash", status,
   response_code AS "responseCode", response_headers AS "responseHeaders", response_body AS "responseBody",
   resource_type AS "resourceType", resource_id AS "resourceId", correlation_id AS "correlationId", provider,
   provider_request_id AS "providerRequestId", provider_reference AS "providerReference",
   amount_minor AS "amountMinor", currency, last_error AS "lastError", created_at AS "createdAt",
   updated_at AS "updatedAt", expires_at AS "expiresAt", version, legal_hold AS "legalHold"`,
);

/**
 * The writers' protocol (DESIGN.md): reserve with an INSERT that the unique
 * constraint arbitrates, then complete, fail or move to pending. Every outcome,
 * including replays, conflicts and in-progress rejections, appends one event row
 * in the same statement as the state change it describes.
 */
export class IdempotencyStore {
  private readonly clock: () => Date;

  constructor(
    private readonly prisma: PrismaClient,
    opts: StoreOptions = {},
  ) {
    this.clock = opts.clock ?? (() => new Date());
  }

  async begin(rawInput: BeginInput): Promise<BeginResult> {
    const key = (rawInput as { key?: unknown } | null)?.key;
    if (key === undefined || key === null || key === "") throw new MissingKeyError();
    const input = parseInput(beginInputSchema, rawInput, "request");
    const hash = payloadHash(input.payload);
    const now = this.clock();
    const expiresAt = new Date(now.getTime() + input.ttlSeconds * 1000);
    const amount = input.amountMinor === undefined ? null : BigInt(input.amountMinor);

    // A row deleted between our INSERT and SELECT (a purge) is rare; try again then.
    for (let attempt = 0; attempt < 3; attempt++) {
      const inserted = await this.prisma.$queryRaw<IdempotencyRecord[]>`
        WITH ins AS (
          INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status,
            resource_type, resource_id, correlation_id, provider, provider_request_id, amount_minor, currency,
            created_at, updated_at, expires_at)
          VALUES (${input.scope}, ${input.operation}, ${input.key}, ${hash}, 'processing',
            ${input.resourceType ?? null}, ${input.resourceId ?? null}, ${input.correlationId ?? null},
            ${input.provider ?? null}, ${input.providerRequestId ?? null}, ${amount}::bigint, ${input.currency ?? null},
            ${now}::timestamptz, ${now}::timestamptz, ${expiresAt}::timestamptz)
          ON CONFLICT (scope, operation, idempotency_key) DO NOTHING
          RETURNING *
        ), ev AS (
          INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at)
          SELECT id, scope, operation, idempotency_key, 'reserved', payload_hash, ${now}::timestamptz FROM ins
        )
        SELECT ${RECORD_COLUMNS} FROM ins`;
      if (inserted[0]) return { outcome: "owner", record: inserted[0] };

      // ON CONFLICT waited for the owner's insert to commit, so the row is visible now.
      // One statement reads it and records what this request became, so the event
      // always describes the very row version that was answered.
      const [existing] = await this.prisma.$queryRaw<IdempotencyRecord[]>`
        WITH rec AS (
          SELECT * FROM idempotency_records
          WHERE scope = ${input.scope} AND operation = ${input.operation} AND idempotency_key = ${input.key}
        ), ev AS (
          INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
          SELECT id, scope, operation, idempotency_key,
            CASE WHEN payload_hash <> ${hash} THEN 'conflict'
                 WHEN status IN ('completed', 'failed') THEN 'replayed' ELSE 'in_progress' END,
            ${hash},
            CASE WHEN payload_hash = ${hash} AND status IN ('completed', 'failed') THEN response_code END,
            ${now}::timestamptz,
            CASE WHEN payload_hash <> ${hash}
                   THEN jsonb_build_object('expectedPayloadHash', payload_hash, 'receivedPayloadHash', ${hash}::text)
                 WHEN status NOT IN ('completed', 'failed') THEN jsonb_build_object('status', status) END
          FROM rec
        )
        SELECT ${RECORD_COLUMNS} FROM rec`;
      if (!existing) continue;
      if (existing.payloadHash !== hash) {
        return { outcome: "conflict", record: existing, error: new PayloadMismatchError(existing.payloadHash, hash) };
      }
      if (existing.status === "completed" || existing.status === "failed") {
        return { outcome: "replay", record: existing, response: storedResponse(existing) };
      }
      return { outcome: "in_progress", record: existing };
    }
    throw new StateConflictError("the record under this key was deleted while the request was being reserved; retry");
  }

  /** processing → completed, storing the response to replay (and outbox messages, atomically). */
  async complete(recordId: bigint | number | string, rawInput: CompleteInput): Promise<IdempotencyRecord> {
    const id = parseInput(idSchema, recordId, "record id");
    const input = parseInput(completeInputSchema, rawInput, "completion");
    const now = this.clock();
    const outbox = JSON.stringify(input.outbox.map((m) => ({ topic: m.topic, payload: m.payload ?? null })));
    const rows = await this.prisma.$queryRaw<IdempotencyRecord[]>`
      WITH upd AS (
        UPDATE idempotency_records SET status = 'completed', response_code = ${input.code},
          response_headers = ${JSON.stringify(input.headers)}::jsonb, response_body = ${input.body},
          resource_type = COALESCE(${input.resourceType ?? null}, resource_type),
          resource_id = COALESCE(${input.resourceId ?? null}, resource_id),
          provider_reference = COALESCE(${input.providerReference ?? null}, provider_reference),
          last_error = NULL, updated_at = ${now}::timestamptz, version = version + 1
        WHERE id = ${id} AND status = 'processing'
        RETURNING *
      ), ev AS (
        INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at)
        SELECT id, scope, operation, idempotency_key, 'completed', payload_hash, response_code, ${now}::timestamptz FROM upd
      ), ob AS (
        INSERT INTO outbox_messages (record_id, topic, payload, created_at, next_attempt_at)
        SELECT upd.id, m->>'topic', m->'payload', ${now}::timestamptz, ${now}::timestamptz
        FROM upd CROSS JOIN jsonb_array_elements(${outbox}::jsonb) AS m
      )
      SELECT ${RECORD_COLUMNS} FROM upd`;
    return rows[0] ?? this.refuse(id, "complete", "processing");
  }

  /** processing → failed: the effect failed before anything happened; the error response is replayed. */
  async fail(recordId: bigint | number | string, rawInput: FailInput): Promise<IdempotencyRecord> {
    const id = parseInput(idSchema, recordId, "record id");
    const input = parseInput(failInputSchema, rawInput, "failure");
    const now = this.clock();
    const rows = await this.prisma.$queryRaw<IdempotencyRecord[]>`
      WITH upd AS (
        UPDATE idempotency_records SET status = 'failed', response_code = ${input.code},
          response_headers = ${JSON.stringify(input.headers)}::jsonb, response_body = ${input.body},
          last_error = ${input.error}, updated_at = ${now}::timestamptz, version = version + 1
        WHERE id = ${id} AND status = 'processing'
        RETURNING *
      ), ev AS (
        INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
        SELECT id, scope, operation, idempotency_key, 'failed', payload_hash, response_code, ${now}::timestamptz,
               jsonb_build_object('error', last_error) FROM upd
      )
      SELECT ${RECORD_COLUMNS} FROM upd`;
    return rows[0] ?? this.refuse(id, "fail", "processing");
  }

  /**
   * processing → pending after an external call timed out: the outcome is
   * uncertain, so the record keeps the provider request id and a reconciliation
   * item is opened. Never failed, never re-sent blindly.
   */
  async markPending(
    recordId: bigint | number | string,
    rawInput: PendingInput,
  ): Promise<{ record: IdempotencyRecord; reconciliationItemId: bigint }> {
    const id = parseInput(idSchema, recordId, "record id");
    const input = parseInput(pendingInputSchema, rawInput, "pending transition");
    const now = this.clock();
    const firstCheck = new Date(now.getTime() + input.firstCheckInSeconds * 1000);
    const rows = await this.prisma.$queryRaw<(IdempotencyRecord & { reconciliationItemId: bigint | null })[]>`
      WITH upd AS (
        UPDATE idempotency_records SET status = 'pending', provider = COALESCE(${input.provider ?? null}, provider),
          provider_request_id = ${input.providerRequestId}, last_error = ${input.error},
          updated_at = ${now}::timestamptz, version = version + 1
        WHERE id = ${id} AND status = 'processing' AND COALESCE(${input.provider ?? null}, provider) IS NOT NULL
        RETURNING *
      ), item AS (
        INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, last_error, created_at, updated_at)
        SELECT id, provider, provider_request_id, 'open', ${firstCheck}::timestamptz, last_error, ${now}::timestamptz, ${now}::timestamptz FROM upd
        RETURNING id
      ), ev AS (
        INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at, detail)
        SELECT id, scope, operation, idempotency_key, 'pending', payload_hash, ${now}::timestamptz,
               jsonb_build_object('providerRequestId', provider_request_id, 'error', last_error) FROM upd
      )
      SELECT ${RECORD_COLUMNS}, (SELECT id FROM item) AS "reconciliationItemId" FROM upd`;
    const row = rows[0];
    if (!row) {
      const current = await this.find(id);
      if (current && current.status === "processing" && !current.provider) {
        throw new StateConflictError("the record names no provider; pass one to open a reconciliation item");
      }
      return this.refuse(id, "move to pending", "processing");
    }
    const { reconciliationItemId, ...record } = row;
    return { record, reconciliationItemId: reconciliationItemId! };
  }

  async find(id: bigint): Promise<IdempotencyRecord | null> {
    return this.prisma.idempotencyRecord.findUnique({ where: { id } });
  }

  private async refuse(id: bigint, action: string, expected: string): Promise<never> {
    const current = await this.find(id);
    if (!current) throw new NotFoundError(`idempotency record ${id} does not exist`);
    throw new StateConflictError(`cannot ${action}: the record is ${current.status}, not ${expected}`, {
      id: current.id.toString(),
      status: current.status,
      version: current.version,
    });
  }
}

/** What a replay answers: the stored response, headers read in whatever shape the writer stored them. */
export function storedResponse(record: IdempotencyRecord): StoredResponse {
  return {
    code: record.responseCode ?? 200,
    headers: headerPairs(record.responseHeaders),
    body: record.responseBody,
  };
}
