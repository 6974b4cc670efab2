/**
 * Creates a console user — the first admin on a fresh database, or anyone later.
 *
 *   npm run user:create -- --email E --role R[,R] [--name N] [--reason TEXT]
 *                          [--password P | --no-password]
 *
 * The password comes from --password, else the USER_PASSWORD environment
 * variable, else stdin (the first line when piped; a hidden prompt, asked twice,
 * on a terminal) — so it need not appear in shell history or process lists.
 * --no-password creates a user who signs in with single sign-on only.
 *
 * Uses DATABASE_URL (Postgres) or the embedded PGlite in PGLITE_DIR like the
 * server; the database must be migrated. Audited as the system actor
 * "cli:user:create" with the reason "bootstrap via CLI" unless --reason is given.
 * Exit 0 on success, 1 on any refusal (nothing written on bad input).
 */
import { ROLES } from "../lib/auth/permissions";
import { createUser, createUserInputSchema, type SystemActor } from "../lib/auth/users";
import { UsageError, cliRequestMeta, describeIssues, openMigratedDatabase, parseFlags, promptHidden, readFirstLineOfStdin, runCli } from "./cli-common";

const USAGE =
  "usage: npm run user:create -- --email E --role R[,R] [--name N] [--reason TEXT] [--password P | --no-password]\n" +
  `  roles: ${ROLES.join(", ")}; password from --password, USER_PASSWORD or stdin (12–200 characters)`;

const ACTOR: SystemActor = { type: "system", label: "cli:user:create" };

async function readPassword(flags: Map<string, string>): Promise<string | undefined> {
  if (flags.has("no-password")) {
    if (flags.has("password")) throw new UsageError("--password and --no-password exclude each other");
    return undefined;
  }
  if (flags.has("password")) {
    console.error("note: --password is visible in shell history and process lists; prefer USER_PASSWORD or stdin");
    return flags.get("password")!;
  }
  if (process.env.USER_PASSWORD) return process.env.USER_PASSWORD;
  if (process.stdin.isTTY) {
    const first = await promptHidden("Password (12–200 characters): ");
    const again = await promptHidden("Repeat the password: ");
    if (first !== again) throw new UsageError("the passwords do not match");
    return first;
  }
  const line = await readFirstLineOfStdin();
  if (!line) throw new UsageError("no password: give --password, set USER_PASSWORD, pipe it on stdin, or use --no-password for SSO-only");
  return line;
}

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2), ["email", "password", "role", "roles", "name", "reason"], ["no-password", "help"]);
  if (flags.has("help")) {
    console.log(USAGE);
    return 0;
  }
  if (flags.has("role") && flags.has("roles")) throw new UsageError("give --role once (a comma-separated list)");
  const roleList = flags.get("role") ?? flags.get("roles");
  if (!flags.get("email")) throw new UsageError("--email is required");
  if (!roleList) throw new UsageError("--role is required");

  // Validate everything before touching the database: bad input writes nothing.
  const input = {
    email: flags.get("email"),
    name: flags.get("name"),
    roles: roleList
      .split(",")
      .map((r) => r.trim())
      .filter(Boolean),
    reason: flags.get("reason") ?? "bootstrap via CLI",
  };
  const names = { email: "--email", name: "--name", roles: "--role", reason: "--reason" };
  const rest = createUserInputSchema.omit({ password: true }).safeParse(input);
  if (!rest.success) throw new UsageError(`invalid input:\n${describeIssues(rest.error.issues, names)}`);
  const parsed = createUserInputSchema.safeParse({ ...input, password: await readPassword(flags) });
  if (!parsed.success) throw new UsageError(`invalid input:\n${describeIssues(parsed.error.issues, names)}`);

  const db = await openMigratedDatabase();
  try {
    const user = await createUser(db.prisma, ACTOR, parsed.data, cliRequestMeta("user:create"));
    console.log(
      `created user ${user.email} (id ${user.id}) with roles ${user.roles.join(", ")}` +
        (user.hasPassword ? "" : " and no password (single sign-on only until one is set)"),
    );
    return 0;
  } finally {
    await db.close(); // PGlite and the pg pool would otherwise keep the process alive
  }
}

runCli(main, USAGE);
