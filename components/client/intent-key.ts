"use client";

import { useRef } from "react";
import { ApiError, newIdempotencyKey } from "./api";

/**
 * One Idempotency-Key per user intent: the same submission (same body) sent again
 * after a network error or a 5xx reuses its key (the server replays or finishes the
 * first attempt); a changed body, or a new submission after a definite answer, gets
 * a new key.
 */
export function useIntentKey() {
  const current = useRef<{ key: string; body: string } | null>(null);
  return {
    keyFor(body: unknown): string {
      const text = JSON.stringify(body);
      if (!current.current || current.current.body !== text) current.current = { key: newIdempotencyKey(), body: text };
      return current.current.key;
    },
    /** After an answer: keep the key only when the outcome is unknown (no answer, or a server error). */
    settle(err?: unknown) {
      if (err instanceof ApiError && (err.status === 0 || err.status >= 500)) return;
      current.current = null;
    },
  };
}
