import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { ensurePythonVenv, missingToolchain, mustRun } from "../src/codegen/toolchain.js";
import { projectRoot } from "../src/store/embedded-ferretdb.js";
import { createTestService, type TestService } from "./helpers/test-service.js";

/*
 * Client checks from outside TypeScript, against a real service: a Go program
 * (gRPC, gen/go) and a Python program (gRPC with gen/python, and REST over
 * plain HTTP). Each runs a plan of steps and prints what it read, one JSON
 * line per step; this file asserts them field by field. A language whose
 * toolchain is missing is skipped with the reason printed.
 *
 * To check another operation once it lands: add its call to
 * test/clients/go/main.go and test/clients/python/client_check.py, a step to
 * plan(), and its expectations below.
 */

const goMissing = await missingToolchain("go");
const pythonMissing = await missingToolchain("python3-venv");
if (goMissing) console.warn(`Skipping the Go client checks: ${goMissing}`);
if (pythonMissing) console.warn(`Skipping the Python client checks: ${pythonMissing}`);

const CLIENTS = path.join(projectRoot, "test", "clients");
const UNKNOWN_KEY = `sk_${"A".repeat(43)}`;

/** One step's report, as the programs print it. */
interface Report {
  id: string;
  call: string;
  ok: boolean;
  /** REST only: the HTTP status. */
  status?: number;
  headers: Record<string, string>;
  response?: unknown;
  error?: Record<string, unknown>;
}

let t: TestService;
let workspaceId: string;
let key: { id: string; secret: string };
const scopes = ["templates:read", "messages:send", "messages:read"];

beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("Clients");
  key = await t.createKey(workspaceId, { name: "client check key", scopes, rateLimitPerMin: 100 });
});
afterAll(() => t?.close());

function plan(target: string) {
  return {
    target,
    steps: [
      { id: "me", call: "get_me", key: key.secret },
      { id: "unknown_key", call: "get_me", key: UNKNOWN_KEY },
    ],
  };
}

/** Runs a client program with the plan on standard input; returns its reports by step id. */
async function runPlan(command: string, args: string[], input: object, env: NodeJS.ProcessEnv = process.env): Promise<Map<string, Report>> {
  const stdout = await mustRun(command, args, { cwd: CLIENTS, input: JSON.stringify(input), env });
  const reports = stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Report);
  return new Map(reports.map((r) => [r.id, r]));
}

const expectedMe = () => ({
  account_id: workspaceId,
  key: { id: key.id, name: "client check key", scopes },
  rate_limit_per_min: 100,
});

/** Request-Id and the rate-limit headers, on answers and refusals alike (README "Headers"). */
function expectStandardHeaders(headers: Record<string, string>, limit: string | RegExp) {
  expect(headers["request-id"]).toMatch(/^req_[0-9a-f]{24}$/);
  expect(headers["ratelimit-limit"]).toMatch(limit);
  expect(headers["ratelimit-remaining"]).toMatch(/^\d+$/);
  expect(headers["ratelimit-reset"]).toMatch(/^\d+$/);
}

/** The gRPC checks are the same in every language. */
function grpcChecks(reports: () => Map<string, Report>) {
  it("GetMe (GET /v1/me): every field of the typed response, and the headers", () => {
    const me = reports().get("me");
    expect(me).toMatchObject({ call: "get_me", ok: true });
    expect(me?.response).toEqual(expectedMe());
    expectStandardHeaders(me!.headers, /^100$/);
  });

  it("an unknown key: UNAUTHENTICATED with the ErrorInfo invalid_key", () => {
    const refused = reports().get("unknown_key");
    expect(refused).toMatchObject({ call: "get_me", ok: false });
    expect(refused?.error).toEqual({
      code: Code.Unauthenticated,
      message: "The API key is not recognised",
      reason: "invalid_key",
      domain: "messaging-service",
      metadata: {},
    });
    expectStandardHeaders(refused!.headers, /^\d+$/);
  });
}

describe.skipIf(goMissing)("Go over gRPC (gen/go, test/clients/go)", () => {
  let reports = new Map<string, Report>();
  beforeAll(async () => {
    const binary = path.join(projectRoot, ".cache", "clients", "go-clientcheck");
    await mustRun("go", ["build", "-o", binary, "."], { cwd: path.join(CLIENTS, "go") });
    reports = await runPlan(binary, [], plan(`127.0.0.1:${t.service.publicPort}`));
  }, 300_000);
  grpcChecks(() => reports);
});

describe.skipIf(pythonMissing)("Python (gen/python, test/clients/python)", () => {
  let python = "";
  let env: NodeJS.ProcessEnv = {};
  beforeAll(async () => {
    python = await ensurePythonVenv();
    env = { ...process.env, PYTHONPATH: path.join(projectRoot, "gen", "python"), PYTHONDONTWRITEBYTECODE: "1" };
  }, 300_000);

  describe("over gRPC", () => {
    let reports = new Map<string, Report>();
    beforeAll(async () => {
      reports = await runPlan(python, [path.join("python", "client_check.py"), "grpc"], plan(`127.0.0.1:${t.service.publicPort}`), env);
    });
    grpcChecks(() => reports);
  });

  describe("over REST (plain HTTP)", () => {
    let reports = new Map<string, Report>();
    beforeAll(async () => {
      reports = await runPlan(python, [path.join("python", "client_check.py"), "rest"], plan(t.publicUrl), env);
    });

    it("GET /v1/me: the whole JSON body, and the headers", () => {
      const me = reports.get("me");
      expect(me).toMatchObject({ call: "get_me", ok: true, status: 200 });
      expect(me?.response).toEqual(expectedMe());
      expect(me?.headers["content-type"]).toBe("application/json; charset=utf-8");
      expectStandardHeaders(me!.headers, /^100$/);
    });

    it("an unknown key: 401 with the error body", () => {
      const refused = reports.get("unknown_key");
      expect(refused).toMatchObject({ call: "get_me", ok: false, status: 401 });
      expect(refused?.error).toEqual({
        code: "invalid_key",
        message: "The API key is not recognised",
        details: {},
        request_id: refused?.headers["request-id"],
      });
      expectStandardHeaders(refused!.headers, /^\d+$/);
    });
  });
});
