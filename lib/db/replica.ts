import type { ReadDatabase } from "./client";
import { byDialect } from "./dialect";
import type { SqlExecutor } from "./sql";

/**
 * How far the read side is behind the primary (ADR 0013), for "data as of" on the overview and
 * /api/metrics and for /api/health. The primary itself (no DATABASE_READ_URL) is never behind.
 */
export interface ReadLag {
  /** The read side is a server of its own (DATABASE_READ_URL). */
  replica: boolean;
  /** That server replays a primary's changes (PostgreSQL: in recovery; MySQL: replication configured). */
  replicating: boolean;
  /** Seconds its data is behind the primary's: 0 when it has replayed everything; null when it cannot tell. */
  lagSeconds: number | null;
  /** The moment its data is current to: now − lag (now when not behind, or when the lag is unknown). */
  asOf: Date;
}

interface LagRow {
  replicating: boolean;
  lagSeconds: number | null;
}

/** The statements, per dialect (a row, or null when the server cannot say). */
interface ReplicaStatements {
  lag(ex: SqlExecutor): Promise<LagRow>;
}

/**
 * PostgreSQL: a standby that has replayed all it received while its WAL receiver streams is not
 * behind, however long ago the primary last committed: an idle primary must not look like lag.
 * (A role without pg_read_all_stats sees the receiver but not its status: taken as streaming.)
 * Otherwise — replay behind what arrived, or no receiver (cut off from the primary) — the lag is
 * the age of the last transaction it replayed: its data is current to at least then (null before
 * it has replayed one). A paused replay receives on, so it shows as behind as soon as the
 * primary commits anything.
 */
const postgresReplica: ReplicaStatements = {
  async lag(ex) {
    const [row] = await ex.query<{ replicating: boolean; lagSeconds: number | null }>(
      `SELECT pg_is_in_recovery() AS replicating,
              CASE WHEN NOT pg_is_in_recovery() THEN 0
                   WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                        AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE coalesce(status, 'streaming') = 'streaming') THEN 0
                   ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8
              END AS "lagSeconds"`,
    );
    return { replicating: row.replicating, lagSeconds: row.lagSeconds === null ? null : Math.max(0, Number(row.lagSeconds)) };
  },
};

/**
 * MySQL 8.0.22+ and MariaDB 10.5.1+: SHOW REPLICA STATUS (SHOW SLAVE STATUS before). No row: not a
 * replica. Seconds_Behind_Source (MySQL) / Seconds_Behind_Master (MariaDB) is NULL while the
 * applier is stopped. Without REPLICATION CLIENT (MySQL) / REPLICA MONITOR (MariaDB) the lag is
 * unknown. Not exercised against a real MySQL replica yet (the tests cover "no replication").
 */
const mysqlReplica: ReplicaStatements = {
  async lag(ex) {
    let rows: Record<string, unknown>[];
    try {
      rows = await ex.query("SHOW REPLICA STATUS");
    } catch (err) {
      if ((err as { errno?: number }).errno !== 1064) return { replicating: true, lagSeconds: null }; // no privilege: cannot tell
      rows = await ex.query("SHOW SLAVE STATUS");
    }
    if (!rows.length) return { replicating: false, lagSeconds: 0 };
    const behind = rows[0].Seconds_Behind_Source ?? rows[0].Seconds_Behind_Master;
    return { replicating: true, lagSeconds: behind === null || behind === undefined ? null : Number(behind) };
  },
};

/** The read side's lag, asked of the read side itself (or of `session`, one of its connections). */
export async function readLag(read: ReadDatabase, session: SqlExecutor = read.sql, now: Date = new Date()): Promise<ReadLag> {
  if (!read.replica) return { replica: false, replicating: false, lagSeconds: 0, asOf: now };
  const { replicating, lagSeconds } = await byDialect(session, { postgres: postgresReplica, mysql: mysqlReplica }).lag(session);
  return { replica: true, replicating, lagSeconds, asOf: lagSeconds ? new Date(now.getTime() - Math.round(lagSeconds * 1000)) : now };
}

/** The lag as the API shows it: null when the read side is the primary. */
export function lagJson(lag: ReadLag): { replicating: boolean; lagSeconds: number | null } | null {
  return lag.replica ? { replicating: lag.replicating, lagSeconds: lag.lagSeconds === null ? null : Math.round(lag.lagSeconds * 1000) / 1000 } : null;
}
