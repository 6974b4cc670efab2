import { randomBytes } from "node:crypto";
import * as mariadb from "mariadb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendAudit, audit, entryHash, GENESIS_HASH, verifyAuditChain, type AuditInput } from "@/lib/audit";
import { auditKeyring } from "@/lib/audit/keys";
import { auditCsvChunks, auditEntryJson, auditExportSchema, auditQuerySchema, listAudit, toCsv, type AuditEntryJson } from "@/lib/audit/query";
import { byDialect } from "@/lib/db/dialect";
import type { SqlExecutor } from "@/lib/db/sql";
import { csvCell } from "@/lib/kernel/csv";
import { dropTestDatabase } from "./helpers/auth-fixtures";
import { createTestDatabase, usingMysql, type TestDatabase } from "./helpers/db";
import { bound, insertReturningId, queryBound, withoutAuditTriggers } from "./helpers/sql";

/**
 * The audit trail at the database level: append-only enforced by triggers, a
 * single hash chain however many writers append at once, tampering behind the
 * triggers' back found at exactly the entry it happened to, and a change and its
 * entry committing together or not at all. Then the listing and the CSV export.
 */

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => dropTestDatabase(db));

const system = (label = "test") => ({ type: "system" as const, label });

async function append(action: string, extra: Partial<AuditInput> = {}) {
  return audit(db.prisma, { actor: system(), action, outcome: "done", ...extra });
}

async function ids(): Promise<bigint[]> {
  return (await db.prisma.auditEntry.findMany({ orderBy: { id: "asc" }, select: { id: true } })).map((e) => e.id);
}

/** Runs statements on one session with the append-only triggers bypassed (what an attacker with superuser could do). */
async function behindTheTriggersBack(fn: (s: SqlExecutor) => Promise<void>, how: "replica" | "disable" = "replica") {
  await db.withSession((s) => withoutAuditTriggers(s, () => fn(s), how));
}

describe("audit_log is append-only in the database", () => {
  let target: bigint;
  beforeAll(async () => {
    target = (await append("test.append_only", { reason: "original" })).id;
  });

  it("refuses UPDATE, DELETE and TRUNCATE through raw SQL", async () => {
    const before = await db.sql.query(`SELECT * FROM audit_log ORDER BY id`);
    await expect(queryBound(db.sql, `UPDATE audit_log SET reason = 'rewritten' WHERE id = $1`, [target])).rejects.toThrow(
      /audit_log is append-only: UPDATE refused/,
    );
    await expect(db.sql.query(`UPDATE audit_log SET outcome = 'done'`)).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(queryBound(db.sql, `DELETE FROM audit_log WHERE id = $1`, [target])).rejects.toThrow(/append-only: DELETE refused/);
    await expect(db.sql.query(`DELETE FROM audit_log`)).rejects.toThrow(/append-only: DELETE refused/);
    // MySQL fires no trigger on TRUNCATE (ADR 0012): there it is the privilege, below.
    if (!usingMysql) {
      await expect(db.sql.query(`TRUNCATE audit_log`)).rejects.toThrow(/append-only: TRUNCATE refused/);
      await expect(db.sql.query(`TRUNCATE audit_log RESTART IDENTITY CASCADE`)).rejects.toThrow(/append-only: TRUNCATE refused/);
    }
    // Also inside an explicit transaction on one session (no partial effect survives).
    await db.withSession(async (s) => {
      await s.exec(byDialect(db, { postgres: "BEGIN", mysql: "START TRANSACTION" }));
      await expect(queryBound(s, `DELETE FROM audit_log WHERE id = $1`, [target])).rejects.toThrow(/append-only/);
      await s.exec("ROLLBACK");
    });
    expect(await db.sql.query(`SELECT * FROM audit_log ORDER BY id`)).toEqual(before);
  });

  it.runIf(usingMysql)("MySQL fires no trigger on TRUNCATE: the README's grant (SELECT, INSERT on audit_log, no DROP) is what refuses it", async () => {
    const before = await db.sql.query(`SELECT * FROM audit_log ORDER BY id`);
    const url = new URL(db.url!);
    const user = `ic_audit_${randomBytes(4).toString("hex")}`;
    const password = randomBytes(12).toString("hex");
    await db.sql.exec(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
    try {
      await db.sql.exec(`GRANT SELECT, INSERT ON \`${url.pathname.slice(1)}\`.audit_log TO '${user}'@'%'`);
      const c = await mariadb.createConnection({ host: url.hostname, port: Number(url.port || 3306), user, password, database: url.pathname.slice(1) });
      try {
        await expect(c.query(`TRUNCATE audit_log`)).rejects.toThrow(/DROP command denied/);
        await expect(c.query(`DELETE FROM audit_log`)).rejects.toThrow(/DELETE command denied/);
        expect((await c.query(`SELECT COUNT(*) AS n FROM audit_log`))[0].n).toBe(BigInt(before.length));
      } finally {
        await c.end();
      }
    } finally {
      await db.sql.exec(`DROP USER '${user}'@'%'`);
    }
    expect(await db.sql.query(`SELECT * FROM audit_log ORDER BY id`)).toEqual(before);
  });

  it("refuses them through Prisma too", async () => {
    const before = await db.prisma.auditEntry.findMany({ orderBy: { id: "asc" } });
    await expect(db.prisma.auditEntry.update({ where: { id: target }, data: { reason: "rewritten" } })).rejects.toThrow(/append-only/);
    await expect(db.prisma.auditEntry.updateMany({ data: { outcome: "failed" } })).rejects.toThrow(/append-only/);
    await expect(db.prisma.auditEntry.delete({ where: { id: target } })).rejects.toThrow(/append-only/);
    await expect(db.prisma.auditEntry.deleteMany({})).rejects.toThrow(/append-only/);
    if (!usingMysql) await expect(db.prisma.$executeRawUnsafe(`TRUNCATE audit_log`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRaw`DELETE FROM audit_log WHERE id = ${target}`).rejects.toThrow(/append-only/);
    expect(await db.prisma.auditEntry.findMany({ orderBy: { id: "asc" } })).toEqual(before);
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });
});

describe("the hash chain", () => {
  it("stays one unbroken line when 30 callers append at once", async () => {
    const start = await db.prisma.auditEntry.count();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        audit(db.prisma, {
          actor: { type: "user", userId: BigInt(1000 + i), label: `racer${i}@example.test` },
          action: "test.concurrent",
          target: { table: "console_users", id: 1000 + i },
          after: { i, at: new Date(), big: BigInt(2) ** BigInt(70) },
          reason: `racer ${i}`,
          outcome: "done",
        }),
      ),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(30);
    const all = await db.prisma.auditEntry.findMany({ orderBy: { id: "asc" } });
    expect(all).toHaveLength(start + 30);
    // Every entry links to the one before it: no fork (two entries on one predecessor), no gap.
    expect(all[0].prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < all.length; i++) expect(all[i].prevHash).toBe(all[i - 1].hash);
    expect(new Set(all.map((e) => e.prevHash)).size).toBe(all.length);
    const v = await verifyAuditChain(db.prisma);
    expect(v).toMatchObject({ intact: true, checked: all.length, lastHash: all[all.length - 1].hash });
    expect(v.brokenAt).toBeUndefined();
    // And paging through the chain (page boundaries) changes nothing.
    expect(await verifyAuditChain(db.prisma, { pageSize: 7 })).toMatchObject({ intact: true, checked: all.length });
  });

  it("stores exactly what it hashes, whatever the text (emoji, NUL, lone surrogates, long reasons)", async () => {
    await append("test.text", { reason: `${"x".repeat(1999)}😀 cut inside a surrogate pair` });
    await append("test.text", { reason: "nul \u0000 and lone \ud800 surrogate", detail: { "k\udc00": "v\u0000", n: 0.1, big: 10n ** 20n } });
    await append("test.text", { actor: { type: "anonymous", label: "é".repeat(400) }, detail: { nested: [{ a: null, b: [1, "2", true] }] } });
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
  });
});

describe("tampering behind the triggers' back", () => {
  let victim: bigint;
  let next: bigint;
  beforeAll(async () => {
    await append("test.tamper.before");
    victim = (await append("test.tamper.victim", { reason: "the original reason", after: { roles: ["viewer"] } })).id;
    await append("test.tamper.after");
    const all = await ids();
    next = all[all.indexOf(victim) + 1];
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });

  it("an altered entry is found at exactly that entry (hash mismatch), and the restored chain verifies again", async () => {
    const [orig] = await queryBound<{ reason: string; after: unknown; occurred_at: Date; outcome: string }>(
      db.sql,
      `SELECT reason, "after", occurred_at, outcome FROM audit_log WHERE id = $1`,
      [victim],
    );
    const alterations: [string, string, unknown[]][] = [
      ["reason", `UPDATE audit_log SET reason = 'a better reason' WHERE id = $1`, [victim]],
      [
        "after (jsonb)",
        byDialect(db, {
          postgres: `UPDATE audit_log SET after = '{"roles":["admin"]}'::jsonb WHERE id = $1`,
          mysql: `UPDATE audit_log SET "after" = '{"roles":["admin"]}' WHERE id = $1`,
        }),
        [victim],
      ],
      [
        "occurred_at",
        byDialect(db, {
          postgres: `UPDATE audit_log SET occurred_at = occurred_at - interval '1 day' WHERE id = $1`,
          mysql: `UPDATE audit_log SET occurred_at = occurred_at - INTERVAL 1 DAY WHERE id = $1`,
        }),
        [victim],
      ],
      ["outcome", `UPDATE audit_log SET outcome = 'refused' WHERE id = $1`, [victim]],
    ];
    for (const [what, sql, params] of alterations) {
      await behindTheTriggersBack((s) => queryBound(s, sql, params).then(() => {}));
      const v = await verifyAuditChain(db.prisma);
      expect(v.intact, what).toBe(false);
      // Exactly that entry: the walk goes on from its stored hash, so nothing after it is blamed.
      expect(v.breaks, what).toMatchObject([{ id: victim, problem: "hash_mismatch" }]);
      expect(v.checked, what).toBe((await ids()).length);
      await behindTheTriggersBack((s) =>
        queryBound(
          s,
          byDialect(db, {
            postgres: `UPDATE audit_log SET reason = $2, after = $3::jsonb, occurred_at = $4, outcome = $5 WHERE id = $1`,
            mysql: `UPDATE audit_log SET reason = $2, "after" = $3, occurred_at = $4, outcome = $5 WHERE id = $1`,
          }),
          [victim, orig.reason, JSON.stringify(orig.after), orig.occurred_at, orig.outcome],
        ).then(() => {}),
      );
      expect((await verifyAuditChain(db.prisma)).intact, `${what} restored`).toBe(true);
    }
  });

  it("the same through ALTER TABLE … DISABLE TRIGGER", async () => {
    await behindTheTriggersBack((s) => queryBound(s, `UPDATE audit_log SET reason = 'rewritten' WHERE id = $1`, [victim]).then(() => {}), "disable");
    expect((await verifyAuditChain(db.prisma)).brokenAt).toMatchObject({ id: victim, problem: "hash_mismatch" });
    // The trigger is back on afterwards.
    await expect(queryBound(db.sql, `UPDATE audit_log SET reason = 'x' WHERE id = $1`, [victim])).rejects.toThrow(/append-only/);
    await behindTheTriggersBack((s) => queryBound(s, `UPDATE audit_log SET reason = 'the original reason' WHERE id = $1`, [victim]).then(() => {}), "disable");
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });

  it("an altered entry whose own hash was recomputed is found at the next entry (link mismatch) — even by someone holding the key", async () => {
    const row = await db.prisma.auditEntry.findUniqueOrThrow({ where: { id: victim } });
    const forged = entryHash(row.prevHash, { ...row, reason: "forged, with a recomputed hash" }, auditKeyring().current.key);
    await behindTheTriggersBack((s) =>
      queryBound(s, `UPDATE audit_log SET reason = 'forged, with a recomputed hash', hash = $2 WHERE id = $1`, [victim, forged]).then(() => {}),
    );
    const v = await verifyAuditChain(db.prisma);
    expect(v.breaks).toMatchObject([{ id: next, problem: "link_mismatch", expected: forged, found: row.hash }]);
    await behindTheTriggersBack((s) =>
      queryBound(s, `UPDATE audit_log SET reason = $2, hash = $3 WHERE id = $1`, [victim, row.reason, row.hash]).then(() => {}),
    );
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });

  it("a deleted entry is found at the next entry (link mismatch), and putting it back verifies again", async () => {
    for (const how of ["disable", "replica"] as const) {
      await behindTheTriggersBack(async (s) => {
        // MySQL: a table of its own (DDL commits, and the next session may be another connection).
        await s.query(
          byDialect(db, {
            postgres: `CREATE TEMP TABLE IF NOT EXISTS audit_saved AS SELECT * FROM audit_log WITH NO DATA`,
            mysql: `CREATE TABLE IF NOT EXISTS audit_saved AS SELECT * FROM audit_log LIMIT 0`,
          }),
        );
        await queryBound(s, `INSERT INTO audit_saved SELECT * FROM audit_log WHERE id = $1`, [victim]);
        await queryBound(s, `DELETE FROM audit_log WHERE id = $1`, [victim]);
      }, how);
      expect(await db.prisma.auditEntry.findUnique({ where: { id: victim } })).toBeNull();
      const v = await verifyAuditChain(db.prisma);
      expect(v, how).toMatchObject({ intact: false, brokenAt: { id: next, problem: "link_mismatch" }, breakCount: 1 });
      expect(v.checked).toBe((await ids()).length);
      // INSERT is allowed (append-only), so the original row can be put back as it was.
      await db.withSession(async (s) => {
        await queryBound(s, `INSERT INTO audit_log SELECT * FROM audit_saved WHERE id = $1`, [victim]);
        await s.query(`DELETE FROM audit_saved`);
      });
      expect((await verifyAuditChain(db.prisma)).intact, `${how}: restored`).toBe(true);
    }
  });

  it("a forged entry inserted at the end is found at that entry: keyed with a made-up hash, or unkeyed with a correct SHA-256", async () => {
    const last = await db.prisma.auditEntry.findFirstOrThrow({ orderBy: { id: "desc" } });
    const id = await insertReturningId(
      db.sql,
      ...bound(
        db.dialect,
        `INSERT INTO audit_log (occurred_at, actor_type, action, outcome, prev_hash, hash, key_id)
       VALUES (now(), 'system', 'test.forged', 'done', $1, $2, $3)`,
        [last.hash, "f".repeat(64), last.keyId],
      ),
    );
    expect((await verifyAuditChain(db.prisma)).breaks).toMatchObject([{ id, problem: "hash_mismatch" }]);
    await behindTheTriggersBack((s) => queryBound(s, `DELETE FROM audit_log WHERE id = $1`, [id]).then(() => {}));
    // The forger computes a valid plain SHA-256 (the pre-key format): an unkeyed entry after keyed ones.
    const occurredAt = new Date();
    const fields = {
      occurredAt,
      actorType: "system",
      actorId: null,
      actorLabel: null,
      tokenId: null,
      action: "test.forged",
      targetTable: null,
      targetId: null,
      before: null,
      after: null,
      reason: null,
      requestId: null,
      ip: null,
      userAgent: null,
      outcome: "done",
      detail: null,
    };
    const id2 = await insertReturningId(
      db.sql,
      ...bound(
        db.dialect,
        `INSERT INTO audit_log (occurred_at, actor_type, action, outcome, prev_hash, hash) VALUES ($1, 'system', 'test.forged', 'done', $2, $3)`,
        [occurredAt, last.hash, entryHash(last.hash, fields)],
      ),
    );
    expect((await verifyAuditChain(db.prisma)).breaks).toMatchObject([{ id: id2, problem: "unkeyed_after_keyed" }]);
    await behindTheTriggersBack((s) => queryBound(s, `DELETE FROM audit_log WHERE id = $1`, [id2]).then(() => {}));
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });
});

describe("a change and its audit entry commit together or not at all", () => {
  it("a transaction that fails after both leaves neither", async () => {
    const auditBefore = await db.prisma.auditEntry.count();
    const email = `rollback-${Date.now()}@example.test`;
    await expect(
      db.prisma.$transaction(async (tx) => {
        const user = await tx.consoleUser.create({ data: { email, roles: ["viewer"] } });
        await appendAudit(tx, {
          actor: system(),
          action: "users.create",
          target: { table: "console_users", id: user.id },
          after: user,
          reason: "test",
          outcome: "done",
        });
        throw new Error("boom after the change and its audit entry");
      }),
    ).rejects.toThrow(/boom/);
    expect(await db.prisma.consoleUser.findUnique({ where: { email } })).toBeNull();
    expect(await db.prisma.auditEntry.count()).toBe(auditBefore);
  });

  it("a change the database refuses after the entry was appended leaves neither", async () => {
    const auditBefore = await db.prisma.auditEntry.count();
    await expect(
      db.prisma.$transaction(async (tx) => {
        await appendAudit(tx, { actor: system(), action: "users.create", target: { table: "console_users", id: "?" }, reason: "test", outcome: "done" });
        await tx.consoleUser.create({ data: { email: "NOT-LOWERCASE@example.test", roles: ["viewer"] } }); // CHECK constraint
      }),
    ).rejects.toThrow();
    expect(await db.prisma.auditEntry.count()).toBe(auditBefore);
    expect(await db.prisma.consoleUser.count({ where: { email: { contains: "NOT-LOWERCASE" } } })).toBe(0);
  });

  it("the chain continues from the last committed entry", async () => {
    const last = await db.prisma.auditEntry.findFirstOrThrow({ orderBy: { id: "desc" } });
    const email = `commit-${Date.now()}@example.test`;
    const entry = await db.prisma.$transaction(async (tx) => {
      const user = await tx.consoleUser.create({ data: { email, roles: ["viewer"] } });
      return appendAudit(tx, {
        actor: system(),
        action: "users.create",
        target: { table: "console_users", id: user.id },
        after: user,
        reason: "test",
        outcome: "done",
      });
    });
    expect(entry.prevHash).toBe(last.hash);
    expect(await db.prisma.consoleUser.findUnique({ where: { email } })).not.toBeNull();
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });
});

describe("listing and filters", () => {
  const tag = `q${Date.now().toString(36)}`;
  beforeAll(async () => {
    const u1 = { type: "user" as const, userId: 501n, label: "alice@example.test" };
    const t2 = { type: "token" as const, userId: 502n, label: "bob@example.test (token ci)", tokenId: 9n };
    await audit(db.prisma, { actor: u1, action: `${tag}.users.create`, target: { table: "console_users", id: 7 }, outcome: "done", reason: "r1" });
    await audit(db.prisma, { actor: u1, action: `${tag}.users.update`, target: { table: "console_users", id: 7 }, outcome: "refused" });
    await audit(db.prisma, { actor: t2, action: `${tag}.tokens.create`, target: { table: "api_tokens", id: 3 }, outcome: "done" });
    await audit(db.prisma, { actor: { type: "system", label: "100% sure" }, action: `${tag}.system`, outcome: "failed" });
    await audit(db.prisma, { actor: { type: "system", label: "100x sure" }, action: `${tag}.system`, outcome: "failed" });
  });
  const q = (raw: Record<string, string>) => auditQuerySchema.parse({ action: `${tag}.*`, ...raw });
  const actions = async (raw: Record<string, string>) => (await listAudit(db.prisma, q(raw))).entries.map((e) => `${e.action}|${e.actorLabel}`);

  it("filters by actor id or label prefix, action exact or prefix, target, outcome", async () => {
    expect(await actions({ actor: "501" })).toEqual([`${tag}.users.update|alice@example.test`, `${tag}.users.create|alice@example.test`]);
    expect(await actions({ actor: "BOB@" })).toEqual([`${tag}.tokens.create|bob@example.test (token ci)`]);
    // LIKE wildcards in a prefix are literal.
    expect(await actions({ actor: "100%" })).toEqual([`${tag}.system|100% sure`]);
    expect(await actions({ action: `${tag}.users.create` })).toHaveLength(1);
    expect(await actions({ action: `${tag}.users.*` })).toHaveLength(2);
    expect(await actions({ action: `${tag}.users` })).toHaveLength(0); // exact unless it ends with *
    expect(await actions({ action: `${tag}_users.*` })).toHaveLength(0);
    expect(await actions({ targetTable: "console_users", targetId: "7" })).toHaveLength(2);
    expect(await actions({ targetTable: "api_tokens" })).toHaveLength(1);
    expect(await actions({ outcome: "failed" })).toHaveLength(2);
    expect(await actions({ outcome: "refused", actor: "alice" })).toEqual([`${tag}.users.update|alice@example.test`]);
  });

  it("filters by time range (from inclusive, to exclusive)", async () => {
    const all = (await listAudit(db.prisma, q({}))).entries;
    const oldest = all[all.length - 1].occurredAt;
    expect(await actions({ from: new Date(Date.now() + 60_000).toISOString() })).toHaveLength(0);
    expect(await actions({ to: oldest.toISOString() })).toHaveLength(0);
    expect(await actions({ from: oldest.toISOString() })).toHaveLength(5);
    expect(await actions({ from: "2000-01-01", to: "2999-01-01T00:00" })).toHaveLength(5);
  });

  it("pages newest first with a keyset cursor, without gaps or repeats", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<typeof listAudit>> = await listAudit(db.prisma, q({ limit: "2", ...(cursor ? { cursor } : {}) }));
      seen.push(...page.entries.map((e) => e.id.toString()));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(5);
    expect(seen.map(BigInt)).toEqual([...seen.map(BigInt)].sort((a, b) => (a > b ? -1 : 1)));
    expect((await listAudit(db.prisma, q({ limit: "5" }))).nextCursor).toBeNull();
  });

  it("refuses bad filters: limit over 200, unknown keys, malformed times, from after to", () => {
    expect(auditQuerySchema.safeParse({ limit: "201" }).success).toBe(false);
    expect(auditQuerySchema.safeParse({ limit: "0" }).success).toBe(false);
    expect(auditQuerySchema.safeParse({ limit: "200" }).success).toBe(true);
    expect(auditQuerySchema.safeParse({ page: "2" }).success).toBe(false);
    expect(auditQuerySchema.safeParse({ cursor: "abc" }).success).toBe(false);
    expect(auditQuerySchema.safeParse({ from: "yesterday" }).success).toBe(false);
    expect(auditQuerySchema.safeParse({ from: "2026-02-30T00:00:00Z" }).success).toBe(false);
    expect(auditQuerySchema.safeParse({ outcome: "ok" }).success).toBe(false);
    expect(auditQuerySchema.safeParse({ from: "2026-02-01", to: "2026-01-01" }).success).toBe(false);
    expect(auditExportSchema.safeParse({ limit: "10" }).success).toBe(false);
    expect(auditQuerySchema.parse({ actor: "", action: "  " })).toEqual({});
    expect(auditQuerySchema.parse({ from: "2026-01-31T09:00" }).from?.toISOString()).toBe("2026-01-31T09:00:00.000Z");
  });
});

describe("CSV", () => {
  const entry = (over: Partial<AuditEntryJson>): AuditEntryJson => ({
    id: "1",
    occurredAt: "2026-01-01T00:00:00.000Z",
    actorType: "user",
    actorId: "5",
    actorLabel: "a@example.test",
    tokenId: null,
    action: "users.create",
    targetTable: null,
    targetId: null,
    outcome: "done",
    reason: null,
    before: null,
    after: null,
    detail: null,
    requestId: null,
    ip: null,
    userAgent: null,
    prevHash: "0".repeat(64),
    hash: "a".repeat(64),
    ...over,
  });

  it("quotes as RFC 4180 says and neutralises formulas", () => {
    expect(csvCell("plain")).toBe("plain");
    expect(csvCell(null)).toBe("");
    expect(csvCell('say "hi", then go')).toBe('"say ""hi"", then go"');
    expect(csvCell("two\nlines")).toBe('"two\nlines"');
    expect(csvCell("cr\rhere")).toBe('"cr\rhere"');
    for (const f of ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", '=HYPERLINK("http://evil","x")']) {
      expect(csvCell(f).replace(/^"/, "").startsWith("'")).toBe(true);
    }
    expect(csvCell('=cmd|" /C calc"!A0')).toBe(`"'=cmd|"" /C calc""!A0"`);
  });

  it("writes a header and one CRLF line per entry, JSON columns as JSON", () => {
    const csv = toCsv([
      entry({ reason: "=2+3", after: { roles: ["admin"] }, detail: { note: 'he said "no"' } }),
      entry({ id: "2", actorLabel: "b, c", reason: "line\nbreak" }),
    ]);
    const lines = csv.split("\r\n");
    expect(lines[0]).toBe(
      "id,occurred_at,actor_type,actor_id,actor_label,token_id,action,target_table,target_id,outcome,reason,before,after,detail,request_id,ip,user_agent,prev_hash,hash",
    );
    expect(lines[1]).toContain(`,'=2+3,,"{""roles"":[""admin""]}","{""note"":""he said \\""no\\""""}",`);
    expect(csv).toContain(`"b, c"`);
    expect(csv).toContain(`"line\nbreak"`);
    expect(csv.endsWith("\r\n")).toBe(true);
    expect(lines).toHaveLength(4);
  });

  it("exports every matching entry in pages, below the given id, up to maxRows", async () => {
    const all = await db.prisma.auditEntry.findMany({ where: { action: "test.concurrent" }, orderBy: { id: "desc" } });
    const collect = async (opts: Parameters<typeof auditCsvChunks>[2]) => {
      let out = "";
      for await (const chunk of auditCsvChunks(db.prisma, auditExportSchema.parse({ action: "test.concurrent" }), opts)) out += chunk;
      return out
        .trimEnd()
        .split("\r\n")
        .slice(1)
        .map((l) => l.split(",")[0]);
    };
    expect(await collect({ pageSize: 4 })).toEqual(all.map((e) => e.id.toString()));
    expect(await collect({ pageSize: 4, maxRows: 10 })).toEqual(all.slice(0, 10).map((e) => e.id.toString()));
    expect(await collect({ beforeId: all[5].id })).toEqual(all.slice(6).map((e) => e.id.toString()));
    expect(toCsv([all[0]])).toBe(toCsv([auditEntryJson(all[0])]));
  });
});
