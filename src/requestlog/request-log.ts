import type { Db, Filter } from "mongodb";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { Protocol } from "../gateway/request-state.js";
import { insertEach } from "../store/insert-each.js";

/**
 * One request as stored in `request_log` (spec §What the service does, 5:
 * "Every request is logged with its outcome"). Refused requests are logged
 * too: unknown key, bad JSON, unknown route, rate limited.
 */
export interface RequestLogRow {
  /** The request id (`req_…`), as sent in the Request-Id header. */
  _id: string;
  /** When the request arrived. */
  at: Date;
  /** Workspace of the key presented (even a refused one); null without a known key. */
  workspace_id: string | null;
  /** Key presented (even a refused one); null without a known key. */
  api_key_id: string | null;
  /** RPC, for example "messaging.v1.AccountService/GetMe"; null for an unknown route. */
  operation: string | null;
  protocol: Protocol;
  http_method: string;
  path: string;
  /** HTTP status sent (gRPC answers 200 and carries its status in trailers). */
  http_status: number;
  /** Error code answered (see the error table), or null on success. */
  error_code: string | null;
  /** Client address (IPv4 or IPv6). */
  client_address: string;
  /** Time from arrival to the end of the response, in milliseconds. */
  duration_ms: number;
  /** A batch send: its items accepted and refused; absent for other requests (and a batch refused as a whole). */
  accepted_count?: number;
  refused_count?: number;
  /**
   * End of the row's retention (`at` + REQUEST_LOG_RETENTION_DAYS when it was
   * written): MongoDB's TTL index deletes the row after it, reads skip it, and
   * the retention job deletes it on a server whose TTL monitor has not.
   */
  expires_at: Date;
}

/** Rows kept in memory while the database refuses writes, at most. */
const MAX_BUFFERED_ROWS = 100_000;

/** Options of createRequestLog. */
export interface RequestLogOptions {
  /** Longest wait before buffered rows are written, in ms. */
  flushMs: number;
  /** Rows per insert; a full batch is written at once. */
  batchSize?: number;
  /** How long rows are kept, in ms (REQUEST_LOG_RETENTION_DAYS). */
  retentionMs: number;
  logger: Logger;
}

/** The request log: rows are buffered and written in batches. */
export interface RequestLog {
  /** A row by its request id, or null. */
  get(id: string): Promise<RequestLogRow | null>;
  /** Rows matching `filter`, newest first by `at`. */
  list(filter: Filter<RequestLogRow>, page: PageRequest): Promise<Page<RequestLogRow>>;
  /** Rows matching `filter` counted by error code. */
  countByErrorCode(filter: Filter<RequestLogRow>): Promise<{ code: string; count: number }[]>;
  /** The first (or, with `last`, the latest) row matching `filter` by `at`, or null. */
  firstOrLast(filter: Filter<RequestLogRow>, last: boolean): Promise<RequestLogRow | null>;
  /** Rows matching `filter`. */
  count(filter: Filter<RequestLogRow>): Promise<number>;
  /**
   * Buffers a row, written within flushMs. The log takes the object over: it
   * sets its expires_at (from the retention) and stores it as it is.
   */
  record(row: Omit<RequestLogRow, "expires_at">): void;
  /** Writes everything buffered now. */
  flush(): Promise<void>;
  /** Flushes and stops the timer (shutdown). */
  close(): Promise<void>;
  /** Deletes rows whose retention has ended; returns how many. */
  prune(clock: Clock): Promise<number>;
  ensureIndexes(): Promise<void>;
}

/**
 * Creates the request log. Rows are kept in memory at most `flushMs` (or
 * until a batch fills) and written with one unordered insertMany. A failed
 * write keeps the rows and retries on the next flush; nothing is dropped
 * while the database is down, up to 100,000 buffered rows, past which the
 * oldest are dropped with an error log naming how many. close() writes what
 * is left, so a graceful shutdown loses nothing.
 */
export function createRequestLog(db: Db, options: RequestLogOptions): RequestLog {
  const collection = db.collection<RequestLogRow>("request_log");
  const batchSize = options.batchSize ?? 500;
  let buffer: RequestLogRow[] = [];
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();

  function schedule() {
    if (!timer) timer = setTimeout(() => void flush(), options.flushMs);
  }

  async function writeBatch(rows: RequestLogRow[]): Promise<void> {
    // Rows refused as duplicates were written by an earlier attempt; retry the rest.
    let retry: RequestLogRow[];
    let err: unknown;
    try {
      const outcomes = await insertEach(collection, rows);
      retry = rows.filter((_, i) => outcomes[i] instanceof Error);
      err = outcomes.find((o) => o instanceof Error);
    } catch (failed) {
      retry = rows;
      err = failed;
    }
    if (retry.length === 0) return;
    options.logger.warn({ err, rows: retry.length }, "request log write failed; retrying");
    buffer = retry.concat(buffer);
    if (buffer.length > MAX_BUFFERED_ROWS) {
      const dropped = buffer.length - MAX_BUFFERED_ROWS;
      buffer = buffer.slice(dropped);
      options.logger.error({ dropped }, "request log buffer full; oldest rows dropped");
    }
    schedule();
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    writing = writing.then(async () => {
      while (buffer.length > 0) {
        const rows = buffer.splice(0, batchSize);
        await writeBatch(rows);
        if (timer) break; // a failed write scheduled a retry
      }
    });
    return writing;
  }

  return {
    get: (id) => collection.findOne({ _id: id }),
    list: (filter, page) => listPage(collection, filter, page, "at"),
    async countByErrorCode(filter) {
      const counts = await collection.aggregate<{ _id: string; count: number }>([{ $match: filter }, { $group: { _id: "$error_code", count: { $sum: 1 } } }]).toArray();
      return counts.map(({ _id, count }) => ({ code: _id, count }));
    },
    firstOrLast: (filter, last) => collection.find(filter).sort(last ? { at: -1, _id: -1 } : { at: 1, _id: 1 }).limit(1).next(),
    count: (filter) => collection.countDocuments(filter),
    record(row) {
      const stored = row as RequestLogRow; // the row is the log's from here on: completed in place, not copied
      stored.expires_at = new Date(row.at.getTime() + options.retentionMs);
      buffer.push(stored);
      if (buffer.length >= batchSize) void flush();
      else schedule();
    },
    flush,
    async close() {
      await flush();
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
    async prune(clock) {
      return (await collection.deleteMany({ expires_at: { $lte: clock.now() } })).deletedCount;
    },
    async ensureIndexes() {
      await collection.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
      await collection.createIndex({ at: -1 });
      await collection.createIndex({ workspace_id: 1, at: -1 });
      await collection.createIndex({ api_key_id: 1, at: -1 });
      await collection.createIndex({ error_code: 1, at: -1 });
    },
  };
}
