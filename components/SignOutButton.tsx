"use client";

import { signOut } from "next-auth/react";
import { useEffect, useState } from "react";

/** Ends the session (next-auth clears the cookie; the sign-out is audited) and goes to the login page. */
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
        try {
          await signOut({ redirect: false });
        } finally {
          window.location.assign("/login");
        }
      }}
    >
      Sign out
    </button>
  );
}
