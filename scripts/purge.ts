/**
 * Retention purges from a shell.
 *
 *   npm run purge -- --dry-run                      what a purge would delete now, per policy
 *   npm run purge -- --start --reason "…" [--batch-size 1000] [--pause-ms 100] [--confirm N]
 *   npm run purge -- --resume                       works the active run to the end (e.g. after a crash)
 *   npm run purge -- --status                       the active run and the last ones
 *
 * --start creates a run (one at a time; the policies as they are now, as of now) and
 * works it in this process until it ends, then exits. With --confirm N it refuses
 * unless the purge would delete exactly N records (the dry run's number).
 * --resume takes over the run in progress: when another process still holds its
 * lease (PURGE_LEASE_SECONDS, default 30), it waits for the lease to run out first
 * (at most --wait-seconds, default 600). Either way the work is resumable: kill it
 * at any point and --resume continues after the last committed batch. --batch-size is
 * records per batch; an events batch takes ten times as many (lib/retention/config.ts).
 *
 * Uses DATABASE_URL (PostgreSQL, MySQL/MariaDB) or the embedded PGlite in PGLITE_DIR (stop the server
 * first: one process per PGlite folder). Audited as the system actor
 * "cli purge (user@host)". Exit 0 when the run completed or was cancelled, 1 when it
 * failed or was refused, 130 after Ctrl-C (the run stays resumable).
 */
import { hostname, userInfo } from "node:os";
import { randomBytes } from "node:crypto";
import type { SystemActor } from "../lib/auth/users";
import { DEFAULT_BATCH_SIZE, DEFAULT_PAUSE_MS, purgeLeaseSeconds } from "../lib/retention/config";
import { dryRunInSnapshot } from "../lib/retention/dry-run";
import { currentRules } from "../lib/retention/policies";
import { activeRun, listRuns, startPurgeBodySchema, startPurge, type PurgeRunView } from "../lib/retention/runs";
import { claimRun, workRun, type WorkOutcome } from "../lib/retention/worker";
import { CliError, UsageError, cliRequestMeta, describeIssues, openMigratedDatabase, parseFlags, runCli } from "./cli-common";

const USAGE =
  "usage: npm run purge -- --dry-run | --status | --resume [--wait-seconds 600]\n" +
  `       npm run purge -- --start --reason TEXT [--batch-size ${DEFAULT_BATCH_SIZE}] [--pause-ms ${DEFAULT_PAUSE_MS}] [--confirm N]`;

function who(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return hostname();
  }
}

const progress = (r: PurgeRunView) =>
  `run ${r.id} ${r.state}, ${r.phase}: ${r.recordsDeleted}/${r.estimatedRecords ?? "?"} records, ${r.eventsDeleted}/${r.estimatedEvents ?? "?"} events, ${r.batches} batches`;

async function work(db: Awaited<ReturnType<typeof openMigratedDatabase>>, runId: bigint, workerId: string): Promise<number> {
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error("stopping after the batch in flight (Ctrl-C again to quit at once); resume with npm run purge -- --resume");
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let lastLine = 0;
  let outcome: WorkOutcome;
  try {
    outcome = await workRun(db, runId, {
      workerId,
      shouldStop: () => interrupted,
      log: { log: (l) => console.error(l), warn: (l) => console.error(l) },
      onBatch: (r) => {
        if (Date.now() - lastLine >= 1000) {
          lastLine = Date.now();
          console.error(progress(r));
        }
      },
    });
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  if (outcome.outcome === "stopped") return 130;
  if (outcome.outcome === "lost") throw new CliError(`run ${runId} was taken over by ${outcome.run?.worker ?? "another worker"}`);
  if (!outcome.run) throw new CliError(`run ${runId} disappeared`);
  console.log(progress(outcome.run));
  return outcome.run.state === "failed" ? 1 : 0;
}

async function main(): Promise<number> {
  const flags = parseFlags(
    process.argv.slice(2),
    ["reason", "batch-size", "pause-ms", "confirm", "wait-seconds"],
    ["start", "resume", "dry-run", "status", "help"],
  );
  if (flags.has("help")) {
    console.log(USAGE);
    return 0;
  }
  const modes = ["start", "resume", "dry-run", "status"].filter((m) => flags.has(m));
  if (modes.length !== 1) throw new UsageError("give exactly one of --start, --resume, --dry-run, --status");
  const mode = modes[0];
  if (mode !== "start" && ["reason", "batch-size", "pause-ms", "confirm"].some((f) => flags.has(f))) {
    throw new UsageError("--reason, --batch-size, --pause-ms and --confirm go with --start");
  }
  const int = (name: string) => {
    const v = flags.get(name);
    if (v === undefined) return undefined;
    if (!/^\d{1,9}$/.test(v.trim())) throw new UsageError(`--${name} must be a whole number`);
    return Number(v);
  };
  const parsed =
    mode === "start"
      ? startPurgeBodySchema.safeParse({
          reason: flags.get("reason") ?? "",
          confirm: flags.get("confirm") ?? "0",
          batchSize: int("batch-size") ?? DEFAULT_BATCH_SIZE,
          pauseMs: int("pause-ms") ?? DEFAULT_PAUSE_MS,
        })
      : null;
  if (parsed && !parsed.success) {
    throw new UsageError(
      `invalid input:\n${describeIssues(parsed.error.issues, { reason: "--reason", batchSize: "--batch-size", pauseMs: "--pause-ms", confirm: "--confirm" })}`,
    );
  }
  const waitSeconds = int("wait-seconds") ?? 600;

  const workerId = `cli:${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const db = await openMigratedDatabase();
  try {
    if (mode === "dry-run") {
      const d = await dryRunInSnapshot(db.withSession, await currentRules(db.prisma), new Date(), { samples: 0 });
      if (d.policies.length === 0) console.log("no retention policy: nothing is eligible");
      for (const p of d.policies) {
        const name = p.policy.operation ?? "(default)";
        const kept =
          Object.entries(p.records.protected)
            .filter(([, n]) => n > 0)
            .map(([k, n]) => `${k} ${n}`)
            .join(", ") || "none";
        console.log(
          `${name}${p.policy.enabled ? "" : " [disabled]"}: keep records ${p.policy.keepRecordsDays} d after expiry, events ${p.policy.keepEventsDays} d — ` +
            `${p.records.eligible} records and ${p.events.eligible} events eligible; kept past the window: ${kept}`,
        );
      }
      console.log(`total: ${d.totals.records} records, ${d.totals.events} events (as of ${d.asOf.toISOString()})`);
      return 0;
    }
    if (mode === "status") {
      const { items, active } = await listRuns(db.prisma, { limit: 10 });
      console.log(
        active ? `in progress: ${progress(active)} (worker ${active.worker}, lease until ${active.leaseUntil?.toISOString() ?? "—"})` : "no purge in progress",
      );
      for (const r of items) console.log(`  ${progress(r)} — ${r.startedByLabel}: ${r.reason}`);
      return 0;
    }
    if (mode === "start") {
      const input = parsed!.data!;
      const actor: SystemActor = { type: "system", label: `cli purge (${who()})` };
      const run = await startPurge(
        db.prisma,
        actor,
        { ...input, confirm: flags.has("confirm") ? input.confirm : undefined },
        { workerId, leaseSeconds: purgeLeaseSeconds(), requireConfirmation: flags.has("confirm") },
        cliRequestMeta("purge"),
      );
      console.error(`started purge run ${run.id} as of ${run.asOf.toISOString()}: ${run.estimatedRecords} records and ${run.estimatedEvents} events estimated`);
      return await work(db, run.id, workerId);
    }
    // --resume
    const deadline = Date.now() + waitSeconds * 1000;
    let said = false;
    for (;;) {
      const active = await activeRun(db.prisma);
      if (!active) {
        console.log("no purge in progress: nothing to resume");
        return 0;
      }
      const id = await claimRun(db, workerId, { runId: active.id, log: { log: (l) => console.error(l) } });
      if (id !== null) {
        console.error(`resuming ${progress(active)}`);
        return await work(db, id, workerId);
      }
      if (Date.now() > deadline)
        throw new CliError(
          `run ${active.id} is still worked by ${active.worker} (lease until ${active.leaseUntil?.toISOString()}); gave up after ${waitSeconds} s`,
        );
      if (!said) {
        console.error(`run ${active.id} is worked by ${active.worker} until ${active.leaseUntil?.toISOString()}: waiting for its lease to run out…`);
        said = true;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await db.close();
  }
}

runCli(main, USAGE);
