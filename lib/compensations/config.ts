/**
 * How long an execution attempt may take before a retry may take it over
 * (COMPENSATION_LEASE_SECONDS, default 120, 1 … 86400). An attempt is one provider
 * call, bounded by PROVIDER_TIMEOUT_MS (default 5 s); a compensation still
 * `executing` (or `approved` but never started) after the lease was left by a process
 * that died, and "Retry" may send it again — with the same provider idempotency key,
 * so the provider still executes it at most once. Read at call time (tests set the env).
 */
export const DEFAULT_LEASE_SECONDS = 120;

let warned: string | undefined;

export function leaseSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.COMPENSATION_LEASE_SECONDS?.trim();
  if (!raw) return DEFAULT_LEASE_SECONDS;
  const n = Number(raw);
  if (Number.isFinite(n) && n >= 1 && n <= 86400) return n;
  if (warned !== raw) {
    warned = raw;
    console.warn(`COMPENSATION_LEASE_SECONDS must be a number of seconds from 1 to 86400 (got "${raw}"); using ${DEFAULT_LEASE_SECONDS}`);
  }
  return DEFAULT_LEASE_SECONDS;
}
