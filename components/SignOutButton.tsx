"use client";

import { useEffect, useState } from "react";
import { apiFetch } from "@/components/client/api";

/**
 * Ends the session: DELETE /api/v1/session ends it in the database (a copy of the
 * cookie is refused from then on), audits it and deletes the cookie; then the
 * browser goes where the server says — the identity provider's logout page for a
 * single sign-on session (its session ends too), else the login page.
 */
export function SignOutButton() {
  const [pending, setPending] = useState(false);
  // Disabled until hydrated: a click before that would be lost.
  const [ready, setReady] = useState(false);
  useEffect(() => setReady(true), []);
  return (
    <button
      type="button"
      disabled={!ready || pending}
      onClick={async () => {
        setPending(true);
        let target = "/login";
        try {
          const body = await apiFetch<{ redirectTo?: unknown } | null>("/api/v1/session", { method: "DELETE" });
          if (typeof body?.redirectTo === "string") target = body.redirectTo;
        } catch {
          // Refused or unreachable: the login page all the same.
        } finally {
          window.location.assign(target);
        }
      }}
    >
      Sign out
    </button>
  );
}
