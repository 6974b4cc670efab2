import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateUser } from "@/lib/auth/users";
import { LOCKS } from "@/lib/db/locks";
import { setScopeHold } from "@/lib/retention/legal-holds";
import { startPurge } from "@/lib/retention/runs";
import { workRun } from "@/lib/retention/worker";
import { createTestDatabase, usingPostgres, type TestDatabase } from "./helpers/db";

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

describe.skipIf(!usingPostgres)("concerns that used to share a lock id do not wait for each other", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.sql.exec(`INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label) VALUES (NULL, 0, 0, true, 'locks test')`);
    await db.sql.exec(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
       SELECT 'tenant:locks', 'capture_payment', 'k' || g, 'h', 'completed', now() - interval '2 days' FROM generate_series(1, 20) g`,
    );
  }, 120_000);
  afterAll(() => db?.drop());

  /** Runs `fn` while another session holds `lock` (as a reconciler tick or a refresh would), within `ms`. */
  async function whileHeld<T>(lock: number, ms: number, fn: () => Promise<T>): Promise<T> {
    return db.withSession(async (other) => {
      await other.query(`SELECT pg_advisory_lock($1)`, [lock]);
      try {
        return await Promise.race([fn(), new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`waited ${ms} ms: blocked by lock ${lock}`)), ms))]);
      } finally {
        await other.query(`SELECT pg_advisory_unlock($1)`, [lock]);
      }
    });
  }

  it("a reconciler tick does not block a purge batch or a legal hold", async () => {
    const out = await whileHeld(LOCKS.reconciler, 4000, async () => {
      const run = await startPurge(db.prisma, SYSTEM, { reason: "locks: purge while the reconciler works", batchSize: 5, pauseMs: 0 }, { workerId: "locks", leaseSeconds: 60, requireConfirmation: false });
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
    const { user: changed } = await whileHeld(LOCKS.rollups, 4000, () => updateUser(db.prisma, SYSTEM, { userId: user.id, roles: ["viewer", "support"], reason: "needs bodies" }));
    expect(changed.roles).toEqual(["viewer", "support"]);
  }, 60_000);
});
