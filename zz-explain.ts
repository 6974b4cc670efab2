import pg from "pg";
import { readFileSync } from "node:fs";
const src = readFileSync("lib/demo/bulk.ts", "utf8");
// crude: import the module and grab SQL via a hook
const mod = await import("@/lib/demo/bulk");
const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
await c.connect();
const origQuery = c.query.bind(c);
const exec = { query: async (text: string, params: unknown[]) => { const r = await origQuery("EXPLAIN (ANALYZE, BUFFERS) " + text, params); console.log(r.rows.map((x: any) => x["QUERY PLAN"]).join("\n")); return [{}]; }, exec: async () => {} };
await c.query("BEGIN");
await mod.bulkGenerate(exec as any, { records: 10000, startIndex: 5_000_000, seed: 9 });
await c.query("ROLLBACK");
await c.end();
