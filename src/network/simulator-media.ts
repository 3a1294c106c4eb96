import { createHash } from "node:crypto";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { GridFSBucket, ObjectId, type Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { MediaFetchError, type FetchedMedia } from "./network.js";

/** Largest simulated medium, in bytes: WhatsApp's limit for all files of one flow submission (100 MiB). */
export const MAX_SIMULATOR_MEDIA_BYTES = 100 * 1024 * 1024;

/** How long simulated media are kept, in ms (a network's uploaded media expire too). */
export const SIMULATOR_MEDIA_TTL_MS = 24 * 60 * 60 * 1000;

/** What the simulated network knows of a stored medium. */
export interface SimulatorMedium {
  /** Media id (24 hex characters). */
  id: string;
  /** Workspace of the message the medium was uploaded for. */
  workspaceId: string;
  /** The message whose form it is for (msg_<uuid>). */
  messageId: string;
  fileName: string;
  mimeType: string;
  sizeBytes: number;
  /** SHA-256 of the bytes, lowercase hex. */
  sha256: string;
}

/** Metadata kept on each GridFS file of the `simulator_media` bucket. */
interface MediaMetadata {
  workspace_id: string;
  message_id: string;
  mime_type: string;
  /** Set once the whole file is stored. */
  sha256: string;
  /** When it was uploaded (the service's clock). */
  uploaded_at: Date;
}

/** Raised when an upload is larger than MAX_SIMULATOR_MEDIA_BYTES. */
export class SimulatorMediaTooLargeError extends Error {}

/**
 * The simulated network's media store: files a simulated phone uploaded in
 * a form, in the GridFS bucket `simulator_media` (so every process of the
 * service sees them), streamed in and out, never buffered whole.
 */
export interface SimulatorMediaStore {
  /**
   * Streams `data` into the store.
   *
   * @throws SimulatorMediaTooLargeError past MAX_SIMULATOR_MEDIA_BYTES (nothing is kept).
   */
  upload(owner: { workspaceId: string; messageId: string }, fileName: string, mimeType: string, data: AsyncIterable<Uint8Array>): Promise<SimulatorMedium>;
  /** A stored medium, or null when the id is unknown or malformed. */
  get(id: string): Promise<SimulatorMedium | null>;
  /**
   * Opens a medium for download, as the network's media endpoint would.
   *
   * @throws MediaFetchError (not retryable) for an unknown id.
   */
  fetch(id: string): Promise<FetchedMedia>;
  /** Deletes media older than SIMULATOR_MEDIA_TTL_MS; resolves to the count. */
  prune(): Promise<number>;
}

/** Creates the simulated network's media store over `db`. */
export function createSimulatorMediaStore(db: Db, clock: Clock): SimulatorMediaStore {
  const bucket = new GridFSBucket(db, { bucketName: "simulator_media" });

  async function get(id: string): Promise<SimulatorMedium | null> {
    if (!ObjectId.isValid(id) || !/^[0-9a-f]{24}$/.test(id)) return null;
    const file = await bucket.find({ _id: new ObjectId(id) }).next();
    if (!file) return null;
    const meta = file.metadata as MediaMetadata;
    if (!meta.sha256) return null; // still being uploaded
    return {
      id,
      workspaceId: meta.workspace_id,
      messageId: meta.message_id,
      fileName: file.filename,
      mimeType: meta.mime_type,
      sizeBytes: file.length,
      sha256: meta.sha256,
    };
  }

  return {
    async upload(owner, fileName, mimeType, data) {
      const id = new ObjectId();
      const hash = createHash("sha256");
      let size = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          if (size > MAX_SIMULATOR_MEDIA_BYTES) return done(new SimulatorMediaTooLargeError(`A simulated medium may have at most ${MAX_SIMULATOR_MEDIA_BYTES} bytes`));
          hash.update(chunk);
          done(null, chunk);
        },
      });
      const metadata: Partial<MediaMetadata> = { workspace_id: owner.workspaceId, message_id: owner.messageId, mime_type: mimeType, uploaded_at: clock.now() };
      const upload = bucket.openUploadStreamWithId(id, fileName, { metadata });
      try {
        await pipeline(Readable.from(data), counter, upload);
      } catch (err) {
        await bucket.delete(id).catch(() => undefined); // chunks written before the failure
        throw err;
      }
      const sha256 = hash.digest("hex");
      await db.collection("simulator_media.files").updateOne({ _id: id }, { $set: { "metadata.sha256": sha256 } });
      return { id: id.toHexString(), workspaceId: owner.workspaceId, messageId: owner.messageId, fileName, mimeType, sizeBytes: size, sha256 };
    },
    get,
    async fetch(id) {
      const medium = await get(id);
      if (!medium) throw new MediaFetchError(`Medium ${id} does not exist on the simulated network (unknown or expired)`, false);
      return {
        body: bucket.openDownloadStream(new ObjectId(id)),
        mimeType: medium.mimeType,
        sizeBytes: medium.sizeBytes,
        sha256: medium.sha256,
      };
    },
    async prune() {
      const cutoff = new Date(clock.now().getTime() - SIMULATOR_MEDIA_TTL_MS);
      const old = await bucket.find({ "metadata.uploaded_at": { $lt: cutoff } }, { projection: { _id: 1 } }).limit(1000).toArray();
      for (const file of old) await bucket.delete(file._id).catch(() => undefined);
      return old.length;
    },
  };
}
