import { spawn, type ChildProcess } from "node:child_process";
import { appendFile, cp, mkdir, readFile, rename, rm, writeFile, access } from "node:fs/promises";
import { constants as fsConstants } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startCommandGate } from "./command-gate.js";
import type { Logger } from "../shared/logger.js";

/** FerretDB release used when no MONGODB_URI is given (v1, SQLite backend). */
export const FERRETDB_VERSION = "v1.24.2";
const FERRETDB_MODULE = "github.com/FerretDB/FerretDB";
/** Name of the patch set applied by patchFerretDbSource; part of the cache path, so a change rebuilds. */
const FERRETDB_PATCHES = "id-index.update-close";

/**
 * Patches two defects of FerretDB v1 before it is built.
 *
 * 1. Look-ups, updates and deletes by `_id` use the unique `_id` index
 * instead of scanning the table. FerretDB creates the index on the expression `_ferretdb_sjson->"_id"`
 * but queries with `_ferretdb_sjson->'$._id'`; SQLite only uses an index on an
 * expression written the same way, so every `{_id: …}` find, update and delete
 * scanned the whole table (measured: an update by `_id` took 14 ms at 1,000
 * documents and 233 ms at 40,000). And it pushes `_id` down only when it is the
 * filter's sole key, so a conditional update such as `{_id, status}` scanned
 * too. The patch writes the query expression as the index's, and pushes an
 * `_id` string or ObjectId equality down whatever other keys the filter has. Both are safe: the handlers filter the rows again with the whole
 * filter. Inserts and every other query are unchanged.
 *
 * 2. An update command with many statements (bulkWrite) no longer hangs:
 * FerretDB kept each statement's query open until the whole command ended,
 * so the 100th statement waited forever for one of SQLite's 100 pooled
 * connections. The patch closes each statement's query once it is applied.
 *
 * @throws Error when the source no longer has the expected text (another FerretDB version).
 */
export async function patchFerretDbSource(source: string): Promise<void> {
  const edits: [file: string, from: string, to: string][] = [
    ["internal/backends/sqlite/metadata/metadata.go", `IDColumn = DefaultColumn + "->'$._id'"`, `IDColumn = DefaultColumn + "->\\"_id\\""`],
    ["internal/backends/sqlite/collection.go", "if params.Filter.Len() == 1 {", "if countIDKeys(params.Filter.Keys()) == 1 {"],
    [
      "internal/handler/msg_update.go",
      `result, err := common.UpdateDocument(ctx, c, "update", iter, &u)`,
      `result, err := common.UpdateDocument(ctx, c, "update", iter, &u)\n\t\tcloser.Close() // closing twice is harmless`,
    ],
  ];
  for (const [file, from, to] of edits) {
    const target = path.join(source, file);
    const text = await readFile(target, "utf8");
    if (!text.includes(from)) throw new Error(`cannot patch FerretDB: ${file} has no ${JSON.stringify(from)}`);
    await writeFile(target, text.replace(from, to));
  }
  const helper = [
    "",
    "// countIDKeys counts the _id keys of a filter (added by the messaging service's build).",
    "func countIDKeys(keys []string) int {",
    "\tn := 0",
    "\tfor _, k := range keys {",
    '\t\tif k == "_id" {',
    "\t\t\tn++",
    "\t\t}",
    "\t}",
    "\treturn n",
    "}",
    "",
  ].join("\n");
  await appendFile(path.join(source, "internal/backends/sqlite/collection.go"), helper);
}

/** Root folder of the project (where package.json is). */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A running embedded database. */
export interface EmbeddedDatabase {
  /** Connection string of the command gate in front of FerretDB. */
  uri: string;
  /** Stops the gate and FerretDB. */
  stop(): Promise<void>;
}

interface RunResult {
  code: number | null;
  output: string;
}

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns the path of the FerretDB binary, building it first if the cache
 * (`.cache/ferretdb/<version>/ferretdb`) does not hold it yet. The build needs
 * Go and the Go module proxy: it downloads the module source, writes the
 * version file a release build would have, and compiles `cmd/ferretdb` with
 * the PostgreSQL backend left out. Only the first run pays for it (about a
 * minute); concurrent builds are safe (each renames its own result into place).
 *
 * @throws Error with Go's output when Go is missing or the build fails.
 */
export async function ensureFerretDbBinary(logger?: Logger): Promise<string> {
  const cacheDir = path.join(projectRoot, ".cache", "ferretdb", `${FERRETDB_VERSION}-${FERRETDB_PATCHES}`);
  const binary = path.join(cacheDir, "ferretdb");
  if (await exists(binary)) return binary;

  logger?.info({ version: FERRETDB_VERSION }, "building the embedded FerretDB once (needs Go; about a minute)");
  const work = path.join(cacheDir, `build-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  const env = { ...process.env, GOFLAGS: "-mod=mod -buildvcs=false" };
  try {
    const download = await run("go", ["mod", "download", "-json", `${FERRETDB_MODULE}@${FERRETDB_VERSION}`], {
      cwd: work,
      env,
    }).catch((err: Error) => {
      throw new Error(`Go is needed to build the embedded FerretDB (or set MONGODB_URI): ${err.message}`);
    });
    if (download.code !== 0) throw new Error(`go mod download failed:\n${download.output}`);
    const moduleDir = (JSON.parse(download.output) as { Dir: string }).Dir;
    const source = path.join(work, "src");
    await cp(moduleDir, source, { recursive: true });
    await run("chmod", ["-R", "u+w", source], { cwd: work }); // the module cache is read-only
    // A release build has this file (FerretDB's build/version package panics without it).
    await writeFile(path.join(source, "build", "version", "version.txt"), `${FERRETDB_VERSION}\n`);
    await patchFerretDbSource(source);
    const output = path.join(work, "ferretdb");
    const buildArgs = ["build", "-trimpath", "-tags", "ferretdb_no_postgresql", "-o", output, "./cmd/ferretdb"];
    const build = await run("go", buildArgs, { cwd: source, env });
    if (build.code !== 0) {
      // An older local Go: fetch the toolchain FerretDB's go.mod names through the module proxy.
      const retry = await run("go", buildArgs, { cwd: source, env: { ...env, GOTOOLCHAIN: "go1.24.3" } });
      if (retry.code !== 0) throw new Error(`building FerretDB failed:\n${build.output}\n${retry.output}`);
    }
    await rename(output, binary);
    logger?.info({ binary: path.relative(projectRoot, binary) }, "embedded FerretDB built");
    return binary;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function waitForPort(port: number, child: ChildProcess, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`FerretDB exited with ${child.exitCode}:\n${output()}`));
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve();
      });
      socket.once("error", () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`FerretDB did not listen within ${timeoutMs} ms:\n${output()}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/**
 * Starts FerretDB v1 on a free loopback port with its SQLite data in
 * `dataDir` (telemetry off, debug listener off), and the command gate in
 * front of it. Several copies can run at once, each with its own folder.
 *
 * @param dataDir folder for the SQLite files; created if missing.
 * @throws Error when the binary cannot be built or FerretDB does not start.
 */
export async function startEmbeddedFerretDb(dataDir: string, logger?: Logger): Promise<EmbeddedDatabase> {
  const binary = await ensureFerretDbBinary(logger);
  const dir = path.resolve(projectRoot, dataDir);
  await mkdir(dir, { recursive: true });
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn(
      binary,
      [
        "--handler=sqlite",
        `--sqlite-url=file:${dir}/`,
        `--state-dir=${dir}`,
        `--listen-addr=127.0.0.1:${port}`,
        "--debug-addr=-",
        "--telemetry=disable",
        "--log-level=warn",
        "--log-format=json",
      ],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, DO_NOT_TRACK: "1" } },
    );
    let output = "";
    child.stdout?.on("data", (d) => (output = (output + d).slice(-8000)));
    child.stderr?.on("data", (d) => (output = (output + d).slice(-8000)));
    try {
      await waitForPort(port, child, 30_000, () => output);
    } catch (err) {
      lastError = err;
      child.kill("SIGKILL");
      continue;
    }
    const gate = await startCommandGate(port);
    logger?.info({ port: gate.port, dataDir: path.relative(projectRoot, dir) }, "embedded FerretDB started");
    return {
      uri: `mongodb://127.0.0.1:${gate.port}/`,
      async stop() {
        await gate.close();
        if (child.exitCode === null) {
          const exited = new Promise((resolve) => child.once("exit", resolve));
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
          await exited;
          clearTimeout(timer);
        }
      },
    };
  }
  throw lastError;
}
