import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { intParam, isoTime, optional, resolveRange } from "../kernel/input";
import { REQUEST_KINDS } from "../kernel/vocabulary";
import { insightsConfig } from "./config";
import { keyShapes, MIN_KEYS, type KeyShape } from "./keys";
import { insightsStore, type KeySampleRow, type Range, type TrafficRow } from "./store";

/**
 * Key quality per scope and operation: what the keys a client sends say about how it makes
 * them, with the evidence and a one-line fix for the client.
 *
 * Sampling, stated in every answer: the busiest `maxScopes` scopes of the period (by requests,
 * from the rollups), and per scope its newest `perScope` records created in the period (one
 * index range of (scope, created_at, id) each) — never a pass over the records. Reuse with
 * another payload comes from the rollups (conflict events ÷ requests, exact for the period);
 * reuse across operations from the sample (the same key under two operations of a scope).
 */

export const DAY_MS = 86_400_000;
export const MAX_SPAN_MS = 31 * DAY_MS;
/** Reuse with another payload: at least this share of the group's requests, and this many conflicts. */
export const PAYLOAD_REUSE_RATE = 0.05;
export const PAYLOAD_REUSE_MIN = 5;
/** Reuse across operations: at least this many keys of the scope's sample under two or more operations. */
export const CROSS_OPERATION_MIN = 5;

export type FindingKind = KeyShape | "payload_reuse" | "cross_operation";

export const FINDING_TITLES: Record<FindingKind, string> = {
  short: "Short keys",
  sequential: "Sequential, counter-like keys",
  timestamp: "Timestamp-like keys",
  low_entropy: "Keys low in entropy",
  payload_reuse: "Keys reused with another payload",
  cross_operation: "Keys reused across operations",
};

export const FINDING_FIXES: Record<FindingKind, string> = {
  short: "Make keys of at least 128 random bits (a UUID v4, or 22+ base62 characters).",
  sequential:
    "Stop deriving keys from a counter: a restart or a second instance hands the same numbers out again. Make a UUID v4 per intent and keep it with the intent so retries reuse it.",
  timestamp: "Do not build keys from the clock: two intents in the same tick share a key. Make a UUID v4 per intent.",
  low_entropy: "Keys must be unpredictable and unique per intent: make a UUID v4 (122 random bits) per intent.",
  payload_reuse: "Make a new key for every new intent; reuse a key only to retry the very same request.",
  cross_operation: "Make a separate key per operation (or prefix it with the operation): one intent's key must not name another's.",
};

export const keyQualityQuerySchema = z
  .object({
    from: optional(isoTime),
    to: optional(isoTime),
    scope: optional(scopeSchema),
    operation: optional(operationSchema),
    /** Records sampled per scope (default INSIGHTS_KEY_SAMPLE, 1000). */
    sample: optional(intParam(50, 100_000)),
  })
  .strict()
  .transform((v, ctx) => {
    const range = resolveRange(v, { defaultSpanMs: 7 * DAY_MS, maxSpanMs: MAX_SPAN_MS });
    if (typeof range === "string") {
      ctx.addIssue({ code: "custom", message: range, path: ["from"] });
      return z.NEVER;
    }
    return { ...range, scope: v.scope, operation: v.operation, sample: v.sample };
  });
export type KeyQualityQuery = z.output<typeof keyQualityQuerySchema>;

export interface KeyFinding {
  scope: string;
  /** The operation, or "*" for reuse across operations. */
  operation: string;
  kind: FindingKind;
  title: string;
  fix: string;
  evidence: {
    /** Up to five example keys. */
    examples: string[];
    /** Keys (or conflicts, for payload_reuse) showing it. */
    count: number;
    /** Keys of the group in the sample (requests, for payload_reuse). */
    of: number;
    /** count ÷ of. */
    share: number;
    /** The group's share of its scope's requests in the period. */
    trafficShare: number | null;
    note: string;
  };
}

export interface KeyQualityGroup {
  operation: string;
  requests: number;
  conflicts: number;
  sampled: number;
  findings: KeyFinding[];
}

export interface KeyQualityScope {
  scope: string;
  requests: number;
  sampled: number;
  operations: KeyQualityGroup[];
  findings: KeyFinding[];
}

export interface KeyQualityResult {
  from: Date;
  to: Date;
  sampling: { scopes: number; scopesSeen: number; perScope: number; minKeys: number; note: string };
  scopes: KeyQualityScope[];
  /** Every finding, scope by scope. */
  findings: KeyFinding[];
}

export interface KeyQualityInput extends Range {
  scope?: string;
  operation?: string;
  sample?: number;
  maxScopes?: number;
}

const fingerprintOf = (f: Pick<KeyFinding, "scope" | "operation" | "kind">) => `${f.scope}|${f.operation}|${f.kind}`;
export { fingerprintOf as findingFingerprint };

/** Requests (begin() calls) and conflicts per scope × operation from traffic rows. */
export function requestsByGroup(rows: readonly TrafficRow[]) {
  const out = new Map<string, Map<string, { requests: number; conflicts: number }>>();
  for (const r of rows) {
    if (!(REQUEST_KINDS as readonly string[]).includes(r.kind)) continue;
    const ops = out.get(r.scope) ?? new Map();
    const g = ops.get(r.operation) ?? { requests: 0, conflicts: 0 };
    g.requests += r.n;
    if (r.kind === "conflict") g.conflicts += r.n;
    ops.set(r.operation, g);
    out.set(r.scope, ops);
  }
  return out;
}

/** The findings of one scope from its sample and its traffic (no database). */
export function scopeFindings(scope: string, sample: readonly KeySampleRow[], traffic: Map<string, { requests: number; conflicts: number }>): KeyQualityScope {
  const scopeRequests = [...traffic.values()].reduce((s, g) => s + g.requests, 0);
  const byOp = new Map<string, string[]>();
  for (const r of sample) byOp.set(r.operation, [...(byOp.get(r.operation) ?? []), r.idempotencyKey]);
  const operations = [...new Set([...byOp.keys(), ...traffic.keys()])].sort();
  const trafficShare = (op: string) => (scopeRequests ? (traffic.get(op)?.requests ?? 0) / scopeRequests : null);
  const groups: KeyQualityGroup[] = operations.map((operation) => {
    const keys = byOp.get(operation) ?? [];
    const t = traffic.get(operation) ?? { requests: 0, conflicts: 0 };
    const distinct = new Set(keys).size;
    const findings: KeyFinding[] = keyShapes(keys).map((s) => ({
      scope,
      operation,
      kind: s.shape,
      title: FINDING_TITLES[s.shape],
      fix: FINDING_FIXES[s.shape],
      evidence: { examples: s.examples, count: s.matching, of: distinct, share: s.matching / distinct, trafficShare: trafficShare(operation), note: s.note },
    }));
    if (t.conflicts >= PAYLOAD_REUSE_MIN && t.requests > 0 && t.conflicts / t.requests >= PAYLOAD_REUSE_RATE) {
      findings.push({
        scope,
        operation,
        kind: "payload_reuse",
        title: FINDING_TITLES.payload_reuse,
        fix: FINDING_FIXES.payload_reuse,
        evidence: {
          examples: [],
          count: t.conflicts,
          of: t.requests,
          share: t.conflicts / t.requests,
          trafficShare: trafficShare(operation),
          note: `${t.conflicts} of ${t.requests} requests reused a key with another payload (refused with 422)`,
        },
      });
    }
    return { operation, requests: t.requests, conflicts: t.conflicts, sampled: keys.length, findings };
  });
  // The same key under two or more operations of the scope.
  const opsOfKey = new Map<string, Set<string>>();
  for (const r of sample) opsOfKey.set(r.idempotencyKey, (opsOfKey.get(r.idempotencyKey) ?? new Set()).add(r.operation));
  const shared = [...opsOfKey.entries()].filter(([, ops]) => ops.size > 1);
  const findings = groups.flatMap((g) => g.findings);
  if (shared.length >= CROSS_OPERATION_MIN) {
    const ops = [...new Set(shared.flatMap(([, o]) => [...o]))].sort();
    findings.push({
      scope,
      operation: "*",
      kind: "cross_operation",
      title: FINDING_TITLES.cross_operation,
      fix: FINDING_FIXES.cross_operation,
      evidence: {
        examples: shared.slice(0, 5).map(([k]) => k),
        count: shared.length,
        of: opsOfKey.size,
        share: shared.length / opsOfKey.size,
        trafficShare: null,
        note: `${shared.length} keys used under more than one of ${ops.join(", ")}`,
      },
    });
  }
  return { scope, requests: scopeRequests, sampled: sample.length, operations: groups, findings };
}

export async function keyQuality(sql: SqlExecutor, input: KeyQualityInput): Promise<KeyQualityResult> {
  const cfg = insightsConfig();
  const perScope = input.sample ?? cfg.keySample;
  const maxScopes = input.maxScopes ?? cfg.maxScopes;
  const store = insightsStore(sql);
  const traffic = requestsByGroup(
    (await store.traffic(input)).filter((r) => (!input.scope || r.scope === input.scope) && (!input.operation || r.operation === input.operation)),
  );
  const busiest = [...traffic.entries()]
    .map(([scope, ops]) => ({ scope, requests: [...ops.values()].reduce((s, g) => s + g.requests, 0) }))
    .sort((a, b) => b.requests - a.requests || a.scope.localeCompare(b.scope));
  const chosen = busiest.slice(0, maxScopes).map((s) => s.scope);
  const samples = await store.keySamples(chosen, input, perScope);
  const byScope = new Map<string, KeySampleRow[]>();
  for (const r of samples) {
    if (input.operation && r.operation !== input.operation) continue;
    byScope.set(r.scope, [...(byScope.get(r.scope) ?? []), r]);
  }
  const scopes = chosen.sort().map((scope) => scopeFindings(scope, byScope.get(scope) ?? [], traffic.get(scope) ?? new Map()));
  return {
    from: input.from,
    to: input.to,
    sampling: {
      scopes: chosen.length,
      scopesSeen: busiest.length,
      perScope,
      minKeys: MIN_KEYS,
      note:
        `Key shapes from the newest ${perScope} records per scope created in the range, for the ${chosen.length} busiest of ${busiest.length} scopes; ` +
        `groups with fewer than ${MIN_KEYS} sampled keys are not judged. Reuse with another payload from the rollups (every request of the range).`,
    },
    scopes,
    findings: scopes.flatMap((s) => s.findings),
  };
}
