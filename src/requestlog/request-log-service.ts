import type { Filter } from "mongodb";
import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  RequestOutcome,
  type LoggedRequestSchema,
  type RequestLogService,
} from "../../gen/messaging/console/v1/request_log_pb.js";
import { actsAsOperator, consoleActorOf, mayRead, requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import type { Clock } from "../shared/clock.js";
import { apiError, invalidArgument, notFound } from "../shared/errors.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import type { RequestLog, RequestLogRow } from "./request-log.js";

/** Workspace id that means "every workspace, and requests without a known key" (AIP-159); operator only. */
export const ALL_WORKSPACES = "-";
const DAY_MS = 86_400_000;

/** The console form of a request-log row. */
export function loggedRequestToProto(row: RequestLogRow): MessageInitShape<typeof LoggedRequestSchema> {
  return {
    id: row._id,
    object: "request",
    at: timestampFromDate(row.at),
    apiKeyId: row.api_key_id ?? undefined,
    operation: row.operation ?? undefined,
    protocol: row.protocol,
    httpMethod: row.http_method,
    path: row.path,
    httpStatus: row.http_status,
    errorCode: row.error_code ?? undefined,
    clientAddress: row.client_address,
    durationMs: row.duration_ms,
    acceptedCount: row.accepted_count,
    refusedCount: row.refused_count,
  };
}

/**
 * Handlers of messaging.console.v1.RequestLogService: the request log of a
 * workspace (viewers and admins of it; the operator may pass "-" for every
 * workspace, requests with unknown keys included), listed with filters,
 * grouped by error code (count, first and last seen, a sample), and counted
 * per time bucket for the console's chart.
 */
export function createRequestLogService(deps: {
  requestLog: RequestLog;
  workspaces: WorkspaceStore;
  clock: Clock;
}): Partial<ServiceImpl<typeof RequestLogService>> {
  const { requestLog, workspaces, clock } = deps;

  /** The workspace part of the filter, after the access check; rows past their retention are never shown. */
  async function scope(context: Parameters<typeof requireWorkspaceAccess>[0], workspaceId: string): Promise<Filter<RequestLogRow>> {
    if (workspaceId === ALL_WORKSPACES) {
      if (!actsAsOperator(consoleActorOf(context))) {
        throw apiError("permission_denied", `Only the operator may read every workspace ("${ALL_WORKSPACES}")`);
      }
      return { expires_at: { $gt: clock.now() } };
    }
    await requireWorkspace(workspaces, workspaceId);
    requireWorkspaceAccess(context, workspaceId, "read");
    return { workspace_id: workspaceId, expires_at: { $gt: clock.now() } };
  }

  const refusedSince = (since: Date): Filter<RequestLogRow> => ({ error_code: { $ne: null }, at: { $gte: since } });

  return {
    async getLoggedRequest(req, context) {
      const found = await requestLog.get(req.id);
      const row = found && found.expires_at > clock.now() ? found : null;
      // Visible as in the lists: rows of a workspace to its roles, rows without one (key not recognised) to the operator.
      if (!row || !mayRead(consoleActorOf(context), row.workspace_id)) throw notFound("request", req.id);
      return { request: loggedRequestToProto(row) };
    },
    async listRequests(req, context) {
      const filter: Filter<RequestLogRow> = { ...(await scope(context, req.workspaceId)) };
      if (req.apiKeyId !== "") filter.api_key_id = req.apiKeyId;
      if (req.operation !== "") filter.operation = req.operation;
      if (req.errorCode !== "") filter.error_code = req.errorCode;
      else if (req.outcome === RequestOutcome.OK) filter.error_code = null;
      else if (req.outcome === RequestOutcome.REFUSED) filter.error_code = { $ne: null };
      if (req.since || req.until) {
        filter.at = {
          ...(req.since ? { $gte: timestampDate(req.since) } : {}),
          ...(req.until ? { $lt: timestampDate(req.until) } : {}),
        };
      }
      const page = await requestLog.list(filter, req);
      return { object: "list", data: page.items.map(loggedRequestToProto), total: page.total, nextPageToken: page.nextPageToken };
    },

    async listRefusedRequestGroups(req, context) {
      const since = req.since ? timestampDate(req.since) : new Date(clock.now().getTime() - DAY_MS);
      const filter = { ...(await scope(context, req.workspaceId)), ...refusedSince(since) };
      const counts = await requestLog.countByErrorCode(filter);
      const groups = await Promise.all(
        counts.map(async ({ code, count }) => {
          const [first, last] = await Promise.all([requestLog.firstOrLast({ ...filter, error_code: code }, false), requestLog.firstOrLast({ ...filter, error_code: code }, true)]);
          return {
            errorCode: code,
            count,
            firstSeen: first ? timestampFromDate(first.at) : undefined,
            lastSeen: last ? timestampFromDate(last.at) : undefined,
            sample: last ? loggedRequestToProto(last) : undefined,
          };
        }),
      );
      groups.sort((a, b) => b.count - a.count || a.errorCode.localeCompare(b.errorCode));
      return { object: "list", data: groups, total: groups.length };
    },

    async getRefusalTimeline(req, context) {
      const buckets = req.buckets === 0 ? 24 : req.buckets;
      if (buckets < 1 || buckets > 96) throw invalidArgument("buckets", "must be from 1 to 96 (0 means 24)");
      const now = clock.now().getTime();
      const start = req.since ? timestampDate(req.since).getTime() : now - DAY_MS;
      if (start >= now) throw invalidArgument("since", "must be in the past");
      const base = await scope(context, req.workspaceId);
      const size = Math.ceil((now - start) / buckets);
      const counts = await Promise.all(
        Array.from({ length: buckets }, (_, i) =>
          requestLog.count({
            ...base,
            error_code: { $ne: null },
            at: { $gte: new Date(start + i * size), $lt: new Date(start + (i + 1) * size) },
          }),
        ),
      );
      return {
        bucketSeconds: Math.round(size / 1000),
        buckets: counts.map((count, i) => ({ start: timestampFromDate(new Date(start + i * size)), count })),
      };
    },
  };
}
