/**
 * npm run reconciler -- [--once] [--interval <seconds>]
 *
 * The background reconciler outside the server: works the due reconciliation
 * items (open with next_check_at reached, or checking with an expired lease),
 * asking each item's provider (PROVIDERS / PROVIDER_URL) and resolving
 * accordingly, as the system actor "reconciler". --once runs one tick and exits
 * (for cron); otherwise it ticks every --interval seconds (default
 * RECONCILER_INTERVAL_SECONDS, else 30) until SIGINT/SIGTERM. One instance works
 * at a time across processes (a session lock on PostgreSQL and MySQL); several may run.
 * Prints one JSON line per tick that did something (or every tick with --once).
 * Exit code 1 when the tick failed.
 */
import { CliError, openMigratedDatabase, parseFlags, runCli, UsageError } from "./cli-common";
import { reconcileConfigFromEnv } from "../lib/reconcile/config";
import { runReconcilerOnce, type TickSummary } from "../lib/reconcile/worker";

const USAGE = "usage: npm run reconciler -- [--once] [--interval <seconds>]";

const line = (s: TickSummary) =>
  JSON.stringify({ at: new Date().toISOString(), status: s.status, items: s.items, actions: s.actions, errors: s.errors, ms: s.ms });

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2), ["interval"], ["once"]);
  const config = reconcileConfigFromEnv();
  let interval = config.intervalSeconds || 30;
  if (flags.has("interval")) {
    const v = flags.get("interval")!;
    if (!/^\d{1,6}$/.test(v) || Number(v) < 1) throw new UsageError("--interval must be a whole number of seconds ≥ 1");
    interval = Number(v);
  }
  const db = await openMigratedDatabase();
  try {
    if (flags.has("once")) {
      const s = await runReconcilerOnce(db, { config });
      console.log(line(s));
      return s.errors ? 1 : 0;
    }
    let stopping = false;
    let wake: (() => void) | null = null;
    const stop = () => {
      stopping = true;
      wake?.();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    console.error(`reconciler: checking due items every ${interval} s (Ctrl-C stops)`);
    while (!stopping) {
      try {
        const s = await runReconcilerOnce(db, { config });
        if (s.status === "worked" || s.errors) console.log(line(s));
      } catch (err) {
        console.error(`reconciler: tick failed: ${err instanceof Error ? err.message : err}`);
      }
      if (stopping) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, interval * 1000);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return 0;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`reconciler: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await db.close();
  }
}

runCli(main, USAGE);
