import path from "node:path";
import { defineConfig } from "vitest/config";

// DATABASE_URL=mysql://… or mariadb://… (ADR 0012): every test file but these, which say nothing
// about MySQL — each says why.
const NOT_ON_MYSQL = [
  // PostgreSQL's migrations and catalogs; MySQL's runner, adoption and schema are proven by
  // mysql-foundation.test.ts and mysql-schema.test.ts.
  "test/migrate.test.ts",
  "test/migrate-adopt.test.ts",
  "test/schema-drift.test.ts",
  // A PostgreSQL streaming replica (.ci/replica.sh); read-side.test.ts covers the handle on MySQL.
  "test/replica.test.ts",
  // Redis key stores' census and formats: no SQL database involved (the other runs cover them).
  "test/redis-census.test.ts",
  "test/redis-formats.test.ts",
];
const onMysql = /^(mysql|mariadb):\/\//.test(process.env.DATABASE_URL?.trim() ?? "");

export default defineConfig({
  resolve: { alias: { "@": path.resolve(import.meta.dirname) } },
  test: {
    include: ["test/**/*.test.ts"],
    exclude: onMysql ? NOT_ON_MYSQL : [],
    // Each file gets its own throwaway database; real Postgres runs are I/O bound.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // The audit chain's HMAC key (lib/audit/keys.ts): tests never fall back to a generated .data file.
    env: { AUDIT_HMAC_KEY: process.env.AUDIT_HMAC_KEY || "vitest-audit-hmac-key-0123456789abcdef0123456789" },
    reporters: ["default"],
  },
});
