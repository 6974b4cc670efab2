import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAuditChain } from "@/lib/audit";
import { provideDatabase } from "@/lib/db/client";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { IdempotencyStore } from "@/lib/idempotency";
import { parseMaskSettings } from "@/lib/records/config";
import { loadRecord, recordDetail } from "@/lib/records/detail";
import { buildMaskRules, luhnValid, maskBody, maskHeaders, maskResponse, MASK } from "@/lib/records/mask";
import { execute } from "@/lib/db/sql";
import { createTestDatabase, usingMysql, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";

const rules = buildMaskRules({ extraKeys: [], extraHeaders: [], extraPatterns: [] });

describe("masking", () => {
  it("card numbers: 13–19 digits, separators allowed, Luhn-valid, network first digit; the last four stay", () => {
    expect(luhnValid("4111111111111111")).toBe(true);
    expect(luhnValid("4111111111111112")).toBe(false);
    const cases: [string, string][] = [
      ["card 4111111111111111 ok", "card ************1111 ok"],
      ["4111 1111 1111 1111", "**** **** **** 1111"],
      ["5555-5555-5555-4444", "****-****-****-4444"],
      ["amex 378282246310005", "amex ***********0005"],
      ["19 digits 6011000990139424000", "19 digits 6011000990139424000"], // Luhn-invalid: left alone
      ["4111111111111112", "4111111111111112"], // Luhn-invalid
      ["ts 1764504000000 ms", "ts 1764504000000 ms"], // a timestamp (first digit 1) is not a card
      ["12345678901234567890123", "12345678901234567890123"], // too long
      ["order 1234 4111111111111111", "order 1234 ************1111"],
    ];
    for (const [input, output] of cases) expect(maskBody(input, rules).body, input).toBe(output);
    // A card as a JSON number keeps its digits (JSON.parse would round it) and becomes a string.
    expect(maskBody('{"pan_like":4111111111111111,"n":4111111111111112}', rules).body).toBe('{"pan_like":"************1111","n":4111111111111112}');
  });

  it("emails, bearer/basic credentials, API keys and JWTs inside text; prose is left alone", () => {
    const text =
      "mail jane.doe+x@example.co.uk; auth Bearer abcDEF123.456-xyz; basic Basic dXNlcjpwYXNzd29yZA==; key sk_live_4eC39HqLyjWDarjtT1zdp7dc; " +
      "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c; Basic authentication failed; Bearer of bad news";
    const m = maskBody(text, rules);
    expect(m.body).toBe(
      `mail j***@example.co.uk; auth Bearer ${MASK}; basic Basic ${MASK}; key ${MASK}; jwt ${MASK}; Basic authentication failed; Bearer of bad news`,
    );
    expect(m.masked.map((x) => x.rule).sort()).toEqual(["email", "token"]);
    expect(maskBody("user=bob&password=hunter2&client_secret=abc", rules).body).toBe(`user=bob&password=${MASK}&client_secret=${MASK}`);
    expect(maskBody("IBAN DE89 3704 0044 0532 0130 00 and DE00 1234 5678 9012 3456 78", rules).body).toBe(
      "IBAN DE****************3000 and DE00 1234 5678 9012 3456 78",
    );
  });

  it("JSON keys (password, secret, token, card_number, cvc, iban …) at any depth; the rest byte for byte; paths reported", () => {
    const body = `{"id": "pay_1",  "Password":"p", "card": {"card_number": "4000056655665556", "cvc": 737, "expiry":"12/30"},
      "items":[{"api-key":"k1"},{"session_token":{"a":1}},{"iban":null}], "customer":{"email":"a.b@c.io"}, "token_type":"bearer", "weird key":"x@y.io"}`;
    const m = maskBody(body, rules);
    expect(m.body).toBe(`{"id": "pay_1",  "Password":"${MASK}", "card": {"card_number": "${MASK}", "cvc": "${MASK}", "expiry":"12/30"},
      "items":[{"api-key":"${MASK}"},{"session_token":"${MASK}"},{"iban":null}], "customer":{"email":"a***@c.io"}, "token_type":"bearer", "weird key":"x***@y.io"}`);
    expect(m.masked).toEqual([
      { path: "body.Password", rule: "key:password" },
      { path: "body.card.card_number", rule: "key:cardnumber" },
      { path: "body.card.cvc", rule: "key:cvc" },
      { path: "body.items[0].api-key", rule: "key:apikey" },
      { path: "body.items[1].session_token", rule: "key:sessiontoken" },
      { path: "body.customer.email", rule: "email" },
      { path: 'body["weird key"]', rule: "email" },
    ]);
    expect(JSON.parse(m.body)).toBeTruthy();
    expect(maskBody('{"a":"b"}', rules)).toEqual({ body: '{"a":"b"}', masked: [] });
    // Not JSON after all: the text rules still apply.
    expect(maskBody('{"card": 4111111111111111', rules).body).toBe('{"card": ************1111');
  });

  it("headers: Authorization keeps its scheme, cookies keep their names, API-key headers go, others get the text rules", () => {
    const m = maskHeaders(
      [
        ["Content-Type", "application/json"],
        ["Authorization", "Bearer abc.def.ghi"],
        ["Set-Cookie", "sid=s3cr3t; Path=/; HttpOnly"],
        ["Set-Cookie", "theme=dark"],
        ["Cookie", "a=1; b=2"],
        ["X-Api-Key", "k"],
        ["Location", "/v1/payments/pay_1?access_token=zzz"],
      ],
      rules,
    );
    expect(m.headers).toEqual([
      ["Content-Type", "application/json"],
      ["Authorization", `Bearer ${MASK}`],
      ["Set-Cookie", `sid=${MASK}; Path=/; HttpOnly`],
      ["Set-Cookie", `theme=${MASK}`],
      ["Cookie", `a=${MASK}; b=${MASK}`],
      ["X-Api-Key", MASK],
      ["Location", `/v1/payments/pay_1?access_token=${MASK}`],
    ]);
    expect(m.masked.map((x) => x.path)).toEqual(["headers[1]", "headers[2]", "headers[3]", "headers[4]", "headers[5]", "headers[6]"]);
  });

  it("patterns are configurable: extra keys, headers and expressions from the environment", () => {
    const custom = buildMaskRules(
      parseMaskSettings({ MASK_KEYS: "vat_id, Customer-Ref", MASK_HEADERS: "X-Signature", MASK_PATTERNS: '[{"name":"order","pattern":"ORD-\\\\d{6}"}]' }),
    );
    const r = maskResponse({ code: 200, headers: [["X-Signature", "t=1,v1=abc"]], body: '{"vat_id":"DE1","customerRef":"c","note":"see ORD-123456"}' }, custom);
    expect(r.headers).toEqual([["X-Signature", MASK]]);
    expect(r.body).toBe(`{"vat_id":"${MASK}","customerRef":"${MASK}","note":"see ${MASK}"}`);
    expect(r.masked.map((x) => x.rule)).toEqual(["header:x-signature", "key:vatid", "key:customerref", "pattern:order"]);
    expect(() => parseMaskSettings({ MASK_PATTERNS: '[{"name":"bad","pattern":"("}]' })).toThrow();
    expect(() => parseMaskSettings({ MASK_PATTERNS: '{"name":"x"}' })).toThrow(/array/);
  });
});

// ---------------------------------------------------------------------------------------

let db: TestDatabase;
let demo: DemoSummary;
let secretId: bigint;
const now = new Date("2026-11-30T12:00:00.000Z");
const SECRET_BODY = JSON.stringify({
  id: "pay_secret",
  card: { number: "4111 1111 1111 1111", cvc: "737" },
  customer: { email: "jane.doe@example.com" },
  token: "tok_live_0123456789",
});
const SECRET_HEADERS: [string, string][] = [
  ["Content-Type", "application/json"],
  ["Set-Cookie", "sid=s3cr3t-cookie; Path=/"],
  ["Authorization", "Bearer abc.def.ghi123"],
];
const SECRETS = ["4111 1111 1111 1111", "737", "jane.doe@", "tok_live_0123456789", "s3cr3t-cookie", "abc.def.ghi123"];

beforeAll(async () => {
  db = await createTestDatabase();
  demo = await generateDemoTraffic(db, { seed: 41, requests: 300, days: 5, now });
  const store = new IdempotencyStore(db.prisma);
  const r = await store.begin({ scope: "tenant:acme", operation: "capture_payment", key: "secret-1", payload: { n: 1 }, amountMinor: 1299, currency: "EUR" });
  if (r.outcome !== "owner") throw new Error("setup");
  await store.complete(r.record.id, {
    code: 201,
    headers: SECRET_HEADERS,
    body: SECRET_BODY,
    outbox: [{ topic: "email.receipt", payload: { to: "jane.doe@example.com", card_number: "4111111111111111" } }],
  });
  secretId = r.record.id;
  provideDatabase(db);
});
afterAll(() => db?.drop());

const detailRoute = () => import("@/app/api/v1/records/[id]/route");
const revealRoute = () => import("@/app/api/v1/records/[id]/reveal/route");
/** Next's params for /api/v1/records/[id][/reveal]. */
const idParams = (id: bigint | number | string) => ({ id: String(id) });
const reveal = (id: bigint | number, token: string | null, body: unknown) =>
  revealRoute().then((r) =>
    call(
      r.POST,
      `/api/v1/records/${id}/reveal`,
      token,
      { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
      idParams(id),
    ),
  );

async function auditOf(id: bigint) {
  return db.sql.query<{ action: string; outcome: string; reason: string | null; actor_label: string; detail: unknown }>(
    `SELECT action, outcome, reason, actor_label, detail FROM audit_log WHERE target_table = 'idempotency_records' AND target_id = ${db.dialect.param(1)} ORDER BY id`,
    [id.toString()],
  );
}

describe("record detail", () => {
  it("has every field, the whole timeline, reconciliation, outbox, duplicates — equal to the raw tables", async () => {
    const pair = demo.doubleSubmits[0];
    const id = BigInt(pair.recordIds[0]);
    const d = await recordDetail(db.sql, id, { bodyAccess: "masked" });
    // legal_hold is a BOOLEAN on PostgreSQL, a TINYINT(1) (0/1) on MySQL: the raw row says false either way.
    const [raw] = (await db.sql.query<Record<string, unknown>>(`SELECT * FROM idempotency_records WHERE id = ${db.dialect.param(1)}`, [id])).map(
      (r): Record<string, unknown> => ({
        ...r,
        legal_hold: Boolean(r.legal_hold),
      }),
    );
    expect(d.record).toMatchObject({
      id,
      scope: raw.scope,
      operation: raw.operation,
      idempotencyKey: raw.idempotency_key,
      payloadHash: raw.payload_hash,
      status: raw.status,
      providerReference: raw.provider_reference,
      amountMinor: raw.amount_minor,
      expiresAt: raw.expires_at,
      version: raw.version,
      legalHold: raw.legal_hold,
    });
    const events = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_events WHERE record_id = ${db.dialect.param(1)} ORDER BY occurred_at, id`, [
      id,
    ]);
    expect(d.timeline.events.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(d.timeline).toMatchObject({ total: events.length, truncated: false });
    const outbox = await db.sql.query<{ id: bigint }>(`SELECT id FROM outbox_messages WHERE record_id = ${db.dialect.param(1)} ORDER BY created_at, id`, [id]);
    expect(d.outboxMessages.map((m) => m.id)).toEqual(outbox.map((m) => m.id));
    // The planted double charge shows up as a suspected duplicate of its first half.
    expect(d.suspectedDuplicates.map((s) => s.id.toString())).toEqual([pair.recordIds[1]]);
    expect(d.suspectedDuplicates[0]).toMatchObject({ basis: ["payload_hash"], secondsApart: pair.secondsApart });

    const pending = await db.sql.query<{ record_id: bigint }>(`SELECT record_id FROM reconciliation_items ORDER BY id LIMIT 1`);
    const withItem = await recordDetail(db.sql, pending[0].record_id, { bodyAccess: "none" });
    expect(withItem.reconciliationItems.length).toBeGreaterThan(0);
    expect(withItem.response).toBeNull();
  });

  it("says which actions can work on the record, and why not: check with provider, compensation", async () => {
    const stuck = await db.sql.query<{ id: bigint }>(
      `SELECT id FROM idempotency_records WHERE status = 'processing' AND provider_request_id IS NULL ORDER BY created_at LIMIT 1`,
    );
    const pending = await db.sql.query<{ record_id: bigint }>(`SELECT record_id FROM reconciliation_items WHERE state = 'open' LIMIT 1`);
    const refund = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE operation = 'refund_payment' AND status = 'completed' LIMIT 1`);
    const capture = await db.sql.query<{ id: bigint }>(
      `SELECT id FROM idempotency_records WHERE operation = 'capture_payment' AND status = 'completed' LIMIT 1`,
    );
    const detail = (id: bigint) => recordDetail(db.sql, id, { bodyAccess: "none" });
    expect((await detail(stuck[0].id)).checkWithProvider).toMatchObject({
      allowed: false,
      cause: "no_provider_request",
      reason: expect.stringMatching(/resolve it by hand/),
    });
    expect((await detail(pending[0].record_id)).checkWithProvider).toEqual({ allowed: true, cause: null, reason: null });
    const done = await detail(capture[0].id);
    expect(done.checkWithProvider).toMatchObject({ allowed: false, cause: "not_open" });
    expect(done.compensation).toEqual({ allowed: true, reason: null });
    expect((await detail(refund[0].id)).compensation).toMatchObject({ allowed: false, reason: expect.stringMatching(/is a refund/) });
    // A processing record that is not stuck yet (its worker may still be running).
    const fresh = await new IdempotencyStore(db.prisma).begin({
      scope: "tenant:fresh",
      operation: "capture_payment",
      key: "fresh-1",
      payload: {},
      providerRequestId: "req_fresh",
    });
    expect((await detail(fresh.record.id)).checkWithProvider).toMatchObject({ allowed: false, cause: "not_stuck_yet" });
  });

  it("a viewer without records.read_body gets no response headers or body at all (nor outbox payloads)", async () => {
    const { token } = await tokenFor(db, ["viewer"]);
    const res = await call((await detailRoute()).GET, `/api/v1/records/${secretId}`, token, {}, idParams(secretId));
    expect(res.status).toBe(200);
    const text = await res.text();
    for (const s of [...SECRETS, "s3cr3t", "Set-Cookie"]) expect(text).not.toContain(s);
    const body = JSON.parse(text);
    expect(body.response).toBeNull();
    expect(body.bodyAccess).toBe("none");
    expect(body.record).toMatchObject({ id: secretId.toString(), responseCode: 201, amountMinor: "1299" });
    expect(body.outboxMessages[0]).toMatchObject({ topic: "email.receipt", payload: null, payloadHidden: true });
  });

  it("with records.read_body the response is masked, with the masked paths", async () => {
    const { token } = await tokenFor(db, ["operator"]);
    const res = await call((await detailRoute()).GET, `/api/v1/records/${secretId}`, token, {}, idParams(secretId));
    const text = await res.text();
    for (const s of SECRETS) expect(text).not.toContain(s);
    const body = JSON.parse(text);
    expect(body.response.access).toBe("masked");
    expect(JSON.parse(body.response.body)).toEqual({
      id: "pay_secret",
      card: { number: "**** **** **** 1111", cvc: MASK },
      customer: { email: "j***@example.com" },
      token: MASK,
    });
    expect(body.response.headers).toEqual([
      ["Content-Type", "application/json"],
      ["Set-Cookie", `sid=${MASK}; Path=/`],
      ["Authorization", `Bearer ${MASK}`],
    ]);
    expect(body.response.masked.map((m: { path: string }) => m.path)).toEqual([
      "headers[1]",
      "headers[2]",
      "body.card.number",
      "body.card.cvc",
      "body.customer.email",
      "body.token",
    ]);
    expect(body.outboxMessages[0].payload).toEqual({ to: "j***@example.com", card_number: MASK });
    expect(await auditOf(secretId)).toEqual([]); // reading masked data is not an action
  });

  it("reveal returns the stored response unmasked and writes an audit entry with the reason", async () => {
    const { token, email } = await tokenFor(db, ["support"]);
    const res = await reveal(secretId, token, { reason: "customer disputes charge, ticket 4711" });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.response).toMatchObject({ access: "revealed", code: 201, headers: SECRET_HEADERS, body: SECRET_BODY });
    expect(body.response.masked.length).toBe(6);
    const entries = await auditOf(secretId);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: "records.reveal", outcome: "done", reason: "customer disputes charge, ticket 4711" });
    expect(entries[0].actor_label).toContain(email);
    expect(JSON.stringify(entries[0].detail)).not.toMatch(/4111|jane|s3cr3t|tok_live/); // where, never what
    const [entry] = await db.sql.query<{ id: bigint }>(`SELECT id FROM audit_log WHERE target_id = ${db.dialect.param(1)} AND outcome = 'done'`, [
      secretId.toString(),
    ]);
    expect(body.auditId).toBe(entry.id.toString());
    // The reveal is part of the record's audit trail in its detail.
    const detail = await recordDetail(db.sql, secretId, { bodyAccess: "none" });
    expect(detail.audit.map((a) => a.action)).toEqual(["records.reveal"]);
    // And the record did not change.
    const [rec] = await db.sql.query<{ version: number; response_body: string }>(
      `SELECT version, response_body FROM idempotency_records WHERE id = ${db.dialect.param(1)}`,
      [secretId],
    );
    expect(rec).toEqual({ version: 1, response_body: SECRET_BODY });
  });

  it("headers a writer stored as an object (PHP's json_encode of an array) are masked the same, and revealed as pairs", async () => {
    const store = new IdempotencyStore(db.prisma);
    const r = await store.begin({ scope: "tenant:php", operation: "capture_payment", key: "object-headers-1", payload: { n: 2 } });
    if (r.outcome !== "owner") throw new Error("setup");
    await store.complete(r.record.id, { code: 201, headers: [], body: "{}" });
    // What the independent PHP writer leaves: an object, a list value for a repeated header.
    const objectHeaders = {
      "Content-Type": "application/json",
      "Set-Cookie": ["sid=obj-s3cr3t; Path=/", "lang=en"],
      Authorization: "Bearer obj.secret.999",
    };
    await db.sql.query(`UPDATE idempotency_records SET response_headers = ${db.dialect.param(1)} WHERE id = ${db.dialect.param(2)}`, [
      JSON.stringify(objectHeaders),
      r.record.id,
    ]);
    const { token } = await tokenFor(db, ["support"]);
    const res = await call((await detailRoute()).GET, `/api/v1/records/${r.record.id}`, token, {}, idParams(r.record.id));
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toMatch(/obj-s3cr3t|obj\.secret\.999|lang=en/);
    const body = JSON.parse(text);
    expect(body.response).toMatchObject({ access: "masked", headersShape: "object" });
    // (jsonb and MySQL's JSON keep an object's keys in their own order: compared as sets.)
    const sorted = (pairs: [string, string][]) => [...pairs].sort((a, b) => (a.join("\n") < b.join("\n") ? -1 : 1));
    expect(sorted(body.response.headers)).toEqual(
      sorted([
        ["Content-Type", "application/json"],
        ["Set-Cookie", `sid=${MASK}; Path=/`],
        ["Set-Cookie", `lang=${MASK}`],
        ["Authorization", `Bearer ${MASK}`],
      ]),
    );
    expect(body.response.masked).toHaveLength(3);

    const revealed = await reveal(r.record.id, token, { reason: "PHP service's record, ticket 5120" });
    expect(revealed.status).toBe(200);
    const shown = (await json(revealed)).response;
    expect(shown).toMatchObject({ access: "revealed", headersShape: "object" });
    expect(sorted(shown.headers)).toEqual(
      sorted([
        ["Content-Type", "application/json"],
        ["Set-Cookie", "sid=obj-s3cr3t; Path=/"],
        ["Set-Cookie", "lang=en"],
        ["Authorization", "Bearer obj.secret.999"],
      ]),
    );
  });

  it("reveal is refused — and audited — without a reason, without records.reveal, or without records.read_body", async () => {
    const before = (await auditOf(secretId)).length;
    const support = await tokenFor(db, ["support"]);
    for (const bad of [{}, { reason: "" }, { reason: "ok", extra: 1 }]) {
      const res = await reveal(secretId, support.token, bad);
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
    }
    const viewer = await tokenFor(db, ["viewer"]);
    expect((await reveal(secretId, viewer.token, { reason: "curious about it" })).status).toBe(403);
    const operator = await tokenFor(db, ["operator"]); // reads bodies, may not reveal
    expect((await reveal(secretId, operator.token, { reason: "curious about it" })).status).toBe(403);
    const revealOnly = await tokenFor(db, ["support"], ["records.read", "records.reveal"]);
    const res = await reveal(secretId, revealOnly.token, { reason: "token without read_body" });
    expect(res.status).toBe(403);
    expect((await json(res)).detail).toMatch(/records\.read_body/);
    expect(await reveal(secretId, null, { reason: "anonymous" }).then((r) => r.status)).toBe(401);

    // The refusal with a target is on the record's trail; the others are in the log under the action.
    const onRecord = (await auditOf(secretId)).slice(before);
    expect(onRecord).toEqual([expect.objectContaining({ action: "records.reveal", outcome: "refused", reason: "token without read_body" })]);
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM audit_log WHERE action = 'records.reveal' AND outcome = 'refused'`);
    expect(Number(n)).toBe(3 + 2 + 1);
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });

  it("unknown or malformed ids: 404 and 400 problem+json; other methods 405", async () => {
    const { token } = await tokenFor(db, ["support"]);
    const get = (await detailRoute()).GET;
    const missing = await call(get, "/api/v1/records/999999999", token, {}, idParams("999999999"));
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toBe("application/problem+json");
    for (const bad of ["abc", "0", "-1", "99999999999999999999"]) {
      const res = await call(get, `/api/v1/records/${bad}`, token, {}, idParams(bad));
      expect(res.status, bad).toBe(400);
      expect((await json(res)).detail).toMatch(/\bid must be a positive whole number/);
    }
    expect((await call(get, `/api/v1/records/${secretId}?window=5s`, token, {}, idParams(secretId))).status).toBe(400);
    expect((await call(get, `/api/v1/records/${secretId}?window=2h`, token, {}, idParams(secretId))).status).toBe(200);
    expect((await call(get, `/api/v1/records/${secretId}?verbose=1`, token, {}, idParams(secretId))).status).toBe(400);
    expect((await reveal(999999999, token, { reason: "does it exist" })).status).toBe(404);
    const r = await revealRoute();
    const res = await call(r.GET, `/api/v1/records/${secretId}/reveal`, token, {}, idParams(secretId));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect((await call((await detailRoute()).DELETE, `/api/v1/records/${secretId}`, token, { method: "DELETE" }, idParams(secretId))).status).toBe(405);
  });
});

describe.skipIf(!usingMysql)("MySQL/MariaDB: stored headers whatever the column's type", () => {
  it("reads pairs, an object and header lines from an adopted table's LONGTEXT column as from a JSON one", async () => {
    const adopted = await createTestDatabase();
    try {
      // A shop's own table may hold the headers as text: JSON text, or lines (ADR 0012, adoption keeps the types).
      await adopted.sql.exec("ALTER TABLE idempotency_records MODIFY response_headers LONGTEXT NULL");
      const stored: [string, unknown, string][] = [
        [
          '[["Content-Type","application/json"],["Set-Cookie","a=1"]]',
          [
            ["Content-Type", "application/json"],
            ["Set-Cookie", "a=1"],
          ],
          "pairs",
        ],
        [
          '{"Content-Type":"application/json","Vary":["Accept","Origin"]}',
          [
            ["Content-Type", "application/json"],
            ["Vary", "Accept"],
            ["Vary", "Origin"],
          ],
          "object",
        ],
        [
          "Content-Type: text/plain\r\nX-Request-Id: r1",
          [
            ["Content-Type", "text/plain"],
            ["X-Request-Id", "r1"],
          ],
          "lines",
        ],
      ];
      for (const [k, [text, pairs, shape]] of stored.entries()) {
        const { insertId } = await execute(
          adopted.sql,
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_headers, response_body, expires_at)
           VALUES ('tenant:adopted', 'create_order', ?, 'h', 'completed', 201, ?, '{"id":"ord_1"}', '2027-01-01 00:00:00')`,
          [`adopted-${k}`, text],
        );
        const record = await loadRecord(adopted.sql, insertId!);
        expect(record).toMatchObject({ responseHeaders: pairs, responseHeadersShape: shape, responseHeadersUnreadable: null, responseBody: '{"id":"ord_1"}' });
      }
    } finally {
      await adopted.drop();
    }
  });
});
