import { Gauge, Registry } from "prom-client";
import type { PrismaClient } from "../generated/prisma/client";
import type { Database } from "../db";
import { createPeriodicTask, type PeriodicTask } from "../db/periodic";
import { txExecutor } from "../db/sql";
import type { AuditAnchor } from "./index";
import { auditStore } from "./store";

/**
 * Anchors: the audit chain's head (newest entry id, its hash, the number of
 * entries up to it) published where a database superuser cannot reach it. The
 * keyed chain (lib/audit/keys.ts) makes rewriting entries detectable; only an
 * anchor kept outside can show that the newest entries were cut off, or that
 * someone holding the key rebuilt the chain. verifyAuditChain checks anchors.
 *
 * Published three ways: a log line and Prometheus gauges every
 * AUDIT_ANCHOR_MINUTES (default 5; 0 = off) by the server, and on demand with
 * `npm run audit -- anchor --out <file | https URL>` (cron it to write-once storage).
 */
export const ANCHOR_TYPE = "idempotency-console.audit-anchor";
const DEFAULT_ANCHOR_MINUTES = 5;

/** An anchor as published (JSON; bigints as strings). */
export interface PublishedAnchor {
  type: typeof ANCHOR_TYPE;
  id: string;
  hash: string;
  count: number;
  occurredAt: string;
  keyId: string | null;
  publishedAt: string;
}

/** The chain's head now, read in one statement (one snapshot); null when the trail is empty. */
export async function readChainHead(prisma: PrismaClient, now = new Date()): Promise<PublishedAnchor | null> {
  const r = await auditStore(txExecutor(prisma)).chainHead();
  if (!r) return null;
  return {
    type: ANCHOR_TYPE,
    id: r.id.toString(),
    hash: r.hash,
    count: Number(r.count),
    occurredAt: r.occurredAt.toISOString(),
    keyId: r.keyId,
    publishedAt: now.toISOString(),
  };
}

export function toAuditAnchor(p: Pick<PublishedAnchor, "id" | "hash" | "count">): AuditAnchor {
  return { id: BigInt(p.id), hash: p.hash, count: p.count };
}

/**
 * Anchors from what an operator kept: JSON lines (what `audit anchor --out file`
 * appends, or the server's log lines), a JSON array, or one JSON object. Lines that
 * are not anchors (other log output) are skipped; a malformed anchor is an error.
 */
export function parseAnchors(text: string): AuditAnchor[] {
  const trimmed = text.trim();
  if (!trimmed) return [];
  const candidates: unknown[] = [];
  if (trimmed.startsWith("[")) candidates.push(...(JSON.parse(trimmed) as unknown[]));
  else {
    for (const line of trimmed.split(/\r?\n/)) {
      const start = line.indexOf("{");
      if (start < 0 || !line.includes(ANCHOR_TYPE)) continue;
      candidates.push(JSON.parse(line.slice(start)));
    }
  }
  return candidates.map((c, i) => {
    const a = c as Partial<PublishedAnchor>;
    if (
      a?.type !== ANCHOR_TYPE ||
      typeof a.id !== "string" ||
      !/^\d{1,19}$/.test(a.id) ||
      typeof a.hash !== "string" ||
      !/^[0-9a-f]{64}$/.test(a.hash) ||
      !Number.isSafeInteger(a.count)
    ) {
      throw new Error(`anchor ${i + 1} is not an audit anchor (${JSON.stringify(c).slice(0, 200)})`);
    }
    return toAuditAnchor(a as PublishedAnchor);
  });
}

// --- the server's periodic publication -------------------------------------------

let lastPublished: PublishedAnchor | null = null;

/** The anchor this process published last (for /api/metrics and verify), or null. */
export function lastPublishedAnchor(): PublishedAnchor | null {
  return lastPublished;
}

export function anchorMinutes(env: Record<string, string | undefined> = process.env): number {
  const raw = env.AUDIT_ANCHOR_MINUTES?.trim();
  if (!raw) return DEFAULT_ANCHOR_MINUTES;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : DEFAULT_ANCHOR_MINUTES;
}

export interface AnchorTick {
  status: "published" | "empty" | "failed" | "busy" | "stopped";
  anchor?: PublishedAnchor;
  /** The previously published anchor no longer holds (its entry is gone or changed). */
  previousBroken?: string;
  error?: unknown;
}

/** Checks that a published anchor still holds: its entry exists with its hash, and as many entries up to it. */
export async function anchorHolds(prisma: PrismaClient, a: Pick<PublishedAnchor, "id" | "hash" | "count">): Promise<string | null> {
  const r = await auditStore(txExecutor(prisma)).entryUpTo(BigInt(a.id));
  if (!r.hash) return `entry #${a.id} is gone`;
  if (r.hash !== a.hash) return `entry #${a.id} has another hash now`;
  if (Number(r.count) !== a.count) return `${r.count} entries up to #${a.id}, ${a.count} when it was published`;
  return null;
}

/** One publication: check the previous anchor still holds, read the head, log it. */
export async function publishAnchor(prisma: PrismaClient, log: Pick<Console, "log" | "error"> = console, now = new Date()): Promise<AnchorTick> {
  let previousBroken: string | undefined;
  if (lastPublished) {
    const broken = await anchorHolds(prisma, lastPublished);
    if (broken) {
      previousBroken = broken;
      log.error(
        `audit chain: the anchor published at ${lastPublished.publishedAt} no longer holds: ${broken}. Run \`npm run audit -- verify\` with your published anchors.`,
      );
    }
  }
  const anchor = await readChainHead(prisma, now);
  if (!anchor) return { status: "empty", previousBroken };
  lastPublished = anchor;
  // One JSON line: `npm run audit -- verify --anchor <this log>` reads it back.
  log.log(`audit anchor ${JSON.stringify(anchor)}`);
  return { status: "published", anchor, previousBroken };
}

/** Started by instrumentation.ts: publishes every AUDIT_ANCHOR_MINUTES (first one a minute after start). */
export function startAnchorPublisher(getDb: () => Promise<Database>): PeriodicTask<AnchorTick> | null {
  const minutes = anchorMinutes();
  if (minutes === 0) return null;
  return createPeriodicTask<AnchorTick>({
    name: "audit anchor",
    intervalSeconds: minutes * 60,
    firstDelayMs: Math.min(minutes * 60_000, 60_000),
    work: async () => publishAnchor((await getDb()).prisma),
    failed: (error) => ({ status: "failed", error }),
    skipped: (status) => ({ status }),
    describe: () => null,
  });
}

/** Prometheus text for the last published anchor (appended to /api/metrics); empty before the first. */
export async function anchorMetricsText(): Promise<string> {
  const a = lastPublished;
  if (!a) return "";
  const registry = new Registry();
  const registers = [registry];
  new Gauge({ name: "idempotency_console_audit_anchor_entry_id", help: "Id of the newest audit entry at the last published anchor.", registers }).set(
    Number(a.id),
  );
  new Gauge({ name: "idempotency_console_audit_anchor_entries", help: "Audit entries up to the last published anchor.", registers }).set(a.count);
  new Gauge({ name: "idempotency_console_audit_anchor_timestamp_seconds", help: "When the last anchor was published (Unix time).", registers }).set(
    Date.parse(a.publishedAt) / 1000,
  );
  new Gauge({
    name: "idempotency_console_audit_anchor_info",
    help: "The last published anchor: its entry id and hash as labels (keep the series: it is the outside copy of the chain head).",
    labelNames: ["id", "hash", "key_id"],
    registers,
  }).set({ id: a.id, hash: a.hash, key_id: a.keyId ?? "" }, 1);
  return registry.metrics();
}
