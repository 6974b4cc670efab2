import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { authConfigProblems } from "@/lib/auth/config";
import { clientAddress, normaliseAddress, parseProxyTrust, PEER_ADDRESS_HEADER, trustPeerAddressHeader, UNKNOWN_ADDRESS } from "@/lib/http/client-address";
// @ts-expect-error plain ESM script without types
import { consoleListener, HSTS_VALUE, hstsFor, PEER_ADDRESS_HEADER as SERVER_PEER_HEADER, SERVER_MARK } from "../scripts/server.mjs";

/**
 * The client address rule (issue 11): the socket's address unless trusted proxies
 * are configured; a client's X-Forwarded-For changes nothing without them. The
 * server half (scripts/server.mjs, what `npm start` runs) is exercised over real
 * HTTP: it stamps each request with its socket address, replacing a forged stamp.
 */

const trust = (env: Record<string, string>) => parseProxyTrust(env).trust;
const withPeer = (peer: string, xff?: string) => ({ [PEER_ADDRESS_HEADER]: peer, ...(xff ? { "x-forwarded-for": xff } : {}) });

afterEach(() => trustPeerAddressHeader(false));

describe("the rule", () => {
  it("without trusted proxies: the socket address, whatever X-Forwarded-For says", () => {
    trustPeerAddressHeader();
    const none = trust({});
    expect(clientAddress(withPeer("127.0.0.1"), none)).toBe("127.0.0.1");
    expect(clientAddress(withPeer("127.0.0.1", "9.9.9.9"), none)).toBe("127.0.0.1");
    expect(clientAddress(withPeer("::ffff:203.0.113.7", "9.9.9.9, 8.8.8.8"), none)).toBe("203.0.113.7");
    expect(clientAddress(new Headers({ ...withPeer("::1"), "x-real-ip": "9.9.9.9" }), none)).toBe("::1");
    expect(trust({ TRUSTED_PROXY_HOPS: "0" })).toEqual({ kind: "none" });
  });

  it("TRUSTED_PROXY_HOPS=n: the n-th address from the right of X-Forwarded-For + socket", () => {
    trustPeerAddressHeader();
    const one = trust({ TRUSTED_PROXY_HOPS: "1" });
    // client → proxy (10.0.0.2) → console: the proxy appended the client's address.
    expect(clientAddress(withPeer("10.0.0.2", "203.0.113.9"), one)).toBe("203.0.113.9");
    // A forged left-most entry does not move the answer.
    expect(clientAddress(withPeer("10.0.0.2", "9.9.9.9, 203.0.113.9"), one)).toBe("203.0.113.9");
    const two = trust({ TRUSTED_PROXY_HOPS: "2" });
    expect(clientAddress(withPeer("10.0.0.2", "9.9.9.9, 203.0.113.9, 10.0.0.5"), two)).toBe("203.0.113.9");
    // Fewer hops than configured: the left-most there is.
    expect(clientAddress(withPeer("10.0.0.2"), two)).toBe("10.0.0.2");
  });

  it("TRUSTED_PROXIES=CIDRs: the right-most address outside them", () => {
    trustPeerAddressHeader();
    const cidrs = trust({ TRUSTED_PROXIES: "10.0.0.0/8, 192.168.1.7, fd00::/8" });
    expect(clientAddress(withPeer("10.0.0.2", "9.9.9.9, 203.0.113.9, 10.1.2.3"), cidrs)).toBe("203.0.113.9");
    expect(clientAddress(withPeer("192.168.1.7", "[fd00::1]:443, 198.51.100.1:5000"), cidrs)).toBe("198.51.100.1");
    // A direct connection from outside the proxies: its own address, never its claim.
    expect(clientAddress(withPeer("203.0.113.50", "9.9.9.9"), cidrs)).toBe("203.0.113.50");
    // Only proxies in the chain: the left-most.
    expect(clientAddress(withPeer("10.0.0.2", "10.9.9.9"), cidrs)).toBe("10.9.9.9");
  });

  it("no trusted socket address (next dev, a bare next start): unknown, never the client's claim", () => {
    expect(clientAddress(withPeer("127.0.0.1", "9.9.9.9"), trust({}))).toBe(UNKNOWN_ADDRESS);
    expect(clientAddress(withPeer("127.0.0.1", "9.9.9.9"), trust({ TRUSTED_PROXY_HOPS: "1" }))).toBe(UNKNOWN_ADDRESS);
  });

  it("malformed settings stop the server at start", () => {
    expect(parseProxyTrust({ TRUSTED_PROXY_HOPS: "x" }).problems[0]).toMatch(/TRUSTED_PROXY_HOPS/);
    expect(parseProxyTrust({ TRUSTED_PROXY_HOPS: "11" }).problems[0]).toMatch(/0 to 10/);
    expect(parseProxyTrust({ TRUSTED_PROXIES: "10.0.0.0/33" }).problems[0]).toMatch(/not an IP address or CIDR/);
    expect(parseProxyTrust({ TRUSTED_PROXIES: "example.com" }).problems[0]).toMatch(/not an IP address/);
    expect(parseProxyTrust({ TRUSTED_PROXY_HOPS: "1", TRUSTED_PROXIES: "10.0.0.0/8" }).problems[0]).toMatch(/not both/);
    expect(authConfigProblems({ TRUSTED_PROXIES: "nonsense" })).toHaveLength(1);
    expect(normaliseAddress(" [2001:db8::1]:8443 ")).toBe("2001:db8::1");
  });
});

describe("scripts/server.mjs over real HTTP", () => {
  let server: Server;
  let port: number;
  let seen: { headers: IncomingHttpHeaders; address: string }[] = [];
  beforeAll(async () => {
    expect(SERVER_PEER_HEADER).toBe(PEER_ADDRESS_HEADER);
    expect(SERVER_MARK).toBe(Symbol.for("idempotency-console.peer-address-header"));
    // Next's handler replaced by one that answers with what the app would conclude.
    const handle = (req: { headers: IncomingHttpHeaders }, res: { end: (s: string) => void }) => {
      const address = clientAddress(req.headers as Record<string, string>, parseProxyTrust({}).trust);
      seen.push({ headers: req.headers, address });
      res.end(address);
    };
    server = createServer(consoleListener(handle, hstsFor("https://console.example.com")));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const get = (headers: Record<string, string>, localAddress?: string) =>
    new Promise<{ body: string; headers: IncomingHttpHeaders }>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port, path: "/", headers, localAddress }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ body, headers: res.headers }));
      });
      req.on("error", reject);
      req.end();
    });

  it("forged X-Forwarded-For, X-Real-IP and peer-address headers change nothing: the socket's address it is", async () => {
    trustPeerAddressHeader();
    seen = [];
    const plain = await get({});
    const spoofed = await get({ "x-forwarded-for": "9.9.9.9", "x-real-ip": "8.8.8.8", [PEER_ADDRESS_HEADER]: "7.7.7.7" });
    expect(plain.body).toBe("127.0.0.1");
    expect(spoofed.body).toBe("127.0.0.1");
    expect(seen[1].headers[PEER_ADDRESS_HEADER]).toBe("127.0.0.1");
    // Another loopback source address is seen as itself.
    expect((await get({ "x-forwarded-for": "9.9.9.9" }, "127.0.0.9")).body).toBe("127.0.0.9");
  });

  it("sets Strict-Transport-Security when the public URL is https, not otherwise", async () => {
    expect((await get({})).headers["strict-transport-security"]).toBe(HSTS_VALUE);
    expect(hstsFor("http://127.0.0.1:3000")).toBeNull();
    expect(hstsFor(undefined)).toBeNull();
  });
});
