/**
 * npm run stats -- refresh | rebuild | verify
 *
 * The read side's maintenance, outside the server (the server's background refresher
 * does `refresh` every ROLLUP_REFRESH_SECONDS):
 * - refresh: rolls up the new events and counts the records they reserved (lib/stats/rollups.ts);
 * - rebuild: throws the rollups and the record census away and counts everything again
 *   (batched; the overview stays exact meanwhile);
 * - verify: recounts the record census from the records (O(records), one snapshot) and
 *   repairs it; prints the drift found. Exit code 2 when there was any — something other
 *   than the console deleted records, inserted them without a `reserved` event, or moved
 *   their expires_at (lib/stats/census.ts).
 * One JSON line on stdout.
 */
import { CliError, openMigratedDatabase, runCli, UsageError } from "./cli-common";
import { driftRecords } from "../lib/stats/census";
import { rebuildRollups, refreshRollups, verifyRecordCensus } from "../lib/stats/rollups";

const USAGE = "usage: npm run stats -- refresh | rebuild | verify";

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length !== 1 || !["refresh", "rebuild", "verify"].includes(args[0]))
    throw new UsageError(args.length ? `unknown command ${JSON.stringify(args.join(" "))}` : "a command is needed");
  const db = await openMigratedDatabase();
  const started = Date.now();
  try {
    if (args[0] === "verify") {
      const drift = await db.withSession((s) => verifyRecordCensus(s));
      const records = driftRecords(drift);
      console.log(JSON.stringify({ command: "verify", ms: Date.now() - started, driftHours: drift.length, driftRecords: records, drift: drift.slice(0, 50) }));
      if (drift.length) console.error(`stats: the record census was off by ${records} record(s) in ${drift.length} operation-hour(s); repaired`);
      return drift.length ? 2 : 0;
    }
    const r = await db.withSession((s) => (args[0] === "rebuild" ? rebuildRollups(s) : refreshRollups(s)));
    console.log(
      JSON.stringify({
        command: args[0],
        ms: Date.now() - started,
        watermark: r.watermark.toString(),
        eventsCounted: r.eventsCounted,
        batches: r.batches,
        gapsOpen: r.gapsOpen,
      }),
    );
    return 0;
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message : String(err));
  } finally {
    await db.close();
  }
}

runCli(main, USAGE);
