import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  WorkspaceStatus,
  type WorkspaceSchema,
  type WorkspaceService,
} from "../../gen/messaging/console/v1/workspaces_pb.js";
import { notFound } from "../shared/errors.js";
import { recordWorkspace, requireOperator, requireWorkspaceAccess } from "./console-access.js";
import { isUuid } from "../shared/validation.js";
import type { WorkspaceRecord, WorkspaceStore } from "../workspaces/workspace-store.js";

/** The console form of a workspace record. */
export function workspaceToProto(record: WorkspaceRecord): MessageInitShape<typeof WorkspaceSchema> {
  return {
    id: record._id,
    object: "workspace",
    name: record.name,
    status: record.status === "active" ? WorkspaceStatus.ACTIVE : WorkspaceStatus.SUSPENDED,
    creditBalance: BigInt(record.credit_balance),
    createdAt: timestampFromDate(record.created_at),
    suspendedAt: record.suspended_at ? timestampFromDate(record.suspended_at) : undefined,
  };
}

/** Loads a workspace by id or throws not_found (also for an id that is not a UUID). */
export async function requireWorkspace(workspaces: WorkspaceStore, id: string): Promise<WorkspaceRecord> {
  const record = isUuid(id) ? await workspaces.get(id) : null;
  if (!record) throw notFound("workspace", id);
  return record;
}

/**
 * Handlers of messaging.console.v1.WorkspaceService: create (name 1 to 200
 * characters, opening credits not negative), get, list, suspend, resume.
 * Create, suspend and resume are in the audit log of the workspace they act on.
 * Suspending takes effect for the workspace's keys within the key cache's
 * staleness bound (5 s).
 */
export function createWorkspaceService(workspaces: WorkspaceStore): Partial<ServiceImpl<typeof WorkspaceService>> {
  async function setStatus(id: string, status: WorkspaceRecord["status"], context: HandlerContext) {
    if (isUuid(id)) recordWorkspace(context, id);
    requireOperator(context);
    await requireWorkspace(workspaces, id);
    const updated = await workspaces.setStatus(id, status);
    if (!updated) throw notFound("workspace", id);
    return { workspace: workspaceToProto(updated) };
  }

  return {
    async createWorkspace(req, context) {
      requireOperator(context);
      const name = req.name.trim();
      const record = await workspaces.create({ name, credits: Number(req.credits) });
      recordWorkspace(context, record._id);
      return { workspace: workspaceToProto(record) };
    },
    async getWorkspace(req, context) {
      const record = await requireWorkspace(workspaces, req.id);
      requireWorkspaceAccess(context, record._id, "read");
      return { workspace: workspaceToProto(record) };
    },
    async listWorkspaces(req, context) {
      requireOperator(context);
      const page = await workspaces.list(req);
      return { object: "list", data: page.items.map(workspaceToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    suspendWorkspace: (req, context) => setStatus(req.id, "suspended", context),
    resumeWorkspace: (req, context) => setStatus(req.id, "active", context),
  };
}
