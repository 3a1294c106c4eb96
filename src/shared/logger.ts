import { pino, type Logger } from "pino";

export type { Logger } from "pino";

/**
 * Paths pino replaces with "[redacted]" in every log line: credentials and
 * secrets never reach the logs (DESIGN.md §7).
 */
export const redactedPaths = [
  "authorization",
  "headers.authorization",
  "req.headers.authorization",
  "secret",
  "*.secret",
  "token",
  "*.token",
  "consoleToken",
];

/**
 * Creates the service's JSON logger (pino) at `level` ("fatal" … "trace", or
 * "silent"), writing to standard output.
 */
export function createLogger(level: string, name = "messaging-service"): Logger {
  return pino({ name, level, redact: { paths: redactedPaths, censor: "[redacted]" } });
}
