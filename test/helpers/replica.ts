import { openDatabase, type Database } from "@/lib/db/client";
import { createTestDatabase, type TestDatabase } from "./db";

/**
 * A streaming replica for the read side's tests (ADR 0013): DATABASE_READ_URL names a PostgreSQL
 * standby of the DATABASE_URL server (.ci/run starts one with pg_basebackup on another port). A
 * physical standby replays every database of its primary, the test file's throwaway one included.
 */
export const replicaServerUrl = process.env.DATABASE_READ_URL?.trim() || undefined;

export interface ReplicatedTestDatabase extends Database {
  url: string;
  /** The same database on the replica. */
  readUrl: string;
  drop(): Promise<void>;
}

/** A throwaway migrated database on the primary, opened with its replica as the read side, once the replica has it. */
export async function createReplicatedTestDatabase(): Promise<ReplicatedTestDatabase> {
  if (!replicaServerUrl) throw new Error("DATABASE_READ_URL is not set");
  const primary: TestDatabase = await createTestDatabase();
  const readUrl = new URL(replicaServerUrl);
  readUrl.pathname = new URL(primary.url!).pathname;
  // The primary's handles are the test database's own; only the read side is new.
  const withReplica = await openDatabase({ mode: "postgres", url: primary.url!, readUrl: readUrl.toString() }, { poolSize: 10 });
  const db: ReplicatedTestDatabase = {
    ...withReplica,
    url: primary.url!,
    readUrl: readUrl.toString(),
    async drop() {
      await resumeReplay(db).catch(() => {});
      await withReplica.close().catch(() => {});
      await primary.drop();
    },
  };
  await waitForReplay(db);
  return db;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Until `probe` answers true (errors count as not yet: the replica may not have the database yet). */
export async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      if (await probe()) return;
      last = null;
    } catch (err) {
      last = err;
    }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (${last instanceof Error ? last.message : String(last)})` : ""}`);
}

/** Until the replica has replayed everything the primary had written when this was called. */
export async function waitForReplay(db: Database): Promise<void> {
  const [{ lsn }] = await db.sql.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn");
  await eventually(async () => {
    const [r] = await db.read.sql.query<{ done: boolean }>("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done", [lsn]);
    return r.done;
  }, `the replica to replay up to ${lsn}`);
}

/** Stops the replica applying WAL (it keeps receiving it): from now on it is behind whatever the primary commits. */
export async function pauseReplay(db: Database): Promise<void> {
  await db.read.sql.query("SELECT pg_wal_replay_pause()");
  // 'pause requested' already holds back the next record; 'paused' once the startup process saw it.
  await eventually(async () => {
    const [r] = await db.read.sql.query<{ state: string }>("SELECT pg_get_wal_replay_pause_state() AS state");
    return r.state !== "not paused";
  }, "replay to pause");
}

export async function resumeReplay(db: Database): Promise<void> {
  await db.read.sql.query("SELECT pg_wal_replay_resume()");
}
