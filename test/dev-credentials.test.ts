import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { SERVICE_ENTRY } from "../src/codegen/build-service.js";
import { projectRoot } from "../src/shared/project-root.js";
import { TEST_WEBHOOK_SECRET_KEY } from "./helpers/processes.js";

/*
 * `npm start` on the embedded database keeps its development credentials
 * (demo API key, console token, admin password) in DATA_DIR across restarts,
 * as Stripe's test keys stay put; with MONGODB_URI it keeps none.
 */

const dataDir = await mkdtemp(path.join(os.tmpdir(), "dev-credentials-"));
afterAll(() => rm(dataDir, { recursive: true, force: true }));

interface Banner {
  apiKey: string;
  consoleToken: string;
  adminPassword: string;
  publicUrl: string;
}

/** Runs the service (the build of src/main.ts, as `npm start` does) until its banner is printed, reads the credentials from it, and stops it with SIGTERM. */
async function startAndRead(env: Record<string, string | undefined>): Promise<Banner> {
  const child = spawn(process.execPath, [SERVICE_ENTRY], {
    cwd: projectRoot,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", CONSOLE_PORT: "0", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const exited = once(child, "exit");
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", () => out.includes("Stop with Ctrl-C.") && resolve());
    child.once("exit", () => reject(new Error(`exited before its banner:\n${out}`)));
  });
  const pick = (re: RegExp) => re.exec(out)?.[1] ?? "";
  const banner = {
    apiKey: pick(/export API_KEY=(\S+)/),
    consoleToken: pick(/CONSOLE_TOKEN=(\S+)/),
    adminPassword: pick(/admin@localhost \/ (\S+)/),
    publicUrl: pick(/Public API \(gRPC, gRPC-Web, Connect, REST \/v1\): (http:\/\/localhost:\d+)/),
  };
  const me = await fetch(`${banner.publicUrl}/v1/me`, { headers: { authorization: `Bearer ${banner.apiKey}` } });
  expect(me.status).toBe(200);
  child.kill("SIGTERM");
  await exited;
  return banner;
}

describe("development credentials", () => {
  it("are the same after a restart on the embedded database, kept owner-only in DATA_DIR", async () => {
    const env = { MONGODB_URI: undefined, CONSOLE_TOKEN: undefined, CONSOLE_ADMIN_EMAIL: undefined, CONSOLE_ADMIN_PASSWORD: undefined, DATA_DIR: dataDir };
    const first = await startAndRead(env);
    expect(first.apiKey).toMatch(/^sk_/);
    expect(first.consoleToken.length).toBeGreaterThanOrEqual(24);
    expect(first.adminPassword.length).toBeGreaterThanOrEqual(12);
    const second = await startAndRead(env);
    expect(second).toMatchObject({ apiKey: first.apiKey, consoleToken: first.consoleToken, adminPassword: first.adminPassword });
    const file = path.join(dataDir, "dev-credentials.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ api_key_secret: first.apiKey, console_token: first.consoleToken, admin_password: first.adminPassword });
  }, 120_000);

  it("are never made with MONGODB_URI, and the operator's secrets never appear in any output", async () => {
    const other = await mkdtemp(path.join(os.tmpdir(), "dev-credentials-prod-"));
    const secrets = { CONSOLE_TOKEN: "operator-console-token-5f1c9a7e", CONSOLE_ADMIN_PASSWORD: "operator-admin-pw-83d1" };
    const child = spawn(process.execPath, [SERVICE_ENTRY], {
      cwd: projectRoot,
      env: {
        ...process.env,
        MONGODB_URI: inject("mongoUri"),
        MONGODB_DATABASE: `test_devcred_${process.pid}`,
        WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
        CONSOLE_ADMIN_EMAIL: "ops@example.com",
        ...secrets,
        DATA_DIR: other,
        PORT: "0",
        CONSOLE_PORT: "0",
        LOG_LEVEL: "debug",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    await new Promise<void>((resolve) => child.stdout.on("data", () => out.includes("Messaging service is running") && resolve()));
    child.kill("SIGTERM");
    await once(child, "exit");
    expect(out).not.toContain("API_KEY=");
    expect(out).toContain("export CONSOLE_URL=http://localhost:");
    for (const secret of [...Object.values(secrets), TEST_WEBHOOK_SECRET_KEY]) {
      expect(out).not.toContain(secret);
      expect(err).not.toContain(secret);
    }
    await expect(stat(path.join(other, "dev-credentials.json"))).rejects.toThrow();
    await rm(other, { recursive: true, force: true });
  }, 60_000);

  it("with MONGODB_URI, a console port needs CONSOLE_TOKEN: the start is refused naming it, nothing made up", async () => {
    const child = spawn(process.execPath, [SERVICE_ENTRY], {
      cwd: projectRoot,
      env: { ...process.env, MONGODB_URI: inject("mongoUri"), MONGODB_DATABASE: `test_devcred_${process.pid}`, WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY, CONSOLE_TOKEN: "", ROLE: "api", PORT: "0", CONSOLE_PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    const [code] = (await once(child, "exit")) as [number];
    expect(code).toBe(2);
    expect(err).toContain('CONSOLE_TOKEN: must be set when MONGODB_URI is set and ROLE is "api"');
  }, 60_000);

  it("a bad secret is named with its length, never its value", async () => {
    const { loadConfig } = await import("../src/config.js");
    expect(() => loadConfig({ CONSOLE_TOKEN: "short-secret" })).toThrow("CONSOLE_TOKEN: must be at least 16 characters (got 12 characters)");
    expect(() => loadConfig({ CONSOLE_ADMIN_EMAIL: "a@b.c", CONSOLE_ADMIN_PASSWORD: "tiny" })).toThrow("CONSOLE_ADMIN_PASSWORD: must be at least 12 characters (got 4 characters)");
  });
});
