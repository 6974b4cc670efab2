/**
 * prisma/mysql/schema.prisma is derived from prisma/schema.prisma (ADR 0012): the same models,
 * tables, columns and index names, with MySQL's types. Never edit it by hand:
 *
 *   npm run db:mysql-schema            rewrite prisma/mysql/schema.prisma
 *   npm run db:mysql-schema -- --check exit 1 if it is stale (test/mysql-schema.test.ts checks too)
 *
 * The mapping (ADR 0012, "Column types"):
 * - String → VARCHAR(255) when a column of that name is in an index or a key or has a default
 *   anywhere in the schema (InnoDB's 3072-byte key limit under utf8mb4; one name, one type:
 *   idempotency_events.scope is idempotency_records.scope), LONGTEXT otherwise (unbounded, as TEXT);
 * - String[] → Json (no arrays in MySQL), default [] → JSON_ARRAY();
 * - Timestamptz(6) → DATETIME(6) holding UTC, now() → UTC_TIMESTAMP(6) (whatever the writer's zone);
 * - text_pattern_ops dropped (binary collation: a B-tree index serves prefix LIKE);
 * - primary keys lose their names (MySQL calls every one PRIMARY).
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { format, get_dmmf } from "@prisma/prisma-schema-wasm";

interface Field {
  name: string;
  dbName?: string | null;
  kind: string;
  isId: boolean;
  isUnique: boolean;
  hasDefaultValue: boolean;
}
interface Model {
  name: string;
  fields: Field[];
}
interface Datamodel {
  models: Model[];
  indexes: { model: string; fields: { name: string }[] }[];
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const POSTGRES_SCHEMA = path.join(ROOT, "prisma/schema.prisma");
export const MYSQL_SCHEMA = path.join(ROOT, "prisma/mysql/schema.prisma");

const HEADER = `// GENERATED from prisma/schema.prisma by scripts/mysql-schema.ts (npm run db:mysql-schema): do not edit.
// The same models, tables, columns and index names as the PostgreSQL schema, with MySQL/MariaDB
// types (ADR 0012). The SQL is hand-written in prisma/mysql/migrations; test/mysql-schema.test.ts
// checks that this file is fresh and that the migrated database matches it.

generator client {
  provider     = "prisma-client"
  output       = "../../lib/generated/prisma-mysql"
  moduleFormat = "esm"
}

datasource db {
  provider = "mysql"
}
`;

/** The MySQL schema for a PostgreSQL schema text. */
export function mysqlSchemaFrom(postgresSchema: string): string {
  const dm = (JSON.parse(get_dmmf(JSON.stringify({ prismaSchema: postgresSchema }))) as { datamodel: Datamodel }).datamodel;
  // By column name across the schema: one name, one type (events.scope is records.scope).
  const column = (f: Field) => f.dbName ?? f.name;
  const keyed = new Set(dm.models.flatMap((m) => m.fields.filter((f) => f.isId || f.isUnique || f.hasDefaultValue).map(column)));
  for (const ix of dm.indexes) {
    const m = dm.models.find((x) => x.name === ix.model)!;
    for (const f of ix.fields) keyed.add(column(m.fields.find((x) => x.name === f.name)!));
  }

  const out: string[] = [];
  let model: Model | null = null;
  for (const line of postgresSchema.split("\n")) {
    const start = /^model\s+(\w+)\s*\{/.exec(line);
    if (start) {
      model = dm.models.find((m) => m.name === start[1]) ?? null;
      out.push(line);
      continue;
    }
    if (!model) {
      out.push(line);
      continue;
    }
    if (/^\}/.test(line)) {
      model = null;
      out.push(line, "");
      continue;
    }
    if (/^\s*\/\/(?!\/)/.test(line)) continue; // PostgreSQL remarks (operator classes, …) do not apply
    out.push(mysqlLine(line, model, keyed));
  }
  // Everything before the first model (generator, datasource, remarks) is replaced by the header.
  const firstModel = out.findIndex((l) => /^(\/\/\/|model\s)/.test(l));
  const body = out
    .slice(firstModel)
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  const formatted = format(
    JSON.stringify([["/schema.prisma", `${HEADER}\n${body}\n`]]),
    JSON.stringify({ textDocument: { uri: "file:/dev/null" }, options: { tabSize: 2, insertSpaces: true } }),
  );
  return (JSON.parse(formatted) as [string, string][])[0][1];
}

function mysqlLine(line: string, model: Model, keyed: ReadonlySet<string>): string {
  if (/^\s*@@/.test(line)) {
    return line.replace(/\(ops:\s*raw\("[^"]*"\)\)/g, "").replace(/^(\s*@@id\(\[[^\]]*\])\s*,\s*map:\s*"[^"]*"\)/, "$1)");
  }
  const field = /^(\s+)(\w+)(\s+)(\w+)(\[\]|\?)?(.*)$/.exec(line);
  if (!field) return line;
  const [, indent, name, gap, type, modifier = "", rest] = field;
  const f = model.fields.find((x) => x.name === name);
  if (!f || f.kind !== "scalar") return line;
  let attrs = rest.replace(/@id\(map:\s*"[^"]*"\)/, "@id");
  let outType = type + modifier;
  if (type === "String" && modifier === "[]") {
    outType = "Json";
    attrs = attrs.replace("@default([])", '@default(dbgenerated("(json_array())"))');
  } else if (type === "String") {
    attrs += keyed.has(f.dbName ?? f.name) ? " @db.VarChar(255)" : " @db.LongText";
  } else if (type === "DateTime") {
    attrs = attrs.replace("@db.Timestamptz(6)", "@db.DateTime(6)").replace("@default(now())", '@default(dbgenerated("(utc_timestamp(6))"))');
  }
  return `${indent}${name}${gap}${outType}${attrs}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const want = mysqlSchemaFrom(readFileSync(POSTGRES_SCHEMA, "utf8"));
  let have = "";
  try {
    have = readFileSync(MYSQL_SCHEMA, "utf8");
  } catch {
    // not written yet
  }
  if (process.argv.includes("--check")) {
    if (have !== want) {
      console.error("prisma/mysql/schema.prisma is stale: run npm run db:mysql-schema (and add a MySQL migration for what changed)");
      process.exit(1);
    }
    console.log("prisma/mysql/schema.prisma is up to date");
  } else if (have !== want) {
    writeFileSync(MYSQL_SCHEMA, want);
    console.log("wrote prisma/mysql/schema.prisma (now write the MySQL migration for what changed: prisma/mysql/migrations)");
  } else {
    console.log("prisma/mysql/schema.prisma is up to date");
  }
}
