/**
 * Client of the local provider service's control API (lib/providers/service.ts):
 * what tests, e2e runs and the demo use to tell the provider what became of
 * requests, which charges exist, and which faults to inject.
 *
 *   const control = new ProviderControl(url);
 *   await control.seedRequests([{ requestId: "req_1", status: "succeeded", amountMinor: 1250n, currency: "EUR" }]);
 *   await control.seedCharges([{ reference: "ch_1", amountMinor: 1250n, currency: "EUR" }]);
 *   await control.fault({ route: "compensate", mode: "timeout", times: 1 });
 *   const { refunds } = await control.state();   // refunds[0].amountMinor is a bigint
 *
 * Amounts go in as bigint or number and come back as bigint.
 */

export type SeedStatus = "succeeded" | "failed" | "unknown";

export interface SeedRequest {
  requestId: string;
  /** "unknown" = the provider knows the request but has no final answer (lookups say "processing"). */
  status: SeedStatus;
  /** succeeded only (default 1000). */
  amountMinor?: bigint | number;
  /** succeeded only (default EUR). */
  currency?: string;
  /** failed only (default "declined"). */
  reason?: string;
  /** succeeded only: the charge's reference; default derived from requestId (chargeIdForRequest), so re-seeding changes nothing. */
  reference?: string;
  /** succeeded/failed: the provider answers later — lookups say "processing" until this time (ISO 8601). */
  answerAt?: string;
}

export interface SeedCharge {
  reference: string;
  amountMinor: bigint | number;
  currency: string;
  requestId?: string;
}

export interface FaultSpec {
  route: "lookup" | "compensate" | "charge" | "*";
  /** latency: delay then answer; timeout: effect happens, answer only after `ms`; fail: 503, no effect; lose: effect happens, connection dropped. */
  mode: "latency" | "timeout" | "fail" | "lose";
  /** latency default 1000, timeout default 120000. */
  ms?: number;
  /** How many calls it applies to (default: all). */
  times?: number;
}

export interface SeedResult {
  created: number;
  updated: number;
  unchanged: number;
}

export interface ProviderState {
  requests: {
    requestId: string;
    status: "succeeded" | "failed" | "processing";
    /** The charge of a succeeded request. */
    reference: string | null;
    amountMinor: bigint | null;
    currency: string | null;
    reason: string | null;
    /** Set when the answer is held back until then. */
    answerAt?: string;
  }[];
  charges: { reference: string; amountMinor: bigint; currency: string; requestId: string | null; refundedMinor: bigint }[];
  refunds: {
    id: string;
    charge: string;
    amountMinor: bigint;
    currency: string;
    kind: "refund" | "void" | "cancel";
    reason: string | null;
    idempotencyKey: string | null;
    createdAt: string;
  }[];
}

const big = (v: number | string | null): bigint | null => (v === null || v === undefined ? null : BigInt(v));
const wire = (v: bigint | number | undefined) => (v === undefined ? undefined : typeof v === "bigint" ? v.toString() : v);

export class ProviderControl {
  readonly url: string;

  constructor(url: string) {
    this.url = url.replace(/\/+$/, "");
  }

  async seedRequests(requests: SeedRequest[]): Promise<SeedResult> {
    return this.call("POST", "/_control/requests", { requests: requests.map((r) => ({ ...r, amountMinor: wire(r.amountMinor) })) });
  }

  async seedCharges(charges: SeedCharge[]): Promise<SeedResult> {
    return this.call("POST", "/_control/charges", { charges: charges.map((c) => ({ ...c, amountMinor: wire(c.amountMinor) })) });
  }

  /** Adds a fault; the first matching fault applies to a call. Returns its id. */
  async fault(spec: FaultSpec): Promise<{ id: number }> {
    return this.call("POST", "/_control/faults", spec);
  }

  async clearFaults(): Promise<void> {
    await this.call("DELETE", "/_control/faults");
  }

  /** Forgets everything: requests, charges, refunds, idempotency keys and faults. */
  async reset(): Promise<void> {
    await this.call("POST", "/_control/reset", {});
  }

  async state(): Promise<ProviderState> {
    type Raw = {
      requests: (Omit<ProviderState["requests"][number], "amountMinor"> & { amountMinor: number | string | null })[];
      charges: (Omit<ProviderState["charges"][number], "amountMinor" | "refundedMinor"> & { amountMinor: number | string; refundedMinor: number | string })[];
      refunds: (Omit<ProviderState["refunds"][number], "amountMinor"> & { amountMinor: number | string })[];
    };
    const raw = await this.call<Raw>("GET", "/_control/state");
    return {
      requests: raw.requests.map((r) => ({ ...r, amountMinor: big(r.amountMinor) })),
      charges: raw.charges.map((c) => ({ ...c, amountMinor: big(c.amountMinor)!, refundedMinor: big(c.refundedMinor)! })),
      refunds: raw.refunds.map((r) => ({ ...r, amountMinor: big(r.amountMinor)! })),
    };
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: body === undefined ? undefined : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (!res.ok) {
      let message = text;
      try {
        message = JSON.parse(text).error?.message ?? text;
      } catch {
        // not JSON
      }
      throw new Error(`provider control ${method} ${path}: ${res.status} ${message}`);
    }
    return JSON.parse(text) as T;
  }
}
