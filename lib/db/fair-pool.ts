import type * as mariadb from "mariadb";

/**
 * First come, first served in front of a `mariadb` pool. The driver's pool hands an idle
 * connection to whoever asks for one, before the callers already waiting: a caller that
 * releases a connection and asks again at once (a writer's next request, a loop of
 * statements) takes it back, and with more callers than connections the others can wait until
 * the busy ones stop, past acquireTimeout. Measured on MariaDB: 8 writers on 4 connections,
 * 4 of them served only once the other 4 had written 3,000 records between them (3.3 s); with
 * 10,000 records the waiting ones failed with "pool timeout". So at most `limit` callers hold a
 * connection (the pool's connectionLimit) and the rest wait in line, each up to `timeoutMs`.
 *
 * The gate wraps the pool's own methods in place (so Prisma's adapter, given the pool, goes
 * through it too): getConnection (the permit is held until the connection is released or
 * destroyed), and query, execute and batch (one connection for one statement).
 */
export function fairPool(pool: mariadb.Pool, limit: number, timeoutMs: number): mariadb.Pool {
  const line: { admit: () => void; timer: NodeJS.Timeout }[] = [];
  let holding = 0;

  const enter = (): Promise<void> => {
    if (holding < limit) {
      holding++;
      return Promise.resolve();
    }
    return new Promise((admit, fail) => {
      const place = {
        admit,
        timer: setTimeout(() => {
          const at = line.indexOf(place);
          if (at >= 0) line.splice(at, 1);
          fail(
            Object.assign(new Error(`pool timeout: no connection free after ${timeoutMs} ms (${limit} in use, ${line.length} more waiting)`), {
              code: "ER_GET_CONNECTION_TIMEOUT",
              errno: 45028,
              sqlState: "HY000",
            }),
          );
        }, timeoutMs),
      };
      line.push(place);
    });
  };
  // A leaving caller's place goes to the first in line, if any (the count of holders stays).
  const leave = () => {
    const next = line.shift();
    if (!next) {
      holding--;
      return;
    }
    clearTimeout(next.timer);
    next.admit();
  };
  const gated =
    <A extends unknown[], R>(run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await enter();
      try {
        return await run(...args);
      } finally {
        leave();
      }
    };

  const getConnection = pool.getConnection.bind(pool);
  const query = pool.query.bind(pool);
  const execute = pool.execute.bind(pool);
  const batch = pool.batch.bind(pool);
  return Object.assign(pool, {
    async getConnection() {
      await enter();
      let conn: mariadb.PoolConnection;
      try {
        conn = await getConnection();
      } catch (e) {
        leave();
        throw e;
      }
      let held = true;
      const done = () => {
        if (!held) return;
        held = false;
        leave();
      };
      const release = conn.release.bind(conn);
      const destroy = conn.destroy.bind(conn);
      const released = async () => {
        try {
          await release();
        } finally {
          done();
        }
      };
      return Object.assign(conn, {
        release: released,
        end: released,
        close: released,
        destroy() {
          destroy();
          done();
        },
      });
    },
    query: gated(query),
    execute: gated(execute),
    batch: gated(batch),
  } as Partial<mariadb.Pool>);
}
