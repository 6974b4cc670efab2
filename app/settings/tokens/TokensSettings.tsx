"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Fragment, useState, type FormEvent } from "react";
import { ActionNotice, useAction } from "@/components/client/use-action";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { formatInstant } from "@/lib/time/format";
import { useTimeZone, When } from "@/components/time/When";
import type { TokenView } from "@/lib/auth/token-admin";

export interface ScopeChoice {
  permission: string;
  description: string;
}

/** One's own API tokens: list, create (the plaintext is shown once), revoke — through /api/v1/tokens. */
export function TokensSettings({ initialTokens, scopes }: { initialTokens: TokenView[]; scopes: ScopeChoice[] }) {
  const client = useQueryClient();
  // The page renders the list on the server; the query takes over from there and is reloaded after each change.
  const { data: tokens } = useQuery({
    queryKey: queryKeys.tokens.all,
    queryFn: () => apiFetch<{ tokens: TokenView[] }>("/api/v1/tokens").then((r) => r.tokens),
    initialData: initialTokens,
    retry: retryUnlessClientError,
  });
  const [created, setCreated] = useState<{ token: string; name: string } | null>(null);
  const [revoking, setRevoking] = useState<string | null>(null);
  const timeZone = useTimeZone();

  const { message, busy, run } = useAction(() => client.invalidateQueries({ queryKey: queryKeys.tokens.all }));

  return (
    <>
      <ActionNotice message={message} testId="tokens-message" />

      {created && <TokenOnce token={created.token} name={created.name} onDone={() => setCreated(null)} />}

      <CreateTokenForm
        busy={busy}
        scopes={scopes}
        onCreate={(body) =>
          run(async () => {
            const res = await apiFetch<{ token: string; apiToken: TokenView; notice?: string }>("/api/v1/tokens", { method: "POST", body });
            setCreated({ token: res.token, name: res.apiToken.name });
            return `Created the token “${res.apiToken.name}”, valid until ${formatInstant(res.apiToken.expiresAt, timeZone)}.${res.notice ? ` ${res.notice}` : ""}`;
          })
        }
      />

      <h2 className="section-title">Your tokens</h2>
      {tokens.length === 0 ? (
        <p className="subtle" data-testid="tokens-empty">
          You have no API tokens yet.
        </p>
      ) : (
        <table className="admin-table stack-table" data-testid="tokens-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Token</th>
              <th>Scopes</th>
              <th>Created</th>
              <th>Expires</th>
              <th>Last used</th>
              <th>Status</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {tokens.map((t) => (
              <Fragment key={t.id}>
                <tr data-testid={`token-row-${t.id}`}>
                  <td data-label="Name">{t.name}</td>
                  <td data-label="Token">
                    <code>{t.prefix}</code>
                  </td>
                  <td data-label="Scopes">
                    {t.scopes.map((s) => (
                      <span key={s} className="role-badge">
                        {s}
                      </span>
                    ))}
                  </td>
                  <td data-label="Created" className="subtle nowrap">
                    <When iso={t.createdAt} />
                  </td>
                  <td data-label="Expires" className="subtle nowrap">
                    <When iso={t.expiresAt} />
                  </td>
                  <td data-label="Last used" className="subtle nowrap">
                    <When iso={t.lastUsedAt} fallback="never" />
                  </td>
                  <td data-label="Status">
                    <span className={`status-badge ${t.status === "active" ? "on" : "off"}`} data-testid="token-status">
                      {t.status === "revoked" ? (
                        <>
                          revoked <When iso={t.revokedAt} />
                        </>
                      ) : (
                        t.status.replace("_", " ")
                      )}
                    </span>
                  </td>
                  <td data-label="Actions">
                    <div className="row-actions">
                      {!t.revokedAt && (
                        <button type="button" disabled={busy} onClick={() => setRevoking(t.id)}>
                          Revoke
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
                {revoking === t.id && (
                  <tr className="action-row">
                    <td colSpan={8}>
                      <RevokeForm
                        token={t}
                        busy={busy}
                        onCancel={() => setRevoking(null)}
                        onRevoke={async (reason) => {
                          const ok = await run(async () => {
                            const res = await apiFetch<{ noop: boolean }>(`/api/v1/tokens/${t.id}`, { method: "DELETE", body: { reason } });
                            return res.noop ? `“${t.name}” was already revoked.` : `Revoked “${t.name}”: it no longer works.`;
                          });
                          if (ok) setRevoking(null);
                        }}
                      />
                    </td>
                  </tr>
                )}
              </Fragment>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function TokenOnce({ token, name, onDone }: { token: string; name: string; onDone: () => void }) {
  const [copied, setCopied] = useState<"no" | "yes" | "failed">("no");
  return (
    <section className="token-once" data-testid="token-once" aria-live="polite">
      <strong>Your new token “{name}”</strong>
      <p className="warning">
        Copy it now and keep it somewhere safe: this is the only time it is shown. The console stores only a hash and cannot show it again — if you lose it,
        revoke it and create a new one.
      </p>
      <div className="token-value-row">
        <code data-testid="token-value">{token}</code>
        <button
          type="button"
          onClick={() =>
            navigator.clipboard
              .writeText(token)
              .then(() => setCopied("yes"))
              .catch(() => setCopied("failed"))
          }
        >
          {copied === "yes" ? "Copied" : "Copy"}
        </button>
      </div>
      {copied === "failed" && <p className="subtle">The browser refused clipboard access: select the token and copy it by hand.</p>}
      <p className="subtle">
        Use it as <code>Authorization: Bearer &lt;token&gt;</code>.
      </p>
      <button type="button" onClick={onDone}>
        I have stored it
      </button>
    </section>
  );
}

function CreateTokenForm({
  busy,
  scopes,
  onCreate,
}: {
  busy: boolean;
  scopes: ScopeChoice[];
  onCreate: (body: { name: string; scopes: string[]; expiresInDays: number; reason: string }) => Promise<boolean>;
}) {
  const [name, setName] = useState("");
  const [chosen, setChosen] = useState<string[]>([]);
  const [days, setDays] = useState("90");
  const [reason, setReason] = useState("");

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (await onCreate({ name, scopes: chosen, expiresInDays: Number(days), reason })) {
      setName("");
      setChosen([]);
      setDays("90");
      setReason("");
    }
  }

  return (
    <form className="panel form-grid" onSubmit={submit} data-testid="token-form">
      <h2>Create a token</h2>
      <label>
        Name <span className="subtle">(what uses it, e.g. “reconcile job”)</span>
        <input type="text" name="name" required maxLength={100} autoComplete="off" value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <fieldset className="checks">
        <legend>
          Scopes <span className="subtle">(at most your own permissions; pick the fewest that do the job)</span>
        </legend>
        {scopes.map((s) => (
          <label key={s.permission}>
            <input
              type="checkbox"
              name="scopes"
              value={s.permission}
              checked={chosen.includes(s.permission)}
              onChange={(e) => setChosen(e.target.checked ? [...chosen, s.permission] : chosen.filter((x) => x !== s.permission))}
            />{" "}
            <code>{s.permission}</code> <span className="subtle">— {s.description}</span>
          </label>
        ))}
      </fieldset>
      <label>
        Expires after (days, 1–365)
        <input type="number" name="expiresInDays" required min={1} max={365} step={1} value={days} onChange={(e) => setDays(e.target.value)} />
      </label>
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" name="reason" required minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <div>
        <button type="submit" disabled={busy || chosen.length === 0}>
          Create token
        </button>
      </div>
    </form>
  );
}

function RevokeForm({
  token,
  busy,
  onCancel,
  onRevoke,
}: {
  token: TokenView;
  busy: boolean;
  onCancel: () => void;
  onRevoke: (reason: string) => Promise<void>;
}) {
  const [reason, setReason] = useState("");
  return (
    <form
      className="form-grid"
      data-testid="revoke-form"
      onSubmit={(e) => {
        e.preventDefault();
        void onRevoke(reason);
      }}
    >
      <strong>
        Revoke “{token.name}” ({token.prefix})
      </strong>
      <p className="subtle">Anything using it is refused from now on. This cannot be undone.</p>
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" name="reason" required minLength={3} maxLength={2000} autoFocus value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <div className="row-actions">
        <button type="submit" disabled={busy}>
          Revoke token
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
