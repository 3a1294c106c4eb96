import { ObjectId, type Collection } from "mongodb";
import { FlowResponseSchema } from "../../gen/messaging/v1/flow_responses_pb.js";
import type { EventBus } from "../events/event-bus.js";
import { toRestJson } from "../contract/rest-json.js";
import { createRunTracker } from "../jobs/run-tracker.js";
import type { JobSpec, Scheduler } from "../jobs/scheduler.js";
import { MediaFetchError, type FetchedMedia, type NetworkAdapter } from "../network/network.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import { FileTooLargeError, isAllowedType, type FlowFileStore } from "./flow-files.js";
import { flowResponseToProto } from "./flow-proto.js";
import type { FlowFileRecord, FlowResponseRecord } from "./flow-response-store.js";

/** Name of the job that fetches one response's files and fires flow.completed. */
export const FETCH_FILES_JOB = "flows.fetch_files";

/** A claim older than this is taken over by the sweep (its process stopped), in ms. */
export const FETCH_CLAIM_TIMEOUT_MS = 15 * 60 * 1000;

/** Longest wait between fetch attempts, in ms. */
const MAX_RETRY_MS = 10 * 60 * 1000;

/** Limits and retry rules of fetching (FLOW_FILE_* configuration). */
export interface FileFetchOptions {
  maxBytes: number;
  allowedTypes: readonly string[];
  maxAttempts: number;
  retryBaseMs: number;
}

/** Fetching of form files from the network into the service. */
export interface FileFetcher {
  /** The Agenda job: `{ flow_response_id }` → one attempt. */
  readonly job: JobSpec<{ flow_response_id: string }>;
  /** Schedules an attempt now (or at `at`). */
  enqueue(flowResponseId: string, at?: Date): Promise<void>;
  /**
   * Recovery: schedules responses that are due and have no live job, and
   * hands claims older than FETCH_CLAIM_TIMEOUT_MS back. Resolves to the count.
   */
  recover(): Promise<number>;
  /** Graceful shutdown: attempts not begun are skipped, running ones awaited. */
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
 * Creates the fetcher. An attempt:
 *
 * 1. claims the response with one conditional update (pending and due →
 *    claimed, attempts + 1), so only one worker fetches its files;
 * 2. for each pending file: a type outside FLOW_FILE_ALLOWED_TYPES is
 *    refused without download (type_not_allowed); otherwise the medium is
 *    fetched through the network port and streamed into GridFS, refused past
 *    FLOW_FILE_MAX_BYTES (file_too_large, by the stated size before reading
 *    or by counting), and checked against the SHA-256 the submission or the
 *    network states (unreadable on a mismatch, as for an unknown medium or
 *    failed decryption);
 * 3. an outage (timeouts, HTTP 5xx or 429, broken downloads, database
 *    errors) leaves the file pending and retries after FLOW_FILE_FETCH_RETRY_BASE_MS
 *    × 2^(n−1) (at most 10 minutes); after FLOW_FILE_FETCH_MAX_ATTEMPTS the
 *    file is recorded as unreadable;
 * 4. once every file is stored or failed, the response becomes visible
 *    (ready_at) and flow.completed is published, then marked done.
 *
 * Every write is guarded by the claim, so a worker whose claim was taken
 * over changes nothing (and deletes what it stored). A crash between
 * publication and the done mark publishes again (at-least-once).
 */
export function createFileFetcher(deps: {
  responses: Collection<FlowResponseRecord>;
  jobs: Collection;
  files: FlowFileStore;
  network: NetworkAdapter;
  events: EventBus;
  scheduler: Scheduler;
  clock: Clock;
  logger: Logger;
  options: FileFetchOptions;
}): FileFetcher {
  const { responses: col, files, network, events, scheduler, clock, logger, options } = deps;
  const runs = createRunTracker();

  async function enqueue(id: string, at?: Date): Promise<void> {
    if (at && at.getTime() > clock.now().getTime()) await scheduler.agenda.schedule(at, FETCH_FILES_JOB, { flow_response_id: id });
    else await scheduler.agenda.now(FETCH_FILES_JOB, { flow_response_id: id });
  }

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

  async function attempt(id: string): Promise<void> {
    const now = clock.now();
    const record = await col.findOneAndUpdate(
      { _id: id, "fetch.state": "pending", "fetch.next_attempt_at": { $lte: now } },
      { $set: { "fetch.state": "claimed", "fetch.claimed_at": now }, $inc: { "fetch.attempts": 1 } },
      { returnDocument: "after" },
    );
    if (!record) return; // done, claimed elsewhere, or not due yet
    const claim = { _id: id, "fetch.state": "claimed" as const, "fetch.claimed_at": now };
    const list = record.files.map((f) => ({ ...f }));
    const storedNow: ObjectId[] = [];
    let retryError: string | null = null;
    for (const file of list) {
      if (file.state !== "pending") continue;
      if (file.gridfs_id) await files.delete(file.gridfs_id); // left by an interrupted attempt
      const gridfsId = new ObjectId();
      file.gridfs_id = gridfsId;
      if ((await col.updateOne(claim, { $set: { files: list } })).matchedCount === 0) return; // claim taken over
      const outcome = await fetchOne(record, file, gridfsId);
      if (outcome.kind === "stored") {
        storedNow.push(gridfsId);
        Object.assign(file, { state: "stored", size_bytes: outcome.sizeBytes, sha256: outcome.sha256, media: null });
      } else if (outcome.kind === "retry" && record.fetch.attempts < options.maxAttempts) {
        retryError = outcome.error;
        file.gridfs_id = null;
      } else {
        const error = outcome.kind === "retry" ? `unreadable: ${outcome.error} (gave up after ${record.fetch.attempts} attempts)` : outcome.error;
        Object.assign(file, { state: "failed", error, media: null, gridfs_id: null });
      }
    }
    if (retryError) {
      const wait = Math.min(MAX_RETRY_MS, options.retryBaseMs * 2 ** (record.fetch.attempts - 1));
      const next = new Date(clock.now().getTime() + wait);
      await col.updateOne(claim, {
        $set: { files: list, "fetch.state": "pending", "fetch.next_attempt_at": next, "fetch.claimed_at": null, "fetch.last_error": retryError },
      });
      logger.info({ flowResponseId: id, error: retryError, retryAt: next }, "form files could not be fetched; retried later");
      await enqueue(id, next);
      return;
    }
    const ready = await col.findOneAndUpdate(claim, { $set: { files: list, ready_at: record.ready_at ?? clock.now() } }, { returnDocument: "after" });
    if (!ready) {
      for (const stored of storedNow) await files.delete(stored);
      return;
    }
    await events.publish({ workspaceId: ready.workspace_id, type: "flow.completed", data: toRestJson(FlowResponseSchema, flowResponseToProto(ready)) });
    await col.updateOne(claim, { $set: { "fetch.state": "done", "fetch.last_error": null, published_at: clock.now() } });
  }

  return {
    job: {
      name: FETCH_FILES_JOB,
      concurrency: 4,
      removeOnComplete: true,
      lockLifetimeMs: FETCH_CLAIM_TIMEOUT_MS,
      run: (data) => runs.run(() => attempt(data.flow_response_id)),
    },
    enqueue,
    stop: () => runs.stop(),
    async recover() {
      const now = clock.now();
      let count = 0;
      const stale = await col
        .find({ "fetch.state": "claimed", "fetch.claimed_at": { $lt: new Date(now.getTime() - FETCH_CLAIM_TIMEOUT_MS) } }, { projection: { _id: 1, fetch: 1 } })
        .limit(1000)
        .toArray();
      for (const r of stale) {
        await col.updateOne(
          { _id: r._id, "fetch.state": "claimed", "fetch.claimed_at": r.fetch.claimed_at },
          { $set: { "fetch.state": "pending", "fetch.claimed_at": null, "fetch.next_attempt_at": now } },
        );
      }
      const due = await col.find({ "fetch.state": "pending", "fetch.next_attempt_at": { $lte: now } }, { projection: { _id: 1 } }).limit(1000).toArray();
      if (due.length === 0) return 0;
      const live = await deps.jobs
        .find({ name: FETCH_FILES_JOB, "data.flow_response_id": { $in: due.map((r) => r._id) }, $or: [{ nextRunAt: { $ne: null } }, { lockedAt: { $ne: null } }] })
        .project<{ data: { flow_response_id: string } }>({ data: 1 })
        .toArray();
      const scheduled = new Set(live.map((j) => j.data.flow_response_id));
      for (const { _id } of due) {
        if (scheduled.has(_id)) continue;
        await enqueue(_id);
        count++;
      }
      return count;
    },
  };
}
