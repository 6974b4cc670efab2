/** @type {import('next').NextConfig} */
const nextConfig = {
  // PGlite ships WASM and data files that must be loaded from node_modules as is.
  serverExternalPackages: ["@electric-sql/pglite", "pglite-prisma-adapter"],
  poweredByHeader: false,
  reactStrictMode: true,
};

export default nextConfig;
