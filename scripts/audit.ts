/**
 * npm run audit -- anchor [--out <file | http(s) URL>]
 * npm run audit -- verify [--anchor <file | http(s) URL>]...
 *
 * - anchor: reads the audit chain's head (newest entry id, its hash, entries up to
 *   it) and publishes it outside the database: appended as one JSON line to a file,
 *   or POSTed as JSON to a URL (write-once storage, another team's log, a ticket
 *   system…); always printed on stdout. Run it from cron, next to the server's own
 *   log line and metric every AUDIT_ANCHOR_MINUTES.
 * - verify: walks the whole chain with the HMAC keys (AUDIT_HMAC_KEY…) and checks
 *   it against the anchors given (files of JSON lines — the anchor file, or the
 *   server's log —, a JSON array, or a URL answering either). Lists every break.
 *   Exit code 2 when the chain is broken.
 */
import { appendFileSync, readFileSync } from "node:fs";
import { CliError, openMigratedDatabase, parseFlags, runCli, UsageError } from "./cli-common";
import { verifyAuditChain } from "../lib/audit";
import { parseAnchors, readChainHead } from "../lib/audit/anchor";

const USAGE = "usage: npm run audit -- anchor [--out <file|URL>] | verify [--anchor <file|URL>[,<file|URL>…]]";

const isUrl = (s: string) => /^https?:\/\//i.test(s);

async function readSource(source: string): Promise<string> {
  if (!isUrl(source)) {
    try {
      return readFileSync(source, "utf8");
    } catch (err) {
      throw new CliError(`cannot read anchors from ${source}: ${(err as Error).message}`);
    }
  }
  const res = await fetch(source, { headers: { accept: "application/json, text/plain" }, signal: AbortSignal.timeout(15_000) });
  if (!res.ok) throw new CliError(`GET ${source} answered ${res.status}`);
  return res.text();
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  if (command !== "anchor" && command !== "verify") throw new UsageError(command ? `unknown command ${JSON.stringify(command)}` : "a command is needed");
  const flags = parseFlags(rest, command === "anchor" ? ["out"] : ["anchor"]);
  const db = await openMigratedDatabase();
  try {
    if (command === "anchor") {
      const anchor = await readChainHead(db.prisma);
      if (!anchor) throw new CliError("the audit trail is empty: nothing to anchor yet");
      const line = JSON.stringify(anchor);
      const out = flags.get("out");
      if (out && isUrl(out)) {
        const res = await fetch(out, { method: "POST", headers: { "content-type": "application/json" }, body: line, signal: AbortSignal.timeout(15_000) });
        if (!res.ok) throw new CliError(`POST ${out} answered ${res.status}: the anchor was not published`);
        console.error(`anchor posted to ${out} (${res.status})`);
      } else if (out) {
        appendFileSync(out, `${line}\n`);
        console.error(`anchor appended to ${out}`);
      }
      console.log(line);
      return 0;
    }
    const anchors = [];
    for (const source of (flags.get("anchor") ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)) {
      try {
        anchors.push(...parseAnchors(await readSource(source)));
      } catch (err) {
        if (err instanceof CliError) throw err;
        throw new CliError(`${source}: ${(err as Error).message}`);
      }
    }
    const started = Date.now();
    const v = await verifyAuditChain(db.prisma, { anchors });
    console.log(
      JSON.stringify({
        command: "verify",
        ms: Date.now() - started,
        intact: v.intact,
        checked: v.checked,
        unkeyed: v.unkeyed,
        anchorsGiven: anchors.length,
        anchorsChecked: v.anchorsChecked,
        breakCount: v.breakCount,
        breaks: v.breaks.map((b) => ({ ...b, id: b.id.toString() })),
        lastId: v.lastId?.toString() ?? null,
        lastHash: v.lastHash,
      }),
    );
    if (!v.intact) {
      console.error(`audit: the chain is broken in ${v.breakCount} place(s):`);
      for (const b of v.breaks) console.error(`  #${b.id}: ${b.problem}${b.detail ? ` — ${b.detail}` : ""}`);
      return 2;
    }
    if (!anchors.length) console.error("audit: intact — but without --anchor, entries cut off at the end cannot be noticed; pass your published anchors");
    return 0;
  } finally {
    await db.close();
  }
}

runCli(main, USAGE);
