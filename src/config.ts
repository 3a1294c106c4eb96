import { z } from "zod";

const port = (fallback: number) =>
  z.coerce
    .number({ error: "must be a whole number from 0 to 65535" })
    .int("must be a whole number from 0 to 65535")
    .min(0, "must be a whole number from 0 to 65535")
    .max(65535, "must be a whole number from 0 to 65535")
    .default(fallback);

/** A whole number from `min` to `max`; `fallback` when unset (none: undefined, its default decided in the schema's transform). */
function integer(fallback: number, min: number, max: number, unit: string): z.ZodDefault<z.ZodCoercedNumber>;
function integer(fallback: undefined, min: number, max: number, unit: string): z.ZodOptional<z.ZodCoercedNumber>;
function integer(fallback: number | undefined, min: number, max: number, unit: string) {
  const rule = `must be a whole number of ${unit} from ${min} to ${max}`;
  const number = z.coerce.number({ error: rule }).int(rule).min(min, rule).max(max, rule);
  return fallback === undefined ? number.optional() : number.default(fallback);
}

const FLAG = z.enum(["true", "false", "1", "0", "yes", "no"], { error: 'must be "true" or "false"' });
const readFlag = (v: string) => v === "true" || v === "1" || v === "yes";

/** "true" or "false" (also 1/0, yes/no), `fallback` when unset. */
const boolean = (fallback: boolean) => FLAG.default(fallback ? "true" : "false").transform(readFlag);

/** "true" or "false" (also 1/0, yes/no), undefined when unset (its default decided in the schema's transform). */
const optionalBoolean = () => FLAG.transform(readFlag).optional();

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

/** A comma-separated list of reply keywords (each 1 to 30 characters), upper-cased; "" for none. */
const keywords = (fallback: string[]) =>
  z
    .string()
    .default(fallback.join(","))
    .transform((v) => v.split(",").map((k) => k.trim().toUpperCase()).filter((k) => k !== ""))
    .refine((list) => list.length <= 20 && list.every((k) => k.length <= 30), "must be at most 20 comma-separated keywords of at most 30 characters each");

/** Default opt-out keywords of a workspace (Twilio's and the CTIA's STOP words). */
export const DEFAULT_OPT_OUT_KEYWORDS = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"];
/** Default opt-in keywords of a workspace. */
export const DEFAULT_OPT_IN_KEYWORDS = ["START", "UNSTOP", "YES"];

/**
 * The environment variables the service reads, with their rules and
 * defaults: the one source of the configuration (README "Configuration"
 * documents each). loadConfig reads them into a Config, whose keys are the
 * names in camelCase (PORT is `port`, TRUST_X_FORWARDED_FOR is
 * `trustXForwardedFor`).
 */
const variables = z.object({
  /** Public port: gRPC, gRPC-Web, Connect and REST at /v1. 0 picks a free port. */
  PORT: port(8080),
  /** Address the public port binds to. */
  HOST: z.string().min(1).default("0.0.0.0"),
  /** Console port (messaging.console.v1). 0 picks a free port. */
  CONSOLE_PORT: port(8081),
  /** Address the console port binds to; loopback by default. */
  CONSOLE_HOST: z.string().min(1).default("127.0.0.1"),
  /** Bearer token of the console API; undefined lets the entry point make one. */
  CONSOLE_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** Email of the bootstrap console admin (an operator user); undefined for none. */
  CONSOLE_ADMIN_EMAIL: z
    .string()
    .regex(/^[^\s@]+@[^\s@]+$/, "must be an email address")
    .transform((email) => email.toLowerCase())
    .optional(),
  /** Password of the bootstrap console admin (set or reset at every start). */
  CONSOLE_ADMIN_PASSWORD: z.string().min(12, "must be at least 12 characters").optional(),
  /** Lifetime of a console session, in hours. */
  CONSOLE_SESSION_TTL_HOURS: integer(12, 1, 720, "hours"),
  /** Failed console sign-ins per account (email or the console token) in 15 minutes before every attempt is refused. */
  CONSOLE_SIGN_IN_FAILURES_PER_ACCOUNT: integer(10, 1, 10_000, "failures"),
  /** Failed console sign-ins per client address in 15 minutes before every attempt is refused. */
  CONSOLE_SIGN_IN_FAILURES_PER_ADDRESS: integer(30, 1, 10_000, "failures"),
  /** MongoDB connection string; undefined starts the embedded database (mongo-java-server). */
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must start with "mongodb://" or "mongodb+srv://"')
    .optional(),
  /** Database name. */
  MONGODB_DATABASE: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,60}$/, "must be 1 to 60 letters, digits, '_' or '-'")
    .default("messaging"),
  /** Which parts run in this process: "all", "api" (ports) or "worker" (jobs). */
  ROLE: z.enum(["all", "api", "worker"], { error: 'must be "all", "api" or "worker"' }).default("all"),
  /** Whether the client address is taken from the last X-Forwarded-For entry. */
  TRUST_X_FORWARDED_FOR: boolean(false),
  /**
   * Whether /metrics carries `msgsvc_database_command_duration_seconds`. Off by
   * default: it needs the driver's command monitoring, which decodes every
   * reply a second time for its event (measured: peak RSS 278 against 230 MiB
   * while draining a backlog of 10,000 webhook deliveries).
   */
  DATABASE_COMMAND_METRICS: boolean(false),
  /** Per-address budget per minute of requests without a valid key. */
  UNAUTHENTICATED_RATE_LIMIT_PER_MIN: integer(30, 1, 100_000, "requests"),
  /** How long a looked-up API key may be served from cache, in ms (at most 5000). */
  KEY_CACHE_TTL_MS: integer(1000, 0, 1000, "milliseconds"),
  /**
   * How long request-log rows are kept, in days. Default: 30 with MONGODB_URI; 1 on the embedded
   * database, which scans the request log for the console's views (87,000 rows, a day at one request a
   * second: about 0.4 to 1.6 s a view).
   */
  REQUEST_LOG_RETENTION_DAYS: integer(undefined, 1, 3650, "days"),
  /** Longest wait before buffered request-log rows are written, in ms. */
  REQUEST_LOG_FLUSH_MS: integer(100, 1, 10_000, "milliseconds"),
  /** Longest wait for in-flight work at shutdown, in ms. */
  SHUTDOWN_TIMEOUT_MS: integer(10_000, 0, 600_000, "milliseconds"),
  /**
   * How far V8 lets the old generation grow past what the last full
   * collection kept before the next one, in percent (V8's
   * --heap-growing-percent); 0 leaves it to V8, which lets a busy heap grow
   * to several times its live size. See tuneHeap.
   */
  HEAP_GROWING_PERCENT: integer(30, 0, 300, "percent"),
  /** Time a client has to send a request's headers, in ms (answered 408 beyond). */
  HEADERS_TIMEOUT_MS: integer(10_000, 100, 120_000, "milliseconds"),
  /** Time a client has to send a whole request, in ms (answered 408 beyond). */
  REQUEST_TIMEOUT_MS: integer(60_000, 100, 600_000, "milliseconds"),
  /** pino log level. */
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
      error: "must be one of fatal, error, warn, info, debug, trace, silent",
    })
    .default("info"),
  /** Folder for the embedded database's data. */
  DATA_DIR: z.string().min(1).default(".data"),
  /** Messaging network adapter: the in-process simulator or the WhatsApp Cloud API. */
  NETWORK: z.enum(["simulator", "whatsapp"], { error: 'must be "simulator" or "whatsapp"' }).default("simulator"),
  /**
   * Reply keywords that put the writer on the workspace's opt-out list, for workspaces without their own list
   * (msgsvc opt-outs keywords): comma-separated, matched against a reply's whole text, trimmed, in any case.
   */
  OPT_OUT_KEYWORDS: keywords(DEFAULT_OPT_OUT_KEYWORDS),
  /** Reply keywords that take the writer off the list again, for workspaces without their own list. */
  OPT_IN_KEYWORDS: keywords(DEFAULT_OPT_IN_KEYWORDS),
  /** Credits one message costs (0 makes sending free). */
  MESSAGE_PRICE_CREDITS: integer(1, 0, 1_000_000, "credits"),
  /** Dispatch attempts of a message before a network outage makes it fail. */
  DISPATCH_MAX_ATTEMPTS: integer(8, 1, 100, "attempts"),
  /** Wait before the second attempt, in ms; doubled for each later one. */
  DISPATCH_RETRY_BASE_MS: integer(2000, 1, 3_600_000, "milliseconds"),
  /** Longest wait between attempts, in ms. */
  DISPATCH_RETRY_MAX_MS: integer(600_000, 1, 86_400_000, "milliseconds"),
  /** A dispatch claimed longer ago than this without an answer counts as interrupted, in ms. */
  DISPATCH_CLAIM_TIMEOUT_MS: integer(60_000, 100, 3_600_000, "milliseconds"),
  /**
   * How often each worker claims the queued work of messages and forms that waits (a retry of dispatch, a report
   * whose message was not known yet, a report the simulated network will make, a form's files to fetch, whatever a
   * stopped process left), in ms. A worker
   * also wakes at the instant a record falls due: for its own retries, and, after each claim, for the first record
   * due within two intervals, so this bounds only how late a lapsed lease is taken over.
   */
  QUEUE_CLAIM_INTERVAL_MS: integer(5000, 10, 60_000, "milliseconds"),
  /**
   * Spacing of the messages from one sender number to one recipient, in ms (README "Pacing"; WhatsApp's pair rate:
   * about one message every 6 s); 0 turns the pair rate off.
   */
  PAIR_RATE_INTERVAL_MS: integer(6000, 0, 3_600_000, "milliseconds"),
  /** Messages from one number to one recipient that may go at once before the spacing applies (WhatsApp: 45). */
  PAIR_RATE_BURST: integer(45, 1, 1000, "messages"),
  /** Interval of the messages recovery sweep, in ms. */
  MESSAGES_SWEEP_INTERVAL_MS: integer(30_000, 100, 3_600_000, "milliseconds"),
  /**
   * A step a process left half-done (a credit change without its ledger entry,
   * a stored network report not yet applied) is completed by the messages
   * sweep once older than this, in ms: longer than any live request takes.
   */
  RECOVERY_AGE_MS: integer(60_000, 1000, 3_600_000, "milliseconds"),
  /** Simulator: delay from acceptance to the network's "sent" report, in ms. */
  SIMULATOR_SENT_DELAY_MS: integer(200, 0, 3_600_000, "milliseconds"),
  /** Simulator: delay from acceptance to "delivered", in ms. */
  SIMULATOR_DELIVERED_DELAY_MS: integer(1000, 0, 3_600_000, "milliseconds"),
  /** Simulator: delay from acceptance to "read", in ms. */
  SIMULATOR_READ_DELAY_MS: integer(2000, 0, 3_600_000, "milliseconds"),
  /**
   * Simulator: enforce WhatsApp's limits as the Cloud API does (README "The network: simulator"): a number's
   * throughput (SIMULATOR_THROUGHPUT_MPS; 20 for numbers ending in 0020, 1,000 for numbers ending in 1000), refused
   * with 130429, and the pair rate (SIMULATOR_PAIR_INTERVAL_MS, burst SIMULATOR_PAIR_BURST), refused with 131056.
   */
  SIMULATOR_LIMITS: boolean(true),
  /** Simulator: messages per second a sender number may send (WhatsApp's default: 80). */
  SIMULATOR_THROUGHPUT_MPS: integer(80, 1, 100_000, "messages per second"),
  /** Simulator: spacing the pair of a number and a recipient must keep, in ms (WhatsApp: about 6 s). */
  SIMULATOR_PAIR_INTERVAL_MS: integer(6000, 1, 3_600_000, "milliseconds"),
  /** Simulator: messages to one recipient that may go at once before the pair spacing applies (WhatsApp: 45). */
  SIMULATOR_PAIR_BURST: integer(45, 1, 1000, "messages"),
  /** Simulator: share of messages whose delivered and read reports arrive swapped, in percent. */
  SIMULATOR_OUT_OF_ORDER_PERCENT: integer(10, 0, 100, "percent"),
  /** WhatsApp: Graph API base URL, without version. */
  WHATSAPP_GRAPH_URL: z
    .url({ error: "must be an http(s) URL such as https://graph.facebook.com" })
    .default("https://graph.facebook.com")
    .transform((url) => url.replace(/\/+$/, "")),
  /** WhatsApp: Graph API version, for example "v23.0". */
  WHATSAPP_GRAPH_VERSION: z
    .string()
    .regex(/^v\d+\.\d+$/, 'must look like "v23.0"')
    .default("v23.0"),
  /** WhatsApp: access token (system user token) sent as Bearer. */
  WHATSAPP_ACCESS_TOKEN: z.string().min(1).optional(),
  /** WhatsApp: app secret, key of the X-Hub-Signature-256 HMAC of callbacks. */
  WHATSAPP_APP_SECRET: z.string().min(1).optional(),
  /** WhatsApp: token Meta echoes in the GET verification handshake. */
  WHATSAPP_VERIFY_TOKEN: z.string().min(1).optional(),
  /** WhatsApp: longest wait for a Graph API answer, in ms. */
  WHATSAPP_REQUEST_TIMEOUT_MS: integer(15_000, 100, 120_000, "milliseconds"),
  /** How often the job worker looks for jobs made by other processes, in ms (Agenda's processEvery). */
  JOB_POLL_INTERVAL_MS: integer(5000, 20, 60_000, "milliseconds"),
  /**
   * AES-256-GCM key (32 bytes) that encrypts webhook signing secrets at rest;
   * undefined lets the entry point keep one in DATA_DIR (embedded database only).
   */
  WEBHOOK_SECRET_KEY: z
    .string()
    .transform((text, ctx) => parseKey(text) ?? (ctx.addIssue({ code: "custom", message: "must be 32 bytes as 64 hex digits or base64" }), z.NEVER))
    .optional(),
  /** Delays before the retries of a failed delivery, in ms (spec §Delivery rules 2: 0, 10 s, 1 min, 5 min, 30 min, 2 h, 6 h). */
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default("0,10s,1m,5m,30m,2h,6h")
    .transform((text, ctx) => parseSchedule(text) ?? (ctx.addIssue({ code: "custom", message: SCHEDULE_RULE }), z.NEVER)),
  /** Deadline of a webhook attempt for the whole answer, in ms (spec: 10 s). */
  WEBHOOK_ATTEMPT_TIMEOUT_MS: integer(10_000, 50, 60_000, "milliseconds"),
  /**
   * Whether webhooks may go to private, loopback and link-local addresses. Default: false with
   * MONGODB_URI; true on the embedded database (local development: `msgsvc webhooks listen`).
   */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: optionalBoolean(),
  /** Whether endpoint URLs may use plain http for loopback addresses. Default: false with MONGODB_URI; true on the embedded database. */
  WEBHOOK_ALLOW_HTTP_LOOPBACK: optionalBoolean(),
  /**
   * How long a webhook delivery claimed by a process stays its own, in ms:
   * past it (the process died mid-attempt), another claims it again and
   * records the lost attempt as interrupted.
   */
  WEBHOOK_LEASE_MS: integer(60_000, 200, 3_600_000, "milliseconds"),
  /** How often each worker's claim job (Agenda) looks for due webhook deliveries, in ms. */
  WEBHOOK_CLAIM_INTERVAL_MS: integer(1000, 10, 60_000, "milliseconds"),
  /**
   * The longest a send in progress holds its Idempotency-Key, in ms: a retry
   * meanwhile is a conflict. The hold is a lease of the accepting process,
   * renewed while the request runs: after that process died, a retry takes
   * the key over within 5 s (or this, if shorter).
   */
  IDEMPOTENCY_HOLD_MS: integer(60_000, 100, 3_600_000, "milliseconds"),
  /** Largest file of a form submission that is stored, in bytes. */
  FLOW_FILE_MAX_BYTES: integer(25 * 1024 * 1024, 1, 1024 * 1024 * 1024, "bytes"),
  /** Media types of form files that are stored ("type/subtype" or "type/*"), lower case. */
  FLOW_FILE_ALLOWED_TYPES: mediaTypes(DEFAULT_FLOW_FILE_TYPES),
  /** Attempts to fetch a form's files from the network before an outage makes them unreadable. */
  FLOW_FILE_FETCH_MAX_ATTEMPTS: integer(8, 1, 100, "attempts"),
  /** Wait before the second fetch attempt, in ms; doubled for each later one (at most 10 minutes). */
  FLOW_FILE_FETCH_RETRY_BASE_MS: integer(5000, 1, 3_600_000, "milliseconds"),
});

const schema = variables
  .superRefine((v, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if (v.WEBHOOK_LEASE_MS < 2 * v.WEBHOOK_ATTEMPT_TIMEOUT_MS + 100) {
      issue("WEBHOOK_LEASE_MS", `must be at least twice WEBHOOK_ATTEMPT_TIMEOUT_MS plus 100 (${2 * v.WEBHOOK_ATTEMPT_TIMEOUT_MS + 100})`);
    }
    if (v.CONSOLE_ADMIN_EMAIL !== undefined && v.CONSOLE_ADMIN_PASSWORD === undefined) issue("CONSOLE_ADMIN_PASSWORD", "must be set when CONSOLE_ADMIN_EMAIL is");
    if (v.CONSOLE_ADMIN_PASSWORD !== undefined && v.CONSOLE_ADMIN_EMAIL === undefined) issue("CONSOLE_ADMIN_EMAIL", "must be set when CONSOLE_ADMIN_PASSWORD is");
    const both = v.OPT_OUT_KEYWORDS.filter((k) => v.OPT_IN_KEYWORDS.includes(k));
    if (both.length > 0) issue("OPT_IN_KEYWORDS", `must not repeat an opt-out keyword (${both.join(", ")})`);
    if (v.NETWORK === "whatsapp") {
      for (const name of ["WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"] as const) {
        if (v[name] === undefined) issue(name, 'must be set when NETWORK is "whatsapp"');
      }
    }
  })
  .transform((v) => {
    // The embedded database (no MONGODB_URI) is local development: webhooks may go to receivers on this machine
    // (`msgsvc webhooks listen`, http://localhost), and the request log keeps a day.
    const embedded = v.MONGODB_URI === undefined;
    return camelKeys({
      ...v,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: v.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? embedded,
      WEBHOOK_ALLOW_HTTP_LOOPBACK: v.WEBHOOK_ALLOW_HTTP_LOOPBACK ?? embedded,
      REQUEST_LOG_RETENTION_DAYS: v.REQUEST_LOG_RETENTION_DAYS ?? (embedded ? 1 : 30),
    }, Object.keys(variables.shape));
  });

/** "CONSOLE_ADMIN_EMAIL" as "consoleAdminEmail". */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Lowercase<Head>}${Capitalize<CamelCase<Tail>>}` : Lowercase<S>;

/** An object whose SCREAMING_SNAKE_CASE keys are written in camelCase. */
type CamelKeys<T> = { [K in keyof T as K extends string ? CamelCase<K> : never]: T[K] };

/** `value` with its keys in camelCase; every key of `keys` is present, undefined where unset. */
function camelKeys<T extends object>(value: T, keys: readonly string[]): CamelKeys<T> {
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())] = value[key as keyof T];
  return out as CamelKeys<T>;
}

/**
 * The validated configuration: the schema's output, each environment
 * variable's value under its name in camelCase (see the schema for what each
 * means, its unit and default; README "Configuration").
 */
export type Config = z.output<typeof schema>;

/**
 * The variables that hold secrets: an error names them and their length, never
 * their value (README "Design" §7).
 */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  "CONSOLE_TOKEN",
  "CONSOLE_ADMIN_PASSWORD",
  "WEBHOOK_SECRET_KEY",
  "WHATSAPP_ACCESS_TOKEN",
  "WHATSAPP_APP_SECRET",
  "WHATSAPP_VERIFY_TOKEN",
]);

/** Raised by loadConfig with one line per bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * Reads and validates the configuration from environment variables, the only
 * place the environment is read. Empty values count as unset. Defaults that
 * depend on the database (the embedded one when MONGODB_URI is unset) are
 * decided here too.
 *
 * @throws ConfigError naming each bad variable, its rule and the value given.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(variables.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0]);
        const value = input[name];
        // A secret is never echoed, only its length; a connection string without its credentials.
        const given = value !== undefined && SECRET_VARIABLES.has(name)
          ? `${value.length} characters`
          : JSON.stringify(name === "MONGODB_URI" ? value?.replace(/\/\/[^@/]*@/, "//***@") : value);
        return `${name}: ${issue.message} (got ${given})`;
      }),
    );
  }
  return parsed.data;
}
