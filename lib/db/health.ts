import type { Database, ReadDatabase } from "./client";
import { migrationStatus, type MigrationStatus } from "./migrate";
import { parseMysqlVersion } from "./mysql";
import { readLag } from "./replica";
import type { SqlExecutor } from "./sql";

export interface HealthReport {
  status: "ok" | "degraded" | "unavailable";
  database: {
    mode: Database["mode"] | "unknown";
    reachable: boolean;
    /** PostgreSQL, PGlite (embedded PostgreSQL), MySQL or MariaDB. */
    engine?: string;
    /** The server's version ("16.4", "10.11.19"); for PGlite the PostgreSQL it embeds. */
    version?: string;
    latencyMs?: number;
    error?: string;
  };
  migrations?: Omit<MigrationStatus, "applied"> & { applied: number };
  /**
   * The read side's replica (DATABASE_READ_URL, ADR 0013); absent without one. Unreachable:
   * status "degraded" — the screens' reads fail, actions and sign-in still work.
   */
  replica?: {
    reachable: boolean;
    /** It replays the primary's changes (PostgreSQL: in recovery). */
    replicating?: boolean;
    /** Seconds behind the primary; null when it cannot tell (lib/db/replica.ts). */
    lagSeconds?: number | null;
    engine?: string;
    version?: string;
    latencyMs?: number;
    error?: string;
  };
  checkedAt: string;
}

/** The replica's part of the report: reachable, what it is, how far behind. */
async function replicaHealth(read: ReadDatabase): Promise<NonNullable<HealthReport["replica"]>> {
  const started = performance.now();
  try {
    await read.sql.query("SELECT 1");
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    const server = await serverIdentity(read.mode, read.sql);
    const lag = await readLag(read);
    return { reachable: true, replicating: lag.replicating, lagSeconds: lag.lagSeconds, ...server, latencyMs };
  } catch (err) {
    return { reachable: false, error: describe(err) };
  }
}

/** Which database answers: engine and version, from version() (every mode has it). */
export async function serverIdentity(mode: Database["mode"], sql: SqlExecutor): Promise<{ engine: string; version: string }> {
  const [{ v }] = await sql.query<{ v: string }>("SELECT version() AS v");
  if (mode === "mysql") return parseMysqlVersion(v);
  const version = /PostgreSQL (\d+(?:\.\d+)*)/.exec(v)?.[1] ?? v;
  return { engine: mode === "embedded" ? "PGlite" : "PostgreSQL", version };
}

/** ok: reachable and migrated; degraded: reachable, migrations not up to date; unavailable: no database. */
export async function healthReport(open: () => Promise<Database>): Promise<HealthReport> {
  const checkedAt = new Date().toISOString();
  let db: Database;
  try {
    db = await open();
  } catch (err) {
    return { status: "unavailable", database: { mode: "unknown", reachable: false, error: describe(err) }, checkedAt };
  }
  const started = performance.now();
  try {
    await db.sql.query("SELECT 1");
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    const server = await serverIdentity(db.mode, db.sql);
    const status = await db.withSession((s) => migrationStatus(s));
    const replica = db.read.replica ? await replicaHealth(db.read) : undefined;
    return {
      status: status.state === "up_to_date" && (replica?.reachable ?? true) ? "ok" : "degraded",
      database: { mode: db.mode, reachable: true, ...server, latencyMs },
      migrations: { ...status, applied: status.applied.length },
      ...(replica ? { replica } : {}),
      checkedAt,
    };
  } catch (err) {
    return { status: "unavailable", database: { mode: db.mode, reachable: false, error: describe(err) }, checkedAt };
  }
}

// Connection errors can carry host names; keep the class of failure, not the details.
function describe(err: unknown): string {
  const code = (err as { code?: string }).code;
  return code ? `database error ${code}` : "database unreachable";
}
