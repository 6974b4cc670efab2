import type { Access } from "@/lib/auth/permissions";

/** What a page shows to a signed-in user whose roles lack its permission. */
export function Forbidden({ access }: { access: Access }) {
  return (
    <div className="error-box" data-testid="forbidden">
      <h1>Not permitted</h1>
      <p>
        This page needs the permission <code>{access}</code>, which your roles do not grant. Ask an admin if you need it.
      </p>
    </div>
  );
}
