import { getDatabase, type Database } from "./client";
import { prepareDatabase } from "./bootstrap";

export type { Database } from "./client";

const prepare = async (database: Database) => {
  await prepareDatabase(database);
};

/**
 * The server's database: opened on first use and migrated (embedded) or checked
 * (Postgres) once. The server opens it first, through its composition root
 * (lib/demo/embedded.ts openServerDatabase, which also seeds the embedded demo);
 * every later call returns that same database.
 */
export function db(): Promise<Database> {
  return getDatabase(prepare);
}
