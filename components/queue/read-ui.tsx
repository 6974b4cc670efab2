"use client";

/**
 * Small UI pieces shared by the read screens (stuck & pending queue, duplicates,
 * conflicts, expiry): number / money / duration formatting with Intl, relative
 * times (components/time), loading skeletons, empty and error
 * states, URL-held filters, keyboard navigation between table rows, the CSV export
 * link and the time-range picker. Everything here renders on the client only after
 * data arrived (TanStack Query does not fetch during the server render), so using
 * the browser's locale and clock cannot cause a hydration mismatch.
 */

import { usePathname, useSearchParams } from "next/navigation";
import { useCallback, useMemo, useState, type FormEvent, type KeyboardEvent, type ReactNode } from "react";
import { InstantInput } from "@/components/time/When";

// --- Formatting -------------------------------------------------------------------------

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const percent = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 2 });

export function fmtInt(n: number | string | null | undefined): string {
  if (n === null || n === undefined || n === "") return "—";
  return integer.format(typeof n === "string" ? Number(n) : n);
}

export function fmtPercent(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? "—" : percent.format(rate);
}

/** An amount in minor units (a decimal string: the API sends bigints as text) in its currency. */
export function fmtMoney(amountMinor: string | null | undefined, currency: string | null | undefined): string {
  if (amountMinor === null || amountMinor === undefined) return "—";
  if (!currency) return integer.format(Number(amountMinor));
  try {
    const f = new Intl.NumberFormat(undefined, { style: "currency", currency });
    const digits = f.resolvedOptions().maximumFractionDigits ?? 2;
    return f.format(Number(amountMinor) / 10 ** digits);
  } catch {
    return `${integer.format(Number(amountMinor))} ${currency} (minor units)`;
  }
}

/** "2 d 3 h", "14 min 5 s", "42 s": the two largest units. */
export function fmtDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.round(totalSeconds));
  const parts: [number, string][] = [
    [Math.floor(s / 86400), "d"],
    [Math.floor((s % 86400) / 3600), "h"],
    [Math.floor((s % 3600) / 60), "min"],
    [s % 60, "s"],
  ];
  const first = parts.findIndex(([v]) => v > 0);
  if (first === -1) return "0 s";
  return parts
    .slice(first, first + 2)
    .filter(([v]) => v > 0)
    .map(([v, u]) => `${integer.format(v)} ${u}`)
    .join(" ");
}

// Moments: components/time (When, useNow) — the one way the console shows time.
export { useNow, When } from "@/components/time/When";

/** A hash or key shortened for a table cell, whole on hover and when copied. */
export function Mono({ value, max = 16 }: { value: string | null | undefined; max?: number }) {
  if (!value) return <span className="subtle">—</span>;
  return (
    <code className="rs-mono" title={value}>
      {value.length > max ? `${value.slice(0, max)}…` : value}
    </code>
  );
}

// --- States -----------------------------------------------------------------------------

export function SkeletonRows({ rows = 6, cols = 6, label = "Loading" }: { rows?: number; cols?: number; label?: string }) {
  return (
    <div className="rs-skeleton" role="status" aria-live="polite" aria-label={label} data-testid="loading">
      {Array.from({ length: rows }, (_, r) => (
        <div className="rs-skeleton-row" key={r} style={{ gridTemplateColumns: `repeat(${cols}, 1fr)` }}>
          {Array.from({ length: cols }, (_, c) => (
            <span className="rs-skeleton-bar" key={c} />
          ))}
        </div>
      ))}
    </div>
  );
}

export function SkeletonBlock({ height = 240, label = "Loading" }: { height?: number; label?: string }) {
  return <div className="rs-skeleton-block" style={{ height }} role="status" aria-label={label} />;
}

export function EmptyState({ title, children, testId = "empty" }: { title: string; children?: ReactNode; testId?: string }) {
  return (
    <div className="rs-empty" data-testid={testId}>
      <strong>{title}</strong>
      {children ? <div className="subtle">{children}</div> : null}
    </div>
  );
}

export function ErrorState({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="error-box rs-error" role="alert" data-testid="load-error">
      <strong>Could not load this view.</strong> <span>{message}</span>
      {onRetry ? (
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

/** Page size from the URL (`limit`, 1…200), else the default: a position, not a filter (never exported). */
export function pageSize(v: string, fallback: number): number {
  const n = /^\d{1,3}$/.test(v) ? Number(v) : NaN;
  return n >= 1 && n <= 200 ? n : fallback;
}

// --- Filters in the URL ------------------------------------------------------------------

/**
 * The screen's filters, read from the URL (so a view is a shareable link), and a
 * setter that changes them through history.pushState: Next.js syncs useSearchParams,
 * the back button restores the previous filters, and no server round trip happens.
 */
export function useUrlFilters<K extends string>(keys: readonly K[]): [Record<K, string>, (patch: Partial<Record<K, string | undefined>>) => void] {
  const sp = useSearchParams();
  const pathname = usePathname();
  const search = sp.toString();
  const values = useMemo(() => {
    const p = new URLSearchParams(search);
    return Object.fromEntries(keys.map((k) => [k, p.get(k) ?? ""])) as Record<K, string>;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [search, keys.join(",")]);
  const update = useCallback(
    (patch: Partial<Record<K, string | undefined>>) => {
      const next = new URLSearchParams(window.location.search);
      for (const [k, v] of Object.entries(patch) as [string, string | undefined][]) {
        if (v === undefined || v.trim() === "") next.delete(k);
        else next.set(k, v.trim());
      }
      const q = next.toString();
      if (q === window.location.search.replace(/^\?/, "")) return;
      window.history.pushState(null, "", q ? `${pathname}?${q}` : pathname);
    },
    [pathname],
  );
  return [values, update];
}

/** Query string of the non-empty values, in a stable order. */
export function toQuery(values: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v !== undefined && v !== null && String(v).trim() !== "") p.set(k, String(v).trim());
  return p.toString();
}

/** The CSV export of a list with exactly the filters on screen; only for holders of records.export. */
export function ExportLink({ list, query, canExport }: { list: "records" | "queue" | "duplicates" | "conflicts"; query: string; canExport: boolean }) {
  if (!canExport) return null;
  return (
    <a className="button-link" data-testid="export-link" href={`/api/v1/export/${list}${query ? `?${query}` : ""}`} download>
      Export CSV
    </a>
  );
}

// --- Time ranges -------------------------------------------------------------------------

/** ms 0: no range at all (every record still held). */
export const RANGE_PRESETS: Record<string, { label: string; ms: number }> = {
  all: { label: "Whole lifetime (every record held)", ms: 0 },
  "1h": { label: "Last hour", ms: 3_600_000 },
  "24h": { label: "Last 24 hours", ms: 86_400_000 },
  "7d": { label: "Last 7 days", ms: 7 * 86_400_000 },
  "30d": { label: "Last 30 days", ms: 30 * 86_400_000 },
  "90d": { label: "Last 90 days", ms: 90 * 86_400_000 },
};

/** A valid ISO time from the URL, or "". */
export function isoOrEmpty(v: string): string {
  return v && !Number.isNaN(Date.parse(v)) ? v : "";
}

/** from/to of the view: explicit ones from the URL win, else the preset ending now. */
export function resolveRange(v: { range: string; from: string; to: string }, fallback: string): { from: string; to: string; custom: boolean } {
  const from = isoOrEmpty(v.from);
  const to = isoOrEmpty(v.to);
  if (from || to) {
    const end = to ? new Date(to) : new Date();
    const start = from ? new Date(from) : new Date(end.getTime() - (RANGE_PRESETS[fallback].ms || 30 * 86_400_000));
    return { from: start.toISOString(), to: end.toISOString(), custom: true };
  }
  const preset = RANGE_PRESETS[v.range] ?? RANGE_PRESETS[fallback];
  if (preset.ms === 0) return { from: "", to: "", custom: false };
  const end = new Date();
  return { from: new Date(end.getTime() - preset.ms).toISOString(), to: end.toISOString(), custom: false };
}

/**
 * Preset ranges (kept as `range=7d` in the URL: the link always means "the last 7 days")
 * or a custom from/to, typed in the user's time zone and kept as ISO times (UTC).
 */
export function RangePicker({
  values,
  presets,
  fallback,
  onChange,
}: {
  values: { range: string; from: string; to: string };
  presets: string[];
  fallback: string;
  onChange: (patch: { range?: string; from?: string; to?: string }) => void;
}) {
  const custom = Boolean(isoOrEmpty(values.from) || isoOrEmpty(values.to));
  const [from, setFrom] = useState(isoOrEmpty(values.from));
  const [to, setTo] = useState(isoOrEmpty(values.to));
  const [editing, setEditing] = useState(custom);
  const current = custom || editing ? "custom" : RANGE_PRESETS[values.range] && presets.includes(values.range) ? values.range : fallback;
  return (
    <div className="rs-range" role="group" aria-label="Time range">
      <label>
        Range
        <select
          value={current}
          onChange={(e) => {
            if (e.target.value === "custom") {
              const r = resolveRange(values, fallback);
              setFrom(r.from);
              setTo(r.to);
              setEditing(true);
              return;
            }
            setEditing(false);
            onChange({ range: e.target.value === fallback ? undefined : e.target.value, from: undefined, to: undefined });
          }}
        >
          {presets.map((p) => (
            <option key={p} value={p}>
              {RANGE_PRESETS[p].label}
            </option>
          ))}
          <option value="custom">Custom…</option>
        </select>
      </label>
      {current === "custom" ? (
        <>
          <InstantInput label="From" value={from} onChange={setFrom} />
          <InstantInput label="To" value={to} onChange={setTo} />
          <button type="button" onClick={() => onChange({ range: undefined, from, to })}>
            Apply range
          </button>
        </>
      ) : null}
    </div>
  );
}

// --- Keyboard ----------------------------------------------------------------------------

/**
 * Arrow keys move between the rows of a table body (rows carry tabIndex 0 and
 * data-row), Home/End jump to the first/last; Enter on a row follows its first link.
 */
export function onRowKeyDown(e: KeyboardEvent<HTMLElement>) {
  const row = (e.target as HTMLElement).closest<HTMLElement>("[data-row]");
  if (!row || e.target !== row) return;
  const rows = [...(row.closest("table, [data-rows]")?.querySelectorAll<HTMLElement>("[data-row]") ?? [])];
  const i = rows.indexOf(row);
  const go = (j: number) => {
    e.preventDefault();
    rows[Math.max(0, Math.min(rows.length - 1, j))]?.focus();
  };
  if (e.key === "ArrowDown" || e.key === "j") go(i + 1);
  else if (e.key === "ArrowUp" || e.key === "k") go(i - 1);
  else if (e.key === "Home") go(0);
  else if (e.key === "End") go(rows.length - 1);
  else if (e.key === "Enter") {
    const link = row.querySelector<HTMLAnchorElement>("a[href]");
    if (link) {
      e.preventDefault();
      link.click();
    }
  }
}

/**
 * Roving focus for a list of rows: one row is in the Tab order (the last one focused),
 * the others are reached with the arrow keys (onRowKeyDown), so a long table is one Tab stop.
 */
export function useRovingRows(count: number) {
  const [active, setActive] = useState(0);
  const current = Math.min(active, Math.max(0, count - 1));
  return (i: number) => ({
    tabIndex: i === current ? 0 : -1,
    onFocus: (e: { target: EventTarget; currentTarget: EventTarget }) => {
      if (e.target === e.currentTarget) setActive(i);
    },
  });
}

/** Left/Right/Home/End between tabs (WAI-ARIA tabs pattern, automatic activation). */
export function Tabs<T extends string>({
  tabs,
  value,
  onChange,
  label,
}: {
  tabs: { value: T; label: ReactNode; title?: string }[];
  value: T;
  onChange: (v: T) => void;
  label: string;
}) {
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const i = tabs.findIndex((t) => t.value === value);
    const to =
      e.key === "ArrowRight"
        ? (i + 1) % tabs.length
        : e.key === "ArrowLeft"
          ? (i - 1 + tabs.length) % tabs.length
          : e.key === "Home"
            ? 0
            : e.key === "End"
              ? tabs.length - 1
              : -1;
    if (to < 0) return;
    e.preventDefault();
    const list = e.currentTarget;
    onChange(tabs[to].value);
    requestAnimationFrame(() => list.querySelectorAll<HTMLButtonElement>("[role=tab]")[to]?.focus());
  };
  return (
    <div className="rs-tabs" role="tablist" aria-label={label} onKeyDown={onKey}>
      {tabs.map((t) => (
        <button
          key={t.value}
          type="button"
          role="tab"
          id={`tab-${t.value}`}
          aria-selected={t.value === value}
          aria-controls="tabpanel"
          tabIndex={t.value === value ? 0 : -1}
          title={t.title}
          data-testid={`tab-${t.value}`}
          onClick={() => onChange(t.value)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

/** A labelled number for the summary strip. */
export function Stat({ label, value, hint, testId }: { label: string; value: ReactNode; hint?: ReactNode; testId?: string }) {
  return (
    <div className="card rs-stat" data-testid={testId}>
      <div className="label">{label}</div>
      <div className="value">{value}</div>
      {hint ? <div className="subtle">{hint}</div> : null}
    </div>
  );
}

/** Operation (with suggestions) and scope filters, applied together. */
export function OperationScopeFilters({
  operation,
  scope,
  operations,
  onApply,
  listId,
  scopeLabel = "Scope",
}: {
  operation: string;
  scope: string;
  operations: string[];
  onApply: (p: { operation?: string; scope?: string }) => void;
  /** id of the datalist of known operations (unique per page). */
  listId: string;
  scopeLabel?: string;
}) {
  const [form, setForm] = useState({ operation, scope });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(form);
  };
  return (
    <form className="rs-inline-form" onSubmit={submit} aria-label="Operation and scope">
      <label>
        Operation
        <input
          name="operation"
          list={listId}
          value={form.operation}
          onChange={(e) => setForm({ ...form, operation: e.target.value })}
          placeholder="any"
          maxLength={100}
        />
        <datalist id={listId}>
          {operations.map((o) => (
            <option key={o} value={o} />
          ))}
        </datalist>
      </label>
      <label>
        {scopeLabel}
        <input name="scope" value={form.scope} onChange={(e) => setForm({ ...form, scope: e.target.value })} placeholder="any" maxLength={200} />
      </label>
      <button type="submit">Apply</button>
      {operation || scope ? (
        <button type="button" onClick={() => onApply({ operation: undefined, scope: undefined })}>
          Clear
        </button>
      ) : null}
    </form>
  );
}
