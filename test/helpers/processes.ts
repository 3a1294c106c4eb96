import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import readline from "node:readline";
import { SERVICE_ENTRY } from "../../src/codegen/build-service.js";
import { projectRoot } from "../../src/shared/project-root.js";

/** The key that encrypts webhook signing secrets in every test service and process (WEBHOOK_SECRET_KEY). */
export const TEST_WEBHOOK_SECRET_KEY = "7e57".repeat(16);

/**
 * Starts an entry point of this project in its own process (a TypeScript
 * file through tsx, a JavaScript file of the build as it is) and resolves
 * with the first JSON line of its standard output for which `ready` returns
 * a value.
 */
export async function startProcess<T>(
  entry: string,
  env: Record<string, string>,
  ready: (line: Record<string, unknown>) => T | undefined,
  nodeArgs: string[] = [],
): Promise<{ child: ChildProcess; value: T }> {
  const child = spawn(process.execPath, [...nodeArgs, ...(entry.endsWith(".ts") ? ["--import", "tsx"] : []), entry], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  for await (const line of lines) {
    if (!line.startsWith("{")) continue;
    const value = ready(JSON.parse(line) as Record<string, unknown>);
    if (value !== undefined) {
      lines.on("line", () => {}); // keep draining the pipe
      return { child, value };
    }
  }
  throw new Error(`${entry} exited before it was ready`);
}

/** Sends SIGTERM to `child` and waits for it to exit. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  await exited;
}

/**
 * Starts the service as `npm start` does (the build's src/main.js; the test
 * run's global setup and the bench build it first) and resolves to it and its
 * public and console ports: both on loopback and on a free port unless
 * `env` says otherwise, with the tests' webhook secret key and LOG_LEVEL
 * info. With SERVICE_CPU_PROF_DIR set (`npm run bench --
 * --cpu-prof DIR`), the service writes a V8 CPU profile there when it stops.
 */
export async function startServiceProcess(env: Record<string, string>) {
  const { child, value } = await startProcess(
    SERVICE_ENTRY,
    { LOG_LEVEL: "info", WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY, PORT: "0", HOST: "127.0.0.1", CONSOLE_PORT: "0", ...env },
    (line) => (line.msg === "service started" ? { publicPort: line.publicPort as number, consolePort: line.consolePort as number } : undefined),
    serviceProfileArgs(),
  );
  return { child, ...value };
}

/** Node's arguments that write a V8 CPU profile to SERVICE_CPU_PROF_DIR at exit, when it is set. */
export function serviceProfileArgs(): string[] {
  const profileDir = process.env.SERVICE_CPU_PROF_DIR;
  return profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
}
