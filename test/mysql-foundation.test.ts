import { createHash } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase, type Database } from "@/lib/db/client";
import { MYSQL, POSTGRES } from "@/lib/db/dialect";
import { healthReport } from "@/lib/db/health";
import { LOCKS, sessionLock, sessionUnlock, transactionLock, trySessionLock } from "@/lib/db/locks";
import { MigrationError, migrate, migrationStatus, MYSQL_MIGRATIONS_DIR } from "@/lib/db/migrate";
import { createMysqlPool, parseMysqlVersion, unsupportedMysql } from "@/lib/db/mysql";
import { splitMysqlStatements } from "@/lib/db/mysql-script";
import { paramList } from "@/lib/db/params";
import { execute, inSnapshot, inTransaction, txExecutor, type SqlExecutor } from "@/lib/db/sql";
import { createEmptyTestDatabase, createTestDatabase, usingMysql, type TestDatabase } from "./helpers/db";

/**
 * What the MySQL/MariaDB stores will stand on (ADR 0012), proven on a real server: the runner
 * (recorded as Prisma records it, Prisma's lock, edited and failed migrations, bounded lock
 * waits, adoption), the schema's guarantees (unique key, append-only audit, four-eyes, the
 * partial-index stand-ins, the rollups' guard), the Prisma model API, the executor's types, the
 * lock primitives and snapshots. Runs when DATABASE_URL is a mysql:// URL (.ci/run does);
 * the parts that need no server run everywhere.
 */

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tmpDirs: string[] = [];
afterAll(() => Promise.all(tmpDirs.map((d) => rm(d, { recursive: true, force: true }))));
afterEach(() => vi.unstubAllEnvs());

async function migrationsCopy(): Promise<string> {
  const dir = path.join(await mkdtemp(path.join(tmpdir(), "ic-mysql-migrate-")), "migrations");
  tmpDirs.push(path.dirname(dir));
  await cp(MYSQL_MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

async function addMigration(dir: string, name: string, sql: string): Promise<void> {
  await mkdir(path.join(dir, name), { recursive: true });
  await writeFile(path.join(dir, name, "migration.sql"), sql);
}

const localNames = async (dir = MYSQL_MIGRATIONS_DIR) =>
  (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();

async function withEmptyDb(fn: (db: TestDatabase) => Promise<void>): Promise<void> {
  const db = await createEmptyTestDatabase();
  try {
    await fn(db);
  } finally {
    await db.drop();
  }
}

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
const rows = (sql: SqlExecutor) => sql.query<Row>(`SELECT * FROM _prisma_migrations ORDER BY started_at, migration_name`);
const tables = async (sql: SqlExecutor) =>
  (await sql.query<{ t: string }>(`SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1`)).map((r) => r.t);
const tableExists = async (sql: SqlExecutor, name: string) => (await tables(sql)).includes(name);
const columnsOf = async (sql: SqlExecutor, table: string) =>
  (
    await sql.query<{ c: string }>(
      `SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
      [table],
    )
  ).map((r) => r.c);

/** The error a promise rejects with. */
async function rejection(p: Promise<unknown>): Promise<Error & { errno?: number; code?: string; sqlMessage?: string }> {
  return p.then(
    () => expect.unreachable("should have failed"),
    (e: unknown) => e as Error,
  );
}

// ---------------------------------------------------------------------------------------
// Without a server.

describe("MySQL statements and versions (no server needed)", () => {
  it("splits scripts as the mysql client does: quotes, comments, BEGIN … END bodies kept whole", () => {
    const script = `-- a comment; with a semicolon
CREATE TABLE \`a;b\` (x VARCHAR(10) DEFAULT 'it''s; \\'x\\'' COMMENT "q;\\"");
# a hash comment;
/* a block; comment */
CREATE TRIGGER t BEFORE INSERT ON a FOR EACH ROW
BEGIN
  IF NEW.x = 'y' THEN
    SET NEW.x = CASE WHEN 1 THEN 'a' ELSE 'b' END;
  END IF;
  CASE NEW.x WHEN 'a' THEN SET @z = 1; ELSE SET @z = 2; END CASE;
  BEGIN SET @w = 1; END;
END;
START TRANSACTION;
BEGIN;
SELECT 1;
COMMIT;
-- only a comment after the last statement;
`;
    const out = splitMysqlStatements(script);
    expect(out).toHaveLength(6);
    expect(out[0]).toMatch(/^-- a comment; with a semicolon\nCREATE TABLE `a;b` \(.*"q;\\""\)$/);
    expect(out[1]).toMatch(/^# a hash comment;[\s\S]*CREATE TRIGGER t[\s\S]*END CASE;\n {2}BEGIN SET @w = 1; END;\nEND$/);
    expect(out.slice(2)).toEqual(["START TRANSACTION", "BEGIN", "SELECT 1", "COMMIT"]);
  });

  it("reads server versions and refuses servers older than MariaDB 10.6 and MySQL 8.0.16", () => {
    expect(parseMysqlVersion("10.11.19-MariaDB-0+deb12u1")).toEqual({ engine: "MariaDB", version: "10.11.19" });
    expect(parseMysqlVersion("8.0.36")).toEqual({ engine: "MySQL", version: "8.0.36" });
    expect(parseMysqlVersion("8.4.2-log")).toEqual({ engine: "MySQL", version: "8.4.2" });
    expect(unsupportedMysql(parseMysqlVersion("10.6.0-MariaDB"))).toBeNull();
    expect(unsupportedMysql(parseMysqlVersion("11.4.2-MariaDB"))).toBeNull();
    expect(unsupportedMysql(parseMysqlVersion("8.0.16"))).toBeNull();
    expect(unsupportedMysql(parseMysqlVersion("9.1.0"))).toBeNull();
    expect(unsupportedMysql(parseMysqlVersion("10.5.26-MariaDB"))).toMatch(/MariaDB 10\.5\.26 is too old: .*10\.6\.0/);
    expect(unsupportedMysql(parseMysqlVersion("8.0.15"))).toMatch(/MySQL 8\.0\.15 is too old: .*8\.0\.16/);
  });

  it("spells placeholders, times, integers, cursors and lists per dialect", () => {
    const my = paramList(MYSQL);
    const pgp = paramList(POSTGRES);
    const at = new Date("2026-12-01T09:00:00.123Z");
    expect([my.add("a"), my.time(at), my.bigint(12n), my.list(["x", "y"])]).toEqual([
      "?",
      "CAST(STR_TO_DATE(?, '%Y-%m-%dT%H:%i:%s.%fZ') AS DATETIME(6))",
      "CAST(? AS SIGNED)",
      "?, ?",
    ]);
    expect(my.values).toEqual(["a", "2026-12-01T09:00:00.123Z", "12", "x", "y"]);
    expect([pgp.add("a"), pgp.list(["x", "y"]), pgp.list([])]).toEqual(["$1", "$2, $3", "NULL"]);
    expect(MYSQL.cursorTime("r.created_at")).toBe("DATE_FORMAT(r.created_at, '%Y-%m-%dT%H:%i:%s.%fZ')");
  });
});

// ---------------------------------------------------------------------------------------
// The runner on a real server.

describe.runIf(usingMysql)("the migration runner on MySQL/MariaDB", () => {
  it("applies prisma/mysql/migrations to a fresh database and records each as Prisma's schema engine does", async () => {
    await withEmptyDb(async (db) => {
      const logged: string[] = [];
      const result = await db.withSession((s) => migrate(s, { log: (l) => logged.push(l) }));
      const names = await localNames();
      expect(names.length).toBeGreaterThanOrEqual(2);
      expect(result.applied).toEqual(names);
      expect(logged).toEqual(names.map((n) => `applied ${n}`));
      expect(result.status.state).toBe("up_to_date");
      for (const t of ["idempotency_records", "idempotency_events", "reconciliation_items", "outbox_messages", "audit_log", "console_locks"]) {
        expect(await tableExists(db.sql, t), t).toBe(true);
      }
      const recorded = await rows(db.sql);
      expect(recorded.map((r) => r.migration_name)).toEqual(names);
      for (const r of recorded) {
        expect(r.checksum).toBe(sha256(await readFile(path.join(MYSQL_MIGRATIONS_DIR, r.migration_name, "migration.sql"))));
        expect(r.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(Number(r.applied_steps_count)).toBe(1);
        expect(r.finished_at).toBeInstanceOf(Date);
        expect(r.finished_at!.getTime()).toBeGreaterThanOrEqual(r.started_at.getTime());
        expect(Math.abs(r.started_at.getTime() - Date.now())).toBeLessThan(120_000); // UTC, read as UTC
        expect(r.rolled_back_at).toBeNull();
        expect(r.logs).toBeNull();
      }

      // _prisma_migrations exactly as prisma-engines (flavour/mysql.rs) creates it.
      const columns = await db.sql.query<{ name: string; type: string; nullable: string; def: string | null }>(
        `SELECT COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, COLUMN_DEFAULT AS def
           FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_prisma_migrations' ORDER BY ORDINAL_POSITION`,
      );
      // MariaDB writes int(10) and 'NULL' for "no default" where MySQL 8 writes int and NULL.
      const normal = columns.map((c) => ({
        ...c,
        type: c.type.replace(/^int\(\d+\)/, "int"),
        def: c.def === null || c.def === "NULL" ? null : c.def.toLowerCase(),
      }));
      expect(normal).toEqual([
        { name: "id", type: "varchar(36)", nullable: "NO", def: null },
        { name: "checksum", type: "varchar(64)", nullable: "NO", def: null },
        { name: "finished_at", type: "datetime(3)", nullable: "YES", def: null },
        { name: "migration_name", type: "varchar(255)", nullable: "NO", def: null },
        { name: "logs", type: "text", nullable: "YES", def: null },
        { name: "rolled_back_at", type: "datetime(3)", nullable: "YES", def: null },
        { name: "started_at", type: "datetime(3)", nullable: "NO", def: "current_timestamp(3)" },
        { name: "applied_steps_count", type: "int unsigned", nullable: "NO", def: "0" },
      ]);
      const [table] = await db.sql.query<{ collation: string }>(
        `SELECT TABLE_COLLATION AS collation FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_prisma_migrations'`,
      );
      expect(table.collation).toBe("utf8mb4_unicode_ci");
      const pk = await db.sql.query(
        `SELECT COLUMN_NAME AS c FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_prisma_migrations' AND INDEX_NAME = 'PRIMARY'`,
      );
      expect(pk).toEqual([{ c: "id" }]);

      // A second run applies nothing and changes no row.
      const again = await db.withSession((s) => migrate(s, { log: (l) => logged.push(l) }));
      expect(again.applied).toEqual([]);
      expect(await rows(db.sql)).toEqual(recorded);
    });
  });

  it("runners on separate connections started together: one waits for Prisma's lock, each migration is applied once", async () => {
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      await addMigration(dir, "20991231000000_slow", "SELECT SLEEP(0.5);\nCREATE TABLE `slow_extra` (`id` INT NOT NULL);\n");
      const others: Database[] = await Promise.all([1, 2, 3].map(() => openDatabase({ mode: "mysql", url: db.url! }, { poolSize: 1 })));
      try {
        const logged: string[] = [];
        const results = await Promise.all([db, ...others].map((h) => h.withSession((s) => migrate(s, { dir, log: (l) => logged.push(l) }))));
        expect(logged).toContain("waiting for another migration runner to finish");
        const names = await localNames(dir);
        expect(results.flatMap((r) => r.applied).sort()).toEqual(names);
        const recorded = await rows(db.sql);
        expect(recorded.map((r) => r.migration_name).sort()).toEqual(names);
        expect(recorded.every((r) => r.finished_at !== null && r.rolled_back_at === null && Number(r.applied_steps_count) === 1)).toBe(true);
        expect(await tableExists(db.sql, "slow_extra")).toBe(true);
        // Every runner released it (IS_USED_LOCK names the holder's connection, NULL when free).
        expect(await db.sql.query(`SELECT IS_USED_LOCK('prisma_migrate') IS NULL AS free`)).toEqual([{ free: 1 }]);
      } finally {
        await Promise.all(others.map((o) => o.close()));
      }
    });
  });

  it("refuses a migration edited after it was applied, and changes nothing", async () => {
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      await db.withSession((s) => migrate(s, { dir }));
      await addMigration(dir, "20991231000000_next", "CREATE TABLE `next_extra` (`id` INT NOT NULL);\n");
      const first = (await localNames(dir))[0];
      await writeFile(path.join(dir, first, "migration.sql"), "\n", { flag: "a" });
      const before = { rows: await rows(db.sql), tables: await tables(db.sql) };
      const err = await rejection(db.withSession((s) => migrate(s, { dir })));
      expect(err).toBeInstanceOf(MigrationError);
      expect((err as MigrationError).migration).toBe(first);
      expect(err.message).toMatch(/was modified after it was applied/);
      expect({ rows: await rows(db.sql), tables: await tables(db.sql) }).toEqual(before);
      expect(await migrationStatus(db.sql, dir)).toMatchObject({ state: "modified", modified: [first] });
    });
  });

  it("a failing migration is left as Prisma leaves it (no transactional DDL): refused until marked rolled back, then applied once fixed", async () => {
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      const broken = "20991231000000_broken";
      await addMigration(
        dir,
        broken,
        "CREATE TABLE `partial_a` (`id` INT NOT NULL);\nINSERT INTO `no_such_table` VALUES (1);\nCREATE TABLE `partial_b` (`id` INT NOT NULL);\n",
      );
      await db.withSession(async (s) => {
        const err = await rejection(migrate(s, { dir }));
        expect(err).toBeInstanceOf(MigrationError);
        expect((err as MigrationError).migration).toBe(broken);
        expect(err.message).toMatch(/failed at statement 2 of 3: .*no_such_table.*statements 1–1 were applied and stay/);
        expect(await s.query(`SELECT 1 AS one`)).toEqual([{ one: 1 }]); // the session is usable
      });
      // DDL commits: the statement before the failure stays, the one after never ran.
      expect(await tableExists(db.sql, "partial_a")).toBe(true);
      expect(await tableExists(db.sql, "partial_b")).toBe(false);
      const failed = (await rows(db.sql)).find((r) => r.migration_name === broken)!;
      expect(failed).toMatchObject({ finished_at: null, rolled_back_at: null });
      expect(Number(failed.applied_steps_count)).toBe(0);
      expect(failed.logs).toMatch(
        /^A migration failed to apply\.[\s\S]*Migration name: 20991231000000_broken\n\nDatabase error code: 1146\n\nDatabase error:\n.*no_such_table/,
      );
      expect(failed.logs).toMatch(/Please check the query number 2 from the migration file\.$/);
      expect(await migrationStatus(db.sql, dir)).toMatchObject({ state: "failed", failed: [broken] });

      // Every later run refuses, naming the failure and the way out, and changes nothing.
      const before = await rows(db.sql);
      const refused = await rejection(db.withSession((s) => migrate(s, { dir })));
      expect(refused.message).toMatch(
        /20991231000000_broken started but never finished \(it failed: .*no_such_table.*\).*UPDATE _prisma_migrations SET rolled_back_at/,
      );
      expect(await rows(db.sql)).toEqual(before);

      // The way out: repair, mark rolled back, fix the file, migrate again.
      await db.sql.query(`DROP TABLE partial_a`);
      await db.sql.query(`UPDATE _prisma_migrations SET rolled_back_at = UTC_TIMESTAMP(3) WHERE migration_name = ? AND finished_at IS NULL`, [broken]);
      const fixed = "CREATE TABLE `partial_a` (`id` INT NOT NULL);\nCREATE TABLE `partial_b` (`id` INT NOT NULL);\n";
      await writeFile(path.join(dir, broken, "migration.sql"), fixed);
      expect((await db.withSession((s) => migrate(s, { dir }))).applied).toEqual([broken]);
      const after = await rows(db.sql);
      expect(after).toHaveLength(before.length + 1); // the failed attempt stays in the history
      expect(after.at(-1)).toMatchObject({ migration_name: broken, checksum: sha256(Buffer.from(fixed)), rolled_back_at: null, logs: null });
      expect(await tableExists(db.sql, "partial_b")).toBe(true);
    });
  });

  it("bounds every lock wait: a migration behind a transaction that holds its table waits lock_wait_timeout, then tries again", async () => {
    vi.stubEnv("MIGRATE_LOCK_TIMEOUT_MS", "1000");
    await withEmptyDb(async (db) => {
      const dir = await migrationsCopy();
      await db.withSession((s) => migrate(s, { dir }));
      await addMigration(dir, "20991231000000_alter", "ALTER TABLE `idempotency_records` ADD COLUMN `extra_col` INT NULL;\n");
      const logged: string[] = [];
      await db.withSession(async (writer) => {
        // A writer's open transaction that read the table holds its metadata lock.
        await writer.exec("START TRANSACTION");
        await writer.query("SELECT COUNT(*) AS n FROM idempotency_records");
        const running = db.withSession((s) => migrate(s, { dir, log: (l) => logged.push(l) }));
        await sleep(2500);
        await writer.exec("COMMIT");
        expect((await running).applied).toEqual(["20991231000000_alter"]);
      });
      expect(logged.some((l) => /statement 1: waited 1000 ms for a lock/.test(l))).toBe(true);
      expect(await columnsOf(db.sql, "idempotency_records")).toContain("extra_col");
    });
  });

  it("adopts a service's own tables: adds what is missing, keeps its rows and unique key, counts its records", async () => {
    await withEmptyDb(async (db) => {
      await db.sql.exec(`
        CREATE TABLE idempotency_records (
          id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
          scope VARCHAR(100) NOT NULL, operation VARCHAR(100) NOT NULL, idempotency_key VARCHAR(128) NOT NULL,
          payload_hash CHAR(64) NOT NULL, status VARCHAR(20) NOT NULL, response_body MEDIUMTEXT NULL,
          created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), expires_at DATETIME(6) NOT NULL,
          UNIQUE KEY idem_unique (scope, operation, idempotency_key)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
        INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES
          ('tenant:a', 'capture_payment', 'k1', REPEAT('a', 64), 'completed', '2026-12-02 10:15:00'),
          ('tenant:a', 'capture_payment', 'k2', REPEAT('b', 64), 'processing', '2026-12-02 10:45:00'),
          ('tenant:b', 'create_order', 'k3', REPEAT('c', 64), 'completed', '2026-12-02 11:05:00');`);
      const logged: string[] = [];
      const result = await db.withSession((s) => migrate(s, { log: (l) => logged.push(l) }));
      expect(result.status.state).toBe("up_to_date");
      expect(logged[0]).toBe("applied 20261130000000_shared_tables (adopted the existing tables)");
      const [adopted] = (await rows(db.sql)).filter((r) => r.migration_name === "20261130000000_shared_tables");
      expect(adopted.logs).toMatch(/^adopted existing tables with prisma\/mysql\/adopt\/20261130000000_shared_tables\.sql; /);
      expect(adopted.logs).toContain("idempotency_records_scope_operation_key_key: kept the table's own unique key idem_unique");
      expect(adopted.logs).toContain("added idempotency_records.legal_hold");
      const cols = await columnsOf(db.sql, "idempotency_records");
      expect(cols).toEqual(expect.arrayContaining(["legal_hold", "version", "provider_reference", "updated_at", "response_body"]));
      for (const t of ["idempotency_events", "reconciliation_items", "outbox_messages", "compensations"]) expect(await tableExists(db.sql, t), t).toBe(true);
      expect(
        await db.sql.query(
          `SELECT COUNT(*) AS n FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = 'idempotency_records_scope_operation_key_key'`,
        ),
      ).toEqual([{ n: 0n }]);
      // The service's rows stay and are counted by the census, each in its expiry hour.
      const census = await db.sql.query(`SELECT operation, expires_hour, count FROM record_census ORDER BY operation, expires_hour`);
      expect(census).toEqual([
        { operation: "capture_payment", expires_hour: new Date("2026-12-02T10:00:00Z"), count: 2n },
        { operation: "create_order", expires_hour: new Date("2026-12-02T11:00:00Z"), count: 1n },
      ]);
      expect(await db.sql.query(`SELECT watermark FROM rollup_state WHERE name = 'records'`)).toEqual([{ watermark: 3n }]);
      const records = await db.prisma.idempotencyRecord.findMany({ orderBy: { id: "asc" } });
      expect(records.map((r) => [r.idempotencyKey, r.legalHold, r.version])).toEqual([
        ["k1", false, 0],
        ["k2", false, 0],
        ["k3", false, 0],
      ]);
    });
  });

  it("refuses to adopt, naming them, tables without a column the console needs or with an id it cannot reference", async () => {
    await withEmptyDb(async (db) => {
      await db.sql.exec(`CREATE TABLE idempotency_records (id BIGINT AUTO_INCREMENT PRIMARY KEY, scope VARCHAR(100) NOT NULL, operation VARCHAR(100) NOT NULL,
                           idempotency_key VARCHAR(100) NOT NULL, status VARCHAR(20) NOT NULL)`);
      const err = await rejection(db.withSession((s) => migrate(s)));
      expect(err).toBeInstanceOf(MigrationError);
      expect(err.message).toMatch(/needs the column\(s\) idempotency_records\.payload_hash, idempotency_records\.expires_at/);
      expect(await columnsOf(db.sql, "idempotency_records")).toEqual(["id", "scope", "operation", "idempotency_key", "status"]);
      expect(await tableExists(db.sql, "idempotency_events")).toBe(false);

      await db.sql.exec(`ALTER TABLE idempotency_records ADD COLUMN payload_hash CHAR(64) NOT NULL, ADD COLUMN expires_at DATETIME NOT NULL,
                           MODIFY id INT UNSIGNED NOT NULL AUTO_INCREMENT`);
      const unsigned = await rejection(db.withSession((s) => migrate(s)));
      expect(unsigned.message).toMatch(/idempotency_records\.id is int(\(\d+\))? unsigned, and the console's tables reference it as a signed BIGINT/);
      expect(await tableExists(db.sql, "idempotency_events")).toBe(false);
    });
  });
});

// ---------------------------------------------------------------------------------------
// The migrated schema, the Prisma model API, the executor, the locks.

describe.runIf(usingMysql)("a migrated MySQL/MariaDB database", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  const record = (key: string, extra: Record<string, unknown> = {}) => ({
    scope: "tenant:f",
    operation: "capture_payment",
    idempotencyKey: key,
    payloadHash: "a".repeat(64),
    status: "processing",
    expiresAt: new Date("2026-12-03T00:00:00Z"),
    ...extra,
  });

  it("every connection has the console's session settings: UTC, the fixed sql_mode with ANSI_QUOTES, READ COMMITTED", async () => {
    const [{ v }] = await db.sql.query<{ v: string }>("SELECT VERSION() AS v");
    const isolation = parseMysqlVersion(v).engine === "MariaDB" ? "@@tx_isolation" : "@@transaction_isolation";
    const settings = `SELECT @@time_zone AS tz, @@sql_mode AS mode, ${isolation} AS iso`;
    const seen = [
      ...(await Promise.all(Array.from({ length: 4 }, () => db.sql.query(settings)))).map((r) => r[0]),
      (await db.withSession((s) => s.query(settings)))[0],
      (await db.prisma.$queryRawUnsafe<unknown[]>(settings))[0],
      (await db.prisma.$transaction((tx) => txExecutor(tx, db.dialect).query(settings)))[0],
    ];
    for (const s of seen as { tz: string; mode: string; iso: string }[]) {
      expect(s.tz).toBe("+00:00");
      expect(s.mode.split(",").sort()).toEqual(
        [
          "ANSI_QUOTES",
          "ERROR_FOR_DIVISION_BY_ZERO",
          "NO_ENGINE_SUBSTITUTION",
          "NO_ZERO_DATE",
          "NO_ZERO_IN_DATE",
          "ONLY_FULL_GROUP_BY",
          "STRICT_TRANS_TABLES",
        ].sort(),
      );
      expect(s.iso).toBe("READ-COMMITTED");
    }
    // ANSI_QUOTES: a double-quoted name is a column, as on PostgreSQL, not a string.
    await db.prisma.idempotencyRecord.create({ data: record("quotes") });
    expect(await db.sql.query(`SELECT "idempotency_key" AS k FROM "idempotency_records" WHERE "idempotency_key" = 'quotes'`)).toEqual([{ k: "quotes" }]);
  });

  it("serves the Prisma model API on the console's tables (BigInt ids, UTC times, JSON arrays for roles)", async () => {
    const user = await db.prisma.consoleUser.create({ data: { email: "mysql-admin@example.com", roles: ["admin", "viewer"] } });
    expect(typeof user.id).toBe("bigint");
    expect(user.roles).toEqual(["admin", "viewer"]);
    expect(Math.abs(user.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
    const bare = await db.prisma.consoleUser.create({ data: { email: "mysql-bare@example.com" } });
    expect(bare.roles).toEqual([]);
    await db.prisma.savedView.create({ data: { userId: user.id, page: "/records", name: "Pending", query: "status=pending" } });
    const request = await db.prisma.consoleRequest.create({
      data: {
        userId: user.id,
        action: "records.resolve",
        idempotencyKey: "k-1",
        payloadHash: "h",
        status: "completed",
        responseHeaders: [["Content-Type", "application/json"]],
        expiresAt: new Date("2026-12-02T09:00:00.123Z"),
      },
    });
    const read = await db.prisma.consoleUser.findUniqueOrThrow({ where: { email: "mysql-admin@example.com" }, include: { savedViews: true, requests: true } });
    expect(read.savedViews.map((v) => v.name)).toEqual(["Pending"]);
    expect(read.requests[0]).toMatchObject({
      id: request.id,
      responseHeaders: [["Content-Type", "application/json"]],
      expiresAt: new Date("2026-12-02T09:00:00.123Z"),
    });
    const updated = await db.prisma.consoleUser.update({ where: { id: user.id }, data: { roles: ["viewer"], timeZone: "Europe/Berlin" } });
    expect(updated).toMatchObject({ roles: ["viewer"], timeZone: "Europe/Berlin" });
    expect(await db.prisma.consoleUser.count()).toBe(2);
    // Interactive transactions, raw statements in them through txExecutor, rolled back on a throw.
    await expect(
      db.prisma.$transaction(async (tx) => {
        await tx.consoleUser.update({ where: { id: bare.id }, data: { name: "Rolled back" } });
        const inside = await txExecutor(tx, db.dialect).query<{ name: string }>(`SELECT name FROM console_users WHERE id = ?`, [bare.id]);
        expect(inside).toEqual([{ name: "Rolled back" }]);
        throw new Error("undo");
      }),
    ).rejects.toThrow("undo");
    expect((await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: bare.id } })).name).toBeNull();
    // The CHECKs of the console's tables hold for the model API too.
    await expect(db.prisma.consoleUser.create({ data: { email: "boss@example.com", roles: ["boss"] } })).rejects.toThrow(/console_users_roles_check/);
    await expect(db.prisma.consoleUser.create({ data: { email: "Upper@Example.com" } })).rejects.toThrow(/console_users_email_check/);
  });

  it("the unique key decides: P2002 through Prisma, ER_DUP_ENTRY for a raw INSERT; keys differ by case, not by trailing spaces", async () => {
    await db.prisma.idempotencyRecord.create({ data: record("dup") });
    const p2002 = await rejection(db.prisma.idempotencyRecord.create({ data: record("dup") }));
    expect((p2002 as { code?: string }).code).toBe("P2002");
    const raw = await rejection(
      db.sql.query(
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES (?, ?, ?, ?, 'processing', UTC_TIMESTAMP(6))`,
        ["tenant:f", "capture_payment", "dup", "b".repeat(64)],
      ),
    );
    expect([raw.errno, raw.code]).toEqual([1062, "ER_DUP_ENTRY"]);
    expect(raw.sqlMessage).toMatch(/idempotency_records_scope_operation_key_key/);
    await db.prisma.idempotencyRecord.create({ data: record("DUP") }); // utf8mb4_bin: case matters, as on PostgreSQL
    expect((await rejection(db.prisma.idempotencyRecord.create({ data: record("dup ") }))).message).toMatch(/Unique constraint/); // PAD SPACE (ADR 0012)
    // The status CHECK is the protocol's too.
    const status = await rejection(
      db.sql.query(
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ('s', 'o', 'k', 'h', 'done', UTC_TIMESTAMP(6))`,
      ),
    );
    expect(status.sqlMessage).toMatch(/idempotency_records_status_check/);
  });

  it("audit_log refuses UPDATE and DELETE from anyone (triggers); TRUNCATE is not refused (privileges: README)", async () => {
    const entry = await db.prisma.auditEntry.create({
      data: { occurredAt: new Date(), actorType: "system", action: "test.audit", outcome: "done", prevHash: "0".repeat(64), hash: "1".repeat(64) },
    });
    const update = await rejection(db.sql.query(`UPDATE audit_log SET reason = 'rewritten' WHERE id = ?`, [entry.id]));
    expect([update.errno, update.sqlMessage]).toEqual([1644, "audit_log is append-only: UPDATE refused"]);
    const del = await rejection(db.sql.query(`DELETE FROM audit_log WHERE id = ?`, [entry.id]));
    expect([del.errno, del.sqlMessage]).toEqual([1644, "audit_log is append-only: DELETE refused"]);
    await expect(db.prisma.auditEntry.update({ where: { id: entry.id }, data: { reason: "x" } })).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(db.prisma.auditEntry.deleteMany({})).rejects.toThrow(/append-only: DELETE refused/);
    expect(await db.prisma.auditEntry.count()).toBe(1);
    // What is weaker than PostgreSQL, said in ADR 0012 and the README: TRUNCATE fires no trigger.
    await db.sql.exec("TRUNCATE audit_log");
    expect(await db.prisma.auditEntry.count()).toBe(0);
  });

  it("compensations: the four-eyes CHECK refuses a decision by the requester", async () => {
    const rec = await db.prisma.idempotencyRecord.create({ data: record("comp", { status: "completed" }) });
    const base = {
      recordId: rec.id,
      scope: rec.scope,
      operation: rec.operation,
      idempotencyKey: rec.idempotencyKey,
      kind: "refund",
      amountMinor: 1299n,
      currency: "EUR",
      provider: "mockpay",
      providerReference: "ch_1",
      reason: "double charge",
      requestedBy: 7n,
      requestedByLabel: "op@example.com",
    };
    await expect(
      db.prisma.compensation.create({ data: { ...base, providerIdempotencyKey: "c-1", state: "approved", decidedBy: 7n, decidedByLabel: "op@example.com" } }),
    ).rejects.toThrow(/compensations_four_eyes_check/);
    const raw = await rejection(
      db.sql.query(
        `INSERT INTO compensations (scope, operation, idempotency_key, kind, amount_minor, currency, provider, provider_reference, provider_idempotency_key,
                                    state, reason, requested_by, requested_by_label, decided_by, decided_by_label)
         VALUES ('s', 'o', 'k', 'refund', 1, 'EUR', 'p', 'r', 'c-2', 'approved', 'double charge', 7, 'a', 7, 'a')`,
      ),
    );
    expect([4025, 3819]).toContain(raw.errno); // MariaDB, MySQL
    expect(raw.sqlMessage).toMatch(/compensations_four_eyes_check/);
    const ok = await db.prisma.compensation.create({
      data: { ...base, providerIdempotencyKey: "c-3", state: "approved", decidedBy: 8n, decidedByLabel: "ap@example.com" },
    });
    expect(ok.state).toBe("approved");
  });

  it("what PostgreSQL's partial unique indexes say: one active purge run, one active hold per scope, one policy per operation and one default", async () => {
    const run = { policies: [], asOf: new Date(), batchSize: 10, pauseMs: 0, reason: "nightly purge", startedByLabel: "system" };
    const first = await db.prisma.purgeRun.create({ data: { ...run, state: "running" } });
    expect(((await rejection(db.prisma.purgeRun.create({ data: { ...run, state: "queued" } }))) as { code?: string }).code).toBe("P2002");
    await db.prisma.purgeRun.update({ where: { id: first.id }, data: { state: "completed" } });
    await db.prisma.purgeRun.create({ data: { ...run, state: "queued" } });
    await db.prisma.purgeRun.create({ data: { ...run, state: "cancelled" } });

    const hold = await db.prisma.legalHold.create({ data: { scope: "tenant:held", reason: "litigation", setByLabel: "a" } });
    await expect(db.prisma.legalHold.create({ data: { scope: "tenant:held", reason: "again", setByLabel: "a" } })).rejects.toThrow(/Unique constraint/);
    await db.prisma.legalHold.update({ where: { id: hold.id }, data: { liftedAt: new Date(), liftedByLabel: "a", liftReason: "settled" } });
    await db.prisma.legalHold.create({ data: { scope: "tenant:held", reason: "new case", setByLabel: "a" } });

    const policy = { keepRecordsDays: 7, keepEventsDays: 30 };
    await db.prisma.retentionPolicy.create({ data: { ...policy, operation: null } });
    await expect(db.prisma.retentionPolicy.create({ data: { ...policy, operation: null } })).rejects.toThrow(/Unique constraint/);
    await db.prisma.retentionPolicy.create({ data: { ...policy, operation: "capture_payment" } });
    await expect(db.prisma.retentionPolicy.create({ data: { ...policy, operation: "capture_payment" } })).rejects.toThrow(/Unique constraint/);
  });

  it("the rollups and the census are written only with the rollup writers' session flag", async () => {
    const insert = `INSERT INTO event_rollups (bucket, operation, scope, kind, count) VALUES ('2026-12-01 09:00:00', 'o', 's', 'reserved', 1)`;
    const refused = await rejection(db.sql.query(insert));
    expect([refused.errno, refused.sqlMessage]).toEqual([
      1644,
      "event_rollups is written only by the console's rollup writers (lib/stats): upgrade the console",
    ]);
    await db.withSession(async (s) => {
      await s.exec("SET @idempotency_console_rollup_writer = 'totals'");
      await s.query(insert);
      await s.query(`INSERT INTO record_census (operation, expires_hour, count) VALUES ('o', '2026-12-01 09:00:00', 1)`);
      await s.exec("SET @idempotency_console_rollup_writer = NULL");
      expect((await rejection(s.query(`DELETE FROM event_rollups`))).errno).toBe(1644);
    });
    // The tiers' and the census' alignment CHECKs (PostgreSQL's date_bin).
    await db.withSession(async (s) => {
      await s.exec("SET @idempotency_console_rollup_writer = 'totals'");
      const tier = await rejection(s.query(`INSERT INTO event_rollup_tiers VALUES (900, '2026-12-01 09:10:00', 'o', 's', 'reserved', 1)`));
      expect(tier.sqlMessage).toMatch(/event_rollup_tiers_bucket_check/);
      await s.query(`INSERT INTO event_rollup_tiers VALUES (900, '2026-12-01 09:15:00', 'o', 's', 'reserved', 1)`);
      const hour = await rejection(s.query(`INSERT INTO record_census (operation, expires_hour, count) VALUES ('o', '2026-12-01 09:30:00', 1)`));
      expect(hour.sqlMessage).toMatch(/record_census_expires_hour_check/);
    });
  });

  it("health names the engine and its version", async () => {
    const report = await healthReport(async () => db);
    const [{ v }] = await db.sql.query<{ v: string }>("SELECT VERSION() AS v");
    expect(report.status).toBe("ok");
    expect(report.database).toMatchObject({ mode: "mysql", reachable: true, ...parseMysqlVersion(v) });
    expect(report.database.engine).toBe(/mariadb/i.test(v) ? "MariaDB" : "MySQL");
    expect(report.database.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(report.migrations).toMatchObject({ state: "up_to_date", applied: (await localNames()).length });
  });

  it("the executor: bigint, DECIMAL as text, UTC times whatever the process's TZ, parsed JSON, affected rows and insert ids", async () => {
    vi.stubEnv("TZ", "America/New_York"); // the driver alone would read and write local time
    try {
      const at = new Date("2026-07-01T23:30:00.123Z");
      const p = paramList(MYSQL);
      // Parameters bind in order: each placeholder once, in the statement's order (ADR 0012).
      const rows = await db.sql.query(
        `SELECT CAST(${p.bigint(9007199254740993n)} AS SIGNED) AS big, ${p.time(at)} AS t, ${p.add(at)} AS d, CAST(1.50 AS DECIMAL(5,2)) AS dec_, ${MYSQL.cursorTime(p.time(at))} AS cursor_`,
        p.values,
      );
      expect(rows).toEqual([{ big: 9007199254740993n, t: at, d: "2026-07-01 23:30:00.123", dec_: "1.50", cursor_: "2026-07-01T23:30:00.123000Z" }]);
      const ins = await execute(
        db.sql,
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_headers, expires_at) VALUES (?, ?, ?, ?, 'pending', ?, ?)`,
        ["tenant:x", "capture_payment", "exec-1", "h", JSON.stringify({ "content-type": "application/json" }), at],
      );
      expect(ins.affectedRows).toBe(1);
      expect(typeof ins.insertId).toBe("bigint");
      const [row] = await db.sql.query<{ id: bigint; expires_at: Date; response_headers: unknown; legal_hold: number }>(
        `SELECT id, expires_at, response_headers, legal_hold FROM idempotency_records WHERE id = ?`,
        [ins.insertId],
      );
      expect(row).toEqual({ id: ins.insertId, expires_at: at, response_headers: { "content-type": "application/json" }, legal_hold: 0 });
      expect((await db.prisma.idempotencyRecord.findUniqueOrThrow({ where: { id: ins.insertId! } })).expiresAt).toEqual(at);
      // Matched rows, not changed rows (foundRows), like PostgreSQL's row count.
      expect(await execute(db.sql, `UPDATE idempotency_records SET status = 'pending' WHERE id = ?`, [ins.insertId])).toEqual({
        affectedRows: 1,
        insertId: null,
      });
      const inTx = await db.prisma.$transaction((tx) =>
        execute(txExecutor(tx, db.dialect), `INSERT INTO rollup_gaps (event_id) VALUES (?)`, [424242n]).then(async (r) => ({
          ...r,
          gaps: await txExecutor(tx, db.dialect).query(`SELECT event_id FROM rollup_gaps`),
        })),
      );
      expect(inTx).toEqual({ affectedRows: 1, insertId: null, gaps: [{ event_id: 424242n }] });
      const viaTx = await db.prisma.$transaction((tx) =>
        execute(
          txExecutor(tx, db.dialect),
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ('tenant:x', 'capture_payment', 'exec-2', 'h', 'pending', ?)`,
          [at],
        ),
      );
      expect(viaTx).toEqual({ affectedRows: 1, insertId: ins.insertId! + 1n });
      await expect(db.sql.query(`SELECT ? AS x`, [["a", "b"]])).rejects.toThrow(/Params\.list/);
      await db.sql.exec(`SET @a = 1; SET @b = 2`); // scripts
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("session locks (GET_LOCK) exclude other sessions, per database; withSession returns no lock to the pool", async () => {
    await db.withSession(async (a) => {
      await db.withSession(async (b) => {
        expect(await trySessionLock(a, "refresher")).toBe(true);
        expect(await trySessionLock(a, "refresher")).toBe(true); // re-entrant, counted
        expect(await trySessionLock(b, "refresher")).toBe(false);
        expect(await trySessionLock(b, "reconciler")).toBe(true); // another lock
        const [{ name }] = await a.query<{ name: string }>(`SELECT CONCAT('ic:', DATABASE(), ':refresher') AS name`);
        expect(await a.query(`SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS mine`, [name])).toEqual([{ mine: 1 }]);
        await sessionUnlock(a, "refresher");
        expect(await trySessionLock(b, "refresher")).toBe(false);
        await sessionUnlock(a, "refresher");
        expect(await trySessionLock(a, "refresher")).toBe(true);
        const waiting = sessionLock(b, "refresher").then(() => "b has it");
        expect(await Promise.race([waiting, sleep(300).then(() => "still waiting")])).toBe("still waiting");
        await sessionUnlock(a, "refresher");
        expect(await waiting).toBe("b has it");
        expect(await trySessionLock(a, "refresher")).toBe(false);
        await sessionUnlock(b, "refresher");
        // b still holds reconciler: released when its session goes back to the pool.
      });
      expect(await trySessionLock(a, "reconciler")).toBe(true);
      await sessionUnlock(a, "reconciler");
    });
  });

  it("connections go to callers in the order they asked: 8 callers on 2 connections all start before any is done", async () => {
    const pool = createMysqlPool(db.url!, 2, { acquireTimeoutMs: 500 });
    try {
      // Each caller takes a connection, runs a statement, gives it back and asks again at once
      // (as a writer's requests do). The driver's pool alone hands the released connection back
      // to the same caller: each caller ran all its rounds before the next one had a connection.
      const events: string[] = [];
      const caller = async (c: number) => {
        for (let round = 0; round < 25; round++) {
          const conn = await pool.getConnection();
          if (round === 0) events.push(`start ${c}`);
          try {
            await conn.query("SELECT 1");
          } finally {
            await conn.release();
          }
        }
        events.push(`done ${c}`);
      };
      await Promise.all(Array.from({ length: 8 }, (_, c) => caller(c)));
      const firstDone = events.findIndex((e) => e.startsWith("done"));
      expect(
        events.slice(0, firstDone).filter((e) => e.startsWith("start")),
        events.join(", "),
      ).toHaveLength(8);
      // A caller in line past the wait limit fails clearly; the connections stay usable.
      const held = await Promise.all([pool.getConnection(), pool.getConnection()]);
      const waited = performance.now();
      await expect(pool.query("SELECT 3")).rejects.toMatchObject({
        code: "ER_GET_CONNECTION_TIMEOUT",
        message: expect.stringMatching(/^pool timeout: no connection free after 500 ms/),
      });
      expect(performance.now() - waited).toBeGreaterThanOrEqual(490);
      await Promise.all(held.map((c) => c.release()));
      expect(await pool.query("SELECT 3 AS n")).toEqual([{ n: 3 }]);
    } finally {
      await pool.end();
    }
  });

  it("a caller whose connection could not be opened gives its place back: the next one is not kept waiting", async () => {
    const url = new URL(db.url!);
    url.pathname = "/ic_no_such_database";
    const pool = createMysqlPool(url.toString(), 1, { acquireTimeoutMs: 500 });
    try {
      for (let i = 0; i < 3; i++) {
        // The driver's own failure each time, never the line's "no connection free" (a place kept by a failed caller).
        const err = await pool.getConnection().then(
          () => null,
          (e: Error) => e,
        );
        expect(err?.message, `attempt ${i + 1}`).not.toMatch(/no connection free/);
        expect(err, `attempt ${i + 1}`).toBeInstanceOf(Error);
      }
    } finally {
      await pool.end().catch(() => {});
    }
  });

  it("transaction locks (console_locks rows): shared holders coexist, exclusive waits for them and for each other; released at COMMIT", async () => {
    const inTx = (s: SqlExecutor, fn: () => Promise<void>) => inTransaction(s, fn, "START TRANSACTION");
    await db.withSession(async (a) => {
      await db.withSession(async (b) => {
        await db.withSession(async (c) => {
          await a.exec("START TRANSACTION");
          await transactionLock(a, "legalHolds", "shared");
          await inTx(b, () => transactionLock(b, "legalHolds", "shared")); // a second shared holder gets it at once
          const exclusive = inTx(c, async () => {
            await transactionLock(c, "legalHolds", "exclusive");
          }).then(() => "exclusive taken");
          expect(await Promise.race([exclusive, sleep(400).then(() => "waiting")])).toBe("waiting");
          await a.exec("COMMIT");
          expect(await exclusive).toBe("exclusive taken");

          // Exclusive against exclusive, one of them through a Prisma interactive transaction.
          await a.exec("START TRANSACTION");
          await transactionLock(a, "auditChain");
          const viaPrisma = db.prisma.$transaction(async (tx) => transactionLock(txExecutor(tx, db.dialect), "auditChain")).then(() => "prisma took it");
          expect(await Promise.race([viaPrisma, sleep(400).then(() => "waiting")])).toBe("waiting");
          await a.exec("ROLLBACK");
          expect(await viaPrisma).toBe("prisma took it");
        });
      });
    });
    for (const name of Object.keys(LOCKS)) expect(await db.sql.query(`SELECT name FROM console_locks WHERE name = ?`, [name]), name).toHaveLength(1);
  });

  it("snapshots: inSnapshot reads one snapshot; a REPEATABLE READ writer's snapshot comes after the lock it takes first", async () => {
    const count = async (s: SqlExecutor) => Number((await s.query<{ n: bigint }>(`SELECT COUNT(*) AS n FROM rollup_gaps`))[0].n);
    await db.withSession(async (reader) => {
      await inSnapshot(reader, async () => {
        const before = await count(reader);
        await db.sql.query(`INSERT INTO rollup_gaps (event_id) VALUES (1001)`);
        expect(await count(reader)).toBe(before);
      });
      // The ADR's rollup-writer order: BEGIN (RR), the lock row, then reads see what committed before the lock was granted.
      await db.withSession(async (holder) => {
        await holder.exec("START TRANSACTION");
        await transactionLock(holder, "rollups");
        const writer = inTransaction(
          reader,
          async () => {
            await transactionLock(reader, "rollups");
            return count(reader);
          },
          db.dialect.beginRepeatableRead,
        );
        await sleep(200);
        await holder.query(`INSERT INTO rollup_gaps (event_id) VALUES (1002)`);
        await holder.exec("COMMIT");
        expect(await writer).toBe(await count(db.sql)); // it saw the holder's row
      });
    });
  });
});
