import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { healthReport } from "@/lib/db/health";
import { mulberry32 } from "@/lib/demo/traffic-plan";
import { overviewStats } from "@/lib/stats/overview";
import { refreshRollups } from "@/lib/stats/rollups";
import { createEmptyTestDatabase, usingDatabaseServer, usingMysql, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * Issue 14's must-show, on MySQL/MariaDB (and the same on PostgreSQL): on a fresh database migrated
 * by `npm run db:migrate`, the seed's kind of PHP service — examples/php/service.php, forked workers,
 * each request in a process of its own, reserving through examples/php/idempotency.php (on MySQL
 * the seed's `INSERT … ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)`) — serves retries,
 * conflicting payloads, declines, provider timeouts left pending with reconciliation items, and
 * request processes killed after their reservation. Afterwards every overview number equals what
 * the service did, /api/health names the database, and the pending payments wait in the queue.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const SERVICE = path.join(ROOT, "examples/php/service.php");
const modules = spawnSync("php", ["-m"], { encoding: "utf8" });
const PDO_DRIVER = usingMysql ? "pdo_mysql" : "pdo_pgsql";
const hasPhp = modules.status === 0 && new RegExp(`^${PDO_DRIVER}$`, "m").test(modules.stdout) && /^pcntl$/m.test(modules.stdout);
const INTENTS = 120;

interface Job {
  key: string;
  amount: number;
  action: "complete" | "decline" | "timeout" | "crash";
}
interface Line {
  key: string;
  action: Job["action"];
  outcome: "owner" | "replay" | "conflict" | "in_progress" | "crashed" | "error";
  http?: number;
  status?: "completed" | "failed" | "pending" | "processing";
  error?: string;
}

/** The intents, each sent once or more: a retry repeats the payload, a conflict changes the amount. */
function jobs(seed: number): Job[] {
  const rnd = mulberry32(seed);
  const out: Job[] = [];
  for (let i = 0; i < INTENTS; i++) {
    const u = rnd();
    const action: Job["action"] = u < 0.6 ? "complete" : u < 0.75 ? "decline" : u < 0.9 ? "timeout" : "crash";
    const job = { key: `order-${seed}-${i}`, amount: 1000 + Math.floor(rnd() * 9000), action };
    out.push(job);
    if (rnd() < 0.35) out.push({ ...job });
    if (rnd() < 0.12) out.push({ ...job, amount: job.amount + 100 });
  }
  // Shuffled, so retries race their originals across workers.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, stdin?: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => resolve({ code, out, err }));
    child.stdin.end(stdin ?? "");
  });
}

let db: TestDatabase;
beforeAll(async () => {
  if (!usingDatabaseServer) return;
  db = await createEmptyTestDatabase();
}, 120_000);
afterAll(() => db?.drop());

describe.runIf(usingDatabaseServer && (hasPhp || process.env.CI))(
  "the seed's PHP service with forked workers, on a database migrated by npm run db:migrate",
  () => {
    it("every overview number equals what it did; health names the database; pending payments wait in the queue with their items", async () => {
      expect(hasPhp, `php with ${PDO_DRIVER} and pcntl`).toBe(true);
      const env = { ...process.env, DATABASE_URL: db.url };
      const migrated = await run(path.join(ROOT, "node_modules/.bin/tsx"), ["scripts/migrate.ts"], env);
      expect(migrated.code, migrated.err + migrated.out).toBe(0);
      provideDatabase(db);

      const sent = jobs(7);
      const served = await run("php", [SERVICE, "--dsn", db.url!, "--workers", "4"], env, JSON.stringify(sent));
      expect(served.code, served.err).toBe(0);
      const lines = served.out
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Line);
      expect(lines).toHaveLength(sent.length);
      expect(lines.filter((l) => l.outcome === "error")).toEqual([]);

      const count = (f: (l: Line) => boolean) => lines.filter(f).length;
      const did = {
        records: count((l) => l.outcome === "owner" || l.outcome === "crashed"),
        completed: count((l) => l.status === "completed"),
        failed: count((l) => l.status === "failed"),
        pending: count((l) => l.status === "pending"),
        processing: count((l) => l.outcome === "crashed"),
        replays: count((l) => l.outcome === "replay"),
        conflicts: count((l) => l.outcome === "conflict"),
        inProgress: count((l) => l.outcome === "in_progress"),
      };
      // Every case happened (the seed and the job mix make sure of it).
      for (const [k, n] of Object.entries(did)) expect(n, k).toBeGreaterThan(0);
      expect(did.records).toBe(new Set(sent.map((j) => j.key)).size);

      await db.withSession((s) => refreshRollups(s));
      const now = new Date();
      const o = await db.withSession((s) => overviewStats(s, { from: new Date(now.getTime() - 3_600_000), to: new Date(now.getTime() + 60_000) }, { now }));
      expect(o.records.total).toBe(did.records);
      expect(o.records.byStatus).toEqual({ completed: did.completed, failed: did.failed, pending: did.pending, processing: did.processing });
      expect(o.events.total.reserved).toBe(did.records);
      expect(o.events.total.replays).toBe(did.replays);
      expect(o.events.total.conflicts).toBe(did.conflicts);
      expect(o.events.total.inProgress).toBe(did.inProgress);
      expect(o.events.total.requests).toBe(did.records + did.replays + did.conflicts + did.inProgress);
      expect(o.events.total.completed).toBe(did.completed);
      expect(o.events.total.failed).toBe(did.failed);
      expect(o.events.total.pending).toBe(did.pending);
      expect(o.reconciliation.open).toBe(did.pending);

      const health = await healthReport(async () => db);
      expect(health.status).toBe("ok");
      expect(health.database.engine).toMatch(usingMysql ? /^(MariaDB|MySQL)$/ : /^PostgreSQL$/);
      expect(health.database.version).toMatch(/^\d+\.\d+/);

      // The timed-out payments wait for an operator, each with its reconciliation item.
      const { token } = await tokenFor(db, ["operator"]);
      const queueRoute = await import("@/app/api/v1/queue/route");
      const queue = await json<{ items: { kind: string; reconciliation: { state: string } | null }[]; summary: { pending: number } }>(
        await call(queueRoute.GET, `/api/v1/queue?kind=pending&limit=200`, token),
      );
      expect(queue.summary.pending).toBe(did.pending);
      expect(queue.items).toHaveLength(did.pending);
      expect(queue.items.every((i) => i.kind === "pending" && i.reconciliation?.state === "open")).toBe(true);
    }, 180_000);
  },
);
