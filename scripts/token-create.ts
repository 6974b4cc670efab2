/**
 * Creates an API token for a user and prints it once.
 *
 *   npm run token:create -- --email E --name N --scopes S[,S]|all [--days 90] [--reason TEXT]
 *
 * stdout carries the token alone (TOKEN=$(npm run -s token:create -- …)); the
 * details go to stderr. The token is never stored (only a hash of its secret)
 * and cannot be shown again. Scopes must be permissions the user holds ("all" =
 * every permission the user's roles grant). Expires after --days (1–365, default 90).
 *
 * Uses DATABASE_URL (Postgres) or the embedded PGlite in PGLITE_DIR like the
 * server; the database must be migrated. Audited as the system actor
 * "cli:token:create" with the reason "bootstrap via CLI" unless --reason is given.
 * Exit 0 on success, 1 on any refusal (nothing written on bad input).
 */
import { ALL_PERMISSIONS, permissionsOf } from "../lib/auth/permissions";
import { createApiToken, createTokenInputSchema, DEFAULT_TOKEN_DAYS } from "../lib/auth/token-admin";
import { emailSchema, findUserByEmail, type SystemActor } from "../lib/auth/users";
import { CliError, UsageError, cliRequestMeta, describeIssues, openMigratedDatabase, parseFlags, runCli } from "./cli-common";

const USAGE =
  "usage: npm run token:create -- --email E --name N --scopes S[,S]|all [--days 90] [--reason TEXT]\n" +
  `  scopes: ${ALL_PERMISSIONS.join(", ")} (at most the user's permissions)`;

const ACTOR: SystemActor = { type: "system", label: "cli:token:create" };

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2), ["email", "name", "scopes", "days", "reason"], ["help"]);
  if (flags.has("help")) {
    console.log(USAGE);
    return 0;
  }
  for (const required of ["email", "name", "scopes"]) {
    if (!flags.get(required)) throw new UsageError(`--${required} is required`);
  }
  const days = flags.has("days") ? Number(flags.get("days")) : DEFAULT_TOKEN_DAYS;
  const allScopes = flags.get("scopes")!.trim() === "all";
  const scopes = allScopes
    ? [ALL_PERMISSIONS[0]]
    : flags
        .get("scopes")!
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);

  // Validate everything before touching the database: bad input writes nothing.
  const email = emailSchema.safeParse(flags.get("email"));
  const parsed = createTokenInputSchema.safeParse({
    name: flags.get("name"),
    scopes,
    expiresInDays: flags.get("days")?.trim() === "" ? NaN : days,
    reason: flags.get("reason") ?? "bootstrap via CLI",
  });
  const issues = [
    ...(email.success ? [] : email.error.issues.map((i) => ({ ...i, path: ["email", ...i.path] }))),
    ...(parsed.success ? [] : parsed.error.issues),
  ];
  if (issues.length || !parsed.success || !email.success) {
    throw new UsageError(
      `invalid input:\n${describeIssues(issues, { email: "--email", name: "--name", scopes: "--scopes", expiresInDays: "--days", reason: "--reason" })}`,
    );
  }

  const db = await openMigratedDatabase();
  try {
    const user = await findUserByEmail(db.prisma, email.data);
    if (!user) throw new CliError(`no user with the email ${email.data}; create one with npm run user:create`);
    const { token, apiToken } = await createApiToken(
      db.prisma,
      ACTOR,
      { ...parsed.data, userId: user.id, scopes: allScopes ? [...permissionsOf(user.roles)] : parsed.data.scopes },
      cliRequestMeta("token:create"),
    );
    console.error(
      `created API token "${apiToken.name}" (id ${apiToken.id}, ${apiToken.prefix}) for ${apiToken.userEmail}\n` +
        `  scopes: ${apiToken.scopes.join(", ")}\n  expires: ${apiToken.expiresAt}\n` +
        "Store it now: it is shown only this once and cannot be retrieved again.",
    );
    console.log(token);
    return 0;
  } finally {
    await db.close(); // PGlite and the pg pool would otherwise keep the process alive
  }
}

runCli(main, USAGE);
