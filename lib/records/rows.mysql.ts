/**
 * What the read side's MySQL statements share (ADR 0012): the values a MySQL row holds that
 * PostgreSQL's would hold in another type. A store maps them before returning a row, so the
 * logic above the stores sees the same shapes on every database.
 */

/** A record summary's `legal_hold` is TINYINT(1) (0/1): a boolean, as PostgreSQL returns it. */
export function withBooleanHold<T extends { legalHold: unknown }>(row: T): T & { legalHold: boolean } {
  return { ...row, legalHold: Boolean(Number(row.legalHold)) };
}

/**
 * A JSON column read as text (`CAST(c AS CHAR)`): MySQL's JSON is binary and MariaDB's is
 * LONGTEXT, and whether the driver parses it depends on the server's column metadata — an
 * adopted table's LONGTEXT holding JSON text is not parsed. Reading the text and parsing it
 * here gives the same value for each; text that is not JSON (header lines in a LONGTEXT
 * column) stays text, as a PostgreSQL text column would give it.
 */
export function jsonOfText(value: unknown): unknown {
  if (typeof value !== "string") return value ?? null;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** A LIKE pattern matching `prefix` literally at the start (\ is LIKE's escape in MySQL's default mode). */
export const likePrefix = (prefix: string): string => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
