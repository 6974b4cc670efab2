import type { Redis } from "ioredis";
import { z } from "zod";
import { reasonSchema } from "../kernel/input";
import { appendAudit, type RequestMeta } from "../audit";
import { auditActor, auditRefusals, requirePermission, type Actor } from "../auth/users";
import type { Database } from "../db/client";
import { maskBody } from "../records/mask";
import type { RedisStoreConfig } from "./config";
import { onStore, redisFor } from "./client";
import { censusOf } from "./census";
import { assess, inStore, maxRemainingWhenWedged, readKey, type KeyReading } from "./keys";
import { redisKeySchema } from "./lookup";
import { BULK_RELEASE_LIMIT, releaseConfirmation } from "./confirm";
import { ProblemError } from "../kernel/problem";
import { NotFoundError, StateConflictError } from "../kernel/errors";
import { formatDuration } from "../kernel/input";

/**
 * Release a wedged key: delete a `processing` key that a crashed worker left behind,
 * so the client's next retry can run — but only if it still holds exactly what the
 * console read (one Lua script: compare and delete, atomic in Redis), and only if it
 * is still at least wedgedAfter old (a key that expired and was claimed afresh
 * meanwhile holds 'processing' again, but young: it is refused). A key that
 * completed meanwhile is never touched; the refusal says what it holds now.
 *
 * Permission records.resolve, a reason, audited with before/after (the audit entry is
 * written in the transaction around the script: a refusal writes a `refused` entry
 * instead), idempotent through the API's Idempotency-Key like every operator action.
 * Bulk: up to BULK_RELEASE_LIMIT keys per call (or the oldest wedged keys of the
 * latest census) with the typed confirmation "release N keys"; each key is released
 * (and audited) on its own.
 */

export const RELEASE_ACTION = "redis.release";
export const BULK_RELEASE_ACTION = "redis.release_bulk";
export { BULK_RELEASE_LIMIT, releaseConfirmation };

/**
 * KEYS[1] the key; ARGV[1] "string" | "hash"; ARGV[2] the value the console read (hashes:
 * their fields sorted by name, each as <bytes>:<field><bytes>:<value>); ARGV[3] the largest
 * PTTL (ms) a key may have and still be wedgedAfter old. Returns {1, pttl} when deleted,
 * {0, why} when not: gone, changed, young.
 */
export const RELEASE_SCRIPT = `
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then return {0, 'gone'} end
local current
if ARGV[1] == 'hash' then
  if t ~= 'hash' then return {0, 'changed'} end
  local flat = redis.call('HGETALL', KEYS[1])
  local fields = {}
  for i = 1, #flat, 2 do fields[#fields + 1] = {flat[i], flat[i + 1]} end
  table.sort(fields, function(a, b) return a[1] < b[1] end)
  local parts = {}
  for _, f in ipairs(fields) do parts[#parts + 1] = #f[1] .. ':' .. f[1] .. #f[2] .. ':' .. f[2] end
  current = table.concat(parts)
else
  if t ~= 'string' then return {0, 'changed'} end
  current = redis.call('GET', KEYS[1])
end
if current ~= ARGV[2] then return {0, 'changed'} end
local pttl = redis.call('PTTL', KEYS[1])
if pttl >= 0 and pttl > tonumber(ARGV[3]) then return {0, 'young'} end
redis.call('DEL', KEYS[1])
return {1, pttl}
`;

/** The value as the script compares it. */
export function comparable(raw: string | Record<string, string>): string {
  if (typeof raw === "string") return raw;
  const fields = Object.entries(raw).sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return fields.map(([f, v]) => `${Buffer.byteLength(f)}:${f}${Buffer.byteLength(v)}:${v}`).join("");
}

export const releaseBodySchema = z.object({ key: redisKeySchema, reason: reasonSchema }).strict();
export type ReleaseBody = z.output<typeof releaseBodySchema>;

export interface ReleaseResult {
  store: string;
  key: string;
  released: true;
  before: { state: "processing"; stateValue: string; ageSeconds: number | null; ttlSeconds: number | null; refusingForSeconds: number | null };
  auditId: bigint;
}

/** What the key holds now, for a refusal (the value itself only as its state). */
function currentOf(store: RedisStoreConfig, r: KeyReading | null) {
  if (!r) return { exists: false };
  const a = assess(store, r);
  return {
    exists: true,
    state: r.record?.state ?? "unrecognised",
    stateValue: r.record?.stateValue ?? null,
    httpStatus: r.record?.httpStatus ?? null,
    ttlSeconds: r.remainingMs === null ? null : Math.ceil(r.remainingMs / 1000),
    ageSeconds: a.ageMs === null ? null : Math.floor(a.ageMs / 1000),
  };
}

/** Why a key may not be released now; null when it may. */
function refusalFor(store: RedisStoreConfig, key: string, r: KeyReading | null): ProblemError | null {
  if (!r) return new NotFoundError(`The key "${key}" does not exist in the store "${store.name}" (it expired, or someone deleted it).`);
  const current = currentOf(store, r);
  if (!r.record)
    return new StateConflictError(
      `The key "${key}" is not an idempotency record of this store's format (${store.formatName}): the console never touches it.`,
      current,
    );
  if (r.record.state === "completed") {
    return new StateConflictError(
      `The key "${key}" holds a completed answer${r.record.httpStatus ? ` (${r.record.httpStatus})` : ""}: retries replay it. Only a wedged processing key can be released; it was left in place.`,
      current,
    );
  }
  const a = assess(store, r);
  if (a.leaseExpired)
    return new StateConflictError(
      `The key "${key}" is processing but its in-progress lease has ended: the library takes it over on the next request. Nothing to release.`,
      current,
    );
  if (!a.wedged) {
    return new StateConflictError(
      `The key "${key}" has been processing for ${Math.floor((a.ageMs ?? 0) / 1000)} s, less than the wedged threshold ${formatDuration(store.wedgedAfterSeconds)}: a worker may still finish it. Wait, then release it if it is still there.`,
      current,
    );
  }
  return null;
}

async function runScript(redis: Redis, store: RedisStoreConfig, r: KeyReading): Promise<{ released: boolean; why?: string }> {
  const reply = (await redis.eval(
    RELEASE_SCRIPT,
    1,
    r.key,
    store.format.encoding === "hash" ? "hash" : "string",
    comparable(r.raw!),
    String(maxRemainingWhenWedged(store)),
  )) as [number, string | number];
  return reply[0] === 1 ? { released: true } : { released: false, why: String(reply[1]) };
}

export async function releaseKey(
  db: Pick<Database, "prisma">,
  store: RedisStoreConfig,
  actor: Actor,
  input: ReleaseBody,
  request?: RequestMeta,
): Promise<ReleaseResult> {
  const target = { table: `redis:${store.name}`, id: input.key };
  return auditRefusals(db.prisma, actor, { action: RELEASE_ACTION, target, reason: input.reason, request, detail: { store: store.name } }, async () => {
    requirePermission(actor, "records.resolve");
    if (!inStore(store, input.key)) {
      throw new NotFoundError(`"${input.key}" is not under the store's key pattern ${store.pattern}: it is not one of its idempotency keys.`);
    }
    const redis = redisFor(store);
    const seen = await onStore(store, () => readKey(redis, store, input.key));
    const refused = refusalFor(store, input.key, seen);
    if (refused) throw refused;
    const r = seen!;
    const a = assess(store, r);
    const before = {
      state: "processing" as const,
      stateValue: r.record!.stateValue,
      ageSeconds: a.ageMs === null ? null : Math.floor(a.ageMs / 1000),
      ttlSeconds: r.remainingMs === null ? null : Math.ceil(r.remainingMs / 1000),
      refusingForSeconds: a.refusingMs === null ? null : Math.ceil(a.refusingMs / 1000),
    };
    let releasedInRedis = false;
    try {
      const auditId = await db.prisma.$transaction(async (tx) => {
        const outcome = await onStore(store, () => runScript(redis, store, r));
        if (!outcome.released) return null;
        releasedInRedis = true;
        const value = typeof r.raw === "string" ? maskBody(r.raw).body : maskBody(JSON.stringify(r.raw)).body;
        const entry = await appendAudit(tx, {
          actor: auditActor(actor),
          action: RELEASE_ACTION,
          target,
          before: { ...before, value },
          after: { exists: false },
          reason: input.reason,
          request,
          outcome: "done",
          detail: { store: store.name, pattern: store.pattern, format: store.formatName },
        });
        return entry.id;
      });
      if (auditId !== null) return { store: store.name, key: input.key, released: true as const, before, auditId };
    } catch (err) {
      if (releasedInRedis) console.error(`redis release: the key "${input.key}" of store "${store.name}" was deleted, but its audit entry failed:`, err);
      throw err;
    }
    // The script refused: the key changed (or went) between the read and the script.
    const now = await onStore(store, () => readKey(redis, store, input.key));
    throw (
      refusalFor(store, input.key, now) ??
      new StateConflictError(`The key "${input.key}" changed while it was being released; it was left in place. Look at it again.`, currentOf(store, now))
    );
  });
}

// --- Bulk -------------------------------------------------------------------------------------

export const bulkReleaseBodySchema = z
  .object({
    keys: z.array(redisKeySchema).min(1, "must name at least one key").max(BULK_RELEASE_LIMIT, `must name at most ${BULK_RELEASE_LIMIT} keys`).optional(),
    /** The oldest wedged keys of the latest census (at most BULK_RELEASE_LIMIT). */
    wedged: z.literal(true, { error: "must be true (the oldest wedged keys of the latest census)" }).optional(),
    confirm: z.string().max(100).optional(),
    dryRun: z.boolean().optional(),
    reason: reasonSchema,
  })
  .strict()
  .superRefine((b, ctx) => {
    if ((b.keys === undefined) === (b.wedged === undefined))
      ctx.addIssue({ code: "custom", path: ["keys"], message: "give either keys or wedged: true (exactly one)" });
  });
export type BulkReleaseBody = z.output<typeof bulkReleaseBodySchema>;

export class ReleaseConfirmationError extends ProblemError {
  constructor(expected: string, count: number, given: string | undefined) {
    super(
      400,
      "confirmation-required",
      "Confirmation required",
      given === undefined
        ? `Type "${expected}" in confirm to delete these ${count} wedged key${count === 1 ? "" : "s"}.`
        : `The confirmation does not match: type "${expected}" (the selection is ${count} key${count === 1 ? "" : "s"} now).`,
      { expectedConfirmation: expected, count },
    );
  }
}

export interface BulkReleaseOutcome {
  key: string;
  released: boolean;
  auditId: bigint | null;
  error: { status: number; title: string; detail: string } | null;
}

export interface BulkReleaseResult {
  dryRun: boolean;
  count: number;
  confirmation: string;
  keys: string[];
  outcomes: BulkReleaseOutcome[];
  released: number;
  refused: number;
}

export async function releaseBulk(
  db: Pick<Database, "prisma">,
  store: RedisStoreConfig,
  actor: Actor,
  body: BulkReleaseBody,
  request?: RequestMeta,
): Promise<BulkReleaseResult> {
  return auditRefusals(
    db.prisma,
    actor,
    {
      action: BULK_RELEASE_ACTION,
      target: { table: `redis:${store.name}`, id: "*" },
      reason: body.reason,
      request,
      detail: { store: store.name, ...(body.keys ? { keys: body.keys } : { wedged: true }) },
    },
    async () => {
      requirePermission(actor, "records.resolve");
      const keys = body.keys
        ? [...new Set(body.keys)]
        : (await onStore(store, () => censusOf(store))).wedged.oldest.slice(0, BULK_RELEASE_LIMIT).map((w) => w.key);
      const confirmation = releaseConfirmation(keys.length);
      const base = { count: keys.length, confirmation, keys };
      if (body.dryRun) return { dryRun: true, ...base, outcomes: [], released: 0, refused: 0 };
      if (keys.length === 0)
        throw new ProblemError(409, "nothing-to-release", "Nothing to release", "The latest census found no wedged key in this store.", { count: 0 });
      if (body.confirm?.trim() !== confirmation) throw new ReleaseConfirmationError(confirmation, keys.length, body.confirm);
      const outcomes: BulkReleaseOutcome[] = [];
      for (const key of keys) {
        try {
          const r = await releaseKey(db, store, actor, { key, reason: body.reason }, request);
          outcomes.push({ key, released: true, auditId: r.auditId, error: null });
        } catch (err) {
          if (!(err instanceof ProblemError)) throw err;
          outcomes.push({ key, released: false, auditId: null, error: { status: err.status, title: err.title, detail: err.message } });
        }
      }
      const released = outcomes.filter((o) => o.released).length;
      return { dryRun: false, ...base, outcomes, released, refused: outcomes.length - released };
    },
  );
}
