import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateUser } from "@/lib/auth/users";
import { byDialect } from "@/lib/db/dialect";
import { LOCKS, lockNameOf, sessionLock, sessionUnlock } from "@/lib/db/locks";
import { paramList } from "@/lib/db/params";
import { txExecutor } from "@/lib/db/sql";
import { setScopeHold } from "@/lib/retention/legal-holds";
import { purgeStore } from "@/lib/retention/purge-store";
import { loadRules } from "@/lib/retention/rules";
import { startPurge } from "@/lib/retention/runs";
import { retentionStore } from "@/lib/retention/store";
import { workRun } from "@/lib/retention/worker";
import { asCensusWriter } from "@/lib/stats/census";
import { createTestDatabase, usingDatabaseServer, type TestDatabase } from "./helpers/db";

/**
 * The lock registry (lib/db/locks.ts): every advisory lock id is distinct and spelled only
 * there; and concerns that used to share an id (the reconciler and legal holds; rollups and
 * user administration) no longer wait for each other.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const SYSTEM = { type: "system" as const, label: "locks test" };
const quiet = { log: () => {}, warn: () => {} };

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (["node_modules", "generated", ".next", "test-results"].includes(name)) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else if (/\.(ts|tsx|mjs|sql)$/.test(name)) out.push(p);
  }
  return out;
}

describe("the lock registry", () => {
  it("every lock id is distinct", () => {
    const ids = Object.values(LOCKS);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("no other file spells a lock id; migrations take only the rollups' lock", () => {
    const offenders: string[] = [];
    for (const f of ["lib", "app", "scripts", "bench", "test", "prisma"].flatMap((d) => files(path.join(ROOT, d)))) {
      const rel = path.relative(ROOT, f);
      if (rel === "lib/db/locks.ts") continue;
      for (const m of readFileSync(f, "utf8").matchAll(/\b7270\d{4}\b/g)) {
        if (rel.startsWith("prisma/migrations/") && Number(m[0]) === LOCKS.rollups) continue;
        offenders.push(`${rel}: ${m[0]}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

/** `n` completed records of `scope` that expired two days ago (one portable INSERT). */
async function expiredRecords(db: TestDatabase, scope: string, n: number, status = "completed"): Promise<void> {
  const p = paramList(db.dialect);
  const expired = new Date(Date.now() - 2 * 86_400_000);
  const rows = Array.from(
    { length: n },
    (_, i) => `(${p.add(scope)}, 'capture_payment', ${p.add(`${scope}-k${i}-${Math.random()}`)}, 'h', ${p.add(status)}, ${p.time(expired)})`,
  );
  await db.sql.query(
    `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ${rows.join(", ")}`,
    p.values,
  );
}

/** Resolves with `p`, or rejects once `ms` have passed: `what` waited. */
function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`waited ${ms} ms: ${what}`)), ms))]);
}

describe.skipIf(!usingDatabaseServer)("concerns that used to share a lock id do not wait for each other", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.sql.exec(
      `INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label) VALUES (NULL, 0, 0, true, 'locks test')`,
    );
    await expiredRecords(db, "tenant:locks", 20);
  }, 120_000);
  afterAll(() => db?.drop());

  /** Runs `fn` while another session holds `lock` (as a reconciler tick or a refresh would), within `ms`. */
  async function whileHeld<T>(lock: number, ms: number, fn: () => Promise<T>): Promise<T> {
    return db.withSession(async (other) => {
      await sessionLock(other, lockNameOf(lock));
      try {
        return await within(ms, `blocked by lock ${lock}`, fn());
      } finally {
        await sessionUnlock(other, lockNameOf(lock));
      }
    });
  }

  it("a reconciler tick does not block a purge batch or a legal hold", async () => {
    const out = await whileHeld(LOCKS.reconciler, 4000, async () => {
      const run = await startPurge(
        db.prisma,
        SYSTEM,
        { reason: "locks: purge while the reconciler works", batchSize: 5, pauseMs: 0 },
        { workerId: "locks", leaseSeconds: 60, requireConfirmation: false },
      );
      return workRun(db, run.id, { workerId: "locks", log: quiet });
    });
    expect(out.outcome).toBe("finished");
    expect(Number(out.run!.recordsDeleted)).toBe(20);
    const hold = await whileHeld(LOCKS.reconciler, 4000, () => setScopeHold(db.prisma, SYSTEM, { scope: "tenant:held", reason: "litigation hold" }));
    expect(hold.scope).toBe("tenant:held");
  }, 60_000);

  it("a rollup refresh in progress does not block a role change", async () => {
    const user = await db.prisma.consoleUser.create({ data: { email: "locks-user@example.com", roles: ["viewer"] } });
    await db.prisma.consoleUser.create({ data: { email: "locks-admin@example.com", roles: ["admin"] } });
    const { user: changed } = await whileHeld(LOCKS.rollups, 4000, () =>
      updateUser(db.prisma, SYSTEM, { userId: user.id, roles: ["viewer", "support"], reason: "needs bodies" }),
    );
    expect(changed.roles).toEqual(["viewer", "support"]);
  }, 60_000);
});

describe.skipIf(!usingDatabaseServer)("a purge batch in flight and the writers", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.sql.exec(
      `INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label) VALUES (NULL, 0, 0, true, 'locks test')`,
    );
    await expiredRecords(db, "tenant:purged", 10);
    await expiredRecords(db, "tenant:busy", 3, "processing"); // in the batch's id window, not eligible
    await expiredRecords(db, "tenant:purged", 10);
    const e = paramList(db.dialect);
    const old = new Date(Date.now() - 3 * 86_400_000);
    const events = Array.from({ length: 10 }, (_, i) => `('tenant:purged', 'capture_payment', ${e.add(`ev-${i}`)}, 'completed', ${e.time(old)})`);
    await db.sql.query(`INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at) VALUES ${events.join(", ")}`, e.values);
    // Every event rolled up (the events' purge protection), without the refresher.
    await db.sql.query(
      byDialect(db, {
        postgres: `INSERT INTO rollup_state (name, watermark) SELECT 'events', max(id) FROM idempotency_events ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark`,
        mysql: `INSERT INTO rollup_state (name, watermark) SELECT 'events', max(id) FROM idempotency_events ON DUPLICATE KEY UPDATE watermark = VALUES(watermark)`,
      }),
    );
  }, 120_000);
  afterAll(() => db?.drop());

  it("a writer's INSERT of a record or an event, and its UPDATE of a record the batch does not delete, never wait for the batch", async () => {
    const rules = await loadRules(db.sql);
    const now = new Date();
    const [{ r, e }] = await db.sql.query<{ r: bigint; e: bigint }>(
      `SELECT (SELECT max(id) FROM idempotency_records) AS r, (SELECT max(id) FROM idempotency_events) AS e`,
    );
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    // A records batch and an events batch, their locks held until released — the windows reach past the
    // highest ids, where a writer's next rows go.
    const batch = db.prisma.$transaction(
      async (tx) => {
        const ex = txExecutor(tx, db.dialect);
        await retentionStore(ex).lockHoldsShared();
        const purge = purgeStore(ex);
        const candidates = await purge.lockEligibleRecords(rules, now, 0n, BigInt(r) + 1000n, 100);
        const records = await asCensusWriter(ex, () => purge.deleteEligibleRecords(rules, now, candidates));
        const events = await purge.deleteEligibleEvents(rules, now, 0n, BigInt(e) + 1000n, 100);
        holding();
        await released;
        return { records, events: events.deleted };
      },
      { timeout: 60_000 },
    );
    try {
      await held;
      const p = paramList(db.dialect);
      const fresh = `(${p.add("tenant:live")}, 'capture_payment', ${p.add(`live-${Math.random()}`)}, 'h', 'processing', ${p.time(new Date(now.getTime() + 86_400_000))})`;
      await within(
        3000,
        "a writer's reservation waited for the purge batch",
        db.sql.query(
          byDialect(db, {
            postgres: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ${fresh} ON CONFLICT DO NOTHING`,
            mysql: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ${fresh} ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)`,
          }),
          p.values,
        ),
      );
      await within(
        3000,
        "a writer's event waited for the purge batch",
        db.sql.query(`INSERT INTO idempotency_events (scope, operation, idempotency_key, kind) VALUES ('tenant:live', 'capture_payment', 'live', 'reserved')`),
      );
      await within(
        3000,
        "a writer's completion of a record in the batch's window waited for the purge batch",
        db.sql.query(`UPDATE idempotency_records SET status = 'completed', version = version + 1 WHERE scope = 'tenant:busy'`),
      );
    } finally {
      release();
    }
    expect(await batch).toEqual({ records: 20, events: 10 });
  }, 60_000);
});
