import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  OptOutSettingsSchema,
  OptOutStatus as ConsoleOptOutStatus,
  type OptOutSchema as ConsoleOptOutSchema,
  type OptOutService as ConsoleOptOutService,
} from "../../gen/messaging/console/v1/opt_outs_pb.js";
import { OptOutStatus, type OptOutSchema, type OptOutService } from "../../gen/messaging/v1/opt_outs_pb.js";
import { consoleActorOf, requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { readUpdate } from "../contract/field-rules.js";
import { principalOf, requestState } from "../gateway/request-state.js";
import { notFound, violationsError } from "../shared/errors.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import type { OptOutRecord } from "./opt-out-store.js";
import { sourceToProto, type OptOuts } from "./opt-outs.js";

/** The public form of an entry (messaging.v1.OptOut). */
export function optOutToProto(r: OptOutRecord): MessageInitShape<typeof OptOutSchema> {
  return {
    phoneNumber: r.phone_number,
    object: "opt_out",
    status: r.status === "opted_out" ? OptOutStatus.OPTED_OUT : OptOutStatus.OPTED_IN,
    source: sourceToProto(r.source),
    keyword: r.keyword ?? undefined,
    errorCode: r.error_code ?? undefined,
    messageId: r.message_id ?? undefined,
    createdAt: timestampFromDate(r.created_at),
    updatedAt: timestampFromDate(r.updated_at),
  };
}

/** The console form of an entry (messaging.console.v1.OptOut). */
export function consoleOptOutToProto(r: OptOutRecord): MessageInitShape<typeof ConsoleOptOutSchema> {
  return {
    ...(optOutToProto(r) as object),
    workspaceId: r.workspace_id,
    status: r.status === "opted_out" ? ConsoleOptOutStatus.OPTED_OUT : ConsoleOptOutStatus.OPTED_IN,
    changedBy: r.changed_by ?? undefined,
  } as MessageInitShape<typeof ConsoleOptOutSchema>;
}

/**
 * GET /v1/opt_outs (scope messages:read): the calling key's workspace's
 * opt-out list, most recently changed first, for a calling system to keep
 * its own list in step; with `updated_after`, every entry changed since,
 * those taken off (opted_in) included.
 */
export function createPublicOptOutService(optOuts: OptOuts): Partial<ServiceImpl<typeof OptOutService>> {
  return {
    async listOptOuts(req, context) {
      const page = await optOuts.store.list(
        principalOf(context).workspaceId,
        { updatedAfter: req.updatedAfter ? timestampDate(req.updatedAfter) : undefined, phoneNumber: req.phoneNumber || undefined },
        req,
      );
      return { object: "list", data: page.items.map(optOutToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
  };
}

/** Who made a console change, as the entry records it. */
function actorName(context: HandlerContext): string {
  const actor = consoleActorOf(context);
  return actor?.kind === "user" ? actor.email : "operator";
}

/** Fields of OptOutSettings an update may change. */
const UPDATABLE_SETTINGS = ["opt_out_keywords", "opt_in_keywords"] as const;

/**
 * Handlers of messaging.console.v1.OptOutService: list a workspace's entries
 * (viewers and admins), add and remove a number (admins; each fires its
 * contact.* event when it changes the list; the console's audit log records
 * the call), and read and change the workspace's reply keywords (kept upper
 * case; a keyword may not be on both lists).
 */
export function createConsoleOptOutService(deps: { optOuts: OptOuts; workspaces: WorkspaceStore }): Partial<ServiceImpl<typeof ConsoleOptOutService>> {
  const { optOuts, workspaces } = deps;
  const settingsOf = async (workspaceId: string) => {
    const k = await optOuts.keywordsOf(workspaceId);
    return { workspaceId, optOutKeywords: [...k.optOut], optInKeywords: [...k.optIn], defaults: k.defaults };
  };
  return {
    async listOptOuts(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const status = req.status === ConsoleOptOutStatus.OPTED_IN ? "opted_in" : "opted_out";
      const page = await optOuts.store.list(req.workspaceId, { status, phoneNumber: req.phoneNumber || undefined }, req);
      return { object: "list", data: page.items.map(consoleOptOutToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    async createOptOut(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      const outcome = await optOuts.addFromConsole(req.workspaceId, req.phoneNumber, actorName(context), requestState(context).requestId);
      const record = outcome.record ?? (await optOuts.store.get(req.workspaceId, req.phoneNumber));
      if (!record) throw notFound("opt_out", req.phoneNumber);
      return { optOut: consoleOptOutToProto(record) };
    },
    async deleteOptOut(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      const outcome = await optOuts.removeFromConsole(req.workspaceId, req.phoneNumber, actorName(context), requestState(context).requestId);
      if (outcome.kind === "unchanged") throw notFound("opt_out", req.phoneNumber);
      return { optOut: consoleOptOutToProto(outcome.record) };
    },
    async getOptOutSettings(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      return { optOutSettings: await settingsOf(req.workspaceId) };
    },
    async updateOptOutSettings(req, context) {
      const input = req.optOutSettings;
      const workspaceId = input?.workspaceId ?? "";
      await requireWorkspace(workspaces, workspaceId);
      requireWorkspaceAccess(context, workspaceId, "write");
      const { paths, violations } = readUpdate({ field: "opt_out_settings", schema: OptOutSettingsSchema, resource: input!, mask: req.updateMask, updatable: UPDATABLE_SETTINGS });
      const upper = (list: string[]) => [...new Set(list.map((k) => k.trim().toUpperCase()))];
      const current = await optOuts.keywordsOf(workspaceId);
      const optOut = paths.includes("opt_out_keywords") ? upper(input!.optOutKeywords) : [...current.optOut];
      const optIn = paths.includes("opt_in_keywords") ? upper(input!.optInKeywords) : [...current.optIn];
      optIn.forEach((k, i) => {
        if (optOut.includes(k)) violations.push({ field: `opt_out_settings.opt_in_keywords[${i}]`, description: `must not also be an opt-out keyword (got ${JSON.stringify(k)})` });
      });
      if (violations.length > 0) throw violationsError(violations);
      await workspaces.setOptOutKeywords(workspaceId, { optOut, optIn });
      return { optOutSettings: await settingsOf(workspaceId) };
    },
  };
}
