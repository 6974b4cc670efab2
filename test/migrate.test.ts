import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "@/lib/db/client";
import { LOCKS } from "@/lib/db/locks";
import { DEFAULT_MIGRATIONS_DIR, MigrationError, migrate, migrationStatus } from "@/lib/db/migrate";
import { inTransaction, type SqlExecutor } from "@/lib/db/sql";
import { refreshRollups, verifyRecordCensus } from "@/lib/stats/rollups";
import { createEmptyTestDatabase, usingDatabaseServer, usingPostgres, type TestDatabase } from "./helpers/db";

const ROOT = path.resolve(import.meta.dirname, "..");
const FIRST = "20261130000000_shared_tables";

const tmpDirs: string[] = [];
afterAll(() => Promise.all(tmpDirs.map((d) => rm(d, { recursive: true, force: true }))));

async function tmpDir(prefix = "ic-migrate-"): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  tmpDirs.push(dir);
  return dir;
}

/** A copy of prisma/migrations that a test may edit. */
async function migrationsCopy(): Promise<string> {
  const dir = path.join(await tmpDir(), "migrations");
  await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

async function addMigration(dir: string, name: string, sql: string): Promise<void> {
  await mkdir(path.join(dir, name), { recursive: true });
  await writeFile(path.join(dir, name, "migration.sql"), sql);
}

async function withEmptyDb(fn: (db: TestDatabase) => Promise<void>): Promise<void> {
  const db = await createEmptyTestDatabase();
  try {
    await fn(db);
  } finally {
    await db.drop();
  }
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

interface Row {
  id: string;
  checksum: string;
  finished_at: Date | null;
  migration_name: string;
  logs: string | null;
  rolled_back_at: Date | null;
  started_at: Date;
  applied_steps_count: number;
}

const rows = (sql: SqlExecutor) => sql.query<Row>(`SELECT * FROM "_prisma_migrations" ORDER BY started_at, migration_name`);

const tables = async (sql: SqlExecutor) =>
  (await sql.query<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`)).map(
    (r) => r.name,
  );

const tableExists = async (sql: SqlExecutor, name: string) =>
  (await sql.query<{ t: string | null }>(`SELECT to_regclass($1)::text AS t`, [`"${name}"`]))[0].t !== null;

async function localMigrationNames(dir = DEFAULT_MIGRATIONS_DIR): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** What to expect when the migrate() call rejects: a MigrationError naming `migration`. */
async function expectMigrationError(p: Promise<unknown>, migration: string, message: RegExp): Promise<MigrationError> {
  const err = await p.then(
    () => expect.unreachable("migrate() should have failed"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MigrationError);
  expect((err as MigrationError).migration).toBe(migration);
  expect((err as MigrationError).message).toContain(migration);
  expect((err as MigrationError).message).toMatch(message);
  return err as MigrationError;
}

describe("fresh apply", () => {
  it("creates the tables and records each migration like prisma migrate deploy", async () => {
    await withEmptyDb(async (db) => {
      const logged: string[] = [];
      const result = await db.withSession((s) => migrate(s, { log: (l) => logged.push(l) }));
      const names = await localMigrationNames();
      expect(result.applied).toEqual(names);
      expect(logged).toEqual(names.map((n) => `applied ${n}`));
      expect(result.status.state).toBe("up_to_date");

      for (const t of ["idempotency_records", "idempotency_events", "reconciliation_items", "outbox_messages"]) {
        expect(await tableExists(db.sql, t), t).toBe(true);
      }

      const recorded = await rows(db.sql);
      expect(recorded.map((r) => r.migration_name)).toEqual(names);
      for (const r of recorded) {
        const bytes = await readFile(path.join(DEFAULT_MIGRATIONS_DIR, r.migration_name, "migration.sql"));
        expect(r.checksum).toBe(sha256(bytes));
        expect(r.checksum).toMatch(/^[0-9a-f]{64}$/);
        expect(r.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(r.applied_steps_count).toBe(1);
        expect(r.finished_at).toBeInstanceOf(Date);
        expect(r.finished_at!.getTime()).toBeGreaterThanOrEqual(r.started_at.getTime());
        expect(r.rolled_back_at).toBeNull();
        expect(r.logs).toBeNull();
      }
    });
  });

  it("creates _prisma_migrations with exactly Prisma's column types", async () => {
    await withEmptyDb(async (db) => {
      await db.withSession((s) => migrate(s));
      const columns = await db.sql.query(
        `SELECT column_name, data_type, character_maximum_length, is_nullable, column_default
           FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = '_prisma_migrations'
          ORDER BY ordinal_position`,
      );
      const col = (column_name: string, data_type: string, len: number | null, nullable: boolean, def: string | null = null) => ({
        column_name,
        data_type,
        character_maximum_length: len,
        is_nullable: nullable ? "YES" : "NO",
        column_default: def,
      });
      expect(columns).toEqual([
        col("id", "character varying", 36, false),
        col("checksum", "character varying", 64, false),
        col("finished_at", "timestamp with time zone", null, true),
        col("migration_name", "character varying", 255, false),
        col("logs", "text", null, true),
        col("rolled_back_at", "timestamp with time zone", null, true),
        col("started_at", "timestamp with time zone", null, false, "now()"),
        col("applied_steps_count", "integer", null, false, "0"),
      ]);
      const pk = await db.sql.query(
        `SELECT c.conname, array_agg(a.attname::text) AS cols
           FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
          WHERE c.conrelid = '"_prisma_migrations"'::regclass AND c.contype = 'p'
          GROUP BY c.conname`,
      );
      expect(pk).toEqual([{ conname: "_prisma_migrations_pkey", cols: ["id"] }]);
    });
  });
});

describe("rerun and concurrency", () => {
  it("a second run is a no-op: nothing applied, rows unchanged", async () => {
    await withEmptyDb(async (db) => {
      await db.withSession((s) => migrate(s));
      const before = await rows(db.sql);
      const logged: string[] = [];
      const again = await db.withSession((s) => migrate(s, { log: (l) => logged.push(l) }));
      expect(again.applied).toEqual([]);
      expect(logged).toEqual([]);
      expect(again.status.state).toBe("up_to_date");
      expect(await rows(db.sql)).toEqual(before);
    });
  });

  // Two migrations, the second slow, so that concurrent runners really overlap.
  async function slowMigrations(): Promise<string> {
    const dir = await migrationsCopy();
    await addMigration(dir, "20991231000000_slow", `SELECT pg_sleep(0.3);\nCREATE TABLE "slow_extra" ("id" INTEGER NOT NULL);\n`);
    return dir;
  }

  async function expectEachRecordedOnce(sql: SqlExecutor, dir: string, results: { applied: string[] }[]) {
    const names = await localMigrationNames(dir);
    // Between them the runners applied each migration exactly once...
    expect(results.flatMap((r) => r.applied).sort()).toEqual(names);
    // ...and the table has one finished, live row per migration.
    const recorded = await rows(sql);
    expect(recorded.map((r) => r.migration_name).sort()).toEqual(names);
    expect(recorded.every((r) => r.finished_at !== null && r.rolled_back_at === null && r.applied_steps_count === 1)).toBe(true);
    expect(await tableExists(sql, "slow_extra")).toBe(true);
  }

  it.runIf(usingPostgres)("Postgres: runners on separate connections started together both succeed", async () => {
    await withEmptyDb(async (db) => {
      const dir = await slowMigrations();
      const others: Database[] = await Promise.all([1, 2, 3].map(() => openDatabase({ mode: "postgres", url: db.url! }, { poolSize: 1 })));
      try {
        // They really ran at the same time: some runner waited for Prisma's advisory lock (it asks again every 200 ms).
        const waited: string[] = [];
        const running = Promise.all([db, ...others].map((handle) => handle.withSession((s) => migrate(s, { dir, log: (l) => waited.push(l) }))));
        const sawWaiter = () => waited.some((l) => l.includes("waiting for another migration runner"));
        const results = await running;
        expect(sawWaiter()).toBe(true);
        await expectEachRecordedOnce(db.sql, dir, results);
        // Every runner released Prisma's advisory lock.
        const locks = await db.sql.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = $1`, [LOCKS.migrate]);
        expect(locks).toEqual([]);
      } finally {
        await Promise.all(others.map((o) => o.close()));
      }
    });
  });

  it("runners sharing one session (PGlite's single connection) both succeed", async () => {
    await withEmptyDb(async (db) => {
      const dir = await slowMigrations();
      const results = await db.withSession((s) => Promise.all([migrate(s, { dir }), migrate(s, { dir })]));
      await expectEachRecordedOnce(db.sql, dir, results);
    });
  });

  it("runners sharing one session stay serialised even when every query yields to I/O", async () => {
    // Advisory locks are re-entrant within one session, so the lock alone does not
    // keep two runners on PGlite's single connection apart once anything awaits real I/O.
    await withEmptyDb(async (db) => {
      const dir = await slowMigrations();
      await db.withSession(async (s) => {
        const tick = () => new Promise((r) => setImmediate(r));
        const yielding: SqlExecutor = {
          dialect: s.dialect,
          query: async (text, params) => (await tick(), s.query(text, params)),
          exec: async (script) => (await tick(), s.exec(script)),
        };
        const results = await Promise.all([migrate(yielding, { dir }), migrate(yielding, { dir })]);
        await expectEachRecordedOnce(s, dir, results); // inside the session: db.sql would wait for it
      });
    });
  });
});

describe("refusals and failures", () => {
  it("refuses a migration edited after it was applied, and changes nothing", async () => {
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      await db.withSession((s) => migrate(s, { dir }));
      // A new migration is pending too: it must not be applied while another was edited.
      await addMigration(dir, "20991231000000_next", `CREATE TABLE "next_extra" ("id" INTEGER NOT NULL);\n`);
      const file = path.join(dir, FIRST, "migration.sql");
      const bytes = await readFile(file);
      bytes[bytes.length - 1] = bytes[bytes.length - 1] === 0x20 ? 0x0a : 0x20; // one byte
      await writeFile(file, bytes);

      const rowsBefore = await rows(db.sql);
      const tablesBefore = await tables(db.sql);
      await expectMigrationError(
        db.withSession((s) => migrate(s, { dir })),
        FIRST,
        /modified/,
      );
      expect(await rows(db.sql)).toEqual(rowsBefore);
      expect(await tables(db.sql)).toEqual(tablesBefore);
      expect(await tableExists(db.sql, "next_extra")).toBe(false);

      const status = await migrationStatus(db.sql, dir);
      expect(status.state).toBe("modified");
      expect(status.modified).toEqual([FIRST]);
    });
  });

  it("rolls a failing migration back, records it, and applies it once fixed", async () => {
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      const broken = "20991231000000_broken";
      await addMigration(
        dir,
        broken,
        `CREATE TABLE "partial_a" ("id" INTEGER NOT NULL);\n` +
          `ALTER TABLE "idempotency_records" ADD COLUMN "partial_col" TEXT;\n` +
          `INSERT INTO "no_such_table" VALUES (1);\n` +
          `CREATE TABLE "partial_b" ("id" INTEGER NOT NULL);\n`,
      );
      await db.withSession(async (s) => {
        await expectMigrationError(migrate(s, { dir }), broken, /failed and was rolled back: .*no_such_table/);
        // The same session is usable afterwards (not left in an aborted transaction).
        expect(await s.query(`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
      });

      // The first migration went through; nothing of the broken one survived.
      expect(await tableExists(db.sql, "idempotency_records")).toBe(true);
      expect(await tableExists(db.sql, "partial_a")).toBe(false);
      expect(await tableExists(db.sql, "partial_b")).toBe(false);
      const cols = await db.sql.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'idempotency_records' AND column_name = 'partial_col'`);
      expect(cols).toEqual([]);

      const recorded = await rows(db.sql);
      const names = await localMigrationNames(await migrationsCopy());
      expect(recorded.map((r) => r.migration_name)).toEqual([...names, broken]);
      const failed = recorded[names.length];
      expect(failed.rolled_back_at).toBeInstanceOf(Date);
      expect(failed.finished_at).toBeNull();
      expect(failed.applied_steps_count).toBe(0);
      expect(failed.logs).toMatch(/no_such_table/);
      expect(failed.checksum).toBe(sha256(await readFile(path.join(dir, broken, "migration.sql"))));

      // Rolled back means pending again, not "failed": fixing the file is enough.
      const status = await migrationStatus(db.sql, dir);
      expect(status.state).toBe("pending");
      expect(status.pending).toEqual([broken]);

      const fixed = `CREATE TABLE "partial_a" ("id" INTEGER NOT NULL);\nALTER TABLE "idempotency_records" ADD COLUMN "partial_col" TEXT;\n`;
      await writeFile(path.join(dir, broken, "migration.sql"), fixed);
      const rerun = await db.withSession((s) => migrate(s, { dir }));
      expect(rerun.applied).toEqual([broken]);
      expect(rerun.status.state).toBe("up_to_date");
      expect(await tableExists(db.sql, "partial_a")).toBe(true);

      const after = await rows(db.sql);
      expect(after.slice(0, recorded.length)).toEqual(recorded); // the history is kept
      expect(after).toHaveLength(recorded.length + 1);
      expect(after.at(-1)).toMatchObject({
        migration_name: broken,
        checksum: sha256(Buffer.from(fixed)),
        rolled_back_at: null,
        applied_steps_count: 1,
        logs: null,
      });
      expect(after.at(-1)!.finished_at).toBeInstanceOf(Date);
    });
  });

  it("refuses a half-applied migration (started, neither finished nor rolled back)", async () => {
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      await db.withSession((s) => migrate(s, { dir }));
      const half = "20991231000000_half";
      const sql = `CREATE TABLE "half_extra" ("id" INTEGER NOT NULL);\n`;
      await addMigration(dir, half, sql);
      // What a runner that crashed mid-migration outside a transaction leaves behind.
      await db.sql.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
         VALUES (gen_random_uuid()::text, $1, $2, now(), 0)`,
        [sha256(Buffer.from(sql)), half],
      );
      const before = await rows(db.sql);

      await expectMigrationError(
        db.withSession((s) => migrate(s, { dir })),
        half,
        /never finished/,
      );
      expect(await rows(db.sql)).toEqual(before);
      expect(await tableExists(db.sql, "half_extra")).toBe(false);
      const status = await migrationStatus(db.sql, dir);
      expect(status.state).toBe("failed");
      expect(status.failed).toEqual([half]);

      // The way out the error message names: mark it rolled back, then rerun.
      await db.sql.query(`UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = $1`, [half]);
      expect((await db.withSession((s) => migrate(s, { dir }))).applied).toEqual([half]);
      expect(await tableExists(db.sql, "half_extra")).toBe(true);
    });
  });
});

describe("migrationStatus", () => {
  it("reports pending, up_to_date, modified and unknown_applied, read-only", async () => {
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      const names = await localMigrationNames(dir);

      const fresh = await migrationStatus(db.sql, dir);
      expect(fresh).toMatchObject({ state: "pending", local: names.length, applied: [], pending: names, modified: [], failed: [] });
      expect(await tableExists(db.sql, "_prisma_migrations")).toBe(false); // status creates nothing

      await db.withSession((s) => migrate(s, { dir }));
      expect(await migrationStatus(db.sql, dir)).toMatchObject({ state: "up_to_date", applied: names, pending: [] });

      await addMigration(dir, "20991231000000_next", `SELECT 1;\n`);
      expect(await migrationStatus(db.sql, dir)).toMatchObject({ state: "pending", pending: ["20991231000000_next"] });

      await writeFile(path.join(dir, FIRST, "migration.sql"), "-- edited\n", { flag: "a" });
      expect(await migrationStatus(db.sql, dir)).toMatchObject({ state: "modified", modified: [FIRST] });

      const onlyNewer = await tmpDir();
      await addMigration(onlyNewer, "20991231000000_next", `SELECT 1;\n`);
      await db.withSession((s) => migrate(s, { dir: onlyNewer }));
      // The database knows the real migrations, this (other) code does not: not up to date.
      expect(await migrationStatus(db.sql, onlyNewer)).toMatchObject({ state: "unknown_applied", unknown: names });
    });
  });
});

// ---------------------------------------------------------------------------
// The real script, as an operator runs it.

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

function runScript(args: string[], env: Record<string, string | undefined>, cwd = ROOT): Promise<RunResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.DATABASE_URL;
  delete childEnv.PGLITE_DIR;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(ROOT, "node_modules/.bin/tsx"), [path.join(ROOT, "scripts/migrate.ts"), ...args], {
      cwd,
      env: childEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    // The script must end by itself (an open PGlite or pool would keep it alive).
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, 45_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

function expectExit(r: RunResult, code: number) {
  const output = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  expect(r.timedOut, `the script did not exit by itself\n${output}`).toBe(false);
  expect(r.code, output).toBe(code);
}

describe("scripts/migrate.ts end to end", () => {
  // Reads no DATABASE_URL: the embedded suite runs it; the PostgreSQL suite would only run it again.
  // Five processes that each load PGlite: a minute or more while CI runs the database modes side by side.
  it.skipIf(usingDatabaseServer)(
    "embedded PGlite in a temporary PGLITE_DIR: migrate, status, rerun, failure",
    async () => {
      const base = await tmpDir("ic-migrate-script-");
      const env = { PGLITE_DIR: path.join(base, "pglite") };
      const names = await localMigrationNames();

      const before = await runScript(["--status"], env);
      expectExit(before, 1);
      expect(before.stdout).toMatch(/^pending: 0 applied/m);

      const first = await runScript([], env);
      expectExit(first, 0);
      for (const n of names) expect(first.stdout).toContain(`applied ${n}\n`);
      expect(first.stdout).toContain(`${names.length} applied, database up to date`);
      expect(first.stderr).toMatch(/PGlite does not lock its folder/);

      const status = await runScript(["--status"], env);
      expectExit(status, 0);
      expect(status.stdout).toMatch(/^up_to_date: /m);

      const again = await runScript([], env);
      expectExit(again, 0);
      expect(again.stdout).not.toMatch(/^applied /m);
      expect(again.stdout).toContain("no pending migrations");

      // The folder really holds the migrated database.
      const db = await openDatabase({ mode: "embedded", dataDir: env.PGLITE_DIR });
      try {
        expect(await tableExists(db.sql, "idempotency_records")).toBe(true);
        expect((await rows(db.sql)).map((r) => r.migration_name)).toEqual(names);
      } finally {
        await db.close();
      }

      // A failing migration: exit 1 with the MigrationError, and still exits by itself.
      // (The script reads prisma/migrations relative to its working directory.)
      const cwd = path.join(base, "project");
      await cp(DEFAULT_MIGRATIONS_DIR, path.join(cwd, "prisma/migrations"), { recursive: true });
      await addMigration(path.join(cwd, "prisma/migrations"), "20991231000000_broken", `SELECT * FROM "no_such_table";\n`);
      const failed = await runScript([], env, cwd);
      expectExit(failed, 1);
      expect(failed.stderr).toMatch(/MigrationError: migration 20991231000000_broken failed and was rolled back: .*no_such_table/);
    },
    240_000,
  );

  it.runIf(usingPostgres)("Postgres: migrate, status and rerun against a throwaway database", async () => {
    await withEmptyDb(async (db) => {
      const env = { DATABASE_URL: db.url! };
      const names = await localMigrationNames();

      const first = await runScript([], env);
      expectExit(first, 0);
      for (const n of names) expect(first.stdout).toContain(`applied ${n}\n`);
      expect(first.stdout).toContain(`${names.length} applied, database up to date`);
      expect(first.stderr).not.toMatch(/PGlite/);

      expect(await tableExists(db.sql, "idempotency_records")).toBe(true);
      expect((await rows(db.sql)).map((r) => r.migration_name)).toEqual(names);

      const status = await runScript(["--status"], env);
      expectExit(status, 0);
      expect(status.stdout).toMatch(/^up_to_date: /m);

      const again = await runScript([], env);
      expectExit(again, 0);
      expect(again.stdout).toContain("no pending migrations");

      // An edited migration is refused with exit 1.
      await db.sql.query(`UPDATE "_prisma_migrations" SET checksum = repeat('0', 64) WHERE migration_name = $1`, [FIRST]);
      const refused = await runScript([], env);
      expectExit(refused, 1);
      expect(refused.stderr).toMatch(new RegExp(`MigrationError: migration ${FIRST} was modified`));
      const badStatus = await runScript(["--status"], env);
      expectExit(badStatus, 1);
      expect(badStatus.stdout).toMatch(/^modified: /m);
    });
  });
});

describe("data the migrations move", () => {
  const MOVE = "20261201010000_console_requests";

  it("the console's own requests leave the writers' tables: records, events and rollup counts move to console_requests", async () => {
    await withEmptyDb(async (db) => {
      // The schema as it was before the move, with what the console of that time wrote into it.
      const all = await migrationsCopy();
      const before = path.join(await tmpDir(), "migrations");
      await mkdir(before);
      for (const name of await localMigrationNames(all)) if (name < MOVE) await cp(path.join(all, name), path.join(before, name), { recursive: true });
      await db.withSession((s) => migrate(s, { dir: before }));

      const [{ id: userId }] = await db.sql.query<{ id: string }>(
        `INSERT INTO console_users (email, roles) VALUES ('op@example.test', ARRAY['operator']) RETURNING id::text AS id`,
      );
      const record = (scope: string, operation: string, key: string, status: string) =>
        db.sql.query<{ id: string }>(
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_headers, response_body, expires_at)
           VALUES ($1, $2, $3, 'h', $4, 200, '[["content-type","application/json"]]', '{"ok":true}', now() + interval '1 day') RETURNING id::text AS id`,
          [scope, operation, key, status],
        );
      const [mine] = await record(`console:user:${userId}`, "console.records.resolve", "k-1", "completed");
      const [pendingOne] = await record(`console:user:${userId}`, "console.records.reconcile", "k-2", "pending");
      await record("console:user:999999", "console.records.resolve", "k-3", "completed"); // its user is gone
      const [writers] = await record("tenant:acme", "capture_payment", "k-1", "completed");
      const lookalike = await record("console:user:abc", "console.records.resolve", "k-4", "completed"); // not the console's pattern
      for (const [id, scope, op] of [
        [mine.id, `console:user:${userId}`, "console.records.resolve"],
        [writers.id, "tenant:acme", "capture_payment"],
      ])
        await db.sql.query(`INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind) VALUES ($1, $2, $3, 'k-1', 'reserved')`, [
          id,
          scope,
          op,
        ]);
      // A console event whose record was never written (events may come apart from records).
      await db.sql.query(
        `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind) VALUES (NULL, $1, 'console.records.hold', 'k-9', 'reserved')`,
        [`console:user:${userId}`],
      );
      // Their minute counts, as the rollups' writer wrote them then (the guard trigger admits it).
      await db.withSession((s) =>
        inTransaction(s, async () => {
          await s.query(`SELECT set_config('idempotency_console.rollup_writer', 'census', true)`);
          for (const [scope, op] of [
            [`console:user:${userId}`, "console.records.resolve"],
            ["tenant:acme", "capture_payment"],
          ])
            await s.query(`INSERT INTO event_rollups (bucket, operation, scope, kind, count) VALUES (date_trunc('minute', now()), $1, $2, 'reserved', 1)`, [
              op,
              scope,
            ]);
        }),
      );

      await db.withSession((s) => migrate(s, { dir: all }));

      const moved = await db.sql.query<{ user_id: string; action: string; idempotency_key: string; status: string; response_body: string }>(
        `SELECT user_id::text AS user_id, action, idempotency_key, status, response_body FROM console_requests ORDER BY idempotency_key`,
      );
      // A pending console request had no provider of its own to wait for: it is kept as failed.
      expect(moved).toEqual([
        { user_id: userId, action: "records.resolve", idempotency_key: "k-1", status: "completed", response_body: '{"ok":true}' },
        { user_id: userId, action: "records.reconcile", idempotency_key: "k-2", status: "failed", response_body: '{"ok":true}' },
      ]);
      const left = await db.sql.query<{ id: string }>(`SELECT id::text AS id FROM idempotency_records ORDER BY id`);
      expect(left.map((r) => r.id)).toEqual([writers.id, lookalike[0].id]);
      expect(left.map((r) => r.id)).not.toContain(pendingOne.id);
      const events = await db.sql.query<{ scope: string }>(`SELECT scope FROM idempotency_events`);
      expect(events).toEqual([{ scope: "tenant:acme" }]);
      const rollups = await db.sql.query<{ scope: string }>(`SELECT DISTINCT scope FROM event_rollups UNION SELECT DISTINCT scope FROM event_rollup_tiers`);
      expect(rollups.map((r) => r.scope)).toEqual(["tenant:acme"]);
      // The census the next migration recounts agrees with the table.
      const census = await db.sql.query<{ n: string }>(`SELECT COALESCE(sum("count"), 0)::text AS n FROM record_census`);
      expect(census[0].n).toBe("2");
    });
  });

  it("the census learns which records are failed: members and hours backfilled from the records, then kept by this version's refresh", async () => {
    const FAILED = "20261206000000_census_failed";
    await withEmptyDb(async (db) => {
      const all = await migrationsCopy();
      const before = path.join(await tmpDir(), "migrations");
      await mkdir(before);
      for (const name of await localMigrationNames(all)) if (name < FAILED) await cp(path.join(all, name), path.join(before, name), { recursive: true });
      await db.withSession((s) => migrate(s, { dir: before }));
      // Records of every status in two operations and a few expiry hours; the previous version's
      // census counts them (its members backfill did, as that migration's writer).
      await db.sql.exec(`INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
        SELECT 'tenant:m', CASE WHEN g % 2 = 0 THEN 'capture_payment' ELSE 'create_order' END, 'k-' || g, 'h',
               (ARRAY['completed', 'failed', 'pending', 'processing', 'failed'])[1 + g % 5], now() + make_interval(hours => g % 7)
          FROM generate_series(1, 60) g`);
      await db.withSession((s) =>
        inTransaction(s, async () => {
          await s.query(`SELECT set_config('idempotency_console.rollup_writer', 'members', true)`);
          await s.exec(`INSERT INTO record_census_members (record_id, operation, expires_hour)
                          SELECT id, operation, date_bin(interval '1 hour', expires_at, timestamptz '1970-01-01 00:00:00+00') FROM idempotency_records;
                        INSERT INTO record_census (operation, expires_hour, count) SELECT operation, expires_hour, count(*) FROM record_census_members GROUP BY 1, 2;
                        INSERT INTO rollup_state (name, watermark) SELECT 'records', max(record_id) FROM record_census_members
                          ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark;`);
        }),
      );

      await db.withSession((s) => migrate(s, { dir: all }));

      const diff = await db.sql.query(
        `SELECT * FROM (SELECT operation, date_bin(interval '1 hour', expires_at, timestamptz '1970-01-01 00:00:00+00') AS h, count(*) FILTER (WHERE status = 'failed') AS f
                          FROM idempotency_records GROUP BY 1, 2) r
           FULL JOIN record_census c ON c.operation = r.operation AND c.expires_hour = r.h
          WHERE r.f IS DISTINCT FROM c.failed`,
      );
      expect(diff).toEqual([]);
      const [{ failed, members }] = await db.sql.query<{ failed: string; members: string }>(
        `SELECT count(*) FILTER (WHERE m.failed)::text AS failed, count(*) FILTER (WHERE m.failed = (r.status = 'failed'))::text AS members
           FROM record_census_members m JOIN idempotency_records r ON r.id = m.record_id`,
      );
      expect({ failed, members }).toEqual({ failed: "24", members: "60" });
      // The previous version's writer is refused now; this version's refresh keeps the census exact.
      await expect(
        db.withSession((s) =>
          inTransaction(s, async () => {
            await s.query(`SELECT set_config('idempotency_console.rollup_writer', 'members', true)`);
            await s.exec(`DELETE FROM record_census_members`);
          }),
        ),
      ).rejects.toThrow(/upgrade the console/);
      await db.sql.exec(`UPDATE idempotency_records SET status = 'failed', updated_at = now() WHERE status = 'processing'`);
      await db.withSession((s) => refreshRollups(s));
      expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
      const [{ n }] = await db.sql.query<{ n: string }>(`SELECT sum(failed)::text AS n FROM record_census`);
      expect(n).toBe("36");
    });
  });
});
