import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  MessagingLimit as MessagingLimitProto,
  WorkspaceSchema,
  WorkspaceStatus,
  type WorkspaceService,
} from "../../gen/messaging/console/v1/workspaces_pb.js";
import { readUpdate } from "../contract/field-rules.js";
import { notFound, violationsError } from "../shared/errors.js";
import { recordWorkspace, requireOperator, requireWorkspaceAccess } from "./console-access.js";
import { isUuid } from "../shared/validation.js";
import { MESSAGING_LIMITS, type MessagingLimit, type WorkspaceRecord, type WorkspaceStore } from "../workspaces/workspace-store.js";

/** The messaging limit tiers in the proto's terms (MessagingLimit), both ways; UNSPECIFIED reads as unlimited. */
const LIMIT_TO_PROTO: Record<MessagingLimit, MessagingLimitProto> = {
  tier_250: MessagingLimitProto.TIER_250,
  tier_2k: MessagingLimitProto.TIER_2K,
  tier_10k: MessagingLimitProto.TIER_10K,
  tier_100k: MessagingLimitProto.TIER_100K,
  unlimited: MessagingLimitProto.UNLIMITED,
};
const limitFromProto = (value: MessagingLimitProto): MessagingLimit =>
  (Object.entries(LIMIT_TO_PROTO).find(([, proto]) => proto === value)?.[0] as MessagingLimit | undefined) ?? "unlimited";

/** Fields UpdateWorkspace may change (its update_mask paths). */
const UPDATABLE = ["messaging_limit"] as const;

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
    messagingLimit: LIMIT_TO_PROTO[record.messaging_limit ?? "unlimited"],
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
 * characters, opening credits not negative, a messaging limit), get, list,
 * update (the messaging limit: operators and the workspace's writers),
 * suspend, resume.
 * Create, update, suspend and resume are in the audit log of the workspace they act on.
 * Suspending takes effect for the workspace's keys within the key cache's
 * staleness bound (5 s).
 */
export function createWorkspaceService(
  workspaces: WorkspaceStore,
  messagingLimit: {
    /** Called after a workspace's messaging limit was raised (or made unlimited): messages waiting for it may go. */
    raised(workspaceId: string): Promise<unknown>;
    /** The unique recipients counted in the workspace's window now. */
    inWindow(workspaceId: string): Promise<number>;
  },
): Partial<ServiceImpl<typeof WorkspaceService>> {
  /** A workspace with how much of its messaging limit is used (GetWorkspace, UpdateWorkspace). */
  async function withUsage(record: WorkspaceRecord) {
    const used = record.messaging_limit ? await messagingLimit.inWindow(record._id) : 0;
    return { workspace: { ...workspaceToProto(record), messagingLimitUsed: used } };
  }

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
      const record = await workspaces.create({ name, credits: Number(req.credits), messagingLimit: limitFromProto(req.messagingLimit) });
      recordWorkspace(context, record._id);
      return { workspace: workspaceToProto(record) };
    },
    async getWorkspace(req, context) {
      const record = await requireWorkspace(workspaces, req.id);
      requireWorkspaceAccess(context, record._id, "read");
      return withUsage(record);
    },
    async listWorkspaces(req, context) {
      requireOperator(context);
      const page = await workspaces.list(req);
      return { object: "list", data: page.items.map(workspaceToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    async updateWorkspace(req, context) {
      const input = req.workspace;
      const id = input?.id ?? "";
      if (isUuid(id)) recordWorkspace(context, id);
      const before = await requireWorkspace(workspaces, id);
      requireWorkspaceAccess(context, id, "write");
      const { paths, violations } = readUpdate({ field: "workspace", schema: WorkspaceSchema, resource: input!, mask: req.updateMask, updatable: UPDATABLE });
      if (violations.length > 0) throw violationsError(violations);
      let updated: WorkspaceRecord | null = before;
      if (paths.includes("messaging_limit")) {
        const limit = limitFromProto(input!.messagingLimit);
        updated = await workspaces.setMessagingLimit(id, limit);
        if (MESSAGING_LIMITS[limit] > MESSAGING_LIMITS[before.messaging_limit ?? "unlimited"]) await messagingLimit.raised(id);
      }
      if (!updated) throw notFound("workspace", id);
      return withUsage(updated);
    },
    suspendWorkspace: (req, context) => setStatus(req.id, "suspended", context),
    resumeWorkspace: (req, context) => setStatus(req.id, "active", context),
  };
}
