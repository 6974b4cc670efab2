import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { z } from "zod";
import { isStorableText } from "../db/storable";

/**
 * Console passwords: scrypt (memory-hard) from node:crypto, stored as
 * `scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>` in console_users.password_hash.
 *
 * Nothing here logs, and no error message carries a password or a hash.
 * N = 2^15, r = 8, p = 1 needs 128·N·r = 32 MiB per hash and ~50–100 ms of CPU:
 * the OWASP minimum for scrypt. Hashing runs on libuv's thread pool (async).
 */

export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const KEY_BYTES = 64;
/** scrypt needs 128·N·r bytes; Node's default maxmem (32 MiB) is exactly that, so leave headroom. */
const maxmemFor = (N: number, r: number) => 128 * N * r * 2;
/** Refuse to verify against absurd parameters (a stored value must not be able to exhaust memory). */
const MAX_N = 2 ** 20;
const MAX_R = 16;
const MAX_P = 4;

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 200;

/**
 * The password policy: 12 to 200 characters (counted as Unicode code points),
 * not only whitespace. Length is what matters (NIST SP 800-63B); no composition
 * rules. The upper bound keeps hashing cost bounded. No NUL or lone surrogate.
 */
export const passwordSchema = z
  .string({ error: "must be a string" })
  .refine((s) => [...s].length >= PASSWORD_MIN_LENGTH, `must be at least ${PASSWORD_MIN_LENGTH} characters`)
  .refine((s) => [...s].length <= PASSWORD_MAX_LENGTH, `must be at most ${PASSWORD_MAX_LENGTH} characters`)
  .refine((s) => s.trim().length > 0, "must not be only whitespace")
  // Sign-in refuses these (lib/auth/sign-in.ts): a password holding one could never be used.
  .refine(isStorableText, "must not contain NUL or unpaired surrogate characters");

/** null when the password satisfies the policy, else a message (which never contains the password). */
export function passwordPolicyError(plain: string): string | null {
  const result = passwordSchema.safeParse(plain);
  return result.success ? null : `password ${result.error.issues[0].message}`;
}

function deriveKey(plain: string, salt: Buffer, N: number, r: number, p: number, keyLength: number): Promise<Buffer> {
  const options: ScryptOptions = { N, r, p, maxmem: maxmemFor(N, r) };
  return new Promise((resolve, reject) => scrypt(plain.normalize("NFC"), salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** Hashes a password that satisfies the policy (throws otherwise, without echoing it). */
export async function hashPassword(plain: string): Promise<string> {
  const problem = passwordPolicyError(plain);
  if (problem) throw new Error(problem);
  const { N, r, p } = SCRYPT_PARAMS;
  const salt = randomBytes(SALT_BYTES);
  const key = await deriveKey(plain, salt, N, r, p, KEY_BYTES);
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64")}$${key.toString("base64")}`;
}

interface Parsed {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

const FORMAT = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

function parseStored(stored: string): Parsed | null {
  const m = FORMAT.exec(stored);
  if (!m) return null;
  const [N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const salt = Buffer.from(m[4], "base64");
  const hash = Buffer.from(m[5], "base64");
  const powerOfTwo = N > 1 && (N & (N - 1)) === 0;
  if (!powerOfTwo || N > MAX_N || r < 1 || r > MAX_R || p < 1 || p > MAX_P) return null;
  if (salt.length < 8 || hash.length < 16 || hash.length > 128) return null;
  return { N, r, p, salt, hash };
}

// A well-formed stored value nobody's password matches: verifying against it
// costs exactly what a real verification costs.
const DUMMY_STORED = `scrypt$${SCRYPT_PARAMS.N}$${SCRYPT_PARAMS.r}$${SCRYPT_PARAMS.p}$${randomBytes(SALT_BYTES).toString("base64")}$${randomBytes(KEY_BYTES).toString("base64")}`;

/**
 * Checks a password against a stored hash in constant time. A missing stored
 * hash (unknown email, SSO-only user) or a malformed one still runs a full
 * scrypt against a dummy value, then returns false: the time taken does not
 * tell which emails exist or have a password.
 */
export async function verifyPassword(plain: string, stored: string | null | undefined): Promise<boolean> {
  const parsed = stored ? parseStored(stored) : null;
  if (!parsed || typeof plain !== "string" || plain.length > PASSWORD_MAX_LENGTH * 4) {
    await dummyVerifyPassword(typeof plain === "string" ? plain.slice(0, PASSWORD_MAX_LENGTH * 4) : "");
    return false;
  }
  const key = await deriveKey(plain, parsed.salt, parsed.N, parsed.r, parsed.p, parsed.hash.length);
  return timingSafeEqual(key, parsed.hash);
}

/**
 * Spends the time of one password verification and returns false. Call it on
 * every sign-in path that has no password hash to compare with (unknown email,
 * disabled or SSO-only user) so that path takes as long as a real check.
 */
export async function dummyVerifyPassword(plain: string): Promise<false> {
  const parsed = parseStored(DUMMY_STORED)!;
  const key = await deriveKey(plain, parsed.salt, parsed.N, parsed.r, parsed.p, parsed.hash.length);
  timingSafeEqual(key, parsed.hash);
  return false;
}

/** True when a stored hash uses other parameters than today's (re-hash after a successful sign-in). */
export function passwordNeedsRehash(stored: string): boolean {
  const parsed = parseStored(stored);
  if (!parsed) return true;
  const { N, r, p } = SCRYPT_PARAMS;
  return parsed.N !== N || parsed.r !== r || parsed.p !== p || parsed.salt.length !== SALT_BYTES || parsed.hash.length !== KEY_BYTES;
}
