import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, usingDatabaseServer, type TestDatabase } from "./helpers/db";
import { buildRetentionDataset, keptChecksums, remaining, truth } from "./helpers/retention";

/**
 * A purge killed with SIGKILL mid-run resumes without redoing or skipping anything.
 * `npm run purge -- --start` runs as a real child process against a throwaway
 * database on the server (PostgreSQL or MySQL / MariaDB; small batches, a pause, a 2-second
 * lease); once at least one batch has committed it is killed with SIGKILL; `--resume` in a
 * new process waits for the lease to run out, takes the run over and finishes it. Database
 * servers only: two processes cannot share an embedded PGlite.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
let db: TestDatabase;
const children: ChildProcess[] = [];

beforeAll(async () => {
  if (!usingDatabaseServer) return;
  db = await createTestDatabase();
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await db?.drop();
});

function purgeCli(args: string[]): { child: ChildProcess; exited: Promise<{ code: number | null; signal: string | null; output: string }> } {
  // One process (node with tsx's loader), so SIGKILL hits the worker itself, not a wrapper.
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/purge.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: db.url!, PURGE_LEASE_SECONDS: "2" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<{ code: number | null; signal: string | null; output: string }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, output })),
  );
  return { child, exited };
}

interface RunRow {
  id: bigint;
  state: string;
  phase: string;
  batches: number;
  records_deleted: bigint;
  events_deleted: bigint;
  record_watermark: bigint;
  worker: string | null;
}

async function runRow(): Promise<RunRow | undefined> {
  const [row] = await db.sql.query<RunRow>(
    `SELECT id, state, phase, batches, records_deleted, events_deleted, record_watermark, worker FROM purge_runs ORDER BY id DESC LIMIT 1`,
  );
  return row;
}

describe.skipIf(!usingDatabaseServer)("purge killed with SIGKILL", () => {
  it("resumes from the last committed batch: exactly the eligible set is deleted, counts in the row and the audit equal the rows gone", async () => {
    await buildRetentionDataset(db, { scale: 6 });
    const t = await truth(db, new Date());
    expect(t.records.length).toBe(54);
    const kept = await keptChecksums(db, t);

    const first = purgeCli(["--start", "--reason", "crash test", "--batch-size", "8", "--pause-ms", "100"]);
    // Wait until some batches have committed, well before the records phase ends.
    const deadline = Date.now() + 60_000;
    let row: RunRow | undefined;
    for (;;) {
      row = await runRow();
      if (row && row.state === "running" && row.batches >= 3) break;
      if (first.child.exitCode !== null) throw new Error(`the purge ended before it could be killed:\n${(await first.exited).output}`);
      if (Date.now() > deadline)
        throw new Error(
          `no batch committed in time:\n${
            (await first.exited.then(
              () => "",
              () => "",
            )) || ""
          }`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
    first.child.kill("SIGKILL");
    const killed = await first.exited;
    expect(killed.signal).toBe("SIGKILL");

    // What the dead worker committed is exactly what is gone: a prefix of the eligible set in id order.
    const atKill = (await runRow())!;
    expect(atKill.state).toBe("running");
    expect(atKill.phase).toBe("records");
    const goneAtKill = t.records.length - (await remaining(db, t)).records;
    expect(Number(atKill.records_deleted)).toBe(goneAtKill);
    expect(goneAtKill).toBeGreaterThanOrEqual(15);
    expect(goneAtKill).toBeLessThan(t.records.length);
    const deadWorker = atKill.worker;

    const second = purgeCli(["--resume"]);
    const resumed = await second.exited;
    expect(resumed.code, resumed.output).toBe(0);
    expect(resumed.output).toMatch(/waiting for its lease|takes over/);

    const done = (await runRow())!;
    expect(done.state).toBe("completed");
    expect(done.worker).not.toBe(deadWorker);
    expect(Number(done.records_deleted)).toBe(t.records.length);
    expect(Number(done.events_deleted)).toBe(t.events.length);
    expect(await remaining(db, t)).toEqual({ records: 0, events: 0 });
    expect(await keptChecksums(db, t)).toEqual(kept);

    const audit = await db.prisma.auditEntry.findMany({ where: { targetTable: "purge_runs", targetId: String(done.id) }, orderBy: { id: "asc" } });
    expect(audit.map((e) => e.action)).toEqual(["purges.start", "purges.finish"]);
    expect(audit[0].actorLabel).toMatch(/^cli purge/);
    expect(audit[1].after).toMatchObject({
      state: "completed",
      recordsDeleted: String(t.records.length),
      eventsDeleted: String(t.events.length),
      batches: done.batches,
    });
  }, 120_000);
});
