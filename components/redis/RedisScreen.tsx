"use client";

import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { Chart } from "@/components/charts/Chart";
import { ApiError, apiFetch, newIdempotencyKey, retryUnlessClientError } from "@/components/client/api";
import { ScrollBox } from "@/components/ScrollBox";
import { queryKeys } from "@/components/client/query-keys";
import { EmptyState, ErrorState, fmtDuration, fmtInt, When, SkeletonBlock, SkeletonRows, Stat, Tabs, useNow, useUrlFilters } from "@/components/queue/read-ui";
import { BULK_RELEASE_LIMIT, releaseConfirmation } from "@/lib/redis/confirm";
import type { Jsonified } from "@/lib/api/json";
import type { KeyLookupResult } from "@/lib/redis/lookup";
import type { BulkReleaseOutcome, BulkReleaseResult } from "@/lib/redis/release";
import type { storeCensus, storeWedged } from "@/lib/redis/views";
import type { RedisStoreJson, StoresJson } from "./types";

/**
 * Redis key stores: per store, the latest census (keys by state and stored HTTP status,
 * TTL histogram, flags), the wedged keys oldest first with how long each keeps refusing
 * retries — released one by one or in bulk with a typed confirmation — the keys expiring
 * soonest, and key lookup (exact or prefix) with the stored response masked as for records.
 */

type CensusJson = Jsonified<Awaited<ReturnType<typeof storeCensus>>>;

type WedgedJson = Jsonified<Awaited<ReturnType<typeof storeWedged>>>;

const FILTER_KEYS = ["store"] as const;
const secs = (s: number | null, never = "never expires") => (s === null ? never : fmtDuration(s));

export function RedisScreen({ canReadKeys, canRelease }: { canReadKeys: boolean; canRelease: boolean }) {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const stores = useQuery({ queryKey: queryKeys.redis.stores, queryFn: () => apiFetch<StoresJson>("/api/v1/redis/stores"), retry: retryUnlessClientError });
  if (stores.isError && !stores.data) return <ErrorState error={stores.error} onRetry={() => void stores.refetch()} />;
  if (!stores.data) return <SkeletonRows cols={6} label="Loading the Redis key stores" />;
  const list = stores.data.stores;
  if (list.length === 0) {
    return (
      <EmptyState title="No Redis key store is configured." testId="redis-none">
        Set <code>REDIS_URL</code> (and <code>REDIS_KEY_PATTERN</code>, <code>REDIS_KEY_TTL_SECONDS</code>) or <code>REDIS_STORES</code>; see the README, “Redis
        key stores”.
      </EmptyState>
    );
  }
  const current = list.find((s) => s.store.name === f.store) ?? list[0];
  return (
    <div className="rs-screen" data-testid="redis-screen">
      {list.length > 1 ? (
        <Tabs
          label="Redis key store"
          value={current.store.name}
          onChange={(v) => setFilters({ store: v === list[0].store.name ? undefined : v })}
          tabs={list.map((s) => ({ value: s.store.name, label: s.store.name }))}
        />
      ) : null}
      <div id="tabpanel" role={list.length > 1 ? "tabpanel" : undefined} aria-labelledby={list.length > 1 ? `tab-${current.store.name}` : undefined}>
        <StorePanel key={current.store.name} store={current.store} canReadKeys={canReadKeys} canRelease={canRelease} />
      </div>
    </div>
  );
}

function StorePanel({ store, canReadKeys, canRelease }: { store: RedisStoreJson; canReadKeys: boolean; canRelease: boolean }) {
  const now = useNow();
  const qc = useQueryClient();
  // The next census fetch takes a new census (the button, or after a release); other fetches read the latest.
  const refreshNext = useRef(false);
  const census = useQuery({
    queryKey: queryKeys.redis.census(store.name),
    queryFn: () => {
      const fresh = refreshNext.current;
      refreshNext.current = false;
      return apiFetch<CensusJson>(`/api/v1/redis/stores/${encodeURIComponent(store.name)}/census${fresh ? "?refresh=true" : ""}`);
    },
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const reload = async () => {
    refreshNext.current = true;
    await qc.refetchQueries({ queryKey: queryKeys.redis.census(store.name) });
    await qc.invalidateQueries({ queryKey: queryKeys.redis.wedged(store.name) });
    await qc.invalidateQueries({ queryKey: queryKeys.redis.stores });
  };
  const c = census.data?.census;

  return (
    <>
      <div className="rs-filters" role="group" aria-label="Census">
        <p className="subtle" data-testid="redis-store-info">
          <code>{store.pattern}</code> on {store.url} · format <strong>{store.format}</strong> ({store.library}) · TTL {fmtDuration(store.ttlSeconds)} · wedged
          after {store.wedgedAfter}
        </p>
        <div className="rs-filter-actions">
          <button type="button" onClick={() => void reload()} disabled={census.isFetching} data-testid="redis-refresh">
            {census.isFetching ? "Taking a census…" : "New census"}
          </button>
          {c ? (
            <span className="subtle" data-testid="redis-taken-at">
              census taken <When iso={c.takenAt} now={now} /> · {fmtInt(c.scanned)} keys in {fmtDuration(c.durationMs / 1000)} ({fmtInt(c.keysPerSecond)}{" "}
              keys/s)
            </span>
          ) : null}
        </div>
      </div>
      {census.isError ? <ErrorState error={census.error} onRetry={() => void reload()} /> : null}
      {!c ? (
        census.isError ? null : (
          <SkeletonBlock height={120} label="Taking a census of the store" />
        )
      ) : (
        <>
          <section className="cards" aria-label="Keys by state">
            <Stat label="Processing" value={<span data-testid="redis-processing">{fmtInt(c.records.processing)}</span>} />
            <Stat label="Completed" value={<span data-testid="redis-completed">{fmtInt(c.records.completed)}</span>} />
            <Stat
              label="Wedged"
              value={<span data-testid="redis-wedged">{fmtInt(c.wedged.count)}</span>}
              hint={`processing for longer than ${store.wedgedAfter}: every retry is refused`}
            />
            <Stat label="Cached 5xx answers" value={<span data-testid="redis-5xx">{fmtInt(c.cached5xx)}</span>} hint="replayed to every retry" />
            <Stat label="Expiring within 1 h" value={fmtInt(c.ttl.expiringWithin1h)} hint={`${fmtInt(c.ttl.expiringWithin24h)} within 24 h`} />
            <Stat
              label="Other keys (ignored)"
              value={<span data-testid="redis-unrecognised">{fmtInt(c.unrecognised)}</span>}
              hint="under the pattern, not records of the format"
            />
          </section>
          {c.flags.length ? (
            <section aria-label="Flags" data-testid="redis-flags">
              {c.flags.map((fl) => (
                <p key={fl.kind} className="notice error" data-flag={fl.kind}>
                  {fl.message}
                </p>
              ))}
            </section>
          ) : null}
          <div className="rs-two">
            <section aria-labelledby="status-h">
              <h2 id="status-h" className="section-title">
                Completed keys by stored HTTP status
              </h2>
              {c.byStatus.length === 0 ? (
                <EmptyState title="No completed key." />
              ) : (
                <div className="rs-table-wrap">
                  <table className="rs-table" data-testid="redis-by-status">
                    <thead>
                      <tr>
                        <th>Status</th>
                        <th className="num">Keys</th>
                      </tr>
                    </thead>
                    <tbody>
                      {c.byStatus.map((s) => (
                        <tr key={s.status} data-status={s.status}>
                          <td>
                            {s.status === "none" ? "not stored by this format" : s.status}
                            {Number(s.status) >= 500 ? <span className="rs-badge"> cached server error</span> : null}
                          </td>
                          <td className="num">{fmtInt(s.count)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </section>
            <section aria-labelledby="ttl-h">
              <h2 id="ttl-h" className="section-title">
                Remaining time to live
              </h2>
              <Chart
                kind="bar"
                rows={c.ttl.histogram.some((b) => b.count > 0) ? c.ttl.histogram.map((b) => ({ label: b.label, keys: b.count })) : []}
                x="label"
                series={[{ key: "keys", label: "keys" }]}
                title={`Keys by remaining TTL (${fmtInt(c.ttl.noExpiry)} never expire)`}
                yFormat={(v) => fmtInt(v)}
                testId="redis-ttl-histogram"
              />
              {c.ttl.noExpiry ? <p className="subtle">{fmtInt(c.ttl.noExpiry)} keys never expire.</p> : null}
            </section>
          </div>
          {canReadKeys ? <WedgedKeys store={store} canRelease={canRelease} onChanged={reload} /> : null}
        </>
      )}
      {canReadKeys ? <KeyLookup store={store} /> : null}
    </>
  );
}

function WedgedKeys({ store, canRelease, onChanged }: { store: RedisStoreJson; canRelease: boolean; onChanged: () => Promise<void> }) {
  const q = useQuery({
    queryKey: queryKeys.redis.wedged(store.name),
    queryFn: () => apiFetch<WedgedJson>(`/api/v1/redis/stores/${encodeURIComponent(store.name)}/wedged`),
    retry: retryUnlessClientError,
  });
  const [releasing, setReleasing] = useState<string[] | null>(null);
  if (q.isError) return <ErrorState error={q.error} onRetry={() => void q.refetch()} />;
  if (!q.data) return <SkeletonRows cols={4} label="Loading wedged keys" />;
  const w = q.data.wedged;
  return (
    <>
      <section aria-labelledby="wedged-h">
        <div className="toolbar">
          <h2 id="wedged-h" className="section-title">
            Wedged keys, oldest first
          </h2>
          {canRelease && w.count > 0 ? (
            <button type="button" data-testid="redis-release-all" onClick={() => setReleasing(w.oldest.slice(0, BULK_RELEASE_LIMIT).map((k) => k.key))}>
              Release {fmtInt(Math.min(w.count, BULK_RELEASE_LIMIT))} wedged…
            </button>
          ) : null}
        </div>
        {q.data.leaseExpired ? (
          <p className="subtle">
            {fmtInt(q.data.leaseExpired)} more are processing past their library&apos;s in-progress lease: the library takes them over on the next request.
          </p>
        ) : null}
        {w.count === 0 ? (
          <EmptyState title="No wedged key." testId="redis-wedged-empty">
            No key has been processing for longer than {store.wedgedAfter}.
          </EmptyState>
        ) : (
          <div className="rs-table-wrap">
            <table className="rs-table" data-testid="redis-wedged-table">
              <thead>
                <tr>
                  <th>Key</th>
                  <th>Processing for</th>
                  <th>Refuses retries for</th>
                  {canRelease ? <th /> : null}
                </tr>
              </thead>
              <tbody>
                {w.oldest.map((k) => (
                  <tr key={k.key} data-testid="redis-wedged-row" data-key={k.key}>
                    <td>
                      <code>{k.key}</code>
                    </td>
                    <td>{k.ageSeconds === null ? "unknown (no TTL)" : fmtDuration(k.ageSeconds)}</td>
                    <td>{secs(k.refusingForSeconds, "until released")}</td>
                    {canRelease ? (
                      <td>
                        <button type="button" data-testid="redis-release" onClick={() => setReleasing([k.key])}>
                          Release…
                        </button>
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
            {w.count > w.oldest.length ? (
              <p className="subtle">
                The {fmtInt(w.oldest.length)} oldest of {fmtInt(w.count)} are listed.
              </p>
            ) : null}
          </div>
        )}
      </section>
      <section aria-labelledby="expiring-h">
        <h2 id="expiring-h" className="section-title">
          Expiring soonest
        </h2>
        {q.data.expiringSoon.length === 0 ? (
          <EmptyState title="No key with a TTL." />
        ) : (
          <div className="rs-table-wrap">
            <table className="rs-table" data-testid="redis-expiring">
              <thead>
                <tr>
                  <th>Key</th>
                  <th>State</th>
                  <th>Expires in</th>
                </tr>
              </thead>
              <tbody>
                {q.data.expiringSoon.slice(0, 20).map((k) => (
                  <tr key={k.key}>
                    <td>
                      <code>{k.key}</code>
                    </td>
                    <td>{k.state}</td>
                    <td>{fmtDuration(k.ttlSeconds)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {releasing ? <ReleaseDialog store={store} keys={releasing} onClose={() => setReleasing(null)} onDone={onChanged} /> : null}
    </>
  );
}

/** What the dialog shows: POST …/release-bulk's answer (the server's type), or one key's release put the same way. */
type BulkAnswer = Pick<Jsonified<BulkReleaseResult>, "count" | "released" | "refused"> & { outcomes: Omit<Jsonified<BulkReleaseOutcome>, "auditId">[] };

/** One key: POST …/release; several: POST …/release-bulk with the typed confirmation. */
function ReleaseDialog({ store, keys, onClose, onDone }: { store: RedisStoreJson; keys: string[]; onClose: () => void; onDone: () => Promise<void> }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const bulk = keys.length > 1;
  const [expected, setExpected] = useState(releaseConfirmation(keys.length));
  const [typed, setTyped] = useState("");
  const [reason, setReason] = useState("");
  const [idem, setIdem] = useState(newIdempotencyKey);
  const [answer, setAnswer] = useState<BulkAnswer | null>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const base = `/api/v1/redis/stores/${encodeURIComponent(store.name)}`;
  const run = useMutation({
    mutationFn: async (): Promise<BulkAnswer> => {
      if (!bulk) {
        await apiFetch(`${base}/release`, { method: "POST", idempotencyKey: idem, body: { key: keys[0], reason: reason.trim() } });
        return { count: 1, released: 1, refused: 0, outcomes: [{ key: keys[0], released: true, error: null }] };
      }
      return apiFetch<BulkAnswer>(`${base}/release-bulk`, {
        method: "POST",
        idempotencyKey: idem,
        body: { keys, confirm: typed.trim(), reason: reason.trim() },
      });
    },
    onSuccess: async (a) => {
      setIdem(newIdempotencyKey());
      setAnswer(a);
      await onDone();
    },
    onError: (err) => {
      if (!(err instanceof ApiError && err.status === 0)) setIdem(newIdempotencyKey());
      const text = err instanceof ApiError ? err.problem?.expectedConfirmation : undefined;
      if (typeof text === "string") {
        setExpected(text);
        setTyped("");
      }
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run.mutate();
  };
  const ready = reason.trim().length >= 3 && (!bulk || typed.trim() === expected);
  return (
    <dialog ref={dialog} className="bulk-dialog" aria-labelledby="release-title" data-testid="redis-release-dialog" onClose={onClose}>
      <div className="bulk-body">
        <h2 id="release-title">{bulk ? `Release ${fmtInt(keys.length)} wedged keys` : "Release a wedged key"}</h2>
        {answer ? (
          <>
            <p className="notice ok" role="status" data-testid="redis-release-result">
              Released {fmtInt(answer.released)}
              {answer.refused ? `; ${fmtInt(answer.refused)} left in place` : ""}.
            </p>
            {answer.outcomes.some((o) => o.error) ? (
              <ul>
                {answer.outcomes
                  .filter((o) => o.error)
                  .map((o) => (
                    <li key={o.key}>
                      <code>{o.key}</code>: {o.error!.detail}
                    </li>
                  ))}
              </ul>
            ) : null}
            <div className="bulk-buttons">
              <button type="button" className="primary" onClick={onClose} data-testid="redis-release-close">
                Close
              </button>
            </div>
          </>
        ) : (
          <form onSubmit={submit} className="resolve-form" aria-label="Confirm the release">
            <p>
              {bulk ? (
                "Each key is deleted"
              ) : (
                <>
                  The key <code>{keys[0]}</code> is deleted
                </>
              )}{" "}
              only if it still holds <code>processing</code> and is still older than {store.wedgedAfter} (one atomic script in Redis): a key that completed
              meanwhile is left in place. The client&apos;s next retry then runs the operation again — make sure the crashed attempt had no effect, or reconcile
              it first. Audited with your reason.
            </p>
            <label>
              Reason
              <input
                type="text"
                data-testid="redis-release-reason"
                value={reason}
                onChange={(e) => setReason(e.target.value)}
                minLength={3}
                maxLength={2000}
                required
                autoFocus
              />
            </label>
            {bulk ? (
              <label>
                <span>
                  Type <code data-testid="redis-release-expected">{expected}</code> to confirm
                </span>
                <input
                  type="text"
                  data-testid="redis-release-confirm"
                  value={typed}
                  onChange={(e) => setTyped(e.target.value)}
                  autoComplete="off"
                  spellCheck={false}
                />
              </label>
            ) : null}
            {run.isError ? (
              <p className="notice error" role="alert" data-testid="redis-release-error">
                {run.error.message}
              </p>
            ) : null}
            <div className="bulk-buttons">
              <button type="submit" className="primary" data-testid="redis-release-submit" disabled={run.isPending || !ready}>
                {run.isPending ? "Releasing…" : "Release"}
              </button>
              <button type="button" onClick={onClose} disabled={run.isPending}>
                Cancel
              </button>
            </div>
          </form>
        )}
      </div>
    </dialog>
  );
}

function KeyLookup({ store }: { store: RedisStoreJson }) {
  const [mode, setMode] = useState<"key" | "prefix">("key");
  const [text, setText] = useState("");
  const [asked, setAsked] = useState<{ mode: "key" | "prefix"; text: string } | null>(null);
  const q = useQuery({
    queryKey: queryKeys.redis.lookup(store.name, asked ?? {}),
    queryFn: () =>
      apiFetch<Jsonified<KeyLookupResult>>(`/api/v1/redis/stores/${encodeURIComponent(store.name)}/keys?${asked!.mode}=${encodeURIComponent(asked!.text)}`),
    enabled: asked !== null,
    retry: retryUnlessClientError,
  });
  return (
    <section aria-labelledby="lookup-h">
      <h2 id="lookup-h" className="section-title">
        Key lookup
      </h2>
      <form
        className="rs-filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (text.trim()) setAsked({ mode, text: text.trim() });
        }}
      >
        <label>
          Match
          <select value={mode} onChange={(e) => setMode(e.target.value as "key" | "prefix")} data-testid="redis-lookup-mode">
            <option value="key">exact key</option>
            <option value="prefix">prefix</option>
          </select>
        </label>
        <label>
          Key
          <input
            type="search"
            value={text}
            onChange={(e) => setText(e.target.value)}
            placeholder={store.pattern.replace(/\*.*$/, "") + "…"}
            maxLength={1024}
            data-testid="redis-lookup-input"
          />
        </label>
        <button type="submit" className="primary" data-testid="redis-lookup-submit">
          Look up
        </button>
      </form>
      {q.isError ? <ErrorState error={q.error} /> : null}
      {q.data ? (
        q.data.keys.length === 0 ? (
          <EmptyState title="No key found." testId="redis-lookup-empty">
            {q.data.unrecognised ? `${fmtInt(q.data.unrecognised)} keys matched that are not records of this store's format.` : null}
          </EmptyState>
        ) : (
          <div className="rs-table-wrap">
            <table className="rs-table" data-testid="redis-lookup-results">
              <thead>
                <tr>
                  <th>Key</th>
                  <th>State</th>
                  <th>Status</th>
                  <th>TTL</th>
                  <th>Age</th>
                  <th>Fingerprint</th>
                  <th>Stored response</th>
                </tr>
              </thead>
              <tbody>
                {q.data.keys.map((k) => (
                  <tr key={k.key} data-testid="redis-lookup-row" data-state={k.state}>
                    <td>
                      <code>{k.key}</code>
                    </td>
                    <td>
                      {k.state}
                      {k.stateValue && k.stateValue !== k.state && k.stateValue !== "result" ? <span className="subtle"> ({k.stateValue})</span> : null}
                      {k.wedged ? <span className="rs-badge"> wedged: refuses retries for {secs(k.refusingForSeconds, "ever")}</span> : null}
                      {k.leaseExpired ? <span className="rs-badge"> lease ended</span> : null}
                    </td>
                    <td>
                      {k.httpStatus ?? "—"}
                      {k.cached5xx ? <span className="rs-badge"> cached 5xx</span> : null}
                    </td>
                    <td>{secs(k.ttlSeconds)}</td>
                    <td>{k.ageSeconds === null ? "—" : fmtDuration(k.ageSeconds)}</td>
                    <td>{k.fingerprint ? <code>{k.fingerprint.slice(0, 16)}</code> : <span className="subtle">none</span>}</td>
                    <td>
                      {!k.response ? (
                        <span className="subtle">—</span>
                      ) : k.response.access === "none" ? (
                        <span className="subtle">withheld (needs records.read_body)</span>
                      ) : (
                        <ScrollBox as="pre" className="rs-pre" label="Stored response" testId="redis-lookup-body">
                          {k.response.body}
                        </ScrollBox>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {!q.data.complete && q.data.mode === "prefix" ? <p className="subtle">Stopped before the whole keyspace was searched: narrow the prefix.</p> : null}
          </div>
        )
      ) : null}
    </section>
  );
}
