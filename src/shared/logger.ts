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
 * "silent"), writing to standard output unless given another `destination`.
 */
export function createLogger(level: string, name = "messaging-service", destination?: pino.DestinationStream): Logger {
  const options = { name, level, redact: { paths: redactedPaths, censor: "[redacted]" } };
  return destination ? pino(options, destination) : pino(options);
}
