import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import contentDisposition from "content-disposition";
import { HttpBodySchema, type HttpBody } from "../../gen/google/api/httpbody_pb.js";
import type { FlowResponseService } from "../../gen/messaging/v1/flow_responses_pb.js";
import { principalOf } from "../gateway/request-state.js";
import { apiError, notFound } from "../shared/errors.js";
import type { FlowFileStore } from "./flow-files.js";
import { flowResponseToProto } from "./flow-proto.js";
import type { FlowResponseStore } from "./flow-response-store.js";

/**
 * Handlers of messaging.v1.FlowResponseService (scope flow_responses:read;
 * spec §Flow response data, GET /v1/flow_responses/{id}/files/{index}).
 * A workspace sees its own responses, once their files are settled (when
 * flow.completed fires); another workspace's id is simply not found.
 */
export function createFlowResponseService(deps: { responses: FlowResponseStore; files: FlowFileStore }): ServiceImpl<typeof FlowResponseService> {
  const { responses, files } = deps;
  return {
    async listFlowResponses(req, context) {
      const { workspaceId } = principalOf(context);
      const receivedAfter = req.receivedAfter ? timestampDate(req.receivedAfter) : undefined;
      const receivedBefore = req.receivedBefore ? timestampDate(req.receivedBefore) : undefined;
      const page = await responses.list(
        workspaceId,
        { flowId: req.flowId, flowToken: req.flowToken, messageId: req.messageId, receivedAfter, receivedBefore },
        { pageSize: req.pageSize, pageToken: req.pageToken },
      );
      return { object: "list", data: page.items.map(flowResponseToProto), total: page.total, nextPageToken: page.nextPageToken };
    },

    async getFlowResponse(req, context) {
      const record = await responses.get(principalOf(context).workspaceId, req.id);
      if (!record) throw notFound("flow response", req.id);
      return { flowResponse: flowResponseToProto(record) };
    },

    /**
     * Streams a stored file from GridFS chunk by chunk (255 KiB each), the
     * first carrying the content type. Over REST it also sets Content-Length,
     * Content-Disposition (attachment, with file_name; RFC 6266) and
     * X-Content-Type-Options: nosniff; over gRPC no length header is set (it
     * would break HTTP/2 framing).
     *
     * @throws ConnectError not_found for an unknown or foreign id, an index
     *   outside the files array, or a file that was not stored.
     */
    async *getFlowResponseFile(req, context): AsyncIterable<HttpBody> {
      const record = await responses.get(principalOf(context).workspaceId, req.id);
      if (!record) throw notFound("flow response", req.id);
      const file = record.files[req.index];
      if (!file || req.index < 0) {
        throw apiError("not_found", `Flow response ${req.id} has no file at index ${req.index} (it has ${record.files.length})`, {
          resource: "flow response file",
          id: req.id,
          index: String(req.index),
        });
      }
      if (file.state !== "stored" || !file.gridfs_id) {
        throw apiError("not_found", `File ${req.index} of flow response ${req.id} was not stored: ${file.error ?? "not fetched"}`, {
          resource: "flow response file",
          id: req.id,
          index: String(req.index),
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
    },
  };
}
