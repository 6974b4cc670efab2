/**
 * The local payment provider service (lib/providers/service.ts has the API).
 *
 *   npm run provider -- [--port N] [--host H] [--data FILE] [--log]
 *
 * --port (or PROVIDER_PORT; default 4010; 0 = any free port), --host (default
 * 127.0.0.1), --data FILE keeps the state in a JSON file across restarts,
 * --log prints one line per request on stderr. Prints
 * `provider listening on http://127.0.0.1:<port>` once it accepts connections
 * (test/helpers/provider.ts and scripts/start.mjs wait for that line) and exits
 * cleanly on SIGTERM/SIGINT.
 */
import path from "node:path";
import { startProviderService } from "../lib/providers/service";

const USAGE = "usage: npm run provider -- [--port N] [--host H] [--data FILE] [--log]";

class UsageError extends Error {}

/** --name value / --name=value (kept here, not in cli-common: that one loads the database client, this service starts in a blink). */
function parseFlags(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const [, name, inline] = m;
    if (name === "log" || name === "help") {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      out.set(name, "true");
    } else if (name === "port" || name === "host" || name === "data") {
      const value = inline ?? argv[++i];
      if (value === undefined || value.startsWith("--")) throw new UsageError(`--${name} needs a value`);
      out.set(name, value);
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  return out;
}

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2));
  if (flags.has("help")) {
    console.log(USAGE);
    return 0;
  }
  const rawPort = flags.get("port") ?? process.env.PROVIDER_PORT ?? "4010";
  const port = Number(rawPort);
  if (!/^\d+$/.test(rawPort) || port > 65535) throw new UsageError(`--port must be 0–65535, not ${JSON.stringify(rawPort)}`);
  const dataFile = flags.get("data") ? path.resolve(flags.get("data")!) : undefined;
  const service = await startProviderService({ port, host: flags.get("host") ?? "127.0.0.1", dataFile, log: flags.has("log") });
  console.log(`provider listening on ${service.url}`);
  if (dataFile) console.error(`provider: state kept in ${dataFile}`);

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.error(`provider: ${signal}, stopping`);
      resolve();
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
  await service.close();
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof UsageError ? `error: ${err.message}\n${USAGE}` : `error: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
