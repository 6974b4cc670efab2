import { getDatabase, type Database } from "./client";
import { prepareDatabase } from "./bootstrap";

export type { Database } from "./client";

/** The server's database: opened on first use, prepared (migrated/seeded) once. */
export function db(): Promise<Database> {
  return getDatabase(prepareDatabase);
}
