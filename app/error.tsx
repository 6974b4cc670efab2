"use client";

export default function ErrorPage({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <div className="error-box" data-testid="page-error">
      <h1>The console could not load this page</h1>
      <p>
        The database may be unreachable or not migrated. Check <a href="/api/health">/api/health</a>.
        {error.digest ? ` (reference ${error.digest})` : null}
      </p>
      <button type="button" onClick={reset}>
        Try again
      </button>
    </div>
  );
}
