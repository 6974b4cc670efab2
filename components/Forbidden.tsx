import { currentPrincipal } from "@/components/server/page-auth";
import { PERMISSIONS, ROLE_DESCRIPTIONS, rolesGranting, whoCan, type Access } from "@/lib/auth/permissions";

/**
 * What a page shows to a signed-in user whose roles lack its permission: which role would
 * let them in (roles are not cumulative: each grants its own list), and whom to ask.
 */
export async function Forbidden({ access }: { access: Access }) {
  const principal = await currentPrincipal().catch(() => null);
  const roles = rolesGranting(access);
  const yours = principal?.roles.length ? principal.roles.join(", ") : "none";
  return (
    <div className="error-box forbidden" data-testid="forbidden">
      <h1>Not permitted</h1>
      <p>
        This page needs <strong>{whoCan(access)}</strong>
        {access in PERMISSIONS ? (
          <>
            {" "}
            (permission <code>{access}</code>: {PERMISSIONS[access as keyof typeof PERMISSIONS].toLowerCase()})
          </>
        ) : null}
        . Your roles: {yours}.
      </p>
      <ul className="forbidden-roles">
        {roles.map((r) => (
          <li key={r}>
            <strong>{r}</strong> — {ROLE_DESCRIPTIONS[r]}
          </li>
        ))}
      </ul>
      <p>
        Roles are not cumulative: each grants its own list, so an admin is not an operator. Ask an admin (Admin › Users) to add the role to your account.{" "}
        <a href="/">Back to the overview</a>
      </p>
    </div>
  );
}
