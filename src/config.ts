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
  UNAUTHENTICATED_RATE_LIMIT_PER_MIN: integer(30, 1, 100_000, "requests"),
  KEY_CACHE_TTL_MS: integer(5000, 0, 5000, "milliseconds"),
  REQUEST_LOG_RETENTION_DAYS: integer(30, 1, 3650, "days"),
  REQUEST_LOG_FLUSH_MS: integer(200, 1, 10_000, "milliseconds"),
  SHUTDOWN_TIMEOUT_MS: integer(10_000, 0, 600_000, "milliseconds"),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
      error: "must be one of fatal, error, warn, info, debug, trace, silent",
    })
    .default("info"),
  DATA_DIR: z.string().min(1).default(".data"),
});

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
  /** MongoDB connection string; undefined starts the embedded FerretDB. */
  mongodbUri: string | undefined;
  /** Database name. */
  mongodbDatabase: string;
  /** Which parts run in this process: "all", "api" (ports) or "worker" (jobs). */
  role: "all" | "api" | "worker";
  /** Whether the client address is taken from X-Forwarded-For. */
  trustForwardedFor: boolean;
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
  /** pino log level. */
  logLevel: string;
  /** Folder for the embedded database's data. */
  dataDir: string;
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
        return `${name}: ${issue.message} (got ${JSON.stringify(input[name])})`;
      }),
    );
  }
  const v = parsed.data;
  if ((v.CONSOLE_ADMIN_EMAIL === undefined) !== (v.CONSOLE_ADMIN_PASSWORD === undefined)) {
    throw new ConfigError(["CONSOLE_ADMIN_EMAIL and CONSOLE_ADMIN_PASSWORD: set both or neither"]);
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
    mongodbUri: v.MONGODB_URI,
    mongodbDatabase: v.MONGODB_DATABASE,
    role: v.ROLE,
    trustForwardedFor: v.TRUST_X_FORWARDED_FOR,
    unauthenticatedRateLimitPerMin: v.UNAUTHENTICATED_RATE_LIMIT_PER_MIN,
    keyCacheTtlMs: v.KEY_CACHE_TTL_MS,
    requestLogRetentionDays: v.REQUEST_LOG_RETENTION_DAYS,
    requestLogFlushMs: v.REQUEST_LOG_FLUSH_MS,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    logLevel: v.LOG_LEVEL,
    dataDir: v.DATA_DIR,
  };
}
