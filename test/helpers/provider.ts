import { spawn } from "node:child_process";
import path from "node:path";
import { ProviderControl } from "@/lib/providers/control";

/**
 * The real local provider service (scripts/provider.ts) as a child process on a
 * free port, for tests:
 *
 *   const provider = await startProviderService();
 *   process.env.PROVIDER_URL = provider.url;          // the registry reads env at call time
 *   await provider.control.seedRequests([...]);
 *   ...
 *   await provider.stop();
 *
 * stop() sends SIGTERM to that child (by its PID) and waits until it has exited.
 */
export interface ProviderService {
  url: string;
  control: ProviderControl;
  pid: number;
  stop(): Promise<void>;
}

const root = path.resolve(import.meta.dirname, "..", "..");

export async function startProviderService(opts: { dataFile?: string; log?: boolean } = {}): Promise<ProviderService> {
  const args = ["scripts/provider.ts", "--port", "0"];
  if (opts.dataFile) args.push("--data", opts.dataFile);
  if (opts.log) args.push("--log");
  const child = spawn(path.join(root, "node_modules", ".bin", "tsx"), args, {
    cwd: root,
    env: { ...process.env, PROVIDER_PORT: undefined },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
    if (opts.log) process.stderr.write(chunk);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`the provider service did not start within 30 s\n${stderr}`)), 30_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      if (child.exitCode === null && child.pid) child.kill("SIGKILL");
      reject(err);
    };
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      out += chunk;
      const m = /provider listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once("exit", (code, signal) => fail(new Error(`the provider service exited (${code ?? signal}) before listening\n${stderr}`)));
    child.once("error", fail);
  });
  child.stdout.resume(); // keep draining

  return {
    url,
    control: new ProviderControl(url),
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
