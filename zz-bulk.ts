import { openDatabase } from "@/lib/db/client";
import { bulkGenerate } from "@/lib/demo/bulk";
const db = await openDatabase({ mode: "postgres", url: process.env.DATABASE_URL! });
try {
  await db.sql.exec("TRUNCATE idempotency_records, idempotency_events, reconciliation_items, outbox_messages");
  const b = await bulkGenerate(db.sql, { records: Number(process.env.N), startIndex: 0, seed: 7, onProgress: (p) => console.log(p), concurrency: Number(process.env.C ?? 1) });
  console.log(JSON.stringify(b));
} finally { await db.close(); }
