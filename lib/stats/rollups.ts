import type { SqlExecutor } from "../db/sql";

/**
 * Per-minute rollups of idempotency_events by (operation, scope, kind), kept
 * incrementally from an id watermark.
 *
 * Ids are handed out at INSERT but become visible at COMMIT, so an id below the
 * watermark can appear later (a writer's transaction was still open). Every id
 * missing below the watermark is remembered in rollup_gaps and counted when it
 * shows up; after GAP_GRACE it is taken as rolled back and forgotten. Counts of
 * a range are then exact at any moment: rollups for whole minutes, plus the raw
 * events not yet rolled up (id > watermark, or a gap), plus the raw events of
 * partial minutes at the edges — all read in one snapshot (countEvents).
 *
 * Rollups are history: purging old events (retention) does not lower them.
 */

const ROLLUP_LOCK_ID = 72707371;
const STATE = "events";
export const GAP_GRACE_SECONDS = 15 * 60;

export interface RefreshResult {
  watermark: bigint;
  eventsCounted: number;
  batches: number;
  gapsOpen: number;
}

/**
 * Rolls up everything new, in short transactions of at most `batchSize` ids.
 * `session` must be one connection (a transaction spans several statements).
 * One refresher at a time across processes (advisory lock); a second caller
 * waits, then finds little or nothing to do.
 */
export async function refreshRollups(session: SqlExecutor, opts: { batchSize?: number } = {}): Promise<RefreshResult> {
  const batchSize = BigInt(opts.batchSize ?? 50_000);
  let eventsCounted = 0;
  let batches = 0;
  for (;;) {
    await session.exec("BEGIN");
    try {
      await session.query(`SELECT pg_advisory_xact_lock($1)`, [ROLLUP_LOCK_ID]);
      await session.query(`INSERT INTO rollup_state (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [STATE]);
      const [{ watermark }] = await session.query<{ watermark: bigint }>(
        `SELECT watermark FROM rollup_state WHERE name = $1 FOR UPDATE`,
        [STATE],
      );
      const [{ max }] = await session.query<{ max: bigint | null }>(`SELECT max(id) AS max FROM idempotency_events`);
      const upTo = max === null ? watermark : max < watermark + batchSize ? max : watermark + batchSize;

      // New events in (watermark, upTo], plus earlier gaps that have become visible.
      const [counted] = await session.query<{ n: bigint }>(
        `WITH fresh AS (
           SELECT occurred_at, operation, scope, kind FROM idempotency_events WHERE id > $1 AND id <= $2
           UNION ALL
           SELECT e.occurred_at, e.operation, e.scope, e.kind
             FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id
         ), agg AS (
           SELECT date_trunc('minute', occurred_at) AS bucket, operation, scope, kind, count(*) AS n
             FROM fresh GROUP BY 1, 2, 3, 4
         ), up AS (
           INSERT INTO event_rollups (bucket, operation, scope, kind, count)
           SELECT bucket, operation, scope, kind, n FROM agg
           ON CONFLICT (bucket, operation, scope, kind) DO UPDATE SET count = event_rollups.count + EXCLUDED.count
         )
         SELECT COALESCE(sum(n), 0)::bigint AS n FROM agg`,
        [watermark, upTo],
      );
      await session.query(`DELETE FROM rollup_gaps g USING idempotency_events e WHERE e.id = g.event_id`);
      // Ids missing in (watermark, upTo]: not committed yet, or never will be.
      await session.query(
        `INSERT INTO rollup_gaps (event_id)
         SELECT generate_series(prev + 1, id - 1) FROM (
           SELECT id, lag(id, 1, $1::bigint) OVER (ORDER BY id) AS prev
             FROM idempotency_events WHERE id > $1 AND id <= $2
         ) t WHERE id - prev > 1
         ON CONFLICT (event_id) DO NOTHING`,
        [watermark, upTo],
      );
      await session.query(`DELETE FROM rollup_gaps WHERE seen_at < now() - make_interval(secs => $1)`, [GAP_GRACE_SECONDS]);
      await session.query(`UPDATE rollup_state SET watermark = $2, updated_at = now() WHERE name = $1`, [STATE, upTo]);
      await session.exec("COMMIT");
      eventsCounted += Number(counted.n);
      batches++;
      if (max === null || upTo >= max) {
        const [{ n }] = await session.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM rollup_gaps`);
        return { watermark: upTo, eventsCounted, batches, gapsOpen: Number(n) };
      }
    } catch (err) {
      await session.exec("ROLLBACK").catch(() => {});
      throw err;
    }
  }
}

/** Throws the rollups away and counts everything again (batched, resumable: counts stay exact meanwhile). */
export async function rebuildRollups(session: SqlExecutor, opts: { batchSize?: number } = {}): Promise<RefreshResult> {
  await session.exec("BEGIN");
  try {
    await session.query(`SELECT pg_advisory_xact_lock($1)`, [ROLLUP_LOCK_ID]);
    await session.exec(`DELETE FROM event_rollups; DELETE FROM rollup_gaps;`);
    await session.query(
      `INSERT INTO rollup_state (name, watermark) VALUES ($1, 0)
       ON CONFLICT (name) DO UPDATE SET watermark = 0, updated_at = now()`,
      [STATE],
    );
    await session.exec("COMMIT");
  } catch (err) {
    await session.exec("ROLLBACK").catch(() => {});
    throw err;
  }
  return refreshRollups(session, opts);
}

export interface EventCountFilter {
  from: Date;
  to: Date;
  operation?: string;
  scope?: string;
}

export interface EventCountRow {
  operation: string;
  kind: string;
  count: number;
}

/**
 * Exact event counts in [from, to) by operation and kind, from the rollups plus
 * the few raw events they do not cover yet, in one consistent snapshot.
 */
export async function countEvents(session: SqlExecutor, f: EventCountFilter): Promise<EventCountRow[]> {
  await session.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  try {
    // Whole minutes [lo, hi) come from the rollups; the bounds are parameters (not
    // computed in SQL) so every branch below is an index range scan.
    const lo = ceilMinute(f.from);
    const hi = new Date(Math.max(floorMinute(f.to).getTime(), lo.getTime()));
    const rows = await session.query<{ operation: string; kind: string; n: bigint }>(
      `WITH w AS (SELECT COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0) AS watermark),
       rolled AS (
         SELECT r.operation, r.kind, r.count AS n FROM event_rollups r
          WHERE r.bucket >= $5 AND r.bucket < $6
            AND ($3::text IS NULL OR r.operation = $3) AND ($4::text IS NULL OR r.scope = $4)
       ), raw AS (
         -- not rolled up yet (above the watermark, or a gap), inside the whole minutes
         SELECT e.operation, e.kind, 1::bigint AS n FROM idempotency_events e, w
          WHERE e.id > w.watermark AND e.occurred_at >= $5 AND e.occurred_at < $6
            AND ($3::text IS NULL OR e.operation = $3) AND ($4::text IS NULL OR e.scope = $4)
         UNION ALL
         SELECT e.operation, e.kind, 1::bigint FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id
          WHERE e.occurred_at >= $5 AND e.occurred_at < $6
            AND ($3::text IS NULL OR e.operation = $3) AND ($4::text IS NULL OR e.scope = $4)
         UNION ALL
         -- the partial minutes at both edges, straight from the events
         SELECT e.operation, e.kind, 1::bigint FROM idempotency_events e
          WHERE e.occurred_at >= $1 AND e.occurred_at < $5 AND e.occurred_at < $2
            AND ($3::text IS NULL OR e.operation = $3) AND ($4::text IS NULL OR e.scope = $4)
         UNION ALL
         SELECT e.operation, e.kind, 1::bigint FROM idempotency_events e
          WHERE e.occurred_at >= $6 AND e.occurred_at < $2 AND e.occurred_at >= $1
            AND ($3::text IS NULL OR e.operation = $3) AND ($4::text IS NULL OR e.scope = $4)
       )
       SELECT operation, kind, sum(n)::bigint AS n FROM (SELECT * FROM rolled UNION ALL SELECT * FROM raw) x
        GROUP BY operation, kind ORDER BY operation, kind`,
      [f.from, f.to, f.operation ?? null, f.scope ?? null, lo, hi],
    );
    await session.exec("COMMIT");
    return rows.map((r) => ({ operation: r.operation, kind: r.kind, count: Number(r.n) }));
  } catch (err) {
    await session.exec("ROLLBACK").catch(() => {});
    throw err;
  }
}

function floorMinute(d: Date): Date {
  return new Date(Math.floor(d.getTime() / 60_000) * 60_000);
}

function ceilMinute(d: Date): Date {
  return new Date(Math.ceil(d.getTime() / 60_000) * 60_000);
}
