import type { Database } from "./client";
import { migrationStatus, type MigrationStatus } from "./migrate";

export interface HealthReport {
  status: "ok" | "degraded" | "unavailable";
  database: { mode: Database["mode"] | "unknown"; reachable: boolean; latencyMs?: number; error?: string };
  migrations?: Omit<MigrationStatus, "applied"> & { applied: number };
  checkedAt: string;
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
    const status = await db.withSession((s) => migrationStatus(s));
    return {
      status: status.state === "up_to_date" ? "ok" : "degraded",
      database: { mode: db.mode, reachable: true, latencyMs },
      migrations: { ...status, applied: status.applied.length },
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
