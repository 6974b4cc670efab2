/**
 * Shared plumbing of the admin CLI scripts (user-create, token-create): flag
 * parsing, opening the database from env and refusing an unmigrated one,
 * request metadata for the audit trail, and exit codes.
 */
import { existsSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import type { RequestMeta } from "../lib/audit";
import { openDatabase, type Database } from "../lib/db/client";
import { databaseConfigFromEnv, redactUrl } from "../lib/db/config";
import { migrationStatus } from "../lib/db/migrate";
import { ProblemError } from "../lib/kernel/problem";

/** A refusal to report as is (exit 1), without a stack trace. */
export class CliError extends Error {}
/** Bad command line or input: reported with the usage line. */
export class UsageError extends CliError {}

/**
 * --name value and --name=value; flags listed in `booleans` take no value.
 * Unknown and repeated flags are errors.
 */
export function parseFlags(argv: string[], known: string[], booleans: string[] = []): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("--")) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (!known.includes(name) && !booleans.includes(name)) throw new UsageError(`unknown option --${name}`);
    if (out.has(name)) throw new UsageError(`--${name} is given more than once`);
    if (booleans.includes(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      out.set(name, "true");
      continue;
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith("--"))) throw new UsageError(`--${name} needs a value`);
    out.set(name, value);
  }
  return out;
}

/** zod issues as one line per field, never echoing the values (a password could be one). */
export function describeIssues(issues: { path: PropertyKey[]; message: string }[], names: Record<string, string> = {}): string {
  return issues.map((i) => `  ${names[String(i.path[0])] ?? String(i.path[0] ?? "input")}: ${i.message}`).join("\n");
}

/**
 * Opens the database the server would use (DATABASE_URL, else PGLITE_DIR) and
 * refuses unless every migration is applied. Progress goes to stderr.
 */
export async function openMigratedDatabase(): Promise<Database> {
  let config;
  try {
    config = databaseConfigFromEnv();
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  if (config.mode !== "embedded") {
    console.error(`database: ${config.mode} ${redactUrl(config.url!)}`);
  } else {
    const dir = config.dataDir!;
    console.error(`database: embedded PGlite in ${dir}`);
    if (!existsSync(path.join(dir, "PG_VERSION"))) {
      throw new CliError(`no embedded database in ${dir}: start the console once (npm start) or run npm run db:migrate first`);
    }
    console.error("warning: stop the console server first — PGlite does not lock its folder, two processes on it corrupt it");
  }
  const db = await openDatabase(config, { poolSize: 2 });
  try {
    const status = await db.withSession((s) => migrationStatus(s));
    if (status.state !== "up_to_date") {
      const pending = status.pending.length ? ` (pending: ${status.pending.join(", ")})` : "";
      throw new CliError(`the database is not migrated: migrations are ${status.state}${pending}; run npm run db:migrate first`);
    }
    return db;
  } catch (err) {
    await db.close();
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot use the database: ${(err as Error).message ?? err}`);
  }
}

/** Who ran the script, for the audit entry's request metadata. */
export function cliRequestMeta(script: string): RequestMeta {
  let who = "unknown";
  try {
    who = `${userInfo().username}@${hostname()}`;
  } catch {
    // no passwd entry (some containers)
  }
  return { requestId: randomUUID(), ip: null, userAgent: `cli ${script} (${who})` };
}

/** Runs main(); exit code 1 with a one-line message on any refusal. The process ends by itself. */
export function runCli(main: () => Promise<number>, usage: string): void {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      if (err instanceof UsageError) {
        console.error(`error: ${err.message}\n${usage}`);
      } else if (err instanceof CliError) {
        console.error(`error: ${err.message}`);
      } else if (err instanceof ProblemError) {
        console.error(`error: ${err.message} (${err.title.toLowerCase()}, ${err.status})`);
      } else {
        console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
      }
      process.exitCode = 1;
    },
  );
}

/** The first line of stdin (piped), without its line ending. */
export async function readFirstLineOfStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8").split(/\r?\n/, 1)[0] ?? "";
}

/** Prompts on the terminal without echoing what is typed. */
export function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = "";
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n" || ch === "\u0004") {
          finish();
          resolve(value);
          return;
        }
        if (ch === "\u0003") {
          finish();
          reject(new CliError("cancelled"));
          return;
        }
        if (ch === "\u007f" || ch === "\b") value = [...value].slice(0, -1).join("");
        else value += ch;
      }
    };
    stdin.on("data", onData);
  });
}
