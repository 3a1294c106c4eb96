import { spawn } from "node:child_process";
import path from "node:path";
import { buildCli } from "../../src/codegen/build-service.js";
import { projectRoot } from "../../src/shared/project-root.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { percentile, table } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/** Runs `command` with `args` to its end in the project root; resolves to its wall time in ms. */
function timed(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: projectRoot, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`${command} ${args.join(" ")} exited ${code}: ${stderr}`))));
  });
}

/**
 * How long a `msgsvc` call takes, start to exit, against the real service in
 * its own process (a workspace list over the console API), run `runs` times
 * one after the other after two unmeasured runs: through `npx`, straight
 * from node_modules/.bin (what `msgsvc` runs once that folder is on PATH),
 * and as the CLI ran before it was compiled once (its TypeScript through
 * tsx at every call). Beside them what no CLI can beat: Node starting with
 * nothing to do, and npx running a native binary (esbuild's --version), which
 * is npm's own cost of finding and starting a bin.
 */
export async function runCliBench(options: { mongodbUri: string; runs: number }): Promise<string> {
  await buildCli();
  const service = await startServiceProcess({
    MONGODB_URI: options.mongodbUri,
    MONGODB_DATABASE: `bench_cli_${Date.now()}`,
    CONSOLE_TOKEN,
    ROLE: "all",
  });
  const env = { ...process.env, CONSOLE_URL: `http://127.0.0.1:${service.consolePort}`, CONSOLE_TOKEN };
  const bin = path.join(projectRoot, "node_modules", ".bin", "msgsvc");
  const viaTsx = 'const { runCli } = await import("./src/cli/msgsvc.ts"); process.exitCode = await runCli(["workspaces", "list"]);';
  const cases: [name: string, command: string, args: string[]][] = [
    ["node -e 0 (Node starting, nothing to do)", process.execPath, ["-e", "0"]],
    ["npx esbuild --version (npx running a native binary)", "npx", ["esbuild", "--version"]],
    ["msgsvc --version (node_modules/.bin)", bin, ["--version"]],
    ["msgsvc workspaces list (node_modules/.bin)", bin, ["workspaces", "list"]],
    ["npx msgsvc workspaces list", "npx", ["msgsvc", "workspaces", "list"]],
    ["the CLI through tsx at every call, as before: workspaces list", process.execPath, ["--import", "tsx", "--input-type=module", "-e", viaTsx]],
  ];
  try {
    await timed(bin, ["workspaces", "create", "--name", "CLI bench"], env);
    const rows: string[][] = [];
    for (const [name, command, args] of cases) {
      for (let i = 0; i < 2; i++) await timed(command, args, env);
      const times: number[] = [];
      for (let i = 0; i < options.runs; i++) times.push(await timed(command, args, env));
      const sorted = Float64Array.from(times).sort();
      const mean = times.reduce((a, b) => a + b, 0) / times.length;
      rows.push([name, String(times.length), mean.toFixed(0), percentile(sorted, 50).toFixed(0), (sorted[0] ?? 0).toFixed(0), (sorted.at(-1) ?? 0).toFixed(0)]);
    }
    return `msgsvc: a call's wall time, start to exit (${options.runs} runs each, one at a time)\n\n${table(["command", "runs", "mean ms", "p50 ms", "min ms", "max ms"], rows)}`;
  } finally {
    await stopProcess(service.child);
  }
}
