import { pino, type Logger } from "pino";

export type { Logger } from "pino";

/**
 * Paths pino replaces with "[redacted]" in every log line: credentials and
 * secrets never reach the logs (README "Design" §7).
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
 *
 * Standard output is written asynchronously (pino's sonic-boom with
 * `sync: false`): a line is written at once when the stream is idle, and
 * lines that arrive meanwhile go out together in the next write, so the
 * access log costs no write call per request under load. Pino flushes what
 * is pending when the process exits; a `kill -9` may lose the lines of the
 * write in progress.
 */
export function createLogger(level: string, name = "messaging-service", destination?: pino.DestinationStream): Logger {
  const options = { name, level, redact: { paths: redactedPaths, censor: "[redacted]" } };
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
