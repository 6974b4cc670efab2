import { readFileSync } from "node:fs";
import path from "node:path";
import { get_dmmf } from "@prisma/prisma-schema-wasm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqlExecutor } from "@/lib/db/sql";
import { createTestDatabase, type TestDatabase } from "./helpers/db";

/**
 * The migrated database (prisma/migrations, hand-written SQL) must be exactly what
 * prisma/schema.prisma describes: tables, columns, nullability, types, defaults,
 * indexes (name, columns, order, uniqueness) and foreign keys (on delete/update).
 * Prisma's own `migrate diff` needs the native schema engine, absent here, so
 * this test reads the schema through Prisma's DMMF (Wasm) and the database
 * through the catalogs.
 */

/**
 * Indexes that exist in the database on purpose although schema.prisma cannot
 * declare them (partial or expression indexes, INCLUDE columns, ...). Every entry
 * needs a reason; an entry whose index no longer exists is itself reported.
 */
const ALLOWED_UNDECLARED_INDEXES: readonly AllowedIndex[] = [
  { table: "idempotency_records", name: "idempotency_records_legal_hold_idx", reason: "partial: WHERE legal_hold (record holds are rare)" },
  {
    table: "idempotency_records",
    name: "idempotency_records_unsettled_status_idx",
    reason:
      "partial: WHERE status <> 'completed' (the small populations the overview, queue and Expiry page count), INCLUDE (scope, id, expires_at, legal_hold)",
  },
  { table: "retention_policies", name: "retention_policies_operation_key", reason: "expression: one policy per operation and one default (NULL)" },
  { table: "purge_runs", name: "purge_runs_one_active_key", reason: "partial expression: at most one queued/running/cancelling run" },
  { table: "legal_holds", name: "legal_holds_active_scope_key", reason: "partial: one active hold per scope" },
];

interface AllowedIndex {
  table: string;
  name: string;
  reason: string;
}

// --- The schema, as Prisma reads it ----------------------------------------------

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: "scalar" | "object" | "enum" | "unsupported";
  type: string;
  isList: boolean;
  isRequired: boolean;
  hasDefaultValue: boolean;
  default?: unknown;
  nativeType?: [string, string[]] | null;
  isUpdatedAt?: boolean;
  relationName?: string;
  relationFromFields?: string[];
  relationToFields?: string[];
  relationOnDelete?: string;
  relationOnUpdate?: string;
}

interface DmmfModel {
  name: string;
  dbName: string | null;
  fields: DmmfField[];
}

interface DmmfIndex {
  model: string;
  type: "id" | "normal" | "unique" | "fulltext";
  dbName?: string | null;
  algorithm?: string;
  fields: { name: string; sortOrder?: "asc" | "desc" }[];
}

interface Datamodel {
  models: DmmfModel[];
  enums: { name: string; dbName?: string | null }[];
  indexes: DmmfIndex[];
}

const SCHEMA_PATH = path.resolve(import.meta.dirname, "../prisma/schema.prisma");

function datamodelOf(schema: string): Datamodel {
  return (JSON.parse(get_dmmf(JSON.stringify({ prismaSchema: schema }))) as { datamodel: Datamodel }).datamodel;
}

const tableOf = (m: DmmfModel) => m.dbName ?? m.name;
const columnOf = (f: DmmfField) => f.dbName ?? f.name;

/** Prisma's default constraint names on PostgreSQL (63-byte identifiers). */
function defaultName(table: string, columns: string[], suffix: "pkey" | "key" | "idx" | "fkey"): string {
  const base = suffix === "pkey" ? table : `${table}_${columns.join("_")}`;
  return `${base.slice(0, 63 - suffix.length - 1)}_${suffix}`;
}

// The column type Prisma creates, as format_type() prints it.
const SCALAR_TYPES: Record<string, string> = {
  String: "text",
  Int: "integer",
  BigInt: "bigint",
  Float: "double precision",
  Decimal: "numeric(65,30)",
  Boolean: "boolean",
  DateTime: "timestamp(3) without time zone", // Prisma's default; use @db.Timestamptz(6) for timestamptz
  Json: "jsonb",
  Bytes: "bytea",
};

function nativeType([name, args]: [string, string[]]): string {
  const a = args.length ? `(${args.join(",")})` : "";
  const simple: Record<string, string> = {
    Text: "text",
    Uuid: "uuid",
    Xml: "xml",
    Inet: "inet",
    Citext: "citext",
    Integer: "integer",
    SmallInt: "smallint",
    BigInt: "bigint",
    Oid: "oid",
    Real: "real",
    DoublePrecision: "double precision",
    Money: "money",
    Date: "date",
    Json: "json",
    JsonB: "jsonb",
    ByteA: "bytea",
    Boolean: "boolean",
  };
  if (simple[name]) return simple[name];
  switch (name) {
    case "VarChar":
      return `character varying${a}`;
    case "Char":
      return `character${a || "(1)"}`;
    case "Bit":
      return `bit${a || "(1)"}`;
    case "VarBit":
      return `bit varying${a}`;
    case "Decimal":
      return `numeric${a}`;
    case "Timestamp":
      return `timestamp${a} without time zone`;
    case "Timestamptz":
      return `timestamp${a} with time zone`;
    case "Time":
      return `time${a} without time zone`;
    case "Timetz":
      return `time${a} with time zone`;
    default:
      return `(@db.${name}: extend nativeType() in this test)`;
  }
}

const quoteIdent = (n: string) => (/^[a-z_][a-z0-9_$]*$/.test(n) ? n : `"${n.replace(/"/g, '""')}"`);

function expectedType(f: DmmfField, dm: Datamodel): string {
  let base: string;
  if (f.kind === "enum") {
    const e = dm.enums.find((x) => x.name === f.type);
    base = quoteIdent(e?.dbName ?? f.type);
  } else if (f.nativeType) {
    base = nativeType(f.nativeType);
  } else {
    base = SCALAR_TYPES[f.type] ?? `(${f.type}: extend SCALAR_TYPES in this test)`;
  }
  return f.isList ? `${base}[]` : base;
}

/** The database default Prisma creates, or null when it creates none (@updatedAt, uuid(), cuid(), ...). */
function expectedDefault(f: DmmfField): { kind: "autoincrement" | "now" | "dbgenerated" | "literal"; value?: string } | null {
  if (!f.hasDefaultValue || f.default === undefined || f.default === null) return null;
  if (typeof f.default === "object" && !Array.isArray(f.default)) {
    const fn = (f.default as { name: string }).name;
    if (fn === "autoincrement" || fn === "now" || fn === "dbgenerated") return { kind: fn };
    return null; // uuid(), cuid(), nanoid(), ulid(): generated by the client, no database default
  }
  if (Array.isArray(f.default)) return { kind: "dbgenerated" }; // list defaults: presence only
  return { kind: "literal", value: String(f.default) };
}

/** `'open'::text` → open, `0` → 0, `'-1'::integer` → -1, `false` → false. */
function literalOf(expr: string): string {
  const m = /^'((?:[^']|'')*)'::[\w\s."()]+$/.exec(expr);
  if (m) return m[1].replace(/''/g, "'");
  const n = /^\(?(-?[\d.]+)\)?(::[\w\s]+)?$/.exec(expr);
  return n ? n[1] : expr;
}

function defaultMatches(expected: ReturnType<typeof expectedDefault>, actual: string | null, identity: boolean): boolean {
  if (!expected) return actual === null && !identity;
  switch (expected.kind) {
    case "autoincrement":
      return identity || /^nextval\(/.test(actual ?? "");
    case "now":
      return /^(now\(\)|CURRENT_TIMESTAMP)$/i.test(actual ?? "");
    case "dbgenerated":
      return actual !== null;
    case "literal":
      if (actual === null) return false;
      return literalOf(actual) === expected.value || Number(literalOf(actual)) === Number(expected.value);
  }
}

// --- The database, as the catalogs describe it -------------------------------------

interface DbColumn {
  table: string;
  column: string;
  type: string;
  not_null: boolean;
  default: string | null;
  identity: boolean;
}

interface DbIndex {
  table: string;
  name: string;
  unique: boolean;
  primary: boolean;
  method: string;
  predicate: string | null;
  columns: string[];
  descending: boolean[];
  has_include: boolean;
}

interface DbForeignKey {
  name: string;
  table: string;
  ref_table: string;
  columns: string[];
  ref_columns: string[];
  on_delete: string;
  on_update: string;
}

const ACTIONS: Record<string, string> = { a: "NoAction", r: "Restrict", c: "Cascade", n: "SetNull", d: "SetDefault" };

async function readDatabase(sql: SqlExecutor, tables: string[]) {
  const present = await sql.query<{ table: string }>(
    `SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname = ANY ($1::text[])`,
    [tables],
  );
  const columns = await sql.query<DbColumn>(
    `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type,
            a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity <> '' AS identity
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname = ANY ($1::text[])
        AND a.attnum > 0 AND NOT a.attisdropped`,
    [tables],
  );
  const indexes = await sql.query<DbIndex>(
    `SELECT t.relname AS table, i.relname AS name, ix.indisunique AS unique, ix.indisprimary AS primary,
            am.amname AS method, pg_get_expr(ix.indpred, ix.indrelid, true) AS predicate,
            ARRAY(SELECT pg_get_indexdef(ix.indexrelid, k.ord::int, true)
                    FROM generate_series(1, ix.indnkeyatts) AS k(ord) ORDER BY k.ord) AS columns,
            ARRAY(SELECT (o.opt & 1) = 1
                    FROM unnest(ix.indoption::int2[]) WITH ORDINALITY AS o(opt, ord)
                   WHERE o.ord <= ix.indnkeyatts ORDER BY o.ord) AS descending,
            ix.indnatts > ix.indnkeyatts AS has_include
       FROM pg_index ix
       JOIN pg_class i ON i.oid = ix.indexrelid
       JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
       JOIN pg_am am ON am.oid = i.relam
      WHERE n.nspname = current_schema() AND t.relname = ANY ($1::text[])`,
    [tables],
  );
  const foreignKeys = await sql.query<DbForeignKey>(
    `SELECT con.conname AS name, t.relname AS table, rt.relname AS ref_table,
            ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY AS k(num, ord)
                    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord) AS columns,
            ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY AS k(num, ord)
                    JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num ORDER BY k.ord) AS ref_columns,
            con.confdeltype::text AS on_delete, con.confupdtype::text AS on_update
       FROM pg_constraint con
       JOIN pg_class t ON t.oid = con.conrelid
       JOIN pg_class rt ON rt.oid = con.confrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE con.contype = 'f' AND n.nspname = current_schema() AND t.relname = ANY ($1::text[])`,
    [tables],
  );
  return { tables: new Set(present.map((r) => r.table)), columns, indexes, foreignKeys };
}

// --- The comparison -----------------------------------------------------------------

/** Every way the database differs from the schema, one sorted line each; [] means in step. */
async function schemaDifferences(sql: SqlExecutor, dm: Datamodel, allowedIndexes: readonly AllowedIndex[] = ALLOWED_UNDECLARED_INDEXES): Promise<string[]> {
  const diffs: string[] = [];
  const tables = dm.models.map(tableOf);
  const db = await readDatabase(sql, tables);
  const modelByName = new Map(dm.models.map((m) => [m.name, m]));
  const fieldOf = (m: DmmfModel, name: string) => m.fields.find((f) => f.name === name)!;

  // Tables and columns.
  for (const model of dm.models) {
    const table = tableOf(model);
    if (!db.tables.has(table)) {
      diffs.push(`table ${table}: missing in the database`);
      continue;
    }
    const actual = new Map(db.columns.filter((c) => c.table === table).map((c) => [c.column, c]));
    const scalars = model.fields.filter((f) => f.kind === "scalar" || f.kind === "enum");
    for (const f of scalars) {
      const name = `${table}.${columnOf(f)}`;
      const col = actual.get(columnOf(f));
      if (!col) {
        diffs.push(`column ${name}: missing in the database`);
        continue;
      }
      if (col.not_null !== f.isRequired) {
        diffs.push(`column ${name}: ${col.not_null ? "NOT NULL" : "nullable"} in the database, ${f.isRequired ? "required" : "optional"} in schema.prisma`);
      }
      const type = expectedType(f, dm);
      if (col.type !== type) diffs.push(`column ${name}: type ${col.type} in the database, ${type} expected`);
      const def = expectedDefault(f);
      if (!defaultMatches(def, col.default, col.identity)) {
        const want = def ? (def.kind === "literal" ? `default ${def.value}` : `default ${def.kind}()`) : "no default";
        diffs.push(`column ${name}: default ${col.identity ? "identity" : (col.default ?? "none")} in the database, ${want} expected`);
      }
    }
    const declared = new Set(scalars.map(columnOf));
    for (const c of actual.keys()) if (!declared.has(c)) diffs.push(`column ${table}.${c}: in the database, not in schema.prisma`);
  }

  // Indexes: @id, @unique/@@unique, @@index.
  const expectedIndexes = dm.indexes
    .filter((ix) => ix.type !== "fulltext" && modelByName.has(ix.model))
    .map((ix) => {
      const model = modelByName.get(ix.model)!;
      const table = tableOf(model);
      const columns = ix.fields.map((f) => columnOf(fieldOf(model, f.name)));
      const suffix = ix.type === "id" ? "pkey" : ix.type === "unique" ? "key" : "idx";
      return {
        table,
        name: ix.dbName ?? defaultName(table, columns, suffix),
        columns,
        descending: ix.fields.map((f) => f.sortOrder === "desc"),
        unique: ix.type !== "normal",
        primary: ix.type === "id",
        method: (ix.algorithm ?? "BTree").toLowerCase(),
      };
    });
  const dbIndexes = new Map(db.indexes.map((ix) => [`${ix.table}.${ix.name}`, ix]));
  for (const want of expectedIndexes) {
    const name = `${want.table}.${want.name}`;
    if (!db.tables.has(want.table)) continue; // already reported
    const got = dbIndexes.get(name);
    if (!got) {
      diffs.push(`index ${name}: missing in the database`);
      continue;
    }
    dbIndexes.delete(name);
    if (got.columns.join(", ") !== want.columns.join(", ")) {
      diffs.push(`index ${name}: columns (${got.columns.join(", ")}) in the database, (${want.columns.join(", ")}) expected`);
    }
    if (got.descending.join() !== want.descending.join()) diffs.push(`index ${name}: sort order differs`);
    const kind = (ix: { unique: boolean; primary: boolean }) => (ix.primary ? "primary key" : ix.unique ? "unique" : "non-unique");
    if (kind(got) !== kind(want)) diffs.push(`index ${name}: ${kind(got)} in the database, ${kind(want)} expected`);
    if (got.method !== want.method) diffs.push(`index ${name}: ${got.method} in the database, ${want.method} expected`);
    if (got.predicate) diffs.push(`index ${name}: partial (WHERE ${got.predicate}), schema.prisma declares a full index`);
    if (got.has_include) diffs.push(`index ${name}: has INCLUDE columns schema.prisma does not declare`);
  }
  for (const a of allowedIndexes) {
    const key = `${a.table}.${a.name}`;
    if (!dbIndexes.delete(key)) diffs.push(`index ${key}: allowlisted but not in the database (remove it from the allowlist)`);
  }
  for (const name of dbIndexes.keys()) diffs.push(`index ${name}: in the database, not declared in schema.prisma`);

  // Foreign keys: one per relation field that holds the foreign key. (The DMMF does
  // not expose @relation(map:), so constraint names are not compared.)
  const fkKey = (table: string, cols: string[], ref: string, refCols: string[]) => `${table}(${cols.join(", ")}) → ${ref}(${refCols.join(", ")})`;
  const dbFks = new Map(db.foreignKeys.map((fk) => [fkKey(fk.table, fk.columns, fk.ref_table, fk.ref_columns), fk]));
  for (const model of dm.models) {
    for (const rel of model.fields.filter((f) => f.kind === "object")) {
      const target = modelByName.get(rel.type)!;
      if (!rel.relationFromFields?.length) {
        const back = target.fields.find((f) => f.relationName === rel.relationName && f !== rel);
        if (rel.isList && back?.isList) diffs.push(`relation ${rel.relationName}: implicit many-to-many, extend this test`);
        continue; // the other side holds the foreign key
      }
      const table = tableOf(model);
      const cols = rel.relationFromFields.map((n) => columnOf(fieldOf(model, n)));
      const refCols = (rel.relationToFields ?? []).map((n) => columnOf(fieldOf(target, n)));
      const key = fkKey(table, cols, tableOf(target), refCols);
      const fk = dbFks.get(key);
      if (!fk) {
        diffs.push(`foreign key ${key}: missing in the database`);
        continue;
      }
      dbFks.delete(key);
      // Prisma's defaults: ON DELETE Restrict (required) / SetNull (optional), ON UPDATE Cascade.
      const onDelete = rel.relationOnDelete ?? (rel.isRequired ? "Restrict" : "SetNull");
      const onUpdate = rel.relationOnUpdate ?? "Cascade";
      if (ACTIONS[fk.on_delete] !== onDelete) diffs.push(`foreign key ${key}: ON DELETE ${ACTIONS[fk.on_delete]} in the database, ${onDelete} expected`);
      if (ACTIONS[fk.on_update] !== onUpdate) diffs.push(`foreign key ${key}: ON UPDATE ${ACTIONS[fk.on_update]} in the database, ${onUpdate} expected`);
    }
  }
  for (const [key, fk] of dbFks) diffs.push(`foreign key ${key}: in the database (${fk.name}), not in schema.prisma`);

  return diffs.sort();
}

// --- The tests ----------------------------------------------------------------------

const schemaText = readFileSync(SCHEMA_PATH, "utf8");
const datamodel = datamodelOf(schemaText);

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

/** Runs `fn` on one session inside a transaction that is always rolled back. */
function inRolledBackTransaction<T>(fn: (s: SqlExecutor) => Promise<T>): Promise<T> {
  return db.withSession(async (s) => {
    await s.exec("BEGIN");
    try {
      return await fn(s);
    } finally {
      await s.exec("ROLLBACK");
    }
  });
}

describe("the migrated database matches prisma/schema.prisma", () => {
  it("reads the schema (sanity: the DMMF has what this test compares)", () => {
    expect(datamodel.models.map(tableOf)).toEqual(
      expect.arrayContaining(["idempotency_events", "idempotency_records", "outbox_messages", "reconciliation_items", "audit_log"]),
    );
    expect(datamodel.indexes.length).toBeGreaterThan(datamodel.models.length);
    expect(datamodel.models.flatMap((m) => m.fields).some((f) => f.relationFromFields?.length)).toBe(true);
  });

  it("has no difference: tables, columns, nullability, types, defaults, indexes, foreign keys", async () => {
    expect(await schemaDifferences(db.sql, datamodel)).toEqual([]);
  });
});

describe("the comparison can fail (self-check)", () => {
  it("reports each change made to the database, and only those", async () => {
    const diffs = await inRolledBackTransaction(async (s) => {
      await s.exec(`
        DROP INDEX "idempotency_records_expires_at_idx";
        ALTER TABLE "idempotency_records" ADD COLUMN "extra_col" TEXT;
        CREATE INDEX "outbox_messages_topic_idx" ON "outbox_messages" ("topic");
        ALTER TABLE "reconciliation_items" ALTER COLUMN "provider" DROP NOT NULL;
        ALTER TABLE "idempotency_events" ALTER COLUMN "response_code" TYPE BIGINT;
        ALTER TABLE "outbox_messages" ALTER COLUMN "status" SET DEFAULT 'sent';
        ALTER TABLE "outbox_messages" DROP CONSTRAINT "outbox_messages_record_id_fkey";
        ALTER TABLE "outbox_messages" ADD CONSTRAINT "outbox_messages_record_id_fkey"
          FOREIGN KEY ("record_id") REFERENCES "idempotency_records" ("id") ON DELETE SET NULL ON UPDATE NO ACTION;
        ALTER TABLE "idempotency_events" ADD CONSTRAINT "idempotency_events_record_id_fkey"
          FOREIGN KEY ("record_id") REFERENCES "idempotency_records" ("id");
        DROP INDEX "idempotency_events_operation_kind_occurred_at_idx";
        CREATE INDEX "idempotency_events_operation_kind_occurred_at_idx" ON "idempotency_events" ("kind", "operation", "occurred_at");
        DROP INDEX "idempotency_records_correlation_id_idx";
        CREATE UNIQUE INDEX "idempotency_records_correlation_id_idx" ON "idempotency_records" ("correlation_id");
      `);
      return schemaDifferences(s, datamodel);
    });
    expect(diffs).toEqual(
      [
        "index idempotency_records.idempotency_records_expires_at_idx: missing in the database",
        "column idempotency_records.extra_col: in the database, not in schema.prisma",
        "index outbox_messages.outbox_messages_topic_idx: in the database, not declared in schema.prisma",
        "column reconciliation_items.provider: nullable in the database, required in schema.prisma",
        "column idempotency_events.response_code: type bigint in the database, integer expected",
        "column outbox_messages.status: default 'sent'::text in the database, default pending expected",
        "foreign key outbox_messages(record_id) → idempotency_records(id): ON DELETE SetNull in the database, Cascade expected",
        "foreign key idempotency_events(record_id) → idempotency_records(id): in the database (idempotency_events_record_id_fkey), not in schema.prisma",
        "index idempotency_events.idempotency_events_operation_kind_occurred_at_idx: columns (kind, operation, occurred_at) in the database, (operation, kind, occurred_at) expected",
        "index idempotency_records.idempotency_records_correlation_id_idx: unique in the database, non-unique expected",
      ].sort(),
    );
    // The transaction was rolled back: in step again.
    expect(await schemaDifferences(db.sql, datamodel)).toEqual([]);
  });

  it("reports what schema.prisma declares but no migration created", async () => {
    const edited = schemaText
      .replace(/(\n\s*legalHold\s+Boolean[^\n]*\n)/, `$1  archivedAt DateTime? @map("archived_at")\n`)
      .replace(`@@map("outbox_messages")`, `@@index([topic], map: "outbox_messages_topic_idx")\n  @@map("outbox_messages")`)
      .concat(`\nmodel Extra {\n  id Int @id @default(autoincrement())\n  @@map("extra_things")\n}\n`);
    expect(edited).not.toBe(schemaText);
    expect(await schemaDifferences(db.sql, datamodelOf(edited))).toEqual(
      [
        "column idempotency_records.archived_at: missing in the database",
        "index outbox_messages.outbox_messages_topic_idx: missing in the database",
        "table extra_things: missing in the database",
      ].sort(),
    );
  });

  it("honours the allowlist for indexes Prisma cannot express, and reports stale entries", async () => {
    const partial = { table: "idempotency_records", name: "idempotency_records_open_idx", reason: "partial index" };
    const stale = { table: "outbox_messages", name: "outbox_messages_gone_idx", reason: "dropped since" };
    await inRolledBackTransaction(async (s) => {
      await s.exec(`CREATE INDEX "idempotency_records_open_idx" ON "idempotency_records" ("updated_at") WHERE "status" <> 'completed'`);
      expect(await schemaDifferences(s, datamodel)).toEqual([
        "index idempotency_records.idempotency_records_open_idx: in the database, not declared in schema.prisma",
      ]);
      expect(await schemaDifferences(s, datamodel, [...ALLOWED_UNDECLARED_INDEXES, partial])).toEqual([]);
      expect(await schemaDifferences(s, datamodel, [...ALLOWED_UNDECLARED_INDEXES, partial, stale])).toEqual([
        "index outbox_messages.outbox_messages_gone_idx: allowlisted but not in the database (remove it from the allowlist)",
      ]);
      // A declared index turned partial in SQL is a difference too.
      await s.exec(`
        DROP INDEX "idempotency_records_resource_id_idx";
        CREATE INDEX "idempotency_records_resource_id_idx" ON "idempotency_records" ("resource_id") WHERE "resource_id" IS NOT NULL;
      `);
      expect(await schemaDifferences(s, datamodel, [...ALLOWED_UNDECLARED_INDEXES, partial])).toEqual([
        "index idempotency_records.idempotency_records_resource_id_idx: partial (WHERE resource_id IS NOT NULL), schema.prisma declares a full index",
      ]);
    });
  });
});
