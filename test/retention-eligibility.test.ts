import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { dryRunInSnapshot } from "@/lib/retention/dry-run";
import { byDialect } from "@/lib/db/dialect";
import * as mysqlPurge from "@/lib/retention/purge-store.mysql";
import * as postgresPurge from "@/lib/retention/purge-store.postgres";
import { currentRules } from "@/lib/retention/policies";
import { eventBatchSize, MAX_BATCH_SIZE } from "@/lib/retention/config";
import { execute, txExecutor } from "@/lib/db/sql";
import { getRun, startPurge } from "@/lib/retention/runs";
import { claimRun, stopPurgeWork, workRun } from "@/lib/retention/worker";
import { expiryStats } from "@/lib/stats/expiry";
import { createTestDatabase, usingMysql, type TestDatabase } from "./helpers/db";
import { buildRetentionDataset, keptChecksums, RECORD_CLASSES, remaining, truth, type RetentionDataset } from "./helpers/retention";

/**
 * Purge eligibility and the purge run, on a dataset with every protected kind next to
 * eligible rows (test/helpers/retention.ts): lib/retention's one definition must equal an
 * independent hand-written query, class by class; a run must delete exactly that set and
 * leave every other row (and its reconciliation items, outbox messages, compensations)
 * byte for byte as it was; the dry run's numbers must be what the run deletes.
 */

const SYSTEM = { type: "system" as const, label: "retention test" };
const quiet = { log: () => {}, warn: () => {} };
let db: TestDatabase;
let data: RetentionDataset;
const SCALE = 2;

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  data = await buildRetentionDataset(db, { scale: SCALE });
});

afterAll(async () => {
  await stopPurgeWork();
  await db?.drop();
});

const ids = (rows: { id: bigint }[]) => rows.map((r) => String(r.id));
// Every eligible id by THE condition, in the test database's dialect.
const eligibleRecordIdsSql = (...a: Parameters<typeof postgresPurge.eligibleRecordIdsSql>) =>
  byDialect(db, { postgres: postgresPurge.eligibleRecordIdsSql, mysql: mysqlPurge.eligibleRecordIdsSql })(...a);
const eligibleEventIdsSql = (...a: Parameters<typeof postgresPurge.eligibleEventIdsSql>) =>
  byDialect(db, { postgres: postgresPurge.eligibleEventIdsSql, mysql: mysqlPurge.eligibleEventIdsSql })(...a);

describe("eligibility: one definition", () => {
  it("equals the hand-written truth for records and events, and the dataset's classes", async () => {
    const rules = await currentRules(db.prisma);
    const t = await truth(db, data.asOf);
    const r = eligibleRecordIdsSql(rules, data.asOf);
    const e = eligibleEventIdsSql(rules, data.asOf);
    expect(ids(await db.sql.query<{ id: bigint }>(r.text, r.values))).toEqual(t.records);
    expect(ids(await db.sql.query<{ id: bigint }>(e.text, e.values))).toEqual(t.events);

    // Class by class, as the dataset was built.
    const eligible = new Set(t.records);
    for (const [id, label] of data.labels) {
      expect(eligible.has(id), `${label} (record ${id})`).toBe(data.eligibleClasses.includes(label));
    }
    expect(t.records).toHaveLength(data.eligibleClasses.length * SCALE);

    // Events: never of a held record or scope, never one not rolled up, never of the disabled policy's operation.
    const kept = await db.sql.query<{ id: bigint; why: string }>(
      `SELECT e.id, CASE WHEN r.legal_hold THEN 'legal_hold' WHEN e.scope = 'tenant:held' THEN 'scope_hold'
                         WHEN e.idempotency_key = 'late' THEN 'late' WHEN e.operation = 'issue_invoice' THEN 'disabled' END AS why
         FROM idempotency_events e LEFT JOIN idempotency_records r ON r.id = e.record_id
        WHERE r.legal_hold OR e.scope = 'tenant:held' OR e.idempotency_key = 'late' OR e.operation = 'issue_invoice'`,
    );
    const eligibleEvents = new Set(t.events);
    expect(kept.length).toBeGreaterThan(10);
    for (const k of kept) expect(eligibleEvents.has(String(k.id)), `event ${k.id} (${k.why})`).toBe(false);
    // Orphan events (no record, or a record long gone) are purged by their operation's policy.
    const orphans = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_events WHERE idempotency_key = 'orphan' AND scope <> 'tenant:held'`);
    for (const o of orphans) expect(eligibleEvents.has(String(o.id))).toBe(true);
  });

  it("dry run: per policy, eligible and protected by reason, samples from the eligible set", async () => {
    const rules = await currentRules(db.prisma);
    const t = await truth(db, data.asOf);
    const d = await dryRunInSnapshot(db.withSession, rules, data.asOf, { samples: 3 });
    expect(d.totals).toEqual({ records: t.records.length, events: t.events.length });
    const byOp = new Map(d.policies.map((p) => [p.policy.operation ?? "(default)", p]));
    const def = byOp.get("(default)")!;
    const cap = byOp.get("capture_payment")!;
    const inv = byOp.get("issue_invoice")!;
    // Kept past the window, by reason (per SCALE copies of each class).
    expect(def.records.protected).toEqual({
      unfinished: 2 * SCALE,
      legal_hold: SCALE,
      scope_hold: SCALE,
      reconciliation: 2 * SCALE,
      compensation: 0,
      outbox: SCALE,
    });
    expect(cap.records.protected).toEqual({ unfinished: SCALE, legal_hold: 0, scope_hold: 0, reconciliation: SCALE, compensation: 5 * SCALE, outbox: 0 });
    expect(inv.records).toEqual({
      eligible: 0,
      pastWindow: 0,
      protected: { unfinished: 0, legal_hold: 0, scope_hold: 0, reconciliation: 0, compensation: 0, outbox: 0 },
    });
    const perClass = (labels: string[]) => RECORD_CLASSES.filter((c) => c.eligible && labels.includes(c.operation)).length * SCALE;
    expect(def.records.eligible).toBe(perClass(["create_order", "accept_webhook"]));
    expect(cap.records.eligible).toBe(perClass(["capture_payment"]));
    expect(def.events.protected.not_rolled_up).toBe(3);
    expect(def.events.protected.legal_hold).toBe(2 * SCALE); // the held record's 40-day and 10-day events
    expect(def.events.protected.scope_hold).toBe(2 * SCALE + 1); // …the held scope's, and its orphan
    for (const p of d.policies) {
      expect(p.samples.length).toBeLessThanOrEqual(3);
      for (const s of p.samples) expect(t.records).toContain(String(s.id));
    }
    // The expiry screen counts the same candidates (same definition, as of the same moment).
    const expiry = await expiryStats(db, { now: data.asOf });
    expect(expiry.expired.purgeable).toBe(t.records.length);
  });
});

describe("purge run", () => {
  it("deletes exactly the eligible set, touches no protected row, and its audit entries carry the row's counts", async () => {
    const rules = await currentRules(db.prisma);
    const t = await truth(db, data.asOf);
    const d = await dryRunInSnapshot(db.withSession, rules, data.asOf, { samples: 0 });
    const before = await keptChecksums(db, t);

    // A wrong confirmation is refused; the dry run's count (same asOf) is accepted.
    await expect(
      startPurge(
        db.prisma,
        SYSTEM,
        { reason: "retention test", confirm: String(d.totals.records + 1), asOf: data.asOf, batchSize: 3, pauseMs: 0 },
        { workerId: "w1", leaseSeconds: 30 },
      ),
    ).rejects.toMatchObject({ status: 409 });
    const run = await startPurge(
      db.prisma,
      SYSTEM,
      { reason: "retention test", confirm: String(d.totals.records), asOf: data.asOf, batchSize: 3, pauseMs: 0 },
      { workerId: "w1", leaseSeconds: 30 },
    );
    expect(run).toMatchObject({ state: "running", estimatedRecords: BigInt(t.records.length), estimatedEvents: BigInt(t.events.length) });
    // Only one at a time.
    await expect(
      startPurge(
        db.prisma,
        SYSTEM,
        { reason: "second", confirm: "0", batchSize: 3, pauseMs: 0 },
        { workerId: "w1", leaseSeconds: 30, requireConfirmation: false },
      ),
    ).rejects.toMatchObject({ status: 409 });

    const batches: number[] = [];
    const progress: { records: number; events: number }[] = [{ records: 0, events: 0 }];
    const out = await workRun(db, run.id, {
      workerId: "w1",
      log: quiet,
      onBatch: (r) => {
        batches.push(Number(r.recordsDeleted));
        progress.push({ records: Number(r.recordsDeleted), events: Number(r.eventsDeleted) });
      },
    });
    expect(out.outcome).toBe("finished");
    const done = await getRun(db.prisma, run.id);
    expect(done).toMatchObject({
      state: "completed",
      phase: "done",
      recordsDeleted: BigInt(t.records.length),
      eventsDeleted: BigInt(t.events.length),
      progress: 1,
    });
    // Records 3 at a time; events ten times as many (append-only rows, config.ts).
    expect(done.eventBatchSize).toBe(30);
    expect(done.batches).toBeGreaterThanOrEqual(Math.ceil(t.records.length / 3) + Math.ceil(t.events.length / 30));
    expect(batches.every((n, i) => i === 0 || n >= batches[i - 1])).toBe(true);
    const perBatch = progress.slice(1).map((p, i) => ({ records: p.records - progress[i].records, events: p.events - progress[i].events }));
    expect(Math.max(...perBatch.map((b) => b.records))).toBeLessThanOrEqual(3);
    expect(Math.max(...perBatch.map((b) => b.events))).toBeLessThanOrEqual(30);
    expect(t.events.length).toBeGreaterThan(30);
    expect(Math.max(...perBatch.map((b) => b.events))).toBeGreaterThan(3);

    expect(await remaining(db, t)).toEqual({ records: 0, events: 0 });
    expect(await keptChecksums(db, t)).toEqual(before);
    expect(await truth(db, data.asOf)).toEqual({ records: [], events: [] });

    const entries = await db.prisma.auditEntry.findMany({ where: { targetTable: "purge_runs", targetId: String(run.id) }, orderBy: { id: "asc" } });
    expect(entries.map((e) => e.action)).toEqual(["purges.start", "purges.finish"]);
    expect(entries[0].after).toMatchObject({ estimatedRecords: String(t.records.length), estimatedEvents: String(t.events.length) });
    expect(entries[1]).toMatchObject({ outcome: "done", reason: "retention test" });
    expect(entries[1].after).toMatchObject({
      state: "completed",
      recordsDeleted: String(done.recordsDeleted),
      eventsDeleted: String(done.eventsDeleted),
      batches: done.batches,
    });
  });

  it("resumes after its worker stopped mid-run: the next worker continues from the watermark, nothing deleted twice or skipped", async () => {
    // Fresh rows to purge (new dataset copy in other scopes).
    const more = await buildRetentionDataset(db, { scale: 3 });
    const t = await truth(db, more.asOf);
    expect(t.records.length).toBeGreaterThan(20);
    const before = await keptChecksums(db, t);
    const run = await startPurge(
      db.prisma,
      SYSTEM,
      { reason: "resume test", confirm: String(t.records.length), asOf: more.asOf, batchSize: 4, pauseMs: 0 },
      { workerId: "first", leaseSeconds: 1 },
    );
    let n = 0;
    const first = await workRun(db, run.id, { workerId: "first", leaseSeconds: 1, log: quiet, shouldStop: () => n++ >= 3 });
    expect(first.outcome).toBe("stopped");
    const mid = await getRun(db.prisma, run.id);
    expect(mid.state).toBe("running");
    expect(Number(mid.recordsDeleted)).toBe(12);
    // Still leased to "first": nobody else may take it yet.
    expect(await claimRun(db, "second", { leaseSeconds: 1 })).toBeNull();
    await new Promise((r) => setTimeout(r, 1300));
    expect(await claimRun(db, "second", { leaseSeconds: 30, log: quiet })).toBe(run.id);
    // The first worker, were it still alive, now stops at its next batch.
    expect((await workRun(db, run.id, { workerId: "first", log: quiet })).outcome).toBe("lost");
    const second = await workRun(db, run.id, { workerId: "second", log: quiet });
    expect(second.run).toMatchObject({
      state: "completed",
      recordsDeleted: BigInt(t.records.length),
      eventsDeleted: BigInt(t.events.length),
      worker: "second",
    });
    expect(await remaining(db, t)).toEqual({ records: 0, events: 0 });
    expect(await keptChecksums(db, t)).toEqual(before);
  });
});

describe.runIf(usingMysql)("the largest batches on MySQL/MariaDB", () => {
  it("name their candidates in statements the server accepts through the batch's transaction (at most 65,535 parameters)", async () => {
    const rules = await currentRules(db.prisma);
    // Ids no row has: the statements run whole and delete nothing.
    const fake = Array.from({ length: MAX_BATCH_SIZE }, (_, i) => 9_000_000_000n + BigInt(i));
    const d = mysqlPurge.deleteStillEligibleSql(rules, data.asOf, fake);
    const affected = await db.prisma.$transaction((tx) => execute(txExecutor(tx, db.dialect), d.text, d.values));
    expect(affected.affectedRows, `records, ${MAX_BATCH_SIZE} candidates`).toBe(0);
    // An events batch names no ids: its bounds and its DELETE of the window past every event.
    const lo = 9_000_000_000n;
    const bounds = mysqlPurge.eventBatchBoundsSql(rules, data.asOf, lo, lo + 10_000_000n, eventBatchSize(MAX_BATCH_SIZE));
    const [row] = await db.sql.query<{ n: bigint | number; last: bigint | null }>(bounds.text, bounds.values);
    expect(Number(row.n)).toBe(0);
    const de = mysqlPurge.deleteEligibleEventsUpToSql(rules, data.asOf, lo, lo + 10_000_000n);
    const gone = await db.prisma.$transaction((tx) => execute(txExecutor(tx, db.dialect), de.text, de.values));
    expect(gone.affectedRows).toBe(0);
  });
});
