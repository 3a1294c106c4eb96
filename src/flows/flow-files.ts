import { createHash } from "node:crypto";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { GridFSBucket, type Db, type GridFSBucketReadStream, type ObjectId } from "mongodb";

/** Raised while storing a file that turns out larger than the limit. */
export class FileTooLargeError extends Error {}

/** What is kept with each stored file (GridFS metadata), for diagnosis and clean-up. */
export interface FlowFileMetadata {
  workspace_id: string;
  flow_response_id: string;
  index: number;
  mime_type: string;
}

/**
 * True when `mimeType` is allowed by `allowed` (FLOW_FILE_ALLOWED_TYPES):
 * an exact type, "type/*" for its family, or "*\/*" for any.
 */
export function isAllowedType(mimeType: string, allowed: readonly string[]): boolean {
  const family = `${mimeType.split("/")[0]}/*`;
  return allowed.some((t) => t === mimeType || t === family || t === "*/*");
}

/**
 * The bytes of form files, in the GridFS bucket `flow_files` (the driver's
 * GridFSBucket: `flow_files.files` and `flow_files.chunks` of 255 KiB),
 * streamed in and out: nothing holds a whole file in memory.
 */
export interface FlowFileStore {
  /**
   * Streams `body` into the bucket under `id`, counting and hashing as it
   * goes. On any failure what was written is deleted.
   *
   * @throws FileTooLargeError past `maxBytes`; whatever `body` fails with.
   */
  write(id: ObjectId, fileName: string, metadata: FlowFileMetadata, body: Readable, maxBytes: number): Promise<{ sizeBytes: number; sha256: string }>;
  /** A download stream of a stored file, chunk by chunk. */
  open(id: ObjectId): GridFSBucketReadStream;
  /** Deletes a file and its chunks; a missing file is no error. */
  delete(id: ObjectId): Promise<void>;
}

/** Creates the file store over `db`. */
export function createFlowFileStore(db: Db): FlowFileStore {
  const bucket = new GridFSBucket(db, { bucketName: "flow_files" });
  const remove = (id: ObjectId) => bucket.delete(id).catch(() => undefined); // "File not found" once the chunks are gone
  return {
    async write(id, fileName, metadata, body, maxBytes) {
      const hash = createHash("sha256");
      let size = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          if (size > maxBytes) return done(new FileTooLargeError(`the file is larger than the limit of ${maxBytes} bytes (FLOW_FILE_MAX_BYTES)`));
          hash.update(chunk);
          done(null, chunk);
        },
      });
      try {
        await pipeline(body, meter, bucket.openUploadStreamWithId(id, fileName, { metadata }));
      } catch (err) {
        await remove(id);
        throw err;
      }
      return { sizeBytes: size, sha256: hash.digest("hex") };
    },
    open: (id) => bucket.openDownloadStream(id),
    delete: remove,
  };
}
