"use client";

import { useEffect, useState } from "react";
import { fmtDuration, When, useNow } from "@/components/queue/read-ui";

/**
 * The overview's one refresh control: how often the data is re-fetched — off included,
 * remembered per browser under the same key — "Refresh now", and when the data shown
 * was read ("Data as of …", absolute and its age; off a replica, the moment its data is current
 * to, and how far it is behind the primary).
 */
const CHOICES = [
  { label: "Off", ms: 0 },
  { label: "5 s", ms: 5_000 },
  { label: "15 s", ms: 15_000 },
  { label: "1 min", ms: 60_000 },
  { label: "5 min", ms: 300_000 },
];
const STORAGE_KEY = "ic.refreshMs";
const DEFAULT_MS = 15_000;

/** The refresh interval the user picked (ms; 0 = off), kept in localStorage. */
export function useRefreshInterval(): [number, (ms: number) => void] {
  const [ms, setMs] = useState(DEFAULT_MS);
  useEffect(() => {
    const saved = window.localStorage.getItem(STORAGE_KEY);
    if (saved !== null && CHOICES.some((c) => c.ms === Number(saved))) setMs(Number(saved));
  }, []);
  const set = (next: number) => {
    setMs(next);
    window.localStorage.setItem(STORAGE_KEY, String(next));
  };
  return [ms, set];
}

export function RefreshControl({
  asOf,
  replica,
  ms,
  onMsChange,
  onRefresh,
  refreshing,
}: {
  asOf: string | null;
  /** The read side's lag (null: the data comes from the primary). */
  replica?: { lagSeconds: number | null } | null;
  ms: number;
  onMsChange: (ms: number) => void;
  onRefresh: () => void;
  refreshing: boolean;
}) {
  const now = useNow(5_000);
  return (
    <div className="subtle ov-refresh">
      <span data-testid="as-of" aria-live="polite">
        {asOf ? (
          <>
            Data as of <When iso={asOf} now={Math.max(now, Date.parse(asOf))} />
            {replica ? (
              <span data-testid="replica-lag">
                {" "}
                · read replica{" "}
                {replica.lagSeconds === null ? "(lag unknown)" : replica.lagSeconds < 1 ? "up to date" : `${fmtDuration(replica.lagSeconds)} behind`}
              </span>
            ) : null}
          </>
        ) : (
          "Loading…"
        )}
      </span>
      <label>
        Refresh{" "}
        <select aria-label="Refresh interval" value={ms} onChange={(e) => onMsChange(Number(e.target.value))}>
          {CHOICES.map((c) => (
            <option key={c.ms} value={c.ms}>
              {c.label}
            </option>
          ))}
        </select>
      </label>
      <button type="button" onClick={onRefresh} disabled={refreshing} aria-busy={refreshing}>
        Refresh now
      </button>
    </div>
  );
}
