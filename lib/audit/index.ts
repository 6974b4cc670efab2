import { createHash } from "node:crypto";
import type { Prisma, PrismaClient } from "../generated/prisma/client";
import { canonicalJson } from "../idempotency/hash";
import type { Principal } from "../auth/permissions";

/**
 * The one module that writes audit entries. The table is append-only in the
 * database (a trigger refuses UPDATE, DELETE and TRUNCATE) and hash-chained:
 * each entry stores the previous entry's hash and its own
 * hash = SHA-256(prev_hash + "\n" + canonical JSON of the entry), so an entry
 * altered or removed behind the trigger's back is found by verifyAuditChain().
 */

export const GENESIS_HASH = "0".repeat(64);
// Serialises appends so the chain stays a single line (transaction-scoped lock).
const AUDIT_CHAIN_LOCK_ID = 72707370;

export type AuditOutcome = "done" | "refused" | "failed";

export type AuditActor =
  | { type: "user"; userId: bigint | string; label: string }
  | { type: "token"; userId: bigint | string; label: string; tokenId: bigint | string }
  | { type: "system"; label: string }
  | { type: "anonymous"; label?: string };

export interface RequestMeta {
  requestId?: string | null;
  ip?: string | null;
  userAgent?: string | null;
}

export interface AuditInput {
  actor: AuditActor;
  /** Dotted verb, e.g. "users.create", "records.reveal", "auth.sign_in". */
  action: string;
  target?: { table: string; id: string | bigint | number } | null;
  before?: unknown;
  after?: unknown;
  /** The reason the actor gave; required for every change (checked by the API wrapper). */
  reason?: string | null;
  request?: RequestMeta;
  outcome: AuditOutcome;
  detail?: unknown;
}

export function actorOf(principal: Principal): AuditActor {
  return principal.kind === "token"
    ? { type: "token", userId: principal.userId, label: `${principal.email} (token ${principal.tokenName ?? principal.tokenId})`, tokenId: principal.tokenId! }
    : { type: "user", userId: principal.userId, label: principal.email };
}

/**
 * Text PostgreSQL stores exactly as given: NUL (refused by text and jsonb) and
 * unpaired UTF-16 surrogates (refused by jsonb, silently replaced in text — which
 * would make the stored entry differ from the hashed one) become U+FFFD.
 */
export function storableText(s: string): string {
  return s.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
}

/** Cut to at most `max` UTF-16 units without splitting a surrogate pair, then made storable. */
function text(s: string | null | undefined, max: number): string | null {
  if (s === null || s === undefined) return null;
  let cut = s.slice(0, max);
  if (cut.length === max && /[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return storableText(cut);
}

function storableJson(v: unknown): unknown {
  if (typeof v === "string") return storableText(v);
  if (Array.isArray(v)) return v.map(storableJson);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [storableText(k), storableJson(x)]));
  }
  return v;
}

/** JSON-safe copy: bigint → string, Date → ISO string, undefined dropped, text storable. What is stored is what is hashed. */
export function auditJson(value: unknown): Prisma.InputJsonValue | null {
  if (value === undefined || value === null) return null;
  return storableJson(
    JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v))),
  ) as Prisma.InputJsonValue;
}

interface HashedFields {
  occurredAt: Date;
  actorType: string;
  actorId: string | null;
  actorLabel: string | null;
  tokenId: bigint | null;
  action: string;
  targetTable: string | null;
  targetId: string | null;
  before: unknown;
  after: unknown;
  reason: string | null;
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
  outcome: string;
  detail: unknown;
}

export function entryHash(prevHash: string, e: HashedFields): string {
  const canonical = canonicalJson(
    {
      occurredAt: e.occurredAt.toISOString(),
      actorType: e.actorType,
      actorId: e.actorId,
      actorLabel: e.actorLabel,
      tokenId: e.tokenId === null ? null : e.tokenId.toString(),
      action: e.action,
      targetTable: e.targetTable,
      targetId: e.targetId,
      before: e.before ?? null,
      after: e.after ?? null,
      reason: e.reason,
      requestId: e.requestId,
      ip: e.ip,
      userAgent: e.userAgent,
      outcome: e.outcome,
      detail: e.detail ?? null,
    },
    { integersOnly: false },
  );
  return createHash("sha256").update(`${prevHash}\n${canonical}`, "utf8").digest("hex");
}

type Tx = Prisma.TransactionClient;

/**
 * Appends one entry inside the caller's transaction, so a change and its audit
 * entry commit together or not at all. Use `audit()` when there is no change.
 */
export async function appendAudit(tx: Tx, input: AuditInput) {
  // $executeRaw: the lock function returns void, which $queryRaw cannot deserialize.
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK_ID}::bigint)`;
  const last = await tx.auditEntry.findFirst({ orderBy: { id: "desc" }, select: { hash: true } });
  const prevHash = last?.hash ?? GENESIS_HASH;
  const a = input.actor;
  const fields: HashedFields = {
    occurredAt: new Date(),
    actorType: a.type,
    actorId: a.type === "user" || a.type === "token" ? String(a.userId) : null,
    actorLabel: text(a.label, 300),
    tokenId: a.type === "token" ? BigInt(a.tokenId) : null,
    action: storableText(input.action),
    targetTable: input.target ? storableText(input.target.table) : null,
    targetId: input.target ? storableText(String(input.target.id)) : null,
    before: auditJson(input.before),
    after: auditJson(input.after),
    reason: text(input.reason, 2000),
    requestId: text(input.request?.requestId, 100),
    ip: text(input.request?.ip, 100),
    userAgent: text(input.request?.userAgent, 500),
    outcome: input.outcome,
    detail: auditJson(input.detail),
  };
  return tx.auditEntry.create({
    data: {
      ...fields,
      before: (fields.before ?? undefined) as Prisma.InputJsonValue | undefined,
      after: (fields.after ?? undefined) as Prisma.InputJsonValue | undefined,
      detail: (fields.detail ?? undefined) as Prisma.InputJsonValue | undefined,
      prevHash,
      hash: entryHash(prevHash, fields),
    },
  });
}

/** Appends one entry in a transaction of its own (refusals, sign-ins, reveals). */
export async function audit(prisma: PrismaClient, input: AuditInput) {
  return prisma.$transaction((tx) => appendAudit(tx, input));
}

export interface ChainVerification {
  intact: boolean;
  checked: number;
  /** The first entry whose stored hash or link does not match. */
  brokenAt?: { id: bigint; problem: "hash_mismatch" | "link_mismatch"; expected: string; found: string };
  lastHash: string;
}

/** Walks the whole chain in id order, in pages, recomputing every hash. */
export async function verifyAuditChain(prisma: PrismaClient, opts: { pageSize?: number } = {}): Promise<ChainVerification> {
  const pageSize = opts.pageSize ?? 2000;
  let prev = GENESIS_HASH;
  let checked = 0;
  let cursor: bigint | undefined;
  for (;;) {
    const page = await prisma.auditEntry.findMany({
      where: cursor === undefined ? {} : { id: { gt: cursor } },
      orderBy: { id: "asc" },
      take: pageSize,
    });
    for (const e of page) {
      if (e.prevHash !== prev) {
        return { intact: false, checked, brokenAt: { id: e.id, problem: "link_mismatch", expected: prev, found: e.prevHash }, lastHash: prev };
      }
      const expected = entryHash(e.prevHash, e);
      if (expected !== e.hash) {
        return { intact: false, checked, brokenAt: { id: e.id, problem: "hash_mismatch", expected, found: e.hash }, lastHash: prev };
      }
      prev = e.hash;
      checked++;
    }
    if (page.length < pageSize) return { intact: true, checked, lastHash: prev };
    cursor = page[page.length - 1].id;
  }
}
