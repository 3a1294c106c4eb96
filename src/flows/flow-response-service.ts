import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { HttpBody } from "../../gen/google/api/httpbody_pb.js";
import type { FlowResponseService } from "../../gen/messaging/v1/flow_responses_pb.js";
import { principalOf } from "../gateway/request-state.js";
import { notFound } from "../shared/errors.js";
import { streamFlowFile } from "./flow-file-stream.js";
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

    /** Streams a stored file of the workspace's response (streamFlowFile); not_found for another workspace's id. */
    async *getFlowResponseFile(req, context): AsyncIterable<HttpBody> {
      const record = await responses.get(principalOf(context).workspaceId, req.id);
      if (!record) throw notFound("flow response", req.id);
      yield* streamFlowFile(record, req.index, files, context);
    },
  };
}
