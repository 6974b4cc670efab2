"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";

const CHOICES = [
  { label: "Off", ms: 0 },
  { label: "5 s", ms: 5_000 },
  { label: "15 s", ms: 15_000 },
  { label: "1 min", ms: 60_000 },
];
const STORAGE_KEY = "ic.refreshMs";

/** Re-renders the server page on an interval the user picks (off included), remembered per browser. */
export function AutoRefresh({ asOf }: { asOf: string }) {
  const router = useRouter();
  const [ms, setMs] = useState(15_000);

  useEffect(() => {
    const saved = window.localStorage.getItem(STORAGE_KEY);
    if (saved !== null && CHOICES.some((c) => c.ms === Number(saved))) setMs(Number(saved));
  }, []);

  useEffect(() => {
    if (!ms) return;
    const id = window.setInterval(() => router.refresh(), ms);
    return () => window.clearInterval(id);
  }, [ms, router]);

  return (
    <div className="subtle">
      <span data-testid="as-of" title={asOf}>
        Data as of {new Date(asOf).toLocaleTimeString()}
      </span>{" "}
      ·{" "}
      <label>
        Refresh{" "}
        <select
          aria-label="Refresh interval"
          value={ms}
          onChange={(e) => {
            const next = Number(e.target.value);
            setMs(next);
            window.localStorage.setItem(STORAGE_KEY, String(next));
          }}
        >
          {CHOICES.map((c) => (
            <option key={c.ms} value={c.ms}>
              {c.label}
            </option>
          ))}
        </select>
      </label>{" "}
      <button type="button" onClick={() => router.refresh()}>
        Refresh now
      </button>
    </div>
  );
}
