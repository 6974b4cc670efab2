import type { Metadata } from "next";

export const metadata: Metadata = { title: "Not found · Idempotency Console" };

/** Any unknown address (and a record id that does not exist): say so, and offer the ways in. */
export default function NotFound() {
  return (
    <div className="panel status-page" data-testid="not-found">
      <p className="status-code" aria-hidden>
        404
      </p>
      <h1>Page not found</h1>
      <p>There is no page at this address. It may have been mistyped, or the link is from an older version of the console.</p>
      <p>
        Looking for a record? <a href="/records">Search</a> by idempotency key, provider reference, request, correlation or resource id.
      </p>
      <p className="status-links">
        <a className="button-link" href="/">
          Overview
        </a>
        <a className="button-link" href="/records">
          Search records
        </a>
        <a className="button-link" href="/queue">
          Stuck &amp; pending
        </a>
      </p>
    </div>
  );
}
