"use client";

import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import { DEFAULT_TIME_ZONE, formatAge, formatInstant, inputToInstant, instantToInput, zoneLabel } from "@/lib/time/format";

/**
 * The one component that shows a moment: the absolute time in the user's time zone
 * (their setting, /settings) with its age beside it, both in one <time> element. The
 * zone comes from the layout (the signed-in user's setting), so the server's render
 * and the browser's agree; only the age moves (re-read every 30 s).
 */

const TimeZoneContext = createContext<string>(DEFAULT_TIME_ZONE);

export function TimeZoneProvider({ timeZone, children }: { timeZone: string; children: ReactNode }) {
  return <TimeZoneContext.Provider value={timeZone}>{children}</TimeZoneContext.Provider>;
}

/** The signed-in user's time zone (UTC unless they chose another). */
export function useTimeZone(): string {
  return useContext(TimeZoneContext);
}

/** The current time, re-read every `everyMs` so ages stay true on an open page. */
export function useNow(everyMs = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/**
 * "2026-11-24 05:05:36 UTC · 3 h ago". `age={false}` for the absolute time alone (a
 * range's ends), `seconds={false}` to the minute.
 */
export function When({
  iso,
  fallback = "—",
  age = true,
  seconds = true,
  now,
}: {
  iso: string | Date | null | undefined;
  fallback?: ReactNode;
  age?: boolean;
  seconds?: boolean;
  /** A shared clock (useNow) when many times are on screen; else the component keeps its own. */
  now?: number;
}) {
  const timeZone = useTimeZone();
  const own = useNow();
  if (!iso) return <span className="subtle">{fallback}</span>;
  const d = iso instanceof Date ? iso : new Date(iso);
  if (Number.isNaN(d.getTime())) return <span>{String(iso)}</span>;
  const abs = formatInstant(d, timeZone, { seconds });
  // On hover: the UTC time, whatever the user's zone (what a ticket or a log line says).
  return (
    <time className="when" dateTime={d.toISOString()} title={formatInstant(d, DEFAULT_TIME_ZONE)} suppressHydrationWarning>
      <span className="when-abs">{abs}</span>
      {age ? (
        <span className="when-age" suppressHydrationWarning>
          {formatAge(d, now ?? own)}
        </span>
      ) : null}
    </time>
  );
}

/**
 * A date-and-time field in the user's zone, written as times are shown ("2026-11-24 06:05",
 * a day alone means its midnight), labelled with the zone; the value in and out is ISO 8601
 * (UTC), "" while empty or not a time. Says so once the field was left with a bad value.
 */
export function InstantInput({ label, value, onChange, testId }: { label: string; value: string; onChange: (iso: string) => void; testId?: string }) {
  const timeZone = useTimeZone();
  const [text, setText] = useState(() => instantToInput(value, timeZone));
  const [seen, setSeen] = useState(value);
  const [left, setLeft] = useState(false);
  if (value !== seen) {
    setSeen(value);
    setText(instantToInput(value, timeZone));
  }
  const bad = left && text.trim() !== "" && inputToInstant(text, timeZone) === "";
  return (
    <label>
      {label} ({zoneLabel(timeZone, value ? Date.parse(value) || Date.now() : Date.now())})
      <input
        type="text"
        inputMode="numeric"
        placeholder="YYYY-MM-DD hh:mm"
        autoComplete="off"
        spellCheck={false}
        maxLength={19}
        data-testid={testId}
        value={text}
        aria-invalid={bad || undefined}
        title="YYYY-MM-DD hh:mm, in your time zone (Settings)"
        onBlur={() => setLeft(true)}
        onChange={(e) => {
          setText(e.target.value);
          const iso = inputToInstant(e.target.value, timeZone);
          setSeen(iso);
          onChange(iso);
        }}
      />
      {bad ? <span className="field-error">Write it as YYYY-MM-DD hh:mm.</span> : null}
    </label>
  );
}
