/**
 * CSV for every export (RFC 4180, CRLF line ends), with one cell rule for the whole
 * console (csvCell), typed columns, value conversion and the streamed response.
 */

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote, CR or LF, quotes
 * doubled. A cell a spreadsheet would run as a formula (= + - @, or a leading
 * tab/CR) gets a leading single quote, so opening the export runs nothing.
 */
export function csvCell(value: string | null | undefined): string {
  if (value === null || value === undefined) return "";
  let s = value;
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export type CsvValue = string | number | bigint | boolean | Date | null | undefined | readonly unknown[] | Record<string, unknown>;

export interface CsvColumn<T> {
  name: string;
  value: (row: T) => CsvValue;
}

/** A value as cell text: Date → ISO 8601 (UTC), bigint/number → decimal, arrays of text → "a;b", objects → JSON. */
export function cellText(value: CsvValue): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join(";");
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
}

/** One CSV line (CRLF-terminated) from cell texts. */
export function csvLine(cells: readonly (string | null | undefined)[]): string {
  return cells.map(csvCell).join(",") + "\r\n";
}

export function csvHeaderLine<T>(columns: readonly CsvColumn<T>[]): string {
  return csvLine(columns.map((c) => c.name));
}

/** The rows as CSV lines (no header), for streaming after csvHeaderLine(). */
export function csvRowLines<T>(columns: readonly CsvColumn<T>[], rows: readonly T[]): string {
  let out = "";
  for (const row of rows) out += csvLine(columns.map((c) => cellText(c.value(row))));
  return out;
}

/** A whole CSV document: header, then one line per row. */
export function toCsvText<T>(columns: readonly CsvColumn<T>[], rows: readonly T[]): string {
  return csvHeaderLine(columns) + csvRowLines(columns, rows);
}

/**
 * Parses CSV text produced above back into rows of cells (for tests and tooling):
 * RFC 4180 quoting, CRLF or LF line ends. The formula guard's leading quote stays.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i++;
        } else quoted = false;
      } else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\r" || c === "\n") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** A timestamp for file names: 2026-11-30T12-00-00Z. */
export function fileStamp(now = new Date()): string {
  return `${now.toISOString().slice(0, 19).replace(/:/g, "-")}Z`;
}

/**
 * A text/csv download streamed from the given chunks (pulled one at a time), never
 * cached, never sniffed. `filename` is ASCII [A-Za-z0-9._-] (callers build it).
 */
export function csvResponse(chunks: Iterable<string> | AsyncIterable<string>, filename: string, headers: Record<string, string> = {}): Response {
  const iterator = Symbol.asyncIterator in chunks ? (chunks as AsyncIterable<string>)[Symbol.asyncIterator]() : (chunks as Iterable<string>)[Symbol.iterator]();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await iterator.return?.(undefined);
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      ...headers,
    },
  });
}
