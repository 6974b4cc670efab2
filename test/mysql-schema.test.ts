import { readFileSync } from "node:fs";
import path from "node:path";
import { get_dmmf } from "@prisma/prisma-schema-wasm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqlExecutor } from "@/lib/db/sql";
import { MYSQL_SCHEMA, mysqlSchemaFrom, POSTGRES_SCHEMA } from "../scripts/mysql-schema";
import { migrate } from "@/lib/db/migrate";
import { createEmptyTestDatabase, createTestDatabase, usingMysql, type TestDatabase } from "./helpers/db";

/**
 * prisma/mysql/schema.prisma (ADR 0012) must not drift from prisma/schema.prisma: it is derived
 * by scripts/mysql-schema.ts and must be fresh; its models must be the PostgreSQL schema's (the
 * code uses one model API for both); and on a MySQL/MariaDB server the migrated database
 * (prisma/mysql/migrations) must be exactly what it describes — tables, columns, nullability,
 * types, defaults, indexes, foreign keys, and the binary collation — read from
 * information_schema, as test/schema-drift.test.ts does for PostgreSQL.
 */

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: string;
  type: string;
  isList: boolean;
  isRequired: boolean;
  isId: boolean;
  isUnique: boolean;
  hasDefaultValue: boolean;
  default?: unknown;
  nativeType?: [string, string[]] | null;
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
  fields: { name: string; sortOrder?: "asc" | "desc"; length?: number }[];
}
interface Datamodel {
  models: DmmfModel[];
  indexes: DmmfIndex[];
}

const datamodelOf = (schema: string) => (JSON.parse(get_dmmf(JSON.stringify({ prismaSchema: schema }))) as { datamodel: Datamodel }).datamodel;
const tableOf = (m: DmmfModel) => m.dbName ?? m.name;
const columnOf = (f: DmmfField) => f.dbName ?? f.name;

const postgresText = readFileSync(POSTGRES_SCHEMA, "utf8");
const mysqlText = readFileSync(MYSQL_SCHEMA, "utf8");

describe("prisma/mysql/schema.prisma", () => {
  it("is what scripts/mysql-schema.ts derives from prisma/schema.prisma (run npm run db:mysql-schema)", () => {
    expect(mysqlText).toBe(mysqlSchemaFrom(postgresText));
    expect(path.relative(path.dirname(MYSQL_SCHEMA), path.resolve("lib/generated/prisma-mysql"))).toBe("../../lib/generated/prisma-mysql");
    expect(mysqlText).toMatch(/provider\s*=\s*"mysql"/);
  });

  it("has the PostgreSQL schema's models: tables, fields, columns, optionality, relations", () => {
    const shape = (dm: Datamodel) =>
      dm.models.map((m) => ({
        table: tableOf(m),
        fields: m.fields.map((f) => ({
          name: f.name,
          column: columnOf(f),
          kind: f.kind,
          // String[] is Json on MySQL (no arrays): the same values in and out.
          type: f.isList && f.type === "String" && f.kind === "scalar" ? "String[]|Json" : f.type === "Json" && f.kind === "scalar" ? "Json" : f.type,
          required: f.isRequired,
          defaulted: f.hasDefaultValue,
          relation: f.relationName ? [f.relationName, f.relationFromFields, f.relationToFields, f.relationOnDelete ?? null, f.relationOnUpdate ?? null] : null,
        })),
      }));
    const pg = shape(datamodelOf(postgresText));
    const my = shape(datamodelOf(mysqlText)).map((m, i) => ({
      ...m,
      fields: m.fields.map((f, j) => (pg[i]?.fields[j]?.type === "String[]|Json" && f.type === "Json" ? { ...f, type: "String[]|Json" } : f)),
    }));
    expect(my).toEqual(pg);
    const indexes = (dm: Datamodel) => dm.indexes.filter((ix) => ix.type !== "id").map((ix) => [ix.model, ix.type, ix.dbName, ix.fields.map((f) => f.name)]);
    expect(indexes(datamodelOf(mysqlText))).toEqual(indexes(datamodelOf(postgresText)));
  });
});

// --- The migrated MySQL/MariaDB database against the MySQL schema ---------------------------

/** In the database on purpose, though schema.prisma cannot say them (ADR 0012). Each needs a reason. */
const ALLOWED_UNDECLARED_COLUMNS = [
  { table: "purge_runs", column: "active_slot", reason: "generated: PostgreSQL's partial unique index on active runs" },
  { table: "legal_holds", column: "active_scope", reason: "generated: PostgreSQL's partial unique index on active holds" },
  { table: "retention_policies", column: "operation_key", reason: "generated: PostgreSQL's unique expression index COALESCE(operation, '')" },
];
const ALLOWED_UNDECLARED_INDEXES = [
  { table: "idempotency_records", name: "idempotency_records_legal_hold_idx", reason: "PostgreSQL's partial WHERE legal_hold, full here" },
  {
    table: "idempotency_records",
    name: "idempotency_records_unsettled_status_idx",
    reason: "PostgreSQL's partial WHERE status <> 'completed' with INCLUDE (scope, id, expires_at, legal_hold); full here, the scope a key column",
  },
  {
    table: "idempotency_records",
    name: "idempotency_records_status_expires_at_idx",
    reason: "the INCLUDE (expires_at, legal_hold) of PostgreSQL's unsettled index, which InnoDB's key limit leaves no room for there",
  },
  { table: "purge_runs", name: "purge_runs_one_active_key", reason: "unique on the generated active_slot" },
  { table: "legal_holds", name: "legal_holds_active_scope_key", reason: "unique on the generated active_scope" },
  { table: "retention_policies", name: "retention_policies_operation_key", reason: "unique on the generated operation_key" },
  { table: "api_tokens", name: "api_tokens_created_by_id_fkey", reason: "InnoDB indexes a foreign key's columns itself" },
  { table: "insight_alerts", name: "insight_alerts_acknowledged_by_fkey", reason: "InnoDB indexes a foreign key's columns itself" },
];

const RULES: Record<string, string> = { Cascade: "CASCADE", SetNull: "SET NULL", NoAction: "NO ACTION", Restrict: "RESTRICT", SetDefault: "SET DEFAULT" };

function expectedType(f: DmmfField): string {
  if (f.nativeType) {
    const [name, args] = f.nativeType;
    return `${name.toLowerCase()}${args.length ? `(${args.join(",")})` : ""}`;
  }
  const scalar: Record<string, string> = { BigInt: "bigint", Int: "int", Boolean: "tinyint(1)", Json: "json", String: "varchar(191)", DateTime: "datetime(3)" };
  return scalar[f.type] ?? `(${f.type}?)`;
}

/** A default as both servers write it in information_schema, normalised: no quotes, no outer parentheses, lower case. */
const normalDefault = (d: string | null) => {
  if (d === null || d === "NULL") return null;
  let v = d.trim().toLowerCase();
  while (/^\(.*\)$/.test(v)) v = v.slice(1, -1);
  return v.replace(/^'(.*)'$/, "$1");
};

function expectedDefault(f: DmmfField): string | null | "auto_increment" {
  if (!f.hasDefaultValue) return null;
  const d = f.default as { name?: string; args?: unknown[] } | string | number | boolean;
  if (typeof d === "object" && d !== null) {
    if (d.name === "autoincrement") return "auto_increment";
    if (d.name === "dbgenerated") return normalDefault(String(d.args?.[0]));
    return `(${d.name}?)`;
  }
  if (typeof d === "boolean") return d ? "1" : "0";
  return String(d).toLowerCase();
}

async function mysqlSchemaDifferences(sql: SqlExecutor, dm: Datamodel): Promise<string[]> {
  const diffs: string[] = [];
  const columns = await sql.query<{ t: string; c: string; type: string; nullable: string; def: string | null; extra: string; collation: string | null }>(
    `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, COLUMN_DEFAULT AS def, EXTRA AS extra, COLLATION_NAME AS collation
       FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()`,
  );
  // MariaDB's JSON is LONGTEXT with a json_valid CHECK named after the column.
  const jsonChecks = new Set(
    (
      await sql
        .query<{ t: string; c: string }>(
          `SELECT TABLE_NAME AS t, CONSTRAINT_NAME AS c FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND CHECK_CLAUSE LIKE 'json_valid(%'`,
        )
        .catch(() => [])
    ).map((r) => `${r.t}.${r.c}`),
  );
  const statistics = await sql.query<{
    t: string;
    name: string;
    non_unique: number | bigint;
    col: string;
    seq: number | bigint;
    dir: string | null;
    sub: number | null;
  }>(
    `SELECT TABLE_NAME AS t, INDEX_NAME AS name, NON_UNIQUE AS non_unique, COLUMN_NAME AS col, SEQ_IN_INDEX AS seq, COLLATION AS dir, SUB_PART AS sub
       FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
  );
  const fks = await sql.query<{ name: string; t: string; col: string; ref_t: string; ref_col: string; del: string; upd: string }>(
    `SELECT k.CONSTRAINT_NAME AS name, k.TABLE_NAME AS t, k.COLUMN_NAME AS col, k.REFERENCED_TABLE_NAME AS ref_t, k.REFERENCED_COLUMN_NAME AS ref_col,
            r.DELETE_RULE AS del, r.UPDATE_RULE AS upd
       FROM information_schema.KEY_COLUMN_USAGE k
       JOIN information_schema.REFERENTIAL_CONSTRAINTS r ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME AND r.TABLE_NAME = k.TABLE_NAME
      WHERE k.TABLE_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_NAME IS NOT NULL ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`,
  );
  const tables = new Set(columns.map((c) => c.t));
  const modelByName = new Map(dm.models.map((m) => [m.name, m]));
  const fieldOf = (m: DmmfModel, name: string) => m.fields.find((f) => f.name === name)!;

  for (const model of dm.models) {
    const table = tableOf(model);
    if (!tables.has(table)) {
      diffs.push(`table ${table}: missing in the database`);
      continue;
    }
    const actual = new Map(columns.filter((c) => c.t === table).map((c) => [c.c, c]));
    const scalars = model.fields.filter((f) => f.kind === "scalar" || f.kind === "enum");
    for (const f of scalars) {
      const name = `${table}.${columnOf(f)}`;
      const col = actual.get(columnOf(f));
      if (!col) {
        diffs.push(`column ${name}: missing in the database`);
        continue;
      }
      if ((col.nullable === "NO") !== f.isRequired)
        diffs.push(
          `column ${name}: ${col.nullable === "NO" ? "NOT NULL" : "nullable"} in the database, ${f.isRequired ? "required" : "optional"} in the schema`,
        );
      let type = col.type.toLowerCase().replace(/^(bigint|int|smallint|mediumint)\(\d+\)/, "$1");
      if (type === "longtext" && jsonChecks.has(`${table}.${col.c}`)) type = "json";
      if (type !== expectedType(f)) diffs.push(`column ${name}: type ${type} in the database, ${expectedType(f)} expected`);
      const want = expectedDefault(f);
      const got = /auto_increment/i.test(col.extra) ? "auto_increment" : normalDefault(col.def);
      if (got !== want) diffs.push(`column ${name}: default ${got ?? "none"} in the database, ${want ?? "none"} expected`);
      if (col.collation !== null && col.collation !== "utf8mb4_bin") diffs.push(`column ${name}: collation ${col.collation}, utf8mb4_bin expected`);
    }
    const declared = new Set(scalars.map(columnOf));
    for (const c of actual.keys()) {
      if (!declared.has(c) && !ALLOWED_UNDECLARED_COLUMNS.some((a) => a.table === table && a.column === c))
        diffs.push(`column ${table}.${c}: in the database, not in the schema`);
    }
  }

  const dbIndexes = new Map<string, { unique: boolean; columns: string[]; desc: boolean[]; prefix: boolean }>();
  for (const s of statistics) {
    const key = `${s.t}.${s.name}`;
    const ix = dbIndexes.get(key) ?? { unique: Number(s.non_unique) === 0, columns: [], desc: [], prefix: false };
    ix.columns.push(s.col);
    ix.desc.push(s.dir === "D");
    ix.prefix ||= s.sub !== null;
    dbIndexes.set(key, ix);
  }
  for (const ix of dm.indexes.filter((i) => i.type !== "fulltext")) {
    const model = modelByName.get(ix.model)!;
    const table = tableOf(model);
    if (!tables.has(table)) continue;
    const name = ix.type === "id" ? "PRIMARY" : ix.dbName!;
    const key = `${table}.${name}`;
    const got = dbIndexes.get(key);
    const cols = ix.fields.map((f) => columnOf(fieldOf(model, f.name)));
    if (!got) {
      diffs.push(`index ${key}: missing in the database`);
      continue;
    }
    dbIndexes.delete(key);
    if (got.columns.join(", ") !== cols.join(", "))
      diffs.push(`index ${key}: columns (${got.columns.join(", ")}) in the database, (${cols.join(", ")}) expected`);
    if (got.unique !== (ix.type !== "normal")) diffs.push(`index ${key}: ${got.unique ? "unique" : "non-unique"} in the database`);
    if (got.desc.join() !== ix.fields.map((f) => f.sortOrder === "desc").join()) diffs.push(`index ${key}: sort order differs`);
    if (got.prefix) diffs.push(`index ${key}: a prefix index in the database`);
  }
  for (const a of ALLOWED_UNDECLARED_INDEXES)
    if (!dbIndexes.delete(`${a.table}.${a.name}`)) diffs.push(`index ${a.table}.${a.name}: allowlisted but not in the database`);
  for (const key of dbIndexes.keys())
    if (tables.has(key.split(".")[0]) && dm.models.some((m) => tableOf(m) === key.split(".")[0]))
      diffs.push(`index ${key}: in the database, not declared in the schema`);

  const dbFks = new Map<string, { name: string; del: string; upd: string }>();
  const byConstraint = new Map<string, typeof fks>();
  for (const fk of fks) byConstraint.set(`${fk.t}.${fk.name}`, [...(byConstraint.get(`${fk.t}.${fk.name}`) ?? []), fk]);
  for (const parts of byConstraint.values()) {
    const k = `${parts[0].t}(${parts.map((p) => p.col).join(", ")}) → ${parts[0].ref_t}(${parts.map((p) => p.ref_col).join(", ")})`;
    dbFks.set(k, { name: parts[0].name, del: parts[0].del, upd: parts[0].upd });
  }
  for (const model of dm.models) {
    for (const rel of model.fields.filter((f) => f.kind === "object" && f.relationFromFields?.length)) {
      const target = modelByName.get(rel.type)!;
      const k = `${tableOf(model)}(${rel.relationFromFields!.map((n) => columnOf(fieldOf(model, n))).join(", ")}) → ${tableOf(target)}(${(rel.relationToFields ?? []).map((n) => columnOf(fieldOf(target, n))).join(", ")})`;
      const fk = dbFks.get(k);
      if (!fk) {
        diffs.push(`foreign key ${k}: missing in the database`);
        continue;
      }
      dbFks.delete(k);
      const del = RULES[rel.relationOnDelete ?? (rel.isRequired ? "Restrict" : "SetNull")];
      const upd = RULES[rel.relationOnUpdate ?? "Cascade"];
      if (fk.del !== del) diffs.push(`foreign key ${k}: ON DELETE ${fk.del} in the database, ${del} expected`);
      if (fk.upd !== upd) diffs.push(`foreign key ${k}: ON UPDATE ${fk.upd} in the database, ${upd} expected`);
    }
  }
  for (const [k, fk] of dbFks) diffs.push(`foreign key ${k}: in the database (${fk.name}), not in the schema`);
  return diffs.sort();
}

describe.runIf(usingMysql)("the migrated MySQL/MariaDB database matches prisma/mysql/schema.prisma", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());
  const datamodel = datamodelOf(mysqlText);

  it("has no difference: tables, columns, nullability, types, defaults, collation, indexes, foreign keys", async () => {
    expect(await mysqlSchemaDifferences(db.sql, datamodel)).toEqual([]);
    const tables = await db.sql.query<{ t: string; collation: string }>(
      `SELECT TABLE_NAME AS t, TABLE_COLLATION AS collation FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME <> '_prisma_migrations'`,
    );
    expect(tables.filter((t) => t.collation !== "utf8mb4_bin")).toEqual([]);
  });

  it("the comparison can fail: it reports each change made to a database, and only those", async () => {
    const changed = await createEmptyTestDatabase(); // DDL commits on MySQL: a database of its own
    try {
      await changed.withSession((s) => migrate(s));
      await changed.sql.exec(`
        DROP INDEX idempotency_records_expires_at_idx ON idempotency_records;
        ALTER TABLE idempotency_records ADD COLUMN extra_col LONGTEXT NULL;
        CREATE INDEX outbox_messages_status_idx ON outbox_messages (status);
        ALTER TABLE reconciliation_items MODIFY provider LONGTEXT NULL;
        ALTER TABLE idempotency_events MODIFY response_code BIGINT NULL;
        ALTER TABLE outbox_messages ALTER COLUMN status SET DEFAULT 'sent';
        ALTER TABLE outbox_messages DROP FOREIGN KEY outbox_messages_record_id_fkey;
        ALTER TABLE outbox_messages ADD CONSTRAINT outbox_messages_record_id_fkey FOREIGN KEY (record_id) REFERENCES idempotency_records (id)
          ON DELETE SET NULL ON UPDATE NO ACTION;`);
      expect(await mysqlSchemaDifferences(changed.sql, datamodel)).toEqual(
        [
          "column idempotency_events.response_code: type bigint in the database, int expected",
          "column idempotency_records.extra_col: in the database, not in the schema",
          "column outbox_messages.status: default sent in the database, pending expected",
          "column reconciliation_items.provider: nullable in the database, required in the schema",
          "foreign key outbox_messages(record_id) → idempotency_records(id): ON DELETE SET NULL in the database, CASCADE expected",
          "index idempotency_records.idempotency_records_expires_at_idx: missing in the database",
          "index outbox_messages.outbox_messages_status_idx: in the database, not declared in the schema",
        ].sort(),
      );
    } finally {
      await changed.drop();
    }
  });
});
