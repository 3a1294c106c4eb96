import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { access, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { projectRoot } from "../shared/project-root.js";
import type { Logger } from "../shared/logger.js";
import { createJavaLogReader, logJavaRecord } from "./embedded-mongo-log.js";

/*
 * The embedded default database (README "Design" §5): mongo-java-server, started
 * by the service itself when MONGODB_URI is unset. The launcher is a few
 * lines of Java (embedded-mongo/EmbeddedMongoServer.java) whose dependencies
 * Maven resolves from Maven Central on the first start; it is compiled once
 * into `.cache/embedded-mongo/<hash of pom and launcher>/`.
 */

const sourceDir = path.join(projectRoot, "src", "store", "embedded-mongo");
/** The launcher's Java sources: its main class, the BSON storage of the H2 backend, and the indexes it keeps in memory. */
const launcherSources = ["EmbeddedMongoServer.java", "BsonStore.java", "SecondaryIndex.java", "UniqueIndex.java", "ChangedFieldsUpdate.java", "CommandCounts.java", "IndexCounts.java", "Ranks.java", "AggregateInput.java"].map((name) => path.join(sourceDir, name));
const pomFile = path.join(sourceDir, "pom.xml");

/** Which storage the embedded server uses. */
export type EmbeddedBackend =
  /** Everything in the JVM's memory: for a test run. */
  | { kind: "memory" }
  /**
   * H2 MVStore in one file: data survives a restart. An acknowledged write
   * reaches the file within `commitIntervalMs` (MongoDB's journal: 100 ms);
   * a killed database process can lose that window, a clean stop loses nothing.
   */
  | { kind: "h2"; file: string; commitIntervalMs: number };

/** A running embedded database. */
export interface EmbeddedDatabase {
  /** Connection string, `mongodb://127.0.0.1:<port>/`. */
  readonly uri: string;
  /** Process id of the server (a JVM). */
  readonly pid: number;
  /** Stops the server (committing the H2 store); resolves once the process has exited. */
  stop(): Promise<void>;
}

/** How to run the compiled launcher: its class folder and the dependency jars. */
interface Launcher {
  classesDir: string;
  classpath: string;
}

interface RunResult {
  code: number | null;
  output: string;
}

/** Runs a command, handing each output line to `onLine`; rejects only when it cannot be started. */
function run(command: string, args: string[], cwd: string, onLine?: (line: string) => void): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on("line", (line) => {
        output = (output + line + "\n").slice(-16_000);
        onLine?.(line);
      });
    }
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Fails with a clear message when `command -version` cannot run. */
async function requireTool(command: string, versionFlag: string, purpose: string): Promise<void> {
  const result = await run(command, [versionFlag], projectRoot).catch(() => undefined);
  if (!result || result.code !== 0) {
    throw new Error(`${command} was not found: ${purpose} (or set MONGODB_URI to a MongoDB server)`);
  }
}

/**
 * Returns the compiled launcher, building it first when the cache does not
 * hold it: Maven resolves mongo-java-server and its backends (each download is
 * logged, so a first start shows its progress) and javac compiles the
 * launcher. Concurrent first starts are safe (each renames its own result into
 * place). A cache whose jars have since left the local Maven repository is built again.
 *
 * @throws Error naming what is missing when Java 17 or Maven is not installed, or with Maven's output when resolving fails.
 */
export async function ensureEmbeddedMongo(logger?: Logger): Promise<Launcher> {
  const hash = createHash("sha256").update(await readFile(pomFile));
  for (const source of launcherSources) hash.update(await readFile(source));
  const digest = hash.digest("hex").slice(0, 16);
  const cacheDir = path.join(projectRoot, ".cache", "embedded-mongo", digest);
  const classesDir = path.join(cacheDir, "classes");
  const classpathFile = path.join(cacheDir, "classpath.txt");
  if (await exists(path.join(classesDir, "EmbeddedMongoServer.class"))) {
    const classpath = (await readFile(classpathFile, "utf8")).trim();
    const jars = classpath.split(path.delimiter);
    if ((await Promise.all(jars.map(exists))).every(Boolean)) return { classesDir, classpath };
  }

  await requireTool("java", "-version", "Java 17 runs the embedded database");
  await requireTool("javac", "-version", "the JDK 17 compiles the embedded database's launcher");
  await requireTool("mvn", "-v", "Maven fetches the embedded database from Maven Central");
  logger?.info("fetching the embedded database (mongo-java-server) from Maven Central once");
  const work = path.join(cacheDir, `build-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(path.join(work, "classes"), { recursive: true });
  try {
    const resolved = path.join(work, "classpath.txt");
    const maven = await run(
      "mvn",
      ["-B", "-f", pomFile, "dependency:build-classpath", `-Dmdep.outputFile=${resolved}`],
      projectRoot,
      (line) => {
        const download = /Downloaded from \S+: \S+\/([^/]+\.(?:jar|pom)) \(([^)]*)\)/.exec(line);
        if (download?.[1]?.endsWith(".jar")) logger?.info({ artifact: download[1], size: download[2] }, "downloaded");
      },
    );
    if (maven.code !== 0) throw new Error(`Maven could not resolve the embedded database:\n${maven.output}`);
    const classpath = (await readFile(resolved, "utf8")).trim();
    const javac = await run("javac", ["-d", path.join(work, "classes"), "-cp", classpath, ...launcherSources], projectRoot);
    if (javac.code !== 0) throw new Error(`javac could not compile the embedded database's launcher:\n${javac.output}`);
    await writeFile(classpathFile, classpath + "\n");
    await rm(classesDir, { recursive: true, force: true });
    await rename(path.join(work, "classes"), classesDir).catch(async (err: NodeJS.ErrnoException) => {
      if (!(await exists(path.join(classesDir, "EmbeddedMongoServer.class")))) throw err; // another start won the race
    });
    logger?.info("embedded database ready");
    return { classesDir, classpath };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Waits for the launcher's `listening <port>` line. */
function waitForPort(child: ChildProcess, timeoutMs: number, output: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the embedded database did not start within ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const match = /^listening (\d+)$/.exec(line);
      if (!match) return;
      clearTimeout(timer);
      resolve(Number(match[1]));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the embedded database exited with ${code}:\n${output()}`));
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`java could not be started (Java 17 runs the embedded database; or set MONGODB_URI): ${err.message}`));
    });
  });
}

/**
 * Starts mongo-java-server on a free loopback port. The child reads its
 * standard input from this process and ends when it closes, so it never
 * outlives this process, however that ends (even `kill -9`).
 *
 * Its log reaches `logger` one record a line (createJavaLogReader): real
 * faults at error level, their Java stacks only at debug level; an error a
 * command is answered with (a missing index, a duplicate key) is the
 * client's and is not logged, nor is a client that went away.
 *
 * @param backend memory (tests) or an H2 MVStore file (`npm start`; its folder is created).
 * @throws Error when Java or Maven is missing, the H2 file is in use by another server, or the server does not start within 60 s.
 */
export async function startEmbeddedMongo(backend: EmbeddedBackend, logger?: Logger): Promise<EmbeddedDatabase> {
  const launcher = await ensureEmbeddedMongo(logger);
  const args = backend.kind === "memory" ? ["memory"] : ["h2", path.resolve(projectRoot, backend.file), String(backend.commitIntervalMs)];
  if (backend.kind === "h2") await mkdir(path.dirname(args[1]!), { recursive: true });
  const child = spawn(
    "java",
    [
      "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
      // Its own shutdown warns about the clients it closes; not news.
      "-Dorg.slf4j.simpleLogger.log.de.bwaldvogel.mongo.MongoServer=error",
      // It warns for each non-unique secondary index it ignores (it scans instead); they are declared for MongoDB.
      "-Dorg.slf4j.simpleLogger.log.de.bwaldvogel.mongo.backend.AbstractMongoDatabase=error",
      // Its command handler logs every error it answers, with a stack (an index that is not there, a duplicate key):
      // the client has the answer. The launcher logs what is a fault of the server itself (EmbeddedMongoServer.answering).
      "-Dorg.slf4j.simpleLogger.log.de.bwaldvogel.mongo.wire.MongoWireProtocolHandler=off",
      // The launcher's own lines: faults, and what it did once (a store converted).
      "-Dorg.slf4j.simpleLogger.log.embedded-database=info",
      "-cp",
      [launcher.classesDir, launcher.classpath].join(path.delimiter),
      "EmbeddedMongoServer",
      ...args,
    ],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let output = "";
  const records = createJavaLogReader((record) => logger && logJavaRecord(logger, record));
  createInterface({ input: child.stderr! })
    .on("line", (line) => {
      output = (output + line + "\n").slice(-16_000);
      records.line(line);
    })
    .on("close", records.end);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await waitForPort(child, 60_000, () => output);
  logger?.info({ port, backend: backend.kind, ...(backend.kind === "h2" ? { file: path.relative(projectRoot, args[1]!) } : {}) }, "embedded database started");
  return {
    uri: `mongodb://127.0.0.1:${port}/`,
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
