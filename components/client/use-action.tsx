"use client";

import { useState } from "react";

export type ActionMessage = { kind: "ok" | "error"; text: string } | null;

/**
 * Runs one change at a time from a console form: marks the screen busy, shows the
 * outcome (the API's problem detail on failure), reloads the list on success.
 */
export function useAction(reload: () => Promise<void>) {
  const [message, setMessage] = useState<ActionMessage>(null);
  const [busy, setBusy] = useState(false);

  async function run(action: () => Promise<string>): Promise<boolean> {
    setBusy(true);
    setMessage(null);
    try {
      setMessage({ kind: "ok", text: await action() });
      await reload().catch(() => {});
      return true;
    } catch (err) {
      setMessage({ kind: "error", text: err instanceof Error ? err.message : String(err) });
      return false;
    } finally {
      setBusy(false);
    }
  }

  return { message, busy, run };
}

export function ActionNotice({ message, testId }: { message: ActionMessage; testId: string }) {
  if (!message) return null;
  return (
    <p className={`notice ${message.kind}`} role={message.kind === "error" ? "alert" : "status"} data-testid={testId}>
      {message.text}
    </p>
  );
}
