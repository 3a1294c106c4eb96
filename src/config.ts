import { z } from "zod";

const port = (fallback: number) =>
  z.coerce
    .number({ error: "must be a whole number from 0 to 65535" })
    .int("must be a whole number from 0 to 65535")
    .min(0, "must be a whole number from 0 to 65535")
    .max(65535, "must be a whole number from 0 to 65535")
    .default(fallback);

const integer = (fallback: number, min: number, max: number, unit: string) =>
  z.coerce
    .number({ error: `must be a whole number of ${unit} from ${min} to ${max}` })
    .int(`must be a whole number of ${unit} from ${min} to ${max}`)
    .min(min, `must be a whole number of ${unit} from ${min} to ${max}`)
    .max(max, `must be a whole number of ${unit} from ${min} to ${max}`)
    .default(fallback);

const boolean = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no"], { error: 'must be "true" or "false"' })
    .default(fallback ? "true" : "false")
    .transform((v) => v === "true" || v === "1" || v === "yes");

/** One delay of WEBHOOK_RETRY_SCHEDULE: a whole number and a unit (ms, s, m, h); "0" alone means at once. */
const DELAY = /^(\d{1,9})(ms|s|m|h)?$/;
const DELAY_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const SCHEDULE_RULE = 'must be 1 to 20 comma-separated delays such as "0,10s,1m,5m,30m,2h,6h" (units ms, s, m, h; at most 24h each)';

/** Parses WEBHOOK_RETRY_SCHEDULE into milliseconds, or undefined when malformed. */
function parseSchedule(text: string): number[] | undefined {
  const delays = text.split(",").map((part) => {
    const match = DELAY.exec(part.trim());
    if (!match || (match[2] === undefined && match[1] !== "0")) return NaN;
    return Number(match[1]) * (DELAY_UNITS[match[2] ?? "ms"] as number);
  });
  return delays.length <= 20 && delays.every((d) => Number.isFinite(d) && d <= 86_400_000) ? delays : undefined;
}

/** Parses a 32-byte key given as 64 hex digits or as base64/base64url, or undefined. */
function parseKey(text: string): Buffer | undefined {
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : /^[A-Za-z0-9+/_-]{43}=?$/.test(text) ? Buffer.from(text, "base64") : undefined;
  return key?.length === 32 ? key : undefined;
}

/**
 * Default FLOW_FILE_ALLOWED_TYPES: the types WhatsApp Flows' DocumentPicker
 * accepts (PhotoPicker photos are among them), from
 * https://developers.facebook.com/docs/whatsapp/flows/reference/media_upload
 */
export const DEFAULT_FLOW_FILE_TYPES = [
  "application/gzip",
  "application/msword",
  "application/pdf",
  "application/vnd.ms-excel",
  "application/vnd.ms-powerpoint",
  "application/vnd.oasis.opendocument.presentation",
  "application/vnd.oasis.opendocument.spreadsheet",
  "application/vnd.oasis.opendocument.text",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/x-7z-compressed",
  "application/zip",
  "image/avif",
  "image/gif",
  "image/heic",
  "image/heif",
  "image/jpeg",
  "image/png",
  "image/tiff",
  "image/webp",
  "text/plain",
  "video/mp4",
  "video/mpeg",
];

const MEDIA_TYPE = /^(\*\/\*|[a-z0-9][a-z0-9!#$&^_.+-]*\/([a-z0-9][a-z0-9!#$&^_.+-]*|\*))$/;

/** A comma-separated list of media types ("type/subtype", "type/*", or "*\/*" for any), lower-cased. */
const mediaTypes = (fallback: string[]) =>
  z
    .string()
    .default(fallback.join(","))
    .transform((v) => v.split(",").map((t) => t.trim().toLowerCase()).filter((t) => t !== ""))
    .refine((list) => list.length > 0 && list.every((t) => MEDIA_TYPE.test(t)), 'must be a comma-separated list of media types such as "image/jpeg,application/pdf", "image/*" or "*/*"');

/**
 * Environment variables the service reads, with defaults and rules. Every
 * variable is documented in README.md §Configuration.
 */
const schema = z.object({
  PORT: port(8080),
  HOST: z.string().min(1).default("0.0.0.0"),
  CONSOLE_PORT: port(8081),
  CONSOLE_HOST: z.string().min(1).default("127.0.0.1"),
  CONSOLE_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  CONSOLE_ADMIN_EMAIL: z.string().regex(/^[^\s@]+@[^\s@]+$/, "must be an email address").optional(),
  CONSOLE_ADMIN_PASSWORD: z.string().min(12, "must be at least 12 characters").optional(),
  CONSOLE_SESSION_TTL_HOURS: integer(12, 1, 720, "hours"),
  CONSOLE_SIGN_IN_FAILURES_PER_ACCOUNT: integer(10, 1, 10_000, "failures"),
  CONSOLE_SIGN_IN_FAILURES_PER_ADDRESS: integer(30, 1, 10_000, "failures"),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must start with "mongodb://" or "mongodb+srv://"')
    .optional(),
  MONGODB_DATABASE: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,60}$/, "must be 1 to 60 letters, digits, '_' or '-'")
    .default("messaging"),
  ROLE: z.enum(["all", "api", "worker"], { error: 'must be "all", "api" or "worker"' }).default("all"),
  TRUST_X_FORWARDED_FOR: boolean(false),
  DATABASE_COMMAND_METRICS: boolean(false),
  UNAUTHENTICATED_RATE_LIMIT_PER_MIN: integer(30, 1, 100_000, "requests"),
  KEY_CACHE_TTL_MS: integer(1000, 0, 1000, "milliseconds"),
  REQUEST_LOG_RETENTION_DAYS: integer(30, 1, 3650, "days"),
  REQUEST_LOG_FLUSH_MS: integer(100, 1, 10_000, "milliseconds"),
  SHUTDOWN_TIMEOUT_MS: integer(10_000, 0, 600_000, "milliseconds"),
  HEAP_GROWING_PERCENT: integer(30, 0, 300, "percent"),
  HEADERS_TIMEOUT_MS: integer(10_000, 100, 120_000, "milliseconds"),
  REQUEST_TIMEOUT_MS: integer(60_000, 100, 600_000, "milliseconds"),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
      error: "must be one of fatal, error, warn, info, debug, trace, silent",
    })
    .default("info"),
  DATA_DIR: z.string().min(1).default(".data"),
  NETWORK: z.enum(["simulator", "whatsapp"], { error: 'must be "simulator" or "whatsapp"' }).default("simulator"),
  MESSAGE_PRICE_CREDITS: integer(1, 0, 1_000_000, "credits"),
  DISPATCH_MAX_ATTEMPTS: integer(8, 1, 100, "attempts"),
  DISPATCH_RETRY_BASE_MS: integer(2000, 1, 3_600_000, "milliseconds"),
  DISPATCH_RETRY_MAX_MS: integer(600_000, 1, 86_400_000, "milliseconds"),
  DISPATCH_CLAIM_TIMEOUT_MS: integer(60_000, 100, 3_600_000, "milliseconds"),
  MESSAGES_SWEEP_INTERVAL_MS: integer(30_000, 100, 3_600_000, "milliseconds"),
  RECOVERY_AGE_MS: integer(60_000, 1000, 3_600_000, "milliseconds"),
  SIMULATOR_SENT_DELAY_MS: integer(200, 0, 3_600_000, "milliseconds"),
  SIMULATOR_DELIVERED_DELAY_MS: integer(1000, 0, 3_600_000, "milliseconds"),
  SIMULATOR_READ_DELAY_MS: integer(2000, 0, 3_600_000, "milliseconds"),
  SIMULATOR_OUT_OF_ORDER_PERCENT: integer(10, 0, 100, "percent"),
  WHATSAPP_GRAPH_URL: z.url({ error: "must be an http(s) URL such as https://graph.facebook.com" }).default("https://graph.facebook.com"),
  WHATSAPP_GRAPH_VERSION: z
    .string()
    .regex(/^v\d+\.\d+$/, 'must look like "v23.0"')
    .default("v23.0"),
  WHATSAPP_ACCESS_TOKEN: z.string().min(1).optional(),
  WHATSAPP_APP_SECRET: z.string().min(1).optional(),
  WHATSAPP_VERIFY_TOKEN: z.string().min(1).optional(),
  WHATSAPP_REQUEST_TIMEOUT_MS: integer(15_000, 100, 120_000, "milliseconds"),
  JOB_POLL_INTERVAL_MS: integer(5000, 20, 60_000, "milliseconds"),
  WEBHOOK_SECRET_KEY: z
    .string()
    .transform((text, ctx) => parseKey(text) ?? (ctx.addIssue({ code: "custom", message: "must be 32 bytes as 64 hex digits or base64" }), z.NEVER))
    .optional(),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default("0,10s,1m,5m,30m,2h,6h")
    .transform((text, ctx) => parseSchedule(text) ?? (ctx.addIssue({ code: "custom", message: SCHEDULE_RULE }), z.NEVER)),
  WEBHOOK_ATTEMPT_TIMEOUT_MS: integer(10_000, 50, 60_000, "milliseconds"),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean(false),
  WEBHOOK_ALLOW_HTTP_LOOPBACK: boolean(false),
  WEBHOOK_LEASE_MS: integer(60_000, 200, 3_600_000, "milliseconds"),
  WEBHOOK_CLAIM_INTERVAL_MS: integer(1000, 10, 60_000, "milliseconds"),
  FLOW_FILE_MAX_BYTES: integer(25 * 1024 * 1024, 1, 1024 * 1024 * 1024, "bytes"),
  FLOW_FILE_ALLOWED_TYPES: mediaTypes(DEFAULT_FLOW_FILE_TYPES),
  FLOW_FILE_FETCH_MAX_ATTEMPTS: integer(8, 1, 100, "attempts"),
  FLOW_FILE_FETCH_RETRY_BASE_MS: integer(5000, 1, 3_600_000, "milliseconds"),
}).superRefine((v, ctx) => {
  if (v.WEBHOOK_LEASE_MS < 2 * v.WEBHOOK_ATTEMPT_TIMEOUT_MS + 100) {
    ctx.addIssue({
      code: "custom",
      path: ["WEBHOOK_LEASE_MS"],
      message: `must be at least twice WEBHOOK_ATTEMPT_TIMEOUT_MS plus 100 (${2 * v.WEBHOOK_ATTEMPT_TIMEOUT_MS + 100})`,
    });
  }
});

/** Variables that NETWORK=whatsapp cannot do without. */
const WHATSAPP_REQUIRED = ["WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"] as const;

/** The validated configuration (see README.md §Configuration). */
export interface Config {
  /** Public port: gRPC, gRPC-Web, Connect and REST at /v1. 0 picks a free port. */
  port: number;
  /** Address the public port binds to. */
  host: string;
  /** Console port (messaging.console.v1). 0 picks a free port. */
  consolePort: number;
  /** Address the console port binds to; loopback by default. */
  consoleHost: string;
  /** Bearer token of the console API; undefined lets the entry point make one. */
  consoleToken: string | undefined;
  /** Email of the bootstrap console admin (an operator user); undefined for none. */
  consoleAdminEmail: string | undefined;
  /** Password of the bootstrap console admin (set or reset at every start). */
  consoleAdminPassword: string | undefined;
  /** Lifetime of a console session, in hours. */
  consoleSessionTtlHours: number;
  /** Failed console sign-ins per account (email or the console token) in 15 minutes before every attempt is refused. */
  consoleSignInFailuresPerAccount: number;
  /** Failed console sign-ins per client address in 15 minutes before every attempt is refused. */
  consoleSignInFailuresPerAddress: number;
  /** MongoDB connection string; undefined starts the embedded database (mongo-java-server). */
  mongodbUri: string | undefined;
  /** Database name. */
  mongodbDatabase: string;
  /** Which parts run in this process: "all", "api" (ports) or "worker" (jobs). */
  role: "all" | "api" | "worker";
  /** Whether the client address is taken from X-Forwarded-For. */
  trustForwardedFor: boolean;
  /**
   * Whether /metrics carries `msgsvc_database_command_duration_seconds`. Off by
   * default: it needs the driver's command monitoring, which decodes every
   * reply a second time for its event (measured: peak RSS 278 against 230 MiB
   * while draining a backlog of 10,000 webhook deliveries).
   */
  databaseCommandMetrics: boolean;
  /** Per-address budget per minute of requests without a valid key. */
  unauthenticatedRateLimitPerMin: number;
  /** How long a looked-up API key may be served from cache, in ms (at most 5000). */
  keyCacheTtlMs: number;
  /** How long request-log rows are kept, in days. */
  requestLogRetentionDays: number;
  /** Longest wait before buffered request-log rows are written, in ms. */
  requestLogFlushMs: number;
  /** Longest wait for in-flight work at shutdown, in ms. */
  shutdownTimeoutMs: number;
  /**
   * How far V8 lets the old generation grow past what the last full
   * collection kept before the next one, in percent (V8's
   * --heap-growing-percent); 0 leaves it to V8, which lets a busy heap grow
   * to several times its live size. See tuneHeap.
   */
  heapGrowingPercent: number;
  /** Time a client has to send a request's headers, in ms (answered 408 beyond). */
  headersTimeoutMs: number;
  /** Time a client has to send a whole request, in ms (answered 408 beyond). */
  requestTimeoutMs: number;
  /** pino log level. */
  logLevel: string;
  /** Folder for the embedded database's data. */
  dataDir: string;
  /** Messaging network adapter: the in-process simulator or the WhatsApp Cloud API. */
  network: "simulator" | "whatsapp";
  /** Credits one message costs (0 makes sending free). */
  messagePriceCredits: number;
  /** Dispatch attempts of a message before a network outage makes it fail. */
  dispatchMaxAttempts: number;
  /** Wait before the second attempt, in ms; doubled for each later one. */
  dispatchRetryBaseMs: number;
  /** Longest wait between attempts, in ms. */
  dispatchRetryMaxMs: number;
  /** A dispatch claimed longer ago than this without an answer counts as interrupted, in ms. */
  dispatchClaimTimeoutMs: number;
  /** Interval of the messages recovery sweep, in ms. */
  messagesSweepIntervalMs: number;
  /**
   * A step a process left half-done (a credit change without its ledger entry,
   * a stored network report not yet applied) is completed by the messages
   * sweep once older than this, in ms: longer than any live request takes.
   */
  recoveryAgeMs: number;
  /** Simulator: delay from acceptance to the network's "sent" report, in ms. */
  simulatorSentDelayMs: number;
  /** Simulator: delay from acceptance to "delivered", in ms. */
  simulatorDeliveredDelayMs: number;
  /** Simulator: delay from acceptance to "read", in ms. */
  simulatorReadDelayMs: number;
  /** Simulator: share of messages whose delivered and read reports arrive swapped, in percent. */
  simulatorOutOfOrderPercent: number;
  /** WhatsApp: Graph API base URL, without version. */
  whatsappGraphUrl: string;
  /** WhatsApp: Graph API version, for example "v23.0". */
  whatsappGraphVersion: string;
  /** WhatsApp: access token (system user token) sent as Bearer. */
  whatsappAccessToken: string | undefined;
  /** WhatsApp: app secret, key of the X-Hub-Signature-256 HMAC of callbacks. */
  whatsappAppSecret: string | undefined;
  /** WhatsApp: token Meta echoes in the GET verification handshake. */
  whatsappVerifyToken: string | undefined;
  /** WhatsApp: longest wait for a Graph API answer, in ms. */
  whatsappRequestTimeoutMs: number;
  /** How often the job worker looks for jobs made by other processes, in ms (Agenda's processEvery). */
  jobPollIntervalMs: number;
  /**
   * AES-256-GCM key (32 bytes) that encrypts webhook signing secrets at rest;
   * undefined lets the entry point keep one in DATA_DIR (embedded database only).
   */
  webhookSecretKey: Buffer | undefined;
  /** Delays before the retries of a failed delivery, in ms (spec §Delivery rules 2: 0, 10 s, 1 min, 5 min, 30 min, 2 h, 6 h). */
  webhookRetrySchedule: number[];
  /** Deadline of a webhook attempt for the whole answer, in ms (spec: 10 s). */
  webhookAttemptTimeoutMs: number;
  /** Whether webhooks may go to private, loopback and link-local addresses. */
  webhookAllowPrivateTargets: boolean;
  /** Whether endpoint URLs may use plain http for loopback addresses. */
  webhookAllowHttpLoopback: boolean;
  /**
   * How long a webhook delivery claimed by a process stays its own, in ms:
   * past it (the process died mid-attempt), another claims it again and
   * records the lost attempt as interrupted.
   */
  webhookLeaseMs: number;
  /** How often each worker's claim job (Agenda) looks for due webhook deliveries, in ms. */
  webhookClaimIntervalMs: number;
  /** Largest file of a form submission that is stored, in bytes. */
  flowFileMaxBytes: number;
  /** Media types of form files that are stored ("type/subtype" or "type/*"), lower case. */
  flowFileAllowedTypes: string[];
  /** Attempts to fetch a form's files from the network before an outage makes them unreadable. */
  flowFileFetchMaxAttempts: number;
  /** Wait before the second fetch attempt, in ms; doubled for each later one (at most 10 minutes). */
  flowFileFetchRetryBaseMs: number;
}

/** Raised by loadConfig with one line per bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * Reads and validates the configuration from environment variables. Empty
 * values count as unset.
 *
 * @throws ConfigError naming each bad variable, its rule and the value given.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0]);
        const given = name === "WEBHOOK_SECRET_KEY" ? `${input[name]?.length} characters` : JSON.stringify(input[name]);
        return `${name}: ${issue.message} (got ${given})`;
      }),
    );
  }
  const v = parsed.data;
  if ((v.CONSOLE_ADMIN_EMAIL === undefined) !== (v.CONSOLE_ADMIN_PASSWORD === undefined)) {
    throw new ConfigError(["CONSOLE_ADMIN_EMAIL and CONSOLE_ADMIN_PASSWORD: set both or neither"]);
  }
  if (v.NETWORK === "whatsapp") {
    const missing = WHATSAPP_REQUIRED.filter((name) => v[name] === undefined);
    if (missing.length > 0) throw new ConfigError(missing.map((name) => `${name}: must be set when NETWORK is "whatsapp" (got undefined)`));
  }
  return {
    port: v.PORT,
    host: v.HOST,
    consolePort: v.CONSOLE_PORT,
    consoleHost: v.CONSOLE_HOST,
    consoleToken: v.CONSOLE_TOKEN,
    consoleAdminEmail: v.CONSOLE_ADMIN_EMAIL?.toLowerCase(),
    consoleAdminPassword: v.CONSOLE_ADMIN_PASSWORD,
    consoleSessionTtlHours: v.CONSOLE_SESSION_TTL_HOURS,
    consoleSignInFailuresPerAccount: v.CONSOLE_SIGN_IN_FAILURES_PER_ACCOUNT,
    consoleSignInFailuresPerAddress: v.CONSOLE_SIGN_IN_FAILURES_PER_ADDRESS,
    mongodbUri: v.MONGODB_URI,
    mongodbDatabase: v.MONGODB_DATABASE,
    role: v.ROLE,
    trustForwardedFor: v.TRUST_X_FORWARDED_FOR,
    databaseCommandMetrics: v.DATABASE_COMMAND_METRICS,
    unauthenticatedRateLimitPerMin: v.UNAUTHENTICATED_RATE_LIMIT_PER_MIN,
    keyCacheTtlMs: v.KEY_CACHE_TTL_MS,
    requestLogRetentionDays: v.REQUEST_LOG_RETENTION_DAYS,
    requestLogFlushMs: v.REQUEST_LOG_FLUSH_MS,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    heapGrowingPercent: v.HEAP_GROWING_PERCENT,
    headersTimeoutMs: v.HEADERS_TIMEOUT_MS,
    requestTimeoutMs: v.REQUEST_TIMEOUT_MS,
    logLevel: v.LOG_LEVEL,
    dataDir: v.DATA_DIR,
    network: v.NETWORK,
    messagePriceCredits: v.MESSAGE_PRICE_CREDITS,
    dispatchMaxAttempts: v.DISPATCH_MAX_ATTEMPTS,
    dispatchRetryBaseMs: v.DISPATCH_RETRY_BASE_MS,
    dispatchRetryMaxMs: v.DISPATCH_RETRY_MAX_MS,
    dispatchClaimTimeoutMs: v.DISPATCH_CLAIM_TIMEOUT_MS,
    messagesSweepIntervalMs: v.MESSAGES_SWEEP_INTERVAL_MS,
    recoveryAgeMs: v.RECOVERY_AGE_MS,
    simulatorSentDelayMs: v.SIMULATOR_SENT_DELAY_MS,
    simulatorDeliveredDelayMs: v.SIMULATOR_DELIVERED_DELAY_MS,
    simulatorReadDelayMs: v.SIMULATOR_READ_DELAY_MS,
    simulatorOutOfOrderPercent: v.SIMULATOR_OUT_OF_ORDER_PERCENT,
    whatsappGraphUrl: v.WHATSAPP_GRAPH_URL.replace(/\/+$/, ""),
    whatsappGraphVersion: v.WHATSAPP_GRAPH_VERSION,
    whatsappAccessToken: v.WHATSAPP_ACCESS_TOKEN,
    whatsappAppSecret: v.WHATSAPP_APP_SECRET,
    whatsappVerifyToken: v.WHATSAPP_VERIFY_TOKEN,
    whatsappRequestTimeoutMs: v.WHATSAPP_REQUEST_TIMEOUT_MS,
    jobPollIntervalMs: v.JOB_POLL_INTERVAL_MS,
    webhookSecretKey: v.WEBHOOK_SECRET_KEY,
    webhookRetrySchedule: v.WEBHOOK_RETRY_SCHEDULE,
    webhookAttemptTimeoutMs: v.WEBHOOK_ATTEMPT_TIMEOUT_MS,
    webhookAllowPrivateTargets: v.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    webhookAllowHttpLoopback: v.WEBHOOK_ALLOW_HTTP_LOOPBACK,
    webhookLeaseMs: v.WEBHOOK_LEASE_MS,
    webhookClaimIntervalMs: v.WEBHOOK_CLAIM_INTERVAL_MS,
    flowFileMaxBytes: v.FLOW_FILE_MAX_BYTES,
    flowFileAllowedTypes: v.FLOW_FILE_ALLOWED_TYPES,
    flowFileFetchMaxAttempts: v.FLOW_FILE_FETCH_MAX_ATTEMPTS,
    flowFileFetchRetryBaseMs: v.FLOW_FILE_FETCH_RETRY_BASE_MS,
  };
}
