import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { MongoClient } from "mongodb";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { loadConfig, type Config } from "../../src/config.js";
import { startService, type RunningService } from "../../src/server.js";
import type { Clock } from "../../src/shared/clock.js";
import { createLogger, type Logger } from "../../src/shared/logger.js";
import { TEST_WEBHOOK_SECRET_KEY } from "./processes.js";

/** The console token every test service uses. */
export const TEST_CONSOLE_TOKEN = "test-console-token-0123456789";

/** A clock tests set and move. */
export interface TestClock extends Clock {
  set(date: Date): void;
  advance(ms: number): void;
}

/** Makes a clock that starts at `start` and only moves when told. */
export function createTestClock(start = new Date("2026-11-23T10:00:05.000Z")): TestClock {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    set: (date) => (now = date.getTime()),
    advance: (ms) => (now += ms),
  };
}

/** A service started for one suite, with helpers to seed it. */
export interface TestService {
  readonly service: RunningService;
  /** http://127.0.0.1:<public port> */
  readonly publicUrl: string;
  /** http://127.0.0.1:<console port> */
  readonly consoleUrl: string;
  /** The suite's database name. */
  readonly databaseName: string;
  /** A Connect client of a console service, authenticated with the console token. */
  console<S extends DescService>(service: S): Client<S>;
  /** Creates a workspace through the console API; returns its id. */
  createWorkspace(name?: string, credits?: number): Promise<string>;
  /** Creates a key through the console API; returns its id and secret. */
  createKey(
    workspaceId: string,
    options?: { scopes?: string[]; ipAllowList?: string[]; rateLimitPerMin?: number; name?: string; expiresAt?: Date },
  ): Promise<{ id: string; secret: string }>;
  /** Writes buffered request-log rows now. */
  flushRequestLog(): Promise<void>;
  /** Stops the service and drops its database. */
  close(): Promise<void>;
}

/**
 * Starts the real service (composition root, both ports on free ports, the
 * suite's own database on the run's database server), like production.
 */
export async function createTestService(options: { config?: Partial<Config>; clock?: Clock; logger?: Logger } = {}): Promise<TestService> {
  const mongodbUri = inject("mongoUri");
  const databaseName = `test_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const config: Config & { mongodbUri: string } = {
    ...loadConfig({ MONGODB_URI: mongodbUri }),
    host: "::",
    port: 0,
    consoleHost: "127.0.0.1",
    consolePort: 0,
    consoleToken: TEST_CONSOLE_TOKEN,
    mongodbDatabase: databaseName,
    logLevel: "silent",
    requestLogFlushMs: 20,
    webhookSecretKey: Buffer.from(TEST_WEBHOOK_SECRET_KEY, "hex"),
    ...options.config,
    mongodbUri,
  };
  const service = await startService({ config, logger: options.logger ?? createLogger(config.logLevel), clock: options.clock });
  const publicUrl = `http://127.0.0.1:${service.publicPort}`;
  const consoleUrl = `http://127.0.0.1:${service.consolePort}`;
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${TEST_CONSOLE_TOKEN}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: consoleUrl, httpVersion: "1.1", interceptors: [auth] });
  const console = <S extends DescService>(s: S) => createClient(s, transport);
  return {
    service,
    publicUrl,
    consoleUrl,
    databaseName,
    console,
    async createWorkspace(name = "Test workspace", credits = 0) {
      const { workspace } = await console(WorkspaceService).createWorkspace({ name, credits: BigInt(credits) });
      return workspace!.id;
    },
    async createKey(workspaceId, o = {}) {
      const res = await console(ApiKeyService).createApiKey({
        workspaceId,
        name: o.name ?? "test key",
        scopes: o.scopes ?? [],
        ipAllowList: o.ipAllowList ?? [],
        rateLimitPerMin: o.rateLimitPerMin ?? 100,
        expiresAt: o.expiresAt ? { seconds: BigInt(Math.floor(o.expiresAt.getTime() / 1000)), nanos: 0 } : undefined,
      });
      return { id: res.apiKey!.id, secret: res.secret };
    },
    flushRequestLog: () => service.requestLog.flush(),
    async close() {
      await service.close();
      const client = new MongoClient(mongodbUri);
      try {
        await client.db(databaseName).dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}

/**
 * Polls `check` until it returns a value other than undefined, or fails
 * after `timeoutMs` (background results are awaited this way, never slept on).
 * The default deadline is generous (20 s, under the 30 s test timeout): two
 * suites share the cores and the database, and a deadline is not a speed
 * assertion (speed is measured in test/bench).
 */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 20_000, stepMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}
