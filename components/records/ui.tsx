"use client";

/**
 * Small presentational pieces the record screens share (and other list screens may
 * reuse): status badge, money in minor units with its currency, durations, skeleton
 * rows, and the CSV export link. Moments: components/time (When).
 */

const STATUSES = new Set(["processing", "completed", "failed", "pending"]);

export function StatusBadge({ status }: { status: string }) {
  const known = STATUSES.has(status);
  return (
    <span className={`status-pill${known ? ` status-${status}` : ""}`} data-testid="status-badge">
      <span className={`dot ${known ? status : ""}`} aria-hidden />
      {status}
    </span>
  );
}

const minorDigitsCache = new Map<string, number>();

/** How many minor-unit digits a currency has (EUR 2, JPY 0, KWD 3); 2 when unknown. */
export function minorDigits(currency: string): number {
  let d = minorDigitsCache.get(currency);
  if (d === undefined) {
    try {
      d = new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2;
    } catch {
      d = 2;
    }
    minorDigitsCache.set(currency, d);
  }
  return d;
}

/** "€12.99" from ("1299", "EUR"); exact for any size (the API sends amounts as decimal strings). */
export function formatMoney(amountMinor: string | number | null | undefined, currency: string | null | undefined): string {
  if (amountMinor === null || amountMinor === undefined || amountMinor === "") return "—";
  const text = String(amountMinor);
  if (!/^-?\d+$/.test(text)) return text;
  if (!currency) return new Intl.NumberFormat("en").format(BigInt(text));
  const digits = minorDigits(currency);
  const negative = text.startsWith("-");
  const abs = (negative ? text.slice(1) : text).padStart(digits + 1, "0");
  const whole = abs.slice(0, abs.length - digits);
  const fraction = digits ? abs.slice(abs.length - digits) : "";
  try {
    // Format the whole part (grouping, symbol) with a 0 fraction, then put the exact digits back.
    const parts = new Intl.NumberFormat("en", { style: "currency", currency }).formatToParts(0);
    let out = "";
    for (const p of parts) {
      if (p.type === "integer") out += new Intl.NumberFormat("en").format(BigInt(whole));
      else if (p.type === "fraction") out += fraction;
      else if (p.type === "group") continue;
      else out += p.value;
    }
    return negative ? `-${out}` : out;
  } catch {
    return `${negative ? "-" : ""}${whole}${digits ? `.${fraction}` : ""} ${currency}`;
  }
}

const numberFormat = new Intl.NumberFormat("en");
export const formatNumber = (n: number | string | null | undefined) =>
  n === null || n === undefined ? "—" : typeof n === "string" && /^\d+$/.test(n) ? numberFormat.format(BigInt(n)) : numberFormat.format(Number(n));

/** A duration in words: 95 → "1m 35s", 7260 → "2h 1m". */
export function formatSeconds(total: number): string {
  const s = Math.abs(Math.round(total));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)}m` : ""}`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600) ? ` ${Math.floor((s % 86400) / 3600)}h` : ""}`;
}

/** Placeholder rows while a table loads. */
export function SkeletonRows({ rows = 6, columns, testId }: { rows?: number; columns: number; testId?: string }) {
  return (
    <>
      {Array.from({ length: rows }, (_, r) => (
        <tr key={r} className="skeleton-row" aria-hidden data-testid={r === 0 ? testId : undefined}>
          {Array.from({ length: columns }, (_, c) => (
            <td key={c}>
              <span className="skeleton" style={{ width: `${40 + ((r * 7 + c * 13) % 50)}%` }} />
            </td>
          ))}
        </tr>
      ))}
    </>
  );
}

export type ExportListName = "records" | "queue" | "duplicates" | "conflicts";

/**
 * "Export CSV" for a list: GET /api/v1/export/<list>?<the list's filters> (records.export,
 * audited). Render it only for principals holding records.export; the API refuses others.
 */
export function ExportLink({ list, query, label = "Export CSV" }: { list: ExportListName; query: string; label?: string }) {
  const params = new URLSearchParams(query);
  params.delete("cursor");
  params.delete("limit");
  const qs = params.toString();
  return (
    <a
      className="button-link"
      data-testid="export-csv"
      href={`/api/v1/export/${list}${qs ? `?${qs}` : ""}`}
      download
      title="Download every matching row as CSV (up to 100,000; the export is recorded in the audit log)"
    >
      {label}
    </a>
  );
}
