import type { SqlExecutor } from "../db/sql";
import type { CompensationRow } from "../compensations/model";
import { readSideConfig, thresholdFor, type StuckThresholds } from "../records/config";
import { recordDetail, type BodyAccess, type RecordDetail, type TimelineEvent } from "../records/detail";
import { buildMaskRules, maskText, type MaskRules } from "../records/mask";
import { formatInstant } from "../time/format";

/**
 * The story of an intent: what happened to one record, in plain sentences from its timeline —
 * the first request, retries and replays, conflicts with what differed, pending since when,
 * checks with the provider, who resolved it and why, compensations, its expiry, and the
 * duplicates of the same intent under other keys — ready to paste into a support reply.
 *
 * Built from GET /api/v1/records/{id}'s own reading (lib/records/detail.ts: every list by an
 * index on the record id), so it shows exactly what the record page shows: times in the
 * reader's time zone; free text a writer or an operator typed (errors, reasons, notes) masked
 * with the stored-response rules for everyone (the reveal is the only way round them); quotes
 * from the stored response only for readers with records.read_body, masked.
 */

export interface StorySentence {
  at: Date | null;
  kind: string;
  text: string;
}

export interface RecordStory {
  recordId: bigint;
  timeZone: string;
  bodyAccess: BodyAccess;
  sentences: StorySentence[];
  /** The sentences as one text, ready to paste. */
  text: string;
}

// --- Time, written as the console writes it ("2026-11-24 05:05:36 UTC", "… UTC+01:00") ----

/** The one way the console writes a moment (lib/time/format.ts); an unknown zone falls back to UTC. */
export function formatTime(d: Date, timeZone: string): string {
  return formatInstant(d, timeZone);
}

/** "2 d 3 h", "14 min 5 s", "0.8 s". */
export function formatSpan(ms: number): string {
  const s = Math.abs(ms) / 1000;
  if (s < 10) return `${Number(s.toFixed(1))} s`;
  const parts: [number, string][] = [
    [Math.floor(s / 86400), "d"],
    [Math.floor((s % 86400) / 3600), "h"],
    [Math.floor((s % 3600) / 60), "min"],
    [Math.floor(s % 60), "s"],
  ];
  const first = parts.findIndex(([v]) => v > 0);
  return parts
    .slice(first, first + 2)
    .filter(([v]) => v > 0)
    .map(([v, u]) => `${v} ${u}`)
    .join(" ");
}

function money(amountMinor: bigint | null, currency: string | null): string | null {
  if (amountMinor === null) return null;
  if (!currency) return `${amountMinor} (minor units)`;
  try {
    const f = new Intl.NumberFormat("en-US", { style: "currency", currency });
    const digits = f.resolvedOptions().maximumFractionDigits ?? 2;
    return f.format(Number(amountMinor) / 10 ** digits);
  } catch {
    return `${amountMinor} ${currency} (minor units)`;
  }
}

const short = (hash: string | null | undefined) => (hash ? `${hash.slice(0, 12)}…` : "unknown");
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The message a stored error body carries (problem detail, message, error), masked. */
function bodyMessage(body: string | null, rules: MaskRules): string | null {
  if (!body) return null;
  try {
    const v = JSON.parse(body) as Record<string, unknown>;
    const m = [v.detail, v.message, v.error, v.title].find((x) => typeof x === "string" && x.trim());
    return m ? maskText(String(m), rules).text : null;
  } catch {
    return null;
  }
}

export interface StoryOptions {
  bodyAccess: BodyAccess;
  timeZone: string;
  now?: Date;
  stuck?: StuckThresholds;
  rules?: MaskRules;
}

/** The story of record `id` (404 when it does not exist). */
export async function recordStory(sql: SqlExecutor, id: bigint, opts: StoryOptions): Promise<RecordStory> {
  const detail = await recordDetail(sql, id, { bodyAccess: opts.bodyAccess, now: opts.now, stuck: opts.stuck });
  return storyOf(detail, opts);
}

/** The sentences of a record's detail (no database). */
export function storyOf(d: RecordDetail, opts: StoryOptions): RecordStory {
  const now = opts.now ?? new Date();
  const tz = opts.timeZone;
  const rules = opts.rules ?? buildMaskRules();
  const masked = (t: string | null | undefined) => (t ? maskText(t, rules).text : t);
  const at = (x: Date) => formatTime(x, tz);
  const r = d.record;
  const out: StorySentence[] = [];
  const say = (when: Date | null, kind: string, text: string) => out.push({ at: when, kind, text });
  const events = d.timeline.events;
  const reserved = events.find((e) => e.kind === "reserved");
  const first = reserved?.occurredAt ?? r.createdAt;
  const amount = money(r.amountMinor, r.currency);

  say(
    first,
    "first_request",
    `On ${at(first)} the client of ${r.scope} first asked to ${r.operation.replace(/_/g, " ")}${amount ? ` for ${amount}` : ""} under the idempotency key ${r.idempotencyKey}; ` +
      `the console's record ${r.id} was reserved for it${r.correlationId ? ` (correlation id ${r.correlationId})` : ""}.`,
  );
  if (d.timeline.truncated) say(null, "note", `Only the newest ${events.length} of its ${d.timeline.total} events are told here.`);

  // Requests at the very instant of the reservation: a double click, a doubled delivery.
  const concurrent = events.filter((e) => e.kind === "in_progress" && e.occurredAt.getTime() === first.getTime());
  if (concurrent.length) {
    say(
      first,
      "concurrent",
      `${plural(concurrent.length, "more request")} with the same key arrived at the same instant (a double click or a doubled delivery) and ${concurrent.length === 1 ? "was" : "were"} refused as still in progress (409): the effect ran once.`,
    );
  }

  const late = (e: TimelineEvent) => e.occurredAt.getTime() > r.expiresAt.getTime();
  for (const e of events) {
    switch (e.kind) {
      case "completed": {
        const took = formatSpan(e.occurredAt.getTime() - first.getTime());
        const what = [
          e.responseCode ? `answered ${e.responseCode}` : null,
          r.providerReference ? `provider reference ${r.providerReference}` : null,
          r.resourceType || r.resourceId ? `${r.resourceType ?? "resource"} ${r.resourceId ?? ""}`.trim() : null,
        ].filter(Boolean);
        say(e.occurredAt, "completed", `At ${at(e.occurredAt)} (${took} later) it completed${what.length ? `: ${what.join(", ")}` : ""}.`);
        break;
      }
      case "failed": {
        const quote = d.response ? bodyMessage(d.response.body, rules) : null;
        const error = masked((e.detail as { error?: string } | null)?.error ?? r.lastError);
        say(
          e.occurredAt,
          "failed",
          `At ${at(e.occurredAt)} it failed before any effect${e.responseCode ? ` and answered ${e.responseCode}` : ""}${quote ? ` (“${quote}”)` : ""}${error ? `; the service noted: ${error}` : ""}.`,
        );
        break;
      }
      case "pending": {
        const detail = (e.detail ?? {}) as { providerRequestId?: string; error?: string };
        say(
          e.occurredAt,
          "pending",
          `At ${at(e.occurredAt)} the call to ${r.provider ?? "the provider"} did not come back in time${detail.error ? ` (${masked(detail.error)})` : ""}: the outcome was unknown, so the record was set pending with provider request id ${detail.providerRequestId ?? r.providerRequestId ?? "—"} — never retried blindly.`,
        );
        break;
      }
      case "reconciled":
        // Settled by hand: no provider answered; the operator's resolution (its item or audit entry) tells who and why.
        if ((e.detail as { by?: string } | null)?.by === "hand") break;
        say(e.occurredAt, "reconciled", `At ${at(e.occurredAt)} it was settled from the provider's answer.`);
        break;
      case "conflict": {
        const dd = (e.detail ?? {}) as { expectedPayloadHash?: string; receivedPayloadHash?: string };
        say(
          e.occurredAt,
          "conflict",
          `At ${at(e.occurredAt)}${late(e) ? ", after the key had expired," : ""} a request reused this key with a different payload (payload hash ${short(dd.receivedPayloadHash ?? e.payloadHash)} instead of ${short(dd.expectedPayloadHash ?? r.payloadHash)}): it was refused (422) and nothing was executed — a changed intent under an old key, or a client bug.`,
        );
        break;
      }
    }
  }

  // Retries with the same payload, summarised.
  const replays = events.filter((e) => e.kind === "replayed");
  if (replays.length) {
    const lastReplay = replays[replays.length - 1];
    const codes = [...new Set(replays.map((e) => e.responseCode).filter((c) => c !== null))];
    say(
      replays[0].occurredAt,
      "replays",
      `The client retried ${plural(replays.length, "time")} with the same payload between ${at(replays[0].occurredAt)} and ${at(lastReplay.occurredAt)} ` +
        `(the last ${formatSpan(lastReplay.occurredAt.getTime() - first.getTime())} after the first request); each got the stored answer${codes.length ? ` (${codes.join(", ")})` : ""} again, and nothing ran twice.`,
    );
  }
  const waiting = events.filter((e) => e.kind === "in_progress" && e.occurredAt.getTime() !== first.getTime());
  if (waiting.length) {
    say(
      waiting[0].occurredAt,
      "in_progress",
      `${plural(waiting.length, "retry", "retries")} came while it was still ${r.status === "pending" ? "pending" : "in progress"} (from ${at(waiting[0].occurredAt)}) and ${waiting.length === 1 ? "was" : "were"} refused with 409: the client must wait for the outcome.`,
    );
  }
  const lateRetries = events.filter((e) => (e.kind === "replayed" || e.kind === "in_progress") && late(e));
  if (lateRetries.length) {
    const worst = lateRetries[lateRetries.length - 1];
    say(
      worst.occurredAt,
      "after_expiry",
      `${plural(lateRetries.length, "retry", "retries")} came after the key had expired (${at(r.expiresAt)}), up to ${formatSpan(worst.occurredAt.getTime() - r.expiresAt.getTime())} late: answered from the record only because it was still held. Once it is purged, such a retry makes a new record and runs the ${r.operation.replace(/_/g, " ")} again.`,
    );
  }

  // Where it stands now.
  if (r.status === "pending") {
    say(
      r.updatedAt,
      "pending_since",
      `It has been pending since ${at(r.updatedAt)} (${formatSpan(now.getTime() - r.updatedAt.getTime())}): nobody knows yet whether the effect happened.`,
    );
  } else if (r.status === "processing") {
    const age = now.getTime() - r.updatedAt.getTime();
    const stuck = age > thresholdFor(opts.stuck ?? readSideConfig().stuck, r.operation) * 1000;
    say(
      r.updatedAt,
      "processing",
      stuck
        ? `It has been processing since ${at(r.updatedAt)} (${formatSpan(age)}), longer than its operation allows: the worker most likely died mid-way; it needs a check with the provider or a decision by hand.`
        : `It is still being processed (since ${at(r.updatedAt)}).`,
    );
  }

  // Checks with the provider and decisions by hand.
  for (const item of d.reconciliationItems as {
    state: string;
    attempts: number;
    lastCheckedAt: Date | null;
    nextCheckAt: Date | null;
    resolvedBy: string | null;
    resolvedAt: Date | null;
    lastError: string | null;
    resolution: { by?: string; outcome?: string; reason?: string; providerReference?: string | null } | null;
  }[]) {
    if (item.resolvedAt) {
      // Checks that found no final answer before an operator decided: the resolution must not make them vanish.
      if (item.resolution?.by === "hand" && item.attempts > 0) {
        say(
          item.lastCheckedAt ?? item.resolvedAt,
          "reconciliation",
          `It was checked with the provider ${plural(item.attempts, "time")}${item.lastCheckedAt ? `, last on ${at(item.lastCheckedAt)}` : ""}, without a final answer${item.lastError ? ` (${masked(item.lastError)})` : ""}.`,
        );
      }
      const how = item.resolution?.by === "hand" ? "by hand" : "from the provider's answer";
      const outcome = item.state === "resolved_succeeded" ? "it succeeded" : "it failed";
      say(
        item.resolvedAt,
        "resolved",
        `On ${at(item.resolvedAt)} it was resolved ${how} by ${item.resolvedBy ?? "the console"}: ${outcome}${item.resolution?.providerReference ? ` (provider reference ${item.resolution.providerReference})` : ""}${item.resolution?.reason ? `, because “${masked(item.resolution.reason)}”` : ""}.`,
      );
    } else {
      say(
        item.lastCheckedAt,
        "reconciliation",
        `A reconciliation item is ${item.state.replace("_", " ")}: checked with the provider ${plural(item.attempts, "time")}${item.lastCheckedAt ? `, last on ${at(item.lastCheckedAt)}` : ""}${item.nextCheckAt ? `; next check ${at(item.nextCheckAt)}` : ""}.`,
      );
    }
  }
  for (const a of (d.audit as { action: string; occurredAt: Date; actorLabel: string | null; reason: string | null; outcome: string; after: unknown }[])
    .filter((x) => x.outcome === "done")
    .reverse()) {
    if (a.action === "records.resolve" && !d.reconciliationItems.length) {
      say(
        a.occurredAt,
        "resolved",
        `On ${at(a.occurredAt)} ${a.actorLabel ?? "an operator"} resolved it by hand as ${(a.after as { status?: string } | null)?.status ?? "settled"}${a.reason ? `, because “${masked(a.reason)}”` : ""}.`,
      );
    } else if (a.action === "records.legal_hold") {
      const on = (a.after as { legalHold?: boolean } | null)?.legalHold;
      say(
        a.occurredAt,
        "legal_hold",
        `On ${at(a.occurredAt)} ${a.actorLabel ?? "someone"} ${on === false ? "lifted its legal hold" : "put it on legal hold"}${a.reason ? ` (“${masked(a.reason)}”)` : ""}.`,
      );
    }
  }

  // Compensations of its charge.
  for (const c of d.compensations as CompensationRow[]) {
    const amountText = money(c.amountMinor, c.currency) ?? "";
    const steps = [`a ${c.kind} of ${amountText} was requested by ${c.requestedByLabel} on ${at(c.requestedAt)} (“${masked(c.reason)}”)`];
    if (c.decidedAt)
      steps.push(
        `${c.state === "rejected" ? "rejected" : "approved"} by ${c.decidedByLabel} on ${at(c.decidedAt)}${c.decisionReason ? ` (“${masked(c.decisionReason)}”)` : ""}`,
      );
    if (c.executedAt) steps.push(`carried out by the provider on ${at(c.executedAt)}${c.providerCompensationId ? ` (${c.providerCompensationId})` : ""}`);
    else if (c.state === "failed") steps.push(`the provider refused it${c.lastError ? ` (${masked(c.lastError)})` : ""}`);
    else if (c.state === "executing") steps.push("it is being carried out");
    say(c.requestedAt, "compensation", `${steps.join("; ")}.`.replace(/^a /, "A "));
  }

  // The same intent under other keys.
  if (d.suspectedDuplicates.length) {
    const names = d.suspectedDuplicates
      .slice(0, 5)
      .map(
        (x) =>
          `record ${x.id} (key ${x.idempotencyKey}, ${x.status}, ${formatSpan(x.secondsApart * 1000)} ${x.secondsApart >= 0 ? "later" : "earlier"}${x.basis.includes("payload_hash") ? ", same payload" : ", same amount and resource"})`,
      );
    say(
      null,
      "duplicates",
      `The same intent also appears under ${plural(d.suspectedDuplicates.length, "other key")}: ${names.join("; ")}${d.suspectedDuplicates.length > 5 ? "; …" : ""}. The customer may have been charged more than once.`,
    );
  }

  // Its expiry.
  say(
    r.expiresAt,
    "expiry",
    r.expiresAt.getTime() > now.getTime()
      ? `The key protects retries until ${at(r.expiresAt)} (${formatSpan(r.expiresAt.getTime() - now.getTime())} from now).`
      : `The key expired on ${at(r.expiresAt)}; the record stays until the retention policy purges it${r.legalHold ? " (it is on legal hold: never while the hold lasts)" : ""}.`,
  );

  // In time order, stable; a sentence without a moment stays after the one told before it (the duplicates go last).
  let previous = first.getTime();
  const ordered = out
    .map((s, i) => {
      const t = s.at ? s.at.getTime() : s.kind === "duplicates" ? Number.POSITIVE_INFINITY : previous;
      if (s.at) previous = t;
      return { s, i, t };
    })
    .sort((a, b) => a.t - b.t || a.i - b.i)
    .map((x) => x.s);
  return { recordId: r.id, timeZone: tz, bodyAccess: opts.bodyAccess, sentences: ordered, text: ordered.map((s) => s.text).join(" ") };
}
