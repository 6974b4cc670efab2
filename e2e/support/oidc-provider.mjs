#!/usr/bin/env node
// A real, spec-conforming OpenID Provider for the e2e suite: panva's oidc-provider
// (the certified implementation behind many identity products), run locally.
// Configured only where a deployment must configure any provider — its client
// (the console, registered with the redirect URI the README gives), the claims
// each scope releases (email, profile and a groups scope) and where accounts
// come from — and otherwise left at its defaults: authorization code flow with
// PKCE, email/name/groups kept out of the ID token and served by userinfo
// (conformIdTokenClaims), its own development login and consent pages, RP-initiated
// logout with its confirmation page. It warns about its development keys and
// about Node 20; both are fine here.
//
//   node e2e/support/oidc-provider.mjs --port 3102 --console http://127.0.0.1:3100 [--console …]
//
// Accounts: any login name and any password (the development login page). The
// login name picks the account: "alice" is in payments-ops, "root" in
// payments-admins, anyone else in marketing (a group the console does not map).
import Provider from "oidc-provider";

const args = process.argv.slice(2);
const flag = (name) => args.flatMap((a, i) => (a === `--${name}` ? [args[i + 1]] : []));
const port = Number(flag("port")[0] ?? 3102);
const consoles = flag("console");
if (!consoles.length) throw new Error("--console <the console's public URL> is needed (once per console)");

export const OIDC_CLIENT = { id: "idempotency-console", secret: "e2e-client-secret-not-for-production" };
const GROUPS = { alice: ["payments-ops"], root: ["payments-admins", "payments-ops"] };

const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: OIDC_CLIENT.id,
      client_secret: OIDC_CLIENT.secret,
      redirect_uris: consoles.map((c) => `${c}/api/auth/callback/oidc`),
      post_logout_redirect_uris: consoles.map((c) => `${c}/login`),
    },
  ],
  claims: {
    email: ["email", "email_verified"],
    profile: ["name", "preferred_username"],
    groups: ["groups"],
  },
  async findAccount(_ctx, id) {
    const login = String(id).toLowerCase();
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: `${login}@sso.example.test`,
          email_verified: true,
          name: `${login[0]?.toUpperCase() ?? ""}${login.slice(1)} (SSO)`,
          preferred_username: login,
          groups: GROUPS[login] ?? ["marketing"],
        };
      },
    };
  },
});

provider.listen(port, "127.0.0.1", () => console.log(`oidc-provider listening on ${issuer} for ${consoles.join(", ")}`));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
