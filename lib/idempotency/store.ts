import type { IdempotencyRecord, PrismaClient } from "../generated/prisma/client";
import { MissingKeyError, PayloadMismatchError } from "./errors";
import { idSchema } from "../kernel/input";
import { payloadHash } from "./hash";
import { protocolStatements, type ProtocolDatabase, type ProtocolStatements } from "./statements";
import { headerPairs } from "./stored-response";
import {
  beginInputSchema,
  completeInputSchema,
  failInputSchema,
  pendingInputSchema,
  type BeginInput,
  type CompleteInput,
  type FailInput,
  type PendingInput,
} from "./schemas";
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

/**
 * The writers' protocol (DESIGN.md): reserve with an INSERT that the unique
 * constraint arbitrates, then complete, fail or move to pending. Every outcome,
 * including replays, conflicts and in-progress rejections, appends one event row
 * in the same statement as the state change it describes.
 */
export class IdempotencyStore {
  private readonly clock: () => Date;
  private readonly statements: ProtocolStatements;

  private readonly prisma: PrismaClient;

  /** `db`: the database handle (`db`, statements straight to the driver) or its Prisma client (`db.prisma`). */
  constructor(db: ProtocolDatabase, opts: StoreOptions = {}) {
    this.prisma = "withSession" in db ? db.prisma : db;
    this.clock = opts.clock ?? (() => new Date());
    this.statements = protocolStatements(db);
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
      const inserted = await this.statements.reserve(
        {
          scope: input.scope,
          operation: input.operation,
          key: input.key,
          payloadHash: hash,
          resourceType: input.resourceType ?? null,
          resourceId: input.resourceId ?? null,
          correlationId: input.correlationId ?? null,
          provider: input.provider ?? null,
          providerRequestId: input.providerRequestId ?? null,
          amountMinor: amount,
          currency: input.currency ?? null,
          expiresAt,
        },
        now,
      );
      if (inserted) return { outcome: "owner", record: inserted };

      // ON CONFLICT waited for the owner's insert to commit, so the row is visible now.
      // One statement reads it and records what this request became, so the event
      // always describes the very row version that was answered.
      const existing = await this.statements.answerExisting({ scope: input.scope, operation: input.operation, key: input.key }, hash, now);
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
    const record = await this.statements.complete(
      id,
      {
        code: input.code,
        headers: input.headers,
        body: input.body,
        resourceType: input.resourceType ?? null,
        resourceId: input.resourceId ?? null,
        providerReference: input.providerReference ?? null,
        outbox: input.outbox.map((m) => ({ topic: m.topic, payload: m.payload ?? null })),
      },
      now,
    );
    return record ?? this.refuse(id, "complete", "processing");
  }

  /** processing → failed: the effect failed before anything happened; the error response is replayed. */
  async fail(recordId: bigint | number | string, rawInput: FailInput): Promise<IdempotencyRecord> {
    const id = parseInput(idSchema, recordId, "record id");
    const input = parseInput(failInputSchema, rawInput, "failure");
    const now = this.clock();
    const record = await this.statements.fail(id, { code: input.code, headers: input.headers, body: input.body, error: input.error }, now);
    return record ?? this.refuse(id, "fail", "processing");
  }

  /**
   * processing → pending after an external call timed out: the outcome is
   * uncertain, so the record keeps the provider request id and a reconciliation
   * item is opened. Never failed, never re-sent blindly.
   */
  async markPending(recordId: bigint | number | string, rawInput: PendingInput): Promise<{ record: IdempotencyRecord; reconciliationItemId: bigint }> {
    const id = parseInput(idSchema, recordId, "record id");
    const input = parseInput(pendingInputSchema, rawInput, "pending transition");
    const now = this.clock();
    const firstCheck = new Date(now.getTime() + input.firstCheckInSeconds * 1000);
    const row = await this.statements.markPending(
      id,
      { provider: input.provider ?? null, providerRequestId: input.providerRequestId, error: input.error, firstCheckAt: firstCheck },
      now,
    );
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
