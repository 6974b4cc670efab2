/**
 * THE permissions table: every role, every permission, in one place. Route
 * handlers, server code and the UI all ask `can()`; nothing else decides access.
 */
export const PERMISSIONS = {
  "stats.read": "See the overview, metrics and charts",
  "records.read": "Read records, events and reconciliation items (no response bodies)",
  "records.read_body": "Read stored responses (sensitive fields masked)",
  "records.reveal": "Reveal masked fields (every reveal is audited)",
  "records.export": "Export lists as CSV",
  "records.reconcile": "Ask the provider and resolve accordingly",
  "records.resolve": "Resolve pending or stuck records by hand",
  "compensations.request": "Request a refund, void or cancel",
  "compensations.approve": "Approve or reject someone else's compensation",
  "purges.run": "Dry-run and run retention purges",
  "legal_holds.manage": "Set and lift legal holds",
  "alerts.acknowledge": "Acknowledge insight alerts (each acknowledgement is audited)",
  "retention.manage": "Edit retention policies",
  "audit.read": "Read the audit log and verify its chain",
  "audit.export": "Export the audit log",
  "users.manage": "Invite and disable users, change roles",
  "tokens.manage": "Create and revoke API tokens for any user",
  "tokens.own": "Create and revoke one's own API tokens",
} as const;

export type Permission = keyof typeof PERMISSIONS;
export const ALL_PERMISSIONS = Object.keys(PERMISSIONS) as Permission[];

export const ROLES = ["viewer", "support", "operator", "approver", "admin"] as const;
export type Role = (typeof ROLES)[number];

const everyone: Permission[] = ["stats.read", "records.read", "tokens.own"];

export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  /** Engineers: metrics and records, no response bodies. */
  viewer: everyone,
  /** Support: read everything, reveal masked fields, export. */
  support: [...everyone, "records.read_body", "records.reveal", "records.export", "audit.read", "audit.export"],
  /** Operators: reconcile, resolve, request compensation, run purges. */
  operator: [
    ...everyone,
    "records.read_body",
    "records.reconcile",
    "records.resolve",
    "compensations.request",
    "purges.run",
    "legal_holds.manage",
    "alerts.acknowledge",
  ],
  /** Approvers: the second pair of eyes on compensations. */
  approver: [...everyone, "records.read_body", "compensations.approve"],
  /** Admins: users, roles, tokens, retention policies. */
  admin: [...everyone, "users.manage", "tokens.manage", "retention.manage", "audit.read", "audit.export", "alerts.acknowledge"],
};

export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  viewer: "Engineer: metrics and records, no response bodies",
  support: "Support: read everything, reveal masked fields, export",
  operator: "Operator: reconcile, resolve, compensate, purge, acknowledge alerts",
  approver: "Approver: approves compensations",
  admin: "Admin: users, roles, tokens, retention policies",
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function isPermission(value: string): value is Permission {
  return value in PERMISSIONS;
}

/** The union of the permissions of the given roles (a user may hold several). */
export function permissionsOf(roles: readonly string[]): Set<Permission> {
  return new Set(roles.filter(isRole).flatMap((r) => ROLE_PERMISSIONS[r]));
}

/** Who is asking: a signed-in user, or an API token acting for its user. */
export interface Principal {
  kind: "user" | "token";
  userId: bigint;
  email: string;
  roles: Role[];
  /** For tokens: the token's scopes ∩ its user's current permissions. */
  permissions: ReadonlySet<Permission>;
  tokenId?: bigint;
  tokenName?: string;
  /** For a browser session: its console_sessions id (lib/auth/sessions.ts). */
  sessionId?: bigint;
}

/** Route access: a permission from the table, any signed-in principal, or public. */
export type Access = Permission | "signed_in" | "public";

export function can(principal: Pick<Principal, "permissions"> | null | undefined, access: Access): boolean {
  if (access === "public") return true;
  if (!principal) return false;
  if (access === "signed_in") return true;
  return principal.permissions.has(access);
}

/** The roles that grant a permission (roles are not cumulative: an admin is not an operator). */
export function rolesGranting(access: Access): Role[] {
  if (access === "public" || access === "signed_in") return [...ROLES];
  return ROLES.filter((r) => ROLE_PERMISSIONS[r].includes(access));
}

/** "the operator role", "the support or admin role": for refusals and disabled actions. */
export function whoCan(access: Access): string {
  const roles = rolesGranting(access);
  if (roles.length === 0) return "no role";
  if (roles.length === ROLES.length) return "every role";
  return `the ${roles.length === 1 ? roles[0] : `${roles.slice(0, -1).join(", ")} or ${roles[roles.length - 1]}`} role`;
}
