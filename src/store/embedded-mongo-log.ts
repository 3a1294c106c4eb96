import type { Logger } from "../shared/logger.js";

/*
 * The embedded database's log in the service's log. The JVM writes SLF4J's
 * simple format on stderr: a record is a line `[thread] LEVEL logger - message`,
 * followed, when it carries an exception, by the exception's lines (its class
 * and message, then `\tat …` frames and `Caused by: …`). Relayed, each record
 * is one line of the service's log at its own level.
 */

/** A record's first line in SLF4J's simple format: thread, level, logger, message. */
const HEADER = /^\[([^\]]*)\] (ERROR|WARN|INFO|DEBUG|TRACE) (\S+) - (.*)$/;

const LEVELS = { ERROR: "error", WARN: "warn", INFO: "info", DEBUG: "debug", TRACE: "debug" } as const;

/**
 * A client that went away while the database wrote to it (a killed service
 * process, a test that ends): the library logs it as an exception of its
 * channel, but nothing failed on the database's side.
 */
const CLIENT_GONE = /^java\.(?:net\.SocketException|io\.IOException): (?:Connection reset|Broken pipe)/;

/** A line of a Java stack after the exception's own: a frame, a cause, "... 12 more". */
const STACK_LINE = /^(?:\s|Caused by: |Suppressed: )/;

/** Longest stack relayed, in lines. */
const MAX_STACK_LINES = 200;

/** One record of the database's log, as relayed. */
export interface JavaLogRecord {
  level: "error" | "warn" | "info" | "debug";
  /** The record's message; for a record with an exception, followed by ": " and the exception's first line. */
  msg: string;
  /** The SLF4J logger's name; undefined for output that is not a log record (a JVM warning). */
  logger?: string;
  /** The exception's lines after its first one (frames, causes); only relayed at debug level. */
  stack?: string[];
}

/**
 * Groups the JVM's stderr lines into records and hands each to `emit` once it
 * is complete: when the next record starts, when no line came for
 * `quietMs`, or at `end()`. A record with an exception is one record whatever
 * its length. A line outside any record (a JVM warning) is a record of its own
 * at warn level; a stack line outside any record (the rest of a trace whose
 * record ended, its writer paused) a debug record. A client that went away
 * is a debug record.
 */
export function createJavaLogReader(emit: (record: JavaLogRecord) => void, quietMs = 250): { line(text: string): void; end(): void } {
  let pending: JavaLogRecord | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!pending) return;
    const record = pending;
    pending = undefined;
    emit(record);
  };
  return {
    line(text: string) {
      const header = HEADER.exec(text);
      if (header) {
        flush();
        pending = { level: LEVELS[header[2] as keyof typeof LEVELS], msg: header[4] ?? "", logger: header[3] };
      } else if (pending && pending.logger !== undefined && pending.stack === undefined && !/^\s/.test(text)) {
        // The exception's own line (its class and message): what failed, kept in the message.
        pending.stack = [];
        pending.msg = `${pending.msg}: ${text.trim()}`;
        if (CLIENT_GONE.test(text.trim())) pending.level = "debug";
      } else if (pending && STACK_LINE.test(text)) {
        pending.stack ??= [];
        if (pending.stack.length < MAX_STACK_LINES) pending.stack.push(text);
      } else if (STACK_LINE.test(text) && text.trim() !== "") {
        // A frame or cause of a record already ended (its process paused longer than quietMs mid-trace): part of
        // an exception, so not the JVM's own output; only relayed at debug level, as every stack is.
        flush();
        emit({ level: "debug", msg: text.trim() });
      } else if (text.trim() !== "") {
        // Output of the JVM itself: a warning, or an exception no one caught (an error).
        flush();
        pending = { level: /^Exception in thread /.test(text) ? "error" : "warn", msg: text };
      }
      clearTimeout(timer);
      timer = setTimeout(flush, quietMs);
      timer.unref();
    },
    end: flush,
  };
}

/**
 * Writes a record of the embedded database's log to `logger`: one line at the
 * record's level, with `source: "embedded-database"` and the SLF4J logger's
 * name; the exception's stack only when `logger` logs debug lines.
 */
export function logJavaRecord(logger: Logger, record: JavaLogRecord): void {
  const fields: Record<string, unknown> = { source: "embedded-database" };
  if (record.logger !== undefined) fields.logger = record.logger;
  if (record.stack && record.stack.length > 0 && logger.isLevelEnabled("debug")) fields.stack = record.stack.map((l) => l.trim()).join("\n");
  logger[record.level](fields, record.msg);
}
