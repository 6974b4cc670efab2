import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "@/lib/db/client";
import { MigrationError, migrate, migrationStatus } from "@/lib/db/migrate";
import { planOnline, splitStatements } from "@/lib/db/online-ddl";
import type { SqlExecutor } from "@/lib/db/sql";
import { overviewStats } from "@/lib/stats/overview";
import { createEmptyTestDatabase, usingPostgres, type TestDatabase } from "./helpers/db";

/**
 * A service adopting the console on tables it already has, full of rows, written all the
 * while (issue 10): `db:migrate` keeps the service's rows, constraints and unique key, adds
 * only what is missing without rewriting the table, builds indexes concurrently, and never
 * makes a writer's statement fail or wait longer than the lock timeout — even behind a
 * writer's long transaction.
 */

afterEach(() => vi.unstubAllEnvs());

// A PHP shop's own DDL, written before the console existed: fewer columns, its own names for
// constraints, a VARCHAR key, no version, no legal hold, headers as objects.
const SERVICE_DDL = `
CREATE TABLE idempotency_records (
  id BIGSERIAL PRIMARY KEY,
  scope TEXT NOT NULL,
  operation TEXT NOT NULL,
  idempotency_key VARCHAR(255) NOT NULL,
  payload_hash CHAR(64) NOT NULL,
  status VARCHAR(20) NOT NULL,
  response_code INT,
  response_headers JSONB,
  response_body TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at TIMESTAMPTZ NOT NULL,
  CONSTRAINT idem_unique UNIQUE (scope, operation, idempotency_key)
);
CREATE TABLE idempotency_events (
  id BIGSERIAL PRIMARY KEY,
  record_id BIGINT,
  scope TEXT NOT NULL,
  operation TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  kind TEXT NOT NULL,
  occurred_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_headers, response_body, created_at, updated_at, expires_at)
SELECT 'tenant:' || (g % 50), CASE WHEN g % 3 = 0 THEN 'capture_payment' ELSE 'create_order' END, 'key-' || g, md5(g::text) || md5(g::text),
       CASE WHEN g % 20 = 0 THEN 'processing' ELSE 'completed' END, 201, '{"content-type":"application/json"}', '{"id":' || g || '}',
       now() - make_interval(mins => g % 5000), now() - make_interval(mins => g % 5000), now() + make_interval(mins => 1440 - g % 3000)
  FROM generate_series(1, 20000) g;
INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, occurred_at)
SELECT id, scope, operation, idempotency_key, 'reserved', created_at FROM idempotency_records;`;

const fingerprint = async (sql: SqlExecutor) =>
  (
    await sql.query<{ n: bigint; d: string }>(
      `SELECT count(*)::bigint AS n, md5(string_agg(id || scope || operation || idempotency_key || payload_hash || status || COALESCE(response_body, ''), ',' ORDER BY id)) AS d FROM idempotency_records`,
    )
  )[0];

async function withDb(fn: (db: TestDatabase) => Promise<void>) {
  const db = await createEmptyTestDatabase();
  try {
    await fn(db);
  } finally {
    await db.drop();
  }
}

describe("adopting a service's existing tables", () => {
  it("adds what is missing, keeps every row and the service's own unique key; the console then reads the table", async () => {
    await withDb(async (db) => {
      await db.sql.exec(SERVICE_DDL);
      const before = await fingerprint(db.sql);
      const logs: string[] = [];
      const r = await db.withSession((s) => migrate(s, { log: (l) => logs.push(l) }));
      expect(r.status.state).toBe("up_to_date");
      expect(logs.join("\n")).toContain("adopted the existing tables");
      expect(await fingerprint(db.sql)).toEqual(before);
      // The console's columns are there with their defaults; its unique key is not a second copy of the service's.
      const [row] = await db.sql.query<{ version: number; legal_hold: boolean }>(`SELECT version, legal_hold FROM idempotency_records ORDER BY id LIMIT 1`);
      expect(row).toEqual({ version: 0, legal_hold: false });
      const uniques = await db.sql.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'idempotency_records'::regclass AND i.indisunique AND NOT i.indisprimary`,
      );
      expect(uniques.map((u) => u.name)).toEqual(["idem_unique"]);
      const invalid = await db.sql.query(`SELECT 1 FROM pg_index WHERE NOT indisvalid`);
      expect(invalid).toEqual([]);
      for (const name of [
        "idempotency_records_expires_at_idx",
        "idempotency_records_unsettled_status_idx",
        "idempotency_records_provider_reference_idx",
        "idempotency_events_record_id_occurred_at_idx",
      ]) {
        expect((await db.sql.query(`SELECT 1 FROM pg_class WHERE relname = $1`, [name])).length, name).toBe(1);
      }
      const [first] = await db.sql.query<{ logs: string }>(`SELECT logs FROM _prisma_migrations WHERE migration_name = '20261130000000_shared_tables'`);
      expect(first.logs).toMatch(/adopted existing tables/);
      expect((await migrationStatus(db.sql)).state).toBe("up_to_date");
      // The console reads it: every record counted (census backfilled from the service's rows).
      const o = await db.withSession((s) => overviewStats(s, { from: new Date(Date.now() - 86_400_000), to: new Date() }));
      expect(o.records.total).toBe(20_000);
      expect(o.records.byStatus.processing).toBe(1000);
    });
  }, 180_000);

  it.skipIf(!usingPostgres)(
    "three runners adopting at once (several deploy jobs): each migration applied once, every index valid",
    async () => {
      await withDb(async (db) => {
        await db.sql.exec(SERVICE_DDL);
        const others = await Promise.all([1, 2].map(() => openDatabase({ mode: "postgres", url: db.url! }, { poolSize: 1 })));
        try {
          const results = await Promise.all([db, ...others].map((h) => h.withSession((s) => migrate(s))));
          const names = (
            await db.sql.query<{ n: string }>(
              `SELECT migration_name AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY 1`,
            )
          ).map((r) => r.n);
          expect(results.flatMap((r) => r.applied).sort()).toEqual(names);
          expect(new Set(names).size).toBe(names.length);
          expect(await db.sql.query(`SELECT 1 FROM pg_index WHERE NOT indisvalid`)).toEqual([]);
        } finally {
          await Promise.all(others.map((o) => o.close()));
        }
      });
    },
    180_000,
  );

  it("refuses, naming them, when columns the console cannot do without are missing; changes nothing", async () => {
    await withDb(async (db) => {
      await db.sql.exec(`CREATE TABLE idempotency_records (id BIGSERIAL PRIMARY KEY, scope TEXT, idem_key TEXT, status TEXT);
                         INSERT INTO idempotency_records (scope, idem_key, status) VALUES ('a', 'k', 'completed');`);
      const err = await db.withSession((s) => migrate(s)).catch((e) => e);
      expect(err).toBeInstanceOf(MigrationError);
      expect(err.message).toMatch(
        /idempotency_records\.operation, idempotency_records\.idempotency_key, idempotency_records\.payload_hash, idempotency_records\.expires_at/,
      );
      const cols = await db.sql.query<{ c: string }>(
        `SELECT column_name AS c FROM information_schema.columns WHERE table_name = 'idempotency_records' ORDER BY 1`,
      );
      expect(cols.map((c) => c.c)).toEqual(["id", "idem_key", "scope", "status"]);
      expect(await db.sql.query(`SELECT to_regclass('idempotency_events') AS t`)).toEqual([{ t: null }]);
    });
  });

  it.skipIf(!usingPostgres)(
    "writers keep writing while it migrates: no statement fails, none waits past the lock timeout, even behind a long transaction",
    async () => {
      vi.stubEnv("MIGRATE_LOCK_TIMEOUT_MS", "400");
      await withDb(async (db) => {
        await db.sql.exec(SERVICE_DDL);
        const latencies: number[] = [];
        const failures: string[] = [];
        let running = true;
        const writer = async (lane: number) => {
          const c = new pg.Client({ connectionString: db.url });
          await c.connect();
          try {
            for (let i = 0; running; i++) {
              const t = performance.now();
              try {
                await c.query(
                  `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_headers, expires_at)
                 VALUES ($1, 'capture_payment', $2::text, md5($2::text) || md5($2::text), 'processing', '{"x":"y"}', now() + interval '1 day')`,
                  [`tenant:live${lane}`, `live-${lane}-${i}`],
                );
                await c.query(`UPDATE idempotency_records SET status = 'completed', response_code = 201 WHERE scope = $1 AND idempotency_key = $2::text`, [
                  `tenant:live${lane}`,
                  `live-${lane}-${i}`,
                ]);
              } catch (e) {
                failures.push((e as Error).message);
              }
              latencies.push(performance.now() - t);
            }
          } finally {
            await c.end();
          }
        };
        // A writer's long transaction: holds its row lock on the table for 2.5 s while the migration starts.
        const long = async () => {
          const c = new pg.Client({ connectionString: db.url });
          await c.connect();
          await c.query(`BEGIN`);
          await c.query(`UPDATE idempotency_records SET updated_at = now() WHERE id = 1`);
          await new Promise((r) => setTimeout(r, 2500));
          await c.query(`COMMIT`);
          await c.end();
        };
        const writers = [0, 1, 2].map(writer);
        const held = long();
        await new Promise((r) => setTimeout(r, 200));
        const logs: string[] = [];
        const r = await db.withSession((s) => migrate(s, { log: (l) => logs.push(l) }));
        running = false;
        await Promise.all([...writers, held]);
        expect(r.status.state).toBe("up_to_date");
        expect(failures).toEqual([]);
        latencies.sort((a, b) => a - b);
        const max = latencies[latencies.length - 1];
        console.log(
          `adopt under load: ${latencies.length} writer round trips, p50 ${latencies[Math.floor(latencies.length / 2)].toFixed(1)} ms, max ${max.toFixed(0)} ms; lock waits retried: ${logs.filter((l) => l.includes("trying again")).length}`,
        );
        // The long transaction made a DDL step wait and retry; the writers waited at most about one lock timeout each time.
        expect(logs.some((l) => l.includes("trying again"))).toBe(true);
        expect(max).toBeLessThan(400 + 1500);
        expect(latencies.length).toBeGreaterThan(100);
      });
    },
    300_000,
  );
});

describe("the concurrent-index plan (lib/db/online-ddl.ts)", () => {
  it("splits statements, respecting quotes, comments and $$ bodies", () => {
    expect(splitStatements(`-- a; comment\nSELECT 'x;y'; CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;\n/* c; */ SELECT "a;b"`)).toEqual([
      "-- a; comment\nSELECT 'x;y'",
      "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$",
      '/* c; */ SELECT "a;b"',
    ]);
  });

  it("moves index statements on existing shared tables out of the transaction (a DROP + CREATE pair becomes a replacement); leaves the rest", () => {
    const sql = `DROP INDEX IF EXISTS "idempotency_records_x_idx";
CREATE INDEX "idempotency_records_x_idx" ON "idempotency_records"("x" text_pattern_ops);
CREATE UNIQUE INDEX IF NOT EXISTS "u" ON "idempotency_events" ("a") WHERE "b";
CREATE INDEX "console_only_idx" ON "console_users"("email");
CREATE INDEX "later_idx" ON "outbox_messages"("topic")`;
    const plan = planOnline(sql, new Set(["idempotency_records", "idempotency_events"]));
    expect(plan.builds).toEqual([
      { name: "idempotency_records_x_idx", table: "idempotency_records", unique: false, definition: `("x" text_pattern_ops)`, replace: true },
      { name: "u", table: "idempotency_events", unique: true, definition: `("a") WHERE "b"`, replace: false },
    ]);
    expect(plan.transactional).toBe(`CREATE INDEX "console_only_idx" ON "console_users"("email");\nCREATE INDEX "later_idx" ON "outbox_messages"("topic")`);
  });
});
