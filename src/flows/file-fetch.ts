import { ObjectId } from "mongodb";
import pLimit from "p-limit";
import { FlowResponseSchema } from "../../gen/messaging/v1/flow_responses_pb.js";
import type { EventBus } from "../events/event-bus.js";
import { toRestJson } from "../contract/rest-json.js";
import type { Queued } from "../jobs/leased-queue.js";
import { MediaFetchError, type FetchedMedia, type NetworkAdapter } from "../network/network.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import { FileTooLargeError, isAllowedType, type FlowFileStore } from "./flow-files.js";
import { flowResponseToProto } from "./flow-proto.js";
import type { FlowFileRecord, FlowResponseRecord, FlowResponseStore } from "./flow-response-store.js";

/**
 * How long a process holds a response whose files it fetches, in ms: past it
 * (the process stopped), another takes the fetch over.
 */
export const FETCH_LEASE_MS = 15 * 60 * 1000;

/** Responses whose files one process fetches at once. */
const FETCH_CONCURRENCY = 4;

/** Longest wait between fetch attempts, in ms. */
const MAX_RETRY_MS = 10 * 60 * 1000;

/** Limits and retry rules of fetching (FLOW_FILE_* configuration). */
export interface FileFetchOptions {
  maxBytes: number;
  allowedTypes: readonly string[];
  maxAttempts: number;
  retryBaseMs: number;
}

/** Fetching of form files from the network into the service: a leased queue of the responses (src/jobs/leased-queue.ts). */
export interface FileFetcher {
  /** The lease fields of a response recorded now, held by this process to fetch at once (begin). */
  held(now: Date): { fields: Required<Queued>; lease: string };
  /** Starts fetching the files of a response this process recorded with held's fields. */
  begin(record: FlowResponseRecord, lease: string): void;
  /** Starts claiming responses that wait (worker role): retries due, and fetches whose process stopped. */
  start(): void;
  /** Claims due responses now (the recurring claim job). */
  drain(): Promise<void>;
  /** Graceful shutdown: fetches not begun are left (their leases lapse), running ones awaited. */
  stop(): Promise<void>;
}

type Outcome = { kind: "stored"; sizeBytes: number; sha256: string } | { kind: "failed"; error: string } | { kind: "retry"; error: string };

/** True when `stated` (hex or base64 SHA-256) names the digest `hex`. */
function sameSha256(stated: string, hex: string): boolean {
  const given = /^[0-9a-f]{64}$/i.test(stated) ? stated.toLowerCase() : Buffer.from(stated, "base64").toString("hex");
  return given === hex;
}

function outcomeOf(err: unknown): Outcome {
  if (err instanceof FileTooLargeError) return { kind: "failed", error: `file_too_large: ${err.message}` };
  if (err instanceof MediaFetchError && !err.retryable) return { kind: "failed", error: `unreadable: ${err.message}` };
  return { kind: "retry", error: (err as Error)?.message ?? String(err) };
}

/**
 * Creates the fetcher. A response is recorded held by the process that
 * records it, which fetches at once; one whose fetch waits (a retry, a
 * process that stopped) is taken by a worker's claim. An attempt (at most
 * FETCH_CONCURRENCY per process):
 *
 * 1. counts itself, and for each pending file: a type outside
 *    FLOW_FILE_ALLOWED_TYPES is refused without download (type_not_allowed);
 *    otherwise the medium is fetched through the network port and streamed
 *    into GridFS (what a broken upload of an earlier attempt left is deleted
 *    first), refused past FLOW_FILE_MAX_BYTES (file_too_large, by the stated
 *    size before reading or by counting), and checked against the SHA-256 the
 *    submission or the network states (unreadable on a mismatch, as for an
 *    unknown medium or failed decryption);
 * 2. an outage (timeouts, HTTP 5xx or 429, broken downloads, database
 *    errors) leaves the file pending and releases the response, due after
 *    FLOW_FILE_FETCH_RETRY_BASE_MS × 2^(n−1) (at most 10 minutes); after
 *    FLOW_FILE_FETCH_MAX_ATTEMPTS the file is recorded as unreadable;
 * 3. once every file is stored or failed, the response becomes visible
 *    (ready_at) and flow.completed is published, then it is done.
 *
 * Every write is guarded by the lease, so a process whose lease was taken
 * over changes nothing (and deletes what it stored). A crash between
 * publication and the done mark publishes again (at-least-once).
 */
export function createFileFetcher(deps: {
  responses: FlowResponseStore;
  files: FlowFileStore;
  network: NetworkAdapter;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  options: FileFetchOptions;
  /** Names this process in the leases. */
  owner: string;
  /** How often a worker claims due fetches, in ms (QUEUE_CLAIM_INTERVAL_MS). */
  claimIntervalMs: number;
}): FileFetcher {
  const { responses, files, network, events, clock, logger, options } = deps;
  const limit = pLimit(FETCH_CONCURRENCY);
  const queue = responses.fetchQueue({
    name: "form files",
    owner: deps.owner,
    clock,
    logger,
    leaseMs: FETCH_LEASE_MS,
    maxInFlight: 200,
    intervalMs: deps.claimIntervalMs,
    run: ({ record, lease }) => limit(() => attempt(record, lease)),
  });

  async function fetchOne(record: FlowResponseRecord, file: FlowFileRecord, gridfsId: ObjectId): Promise<Outcome> {
    if (!isAllowedType(file.mime_type, options.allowedTypes)) {
      return { kind: "failed", error: `type_not_allowed: ${file.mime_type} is not among the allowed types (FLOW_FILE_ALLOWED_TYPES)` };
    }
    let media: FetchedMedia;
    try {
      media = await network.fetchMedia(file.media!);
    } catch (err) {
      return outcomeOf(err);
    }
    if (media.sizeBytes !== undefined && media.sizeBytes > options.maxBytes) {
      media.body.destroy();
      return { kind: "failed", error: `file_too_large: the network states ${media.sizeBytes} bytes, more than the limit of ${options.maxBytes} bytes (FLOW_FILE_MAX_BYTES)` };
    }
    let stored: { sizeBytes: number; sha256: string };
    try {
      const metadata = { workspace_id: record.workspace_id, flow_response_id: record._id, index: file.index, mime_type: file.mime_type };
      stored = await files.write(gridfsId, file.file_name, metadata, media.body, options.maxBytes);
    } catch (err) {
      return outcomeOf(err);
    }
    for (const stated of [file.stated_sha256, media.sha256]) {
      if (stated && !sameSha256(stated, stored.sha256)) {
        await files.delete(gridfsId);
        return { kind: "failed", error: "unreadable: the SHA-256 of the downloaded file does not match the one the network states" };
      }
    }
    return { kind: "stored", ...stored };
  }

  async function attempt(record: FlowResponseRecord, lease: string): Promise<void> {
    if (record.fetch.state !== "pending") return;
    const attempts = record.fetch.attempts + 1;
    const list = record.files.map((f) => ({ ...f }));
    const storedNow: ObjectId[] = [];
    let retryError: string | null = null;
    let counted = false;
    for (const file of list) {
      if (file.state !== "pending") continue;
      if (file.gridfs_id) await files.delete(file.gridfs_id); // left by an interrupted attempt
      const gridfsId = new ObjectId();
      file.gridfs_id = gridfsId;
      if (!(await responses.saveFiles(record._id, lease, list, !counted))) return; // lease taken over
      counted = true;
      const outcome = await fetchOne(record, file, gridfsId);
      if (outcome.kind === "stored") {
        storedNow.push(gridfsId);
        Object.assign(file, { state: "stored", size_bytes: outcome.sizeBytes, sha256: outcome.sha256, media: null });
      } else if (outcome.kind === "retry" && attempts < options.maxAttempts) {
        retryError = outcome.error;
        file.gridfs_id = null;
      } else {
        const error = outcome.kind === "retry" ? `unreadable: ${outcome.error} (gave up after ${attempts} attempts)` : outcome.error;
        Object.assign(file, { state: "failed", error, media: null, gridfs_id: null });
      }
    }
    if (retryError) {
      const wait = Math.min(MAX_RETRY_MS, options.retryBaseMs * 2 ** (attempts - 1));
      const next = new Date(clock.now().getTime() + wait);
      await responses.scheduleRetry(record._id, lease, list, next, retryError);
      logger.info({ flowResponseId: record._id, error: retryError, retryAt: next }, "form files could not be fetched; retried later");
      queue.wakeAt(next);
      return;
    }
    const ready = await responses.markReady(record._id, lease, list, record.ready_at ?? clock.now());
    if (!ready) {
      for (const stored of storedNow) await files.delete(stored);
      return;
    }
    await events.publish({ workspaceId: ready.workspace_id, type: "flow.completed", data: toRestJson(FlowResponseSchema, flowResponseToProto(ready)) });
    await responses.markPublished(record._id, lease, clock.now());
  }

  return {
    held: (now) => queue.held(now, FETCH_LEASE_MS),
    begin: (record, lease) => queue.begin({ record, lease }),
    start() {
      queue.start();
      queue.poke();
    },
    drain: () => queue.drain(),
    async stop() {
      limit.clearQueue();
      await queue.stop();
    },
  };
}
