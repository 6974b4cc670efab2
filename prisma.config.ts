import path from "node:path";
import { defineConfig } from "prisma/config";

// Prisma's CLI wants a native schema engine for migrate/introspect; it cannot be
// downloaded offline. Point it at a script that explains and fails, unless the
// operator provides a real engine. generate/validate/format need no engine.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= path.resolve("scripts/no-schema-engine.sh");

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  // Only migrate/introspect read this; the app builds its own adapter (lib/db).
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://localhost:5432/unused" },
});
