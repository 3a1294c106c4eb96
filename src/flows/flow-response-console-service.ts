import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { HttpBody } from "../../gen/google/api/httpbody_pb.js";
import type { FlowResponseService } from "../../gen/messaging/console/v1/flow_responses_pb.js";
import { consoleActorOf, mayRead, requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { notFound } from "../shared/errors.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { streamFlowFile } from "./flow-file-stream.js";
import type { FlowFileStore } from "./flow-files.js";
import { flowResponseToProto } from "./flow-proto.js";
import type { FlowResponseRecord, FlowResponseStore } from "./flow-response-store.js";

/**
 * Handlers of messaging.console.v1.FlowResponseService: a workspace's form
 * submissions and their files for its people (viewers and admins), as the
 * public API shows them to a key with flow_responses:read: ready responses
 * only (files settled, flow.completed fired), newest first.
 *
 * Errors: not_found for an unknown workspace, or a response unknown or of a
 * workspace the caller has no role in (as for any Get by id); not_found for
 * a file index outside the response or a file not stored; permission_denied
 * for a list of a workspace without a role there.
 */
export function createFlowResponseConsoleService(deps: {
  responses: FlowResponseStore;
  files: FlowFileStore;
  workspaces: WorkspaceStore;
}): ServiceImpl<typeof FlowResponseService> {
  const { responses, files, workspaces } = deps;
  /** The ready response `id` if the caller may read its workspace, else not_found. */
  const readable = async (id: string, context: HandlerContext): Promise<FlowResponseRecord> => {
    const record = await responses.find(id);
    if (!record || !mayRead(consoleActorOf(context), record.workspace_id)) throw notFound("flow response", id);
    requireWorkspaceAccess(context, record.workspace_id, "read");
    return record;
  };
  return {
    async listFlowResponses(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const page = await responses.list(
        req.workspaceId,
        { flowId: req.flowId, flowToken: req.flowToken, messageId: req.messageId },
        { pageSize: req.pageSize, pageToken: req.pageToken },
      );
      return { object: "list", data: page.items.map(flowResponseToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    async getFlowResponse(req, context) {
      return { flowResponse: flowResponseToProto(await readable(req.id, context)) };
    },
    async *getFlowResponseFile(req, context): AsyncIterable<HttpBody> {
      yield* streamFlowFile(await readable(req.id, context), req.index, files, context);
    },
  };
}
