import type { Database } from "../db/client";

/** Tells the demo provider service what became of the demo's charges (stub until the provider work lands). */
export async function seedDemoProvider(_db: Database): Promise<void> {}
