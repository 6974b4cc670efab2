import { txExecutor } from "../db/sql";
import type { PrismaClient } from "../generated/prisma/client";
import { authStore } from "./store";

/**
 * Sign-in throttling over `sign_in_attempts`, checked BEFORE the password is
 * verified (a throttled attempt costs no scrypt and reveals nothing):
 * - per account: 5 failures within 15 minutes (counting only failures after the
 *   account's last successful sign-in), whether or not the account exists, so
 *   throttling does not reveal which e-mail addresses are known;
 * - per client IP: 20 failures within 15 minutes, across all accounts
 *   (password spraying).
 * A throttle lifts when the oldest of the failures that caused it leaves the
 * window (a sliding window, not a fixed lockout).
 * Throttled attempts are audited but not recorded as attempts, so a lockout
 * never outlasts the failures that caused it, however often someone keeps
 * knocking.
 *
 * The window logic is pure (`throttleDecision`); the database part only reads
 * the newest failures through the (email, attempted_at) and (ip, attempted_at)
 * indexes.
 */
export interface ThrottlePolicy {
  windowMs: number;
  maxFailuresPerAccount: number;
  maxFailuresPerIp: number;
}

export const DEFAULT_THROTTLE: ThrottlePolicy = {
  windowMs: 15 * 60_000,
  maxFailuresPerAccount: 5,
  maxFailuresPerIp: 20,
};

export interface ThrottleDecision {
  throttled: boolean;
  /** When throttled: milliseconds until one more attempt is allowed. */
  retryAfterMs: number;
}

/**
 * `failures`: times of recent failures (any order). Throttled when at least
 * `max` of them lie within the window ending at `now`; it lifts when the
 * max-th newest of them leaves the window.
 */
export function throttleDecision(failures: readonly Date[], max: number, windowMs: number, now: Date): ThrottleDecision {
  const since = now.getTime() - windowMs;
  const inWindow = failures
    .map((d) => d.getTime())
    .filter((t) => t > since && t <= now.getTime())
    .sort((a, b) => b - a);
  if (inWindow.length < max) return { throttled: false, retryAfterMs: 0 };
  const lifting = inWindow[max - 1] + windowMs;
  return { throttled: true, retryAfterMs: Math.max(1000, lifting - now.getTime()) };
}

/** Whole minutes to tell a person ("wait 12 minutes"), never 0. */
export function waitMinutes(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 60_000));
}

export type ThrottleResult = { throttled: false } | { throttled: true; scope: "account" | "ip"; retryAfterMs: number };

/** Reads the newest failures of this account and this IP and decides. */
export async function checkSignInThrottle(
  prisma: PrismaClient,
  email: string,
  ip: string,
  now = new Date(),
  policy: ThrottlePolicy = DEFAULT_THROTTLE,
): Promise<ThrottleResult> {
  const since = new Date(now.getTime() - policy.windowMs);
  const store = authStore(txExecutor(prisma));
  // Per account: failures in the window after the last success (both via the email index).
  const account = throttleDecision(await store.accountFailures(email, since, policy.maxFailuresPerAccount), policy.maxFailuresPerAccount, policy.windowMs, now);
  const byIp = throttleDecision(await store.ipFailures(ip, since, policy.maxFailuresPerIp), policy.maxFailuresPerIp, policy.windowMs, now);
  if (account.throttled && (!byIp.throttled || account.retryAfterMs >= byIp.retryAfterMs)) {
    return { throttled: true, scope: "account", retryAfterMs: account.retryAfterMs };
  }
  if (byIp.throttled) return { throttled: true, scope: "ip", retryAfterMs: byIp.retryAfterMs };
  return { throttled: false };
}

export async function recordSignInAttempt(
  prisma: Pick<PrismaClient, "signInAttempt">,
  email: string,
  ip: string,
  succeeded: boolean,
  now = new Date(),
): Promise<void> {
  await prisma.signInAttempt.create({ data: { email, ip, succeeded, attemptedAt: now } });
}
