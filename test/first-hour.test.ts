import { spawn, spawnSync, type ChildProcess, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVICE_ENTRY } from "../src/codegen/build-service.js";
import { GO_TOOLS_BIN } from "../src/codegen/toolchain.js";
import { projectRoot } from "../src/shared/project-root.js";
import { eventually } from "./helpers/test-service.js";

/*
 * The first hour of a new user, as README "Quick start" and the start banner
 * tell it, so that neither can drift from what works:
 * - the service, started as `npm start` starts it (the build's src/main.js)
 *   on a fresh data folder with the embedded database, logs nothing at warn
 *   level or above, and neither does a second start on that folder;
 * - the quick start's commands, parsed from README.md, and the commands the
 *   banner prints, run in order in one bash each, with the banner's two
 *   export lines for the README's placeholders, and do what the text says.
 * The README's ports (8080, 8081, and 3000 for the example app) are this
 * run's free ports. The shell runs a command once the one before has ended,
 * and after a command put in the background, once it printed that it is
 * ready, as a person reads before typing the next; before the last command
 * (which stops the background jobs) it waits for the events they print.
 */

/** Programs the quick start runs; the test is skipped, saying which, when one is missing. */
const missing = ["bash", "curl", "jq"].filter((tool) => spawnSync(tool, ["--version"]).error);
/** Go installs grpcurl (the last step); without it those commands are left out, saying so. */
const hasGo = !spawnSync("go", ["version"]).error;
if (missing.length > 0) process.stderr.write(`Skipping the first-hour test: ${missing.join(", ")} not installed\n`);
if (!hasGo) process.stderr.write("First-hour test: Go is not installed; the grpcurl commands are left out\n");

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** A free TCP port of this machine, at the moment of asking. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

/** The service as `npm start` runs it, its log lines parsed, its other output (the banner) kept as text. */
interface Started {
  child: ChildProcess;
  banner: string;
  logs: Record<string, unknown>[];
}

/** Starts the build's src/main.js on `dataDir` (embedded database), as `npm start` does, and waits for its banner. */
async function startService(dataDir: string): Promise<Started> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: "0", CONSOLE_PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG_LEVEL: "info" };
  for (const name of ["MONGODB_URI", "MONGODB_DATABASE", "CONSOLE_TOKEN", "CONSOLE_ADMIN_EMAIL", "CONSOLE_ADMIN_PASSWORD", "WEBHOOK_SECRET_KEY"]) delete env[name];
  // The simulator's reports come at once: the shell is quicker than a person.
  Object.assign(env, { SIMULATOR_SENT_DELAY_MS: "0", SIMULATOR_DELIVERED_DELAY_MS: "50", SIMULATOR_READ_DELAY_MS: "100", SIMULATOR_OUT_OF_ORDER_PERCENT: "0" });
  const child = spawn(process.execPath, [SERVICE_ENTRY], { cwd: projectRoot, env, stdio: ["ignore", "pipe", "inherit"] });
  const started: Started = { child, banner: "", logs: [] };
  const lines = readline.createInterface({ input: child.stdout! });
  await new Promise<void>((resolve, reject) => {
    lines.on("line", (line) => {
      if (line.startsWith("{")) started.logs.push(JSON.parse(line) as Record<string, unknown>);
      else started.banner += `${line}\n`;
      if (line === "Stop with Ctrl-C.") resolve();
    });
    child.once("exit", (code) => reject(new Error(`the service exited (${code}) before its banner:\n${started.banner}`)));
  });
  return started;
}

async function stopService(started: Started | undefined): Promise<void> {
  if (!started || started.child.exitCode !== null) return;
  const exited = once(started.child, "exit");
  started.child.kill("SIGTERM");
  await exited;
}

/**
 * The commands of shell text: a line ending in "\" goes on on the next; a
 * here-document (`<<EOF`) goes on to its end line; blank lines and comment
 * lines are left out.
 */
function shellCommands(text: string): string[] {
  const commands: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let command = lines[i] ?? "";
    if (command.trim() === "" || command.trim().startsWith("#")) continue;
    for (;;) {
      const heredoc = /<<-?\s*'?(\w+)'?/.exec(command.split("\n").at(-1) ?? "");
      if (command.endsWith("\\")) command += `\n${lines[++i] ?? ""}`;
      else if (heredoc && !command.includes(`\n${heredoc[1]}`)) {
        do command += `\n${lines[++i] ?? ""}`;
        while (i < lines.length && lines[i] !== heredoc[1]);
      } else break;
    }
    commands.push(command);
  }
  return commands;
}

/** The ```sh blocks of README.md's "Quick start" section, in order. */
async function quickStartBlocks(): Promise<string[]> {
  const readme = await readFile(path.join(projectRoot, "README.md"), "utf8");
  const start = readme.indexOf("\n## Quick start\n");
  const end = readme.indexOf("\n## ", start + 1);
  expect(start, "README.md has a Quick start section").toBeGreaterThan(0);
  const section = readme.slice(start, end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
}

/** Lines the background jobs (the example app, the listener) and bash's job notices print, whenever they come. */
const BACKGROUND_LINE = /^(app: |\d{4}-\d\d-\d\dT\S+ {2}|Listening at |Signing secret: |Forwarding verified deliveries |deleted whk_|\[\d+\][+-]? )/;

/** What a command printed itself: its output without the lines of the background jobs. */
const own = (output: string) =>
  output
    .split("\n")
    .filter((line) => !BACKGROUND_LINE.test(line))
    .join("\n");

/** One bash, fed commands one at a time, its output (stdout and stderr) kept whole and per command. */
class Shell {
  readonly child: ChildProcessWithoutNullStreams;
  transcript = "";
  private count = 0;

  constructor(env: NodeJS.ProcessEnv) {
    // Its own process group, so that the background jobs go with it at the end whatever happened.
    this.child = spawn("bash", ["--noprofile", "--norc"], { cwd: projectRoot, env, detached: true });
    this.child.stdout.on("data", (d) => (this.transcript += d));
    this.child.stderr.on("data", (d) => (this.transcript += d));
    this.child.stdin.write("exec 2>&1\n");
  }

  /** Runs `command`; resolves to its exit code and what was printed while it ran. */
  async run(command: string, timeoutMs = 120_000): Promise<{ code: number; output: string }> {
    const marker = `__command_${++this.count}_ended__`;
    const from = this.transcript.length;
    this.child.stdin.write(`${command}\nprintf '\\n${marker} %s\\n' "$?"\n`);
    const ended = await eventually(async () => new RegExp(`\\n${marker} (\\d+)\\n`).exec(this.transcript.slice(from)) ?? undefined, timeoutMs, 20);
    return { code: Number(ended[1]), output: own(this.transcript.slice(from, from + (ended.index ?? 0))).trim() };
  }

  /** Waits until the transcript, from `from` on, matches `pattern`. */
  waitFor(pattern: RegExp, from = 0, timeoutMs = 30_000): Promise<RegExpExecArray> {
    return eventually(async () => pattern.exec(this.transcript.slice(from)) ?? undefined, timeoutMs, 25);
  }

  close(): void {
    try {
      process.kill(-this.child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

describe("README.md", () => {
  it("links only to sections it has (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens)", async () => {
    const readme = await readFile(path.join(projectRoot, "README.md"), "utf8");
    const anchors = new Set<string>();
    let fenced = false;
    for (const line of readme.split("\n")) {
      if (line.startsWith("```")) fenced = !fenced;
      const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
      if (!heading) continue;
      const slug = (heading[1] ?? "").toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
      let unique = slug;
      for (let n = 1; anchors.has(unique); n++) unique = `${slug}-${n}`;
      anchors.add(unique);
    }
    const links = [...readme.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1] ?? "");
    expect(links.length).toBeGreaterThan(10);
    expect(links.filter((link) => !anchors.has(link))).toEqual([]);
  });
});

describe.skipIf(missing.length > 0)("the first hour: a quiet start, the quick start and the banner as written", () => {
  let dataDir: string;
  let tmp: string;
  let service: Started | undefined;
  let publicPort: number;
  let consolePort: number;
  let exports: { cli: string; demo: string };
  let env: NodeJS.ProcessEnv;
  const shells: Shell[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "first-hour-data-"));
    tmp = await mkdtemp(path.join(os.tmpdir(), "first-hour-tmp-"));
    service = await startService(dataDir);
    publicPort = Number(/Public API \(gRPC, gRPC-Web, Connect, REST \/v1\): http:\/\/localhost:(\d+)/.exec(service.banner)?.[1]);
    consolePort = Number(/Console API and web console: +http:\/\/localhost:(\d+)/.exec(service.banner)?.[1]);
    const exportLines = service.banner.split("\n").filter((l) => l.startsWith("  export "));
    exports = { cli: exportLines.find((l) => l.includes("CONSOLE_URL="))!.trim(), demo: exportLines.find((l) => l.includes("API_KEY="))!.trim() };
    env = { ...process.env, TMPDIR: tmp, GOBIN: GO_TOOLS_BIN, PATH: `${GO_TOOLS_BIN}${path.delimiter}${process.env.PATH}` };
    for (const name of ["CONSOLE_URL", "CONSOLE_TOKEN", "API_KEY", "MONGODB_URI"]) delete env[name];
  }, 180_000);
  afterAll(async () => {
    for (const shell of shells) shell.close();
    await stopService(service);
    await rm(dataDir, { recursive: true, force: true });
    await rm(tmp, { recursive: true, force: true });
  });

  /** The console's answer to `path`, as the operator of this run. */
  async function consoleGet(urlPath: string): Promise<Record<string, unknown>> {
    const token = /CONSOLE_TOKEN=(\S+)/.exec(exports.cli)?.[1];
    const res = await fetch(`http://127.0.0.1:${consolePort}${urlPath}`, { headers: { authorization: `Bearer ${token}` } });
    return (await res.json()) as Record<string, unknown>;
  }

  it("starts on a fresh data folder with nothing logged at warn level or above, and prints two export lines", () => {
    expect(service!.logs.filter((l) => (l.level as number) >= 40)).toEqual([]);
    expect(service!.logs.some((l) => l.msg === "embedded database started")).toBe(true);
    expect(exports.cli).toMatch(/^export CONSOLE_URL=http:\/\/localhost:\d+ CONSOLE_TOKEN=\S+ PATH="\$PWD\/node_modules\/\.bin:\$PATH"$/);
    expect(exports.demo).toMatch(/^export API_KEY=sk_\S+ WORKSPACE_ID=[0-9a-f-]{36} SENDER_ID=snd_\S+ TEMPLATE_ID=tpl_\S+ FORM_TEMPLATE_ID=tpl_\S+$/);
  });

  it("runs README's quick start as written, in order, with the banner's export lines", async () => {
    const blocks = await quickStartBlocks();
    expect(blocks[0]).toBe("npm install && npm start\n");
    const appPort = await freePort();
    const commands = blocks
      .slice(1)
      .flatMap(shellCommands)
      .map((c) => c.replaceAll("localhost:8080", `localhost:${publicPort}`).replaceAll("localhost:8081", `localhost:${consolePort}`).replaceAll("3000", String(appPort)))
      .map((c) => (c.startsWith("export CONSOLE_URL=") ? exports.cli : c.startsWith("export API_KEY=") ? exports.demo : c))
      .filter((c) => hasGo || !/\bgo install\b|^grpcurl /.test(c));
    expect(commands.length).toBeGreaterThan(15);
    const shell = new Shell(env);
    shells.push(shell);
    const ran: { command: string; code: number; output: string }[] = [];
    for (const command of commands) {
      if (command.startsWith("kill %1 %2")) {
        // Before stopping them, the events the app and the listener print, as a person would wait to see them.
        for (const type of ["message.read", "message.received", "flow.completed"]) {
          await shell.waitFor(new RegExp(`${type.replace(".", "\\.")} +\\S+ +signature ok +→ http://localhost:${appPort}/webhooks 204`));
          await shell.waitFor(new RegExp(`app: ${type.replace(".", "\\.")} [0-9a-f-]{36}\\n`));
        }
      }
      const result = await shell.run(command, /go install/.test(command) ? 300_000 : 60_000);
      ran.push({ command, ...result });
      expect(result.code, `${command}\n${result.output}`).toBe(0);
      if (command.includes("receiver.mjs") && command.endsWith("&")) await shell.waitFor(/app: example receiver at /);
      if (command.includes("webhooks listen") && command.endsWith("&")) await shell.waitFor(/Signing secret: whsec_/);
    }
    const output = (start: string) => ran.find((r) => r.command.startsWith(start))!.output;
    const messageId = (await shell.run('printf %s "$MESSAGE_ID"')).output;
    const flowResponseId = (await shell.run('printf %s "$FLOW_RESPONSE_ID"')).output;
    expect(messageId).toMatch(/^msg_[0-9a-f-]{36}$/);
    expect(flowResponseId).toMatch(/^frs_[0-9a-f-]{36}$/);

    // The send was accepted, and read back by its id.
    expect(output("curl -s localhost")).toContain('"status": "accepted"');
    expect(output(`curl -s localhost:${publicPort}/v1/messages/$MESSAGE_ID`)).toContain(`"message_id": "${messageId}"`);
    expect(output("msgsvc simulate reply")).toMatch(/^Reply recorded as msg_/);
    expect(output("msgsvc messages get")).toMatch(/Timeline[\s\S]*Credits[\s\S]*Events[\s\S]*message\.received/);
    // The form's submission with its two files, one of them downloaded byte for byte.
    const photo = await readFile(path.join(projectRoot, "test", "fixtures", "photo.jpg"));
    const submission = JSON.parse(output(`curl -s localhost:${publicPort}/v1/flow_responses/`)) as { files: { file_name: string; sha256: string }[] };
    expect(submission.files.map((f) => f.file_name)).toEqual(["photo.jpg", "contract.pdf"]);
    expect(submission.files[0]?.sha256).toBe(sha256(photo));
    expect((await readFile(path.join(tmp, "photo.jpg"))).equals(photo)).toBe(true);
    // gRPC, with buf curl and grpcurl: the same message.
    expect(JSON.parse(output("npx buf curl"))).toMatchObject({ message: { messageId, status: expect.stringMatching(/^MESSAGE_STATUS_/) } });
    if (hasGo) expect(JSON.parse(output("grpcurl "))).toMatchObject({ message: { messageId } });
    // The listener deleted its endpoint when stopped.
    const workspaceId = /WORKSPACE_ID=(\S+)/.exec(exports.demo)?.[1];
    await eventually(async () => ((await consoleGet(`/console/v1/workspaces/${workspaceId}/webhook_endpoints`)).total === 0 ? true : undefined));
  }, 420_000);

  it("runs the banner's commands as printed, in order, after its export lines", async () => {
    const printed = service!.banner.slice(service!.banner.indexOf("Then try these in order"));
    const block = printed.slice(printed.indexOf("\n") + 1, printed.indexOf("\n\n"));
    const commands = [exports.cli, exports.demo, ...shellCommands(block.replace(/^ {2}/gm, ""))].filter((c) => hasGo || !/^grpcurl /.test(c));
    expect(commands.some((c) => c.includes("test/fixtures/photo.jpg"))).toBe(true);
    const shell = new Shell(env);
    shells.push(shell);
    const ran: { command: string; code: number; output: string }[] = [];
    for (const command of commands) {
      if (command === "kill %1") {
        for (const type of ["message.read", "message.received", "flow.completed"]) await shell.waitFor(new RegExp(`${type.replace(".", "\\.")} +\\S+ +signature ok +→ 200`));
      }
      const result = await shell.run(command);
      ran.push({ command, ...result });
      expect(result.code, `${command}\n${result.output}`).toBe(0);
      if (command.includes("webhooks listen") && command.endsWith("&")) await shell.waitFor(/Signing secret: whsec_/);
    }
    const output = (start: string) => ran.find((r) => r.command.startsWith(start))!.output;
    expect(output("curl -s http://localhost")).toContain('"status": "accepted"');
    expect(output("msgsvc simulate reply")).toMatch(/^Reply recorded as msg_/);
    expect(output("npx buf curl")).toContain('"accountId"');
    if (hasGo) expect(output("grpcurl ")).toContain('"accountId"');
    const photo = await readFile(path.join(projectRoot, "test", "fixtures", "photo.jpg"));
    expect((await readFile(path.join(tmp, "photo.jpg"))).equals(photo)).toBe(true);
  }, 300_000);

  it("starts again on the now current data folder as quietly, with the same export lines", async () => {
    await stopService(service);
    service = await startService(dataDir);
    expect(service.logs.filter((l) => (l.level as number) >= 40)).toEqual([]);
    const exportLines = service.banner.split("\n").filter((l) => l.startsWith("  export ")).map((l) => l.trim());
    // The same credentials and ids (the ports are this start's own).
    const withoutPorts = (line: string) => line.replace(/localhost:\d+/g, "localhost:PORT");
    expect(exportLines.map(withoutPorts)).toEqual([exports.cli, exports.demo].map(withoutPorts));
  }, 120_000);
});
