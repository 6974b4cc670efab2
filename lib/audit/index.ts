import { createHash, createHmac } from "node:crypto";
import type { Prisma, PrismaClient } from "../generated/prisma/client";
import { canonicalJson } from "../idempotency/hash";
import { storableText } from "../db/storable";
import { txExecutor } from "../db/sql";
import { auditKeyring, type AuditKeyring } from "./keys";
import { auditStore } from "./store";
import type { Principal } from "../auth/permissions";

/**
 * The one module that writes audit entries. The table is append-only in the
 * database (a trigger refuses UPDATE, DELETE and TRUNCATE) and hash-chained:
 * each entry stores the previous entry's hash and its own
 * hash = SHA-256(prev_hash + "\n" + canonical JSON of the entry), so an entry
 * altered or removed behind the trigger's back is found by verifyAuditChain().
 */

export const GENESIS_HASH = "0".repeat(64);

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
 * Text PostgreSQL stores exactly as given (lib/db/storable.ts): NUL and unpaired
 * surrogates become U+FFFD, so the stored entry is the hashed one.
 */
export { storableText };

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
  return storableJson(JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v)))) as Prisma.InputJsonValue;
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
  /** The HMAC key's fingerprint; null for the plain SHA-256 entries written before keys. */
  keyId?: string | null;
}

/**
 * An entry's hash over its predecessor's hash and its canonical JSON: with a key,
 * HMAC-SHA256 under that key (the key's id is part of what is signed); without
 * (entries from before migration 20261201100000_audit_hmac), plain SHA-256.
 */
export function entryHash(prevHash: string, e: HashedFields, key: Buffer | null = null): string {
  const fields: Record<string, unknown> = {
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
  };
  if (e.keyId) fields.keyId = e.keyId;
  const message = `${prevHash}\n${canonicalJson(fields, { integersOnly: false })}`;
  if (e.keyId) {
    if (!key) throw new Error(`entryHash: entry keyed with ${e.keyId} needs its key`);
    return createHmac("sha256", key).update(message, "utf8").digest("hex");
  }
  return createHash("sha256").update(message, "utf8").digest("hex");
}

type Tx = Prisma.TransactionClient;

/**
 * Appends one entry inside the caller's transaction, so a change and its audit
 * entry commit together or not at all. Use `audit()` when there is no change.
 */
export async function appendAudit(tx: Tx, input: AuditInput) {
  // The key first: without one nothing is written (and no lock taken).
  const { current } = auditKeyring();
  await auditStore(txExecutor(tx)).lockChain();
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
    keyId: current.id,
  };
  return tx.auditEntry.create({
    data: {
      ...fields,
      before: (fields.before ?? undefined) as Prisma.InputJsonValue | undefined,
      after: (fields.after ?? undefined) as Prisma.InputJsonValue | undefined,
      detail: (fields.detail ?? undefined) as Prisma.InputJsonValue | undefined,
      prevHash,
      hash: entryHash(prevHash, fields, current.key),
    },
  });
}

/** Appends one entry in a transaction of its own (refusals, sign-ins, reveals). */
export async function audit(prisma: PrismaClient, input: AuditInput) {
  return prisma.$transaction((tx) => appendAudit(tx, input));
}

export type ChainProblem =
  /** The stored hash is not the hash of the entry (altered, forged, or re-chained without the key). */
  | "hash_mismatch"
  /** prev_hash is not the previous entry's hash (an entry before it was removed or replaced). */
  | "link_mismatch"
  /** An unkeyed (plain SHA-256) entry after keyed ones: only a forger writes those. */
  | "unkeyed_after_keyed"
  /** Signed with a key this server does not know (add it to the retired keys). */
  | "unknown_key"
  /** A published anchor's entry has another hash now, or another number of entries up to it. */
  | "anchor_mismatch"
  /** A published anchor's entry is gone (the newest entries were cut off, or it was deleted). */
  | "anchor_missing";

export interface ChainBreak {
  id: bigint;
  problem: ChainProblem;
  expected?: string;
  found?: string;
  detail?: string;
}

/** A chain head published outside the database (lib/audit/anchor.ts): entry id, its hash, entries up to it. */
export interface AuditAnchor {
  id: bigint;
  hash: string;
  count: number;
}

export interface ChainVerification {
  intact: boolean;
  checked: number;
  /** Entries written before keys (plain SHA-256); the first keyed entry's HMAC covers them. */
  unkeyed: number;
  /** Every break found, in chain order (at most MAX_LISTED_BREAKS; breakCount has the total). */
  breaks: ChainBreak[];
  breakCount: number;
  /** The first break (breaks[0]). */
  brokenAt?: ChainBreak;
  anchorsChecked: number;
  lastId: bigint | null;
  lastHash: string;
}

export const MAX_LISTED_BREAKS = 500;

/**
 * Walks the whole chain in id order, in pages, recomputing every hash with the
 * keyring, and lists every break (after one, it goes on from the stored hash, so
 * each tampered place is named once). With anchors — chain heads published
 * outside the database — it also finds what the chain alone cannot show: the
 * newest entries cut off, or the chain rebuilt from some point on.
 */
export async function verifyAuditChain(
  prisma: PrismaClient,
  opts: { pageSize?: number; anchors?: readonly AuditAnchor[]; keyring?: AuditKeyring } = {},
): Promise<ChainVerification> {
  const pageSize = opts.pageSize ?? 2000;
  const keyring = opts.keyring ?? auditKeyring();
  // Anchors in id order, met one by one as the walk passes their ids.
  const anchors = [...new Map((opts.anchors ?? []).map((a) => [a.id, a])).values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  let nextAnchor = 0;
  const breaks: ChainBreak[] = [];
  let breakCount = 0;
  const report = (b: ChainBreak) => {
    breakCount++;
    if (breaks.length < MAX_LISTED_BREAKS) breaks.push(b);
  };
  let prev = GENESIS_HASH;
  let checked = 0;
  let unkeyed = 0;
  let keyedSeen = false;
  let anchorsChecked = 0;
  let lastId: bigint | null = null;
  let cursor: bigint | undefined;
  for (;;) {
    const page = await prisma.auditEntry.findMany({
      where: cursor === undefined ? {} : { id: { gt: cursor } },
      orderBy: { id: "asc" },
      take: pageSize,
    });
    for (const e of page) {
      // Anchors whose entry lies between the previous entry and this one: that entry was deleted.
      while (nextAnchor < anchors.length && anchors[nextAnchor].id < e.id) {
        const a = anchors[nextAnchor++];
        anchorsChecked++;
        report({ id: a.id, problem: "anchor_missing", expected: a.hash, detail: `the published anchor's entry #${a.id} is gone` });
      }
      checked++;
      if (e.prevHash !== prev) report({ id: e.id, problem: "link_mismatch", expected: prev, found: e.prevHash });
      if (e.keyId === null) {
        unkeyed++;
        if (keyedSeen) report({ id: e.id, problem: "unkeyed_after_keyed" });
        else {
          const expected = entryHash(e.prevHash, e);
          if (expected !== e.hash) report({ id: e.id, problem: "hash_mismatch", expected, found: e.hash });
        }
      } else {
        keyedSeen = true;
        const key = keyring.all.get(e.keyId);
        if (!key) report({ id: e.id, problem: "unknown_key", detail: `signed with key ${e.keyId}, which is not configured` });
        else {
          const expected = entryHash(e.prevHash, e, key);
          if (expected !== e.hash) report({ id: e.id, problem: "hash_mismatch", expected, found: e.hash });
        }
      }
      const anchor = anchors[nextAnchor]?.id === e.id ? anchors[nextAnchor++] : undefined;
      if (anchor) {
        anchorsChecked++;
        if (anchor.hash !== e.hash)
          report({ id: e.id, problem: "anchor_mismatch", expected: anchor.hash, found: e.hash, detail: "the entry's hash differs from the published anchor" });
        else if (anchor.count !== checked) {
          report({ id: e.id, problem: "anchor_mismatch", detail: `${checked} entries up to this one; the published anchor says ${anchor.count}` });
        }
      }
      prev = e.hash;
      lastId = e.id;
    }
    if (page.length < pageSize) break;
    cursor = page[page.length - 1].id;
  }
  // Anchors beyond the last entry: the newest entries were cut off.
  for (const a of anchors.slice(nextAnchor)) {
    anchorsChecked++;
    report({
      id: a.id,
      problem: "anchor_missing",
      expected: a.hash,
      detail: `the published anchor's entry #${a.id} is gone (the chain now ends at ${lastId === null ? "nothing" : `#${lastId}`})`,
    });
  }
  return {
    intact: breakCount === 0,
    checked,
    unkeyed,
    breaks,
    breakCount,
    ...(breaks.length ? { brokenAt: breaks[0] } : {}),
    anchorsChecked,
    lastId,
    lastHash: prev,
  };
}
