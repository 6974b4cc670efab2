"use client";

import type { SavedViewJson } from "@/lib/views/saved-views";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useSearchParams } from "next/navigation";
import { Suspense, useState, type FormEvent } from "react";
import { apiFetch, ApiError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";

/**
 * Saved views for any list page whose filters live in the URL:
 *
 *   <SavedViews page="/queue" />
 *
 * Lists the signed-in user's views of that page (GET /api/v1/views?page=), applies one
 * by navigating to `page?query`, saves the current URL query under a name (POST; on a
 * name clash it offers to replace), and deletes (DELETE /api/v1/views/{id}). Views are
 * private to their owner. The cursor is never saved (lib/views/saved-views.ts).
 */

/** The query as the server stores it: no empty values, no cursor, canonical encoding. */
function normalize(query: string): string {
  const out = new URLSearchParams();
  for (const [k, v] of new URLSearchParams(query)) if (v.trim() !== "" && k !== "cursor") out.append(k, v);
  return out.toString();
}

export function SavedViews(props: { page: string; label?: string }) {
  return (
    <Suspense fallback={<div className="saved-views" aria-busy="true" />}>
      <SavedViewsBar {...props} />
    </Suspense>
  );
}

function SavedViewsBar({ page, label = "Saved views" }: { page: string; label?: string }) {
  const searchParams = useSearchParams();
  const current = normalize(searchParams.toString());
  const client = useQueryClient();
  const key = queryKeys.savedViews.forPage(page);
  const views = useQuery({
    queryKey: key,
    queryFn: () => apiFetch<{ views: SavedViewJson[] }>(`/api/v1/views?page=${encodeURIComponent(page)}`).then((r) => r.views),
  });
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState("");
  const [clash, setClash] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);

  const save = useMutation({
    mutationFn: (input: { name: string; replace: boolean }) =>
      apiFetch<{ view: SavedViewJson; replaced: boolean }>("/api/v1/views", {
        method: "POST",
        body: { page, name: input.name, query: current, replace: input.replace },
      }),
    onSuccess: (r) => {
      setEditing(false);
      setClash(null);
      setName("");
      setMessage(r.replaced ? `Replaced "${r.view.name}".` : `Saved "${r.view.name}".`);
      void client.invalidateQueries({ queryKey: key });
    },
    onError: (err, input) => {
      if (err instanceof ApiError && err.status === 409 && /already have a view/.test(err.message)) setClash(input.name);
      else setMessage(err.message);
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => apiFetch(`/api/v1/views/${id}`, { method: "DELETE" }),
    onSuccess: () => {
      setMessage(null);
      void client.invalidateQueries({ queryKey: key });
    },
    onError: (err) => setMessage(err.message),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    setMessage(null);
    if (name.trim()) save.mutate({ name: name.trim(), replace: false });
  }

  const href = (v: SavedViewJson) => `${v.page}${v.query ? `?${v.query}` : ""}`;
  return (
    <div className="saved-views" data-testid="saved-views" aria-label={label} role="group">
      <span className="saved-views-label">{label}:</span>
      {views.isPending ? <span className="skeleton saved-views-skeleton" aria-hidden /> : null}
      {views.isError ? <span className="form-error">{views.error.message}</span> : null}
      {views.data?.length === 0 && !editing ? <span className="subtle">none yet</span> : null}
      {views.data?.map((v) => (
        <span key={v.id} className="view-chip" data-active={v.query === current ? "true" : undefined}>
          <Link href={href(v)} data-testid="saved-view" aria-current={v.query === current ? "true" : undefined} title={v.query || "(no filters)"}>
            {v.name}
          </Link>
          <button
            type="button"
            className="view-chip-delete"
            data-testid="delete-view"
            aria-label={`Delete saved view ${v.name}`}
            disabled={remove.isPending}
            onClick={() => remove.mutate(v.id)}
          >
            ×
          </button>
        </span>
      ))}
      {editing ? (
        <form className="save-view-form" onSubmit={submit}>
          <input
            autoFocus
            data-testid="saved-view-name"
            aria-label="Name of the view"
            placeholder="Name this view"
            maxLength={100}
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              setClash(null);
            }}
            onKeyDown={(e) => {
              if (e.key === "Escape") setEditing(false);
            }}
          />
          <button type="submit" data-testid="save-view-submit" disabled={save.isPending || !name.trim()}>
            Save
          </button>
          {clash ? (
            <button type="button" data-testid="replace-view" onClick={() => save.mutate({ name: clash, replace: true })}>
              Replace “{clash}”
            </button>
          ) : null}
          <button type="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </form>
      ) : (
        <button
          type="button"
          data-testid="save-view"
          onClick={() => {
            setEditing(true);
            setMessage(null);
          }}
          title="Save the current filters (the URL's query) under a name; only you see your views"
        >
          Save view
        </button>
      )}
      {clash ? (
        <span className="form-error" role="alert">
          You already have a view named “{clash}” here.
        </span>
      ) : null}
      {message ? (
        <span className="subtle" role="status">
          {message}
        </span>
      ) : null}
    </div>
  );
}
