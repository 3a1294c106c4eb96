import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionService } from "../gen/messaging/console/v1/console_users_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { grpcJsCall, rest } from "./helpers/clients.js";
import { createTestClock, createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * Console hardening: failed sign-ins (password and console token alike) are
 * limited per account and per client address, and while a limit holds even
 * the right secret is refused; state-changing requests from another site are
 * refused; the web console forbids framing.
 */

const ADMIN_EMAIL = "admin@example.com";
const ADMIN_PASSWORD = "the-admin-password-1";
const clock = createTestClock();
let t: TestService;
let ipv6Url: string;

beforeAll(async () => {
  t = await createTestService({
    clock,
    config: {
      consoleHost: "::",
      consoleAdminEmail: ADMIN_EMAIL,
      consoleAdminPassword: ADMIN_PASSWORD,
      consoleSignInFailuresPerAccount: 3,
      consoleSignInFailuresPerAddress: 5,
    },
  });
  ipv6Url = `http://[::1]:${t.service.consolePort}`;
});
afterAll(() => t.close());

const signIn = (baseUrl: string, email: string, password: string) => rest(baseUrl, "POST", "/console/v1/sessions", { body: { email, password } });
const listWorkspaces = (baseUrl: string, token: string, headers: Record<string, string> = {}) =>
  rest(baseUrl, "GET", "/console/v1/workspaces", { key: token, headers });

function connectWith(baseUrl: string, token: string) {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  return createClient(WorkspaceService, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [auth] }));
}

/** Moves the clock into the next 15-minute window (limits of the last one end). */
function nextWindow() {
  clock.advance(15 * 60_000);
}

describe("password sign-in limits", () => {
  it("after 3 failures for an account, even the right password is refused until the window ends", async () => {
    for (let i = 0; i < 3; i++) expect((await signIn(t.consoleUrl, ADMIN_EMAIL, `wrong-${i}-password`)).status).toBe(401);
    const right = await signIn(t.consoleUrl, ADMIN_EMAIL, ADMIN_PASSWORD);
    expect(right.status).toBe(429);
    expect(right.json.error.code).toBe("rate_limited");
    expect(right.json.error.message).toMatch(/for this account/);
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);
    // The account is limited from every address (here: IPv6 loopback), over Connect too.
    const overConnect = await createClient(SessionService, createConnectTransport({ baseUrl: ipv6Url, httpVersion: "1.1" }))
      .login({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD })
      .catch((e: unknown) => ConnectError.from(e));
    expect(overConnect).toBeInstanceOf(ConnectError);
    expect((overConnect as ConnectError).code).toBe(Code.ResourceExhausted);
    nextWindow();
    expect((await signIn(t.consoleUrl, ADMIN_EMAIL, ADMIN_PASSWORD)).status).toBe(200);
  });

  it("after 5 failures from an address, over any accounts, that address is refused; another address is not", async () => {
    nextWindow();
    for (let i = 0; i < 5; i++) expect((await signIn(t.consoleUrl, `nobody-${i}@example.com`, "some-wrong-password")).status).toBe(401);
    const right = await signIn(t.consoleUrl, ADMIN_EMAIL, ADMIN_PASSWORD);
    expect(right.status).toBe(429);
    expect(right.json.error.message).toMatch(/from this address/);
    expect((await signIn(ipv6Url, ADMIN_EMAIL, ADMIN_PASSWORD)).status).toBe(200);
  });
});

describe("console token limits", () => {
  it("after 3 wrong tokens, the right one is refused (REST, Connect, gRPC) until the window ends", async () => {
    nextWindow();
    for (let i = 0; i < 3; i++) expect((await listWorkspaces(t.consoleUrl, `wrong-console-token-${i}`)).status).toBe(401);
    const right = await listWorkspaces(t.consoleUrl, TEST_CONSOLE_TOKEN);
    expect(right.status).toBe(429);
    expect(right.json.error.code).toBe("rate_limited");
    expect(right.headers.get("retry-after")).not.toBeNull();
    const overConnect = await connectWith(t.consoleUrl, TEST_CONSOLE_TOKEN)
      .listWorkspaces({})
      .catch((e: unknown) => ConnectError.from(e));
    expect((overConnect as ConnectError).code).toBe(Code.ResourceExhausted);
    const overGrpc = await grpcJsCall(`127.0.0.1:${t.service.consolePort}`, WorkspaceService.method.listWorkspaces, {}, { authorization: `Bearer ${TEST_CONSOLE_TOKEN}` });
    expect(overGrpc.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    nextWindow();
    expect((await listWorkspaces(t.consoleUrl, TEST_CONSOLE_TOKEN)).status).toBe(200);
  });
});

describe("cross-site requests", () => {
  it("refuses a state-changing request from another origin, even with the right token", async () => {
    nextWindow();
    const body = { name: "From elsewhere" };
    const foreign = await rest(t.consoleUrl, "POST", "/console/v1/workspaces", { key: TEST_CONSOLE_TOKEN, body, headers: { origin: "https://evil.example" } });
    expect(foreign.status).toBe(403);
    expect(foreign.json.error).toMatchObject({ code: "permission_denied", details: { origin: "https://evil.example" } });
    const crossSite = await rest(t.consoleUrl, "POST", "/console/v1/workspaces", { key: TEST_CONSOLE_TOKEN, body, headers: { "sec-fetch-site": "cross-site" } });
    expect(crossSite.status).toBe(403);
    const signInElsewhere = await rest(t.consoleUrl, "POST", "/console/v1/sessions", {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      headers: { origin: "https://evil.example" },
    });
    expect(signInElsewhere.status).toBe(403);
  });

  it("accepts the console's own origin and requests without one (CLI, scripts)", async () => {
    const own = `http://127.0.0.1:${t.service.consolePort}`;
    const same = await rest(t.consoleUrl, "POST", "/console/v1/workspaces", { key: TEST_CONSOLE_TOKEN, body: { name: "Same origin" }, headers: { origin: own, "sec-fetch-site": "same-origin" } });
    expect(same.status).toBe(200);
    const none = await rest(t.consoleUrl, "POST", "/console/v1/workspaces", { key: TEST_CONSOLE_TOKEN, body: { name: "No origin" } });
    expect(none.status).toBe(200);
    // A read from another origin is a GET: CORS keeps its answer from the other site's scripts.
    expect((await listWorkspaces(t.consoleUrl, TEST_CONSOLE_TOKEN, { origin: "https://evil.example" })).status).toBe(200);
  });

  it("serves the web console with a Content-Security-Policy that forbids framing", async () => {
    const page = await fetch(`${t.consoleUrl}/`);
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });
});
