#!/usr/bin/env node
// The console's HTTP server: Next.js's production server (`next start`'s engine,
// through Next's custom-server API) behind a request listener that does two things
// Next cannot:
// 1. The client's socket address. Next gives route handlers no socket, and its own
//    X-Forwarded-For is whatever the client sent when the client sent one. This
//    listener writes req.socket.remoteAddress into the x-console-peer-address
//    request header — replacing any a client sent under that name — and marks the
//    process (a global symbol) so lib/http/client-address.ts trusts that header and
//    nothing else: the socket address, or, when TRUSTED_PROXY_HOPS/TRUSTED_PROXIES
//    are set, the X-Forwarded-For hop those proxies vouch for.
// 2. Strict-Transport-Security on every response when NEXTAUTH_URL is https (at run
//    time: a build made elsewhere does not decide it).
// `npm start` (scripts/start.mjs) runs this; PORT and HOSTNAME_BIND as there.
import { createServer } from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const PEER_ADDRESS_HEADER = "x-console-peer-address";
export const SERVER_MARK = Symbol.for("idempotency-console.peer-address-header");
/** One year; no includeSubDomains/preload: other hosts of the operator's domain are not ours to pin. */
export const HSTS_VALUE = "max-age=31536000";

/** The HSTS header value for this public URL, or null when it is not https. */
export function hstsFor(publicUrl) {
  return /^https:\/\//i.test(publicUrl ?? "") ? HSTS_VALUE : null;
}

/** Stamps a request with its socket's address (never a client's claim) and the response with HSTS. */
export function prepareExchange(req, res, hsts) {
  delete req.headers[PEER_ADDRESS_HEADER];
  req.headers[PEER_ADDRESS_HEADER] = req.socket.remoteAddress ?? "";
  if (hsts) res.setHeader("strict-transport-security", hsts);
}

/** The listener around Next's request handler. */
export function consoleListener(handle, hsts = hstsFor(process.env.NEXTAUTH_URL)) {
  return (req, res) => {
    prepareExchange(req, res, hsts);
    return handle(req, res);
  };
}

async function main() {
  process.env.NODE_ENV ??= "production";
  globalThis[SERVER_MARK] = true;
  const root = path.resolve(import.meta.dirname, "..");
  const port = Number(process.env.PORT || 3000);
  const hostname = process.env.HOSTNAME_BIND || "127.0.0.1";
  const { default: next } = await import("next");
  const app = next({ dev: false, dir: root, hostname, port });
  const handle = app.getRequestHandler();
  await app.prepare();
  const server = createServer(consoleListener(handle));
  server.listen(port, hostname, () => console.log(`server: listening on http://${hostname}:${port}`));
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      server.close(() => process.exit(0));
      setTimeout(() => process.exit(0), 5_000).unref();
    });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
