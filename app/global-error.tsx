"use client";

import "./globals.css";

/** The layout itself failed (rare: it survives a database outage): a page of its own, same look. */
export default function GlobalError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <html lang="en">
      <body>
        <main id="main">
          <div className="panel status-page error-page" role="alert" data-testid="page-error">
            <h1>The console could not load</h1>
            <p>
              Check <a href="/api/health">/api/health</a>.{error.digest ? ` Reference ${error.digest}.` : ""}
            </p>
            <button type="button" className="primary" onClick={reset}>
              Try again
            </button>
          </div>
        </main>
      </body>
    </html>
  );
}
