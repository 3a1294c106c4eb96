import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import contentDisposition from "content-disposition";
import { HttpBodySchema, type HttpBody } from "../../gen/google/api/httpbody_pb.js";
import { apiError } from "../shared/errors.js";
import type { FlowFileStore } from "./flow-files.js";
import type { FlowResponseRecord } from "./flow-response-store.js";

/**
 * Streams file `index` of flow response `record` from GridFS chunk by chunk
 * (255 KiB each) as google.api.HttpBody messages, the first carrying the
 * content type: the answer of GetFlowResponseFile of the public API and of
 * the console. Over REST it also sets Content-Length, Content-Disposition
 * (attachment, with file_name; RFC 6266) and X-Content-Type-Options:
 * nosniff; over gRPC no length header is set (it would break HTTP/2
 * framing).
 *
 * @throws ConnectError not_found for an index outside the files array or a file that was not stored (quoting its error).
 */
export async function* streamFlowFile(record: FlowResponseRecord, index: number, files: FlowFileStore, context: HandlerContext): AsyncIterable<HttpBody> {
  const id = record._id;
  const file = record.files[index];
  if (!file || index < 0) {
    throw apiError("not_found", `Flow response ${id} has no file at index ${index} (it has ${record.files.length})`, {
      resource: "flow response file",
      id,
      index: String(index),
    });
  }
  if (file.state !== "stored" || !file.gridfs_id) {
    throw apiError("not_found", `File ${index} of flow response ${id} was not stored: ${file.error ?? "not fetched"}`, {
      resource: "flow response file",
      id,
      index: String(index),
    });
  }
  if (context.protocolName === "rest") {
    context.responseHeader.set("content-length", String(file.size_bytes ?? 0));
    context.responseHeader.set("content-disposition", contentDisposition(file.file_name));
    context.responseHeader.set("x-content-type-options", "nosniff");
  }
  let first = true;
  for await (const chunk of files.open(file.gridfs_id) as AsyncIterable<Buffer>) {
    yield create(HttpBodySchema, { contentType: first ? file.mime_type : "", data: chunk });
    first = false;
  }
  if (first) yield create(HttpBodySchema, { contentType: file.mime_type, data: new Uint8Array() });
}
