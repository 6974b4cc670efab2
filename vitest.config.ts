import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(import.meta.dirname) } },
  test: {
    include: ["test/**/*.test.ts"],
    // Each file gets its own throwaway database; real Postgres runs are I/O bound.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // The audit chain's HMAC key (lib/audit/keys.ts): tests never fall back to a generated .data file.
    env: { AUDIT_HMAC_KEY: process.env.AUDIT_HMAC_KEY || "vitest-audit-hmac-key-0123456789abcdef0123456789" },
    reporters: ["default"],
  },
});
