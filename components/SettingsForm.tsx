"use client";

import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { formatInstant } from "@/lib/time/format";
import { useNow } from "@/components/time/When";

/** The time zone setting: every time in the console, and every date input, uses it. */
export function SettingsForm({ timeZone, zones }: { timeZone: string; zones: string[] }) {
  const router = useRouter();
  const now = useNow(1000);
  const [zone, setZone] = useState(timeZone);
  const [saving, setSaving] = useState(false);
  const [message, setMessage] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaving(true);
    setMessage(null);
    try {
      const saved = await apiFetch<{ timeZone: string }>("/api/v1/me/preferences", { method: "PUT", body: { timeZone: zone } });
      setMessage({ kind: "ok", text: `Saved: times are now shown in ${saved.timeZone}.` });
      router.refresh();
    } catch (err) {
      setMessage({ kind: "error", text: err instanceof Error ? err.message : String(err) });
    } finally {
      setSaving(false);
    }
  };
  return (
    <form className="panel form-grid" onSubmit={submit} aria-labelledby="tz-title">
      <h2 id="tz-title">Time zone</h2>
      <p className="subtle">
        Every time in the console is written as <code>YYYY-MM-DD hh:mm:ss</code> in this zone, with its offset and its age beside it (&ldquo;
        <span suppressHydrationWarning>{formatInstant(now, zone)}</span> · just now&rdquo;); date inputs take times in it too. UTC is the default: a time you
        paste into a ticket then means the same to everyone.
      </p>
      <label>
        Time zone
        <select value={zone} onChange={(e) => setZone(e.target.value)} data-testid="time-zone">
          {zones.map((z) => (
            <option key={z} value={z}>
              {z}
            </option>
          ))}
        </select>
      </label>
      <div>
        <button type="submit" className="primary" disabled={saving || zone === timeZone} data-testid="time-zone-save">
          {saving ? "Saving…" : "Save"}
        </button>
      </div>
      {message ? (
        <p className={`notice ${message.kind}`} role={message.kind === "error" ? "alert" : "status"} data-testid="settings-message">
          {message.text}
        </p>
      ) : null}
      <p className="subtle">The light or dark theme is chosen in the top bar (automatic follows your system), per browser.</p>
    </form>
  );
}
