import { randomBytes } from "node:crypto";
import path from "node:path";
import { hashSecret } from "./auth/api-key-secret.js";
import { SCOPES } from "./auth/scopes.js";
import { loadDevCredentials, saveDevCredentials, type DevCredentials } from "./console/dev-credentials.js";
import { ConfigError, loadConfig, type Config } from "./config.js";
import { ensureDemoSenderAndTemplate } from "./messages/demo.js";
import { startService, type RunningService } from "./server.js";
import { createLogger, type Logger } from "./shared/logger.js";
import { startEmbeddedMongo, type EmbeddedDatabase } from "./store/embedded-mongo.js";
import { loadOrCreateSecretKey } from "./webhooks/secret-key-file.js";

/*
 * Entry point of `npm start`. Reads the configuration, starts the embedded
 * database (mongo-java-server, H2 file in DATA_DIR) when MONGODB_URI is unset, starts the service, and on the
 * embedded default prints a demo workspace's API key with ready-to-paste
 * examples. SIGINT and SIGTERM shut it down gracefully.
 */

/**
 * How often the embedded database's H2 store commits, in ms: the window of
 * acknowledged writes a killed database process can lose (MongoDB's journal
 * commit interval is 100 ms too). A clean stop loses nothing.
 */
const EMBEDDED_COMMIT_INTERVAL_MS = 100;

/** The grpcurl the banner and README name in their install line (github.com/fullstorydev/grpcurl). */
const GRPCURL_VERSION = "v1.9.4";

/** What the banner shows of the demo workspace. */
interface Demo {
  workspaceId: string;
  secret: string;
  senderId: string;
  templateId: string;
  formTemplateId: string;
}

/**
 * Makes sure the demo workspace exists (1,000 credits) with a demo sender
 * and template, and an API key with every scope: the one kept in the
 * development credentials while it is still valid (so yesterday's
 * `export API_KEY=…` still works), else a new one, saved there.
 */
async function ensureDemo(service: RunningService, credentials: DevCredentials, file: string): Promise<Demo> {
  const workspace =
    (await service.workspaces.findDemo()) ??
    (await service.workspaces.create({ name: "Demo workspace", credits: 1000, demo: true }));
  const { senderId, templateId, formTemplateId } = await ensureDemoSenderAndTemplate(service.stores, workspace._id);
  const kept = credentials.apiKeySecret ? await service.keys.findBySecretHash(hashSecret(credentials.apiKeySecret)) : null;
  const usable = kept && kept.workspace_id === workspace._id && !kept.revoked_at && (!kept.expires_at || kept.expires_at > new Date());
  if (usable) return { workspaceId: workspace._id, secret: credentials.apiKeySecret, senderId, templateId, formTemplateId };
  const { secret } = await service.keys.create({
    workspaceId: workspace._id,
    name: "demo",
    scopes: [...SCOPES],
    expiresAt: null,
    ipAllowList: [],
    rateLimitPerMin: 100,
  });
  await saveDevCredentials(file, { ...credentials, apiKeySecret: secret });
  return { workspaceId: workspace._id, secret, senderId, templateId, formTemplateId };
}

/**
 * What `npm start` prints once the service is up: its two ports, and for
 * local development (the embedded database, with the demo workspace) the
 * sign-in, two `export` lines to paste into another shell, and the short
 * path of README "Quick start" with this run's ports and ids, each command
 * runnable as printed, in order (test/first-hour.test.ts runs them).
 */
function banner(
  config: Config,
  service: RunningService,
  demo: Demo | undefined,
  consoleToken: string,
  /** What to say of CONSOLE_TOKEN when the environment did not set it; undefined when it did. */
  tokenNote: string | undefined,
  demoAdmin: { email: string; password: string } | undefined,
): string {
  const api = `http://localhost:${service.publicPort}`;
  const consoleUrl = `http://localhost:${service.consolePort}`;
  const lines = [
    "",
    "Messaging service is running.",
    `  Public API (gRPC, gRPC-Web, Connect, REST /v1): ${api}`,
    `  Console API and web console:                     ${consoleUrl}`,
    ...(demoAdmin ? [`  Web console sign-in (kept across restarts):       ${demoAdmin.email} / ${demoAdmin.password}`] : []),
    "",
  ];
  // A token the operator set is never printed (README "Design" §7): the line leaves it to the operator's own environment.
  const cli = tokenNote
    ? `  export CONSOLE_URL=${consoleUrl} CONSOLE_TOKEN=${consoleToken} PATH="$PWD/node_modules/.bin:$PATH"`
    : `  export CONSOLE_URL=${consoleUrl} PATH="$PWD/node_modules/.bin:$PATH"   # and CONSOLE_TOKEN as this service was given it`;
  if (!demo) {
    lines.push(tokenNote ? `CONSOLE_TOKEN was not set; ${tokenNote}. For the msgsvc CLI, in this folder:` : "For the msgsvc CLI, in this folder:", cli, "  msgsvc workspaces list", "");
  } else {
    const send = (templateId: string, variables: Record<string, string>, flow?: { token: string }) =>
      `  curl -s ${api}/v1/messages -H "Authorization: Bearer $API_KEY" -H "Content-Type: application/json" \\\n    -d '${JSON.stringify({ to: "4915112345678", sender: demo.senderId, template: { id: templateId, variables, ...(flow ? { flow } : {}) } })}' | jq`;
    const newest = (name: string) => `  ${name}=$(curl -s "${api}/v1/messages?page_size=1" -H "Authorization: Bearer $API_KEY" | jq -r '.data[0].message_id')`;
    lines.push(
      `In another shell, in this folder, paste these (the same at every start: DATA_DIR/dev-credentials.json keeps them${tokenNote ? "" : "; CONSOLE_TOKEN is yours, not printed"}):`,
      cli,
      `  export API_KEY=${demo.secret} WORKSPACE_ID=${demo.workspaceId} SENDER_ID=${demo.senderId} TEMPLATE_ID=${demo.templateId} FORM_TEMPLATE_ID=${demo.formTemplateId}`,
      "",
      `Then try these in order (README.md "Quick start" says what each does; ${config.messagePriceCredits} credit a message, network: ${config.network}; jq reads the ids):`,
      `  msgsvc webhooks listen --workspace "$WORKSPACE_ID" &`,
      send(demo.templateId, { name: "Ada", code: "123456" }),
      newest("MESSAGE_ID"),
      `  curl -s ${api}/v1/messages/$MESSAGE_ID -H "Authorization: Bearer $API_KEY" | jq`,
      `  msgsvc simulate reply --message "$MESSAGE_ID" --text 'Thanks!'`,
      `  msgsvc messages get "$MESSAGE_ID"`,
      send(demo.formTemplateId, { name: "Ada" }, { token: "signup-4711" }),
      newest("FORM_MESSAGE_ID"),
      `  FLOW_RESPONSE_ID=$(msgsvc simulate flow --message "$FORM_MESSAGE_ID" --response '{"name":"Ada"}' --file id_photo=test/fixtures/photo.jpg --file contract=test/fixtures/contract.pdf --wait --json | jq -r .flow_response_id)`,
      `  curl -s -o "\${TMPDIR:-/tmp}/photo.jpg" ${api}/v1/flow_responses/$FLOW_RESPONSE_ID/files/0 -H "Authorization: Bearer $API_KEY"`,
      `  npx buf curl --schema . --protocol grpc --http2-prior-knowledge -H "Authorization: Bearer $API_KEY" ${api}/messaging.v1.AccountService/GetMe`,
      `  grpcurl -plaintext -H "Authorization: Bearer $API_KEY" localhost:${service.publicPort} messaging.v1.AccountService/GetMe   # go install github.com/fullstorydev/grpcurl/cmd/grpcurl@${GRPCURL_VERSION}`,
      "  kill %1",
      "",
    );
  }
  if (config.role === "all") lines.push("Stop with Ctrl-C.", "");
  return lines.join("\n");
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // With MONGODB_URI (production) the service makes no credential of its own: the operator gives each one, and
  // none is printed (README "Running in production").
  const missing: string[] = [];
  if (config.mongodbUri && !config.webhookSecretKey) {
    missing.push("WEBHOOK_SECRET_KEY: must be set when MONGODB_URI is set (32 bytes as 64 hex digits or base64; it encrypts the webhook signing secrets)");
  }
  if (config.mongodbUri && !config.consoleToken && config.role !== "worker") {
    missing.push(`CONSOLE_TOKEN: must be set when MONGODB_URI is set and ROLE is "${config.role}" (at least 16 characters; the same in every process)`);
  }
  if (missing.length > 0) {
    process.stderr.write(`Invalid configuration:\n${missing.map((m) => `  - ${m}\n`).join("")}`);
    process.exit(2);
  }
  const logger: Logger = createLogger(config.logLevel);
  let embedded: EmbeddedDatabase | undefined;
  let mongodbUri = config.mongodbUri;
  if (!mongodbUri) {
    embedded = await startEmbeddedMongo({ kind: "h2", file: path.join(config.dataDir, "database.mv"), commitIntervalMs: EMBEDDED_COMMIT_INTERVAL_MS }, logger);
    mongodbUri = embedded.uri;
  }
  // Local development (the embedded database) keeps its demo key, console token and admin password in
  // DATA_DIR across restarts; production (MONGODB_URI) never makes or reads them.
  const credentialsFile = path.join(config.dataDir, "dev-credentials.json");
  const credentials = embedded ? await loadDevCredentials(credentialsFile) : undefined;
  const tokenNote = config.consoleToken
    ? undefined
    : credentials
      ? "this one is kept in DATA_DIR/dev-credentials.json across restarts"
      : "this run uses a generated one";
  const consoleToken = config.consoleToken ?? credentials?.consoleToken ?? randomBytes(24).toString("base64url");
  // On the embedded default without a configured admin, sign-in for the web console uses a
  // bootstrap admin whose password is kept with the development credentials.
  const demoAdmin = credentials && !config.consoleAdminEmail ? { email: "admin@localhost", password: credentials.adminPassword } : undefined;
  const webhookSecretKey = config.webhookSecretKey ?? (await loadOrCreateSecretKey(path.join(config.dataDir, "webhook-secret-key")));
  // Signals are handled from here on: one that comes while the service starts stops it once started.
  let stopping = false;
  let starting: Promise<RunningService> | undefined;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    try {
      await (await starting)?.close();
      await embedded?.stop();
      process.exit(0);
    } catch (err) {
      logger.error({ err }, "shutdown failed");
      process.exit(1);
    }
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));

  starting = startService({
    config: {
      ...config,
      mongodbUri,
      consoleToken,
      webhookSecretKey,
      consoleAdminEmail: config.consoleAdminEmail ?? demoAdmin?.email,
      consoleAdminPassword: config.consoleAdminPassword ?? demoAdmin?.password,
    },
    logger,
  });
  const service = await starting;

  if (!stopping && config.role !== "worker") {
    const demo = credentials ? await ensureDemo(service, credentials, credentialsFile) : undefined;
    process.stdout.write(banner(config, service, demo, consoleToken, tokenNote, demoAdmin));
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`The service could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
