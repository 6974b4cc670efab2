import { BlockList, isIP } from "node:net";

/**
 * The client address that sign-in throttling and the audit trail use.
 *
 * The rule: the address of the TCP peer (the socket), unless trusted proxies are
 * configured — then the X-Forwarded-For chain is walked from the right, past the
 * trusted proxies, to the first address they vouch for. A client can put anything
 * in X-Forwarded-For; only what trusted proxies appended counts.
 *
 * - TRUSTED_PROXY_HOPS=n: n proxies stand in front of the console (the socket peer
 *   is the nearest); the client is the n-th address from the right of
 *   "X-Forwarded-For, peer". Only sound when nothing reaches the console except
 *   through those proxies.
 * - TRUSTED_PROXIES=10.0.0.0/8,192.168.1.7,fd00::/8: addresses of trusted proxies;
 *   the client is the right-most address of "X-Forwarded-For, peer" outside them.
 *
 * Next.js does not give route handlers the socket: the console's server
 * (scripts/server.mjs, what `npm start` runs) writes the peer address into the
 * PEER_ADDRESS_HEADER request header, replacing whatever a client sent under that
 * name, and marks the process so this module trusts that header. Without the
 * mark (`next dev`, a bare `next start`) the header could be forged, so the
 * address is "unknown" (one shared throttling bucket) and a warning is logged once.
 */
export const PEER_ADDRESS_HEADER = "x-console-peer-address";
const SERVER_MARK = Symbol.for("idempotency-console.peer-address-header");
export const UNKNOWN_ADDRESS = "unknown";

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export type ProxyTrust = { kind: "none" } | { kind: "hops"; hops: number } | { kind: "cidrs"; list: BlockList; entries: string[] };

/** Marks this process as served by scripts/server.mjs (which sets the same global symbol). Tests call it too. */
export function trustPeerAddressHeader(trusted = true): void {
  (globalThis as Record<symbol, unknown>)[SERVER_MARK] = trusted;
}

function peerHeaderTrusted(): boolean {
  return (globalThis as Record<symbol, unknown>)[SERVER_MARK] === true;
}

const MAX_HOPS = 10;

/** The proxy settings, or an error message for each malformed one. */
export function parseProxyTrust(env: Record<string, string | undefined> = process.env): { trust: ProxyTrust; problems: string[] } {
  const problems: string[] = [];
  const hopsRaw = env.TRUSTED_PROXY_HOPS?.trim();
  const cidrsRaw = env.TRUSTED_PROXIES?.trim();
  if (hopsRaw && cidrsRaw) {
    problems.push("Set TRUSTED_PROXY_HOPS or TRUSTED_PROXIES, not both");
    return { trust: { kind: "none" }, problems };
  }
  if (hopsRaw) {
    const n = Number(hopsRaw);
    if (!/^\d+$/.test(hopsRaw) || n > MAX_HOPS) {
      problems.push(`TRUSTED_PROXY_HOPS must be the number of proxies in front of the console, 0 to ${MAX_HOPS} (got ${JSON.stringify(hopsRaw)})`);
      return { trust: { kind: "none" }, problems };
    }
    return { trust: n === 0 ? { kind: "none" } : { kind: "hops", hops: n }, problems };
  }
  if (cidrsRaw) {
    const list = new BlockList();
    const entries: string[] = [];
    for (const part of cidrsRaw
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)) {
      const [addr, bits, more] = part.split("/");
      const family = isIP(addr);
      const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
      if (
        !family ||
        more !== undefined ||
        !Number.isInteger(prefix) ||
        prefix < 0 ||
        prefix > (family === 6 ? 128 : 32) ||
        (bits !== undefined && !/^\d+$/.test(bits))
      ) {
        problems.push(`TRUSTED_PROXIES: "${part}" is not an IP address or CIDR block (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8)`);
        continue;
      }
      list.addSubnet(addr, prefix, family === 6 ? "ipv6" : "ipv4");
      entries.push(part);
    }
    if (!problems.length && entries.length) return { trust: { kind: "cidrs", list, entries }, problems };
    return { trust: { kind: "none" }, problems };
  }
  return { trust: { kind: "none" }, problems };
}

let cached: { key: string; trust: ProxyTrust } | null = null;
function trustFromEnv(): ProxyTrust {
  const key = `${process.env.TRUSTED_PROXY_HOPS ?? ""}|${process.env.TRUSTED_PROXIES ?? ""}`;
  if (cached?.key !== key) {
    // A malformed setting stops the server at start (lib/auth/config.ts); here it trusts nothing.
    cached = { key, trust: parseProxyTrust().trust };
  }
  return cached.trust;
}

/** "::ffff:10.1.2.3" → "10.1.2.3"; "[::1]:443" → "::1"; "10.1.2.3:5000" → "10.1.2.3"; anything else trimmed. */
export function normaliseAddress(raw: string): string {
  let a = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1];
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(":"));
  if (/^::ffff:\d{1,3}(\.\d{1,3}){3}$/i.test(a)) a = a.slice(7);
  return a.slice(0, 100);
}

function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const v = headers[name];
  return Array.isArray(v) ? v.join(",") : v;
}

function trusted(trust: ProxyTrust, address: string): boolean {
  if (trust.kind !== "cidrs") return false;
  const family = isIP(address);
  return family !== 0 && trust.list.check(address, family === 6 ? "ipv6" : "ipv4");
}

let warnedNoPeer = false;
let warnedIgnoredForwarded = false;

/** The client address of a request (see the module comment for the rule). */
export function clientAddress(headers: HeaderSource, trust: ProxyTrust = trustFromEnv()): string {
  const peerRaw = peerHeaderTrusted() ? headerValue(headers, PEER_ADDRESS_HEADER) : undefined;
  if (!peerRaw) {
    if (!warnedNoPeer) {
      warnedNoPeer = true;
      console.warn(
        'client address: this server does not know the socket address of its clients (not started with `npm start` / scripts/server.mjs); sign-in throttling and the audit trail use "unknown"',
      );
    }
    return UNKNOWN_ADDRESS;
  }
  const peer = normaliseAddress(peerRaw);
  const forwarded = (headerValue(headers, "x-forwarded-for") ?? "").split(",").map(normaliseAddress).filter(Boolean);
  if (trust.kind === "none") {
    if (forwarded.length && !warnedIgnoredForwarded) {
      warnedIgnoredForwarded = true;
      console.warn(
        `client address: X-Forwarded-For from ${peer} is ignored (no trusted proxies configured). If a proxy stands in front of the console, set TRUSTED_PROXY_HOPS or TRUSTED_PROXIES.`,
      );
    }
    return peer;
  }
  const chain = [...forwarded, peer];
  if (trust.kind === "hops") return chain[Math.max(0, chain.length - 1 - trust.hops)];
  for (let i = chain.length - 1; i >= 0; i--) if (!trusted(trust, chain[i])) return chain[i];
  return chain[0];
}
