"use client";

/** A page failed while rendering (usually the database): say what to check, offer a retry. */
export default function ErrorPage({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <div className="panel status-page error-page" role="alert" data-testid="page-error">
      <p className="status-code" aria-hidden>
        500
      </p>
      <h1>The console could not load this page</h1>
      <p>
        The database may be unreachable or not migrated: <a href="/api/health">/api/health</a> says which.
        {error.digest ? (
          <>
            {" "}
            Quote reference <code>{error.digest}</code> when you report it; the server log has the details.
          </>
        ) : null}
      </p>
      <p className="status-links">
        <button type="button" className="primary" onClick={reset}>
          Try again
        </button>
        <a className="button-link" href="/">
          Overview
        </a>
      </p>
    </div>
  );
}
