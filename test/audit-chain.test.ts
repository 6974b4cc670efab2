import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { audit, entryHash, GENESIS_HASH, verifyAuditChain } from "@/lib/audit";
import { anchorHolds, anchorMetricsText, parseAnchors, publishAnchor, readChainHead, toAuditAnchor, type PublishedAnchor } from "@/lib/audit/anchor";
import { auditKeyId, auditKeyProblems, auditKeyring } from "@/lib/audit/keys";
import type { SqlExecutor } from "@/lib/db/sql";
import { byDialect } from "@/lib/db/dialect";
import { createTestDatabase, usingDatabaseServer, type TestDatabase } from "./helpers/db";
import { queryBound, withoutAuditTriggers } from "./helpers/sql";

/**
 * The keyed, anchored audit chain (issue 11): entries are chained with an HMAC
 * whose key is outside the database, the chain head is published outside it
 * (anchors), and verification lists every break. The attacks are the ones a
 * database superuser can run: delete an entry and recompute the chain with the
 * project's own entryHash, cut the newest entries off, rebuild the chain with
 * the key, forge old-format entries.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const append = (action: string, reason = "test") => audit(db.prisma, { actor: { type: "system", label: "test" }, action, reason, outcome: "done" });

async function superuser(fn: (s: SqlExecutor) => Promise<void>, on: TestDatabase = db) {
  await on.withSession((s) => withoutAuditTriggers(s, () => fn(s)));
}

/** Saves the whole audit_log, so a test can put it back after its attack. */
async function snapshot(): Promise<() => Promise<void>> {
  const rows = await db.sql.query(`SELECT * FROM audit_log ORDER BY id`);
  // MySQL has no jsonb_populate_recordset: a copy of the table, put back with INSERT … SELECT.
  if (db.dialect.name === "mysql") await db.sql.exec(`DROP TABLE IF EXISTS audit_snapshot; CREATE TABLE audit_snapshot AS SELECT * FROM audit_log`);
  const putBack = byDialect(db, {
    postgres: (s: SqlExecutor) =>
      s.query(`INSERT INTO audit_log SELECT * FROM jsonb_populate_recordset(NULL::audit_log, $1::jsonb)`, [
        JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? v.toString() : v)),
      ]),
    mysql: (s: SqlExecutor) => s.query(`INSERT INTO audit_log SELECT * FROM audit_snapshot ORDER BY id`),
  });
  return () =>
    superuser(async (s) => {
      await s.query(`DELETE FROM audit_log`);
      await putBack(s);
    });
}

/**
 * The attack: delete one entry as superuser and recompute every later
 * entry's link and hash with the project's own entryHash — without the key
 * (`key` null: plain SHA-256, as the code did before keys) or with one.
 */
async function deleteAndRechain(victim: bigint, key: Buffer | null, keyId: string | null) {
  // Read first: PGlite has one connection, which the superuser session below holds.
  const rows = await db.prisma.auditEntry.findMany({ where: { id: { gt: victim } }, orderBy: { id: "asc" } });
  const before = await db.prisma.auditEntry.findFirst({ where: { id: { lt: victim } }, orderBy: { id: "desc" } });
  await superuser(async (s) => {
    await queryBound(s, `DELETE FROM audit_log WHERE id = $1`, [victim]);
    let prev = before?.hash ?? GENESIS_HASH;
    for (const r of rows) {
      const hash = entryHash(prev, { ...r, keyId }, key);
      await queryBound(s, `UPDATE audit_log SET prev_hash = $2, hash = $3, key_id = $4 WHERE id = $1`, [r.id, prev, hash, keyId]);
      prev = hash;
    }
  });
}

describe("keys", () => {
  it("a key's id is a fingerprint; keys come from AUDIT_HMAC_KEY or a file with retired keys; production needs one", () => {
    expect(auditKeyId("k".repeat(40))).toMatch(/^[0-9a-f]{16}$/);
    expect(auditKeyId("k".repeat(40))).not.toBe(auditKeyId("l".repeat(40)));
    expect(auditKeyProblems({ DATABASE_URL: "postgresql://x/y" })[0]).toMatch(/AUDIT_HMAC_KEY/);
    expect(auditKeyProblems({ DATABASE_URL: "postgresql://x/y", AUDIT_HMAC_KEY: "short" })[0]).toMatch(/shorter than 32/);
    expect(auditKeyProblems({ AUDIT_HMAC_KEY: "a".repeat(32), AUDIT_HMAC_KEY_FILE: "/x" })[0]).toMatch(/not both/);
    const dir = mkdtempSync(path.join(tmpdir(), "ic-audit-key-"));
    try {
      const file = path.join(dir, "keys");
      writeFileSync(file, `# current first\n${"n".repeat(40)}\n\n${"o".repeat(40)}\n`);
      const ring = auditKeyring({ AUDIT_HMAC_KEY_FILE: file, DATABASE_URL: "postgresql://x/y" });
      expect(ring.current.id).toBe(auditKeyId("n".repeat(40)));
      expect([...ring.all.keys()]).toEqual([auditKeyId("n".repeat(40)), auditKeyId("o".repeat(40))]);
      // Embedded demo without a key: generated once into .data/audit-hmac-key (0600), the same on the next read.
      const generated = auditKeyring({}, dir);
      expect(readFileSync(path.join(dir, ".data/audit-hmac-key"), "utf8").trim().length).toBeGreaterThanOrEqual(32);
      expect(auditKeyring({ AUDIT_HMAC_OLD_KEYS: "" }, dir).current.id).toBe(generated.current.id);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => auditKeyring({ DATABASE_URL: "postgresql://x/y" })).toThrow(/cannot be written/);
  });

  it("every new entry is keyed: its hash is the HMAC under the current key, not a plain SHA-256", async () => {
    const e = await append("test.keyed");
    const ring = auditKeyring();
    expect(e.keyId).toBe(ring.current.id);
    expect(e.hash).toBe(entryHash(e.prevHash, e, ring.current.key));
    expect(e.hash).not.toBe(entryHash(e.prevHash, { ...e, keyId: null }));
  });

  it("rotation: a new current key with the old one retired keeps every entry verifying; dropping the old key names its entries", async () => {
    const oldKey = process.env.AUDIT_HMAC_KEY!;
    await append("test.rotation.before");
    const newKey = "rotated-key-".padEnd(48, "r");
    vi.stubEnv("AUDIT_HMAC_KEY", newKey);
    vi.stubEnv("AUDIT_HMAC_OLD_KEYS", oldKey);
    try {
      const e = await append("test.rotation.after");
      expect(e.keyId).toBe(auditKeyId(newKey));
      expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
      vi.stubEnv("AUDIT_HMAC_OLD_KEYS", "");
      const v = await verifyAuditChain(db.prisma);
      expect(v.intact).toBe(false);
      expect(new Set(v.breaks.map((b) => b.problem))).toEqual(new Set(["unknown_key"]));
      expect(v.breaks.length).toBe(await db.prisma.auditEntry.count({ where: { keyId: auditKeyId(oldKey) } }));
    } finally {
      vi.unstubAllEnvs();
    }
    // Back to the original key, with the rotated one retired, for the rest of the file.
    vi.stubEnv("AUDIT_HMAC_OLD_KEYS", newKey);
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
  });
});

describe("the issue's attacks, as a database superuser", () => {
  let published: PublishedAnchor;
  let restore: () => Promise<void>;
  beforeAll(async () => {
    for (let i = 0; i < 8; i++) await append(`test.attack.${i}`, `entry ${i}`);
    published = (await readChainHead(db.prisma))!;
    expect(published).toMatchObject({ id: expect.any(String), hash: expect.stringMatching(/^[0-9a-f]{64}$/), count: await db.prisma.auditEntry.count() });
    for (let i = 0; i < 3; i++) await append(`test.attack.after_anchor.${i}`);
    restore = await snapshot();
    expect(await verifyAuditChain(db.prisma, { anchors: [toAuditAnchor(published)] })).toMatchObject({ intact: true, anchorsChecked: 1 });
  });

  async function victim(): Promise<bigint> {
    const rows = await db.prisma.auditEntry.findMany({ where: { action: "test.attack.3" }, select: { id: true } });
    return rows[0].id;
  }

  it("delete an entry and re-chain with the project's entryHash (no key): every re-chained entry is named, and the anchor no longer holds", async () => {
    const id = await victim();
    const later = (await db.prisma.auditEntry.findMany({ where: { id: { gt: id } }, select: { id: true }, orderBy: { id: "asc" } })).map((r) => r.id);
    await deleteAndRechain(id, null, null);
    try {
      const v = await verifyAuditChain(db.prisma, { anchors: [toAuditAnchor(published)] });
      expect(v.intact).toBe(false);
      // Without the key the forger can only write old-format entries after keyed ones: each is listed.
      expect(v.breaks.filter((b) => b.problem === "unkeyed_after_keyed").map((b) => b.id)).toEqual(later);
      expect(v.breaks).toContainEqual(expect.objectContaining({ id: BigInt(published.id), problem: "anchor_mismatch" }));
      expect(v.breakCount).toBe(later.length + 1);
      expect(await anchorHolds(db.prisma, published)).toMatch(/another hash/);
    } finally {
      await restore();
    }
    expect((await verifyAuditChain(db.prisma, { anchors: [toAuditAnchor(published)] })).intact).toBe(true);
  });

  it("the same with a guessed key and the real key id: every re-chained entry is a hash mismatch", async () => {
    const id = await victim();
    const ring = auditKeyring();
    await deleteAndRechain(id, Buffer.from("a guess at the key".padEnd(40, "?")), ring.current.id);
    try {
      const v = await verifyAuditChain(db.prisma);
      const later = await db.prisma.auditEntry.count({ where: { id: { gt: id } } });
      expect(v.breaks.filter((b) => b.problem === "hash_mismatch")).toHaveLength(later);
    } finally {
      await restore();
    }
  });

  it("re-chained by someone holding the key: the chain alone looks intact, the published anchor does not", async () => {
    const id = await victim();
    const ring = auditKeyring();
    await deleteAndRechain(id, ring.current.key, ring.current.id);
    try {
      expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
      const v = await verifyAuditChain(db.prisma, { anchors: [toAuditAnchor(published)] });
      expect(v).toMatchObject({ intact: false, breakCount: 1 });
      expect(v.breaks[0]).toMatchObject({ id: BigInt(published.id), problem: "anchor_mismatch" });
    } finally {
      await restore();
    }
  });

  it("the newest entries cut off (truncation): invisible to the chain, found by the anchor", async () => {
    await superuser((s) => queryBound(s, `DELETE FROM audit_log WHERE id >= $1`, [BigInt(published.id) - 1n]).then(() => {}));
    try {
      expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
      const v = await verifyAuditChain(db.prisma, { anchors: [toAuditAnchor(published)] });
      expect(v).toMatchObject({ intact: false, breakCount: 1, anchorsChecked: 1 });
      expect(v.breaks[0]).toMatchObject({ id: BigInt(published.id), problem: "anchor_missing" });
      expect(await anchorHolds(db.prisma, published)).toMatch(/gone/);
    } finally {
      await restore();
    }
  });

  it("lists every break, in chain order, not only the first", async () => {
    const rows = await db.prisma.auditEntry.findMany({ where: { action: { startsWith: "test.attack." } }, orderBy: { id: "asc" }, select: { id: true } });
    const altered = [rows[1].id, rows[4].id, rows[6].id];
    await superuser((s) =>
      s
        .query(
          ...byDialect(db, {
            postgres: [`UPDATE audit_log SET reason = 'rewritten' WHERE id = ANY($1::bigint[])`, [altered]] as [string, unknown[]],
            mysql: [`UPDATE audit_log SET reason = 'rewritten' WHERE id IN (?, ?, ?)`, altered] as [string, unknown[]],
          }),
        )
        .then(() => {}),
    );
    try {
      const v = await verifyAuditChain(db.prisma, { pageSize: 3 });
      expect(v.breaks.map((b) => [b.id, b.problem])).toEqual(altered.map((id) => [id, "hash_mismatch"]));
    } finally {
      await restore();
    }
  });

  it("anchors read back from what was published: JSON lines (a file, the server's log), an array, one object", async () => {
    const line = JSON.stringify(published);
    const log = `database: PostgreSQL ready\naudit anchor ${line}\nsomething else\n`;
    expect(parseAnchors(log)).toEqual([toAuditAnchor(published)]);
    expect(parseAnchors(`[${line},${line}]`)).toHaveLength(2);
    expect(parseAnchors(line)).toEqual([toAuditAnchor(published)]);
    expect(() => parseAnchors(`{"type":"idempotency-console.audit-anchor","id":"x"}`)).toThrow(/not an audit anchor/);
  });

  it("the server publishes the head as a log line and metrics, and says when a published anchor stops holding", async () => {
    const lines: string[] = [];
    const errors: string[] = [];
    const log = { log: (l: string) => lines.push(l), error: (l: string) => errors.push(l) };
    const first = await publishAnchor(db.prisma, log);
    expect(first.status).toBe("published");
    expect(parseAnchors(lines.join("\n"))).toEqual([toAuditAnchor(first.anchor!)]);
    const metrics = await anchorMetricsText();
    expect(metrics).toContain(`idempotency_console_audit_anchor_entries ${first.anchor!.count}`);
    expect(metrics).toContain(`hash="${first.anchor!.hash}"`);
    await superuser((s) => queryBound(s, `DELETE FROM audit_log WHERE id = $1`, [BigInt(first.anchor!.id)]).then(() => {}));
    try {
      const second = await publishAnchor(db.prisma, log);
      expect(second.previousBroken).toMatch(/gone/);
      expect(errors.join("\n")).toMatch(/no longer holds/);
    } finally {
      await restore();
    }
  });
});

describe("entries from before keys (migration 20261201100000_audit_hmac)", () => {
  let legacy: TestDatabase;
  beforeAll(async () => {
    legacy = await createTestDatabase();
    // What the previous version wrote: plain SHA-256 links, key_id NULL.
    let prev = GENESIS_HASH;
    for (let i = 0; i < 4; i++) {
      const fields = {
        occurredAt: new Date(Date.now() - (10 - i) * 60_000),
        actorType: "system",
        actorId: null,
        actorLabel: "old",
        tokenId: null,
        action: `legacy.${i}`,
        targetTable: null,
        targetId: null,
        before: null,
        after: null,
        reason: `legacy ${i}`,
        requestId: null,
        ip: null,
        userAgent: null,
        outcome: "done",
        detail: null,
      };
      const hash = entryHash(prev, fields);
      await queryBound(
        legacy.sql,
        `INSERT INTO audit_log (occurred_at, actor_type, actor_label, action, reason, outcome, prev_hash, hash) VALUES ($1, 'system', 'old', $2, $3, 'done', $4, $5)`,
        [fields.occurredAt, fields.action, fields.reason, prev, hash],
      );
      prev = hash;
    }
    for (let i = 0; i < 3; i++) await audit(legacy.prisma, { actor: { type: "system", label: "new" }, action: `keyed.${i}`, outcome: "done" });
  });
  afterAll(() => legacy?.drop());

  it("keep verifying as plain SHA-256 (reported as unkeyed); the first keyed entry chains onto the last of them", async () => {
    expect(await verifyAuditChain(legacy.prisma)).toMatchObject({ intact: true, checked: 7, unkeyed: 4 });
    const firstKeyed = await legacy.prisma.auditEntry.findFirstOrThrow({ where: { keyId: { not: null } }, orderBy: { id: "asc" } });
    const lastLegacy = await legacy.prisma.auditEntry.findFirstOrThrow({ where: { keyId: null }, orderBy: { id: "desc" } });
    expect(firstKeyed.prevHash).toBe(lastLegacy.hash);
  });

  it("rewriting them — even recomputing all their SHA-256 hashes, which needs no key — breaks the first keyed entry's link", async () => {
    const rows = await legacy.prisma.auditEntry.findMany({ where: { keyId: null }, orderBy: { id: "asc" } });
    const firstKeyed = await legacy.prisma.auditEntry.findFirstOrThrow({ where: { keyId: { not: null } }, orderBy: { id: "asc" } });
    await superuser(async (s) => {
      let prev = GENESIS_HASH;
      for (const r of rows) {
        const reason = r.id === rows[1].id ? "rewritten" : r.reason;
        const hash = entryHash(prev, { ...r, reason });
        await queryBound(s, `UPDATE audit_log SET reason = $2, prev_hash = $3, hash = $4 WHERE id = $1`, [r.id, reason, prev, hash]);
        prev = hash;
      }
    }, legacy);
    const v = await verifyAuditChain(legacy.prisma);
    expect(v.breaks).toMatchObject([{ id: firstKeyed.id, problem: "link_mismatch" }]);
  });
});

describe.skipIf(!usingDatabaseServer)("npm run audit -- anchor / verify (a database server: the CLI opens the test database by URL)", () => {
  const run = (args: string[]) =>
    spawnSync(path.join(ROOT, "node_modules/.bin/tsx"), ["scripts/audit.ts", ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: db.url },
      encoding: "utf8",
      timeout: 60_000,
    });

  it("anchor appends a JSON line to a file; verify against that file finds the cut-off entries (exit 2)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "ic-anchor-"));
    const file = path.join(dir, "anchors.jsonl");
    try {
      await append("test.cli.1");
      const anchored = run(["anchor", "--out", file]);
      expect(anchored.status, anchored.stderr).toBe(0);
      expect(parseAnchors(readFileSync(file, "utf8"))).toHaveLength(1);
      const ok = run(["verify", "--anchor", file]);
      expect(ok.status, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ intact: true, anchorsChecked: 1 });
      const head = parseAnchors(readFileSync(file, "utf8"))[0];
      await superuser((s) => queryBound(s, `DELETE FROM audit_log WHERE id = $1`, [head.id]).then(() => {}));
      const broken = run(["verify", "--anchor", file]);
      expect(broken.status).toBe(2);
      expect(JSON.parse(broken.stdout)).toMatchObject({ intact: false, breaks: [{ id: String(head.id), problem: "anchor_missing" }] });
      expect(broken.stderr).toMatch(/anchor_missing/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
