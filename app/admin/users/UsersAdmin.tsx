"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Fragment, useState, type FormEvent } from "react";
import { ActionNotice, useAction } from "@/components/client/use-action";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { When } from "@/components/time/When";
import { ROLE_DESCRIPTIONS, ROLES, type Role } from "@/lib/auth/permissions";
import type { SessionView } from "@/lib/auth/sessions";
import type { UserView } from "@/lib/auth/users";

type Kind = "roles" | "disable" | "enable" | "sessions";
type Pending = { userId: string; kind: Kind } | null;

/** Users: list, invite, change roles, disable/enable — every change with a reason, through /api/v1/users. */
export function UsersAdmin({ initialUsers, currentUserId }: { initialUsers: UserView[]; currentUserId: string }) {
  const client = useQueryClient();
  // The page renders the list on the server; the query takes over from there and is reloaded after each change.
  const { data: users } = useQuery({
    queryKey: queryKeys.users.list,
    queryFn: () => apiFetch<{ users: UserView[] }>("/api/v1/users").then((r) => r.users),
    initialData: initialUsers,
    retry: retryUnlessClientError,
  });
  const [pending, setPending] = useState<Pending>(null);
  const { message, busy, run } = useAction(() => client.invalidateQueries({ queryKey: queryKeys.users.all }));

  return (
    <>
      <ActionNotice message={message} testId="users-message" />

      <InviteForm busy={busy} run={run} />

      <h2 className="section-title">Users</h2>
      <table className="admin-table stack-table" data-testid="users-table">
        <thead>
          <tr>
            <th>User</th>
            <th>Roles</th>
            <th>Status</th>
            <th>Sign-in</th>
            <th>Last sign-in</th>
            <th aria-label="Actions" />
          </tr>
        </thead>
        <tbody>
          {users.map((u) => {
            const self = u.id === currentUserId;
            const open = pending?.userId === u.id ? pending : null;
            return (
              <Fragment key={u.id}>
                <tr data-testid={`user-row-${u.email}`}>
                  <td data-label="User">
                    <div>{u.email}</div>
                    {u.name && <div className="subtle">{u.name}</div>}
                    {self && <div className="subtle">(you)</div>}
                  </td>
                  <td data-label="Roles">
                    {u.roles.map((r) => (
                      <span key={r} className="role-badge" title={ROLE_DESCRIPTIONS[r]}>
                        {r}
                      </span>
                    ))}
                  </td>
                  <td data-label="Status">
                    <span className={`status-badge ${u.disabled ? "off" : "on"}`} data-testid="user-status">
                      {u.disabled ? "disabled" : "active"}
                    </span>
                  </td>
                  <td data-label="Sign-in" className="subtle">
                    {[u.hasPassword && "password", u.sso && "SSO"].filter(Boolean).join(", ") || "not set up"}
                  </td>
                  <td data-label="Last sign-in" className="subtle nowrap">
                    <When iso={u.lastSignInAt} fallback="never" />
                    {u.activeSessions ? (
                      <div data-testid="user-sessions">
                        {u.activeSessions} active session{u.activeSessions === 1 ? "" : "s"}
                      </div>
                    ) : null}
                  </td>
                  <td data-label="Actions">
                    <div className="row-actions">
                      <button type="button" disabled={busy} onClick={() => setPending({ userId: u.id, kind: "roles" })}>
                        Change roles
                      </button>
                      <button type="button" disabled={busy} onClick={() => setPending({ userId: u.id, kind: "sessions" })}>
                        Sessions
                      </button>
                      {u.disabled ? (
                        <button type="button" disabled={busy} onClick={() => setPending({ userId: u.id, kind: "enable" })}>
                          Enable
                        </button>
                      ) : (
                        <button
                          type="button"
                          disabled={busy || self}
                          title={self ? "You cannot disable yourself" : undefined}
                          onClick={() => setPending({ userId: u.id, kind: "disable" })}
                        >
                          Disable
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
                {open && (
                  <tr className="action-row">
                    <td colSpan={6}>
                      {open.kind === "sessions" ? (
                        <SessionsForm
                          user={u}
                          busy={busy}
                          onCancel={() => setPending(null)}
                          onSubmit={async (reason) => {
                            const ok = await run(async () => {
                              const res = await apiFetch<{ revoked: number }>(`/api/v1/users/${u.id}/sessions`, { method: "DELETE", body: { reason } });
                              return `Signed ${u.email} out everywhere: ${res.revoked} session${res.revoked === 1 ? "" : "s"} ended.`;
                            });
                            if (ok) setPending(null);
                          }}
                        />
                      ) : (
                        <UserActionForm
                          user={u}
                          kind={open.kind}
                          busy={busy}
                          onCancel={() => setPending(null)}
                          onSubmit={async (body, done) => {
                            const ok = await run(async () => {
                              const res = await apiFetch<{ user: UserView; noop: boolean }>(`/api/v1/users/${u.id}`, { method: "PATCH", body });
                              const what = open.kind === "roles" ? `roles of ${u.email} set to ${res.user.roles.join(", ")}` : `${u.email} ${open.kind}d`;
                              return res.noop ? `Nothing to change: ${what} already.` : `Done: ${what}.`;
                            });
                            if (ok) {
                              done();
                              setPending(null);
                            }
                          }}
                        />
                      )}
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

function RoleChecks({ value, onChange, name }: { value: Role[]; onChange: (roles: Role[]) => void; name: string }) {
  return (
    <fieldset className="checks">
      <legend>Roles</legend>
      {ROLES.map((r) => (
        <label key={r} title={ROLE_DESCRIPTIONS[r]}>
          <input
            type="checkbox"
            name={name}
            value={r}
            checked={value.includes(r)}
            onChange={(e) => onChange(e.target.checked ? [...value, r] : value.filter((x) => x !== r))}
          />{" "}
          {r} <span className="subtle">— {ROLE_DESCRIPTIONS[r]}</span>
        </label>
      ))}
    </fieldset>
  );
}

function InviteForm({ busy, run }: { busy: boolean; run: (action: () => Promise<string>) => Promise<boolean> }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [roles, setRoles] = useState<Role[]>(["viewer"]);
  const [password, setPassword] = useState("");
  const [reason, setReason] = useState("");

  async function submit(e: FormEvent) {
    e.preventDefault();
    const ok = await run(async () => {
      const { user } = await apiFetch<{ user: UserView }>("/api/v1/users", {
        method: "POST",
        body: { email, name: name || undefined, roles, password: password || undefined, reason },
      });
      return `Invited ${user.email} as ${user.roles.join(", ")}${user.hasPassword ? "" : " (no password: single sign-on, or set one later)"}.`;
    });
    if (ok) {
      setEmail("");
      setName("");
      setPassword("");
      setReason("");
      setRoles(["viewer"]);
    }
  }

  return (
    <form className="panel form-grid" onSubmit={submit} data-testid="invite-form">
      <h2>Invite a user</h2>
      <label>
        Email
        <input type="email" name="email" required maxLength={254} autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
      </label>
      <label>
        Name <span className="subtle">(optional)</span>
        <input type="text" name="name" maxLength={200} autoComplete="off" value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <RoleChecks name="invite-roles" value={roles} onChange={setRoles} />
      <label>
        Initial password <span className="subtle">(optional, 12–200 characters; leave empty for single sign-on)</span>
        <input
          type="password"
          name="password"
          minLength={12}
          maxLength={200}
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
      </label>
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" name="reason" required minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <div>
        <button type="submit" disabled={busy || roles.length === 0}>
          Invite
        </button>
      </div>
    </form>
  );
}

function UserActionForm({
  user,
  kind,
  busy,
  onCancel,
  onSubmit,
}: {
  user: UserView;
  kind: Exclude<Kind, "sessions">;
  busy: boolean;
  onCancel: () => void;
  onSubmit: (body: { roles?: Role[]; disabled?: boolean; reason: string }, done: () => void) => Promise<void>;
}) {
  const [roles, setRoles] = useState<Role[]>(user.roles);
  const [reason, setReason] = useState("");
  const title = kind === "roles" ? `Change the roles of ${user.email}` : `${kind === "disable" ? "Disable" : "Enable"} ${user.email}`;
  return (
    <form
      className="form-grid"
      data-testid="user-action-form"
      onSubmit={(e) => {
        e.preventDefault();
        void onSubmit(kind === "roles" ? { roles, reason } : { disabled: kind === "disable", reason }, () => setReason(""));
      }}
    >
      <strong>{title}</strong>
      {kind === "roles" && <RoleChecks name={`roles-${user.id}`} value={roles} onChange={setRoles} />}
      {kind === "disable" && <p className="subtle">Their sessions and API tokens stop working at once; enabling them again restores unrevoked tokens.</p>}
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" name="reason" required minLength={3} maxLength={2000} autoFocus value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <div className="row-actions">
        <button type="submit" disabled={busy || (kind === "roles" && roles.length === 0)}>
          {kind === "roles" ? "Save roles" : kind === "disable" ? "Disable user" : "Enable user"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** A user's live sessions and "Sign out everywhere" (GET / DELETE /api/v1/users/{id}/sessions). */
function SessionsForm({
  user,
  busy,
  onCancel,
  onSubmit,
}: {
  user: UserView;
  busy: boolean;
  onCancel: () => void;
  onSubmit: (reason: string) => Promise<void>;
}) {
  const query = useQuery({
    queryKey: queryKeys.users.sessions(user.id),
    queryFn: () => apiFetch<{ sessions: SessionView[] }>(`/api/v1/users/${user.id}/sessions`).then((r) => r.sessions),
    // Read afresh each time the form opens: sessions come and go by the minute.
    staleTime: 0,
    retry: retryUnlessClientError,
  });
  const sessions = query.data ?? null;
  const error = query.error?.message ?? null;
  const [reason, setReason] = useState("");
  return (
    <form
      className="form-grid"
      data-testid="sessions-form"
      onSubmit={(e) => {
        e.preventDefault();
        void onSubmit(reason);
      }}
    >
      <strong>Active sessions of {user.email}</strong>
      {error && <p role="alert">{error}</p>}
      {sessions === null && !error && <p className="subtle">Loading…</p>}
      {sessions?.length === 0 && <p className="subtle">No active session.</p>}
      {sessions && sessions.length > 0 && (
        <table className="admin-table" data-testid="sessions-table">
          <thead>
            <tr>
              <th>Signed in</th>
              <th>Last seen</th>
              <th>How</th>
              <th>From</th>
              <th>Ends</th>
            </tr>
          </thead>
          <tbody>
            {sessions.map((s) => (
              <tr key={s.id}>
                <td className="nowrap">
                  <When iso={s.createdAt} />
                </td>
                <td className="nowrap">
                  <When iso={s.lastSeenAt} />
                </td>
                <td>{s.method === "sso" ? `single sign-on${s.provider ? ` (${s.provider})` : ""}` : "password"}</td>
                <td>
                  {s.ip ?? "—"}
                  {s.userAgent && <div className="subtle">{s.userAgent.slice(0, 80)}</div>}
                </td>
                <td className="nowrap">
                  <When iso={s.expiresAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" name="reason" required minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <div className="row-actions">
        <button type="submit" disabled={busy || !sessions?.length}>
          Sign out everywhere
        </button>
        <button type="button" onClick={onCancel}>
          Close
        </button>
      </div>
    </form>
  );
}
