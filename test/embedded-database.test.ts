import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, it } from "vitest";
import { projectRoot } from "../src/shared/project-root.js";
import { startEmbeddedMongo } from "../src/store/embedded-mongo.js";
import { startProcess } from "./helpers/processes.js";
import { eventually } from "./helpers/test-service.js";

/*
 * The embedded default database (mongo-java-server, src/store/embedded-mongo.ts):
 * what the Node driver sees of it, that the H2 file keeps data across a
 * restart, that it never outlives the process that started it, and the
 * clear errors of a bad start.
 */

const temp = await mkdtemp(path.join(os.tmpdir(), "embedded-db-"));
afterAll(() => rm(temp, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Runs src/main.ts until it exits; resolves to its exit code and standard error. */
async function runMain(env: Record<string, string | undefined>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stderr };
}

describe("the embedded database", () => {
  it("reports MongoDB 5.0 with wire version 13, and applies concurrent $inc exactly", async () => {
    const db = await startEmbeddedMongo({ kind: "memory" });
    const client = await new MongoClient(db.uri).connect();
    try {
      const hello = await client.db("admin").command({ isMaster: 1 });
      expect(hello.maxWireVersion).toBe(13);
      expect((await client.db("admin").command({ buildInfo: 1 })).version).toBe("5.0.0");
      const counters = client.db("t").collection<{ _id: string; n: number }>("counters");
      await counters.insertOne({ _id: "c", n: 0 });
      await Promise.all(Array.from({ length: 500 }, () => counters.updateOne({ _id: "c" }, { $inc: { n: 1 } })));
      expect((await counters.findOne({ _id: "c" }))?.n).toBe(500);
    } finally {
      await client.close();
      await db.stop();
    }
  });

  it("keeps the H2 file's data across a clean restart", async () => {
    const file = path.join(temp, "restart", "database.mv");
    const first = await startEmbeddedMongo({ kind: "h2", file, commitIntervalMs: 100 });
    let client = await new MongoClient(first.uri).connect();
    await client.db("app").collection("things").insertMany([{ _id: "a" as never, v: 1 }, { _id: "b" as never, v: 2 }]);
    await client.close();
    await first.stop();
    expect(alive(first.pid)).toBe(false);

    const second = await startEmbeddedMongo({ kind: "h2", file, commitIntervalMs: 100 });
    client = await new MongoClient(second.uri).connect();
    try {
      expect(await client.db("app").collection("things").find().sort({ _id: 1 }).toArray()).toEqual([
        { _id: "a", v: 1 },
        { _id: "b", v: 2 },
      ]);
    } finally {
      await client.close();
      await second.stop();
    }
  });

  it("ends when the process that started it is killed with SIGKILL", async () => {
    const { child, value } = await startProcess("test/helpers/embedded-database-child.ts", {}, (line) =>
      typeof line.pid === "number" ? { pid: line.pid, uri: line.uri as string } : undefined,
    );
    expect(alive(value.pid)).toBe(true);
    child.kill("SIGKILL");
    await once(child, "exit");
    await eventually(async () => (alive(value.pid) ? undefined : true), 15_000);
  });

  it("a start whose port is taken says so, exits non-zero and leaves no database behind", async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    const dataDir = path.join(temp, "port-taken");
    try {
      const { code, stderr } = await runMain({ MONGODB_URI: undefined, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", CONSOLE_PORT: "0", LOG_LEVEL: "warn" });
      expect(code).not.toBe(0);
      expect(stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
    } finally {
      blocker.close();
    }
    // No JVM is left holding this run's data folder.
    await eventually(async () => {
      const ps = spawn("ps", ["-eo", "args"]);
      let out = "";
      ps.stdout.on("data", (d) => (out += d));
      await once(ps, "exit");
      return out.includes(dataDir) ? undefined : true;
    }, 15_000);
  });

  it("an unreachable MONGODB_URI is a clear error naming it", async () => {
    const { code, stderr } = await runMain({ MONGODB_URI: "mongodb://127.0.0.1:1/", WEBHOOK_SECRET_KEY: "7e57".repeat(16), PORT: "0", CONSOLE_PORT: "0", LOG_LEVEL: "warn" });
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/The service could not start: the database at mongodb:\/\/127\.0\.0\.1:1\/ cannot be reached \(MONGODB_URI\)/);
  }, 30_000);

  it("without Java, says that Java 17 is needed (or MONGODB_URI)", async () => {
    // A PATH that has node and nothing else.
    const bin = path.join(temp, "bin-without-java");
    await mkdir(bin, { recursive: true });
    await symlink(process.execPath, path.join(bin, "node"));
    const { code, stderr } = await runMain({ MONGODB_URI: undefined, DATA_DIR: path.join(temp, "no-java"), PATH: bin, PORT: "0", CONSOLE_PORT: "0", LOG_LEVEL: "warn" });
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/java .*(not found|could not be started).*Java 17.*MONGODB_URI/i);
  });
});
