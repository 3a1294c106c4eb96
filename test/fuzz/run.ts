import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { SCOPES } from "../../src/auth/scopes.js";
import { loadConfig } from "../../src/config.js";
import { startService } from "../../src/server.js";
import { createLogger } from "../../src/shared/logger.js";
import { startEmbeddedMongo } from "../../src/store/embedded-mongo.js";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { runFuzz } from "./requests.js";

/*
 * `npm run fuzz [-- --runs N --seed N]`: the properties of
 * test/fuzz.security.test.ts, longer (default 5,000 requests of each kind, a
 * seed from the clock, printed), against a service on the embedded database
 * (memory backend) or MONGODB_URI. Exits 1 with fast-check's report, whose
 * seed and path replay the failure, or when the service logged an error.
 */
const { values } = parseArgs({ options: { runs: { type: "string", default: "5000" }, seed: { type: "string", default: String(Date.now() % 2 ** 31) } } });
const runs = Number(values.runs);
const seed = Number(values.seed);
const errors: string[] = [];
const embedded = process.env.MONGODB_URI ? undefined : await startEmbeddedMongo({ kind: "memory" });
const consoleToken = "fuzz-console-token-0123456789";
const service = await startService({
  config: { ...loadConfig({}), host: "127.0.0.1", port: 0, consolePort: 0, consoleToken, mongodbUri: process.env.MONGODB_URI ?? embedded!.uri, mongodbDatabase: `fuzz_${process.pid}`, logLevel: "warn", webhookSecretKey: randomBytes(32) },
  logger: createLogger("warn", "fuzz", { write: (line: string) => void (JSON.parse(line).level >= 50 && errors.push(line)) }),
});
let failed = false;
try {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${consoleToken}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${service.consolePort}`, httpVersion: "1.1", interceptors: [auth] });
  const { workspace } = await createClient(WorkspaceService, transport).createWorkspace({ name: "Fuzz", credits: 5n });
  const { secret } = await createClient(ApiKeyService, transport).createApiKey({ workspaceId: workspace!.id, name: "fuzz", scopes: [...SCOPES], rateLimitPerMin: 100 });
  process.stdout.write(`fuzz: seed ${seed}, ${runs} requests over HTTP/1.1 and ${runs} over gRPC\n`);
  const started = Date.now();
  await runFuzz({ publicUrl: `http://127.0.0.1:${service.publicPort}`, key: secret }, { seed, runs });
  process.stdout.write(`fuzz: every property held (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  if (errors.length > 0) throw new Error(`the service logged ${errors.length} errors:\n${errors.slice(0, 5).join("\n")}`);
} catch (err) {
  failed = true;
  const cause = (err as Error).cause as Error | undefined;
  process.stderr.write(`${(err as Error).message.slice(0, 4000)}\n${cause ? `Caused by: ${cause.message}\n` : ""}`);
} finally {
  await service.db.dropDatabase().catch(() => {});
  await service.close();
  await embedded?.stop();
}
process.exit(failed ? 1 : 0);
