import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { loadOrCreateSecretFile, MIN_SECRET_LENGTH } from "../auth/config";

/**
 * The audit chain's HMAC keys. They live outside the database, so a database
 * superuser who rewrites audit_log cannot recompute the chain.
 *
 * - AUDIT_HMAC_KEY: the current key (≥ 32 characters); signs every new entry.
 * - AUDIT_HMAC_KEY_FILE: a file instead — first line the current key, further
 *   lines retired keys (verify only); `#` lines and blank lines are ignored.
 * - AUDIT_HMAC_OLD_KEYS: retired keys, comma-separated (with AUDIT_HMAC_KEY).
 * - Neither, embedded demo (no DATABASE_URL): generated once into .data/audit-hmac-key.
 *   On a database server (PostgreSQL, MySQL) the server refuses to start without a key (lib/auth/config.ts).
 *
 * Rotation: make the new key current and keep the old one among the retired
 * keys; entries name their key by fingerprint (key_id), so older entries keep
 * verifying. Drop a retired key only if the entries it signed are gone.
 */
export const EMBEDDED_AUDIT_KEY_FILE = ".data/audit-hmac-key";

export interface AuditKeyring {
  current: { id: string; key: Buffer };
  /** Every known key by fingerprint: the current one and the retired ones. */
  all: Map<string, Buffer>;
  source: string;
}

type Env = Record<string, string | undefined>;

/** A key's public name: the first 16 hex digits of a SHA-256 over it (reveals nothing usable). */
export function auditKeyId(key: Buffer | string): string {
  return createHash("sha256").update("idempotency-console audit key\n").update(key).digest("hex").slice(0, 16);
}

function keyLines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
}

/** The configured keys (strings), or a problem; null when nothing is configured. */
function configuredKeys(env: Env, cwd: string): { keys: string[]; source: string } | { problem: string } | null {
  const fromEnv = env.AUDIT_HMAC_KEY?.trim();
  const file = env.AUDIT_HMAC_KEY_FILE?.trim();
  if (fromEnv && file) return { problem: "Set AUDIT_HMAC_KEY or AUDIT_HMAC_KEY_FILE, not both" };
  if (file) {
    const resolved = path.resolve(cwd, file);
    if (!existsSync(resolved)) return { problem: `AUDIT_HMAC_KEY_FILE: ${resolved} does not exist` };
    const keys = keyLines(readFileSync(resolved, "utf8"));
    if (!keys.length) return { problem: `AUDIT_HMAC_KEY_FILE: ${resolved} holds no key` };
    return { keys, source: resolved };
  }
  if (fromEnv) {
    const old = (env.AUDIT_HMAC_OLD_KEYS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    return { keys: [fromEnv, ...old], source: "AUDIT_HMAC_KEY" };
  }
  return null;
}

/** At server start (instrumentation.ts): exits on a missing or malformed key, like the sign-in settings. */
export function enforceAuditKey(env: Env = process.env): void {
  const problems = auditKeyProblems(env);
  if (problems.length) {
    console.error(`Refusing to start: the audit trail is not configured.\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    process.exit(1);
  }
  const ring = auditKeyring(env);
  console.log(`audit: entries are keyed with ${ring.current.id} (${ring.all.size} key${ring.all.size === 1 ? "" : "s"} known, from ${ring.source})`);
}

/** Problems that must stop the server: a malformed key setting anywhere, a missing key on a database server. */
export function auditKeyProblems(env: Env = process.env, cwd = process.cwd()): string[] {
  const c = configuredKeys(env, cwd);
  if (c === null) {
    return env.DATABASE_URL
      ? [
          `AUDIT_HMAC_KEY (or AUDIT_HMAC_KEY_FILE) must be set to a random value of at least ${MIN_SECRET_LENGTH} characters (e.g. \`openssl rand -base64 48\`): it keys the audit chain`,
        ]
      : [];
  }
  if ("problem" in c) return [c.problem];
  const short = c.keys.findIndex((k) => k.length < MIN_SECRET_LENGTH);
  return short >= 0 ? [`${c.source}: key ${short + 1} is shorter than ${MIN_SECRET_LENGTH} characters`] : [];
}

let cached: { stamp: string; ring: AuditKeyring } | null = null;

/**
 * The keyring from the environment (read again when it changes). Embedded mode
 * without a key: the demo's generated key file. Throws when no usable key is
 * configured — an audit entry is never written unkeyed.
 */
export function auditKeyring(env: Env = process.env, cwd = process.cwd()): AuditKeyring {
  // A key file is read again when it changes (rotation without a restart).
  const file = env.AUDIT_HMAC_KEY_FILE?.trim() ? path.resolve(cwd, env.AUDIT_HMAC_KEY_FILE.trim()) : null;
  const fileStamp = file && existsSync(file) ? statSync(file).mtimeMs : 0;
  const stamp = [env.AUDIT_HMAC_KEY, file, fileStamp, env.AUDIT_HMAC_OLD_KEYS, env.DATABASE_URL ? "server" : "embedded", cwd].join("\u0001");
  if (cached?.stamp === stamp) return cached.ring;
  const problems = auditKeyProblems(env, cwd);
  if (problems.length) throw new Error(`The audit trail cannot be written: ${problems.join("; ")}`);
  const c = configuredKeys(env, cwd) as { keys: string[]; source: string } | null;
  const keys = c?.keys ?? [loadOrCreateSecretFile(path.resolve(cwd, EMBEDDED_AUDIT_KEY_FILE))];
  const source = c?.source ?? path.resolve(cwd, EMBEDDED_AUDIT_KEY_FILE);
  const all = new Map<string, Buffer>();
  for (const k of keys) all.set(auditKeyId(k), Buffer.from(k, "utf8"));
  const ring: AuditKeyring = { current: { id: auditKeyId(keys[0]), key: Buffer.from(keys[0], "utf8") }, all, source };
  cached = { stamp, ring };
  return ring;
}
