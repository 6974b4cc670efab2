import path from "node:path";
import { defineConfig } from "prisma/config";

// Prisma's CLI wants a native schema engine for migrate/introspect; it cannot be
// downloaded offline. Point it at a script that explains and fails, unless the
// operator provides a real engine. generate/validate/format need no engine.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= path.resolve("scripts/no-schema-engine.sh");

// A MySQL/MariaDB DATABASE_URL selects the MySQL schema and its migrations (ADR 0012), so that
// Prisma's own engine, where installed, finds the history our runner wrote. npm ci generates
// both clients with --schema (package.json postinstall).
const mysql = /^(mysql|mariadb):\/\//.test(process.env.DATABASE_URL?.trim() ?? "");

export default defineConfig({
  schema: mysql ? "prisma/mysql/schema.prisma" : "prisma/schema.prisma",
  migrations: { path: mysql ? "prisma/mysql/migrations" : "prisma/migrations" },
  // Only migrate/introspect read this; the app builds its own adapter (lib/db).
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://localhost:5432/unused" },
});
