const isDev = process.env.NODE_ENV === "development";

/**
 * Content-Security-Policy for every response. script-src needs 'unsafe-inline'
 * because the App Router bootstraps with inline <script> tags
 * (self.__next_f.push(…)); without nonces (which need a proxy and per-request
 * rendering of every page) there is no other way. Everything else is
 * same-origin only, and no one may frame the console. next dev also needs
 * 'unsafe-eval' (React's dev-mode stack reconstruction).
 */
const csp = [
  "default-src 'self'",
  `script-src 'self' 'unsafe-inline'${isDev ? " 'unsafe-eval'" : ""}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join("; ");

const securityHeaders = [
  { key: "Content-Security-Policy", value: csp },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "Referrer-Policy", value: "same-origin" },
  { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=(), payment=(), usb=()" },
  { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
];

/** @type {import('next').NextConfig} */
const nextConfig = {
  // PGlite ships WASM and data files that must be loaded from node_modules as is.
  serverExternalPackages: ["@electric-sql/pglite", "pglite-prisma-adapter"],
  poweredByHeader: false,
  // forbidden() (components/server/page-auth.ts): a page a role may not open answers 403 with its forbidden.tsx.
  experimental: { authInterrupts: true },
  reactStrictMode: true,
  async headers() {
    return [{ source: "/:path*", headers: securityHeaders }];
  },
};

export default nextConfig;
