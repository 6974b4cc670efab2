"use client";

import { useEffect, useState } from "react";

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
          const res = await fetch("/api/v1/session", { method: "DELETE", credentials: "same-origin", cache: "no-store" });
          const body = (await res.json().catch(() => null)) as { redirectTo?: unknown } | null;
          if (res.ok && typeof body?.redirectTo === "string") target = body.redirectTo;
        } finally {
          window.location.assign(target);
        }
      }}
    >
      Sign out
    </button>
  );
}
