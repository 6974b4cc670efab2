import { demoStore } from "./store";
import type { Database } from "../db/client";
import { isServerMode } from "../db/config";
import { IdempotencyStore, type BeginResult, type CompleteInput, type IdempotencyRecord } from "../idempotency";
import { planTraffic, type Intent, type OutboxFate } from "./traffic-plan";
import { plantInsightCases, type InsightCasesSummary } from "./insight-cases";

/**
 * Realistic demo traffic, written THROUGH the writers' protocol library
 * (IdempotencyStore) with an injected clock, so the console has a month of
 * believable history to show. What is sent, when and with what outcome is the plan
 * (lib/demo/traffic-plan.ts: every situation the console exists for, deterministic
 * from the seed); this module sends it — begin(), then complete/fail/markPending as
 * the plan says, the retries, concurrent duplicates and conflicting reuses — and
 * counts what the library answered.
 *
 * Same inputs on a fresh database → the same rows (ids aside, which Postgres may hand
 * out in another order when requests run concurrently).
 *
 * Re-running with the same seed on a database that already holds its data is
 * safe: keys and payloads come from seed-derived streams that do not depend on
 * `now`, so every request hits an existing key and becomes a replay (or an
 * in_progress rejection for pending/processing records, or a conflict again);
 * no record is created twice and only event rows are added. (At a later `now`,
 * the few follow-up steps whose moment has come in between — a refund, a
 * webhook — are new records.) A different seed adds an independent month of traffic.
 */

export interface DemoTrafficOptions {
  seed?: number;
  /** History spread over the last `days` days (default 30). */
  days?: number;
  /** Approximate number of business requests (records); retries and duplicates come on top. Default 3000. */
  requests?: number;
  /** The end of the simulated history (default: the real current time). */
  now?: Date;
  /** Parallel lanes of independent requests (default 8 on a database server, 1 on embedded PGlite). */
  concurrency?: number;
  /** Also plant one case of each insight (lib/demo/insight-cases.ts): the embedded demo does. */
  insightCases?: boolean;
  log?: (line: string) => void;
}

export interface DoubleSubmit {
  scope: string;
  operation: string;
  payloadHash: string;
  amountMinor: number;
  currency: string;
  keys: [string, string];
  recordIds: [string, string];
  createdAt: [string, string];
  secondsApart: number;
}

export interface DemoSummary {
  seed: number;
  days: number;
  from: string;
  to: string;
  /** Business intents planned (one record each on a fresh database). */
  intents: number;
  /** begin() calls made: intents + retries + concurrent duplicates + conflicting reuses. */
  requests: number;
  recordsCreated: number;
  /** Event rows written (every begin and every complete/fail/pending writes one). */
  eventsWritten: number;
  outcomes: { owner: number; replay: number; conflict: number; in_progress: number };
  scenarios: {
    completed: number;
    /** Replayed responses from client retries / webhook redeliveries of completed requests. */
    retriesReplayed: number;
    concurrentGroups: number;
    /** Non-owner requests inside concurrent groups (rejected as in progress). */
    concurrentDuplicates: number;
    conflicts: number;
    failed: number;
    failedReplayed: number;
    pending: number;
    pendingRecent: number;
    pendingOld: number;
    /** Retries that hit a pending or processing record (in_progress). */
    inProgressRejected: number;
    stuckProcessing: number;
    inFlight: number;
    expired: number;
    expiringNext24h: number;
    doubleSubmitPairs: number;
    outboxMessages: number;
  };
  byOperation: Record<string, number>;
  byScope: Record<string, number>;
  byStatus: Record<string, number>;
  doubleSubmits: DoubleSubmit[];
  /** With `insightCases`: what was planted for the insights. */
  insightCases?: InsightCasesSummary;
  elapsedMs: number;
}

const DAY = 24 * 60 * 60 * 1000;

export async function generateDemoTraffic(db: Database, opts: DemoTrafficOptions = {}): Promise<DemoSummary> {
  const started = performance.now();
  const seed = opts.seed ?? 1;
  const days = opts.days ?? 30;
  const requested = opts.requests ?? 3000;
  const now = opts.now ?? new Date();
  const log = opts.log ?? (() => {});
  if (!Number.isInteger(seed)) throw new Error("seed must be an integer");
  if (!(days > 0 && days <= 365)) throw new Error("days must be in (0, 365]");
  if (!(Number.isInteger(requested) && requested > 0)) throw new Error("requests must be a positive integer");
  const nowMs = now.getTime();
  // A database server takes concurrent writers; PGlite is one connection.
  const lanes = Math.max(1, opts.concurrency ?? (isServerMode(db.mode) ? 8 : 1));

  const plan = planTraffic(seed, days, requested, nowMs);
  log(`planned ${plan.intents.length} business requests over ${days} days (seed ${seed}), ${lanes} lane(s)`);

  const summary: DemoSummary = {
    seed,
    days,
    from: new Date(nowMs - days * DAY).toISOString(),
    to: now.toISOString(),
    intents: plan.intents.length,
    requests: 0,
    recordsCreated: 0,
    eventsWritten: 0,
    outcomes: { owner: 0, replay: 0, conflict: 0, in_progress: 0 },
    scenarios: {
      completed: 0,
      retriesReplayed: 0,
      concurrentGroups: 0,
      concurrentDuplicates: 0,
      conflicts: 0,
      failed: 0,
      failedReplayed: 0,
      pending: 0,
      pendingRecent: 0,
      pendingOld: 0,
      inProgressRejected: 0,
      stuckProcessing: 0,
      inFlight: 0,
      expired: 0,
      expiringNext24h: 0,
      doubleSubmitPairs: 0,
      outboxMessages: 0,
    },
    byOperation: {},
    byScope: {},
    byStatus: {},
    doubleSubmits: [],
    elapsedMs: 0,
  };
  const s = summary.scenarios;
  const inc = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
  const storeAt = (t: number) => new IdempotencyStore(db, { clock: () => new Date(t) });
  const tally = (r: BeginResult) => {
    summary.requests++;
    summary.eventsWritten++;
    summary.outcomes[r.outcome]++;
    if (r.outcome === "in_progress") s.inProgressRejected++;
    return r;
  };
  const outboxRows: { recordId: bigint; topic: string; fate: OutboxFate }[] = [];
  const pairs = new Map<number, { key: string; id: bigint; at: number; hash: string; scope: string; operation: string; amount: number; currency: string }[]>();

  const run = async (intent: Intent) => {
    const { input } = intent;
    const results =
      intent.concurrent > 1
        ? await Promise.all(Array.from({ length: intent.concurrent }, () => storeAt(intent.at).begin(input)))
        : [await storeAt(intent.at).begin(input)];
    results.forEach(tally);
    const owner = results.find((r) => r.outcome === "owner");
    if (intent.concurrent > 1 && owner) {
      s.concurrentGroups++;
      s.concurrentDuplicates += intent.concurrent - 1;
    }
    // No owner: the key already existed (a re-run with the same seed). The same requests
    // are sent again (retries, conflicting reuse) but nothing executes.
    const status = owner ? await finish(intent, owner.record) : "existing";
    for (const t of intent.retries) {
      const r = tally(await storeAt(t).begin(input));
      if (r.outcome === "replay") {
        if (r.record.status === "failed") s.failedReplayed++;
        else s.retriesReplayed++;
      }
    }
    if (intent.conflict) {
      const r = tally(await storeAt(intent.conflict.at).begin({ ...input, payload: intent.conflict.payload }));
      if (r.outcome === "conflict") s.conflicts++;
    }
    return status;
  };

  /** The owner's part: execute (simulated) and record the outcome. */
  const finish = async (intent: Intent, record: IdempotencyRecord): Promise<string> => {
    const { input, outcome } = intent;
    summary.recordsCreated++;
    inc(summary.byOperation, input.operation);
    inc(summary.byScope, input.scope);
    const expires = record.expiresAt.getTime();
    if (expires < nowMs) s.expired++;
    else if (expires < nowMs + DAY) s.expiringNext24h++;

    let status: string = "processing";
    switch (outcome.type) {
      case "complete": {
        const done = await storeAt(outcome.at).complete(record.id, {
          code: outcome.code,
          headers: outcome.headers,
          body: outcome.body,
          resourceType: outcome.resourceType,
          resourceId: outcome.resourceId,
          providerReference: outcome.providerReference,
          outbox: outcome.outbox,
        } satisfies CompleteInput);
        status = "completed";
        s.completed++;
        s.outboxMessages += outcome.outbox.length;
        outcome.outbox.forEach((m, k) => outboxRows.push({ recordId: done.id, topic: m.topic, fate: intent.outboxFate[k] }));
        if (intent.doubleSubmit !== undefined) {
          const list = pairs.get(intent.doubleSubmit) ?? [];
          list.push({
            key: input.key as string,
            id: done.id,
            at: done.createdAt.getTime(),
            hash: done.payloadHash,
            scope: done.scope,
            operation: done.operation,
            amount: Number(done.amountMinor),
            currency: done.currency!,
          });
          pairs.set(intent.doubleSubmit, list);
        }
        break;
      }
      case "fail":
        await storeAt(outcome.at).fail(record.id, { code: outcome.code, headers: outcome.headers, body: outcome.body, error: outcome.error });
        status = "failed";
        s.failed++;
        break;
      case "pending":
        await storeAt(outcome.at).markPending(record.id, { providerRequestId: outcome.providerRequestId, error: outcome.error, firstCheckInSeconds: 60 });
        status = "pending";
        s.pending++;
        if (nowMs - outcome.at < DAY) s.pendingRecent++;
        else s.pendingOld++;
        break;
      case "stuck":
        s.stuckProcessing++;
        break;
      case "in_flight":
        s.inFlight++;
        break;
    }
    if (outcome.type === "complete" || outcome.type === "fail" || outcome.type === "pending") summary.eventsWritten++;
    inc(summary.byStatus, status);
    return status;
  };

  // Independent intents run in `lanes` parallel lanes; each intent's own steps stay in order.
  let next = 0;
  let finished = 0;
  const step = Math.max(1, Math.ceil(plan.intents.length / 10));
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < plan.intents.length) {
        const intent = plan.intents[next++];
        await run(intent);
        if (++finished % step === 0) log(`  ${finished}/${plan.intents.length}`);
      }
    }),
  );

  await dispatchOutbox(db, outboxRows);

  for (const [, list] of [...pairs.entries()].sort(([a], [b]) => a - b)) {
    if (list.length !== 2) continue;
    const [a, b] = list.sort((x, y) => x.at - y.at);
    summary.doubleSubmits.push({
      scope: a.scope,
      operation: a.operation,
      payloadHash: a.hash,
      amountMinor: a.amount,
      currency: a.currency,
      keys: [a.key, b.key],
      recordIds: [a.id.toString(), b.id.toString()],
      createdAt: [new Date(a.at).toISOString(), new Date(b.at).toISOString()],
      secondsApart: Math.round((b.at - a.at) / 1000),
    });
  }
  s.doubleSubmitPairs = summary.doubleSubmits.length;
  if (opts.insightCases) summary.insightCases = await plantInsightCases(db, { seed, now });
  summary.elapsedMs = Math.round(performance.now() - started);
  log(`done: ${summary.recordsCreated} records, ${summary.requests} requests, ${summary.eventsWritten} events in ${summary.elapsedMs} ms`);
  return summary;
}

/**
 * The outbox dispatcher is another process, not the writers' protocol: simulate
 * what it did since (most messages sent within seconds, a few retrying or given
 * up), in a few set-based statements.
 */
async function dispatchOutbox(db: Database, rows: { recordId: bigint; topic: string; fate: OutboxFate }[]): Promise<void> {
  const changed = rows.filter((r) => r.fate.status !== "pending" || r.fate.attempts > 0);
  const at = (t?: number) => (t === undefined ? null : new Date(t));
  for (let i = 0; i < changed.length; i += 2000) {
    await demoStore(db.sql).dispatchOutbox(
      changed.slice(i, i + 2000).map((r) => ({
        recordId: r.recordId,
        topic: r.topic,
        status: r.fate.status,
        attempts: r.fate.attempts,
        sentAt: at(r.fate.sentAt),
        nextAttemptAt: at(r.fate.nextAttemptAt),
        lastError: r.fate.lastError ?? null,
      })),
    );
  }
}
